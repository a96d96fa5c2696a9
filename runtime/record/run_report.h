// How a run begins and ends as its front ends (`run`, `serve`) report it:
// the profile and the options become a Policy and the place its record goes,
// a refusal is one line on stderr and a refusal record, and the ending is one
// line for a bound stockade applied and the result record.
#pragma once

#include <optional>
#include <string>

#include "base/error.h"
#include "runtime/policy/policy.h"
#include "runtime/policy/run_options.h"
#include "runtime/record/record_path.h"
#include "runtime/supervisor/sandbox.h"

namespace stockade {

// A run ready to start: what it may do, and where its record goes
// (--result, judged writable before the run; none when not asked for).
struct PreparedRun {
    Policy policy;
    std::optional<RecordTarget> record;
};

// Says why, writes a refusal record when --result asks, returns 125.
int refuseRun(const RunOptions& options, const std::string& profile, const std::string& reason,
              const std::string& status, const std::string& stage, const std::string& message);
// The profile and the options as a PreparedRun; on an error, the refusal is
// already reported and `exit_code` holds 125.
Result<PreparedRun> prepareRun(const RunOptions& options, int& exit_code);

// For `stockade run`, once prepareRun has checked that no sandbox of the run
// can write the caller's state directory: holds it, so the worktree walk is
// kept there between runs (runtime/plan/walk_cache.h); without it every walk
// is whole. Not for serve, whose state directory is its own to hold (and to
// swap-test) once.
void keepWorktreeWalk(Policy& policy);
// Reports how the run ended (one line for a bound stockade applied, and for
// a limit `options` asked for that only an rlimit held), writes the record,
// returns the exit code: non-zero when the record could not be written.
int finishRun(const PreparedRun& run, const SandboxOutcome& outcome,
              const RunOptions* options = nullptr);

}  // namespace stockade
