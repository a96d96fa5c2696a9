// The public API of the runtime: run one sandbox to its end. The CLI and the
// oracle both come through here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "runtime/plan/git_link.h"
#include "runtime/plan/worktree_masks.h"
#include "runtime/policy/policy.h"
#include "runtime/supervisor/layout_summary.h"
#include "runtime/supervisor/output_capture.h"
#include "runtime/supervisor/service_hooks.h"

namespace stockade {

struct Identity;  // runtime/plan/identity.h

enum class Ending {
    Exited,    // the command exited (any code)
    Signaled,  // the command died of a signal
    NotFound,  // the command does not exist (127)
    NotExecutable,
    TimedOut,
    OutputLimit,
    Cancelled,    // SIGINT/SIGTERM reached stockade
    SetupFailed,  // the sandbox could not be built; nothing ran
    Refused,      // a required guarantee cannot be enforced here; nothing ran
    NotReady,     // a service did not become ready in time (serve)
};

struct SandboxOutcome {
    Ending ending = Ending::SetupFailed;
    int exit_code = 0;
    int signal = 0;
    int cancel_signal = 0;
    uint32_t stragglers_killed = 0;
    uint64_t duration_ms = 0;
    uint64_t cpu_ms = 0;
    // stockade's own CPU for this run: the thread that built, supervised and
    // tore down the sandbox, user + system, from the start of runSandbox to
    // its end. Not in cpu_ms, the cgroup or --cpu-time: the caller pays it.
    uint64_t supervisor_cpu_ms = 0;
    uint64_t peak_memory_bytes = 0;
    StreamSummary stdout_summary;
    StreamSummary stderr_summary;
    // SetupFailed: which step, and why.
    std::string error_stage;
    std::string error_message;
    int error_errno = 0;
    pid_t sandbox_pid = 0;  // the host pid of the sandbox's init
    // The host ids the sandbox ran as (G3); unset when nothing was started.
    std::optional<uid_t> host_uid;
    std::optional<gid_t> host_gid;
    // Causes read from the cgroups after the run, not guessed from signals.
    bool oom_killed = false;
    bool pids_limit_hit = false;
    uint64_t cpu_limit_ms = 0;  // RLIMIT_CPU as set, whole seconds
    // The full tier's filesystem layout, from its mount plan: what the
    // record's `detail` judges a path named in a failure against
    // (runtime/record/failure_detail.h). Empty for the lower tier.
    std::vector<LayoutEntry> layout;
    // What held each guarantee ("true", "cgroup1", "rlimit", "default"…);
    // a guarantee missing here did not hold. `degraded` lists what the
    // policy asked for and got only in a weaker form, or not at all.
    std::map<std::string, std::string> enforced;
    // The sandbox it got (SPEC §10): the full tier, or the lower one where
    // no user namespace could be had and the policy allowed it. Unset when
    // nothing was attempted.
    std::optional<Tier> tier;
    // A full-tier refusal where no user namespace can be had: the cause,
    // the host's fix, and the lower tier a profile may accept (said after
    // the error line, and in the record's error message).
    std::string tier_advice;
    std::vector<std::string> degraded;
    // What became of a `.git` file in the worktree (runtime/plan/git_link.h).
    std::optional<GitLinkReport> git;
    // Worktree names hidden or kept read-only (runtime/plan/worktree_masks.h).
    std::optional<WorktreeMaskReport> masks;
    // Each refused syscall by name, with a count, when refusals were
    // reported to the supervisor (seccomp user notification).
    bool denials_reported = false;
    std::vector<std::pair<std::string, uint64_t>> denials;
};

// Builds the sandbox the policy describes, runs the command in it, and
// returns once nothing of the sandbox is left. A sandbox that cannot be built
// is an outcome (SetupFailed), never a weaker run. A service (serve) passes
// hooks: its output goes to them, and they publish its port. A caller that
// had to know the sandbox's host ids beforehand (the oracle) passes the
// identity it chose, and holds its lease; otherwise the run chooses and
// holds one for its lifetime. The caller ignores SIGPIPE, a process-wide
// choice the library leaves to it: else an echo to a reader that went away
// kills the supervisor before the teardown and the record.
SandboxOutcome runSandbox(const Policy& policy, ServiceHooks* hooks = nullptr,
                          const Identity* identity = nullptr);

}  // namespace stockade
