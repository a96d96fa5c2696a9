// The HostReport for people (formatReport) and as stockade.check/v1
// (reportJson); host_check.h.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>

#include "runtime/check/host_check.h"

namespace stockade {

std::string formatReport(const HostReport& report) {
    std::ostringstream out;
    out << "stockade check: uid " << report.euid << ", Linux " << report.kernel << ", "
        << (report.elapsed_us + 500) / 1000 << " ms\n";
    out << "\nTier: " << report.tier.tier << ": " << report.tier.reason << "\n";
    for (const std::string& fix : report.tier.fixes) out << "  fix " << fix << "\n";
    const std::pair<CheckKind, const char*> sections[] = {
        {CheckKind::Guarantee, "Guarantees"},
        {CheckKind::Feature, "Kernel features"},
        {CheckKind::Mechanism, "Limit mechanisms"},
        {CheckKind::Limit, "Limits"}};
    size_t label_width = 0;
    auto label = [](const CheckEntry& e) {
        return e.kind == CheckKind::Guarantee ? e.id + (e.id.size() < 3 ? "  " : " ") + e.title
                                              : e.id;
    };
    for (const CheckEntry& e : report.entries) label_width = std::max(label_width, label(e).size());
    for (const auto& [kind, title] : sections) {
        out << "\n" << title << "\n";
        for (const CheckEntry& e : report.entries) {
            if (e.kind != kind) continue;
            std::string l = label(e);
            std::string state = checkStateName(e.state);
            out << "  " << l << std::string(label_width - l.size() + 1, ' ') << state
                << std::string(12 - state.size(), ' ');
            std::string text = e.mechanism;
            if (e.state != CheckState::Ok) {
                text += (text.empty() ? "" : ": ") + e.reason;
                if (!e.fix.empty()) text += "; fix: " + e.fix;
            }
            out << text << "\n";
        }
    }
    out << "\n";
    if (report.can_run) {
        out << "The profile can run as required.\n";
    } else {
        out << "The profile cannot run as required:\n";
        for (const std::string& b : report.blockers) out << "  " << b << "\n";
    }
    return out.str();
}

std::string reportJson(const HostReport& report) {
    using nlohmann::json;
    json doc;
    doc["schema"] = "stockade.check/v1";
    doc["uid"] = report.euid;
    doc["kernel"] = report.kernel;
    doc["can_run"] = report.can_run;
    doc["tier"] = {
        {"tier", report.tier.tier}, {"reason", report.tier.reason}, {"fixes", report.tier.fixes}};
    doc["blockers"] = report.blockers;
    doc["elapsed_us"] = report.elapsed_us;
    json probes = json::object();
    for (const auto& [name, us] : report.probe_us) probes[name] = us;
    doc["probe_us"] = probes;
    json checks = json::array();
    auto orNull = [](const std::string& s) { return s.empty() ? json(nullptr) : json(s); };
    for (const CheckEntry& e : report.entries)
        checks.push_back({{"id", e.id},
                          {"kind", checkKindName(e.kind)},
                          {"title", e.title},
                          {"state", checkStateName(e.state)},
                          {"mechanism", orNull(e.mechanism)},
                          {"reason", orNull(e.reason)},
                          {"fix", orNull(e.fix)},
                          {"required", e.required}});
    doc["checks"] = checks;
    // The sandbox's setup table as the probe walked it: each step it reached,
    // in order, and the errno it got (0: it worked).
    json setup = json::array();
    for (const auto& [step, err] : report.setup_steps)
        setup.push_back({{"step", step}, {"errno", err}});
    doc["setup_steps"] = setup;
    return doc.dump(2) + "\n";
}

}  // namespace stockade
