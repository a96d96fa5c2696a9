// `stockade oracle`: runs a held test against a candidate worktree in the
// held-test sandbox and decides, with evidence, whether it passed (SPEC §8).
// Built on runtime/'s public API: loadProfile, buildPolicy, runSandbox,
// resultJson.
#pragma once

#include <optional>
#include <string>

#include "runtime/policy/run_options.h"

namespace stockade::oracle {

struct OracleOptions {
    RunOptions run;                       // --worktree is required
    std::string held;                     // mounted read-only at /held
    std::string report_format = "junit";  // or "tap"
    std::optional<std::string> expect;    // FILE: the test names the author declared
    std::optional<std::string> verdict;   // FILE: where the verdict JSON goes
};

// Returns the exit code: 0 pass, 1 fail, 2 error, 124 timeout, 125 refused.
int runOracle(const OracleOptions& options);

}  // namespace stockade::oracle
