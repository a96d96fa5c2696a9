// The supervisor's own process, made safe to run beside a hostile sandbox
// (SPEC §3 G2: nothing of the host reaches the sandbox by way of stockade).
//
// stockade holds the caller's environment (a GITHUB_TOKEN, say) and reads
// what the sandbox wrote. Were it to crash, a core dump would land in its
// working directory, often the worktree, where the next sandbox reads it; and
// while it runs, a process of the same uid could read its memory through
// /proc/PID/mem. So, once every path the caller gave has been resolved:
//   - RLIMIT_CORE 0, hard: no core file anywhere;
//   - not dumpable (PR_SET_DUMPABLE 0): no core through a pipe handler
//     either, and /proc/PID/{mem,environ,fd} become root's;
//   - chdir("/"): nothing is written or read relative to the caller's
//     directory from then on.
#pragma once

#include "base/error.h"
#include "runtime/policy/policy.h"

namespace stockade {

// Makes the profile's relative paths absolute first (a seccomp file named
// relative to the caller's directory), then hardens this process.
Status hardenSupervisor(Policy& policy);

// The kernel copies dumpability into a clone, and a rootless supervisor can
// write a child's id maps only while the child is dumpable (/proc/PID/uid_map
// of a non-dumpable process is root's). Held just across the clone: the
// child starts dumpable (its init makes itself non-dumpable once set up), and
// this process is non-dumpable again as soon as the clone returns.
class DumpableAcrossClone {
  public:
    DumpableAcrossClone();
    ~DumpableAcrossClone();
    DumpableAcrossClone(const DumpableAcrossClone&) = delete;
    DumpableAcrossClone& operator=(const DumpableAcrossClone&) = delete;
    // Non-dumpable again, now (the destructor does it too).
    void restore();

  private:
    bool was_non_dumpable_ = false;
};

}  // namespace stockade
