#include "runtime/check/host_verdicts.h"

#include "base/error.h"

namespace stockade::host_check_detail {

Verdict ok(std::string mechanism) {
    return {CheckState::Ok, std::move(mechanism), "", ""};
}
Verdict unavailable(std::string reason, std::string fix) {
    return {CheckState::Unavailable, "", std::move(reason), std::move(fix)};
}
Verdict degraded(std::string mechanism, std::string reason, std::string fix) {
    return {CheckState::Degraded, std::move(mechanism), std::move(reason), std::move(fix)};
}

std::string failed(const std::string& call, int err) {
    return call + ": " + errnoName(err);
}

std::optional<int> stepErr(const HostFacts& f, SandboxStep step) {
    auto it = f.sandbox.find(step);
    if (it == f.sandbox.end()) return std::nullopt;
    return it->second;
}

std::string seccompNote(const HostFacts& f) {
    if (f.seccomp_mode != 2) return "";
    return "this process already runs under " + std::to_string(f.seccomp_filters) +
           " seccomp filter(s) (Seccomp: 2 in /proc/self/status), which may answer it so";
}

std::string headline(const std::string& reason) {
    return reason.substr(0, reason.find(" ("));
}

}  // namespace stockade::host_check_detail
