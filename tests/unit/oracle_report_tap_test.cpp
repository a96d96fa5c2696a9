// TAP written by real producers (Test::More under perl, node --test; in
// tests/fixtures/oracle/tap, made by generate.sh), and TAP that contradicts
// itself.
#include <catch2/catch.hpp>

#include "oracle/report_tap.h"
#include "tests/unit/oracle_test_support.h"

using namespace stockade;
using namespace stockade::oracle;
using CaseStatus = stockade::oracle::TestCase::Status;

namespace {

TestReport parse(std::string_view text) {
    Result<TestReport> report = parseTap(text);
    INFO((report.ok() ? std::string() : report.error().describe()));
    REQUIRE(report.ok());
    return *report;
}

TestReport parseFixture(const std::string& name) {
    INFO(name);
    return parse(oracle_test::fixture("tap/" + name));
}

bool allAgree(const TestReport& report) {
    for (const CountCheck& check : report.count_checks)
        if (!check.agrees()) return false;
    return true;
}

const TestCase& findCase(const TestReport& report, const std::string& name) {
    for (const TestCase& test : report.cases)
        if (test.name == name) return test;
    FAIL("no case named " << name);
    return report.cases.front();
}

}  // namespace

TEST_CASE("Test::More's TAP: plan first, skip, todo, a failing subtest", "[oracle][tap]") {
    TestReport report = parseFixture("perl_mixed.tap");
    CHECK(report.format == "tap");
    StatusCounts counts = countByStatus(report);
    // adds, skipped one, todo, concatenates, upper-cases, last
    CHECK(counts.tests == 7);
    CHECK(counts.passed == 3);
    CHECK(counts.failed == 2);
    CHECK(counts.skipped == 2);
    CHECK(findCase(report, "subtracts # wrongly").status == CaseStatus::Failed);
    CHECK(findCase(report, "a todo").status == CaseStatus::Skipped);
    CHECK(findCase(report, "a todo").message == "TODO write it");
    CHECK(findCase(report, "upper-cases").suite == "strings");
    CHECK(findCase(report, "upper-cases").status == CaseStatus::Failed);
    CHECK(findCase(report, "").status ==
          CaseStatus::Skipped);  // "ok 3 # skip ..." has no description
    CHECK(findCase(report, "").message == "not on this platform");
    CHECK(report.problems.empty());
    CHECK(allAgree(report));
    CHECK(report.count_checks.size() == 2);          // the top plan and the subtest's
    CHECK_FALSE(report.declared.tests.has_value());  // subtests: the top plan counts parents
}

TEST_CASE("Test::More's TAP: plan last, done_testing subtests", "[oracle][tap]") {
    TestReport report = parseFixture("perl_all_pass.tap");
    StatusCounts counts = countByStatus(report);
    CHECK(counts.tests == 3);
    CHECK(counts.passed == 3);
    CHECK(findCase(report, "inner").suite == "group");
    CHECK(report.problems.empty());
    CHECK(allAgree(report));
}

TEST_CASE("Bail out! is a problem of the report", "[oracle][tap]") {
    TestReport report = parseFixture("perl_bail_out.tap");
    CHECK(report.bailed_out);
    CHECK(report.problems == std::vector<std::string>{"line 3: Bail out! database is gone"});
    CHECK(countByStatus(report).passed == 1);
}

TEST_CASE("node's TAP: YAML diagnostics, durations, suites", "[oracle][tap]") {
    TestReport report = parseFixture("node_mixed.tap");
    StatusCounts counts = countByStatus(report);
    CHECK(counts.tests == 6);
    CHECK(counts.passed == 2);
    CHECK(counts.failed == 2);
    CHECK(counts.skipped == 2);
    const TestCase& failed = findCase(report, "subtracts <wrongly> & \"badly\"");
    CHECK(failed.status == CaseStatus::Failed);
    CHECK(failed.message == "Expected values to be strictly equal:");
    CHECK(failed.details.find("1 !== 3") != std::string::npos);
    CHECK(failed.details.find("mixed.test.mjs:4:54") != std::string::npos);
    CHECK(failed.duration_s > 0);
    const TestCase& inner = findCase(report, "inner fails");
    CHECK(inner.suite == "suite");
    CHECK(inner.message == "boom");
    CHECK(inner.details.substr(0, 16) == "boom\nsecond line");
    CHECK(findCase(report, "is skipped").message == "not on this platform");
    CHECK(report.problems.empty());
    CHECK(allAgree(report));

    TestReport green = parseFixture("node_all_pass.tap");
    CHECK(countByStatus(green).passed == 3);
    CHECK(green.problems.empty());
    CHECK(allAgree(green));
}

TEST_CASE("a flat report's plan is its declared count", "[oracle][tap]") {
    TestReport report = parse("TAP version 13\n1..3\nok 1 - a\nok 2 - b\nnot ok 3 - c\n");
    CHECK(report.declared.tests == 3u);
    CHECK(countByStatus(report).failed == 1);
    CHECK(allAgree(report));
    CHECK(report.count_checks.at(0).where == "plan 1..3 at line 2");
}

TEST_CASE("contradictions in TAP are named, not thrown away", "[oracle][tap]") {
    SECTION("no plan") {
        TestReport report = parse("ok 1 - a\nok 2 - b\n");
        CHECK(report.problems == std::vector<std::string>{"no plan"});
        CHECK(report.cases.size() == 2);
    }
    SECTION("a plan that disagrees with the tests") {
        TestReport report = parse("1..5\nok 1\nok 2\nok 3\n");
        REQUIRE(report.count_checks.size() == 1);
        CHECK_FALSE(report.count_checks[0].agrees());
        CHECK(report.count_checks[0].declared == 5);
        CHECK(report.count_checks[0].counted == 3);
    }
    SECTION("numbers out of sequence") {
        TestReport report = parse("1..3\nok 1\nok 3\nok 2\n");
        CHECK(report.problems ==
              std::vector<std::string>{"line 3: test number 3 out of sequence (expected 2)",
                                       "line 4: test number 2 out of sequence (expected 3)"});
    }
    SECTION("a plan in the middle, and a second plan") {
        TestReport report = parse("ok 1\n1..2\nok 2\n1..2\n");
        CHECK(report.problems ==
              std::vector<std::string>{"line 3: a test after the plan at line 2",
                                       "line 4: a second plan (the first is at line 2)"});
    }
    SECTION("a parent that passed although a subtest failed") {
        TestReport report = parse("1..1\n    1..1\n    not ok 1 - inner\nok 1 - outer\n");
        CHECK(report.problems ==
              std::vector<std::string>{"line 4: \"outer\" passed although a subtest failed"});
        CHECK(findCase(report, "inner").status == CaseStatus::Failed);
    }
    SECTION("a parent that failed with every subtest passing is a failure itself") {
        TestReport report = parse(
            "1..1\n    1..1\n    ok 1 - inner\nnot ok 1 - outer\n  ---\n  error: 'after hook "
            "failed'\n  ...\n");
        CHECK(report.problems.empty());
        REQUIRE(report.cases.size() == 2);
        CHECK(findCase(report, "outer").status == CaseStatus::Failed);
        CHECK(findCase(report, "outer").message == "after hook failed");
    }
    SECTION("subtests with no line summing them up") {
        TestReport report = parse("    1..1\n    ok 1 - inner\n1..0\n");
        CHECK(report.problems ==
              std::vector<std::string>{"line 3: the subtests from line 1 have no test line "
                                       "summing them up"});
    }
    SECTION("a subtest level without a plan") {
        TestReport report = parse("1..1\n    ok 1 - inner\nok 1 - outer\n");
        CHECK(report.problems == std::vector<std::string>{"no plan for the subtests from line 2"});
    }
}

TEST_CASE("directives, escapes and a skipped plan", "[oracle][tap]") {
    TestReport report = parse(
        "1..5\n"
        "ok 1 - has \\# an escaped hash # SKIP no network\n"
        "not ok 2 - unfinished # TODO later\n"
        "ok 3 - finished early # todo\n"
        "ok 4 - spaced out #   skipped   because\n"
        "ok 5 # comment that is no directive\n");
    REQUIRE(report.cases.size() == 5);
    CHECK(report.cases[0].name == "has # an escaped hash");
    CHECK(report.cases[0].status == CaseStatus::Skipped);
    CHECK(report.cases[0].message == "no network");
    CHECK(report.cases[1].status == CaseStatus::Skipped);
    CHECK(report.cases[2].status ==
          CaseStatus::Skipped);  // a TODO that passed still does not count
    CHECK(report.cases[3].status == CaseStatus::Skipped);
    CHECK(report.cases[3].message == "because");
    CHECK(report.cases[4].status == CaseStatus::Passed);

    TestReport skip_all = parse("1..0 # SKIP no database here\n");
    CHECK(skip_all.cases.empty());
    CHECK(skip_all.problems.empty());
    CHECK(skip_all.declared.tests == 0u);
}

TEST_CASE("text that is not TAP is ignored, and text with no TAP at all is an Error",
          "[oracle][tap]") {
    TestReport report = parse("some runner chatter\n1..1\nokay this is not a test\nok 1\n");
    CHECK(report.cases.size() == 1);
    CHECK(report.problems.empty());

    Result<TestReport> none = parseTap("hello\nworld\n");
    REQUIRE_FALSE(none.ok());
    CHECK(none.error().describe() == "TAP report: no plan, no test line, no Bail out!");
    Result<TestReport> empty = parseTap("");
    CHECK_FALSE(empty.ok());

    Result<TestReport> unclosed = parseTap("1..1\nnot ok 1 - a\n  ---\n  message: x\n");
    REQUIRE_FALSE(unclosed.ok());
    CHECK(unclosed.error().describe() ==
          "TAP report: line 3: the YAML block opened here is never closed");
}

TEST_CASE("CRLF line ends and YAML scalars", "[oracle][tap]") {
    TestReport report = parse(
        "1..2\r\n"
        "not ok 1 - quoted\r\n"
        "  ---\r\n"
        "  message: \"line one\\nline two\"\r\n"
        "  duration_ms: 1500\r\n"
        "  ...\r\n"
        "not ok 2 - block\n"
        "  ---\n"
        "  message: |\n"
        "    first\n"
        "      indented\n"
        "  at: somewhere\n"
        "  ...\n");
    REQUIRE(report.cases.size() == 2);
    CHECK(report.cases[0].message == "line one");
    CHECK(report.cases[0].details == "line one\nline two");
    CHECK(report.cases[0].duration_s == 1.5);
    CHECK(report.cases[1].message == "first");
    CHECK(report.cases[1].details == "first\n  indented");
}
