// JUnit XML reports, in the dialects real runners write: a <testsuites> root
// or a single <testsuite>, suites nested in suites, <testcase> with
// <failure>, <error>, <skipped>. Tested on reports of `node --test
// --test-reporter=junit`, `pytest --junitxml`, Catch2 2 (`-r junit`) and
// GoogleTest (`--gtest_output=xml`) kept in tests/fixtures/oracle/.
//
// Each count a suite (or the root) declares becomes a CountCheck against
// its own cases, counted the way its producer counts:
//   tests     testcase elements (Catch2 counts assertions here, so its
//             `tests` is neither checked nor reported as declared);
//   failures  cases with a <failure> (Catch2: <failure> elements, one per
//             failed assertion);
//   errors    likewise with <error>;
//   skipped   cases with a <skipped>;
//   disabled  (GoogleTest) cases with status="notrun".
// A case is Errored if it has an <error>, else Failed if it has a <failure>,
// else Skipped if it has a <skipped> or status="notrun", else Passed; except
// that node's <skipped type="todo"> beside a <failure> is Skipped, as node
// does not count a failing todo test as a failure.
//
// Node's summary comments (<!-- tests 6 -->) count suites-with-subtests and
// cancelled tests in ways its XML does not show, so they are not read.
#pragma once

#include <string_view>

#include "base/error.h"
#include "oracle/test_report.h"

namespace stockade::oracle {

// A report that is not well-formed XML, has another root, or has a count,
// duration or name that is not one, is an Error naming the line and what.
Result<TestReport> parseJunit(std::string_view xml);

}  // namespace stockade::oracle
