// Policy -> ChildPlan: every decision about what the child will do, and every
// allocation it needs, made in the parent before the clone.
#pragma once

#include "base/error.h"
#include "base/host_path.h"
#include "base/unique_fd.h"
#include "runtime/cgroups/cgroup_limits.h"
#include "runtime/child/child_plan.h"
#include "runtime/plan/git_link.h"
#include "runtime/plan/identity.h"
#include "runtime/plan/worktree_masks.h"
#include "runtime/policy/policy.h"

namespace stockade {

// What building the plan found in the worktree, for the record. Kept beside
// the plan, not in it: the child never reads it.
struct PlanFindings {
    std::optional<GitLinkReport> git;         // what became of a `.git` file
    std::optional<WorktreeMaskReport> masks;  // names hidden or kept read-only
};

// Builds the plan. `idmapped_worktree` is the detached mount to attach at
// /repo, or an invalid fd to bind the worktree directly.
Result<ChildPlan> buildChildPlan(const Policy& policy, const Identity& identity,
                                 const UniqueFd& idmapped_worktree, PlanFindings& findings);

// The plan's last step, once the run's cgroups are chosen: each limit that no
// cgroup holds here becomes an rlimit on the command (weaker: per process, or
// per user for RLIMIT_NPROC; the record lists it as degraded). `run` and
// `bench` both end their plans here.
void addLimitFallbacks(const Limits& limits, const SandboxCgroups& cgroups, ChildPlan& plan);

// Binds the held host path `held` at op.target (op's other fields as the
// bind wants them): as root a clone the parent makes and the child attaches,
// rootless a path the child opens and verifies against the held inode.
// The command's own rlimits, in either tier: no core files, the per-user
// kernel quotas it may take (pending signals, message queues), and the
// policy's open files, file size and CPU time.
void addCommandRlimits(const Policy& policy, ChildPlan& plan);

Status addHeldBind(ChildPlan& plan, const HeldPath& held, ns::MountOp op);

}  // namespace stockade
