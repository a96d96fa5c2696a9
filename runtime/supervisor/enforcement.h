// What holds each guarantee in a run, as the record reports it (`enforced`,
// `degraded`), judged from the policy, the plan and the cgroups chosen; and
// whether the guarantees the policy requires hold at full strength. Pure
// judgements: the plan is finished before (addLimitFallbacks).
#pragma once

#include <cstddef>
#include <string>

#include "runtime/cgroups/cgroup_limits.h"
#include "runtime/child/child_plan.h"
#include "runtime/plan/child_plan_builder.h"
#include "runtime/policy/policy.h"
#include "runtime/supervisor/sandbox.h"

namespace stockade {

// The full tier: every namespace, no capabilities, no_new_privs, the filter,
// Landlock, and each limit with the mechanism that holds it; a limit held
// only by an rlimit is degraded.
SandboxOutcome enforcementFor(const Policy& policy, const SandboxCgroups& cgroups,
                              const ChildPlan& plan, const PlanFindings& findings);

// The lower tier's: no namespaces, and in `degraded` each guarantee lost.
SandboxOutcome lowerTierEnforcement(const Policy& policy, const SandboxCgroups& cgroups,
                                    const ChildPlan& plan, size_t read_only_names);

// The required guarantees that nothing holds at full strength, comma
// separated; empty when all hold.
std::string missingRequirements(const Policy& policy, const SandboxOutcome& e);

}  // namespace stockade
