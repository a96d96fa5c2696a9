// `stockade run` and `stockade profile`, given already-parsed options.
// Return the process exit code.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"
#include "runtime/policy.h"
#include "runtime/run_options.h"
#include "runtime/sandbox.h"

namespace stockade {

int runCommand(const RunOptions& options);

// The pieces `run` shares with `serve` and `oracle`.
// Says why, writes a refusal record when --result asks, returns 125.
int refuseRun(const RunOptions& options, const std::string& profile, const std::string& reason,
              const std::string& status, const std::string& stage, const std::string& message);
// The profile and the options as a Policy; on an error, the refusal is
// already reported and `exit_code` holds 125.
Result<Policy> policyForRun(const RunOptions& options, int& exit_code);
// Reports how the run ended (one line for a bound stockade applied, and for
// a limit `options` asked for that only an rlimit held), writes --result,
// returns the exit code: non-zero when the record could not be written.
int finishRun(const Policy& policy, const SandboxOutcome& outcome,
              const RunOptions* options = nullptr);
int profileShowCommand(const std::string& name_or_file);
int profileCheckCommand(const std::string& file);
// `stockade check`: exit 0 when the profile can run here as required, 1 when not.
// `require`: --require lists, added to the profile's own requirements.
int checkCommand(const std::string& profile, bool json,
                 const std::vector<std::string>& require = {});

}  // namespace stockade
