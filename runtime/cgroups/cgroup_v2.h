// cgroup v2 for sandboxes: a `stockade` subtree under a cgroup stockade may
// write, one leaf per sandbox that the sandbox is cloned straight into
// (CLONE_INTO_CGROUP), its limits, its events, and teardown with cgroup.kill.
//
// Everything takes the cgroup directories it works on, so the same code runs
// against the host's hierarchy, a test's own cgroup in it, or a fake tree of
// plain files (tests/unit/cgroup_v2_test.cpp).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "runtime/cgroups/cgroup_fs.h"

namespace stockade {

// Where stockade may make its v2 subtree.
struct CgroupV2Site {
    std::string base;  // absolute directory of a cgroup stockade may write
    // The caller itself is a member of `base` (its own delegated cgroup, or a
    // cgroup namespace's root): cgroup v2 lets no cgroup but the real root
    // hold processes and enable controllers for its children at once (the
    // "no internal processes" rule, cgroups(7)), so the caller must leave
    // `base` before it can enable any.
    bool holds_caller = false;
};

// `base/stockade`, with the controllers enabled that its leaves need. Where
// the caller had to leave `base` for that (into base/stockade-supervisor-PID,
// as crun and podman do), release() puts base back as it was found and the
// caller back into it, unless another stockade still needs it so.
//
// A caller that relocated and is then killed cannot put base back, and no
// later stockade can start in base to do it (no process may join a cgroup
// with controllers enabled). So a guardian, forked into the relocation dir,
// waits on a pipe for as long as the caller lives: dismissed by release(),
// it exits; woken by the caller's death (EOF, no byte), it kills and removes
// the dead caller's leaves, puts base back and leaves itself. A relocation
// dir whose guardian was killed too is removed by the next run in the same
// base, where one can start (removeStaleV2).
class CgroupV2Subtree {
  public:
    // Fails, having changed nothing, when the controllers cannot be enabled:
    // base holds processes other than the caller, or a write is refused.
    static Result<CgroupV2Subtree> prepare(const CgroupV2Site& site,
                                           const std::vector<std::string>& controllers);

    CgroupV2Subtree() = default;
    CgroupV2Subtree(CgroupV2Subtree&& other) noexcept;
    CgroupV2Subtree& operator=(CgroupV2Subtree&& other) noexcept;
    ~CgroupV2Subtree() { release(); }

    // Call once every leaf below it is gone. Idempotent.
    void release();

    const std::string& dir() const { return dir_; }
    // Where the caller was moved to, or "" when it did not have to move.
    const std::string& relocation() const { return relocation_; }

  private:
    void dismissGuardian();

    std::string base_;
    std::string dir_;
    std::string relocation_;
    UniqueFd guardian_;  // the pipe's write end; closing it without a byte wakes the guardian
    pid_t guardian_pid_ = -1;
};

// One sandbox's leaf, removed (after killing whatever is left in it) when
// this object goes.
class CgroupV2Leaf {
  public:
    static Result<CgroupV2Leaf> create(const std::string& subtree_dir, const std::string& name);

    CgroupV2Leaf() = default;
    CgroupV2Leaf(CgroupV2Leaf&& other) noexcept;
    CgroupV2Leaf& operator=(CgroupV2Leaf&& other) noexcept;
    ~CgroupV2Leaf() { (void)remove(); }

    const std::string& path() const { return path_; }
    // For clone3's CLONE_INTO_CGROUP: the child starts inside, so no process
    // of the sandbox ever runs outside its limits, and no migration is paid.
    int fd() const { return fd_.get(); }

    // cgroup.kill, wait until the kernel reports the leaf unpopulated, rmdir.
    Status remove();

  private:
    std::string path_;
    UniqueFd fd_;
};

// The name of the relocation dir of the stockade with pid `pid`.
std::string supervisorDirName(pid_t pid);

// Kills every process in `dir` and waits until cgroup.events says
// "populated 0". cgroup.kill (Linux 5.14) reaches processes that fork while
// being killed; older kernels get SIGKILL per pid in cgroup.procs, repeated.
Status killCgroupV2(const std::string& dir,
                    std::chrono::milliseconds timeout = std::chrono::milliseconds(2000));
// Whether cgroup.events says "populated 1".
bool cgroupV2Populated(const std::string& dir);

// memory.max (and memory.swap.max 0 where swap is accounted, so swap cannot
// stretch the bound), pids.max: only those the request names.
Status writeV2Limits(const std::string& leaf, const CgroupRequest& request);
// The leaf's own accounting: memory.events oom_kill, pids.events max,
// memory.peak (Linux 5.19; 0 when absent).
CgroupEvents readV2Events(const std::string& leaf, bool memory, bool pids);

// Leaves of stockades that are gone (base/stockade/PID-N), killed and
// removed; their relocation dirs too, and base restored when nothing of
// stockade's is left in it.
void removeStaleV2(const CgroupV2Site& site);

}  // namespace stockade
