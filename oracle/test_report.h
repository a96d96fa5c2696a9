// What a test runner's report says, whatever its format (JUnit XML, TAP):
// the cases with their status, what the report declares about itself, and the
// contradictions the parser found inside it. The parsers judge nothing; the
// verdict decides what a contradiction means.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace stockade::oracle {

struct TestCase {
    enum class Status { Passed, Failed, Errored, Skipped };
    std::string name;
    std::string classname;  // JUnit's classname; empty for TAP
    // The enclosing suites (JUnit <testsuite> names, TAP parent tests), outer
    // first, joined with " > "; empty at the top.
    std::string suite;
    Status status = Status::Passed;
    double duration_s = 0;  // 0 when the report gives none
    // Failed/Errored: the first line of the reason (JUnit's message
    // attribute, TAP's YAML `message`/`error`); Skipped: the reason.
    std::string message;
    std::string details;  // the longer text (a stack, an expansion), if any
    int line = 0;         // where the case is in the report, 1-based
};

// "passed", "failed", "errored", "skipped".
const char* testStatusName(TestCase::Status status);

// Numbers the report states about itself, where it states them.
struct DeclaredCounts {
    std::optional<uint64_t> tests, failures, errors, skipped;
};

// One number the report declares, beside what its own cases show, counted the
// way its producer counts (see each parser). Disagreement means the report
// contradicts itself.
struct CountCheck {
    std::string where;     // "<testsuite name=\"Math\"> at line 3", "plan 1..4 at line 9"
    std::string quantity;  // "tests", "failures", "errors", "skipped", "disabled"
    uint64_t declared = 0;
    uint64_t counted = 0;
    bool agrees() const { return declared == counted; }
};

struct StatusCounts {
    uint64_t tests = 0, passed = 0, failed = 0, errored = 0, skipped = 0;
};

struct TestReport {
    std::string format;   // "junit" or "tap"
    std::string dialect;  // the producer, where recognised: "pytest", "node", "catch2",
                          // "googletest"; else the format
    std::vector<TestCase> cases;
    // The report's own totals (the root of a JUnit report or the sum of its
    // top-level suites; a TAP plan), unset where it states none.
    DeclaredCounts declared;
    std::vector<CountCheck> count_checks;
    // Contradictions that are not a count: a TAP report without a plan, a
    // plan in the middle, numbers out of sequence, "Bail out!", a parent test
    // that passed with a failed subtest. Each names its line.
    std::vector<std::string> problems;
    bool bailed_out = false;
};

// The cases by status.
StatusCounts countByStatus(const TestReport& report);

}  // namespace stockade::oracle
