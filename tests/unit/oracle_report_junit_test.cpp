// JUnit reports written by real runners (tests/fixtures/oracle/junit, made
// by generate.sh beside them), and reports that contradict themselves.
#include <catch2/catch.hpp>

#include "oracle/report_junit.h"
#include "tests/unit/oracle_test_support.h"

using namespace stockade;
using namespace stockade::oracle;
using CaseStatus = stockade::oracle::TestCase::Status;

namespace {

TestReport parseFixture(const std::string& name) {
    Result<TestReport> report = parseJunit(oracle_test::fixture("junit/" + name));
    INFO(name << ": " << (report.ok() ? std::string() : report.error().describe()));
    REQUIRE(report.ok());
    return *report;
}

void checkCountsAgree(const TestReport& report) {
    for (const CountCheck& check : report.count_checks) {
        INFO(check.where << " " << check.quantity << ": declared " << check.declared << ", counted "
                         << check.counted);
        CHECK(check.agrees());
    }
}

const TestCase& findCase(const TestReport& report, const std::string& name) {
    for (const TestCase& test : report.cases)
        if (test.name == name) return test;
    FAIL("no case named " << name);
    return report.cases.front();
}

struct Expected {
    const char* fixture;
    const char* dialect;
    uint64_t tests, passed, failed, errored, skipped;
};

}  // namespace

TEST_CASE("real runners' JUnit reports are read, and agree with themselves", "[oracle][junit]") {
    const Expected expectations[] = {
        {"node_all_pass.xml", "node", 3, 3, 0, 0, 0},
        {"node_mixed.xml", "node", 6, 2, 2, 0, 2},
        {"node_cancel.xml", "node", 4, 1, 3, 0, 0},
        {"node_todo_in_suite.xml", "node", 4, 1, 0, 0, 3},
        {"pytest_all_pass.xml", "pytest", 2, 2, 0, 0, 0},
        {"pytest_mixed.xml", "pytest", 7, 3, 1, 1, 2},
        {"pytest_no_tests.xml", "pytest", 0, 0, 0, 0, 0},
        {"pytest_collection_error.xml", "pytest", 1, 0, 0, 1, 0},
        {"catch2_all_pass.xml", "catch2", 2, 2, 0, 0, 0},
        {"catch2_mixed.xml", "catch2", 5, 2, 2, 1, 0},
        {"catch2_no_tests.xml", "catch2", 0, 0, 0, 0, 0},
        {"googletest_all_pass.xml", "googletest", 2, 2, 0, 0, 0},
        {"googletest_mixed.xml", "googletest", 7, 3, 2, 0, 2},
        {"googletest_no_tests.xml", "googletest", 0, 0, 0, 0, 0},
    };
    for (const Expected& expected : expectations) {
        INFO(expected.fixture);
        TestReport report = parseFixture(expected.fixture);
        CHECK(report.format == "junit");
        CHECK(report.dialect == expected.dialect);
        StatusCounts counts = countByStatus(report);
        CHECK(counts.tests == expected.tests);
        CHECK(counts.passed == expected.passed);
        CHECK(counts.failed == expected.failed);
        CHECK(counts.errored == expected.errored);
        CHECK(counts.skipped == expected.skipped);
        checkCountsAgree(report);
        CHECK(report.problems.empty());
    }
}

TEST_CASE("pytest: names, classnames, messages, declared totals", "[oracle][junit]") {
    TestReport report = parseFixture("pytest_mixed.xml");
    const TestCase& failed = findCase(report, "test_subtracts");
    CHECK(failed.classname == "pytest_mixed");
    CHECK(failed.status == CaseStatus::Failed);
    CHECK(failed.message == "AssertionError: subtraction <is> & broken");
    CHECK(failed.details.find("pytest_mixed.py:7: AssertionError") != std::string::npos);
    CHECK(failed.suite == "pytest");
    CHECK(failed.line == 1);  // pytest writes its report on one line
    const TestCase& skipped = findCase(report, "test_skipped");
    CHECK(skipped.status == CaseStatus::Skipped);
    CHECK(skipped.message == "not on this platform");
    CHECK(findCase(report, "test_xfail").status == CaseStatus::Skipped);
    const TestCase& errored = findCase(report, "test_uses_broken");
    CHECK(errored.status == CaseStatus::Errored);
    CHECK(errored.message == "failed on setup with \"RuntimeError: fixture exploded\"");
    CHECK(findCase(report, "test_param[2]").classname == "pytest_mixed.TestGroup");
    // The root declares nothing; its single suite does.
    CHECK(report.declared.tests == 7u);
    CHECK(report.declared.failures == 1u);
    CHECK(report.declared.errors == 1u);
    CHECK(report.declared.skipped == 2u);
}

TEST_CASE("node: suites, a failing todo test, cancelled subtests", "[oracle][junit]") {
    TestReport report = parseFixture("node_mixed.xml");
    const TestCase& failed = findCase(report, "subtracts <wrongly> & &quot;badly&quot;");
    CHECK(failed.status == CaseStatus::Failed);
    CHECK(failed.message == "Expected values to be strictly equal:1 !== 3");
    const TestCase& todo = findCase(report, "is todo");
    CHECK(todo.status == CaseStatus::Skipped);
    CHECK(todo.message == "TODO write it");
    CHECK(findCase(report, "inner fails").suite == "suite");
    CHECK(findCase(report, "adds numbers").suite.empty());
    CHECK(findCase(report, "adds numbers").duration_s > 0);
    // Test cases straight under the root: no total is declared.
    CHECK_FALSE(report.declared.tests.has_value());

    TestReport cancel = parseFixture("node_cancel.xml");
    CHECK(findCase(cancel, "never awaited").status == CaseStatus::Failed);
    CHECK(findCase(cancel, "never awaited").suite == "parent");
}

TEST_CASE("Catch2: sections, exceptions, and tests that count assertions", "[oracle][junit]") {
    TestReport report = parseFixture("catch2_mixed.xml");
    CHECK(findCase(report, "throws").status == CaseStatus::Errored);
    CHECK(findCase(report, "throws").details.find("unexpected <boom> & more") != std::string::npos);
    CHECK(findCase(report, "has sections/second").status == CaseStatus::Failed);
    CHECK(findCase(report, "subtracts wrongly").message == "x == 3");
    // Catch2's tests="6" counts assertions: not taken as a count of cases.
    CHECK_FALSE(report.declared.tests.has_value());
    CHECK(report.declared.failures == 2u);
    CHECK(report.declared.errors == 1u);
    for (const CountCheck& check : report.count_checks) CHECK(check.quantity != "tests");
}

TEST_CASE("GoogleTest: disabled, skipped, several failures in one test", "[oracle][junit]") {
    TestReport report = parseFixture("googletest_mixed.xml");
    const TestCase& twice = findCase(report, "SubtractsWrongly");
    CHECK(twice.status == CaseStatus::Failed);
    CHECK(twice.message == "googletest_mixed.cpp:4\ngoogletest_mixed.cpp:4");
    CHECK(twice.details.find("subtraction <is> & broken") != std::string::npos);
    CHECK(findCase(report, "DISABLED_Later").status == CaseStatus::Skipped);
    CHECK(findCase(report, "DISABLED_Later").message == "not run (disabled)");
    CHECK(findCase(report, "Skips").status == CaseStatus::Skipped);
    CHECK(findCase(report, "Positive/1").classname == "Small/Param");
    CHECK(report.declared.tests == 7u);
    CHECK(report.declared.failures == 2u);
    bool checked_disabled = false;
    for (const CountCheck& check : report.count_checks)
        if (check.quantity == "disabled" && check.where.find("AllTests") != std::string::npos) {
            checked_disabled = true;
            CHECK(check.declared == 1);
            CHECK(check.counted == 1);
        }
    CHECK(checked_disabled);
}

TEST_CASE("a forged count is a disagreement, named where it is", "[oracle][junit]") {
    std::string xml = oracle_test::fixture("junit/pytest_mixed.xml");
    // An all-green claim over the real cases.
    size_t at = xml.find("failures=\"1\"");
    REQUIRE(at != std::string::npos);
    xml.replace(at, 12, "failures=\"0\"");
    Result<TestReport> report = parseJunit(xml);
    REQUIRE(report.ok());
    bool found = false;
    for (const CountCheck& check : report->count_checks) {
        if (check.agrees()) continue;
        found = true;
        CHECK(check.quantity == "failures");
        CHECK(check.declared == 0);
        CHECK(check.counted == 1);
        CHECK(check.where == "<testsuite name=\"pytest\"> at line 1");
    }
    CHECK(found);
}

TEST_CASE("a single <testsuite> root and nested suites", "[oracle][junit]") {
    Result<TestReport> report = parseJunit(
        "<?xml version=\"1.0\"?>\n"
        "<testsuite name=\"outer\" tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\">\n"
        "  <testcase name=\"a\" classname=\"k\" time=\"1.5\"/>\n"
        "  <testsuite name=\"inner\" tests=\"2\" failures=\"1\">\n"
        "    <testcase name=\"b\"><failure>boom\nmore</failure></testcase>\n"
        "    <testcase name=\"c\"><skipped/></testcase>\n"
        "  </testsuite>\n"
        "</testsuite>\n");
    REQUIRE(report.ok());
    CHECK(report->dialect == "junit");
    REQUIRE(report->cases.size() == 3);
    CHECK(report->cases[0].duration_s == 1.5);
    CHECK(report->cases[1].suite == "outer > inner");
    CHECK(report->cases[1].message == "boom");
    CHECK(report->cases[1].details == "boom\nmore");
    CHECK(report->cases[1].line == 5);
    CHECK(report->declared.tests == 3u);
    CHECK(report->declared.skipped == 1u);
    checkCountsAgree(*report);
    CHECK(report->count_checks.size() == 6);
}

TEST_CASE("malformed reports are Errors that say where and what", "[oracle][junit]") {
    struct Bad {
        const char* xml;
        const char* error;
    };
    const Bad cases[] = {
        {"", "JUnit report: line 1: not well-formed XML (No document element found)"},
        {"<testsuites>\n<testcase name=\"a\">\n</testsuites>",
         "JUnit report: line 3: not well-formed XML (Start-end tags mismatch)"},
        {"<html><body/></html>",
         "JUnit report: line 1: the root element is <html>, not <testsuites> or <testsuite>"},
        {"<testsuites>\n<testsuite tests=\"many\"/></testsuites>",
         "JUnit report: line 2: <testsuite> tests=\"many\" is not a count"},
        {"<testsuites>\n<testsuite tests=\"-1\"/></testsuites>",
         "JUnit report: line 2: <testsuite> tests=\"-1\" is not a count"},
        {"<testsuite>\n\n<testcase classname=\"x\"/></testsuite>",
         "JUnit report: line 3: <testcase> has no name"},
        {"<testsuite><testcase name=\"a\" time=\"nan\"/></testsuite>",
         "JUnit report: line 1: <testcase> time=\"nan\" is not a duration"},
        {"<testsuite><testcase name=\"a\" time=\"-2\"/></testsuite>",
         "JUnit report: line 1: <testcase> time=\"-2\" is not a duration"},
        {"<testsuite><testsuites/></testsuite>",
         "JUnit report: line 1: <testsuites> inside <testsuite> at line 1"},
    };
    for (const Bad& bad : cases) {
        INFO(bad.xml);
        Result<TestReport> report = parseJunit(bad.xml);
        REQUIRE_FALSE(report.ok());
        CHECK(report.error().describe() == bad.error);
    }
}

TEST_CASE("hostile XML costs no more than its size", "[oracle][junit]") {
    // Entities are not expanded (no billion laughs), and nesting is bounded.
    std::string laughs =
        "<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [<!ENTITY lol \"lol\">"
        "<!ENTITY lol2 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">]>\n"
        "<testsuite><testcase name=\"&lol2;\"/></testsuite>";
    Result<TestReport> report = parseJunit(laughs);
    if (report.ok()) {
        REQUIRE(report->cases.size() == 1);
        CHECK(report->cases[0].name.size() < 100);
    }
    std::string deep;
    for (int i = 0; i < 10000; ++i) deep += "<testsuite>";
    for (int i = 0; i < 10000; ++i) deep += "</testsuite>";
    Result<TestReport> nested = parseJunit(deep);
    REQUIRE_FALSE(nested.ok());
    CHECK(nested.error().describe().find("elements nest deeper than") != std::string::npos);
}
