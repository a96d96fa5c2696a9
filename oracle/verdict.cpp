#include "oracle/verdict.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/text_safety.h"

namespace stockade::oracle {

namespace {

using nlohmann::json;

// A declared name matches a case by its name, or by "classname.name" /
// "classname::name" (pytest, GoogleTest and Catch2 spell them so).
const TestCase* findCase(const TestReport& report, const std::string& wanted) {
    for (const TestCase& c : report.cases)
        if (c.name == wanted || (!c.classname.empty() && (c.classname + "." + c.name == wanted ||
                                                          c.classname + "::" + c.name == wanted)))
            return &c;
    return nullptr;
}

}  // namespace

Verdict decide(const Evidence& e) {
    Verdict v;
    if (e.run_status == "timed_out") {
        v.verdict = "timeout";
        return v;
    }
    if (e.run_status == "blocked" || e.run_status == "cancelled") {
        v.verdict = "blocked";
        return v;
    }
    if (e.run_status == "error") v.contradictions.push_back("the test command could not run");

    const Integrity& in = e.integrity;
    if (!in.held_changed.empty())
        v.contradictions.push_back("held files changed during the run: " + in.held_changed.front() +
                                   (in.held_changed.size() > 1 ? " and others" : ""));
    if (in.head_before != in.head_after)
        v.contradictions.push_back("HEAD moved during the run: " + in.head_before + " -> " +
                                   in.head_after);
    if (in.git_before != in.git_after) v.contradictions.push_back(".git changed during the run");

    for (const std::string& err : e.report_errors) v.contradictions.push_back(err);
    if (!e.report) {
        if (e.report_errors.empty()) v.contradictions.push_back("no parsable report");
    } else {
        const TestReport& r = *e.report;
        StatusCounts counts = countByStatus(r);
        uint64_t executed = counts.tests - counts.skipped;
        if (executed == 0) v.contradictions.push_back("the report has no executed test");
        for (const CountCheck& check : r.count_checks)
            if (!check.agrees())
                v.contradictions.push_back(check.where + " declares " +
                                           std::to_string(check.declared) + " " + check.quantity +
                                           " but lists " + std::to_string(check.counted));
        for (const std::string& problem : r.problems) v.contradictions.push_back(problem);
        bool red = counts.failed + counts.errored > 0;
        if (e.exit_code && *e.exit_code == 0 && red)
            v.contradictions.push_back("exit code 0 with " +
                                       std::to_string(counts.failed + counts.errored) +
                                       " failing test(s) in the report");
        if (e.exit_code && *e.exit_code != 0 && !red && executed > 0)
            v.contradictions.push_back("exit code " + std::to_string(*e.exit_code) +
                                       " with an all-green report");
        for (const TestCase& c : r.cases)
            if (c.status == TestCase::Status::Failed || c.status == TestCase::Status::Errored)
                v.failures.push_back(c.name + (c.message.empty() ? "" : ": " + c.message));
        if (e.expected) {
            for (const std::string& name : *e.expected) {
                const TestCase* c = findCase(r, name);
                if (!c)
                    v.missing_expected.push_back(name);
                else if (c->status != TestCase::Status::Passed)
                    v.expected_not_passed.push_back(name);
            }
            for (const std::string& name : v.missing_expected)
                v.contradictions.push_back("expected test missing from the report: " + name);
            for (const std::string& name : v.expected_not_passed)
                v.failures.push_back("expected test did not pass: " + name);
        }
    }
    if (!v.contradictions.empty())
        v.verdict = "error";
    else if (!v.failures.empty() || (e.exit_code && *e.exit_code != 0))
        v.verdict = "fail";
    else
        v.verdict = "pass";
    return v;
}

std::string verdictJson(const Evidence& e, const Verdict& v, const std::string& result_json) {
    json doc;
    doc["schema"] = "stockade.verdict/v1";
    doc["verdict"] = v.verdict;
    doc["contradictions"] = v.contradictions;
    doc["failures"] = v.failures;
    json counts = {{"tests", 0}, {"passed", 0}, {"failed", 0}, {"errored", 0}, {"skipped", 0}};
    json cases = json::array();
    json report = nullptr;
    if (e.report) {
        StatusCounts c = countByStatus(*e.report);
        counts = {{"tests", c.tests},
                  {"passed", c.passed},
                  {"failed", c.failed},
                  {"errored", c.errored},
                  {"skipped", c.skipped}};
        for (const TestCase& t : e.report->cases)
            cases.push_back({{"name", t.name},
                             {"classname", t.classname},
                             {"status", testStatusName(t.status)},
                             {"duration_s", t.duration_s},
                             {"message", t.message}});
        report = {{"format", e.report->format},
                  {"dialect", e.report->dialect},
                  {"files", e.report_files}};
    }
    doc["counts"] = counts;
    doc["cases"] = cases;
    doc["report"] = report;
    if (e.expected)
        doc["expected"] = {{"declared", e.expected->size()},
                           {"missing", v.missing_expected},
                           {"not_passed", v.expected_not_passed}};
    else
        doc["expected"] = nullptr;
    doc["worktree"] = {{"tree_before", e.tree_before},
                       {"tree_after", e.tree_after},
                       {"created", e.worktree_changes.created},
                       {"changed", e.worktree_changes.changed},
                       {"deleted", e.worktree_changes.deleted}};
    const Integrity& in = e.integrity;
    doc["integrity"] = {{"held_unchanged", in.held_changed.empty()},
                        {"held_changed", in.held_changed},
                        {"head_before", in.head_before},
                        {"head_after", in.head_after},
                        {"head_unchanged", in.head_before == in.head_after},
                        {"git_unchanged", in.git_before == in.git_after}};
    json result = json::parse(result_json, nullptr, false);
    doc["result"] = result.is_discarded() ? json(nullptr) : result;
    return jsonText(doc, 2) + "\n";
}

std::string internalErrorVerdictJson(const std::string& cause) {
    json none = json::array();
    json doc;
    doc["schema"] = "stockade.verdict/v1";
    doc["verdict"] = "error";
    doc["contradictions"] = json::array({cause});
    doc["failures"] = none;
    doc["counts"] = {{"tests", 0}, {"passed", 0}, {"failed", 0}, {"errored", 0}, {"skipped", 0}};
    doc["cases"] = none;
    doc["report"] = nullptr;
    doc["expected"] = nullptr;
    doc["worktree"] = {{"tree_before", ""},
                       {"tree_after", ""},
                       {"created", none},
                       {"changed", none},
                       {"deleted", none}};
    doc["integrity"] = {{"held_unchanged", false}, {"held_changed", none},
                        {"head_before", ""},       {"head_after", ""},
                        {"head_unchanged", false}, {"git_unchanged", false}};
    doc["result"] = nullptr;
    return jsonText(doc, 2) + "\n";
}

int exitCodeFor(const Verdict& v) {
    if (v.verdict == "pass") return 0;
    if (v.verdict == "fail") return 1;
    if (v.verdict == "timeout") return 124;
    if (v.verdict == "blocked") return 125;
    return 2;
}

}  // namespace stockade::oracle
