#include "oracle/test_report.h"

namespace stockade::oracle {

const char* testStatusName(TestCase::Status status) {
    switch (status) {
        case TestCase::Status::Passed:
            return "passed";
        case TestCase::Status::Failed:
            return "failed";
        case TestCase::Status::Errored:
            return "errored";
        case TestCase::Status::Skipped:
            break;
    }
    return "skipped";
}

StatusCounts countByStatus(const TestReport& report) {
    StatusCounts counts;
    for (const TestCase& test : report.cases) {
        ++counts.tests;
        switch (test.status) {
            case TestCase::Status::Passed:
                ++counts.passed;
                break;
            case TestCase::Status::Failed:
                ++counts.failed;
                break;
            case TestCase::Status::Errored:
                ++counts.errored;
                break;
            case TestCase::Status::Skipped:
                ++counts.skipped;
                break;
        }
    }
    return counts;
}

}  // namespace stockade::oracle
