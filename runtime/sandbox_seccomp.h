// The bridge from a Policy's seccomp setting to the compiled program the
// child installs: "default" (stockade's own default-deny policy), "none", or
// a file in the OCI runtime-spec / Docker seccomp format.
#pragma once

#include "base/error.h"
#include "runtime/child_plan.h"
#include "runtime/policy.h"

namespace stockade {

Status compileSeccompInto(const Policy& policy, ChildPlan& plan);

}  // namespace stockade
