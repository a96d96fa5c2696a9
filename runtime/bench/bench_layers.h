// The layers of `stockade bench` (issue 7): one sandboxed /bin/true built up
// one isolation layer at a time, each level adding to the one before, so the
// difference between two neighbours is what one layer costs. Every level
// below the last is built here, in-process, from the real default profile's
// ChildPlan, started by the sandbox's own launch (runtime/supervisor/sandbox_launch.h)
// and set up by the sandbox's own setup table in its bench mode, which runs
// the table's steps of the levels up to the one measured
// (runtime/child/child_setup.h: BenchLevel, SetupStepInfo::level); the last level
// is the real `stockade run`, spawned by bench_command.cpp.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "namespaces/mount_plan.h"
#include "runtime/cgroups/cgroup_limits.h"
#include "runtime/child/child_plan.h"
#include "runtime/child/child_setup.h"
#include "runtime/plan/identity.h"
#include "runtime/policy/policy.h"

namespace stockade {

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
    IdLease id_lease_;  // as root: plan_'s host ids are leased (runtime/plan/identity.h)
    std::vector<RlimitSetting> base_rlimits_;  // the plan's own, before any fallback
    ns::MountPlan mounts_without_proc_;
    UniqueFd dev_null_;
    std::string limit_mechanism_;
    std::string landlock_state_;
};

}  // namespace stockade
