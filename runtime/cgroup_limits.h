// Memory and pids bounds through cgroups (SPEC §4): a v2 leaf in a subtree
// stockade may write (the hierarchy's root `stockade/` when root, its own
// delegated cgroup when rootless under systemd), else the v1 `memory` and
// `pids` hierarchies, each controller on its own. What cannot be placed in a
// cgroup is left to rlimits by the caller.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "runtime/cgroup_fs.h"
#include "runtime/cgroup_v2.h"

namespace stockade {

enum class CgroupMechanism { None, V1, V2 };
const char* mechanismName(CgroupMechanism mechanism);  // "cgroup1", "cgroup2", or nullptr

// Where this process may make cgroups: read once from /proc/self, or given
// by a test that points it at a cgroup (or a fake tree) of its own.
struct CgroupLayout {
    std::optional<CgroupV2Site> v2;  // none: no cgroup2 mounted, or not ours to write
    std::string v1_memory;           // our cgroup in the v1 memory hierarchy, or ""
    std::string v1_pids;             // our cgroup in the v1 pids hierarchy, or ""

    // As root the v2 site is the hierarchy's root (its `stockade/` subtree);
    // rootless it is the caller's own cgroup, usable where it is delegated.
    static CgroupLayout ofThisProcess();
};

// The cgroup leaves of one sandbox. Removed when this object goes; a leaf
// that a killed stockade left behind is removed by the next run
// (removeStaleCgroups).
class SandboxCgroups {
  public:
    // Never fails for want of cgroups: a controller that cannot be used is
    // reported as None. Fails only when a cgroup was found but setting it up
    // went wrong (the caller refuses rather than running unbounded).
    static Result<SandboxCgroups> create(
        const CgroupRequest& request, const CgroupLayout& layout = CgroupLayout::ofThisProcess());

    SandboxCgroups() = default;
    SandboxCgroups(SandboxCgroups&&) noexcept = default;
    SandboxCgroups& operator=(SandboxCgroups&&) noexcept = default;
    ~SandboxCgroups();

    CgroupMechanism memory() const { return memory_; }
    CgroupMechanism pids() const { return pids_; }
    // The v2 leaf, for clone3's CLONE_INTO_CGROUP, or -1.
    int cloneIntoFd() const { return v2_leaf_ ? v2_leaf_->fd() : -1; }
    // Right before clone3: the calling thread steps into the v1 leaves, so
    // the clone is born in them, as CLONE_INTO_CGROUP does on v2. A thread
    // moving itself through `tasks` skips the global threadgroup lock whose
    // RCU grace period made moving the child afterwards cost 5-20 ms a run
    // (docs/performance.md). Only the clone itself happens in between.
    Status enterForClone();
    // Right after clone3: the caller steps back out of the v1 leaves; the
    // leaves `pid` was not born in (no enterForClone) it is moved into.
    Status attach(pid_t pid);
    // Processes in the sandbox right now, from pids.current (0 when unknown).
    uint64_t processCount() const;
    CgroupEvents events() const;

  private:
    CgroupMechanism memory_ = CgroupMechanism::None;
    CgroupMechanism pids_ = CgroupMechanism::None;
    // Declared before the leaf, so the leaf goes first.
    std::optional<CgroupV2Subtree> v2_subtree_;
    std::optional<CgroupV2Leaf> v2_leaf_;
    std::string v1_memory_leaf_;
    std::string v1_pids_leaf_;
    // Where the caller returns to, and the leaves it stepped into.
    std::string v1_memory_home_;
    std::string v1_pids_home_;
    std::vector<std::string> entered_;
    uint64_t pids_limit_ = 0;
    Status leave();
};

// Removes leaves (and v2 relocation dirs) left by stockade processes that no
// longer exist.
void removeStaleCgroups(const CgroupLayout& layout = CgroupLayout::ofThisProcess());

// The name for this process's next sandbox leaf: "<pid>-<n>".
std::string nextLeafName();

}  // namespace stockade
