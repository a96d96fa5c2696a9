// TAP 13 (and the subtests of TAP 14 that Test::More and `node --test
// --test-reporter=tap` write): the plan `1..N` at the start or the end,
// `ok`/`not ok` lines with numbers and descriptions, `# SKIP` and `# TODO`
// directives, YAML diagnostic blocks (`  ---` ... `  ...`) for the failure
// message and duration, `Bail out!`, and subtests indented beneath the line
// that sums them up.
//
// Cases are the leaves: a parent line stands for its subtests and becomes a
// case of its own only when it fails although none of its subtests did (a
// failing hook, say). A test marked TODO is Skipped whether it passed or
// failed: its author said not to count it (TAP does not count its failure,
// and node's JUnit reporter marks it skipped either way).
//
// Each plan, at every level, becomes a CountCheck against the test lines of
// its level. `declared.tests` is the top-level plan when there are no
// subtests (there it counts the cases); with subtests it counts parents too,
// so it is left unset and the per-level checks say whether the plans hold.
// A missing plan, a second plan, a test after a trailing plan, numbers out
// of sequence, a parent that passed with a failed subtest and `Bail out!` are
// problems of the report, not parse errors.
#pragma once

#include <string_view>

#include "base/error.h"
#include "oracle/test_report.h"

namespace stockade::oracle {

// Text with no TAP line at all (no plan, no test line, no Bail out!), or a
// YAML block that is never closed, is an Error naming the line.
Result<TestReport> parseTap(std::string_view text);

}  // namespace stockade::oracle
