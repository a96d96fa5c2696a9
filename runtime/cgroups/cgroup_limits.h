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
#include "base/unique_fd.h"
#include "runtime/cgroups/cgroup_fs.h"
#include "runtime/cgroups/cgroup_v2.h"

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
    // The v1 leaves are made after the clone, while the child builds its
    // root: create() only decides on them. makeV1Leaves makes them, writes
    // their limits, and returns one `tasks` fd per leaf for the child, which
    // writes "0" to each (sendPlacement, joinCgroupsInChild): a thread that
    // moves itself through `tasks` skips the global threadgroup lock whose
    // RCU grace period made moving a process cost 5-20 ms a run
    // (docs/performance.md), and the permission check uses the opener's
    // credentials, so the sandbox's uid needs no rights of its own there.
    Result<std::vector<UniqueFd>> makeV1Leaves();
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
    // The v1 parents the leaves go under.
    std::string v1_memory_home_;
    std::string v1_pids_home_;
    // Decided by create(), made by makeV1Leaves().
    std::string leaf_name_;
    std::optional<uint64_t> v1_memory_bytes_, v1_pids_;
};

// Removes leaves (and v2 relocation dirs) left by stockade processes that no
// longer exist.
void removeStaleCgroups(const CgroupLayout& layout = CgroupLayout::ofThisProcess());

// The name for this process's next sandbox leaf: "<pid>-<n>".
std::string nextLeafName();

}  // namespace stockade
