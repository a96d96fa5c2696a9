// Policy -> ChildPlan: every decision about what the child will do, and every
// allocation it needs, made in the parent before the clone.
#pragma once

#include "base/error.h"
#include "base/unique_fd.h"
#include "runtime/child_plan.h"
#include "runtime/host_path.h"
#include "runtime/identity.h"
#include "runtime/policy.h"

namespace stockade {

// Builds the plan. `idmapped_worktree` is the detached mount to attach at
// /repo, or an invalid fd to bind the worktree directly.
Result<ChildPlan> buildChildPlan(const Policy& policy, const Identity& identity,
                                 const UniqueFd& idmapped_worktree);

// Binds the held host path `held` at op.target (op's other fields as the
// bind wants them): as root a clone the parent makes and the child attaches,
// rootless a path the child opens and verifies against the held inode.
// The command's own rlimits, in either tier: no core files, the per-user
// kernel quotas it may take (pending signals, message queues), and the
// policy's open files, file size and CPU time.
void addCommandRlimits(const Policy& policy, ChildPlan& plan);

Status addHeldBind(ChildPlan& plan, const HeldPath& held, ns::MountOp op);

}  // namespace stockade
