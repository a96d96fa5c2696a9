// Why no user namespace could be had, and the fix, in words: one source for
// `stockade run`'s refusal (runtime/supervisor/sandbox.cpp) and `stockade check`'s tier
// line (runtime/host_tier_verdict.cpp), so the two never disagree.
#pragma once

#include <string>

namespace stockade {

// The likely cause of clone3(CLONE_NEWUSER) failing with `err` on this host,
// then the host's fix for it (read from /proc/sys and the container markers
// only here, on the failure path).
std::string userNamespaceRefusalReason(int err);
std::string userNamespaceRefusalFix(int err);

// Whether a child setup failure at a mount step with `err` is the symptom of
// Ubuntu's AppArmor rule: a user namespace granted with no capabilities in
// it (kernel.apparmor_restrict_unprivileged_userns = 1, not root).
bool looksLikeUnprivilegedUserNamespace(int err);

// The sentence every refusal ends with: how a profile may accept the lower
// tier instead.
inline constexpr const char* kLowerTierHint =
    "or accept the lower tier, a sandbox without namespaces (Landlock, seccomp, rlimits; "
    "each guarantee it loses is recorded): --min-tier landlock, or \"min_tier\": \"landlock\" "
    "in a profile";

}  // namespace stockade
