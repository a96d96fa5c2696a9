// The child's setup as one ordered table: every step from the clone to the
// command's execve, in the order it runs, with why it sits there and which
// layer of `stockade bench` adds it. One runner (runChildInChild,
// runtime/child/child_in_child.cpp) walks it in three modes:
//
//   Run    every step; the first failure ends the setup (stockade run, serve)
//   Check  every step, each one reported; the first failure ends the probe,
//          and the command is never exec'ed (stockade check)
//   Bench  only the steps of the levels up to the plan's bench level, failing
//          fast like Run (stockade bench)
//
// so `check` probes and `bench` measures the steps `run` executes, in its
// order, through its functions. The table itself, and the orderings that
// security depends on (asserted at compile time beside it), live in
// runtime/child/child_in_child.cpp; this header gives the parent side a read-only
// view of it. docs/design.md points here rather than copying it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/child/child_protocol.h"

namespace stockade {

// The layers of `stockade bench` (issue 7): one sandboxed /bin/true built up
// one isolation layer at a time, each adding the table's steps of its level
// (and the namespaces its clone makes, runtime/bench/bench_layers.cpp), so the
// difference between two neighbours is what one layer costs.
enum class BenchLevel : uint8_t {
    Bare,          // clone + execve, nothing else
    UserNs,        // + CLONE_NEWUSER, id maps written by the parent, ids set
    MountNs,       // + CLONE_NEWNS, the new root: tmpfs, binds, copies, pivot_root
    PidNs,         // + CLONE_NEWPID, /proc, init as PID 1 starting the command
    NetNs,         // + the network namespace, lo up
    OtherNs,       // + CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWCGROUP, hostname
    Seccomp,       // + the default filter (and the denial listener's hand-over)
    Capabilities,  // + capability sets and bounding set cleared, no_new_privs
    Landlock,      // + the Landlock ruleset mirroring the mounts (G10)
    CgroupLimits,  // + memory and pids cgroup leaves, or rlimits without them
    FullProfile,   // the real `stockade run --quiet --result FILE -- /bin/true`
};
inline constexpr int kBenchLevelCount = 11;

enum class SetupMode : uint8_t { Run, Check, Bench };

// Which process runs a step: init (the clone, PID 1 in its namespace), the
// command (init's CLONE_VM|CLONE_VFORK child, up to its execve), or init
// again once the command has exec'ed. Below BenchLevel::PidNs there is no
// init: the clone runs the command's steps itself and exec's.
enum class StepProcess : uint8_t { Init, Command, InitAfterCommand };

struct SetupStepInfo {
    ChildStage stage;
    StepProcess process;
    BenchLevel level;    // the bench layer that adds this step
    const char* reason;  // why it sits where it does
};

// The table, in the order the steps run. Defined in child_in_child.cpp.
const SetupStepInfo* setupSteps(size_t* count) noexcept;

// Whether the runner takes `step` in `mode` (and, for Bench, at `level`):
// every step for run and check, the steps of the levels up to `level` for
// bench. The runner asks this and nothing else.
// Whether a step runs in the lower tier (no namespace, issue 18): not those
// that make or fill a namespace, which there would act on the host's own.
constexpr bool lowerTierRuns(ChildStage stage) noexcept {
    switch (stage) {
        case ChildStage::StartNetworkHelper:
        case ChildStage::PrivateMounts:
        case ChildStage::OpenSources:
        case ChildStage::UserNamespaceLimits:
        case ChildStage::BuildRoot:
        case ChildStage::SealRoot:
        case ChildStage::PivotRoot:
        case ChildStage::LandlockRules:
        case ChildStage::Loopback:
        case ChildStage::Hostname:
        case ChildStage::CgroupNamespace:
        case ChildStage::CommandProc:
            return false;
        default:
            return true;
    }
}

constexpr bool stepRunsIn(const SetupStepInfo& step, SetupMode mode, BenchLevel level) noexcept {
    return mode != SetupMode::Bench || static_cast<int>(step.level) <= static_cast<int>(level);
}

}  // namespace stockade
