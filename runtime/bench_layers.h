// The layers of `stockade bench` (issue 7): one sandboxed /bin/true built up
// one isolation layer at a time, each level adding to the one before, so the
// difference between two neighbours is what one layer costs. Every level
// below the last is built here, in-process, from the real default profile's
// ChildPlan and the same child-side helpers the sandbox uses (mounts, ids,
// loopback, seccomp program, privileges, Landlock, cgroups); the last level
// is the real `stockade run`, spawned by bench_command.cpp.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "namespaces/mount_plan.h"
#include "runtime/cgroup_limits.h"
#include "runtime/child_plan.h"
#include "runtime/identity.h"
#include "runtime/policy.h"

namespace stockade {

enum class BenchLevel {
    Bare,          // clone + execve, nothing else
    UserNs,        // + CLONE_NEWUSER, id maps written by the parent, ids set
    MountNs,       // + CLONE_NEWNS, the new root: tmpfs, binds, copies, pivot_root
    PidNs,         // + CLONE_NEWPID, /proc, init as PID 1 forking the command
    NetNs,         // + CLONE_NEWNET, lo up
    OtherNs,       // + CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWCGROUP, hostname
    Seccomp,       // + the default filter (and the denial listener's hand-over)
    Capabilities,  // + capability sets and bounding set cleared, no_new_privs
    Landlock,      // + the Landlock ruleset mirroring the mounts (G10)
    CgroupLimits,  // + memory and pids cgroup leaves, or rlimits without them
    FullProfile,   // the real `stockade run --quiet --result FILE -- /bin/true`
};

inline constexpr int kBenchLevelCount = 11;

struct BenchLevelInfo {
    BenchLevel level;
    const char* name;   // for JSON: "user_ns"
    const char* label;  // for people: "+ user namespace"
};

const std::array<BenchLevelInfo, kBenchLevelCount>& benchLevels();

// Everything the in-process levels need, prepared once from the default
// profile: the real ChildPlan (ids, mounts, seccomp programs, rlimits) and the
// variant of its mounts without /proc for the levels that have no PID
// namespace of their own (a procfs needs one, proc(5)).
class LayerBench {
  public:
    static Result<LayerBench> prepare(const Policy& policy);

    LayerBench(LayerBench&&) noexcept = default;
    LayerBench& operator=(LayerBench&&) noexcept = default;

    // Builds, runs and tears down one sandbox at `level` (not FullProfile);
    // returns its wall time in milliseconds, from before the parent's
    // per-run set-up to after the last cleanup.
    Result<double> runOnce(BenchLevel level);

    // What held the cgroup level's limits: "cgroup2", "cgroup1", "rlimit",
    // or a combination ("cgroup1" for memory and pids alike is "cgroup1").
    const std::string& limitMechanism() const { return limit_mechanism_; }
    // "abi-N", or "unavailable: <reason>".
    const std::string& landlockState() const { return landlock_state_; }

  private:
    LayerBench() = default;
    Status runLevel(BenchLevel level);

    Policy policy_;
    ChildPlan plan_;
    IdLease id_lease_;  // as root: plan_'s host ids are leased (runtime/identity.h)
    std::vector<RlimitSetting> base_rlimits_;  // the plan's own, before any fallback
    ns::MountPlan mounts_without_proc_;
    UniqueFd dev_null_;
    std::string limit_mechanism_;
    std::string landlock_state_;
};

}  // namespace stockade
