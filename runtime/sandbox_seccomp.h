// The bridge from a Policy's seccomp setting to the compiled program the
// child installs: "default" (stockade's own default-deny policy), "none", or
// a file in the OCI runtime-spec / Docker seccomp format.
#pragma once

#include "base/error.h"
#include "runtime/child_plan.h"
#include "runtime/policy.h"
#include "seccomp/policy.h"

namespace stockade {

Status compileSeccompInto(const Policy& policy, ChildPlan& plan);

// The policy behind the filter, for answering and naming refusals. Built
// only when a refusal actually arrives, so runs without one do not pay.
seccomp::SeccompPolicy seccompPolicyFor(const Policy& policy);

}  // namespace stockade
