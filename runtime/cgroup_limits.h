// Memory and pids bounds through cgroups (SPEC §4): a v2 leaf in a subtree
// stockade may write (the root's `stockade/` when root, its own delegated
// cgroup when rootless under systemd), else the v1 `memory` and `pids`
// hierarchies, each controller on its own. What cannot be placed in a cgroup
// is left to rlimits by the caller.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"

namespace stockade {

enum class CgroupMechanism { None, V1, V2 };
const char* mechanismName(CgroupMechanism mechanism);  // "cgroup1", "cgroup2", or nullptr

struct CgroupRequest {
    std::optional<uint64_t> memory_bytes;
    std::optional<uint64_t> pids;
};

struct CgroupEvents {
    bool oom_killed = false;      // from memory.events / memory.oom_control, not guessed
    bool pids_limit_hit = false;  // from pids.events
    uint64_t peak_memory = 0;     // memory.peak / memory.max_usage_in_bytes
};

// The cgroup leaves of one sandbox. Removed when this object goes; a leaf
// that a killed stockade left behind is removed by the next run
// (removeStaleCgroups).
class SandboxCgroups {
  public:
    // Never fails for want of cgroups: a controller that cannot be used is
    // reported as None. Fails only when a cgroup was found but setting it up
    // went wrong (the caller refuses rather than running unbounded).
    static Result<SandboxCgroups> create(const CgroupRequest& request);

    SandboxCgroups() = default;
    SandboxCgroups(SandboxCgroups&&) noexcept = default;
    SandboxCgroups& operator=(SandboxCgroups&&) noexcept = default;
    ~SandboxCgroups();

    CgroupMechanism memory() const { return memory_; }
    CgroupMechanism pids() const { return pids_; }
    // The v2 leaf, for clone3's CLONE_INTO_CGROUP, or -1.
    int cloneIntoFd() const { return v2_leaf_fd_.get(); }
    // Moves `pid` into the v1 leaves (v2 needs nothing: the clone starts there).
    Status attach(pid_t pid) const;
    // Processes in the sandbox right now, from pids.current (0 when unknown).
    uint64_t processCount() const;
    CgroupEvents events() const;

  private:
    CgroupMechanism memory_ = CgroupMechanism::None;
    CgroupMechanism pids_ = CgroupMechanism::None;
    std::string v2_leaf_;
    UniqueFd v2_leaf_fd_;
    std::string v1_memory_leaf_;
    std::string v1_pids_leaf_;
};

// Removes leaves left by stockade processes that no longer exist.
void removeStaleCgroups();

// Parsing helpers, exposed for tests.
// The cgroup2 mount point in /proc/self/mountinfo text, or "".
std::string findCgroup2Mount(const std::string& mountinfo);
// The path of `controller` ("" for the v2 line) in /proc/self/cgroup text.
std::optional<std::string> cgroupPathOf(const std::string& proc_cgroup,
                                        const std::string& controller);
// The value of `key` in a flat-keyed file ("oom_kill 3\n..."), or 0.
uint64_t keyedValue(const std::string& text, const std::string& key);

}  // namespace stockade
