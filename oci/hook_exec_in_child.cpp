#include "oci/hook_exec_in_child.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include "runtime/child/command_in_child.h"

namespace stockade::oci {

void execHookInChild(const char* path, char* const* argv, char* const* envp, HookChildFds fds,
                     const std::pair<int, int>* namespaces, size_t namespace_count) {
    resetSignalsInChild();
    // A group of its own: a hook past its timeout is killed with whatever
    // it started (oci/hooks.cpp), not only itself.
    int failed = setpgid(0, 0) < 0 ? errno : 0;
    for (size_t i = 0; i < namespace_count; ++i)
        if (setns(namespaces[i].first, namespaces[i].second) < 0) failed = errno;
    // Above 2 first: a runtime started with a standard fd closed has its
    // pipes there, and one dup2 would overwrite another's source.
    int from[4] = {fds.in, fds.out, fds.err, fds.report};
    for (int& fd : from)
        if (!failed && fd < 3 && (fd = fcntl(fd, F_DUPFD_CLOEXEC, 3)) < 0) failed = errno;
    for (int target = 0; target < 3 && !failed; ++target)
        if (dup2(from[target], target) < 0) failed = errno;
    if (!failed) {
        execve(path, argv, envp);
        failed = errno;
    }
    (void)!write(from[3], &failed, sizeof(failed));
    _exit(127);
}

}  // namespace stockade::oci
