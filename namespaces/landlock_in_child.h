// Landlock, child side (SPEC G10). Both functions run after clone:
// async-signal-safe, no allocation, no exceptions; each returns 0 or an
// errno. With an inactive plan (no usable Landlock, or Landlock off) both do
// nothing and return 0.
#pragma once

#include <cstddef>

#include "namespaces/landlock.h"

namespace stockade::ns {

// Adds the rules for paths that exist only inside the sandbox. Runs after
// pivot_root, when "/tmp" names the sandbox's tmpfs and not the host's (the
// staging directory the new root was assembled on), and before anything
// closes the ruleset fd. On failure *failed_rule, when given, is the index in
// plan.sandbox_rules.
int addSandboxRulesInChild(const LandlockPlan& plan, size_t* failed_rule = nullptr) noexcept;

// Enforces the ruleset on the calling thread and everything it later creates
// (landlock_restrict_self(2)). Requires no_new_privs, or CAP_SYS_ADMIN in the
// current user namespace, which the command no longer has: call it after
// setting no_new_privs and before installing seccomp.
int restrictSelfInChild(const LandlockPlan& plan) noexcept;

}  // namespace stockade::ns
