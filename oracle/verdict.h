// The verdict, from evidence only: the run's ending, the parsed report, the
// declared test names, and the integrity checks. Pure logic; the JSON stays in
// verdict.cpp.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "oracle/git_tree.h"
#include "oracle/test_report.h"

namespace stockade::oracle {

struct Integrity {
    std::vector<std::string> held_changed;  // held files created, changed or deleted
    std::string head_before, head_after;    // commit ids ("unborn:REF" when unborn)
    std::string git_before, git_after;      // digests of the git dir
};

struct Evidence {
    std::string run_status;  // the result's status (passed, failed, timed_out…)
    std::optional<int> exit_code;
    std::optional<TestReport> report;  // absent: no report could be read or parsed
    std::vector<std::string> report_errors;
    std::vector<std::string> report_files;
    std::optional<std::vector<std::string>> expected;
    Integrity integrity;
    TreeChanges worktree_changes;
    std::string tree_before, tree_after;
};

struct Verdict {
    std::string verdict;                      // pass | fail | error | timeout | blocked
    std::vector<std::string> contradictions;  // why it is an error
    std::vector<std::string> failures;        // why it is a fail
    std::vector<std::string> missing_expected;
    std::vector<std::string> expected_not_passed;
};

Verdict decide(const Evidence& evidence);

// stockade.verdict/v1, with the run's result record embedded.
std::string verdictJson(const Evidence& evidence, const Verdict& verdict,
                        const std::string& result_json);

// An `error` verdict for when the oracle itself failed and has no evidence
// to give: what could not be established is false, never a default true.
std::string internalErrorVerdictJson(const std::string& cause);

int exitCodeFor(const Verdict& verdict);

}  // namespace stockade::oracle
