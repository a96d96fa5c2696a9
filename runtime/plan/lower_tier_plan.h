// The lower tier (SPEC §10, issue 18): a sandbox built without any
// namespace, for hosts where no user namespace can be had (a container's
// seccomp profile, Ubuntu's AppArmor rule, max_user_namespaces=0). Run only
// when the policy's min_tier allows it, and recorded as such.
//
// What holds it, each from the kernel: Landlock (a filesystem view mirroring
// the profile's, TCP bind and connect denied, abstract unix sockets and
// signals scoped from ABI 6, and ptrace of anything outside the domain), the
// default-deny seccomp filter narrowed to AF_UNIX sockets for profiles
// without network, no_new_privs, capabilities dropped, rlimits, cgroup
// leaves where a writable cgroup exists, a new session, the environment
// allowlist, and init as a child subreaper that kills every descendant at
// the end. What it loses is listed, one entry per guarantee, in the
// result's `degraded` (lowerTierDegraded).
#pragma once

#include <string>
#include <vector>

#include "base/error.h"
#include "runtime/child/child_plan.h"
#include "runtime/plan/identity.h"
#include "runtime/policy/policy.h"

namespace stockade {

// A private directory for the run, made by the supervisor, given to the
// command as TMPDIR (and HOME), writable only there, removed with all its
// contents at the end.
class LowerTierTmp {
  public:
    LowerTierTmp() = default;
    LowerTierTmp(LowerTierTmp&& other) noexcept : path_(std::move(other.path_)) {
        other.path_.clear();
    }
    LowerTierTmp& operator=(LowerTierTmp&&) = delete;
    ~LowerTierTmp();
    LowerTierTmp(const LowerTierTmp&) = delete;
    LowerTierTmp& operator=(const LowerTierTmp&) = delete;

    // Under $TMPDIR's parent-free default, /tmp: mode 0700, owned by `uid`.
    static Result<LowerTierTmp> create(uid_t uid, gid_t gid);
    const std::string& path() const { return path_; }

  private:
    std::string path_;
};

// The ids the lower tier's command runs as, on the host itself: rootless,
// the caller's own (there are no others); as root, the worktree's owner,
// so that it can write there without an idmapped mount, or the leased id
// when there is no worktree. A root-owned worktree is refused: only a
// mount namespace could make it writable to anyone but root.
Result<ns::IdMapping> lowerTierIds(const Policy& policy, const Identity& identity);

// Everything the child needs for the lower tier: no mounts, the worktree at
// its host path (the command's cwd for a workdir of /repo), TMPDIR and HOME
// at `tmp`, the Landlock ruleset built from host paths. Refused, naming
// why, where the tier cannot honour the policy: no usable Landlock, a
// --rootfs, an extra mount whose target is not its source, a worktree name
// the profile hides (Landlock only grants, so nothing beneath the writable
// worktree can be made unreadable), a profile with network.
// *read_only_names: how many names the profile keeps read-only were found
// (Landlock leaves them writable).
Result<ChildPlan> buildLowerTierPlan(const Policy& policy, const ns::IdMapping& ids,
                                     const std::string& tmp, size_t* read_only_names);

// One entry per guarantee the lower tier loses or holds only in a weaker
// form, each saying what holds instead (the result's `degraded`).
std::vector<std::string> lowerTierDegraded(const Policy& policy, const ChildPlan& plan,
                                           size_t read_only_names);

}  // namespace stockade
