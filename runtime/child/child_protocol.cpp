#include "runtime/child/child_protocol.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/fd_passing.h"

namespace stockade {

const char* describeStage(ChildStage stage) {
    switch (stage) {
        case ChildStage::StartNetworkHelper:
            return "start the network namespace's helper";
        case ChildStage::CloseOnExec:
            return "mark every fd above 2 close-on-exec";
        case ChildStage::WaitForGo:
            return "wait for the supervisor";
        case ChildStage::SetIds:
            return "switch to the sandbox's uid and gid";
        case ChildStage::JoinCgroups:
            return "join the sandbox's cgroups";
        case ChildStage::CgroupNamespace:
            return "create the cgroup namespace";
        case ChildStage::ParentDeath:
            return "tie the sandbox's life to stockade's";
        case ChildStage::UserNamespaceLimits:
            return "bound the user namespace's inotify counts (/proc/sys/user)";
        case ChildStage::PrivateMounts:
            return "make mounts private";
        case ChildStage::OpenSources:
            return "open mount source";
        case ChildStage::BuildRoot:
            return "build the sandbox's root";
        case ChildStage::SealRoot:
            return "make the root read-only";
        case ChildStage::CreateContainerHooks:
            return "run the createContainer hooks";
        case ChildStage::PivotRoot:
            return "pivot_root into the sandbox's root";
        case ChildStage::LandlockRules:
            return "add the sandbox's paths to the Landlock ruleset";
        case ChildStage::LandlockRestrict:
            return "enforce the Landlock ruleset";
        case ChildStage::Hostname:
            return "set the hostname";
        case ChildStage::Loopback:
            return "bring up lo";
        case ChildStage::Dumpable:
            return "make init non-dumpable";
        case ChildStage::WipeMemory:
            return "clear the caller's environment from init";
        case ChildStage::ForkCommand:
            return "fork the command";
        case ChildStage::CloseFds:
            return "close the fds the sandbox inherited";
        case ChildStage::InitCloseFds:
            return "close init's fds";
        case ChildStage::InitDropPrivileges:
            return "drop init's privileges";
        case ChildStage::InitNoNewPrivs:
            return "set no_new_privs on init";
        case ChildStage::CommandProc:
            return "mount the command's own /proc";
        case ChildStage::NewSession:
            return "start a new session";
        case ChildStage::Stdio:
            return "set up stdin, stdout and stderr";
        case ChildStage::Workdir:
            return "change to the working directory";
        case ChildStage::Rlimits:
            return "set resource limits";
        case ChildStage::Personality:
            return "set the execution domain (personality)";
        case ChildStage::Securebits:
            return "lock securebits";
        case ChildStage::DropCapabilities:
            return "drop capabilities";
        case ChildStage::NoNewPrivs:
            return "set no_new_privs";
        case ChildStage::FindExecutable:
            return "find the executable";
        case ChildStage::AwaitStart:
            return "wait for start";
        case ChildStage::Seccomp:
            return "install the seccomp filter";
        case ChildStage::StartContainerHooks:
            return "run the startContainer hooks";
        case ChildStage::Exec:
            return "execute the command";
    }
    return "unknown step";
}

ssize_t receiveChildMessage(int sync_fd, ChildMessage& msg) {
    ssize_t n = recv(sync_fd, &msg, sizeof(msg), MSG_DONTWAIT);
    // The kernel reports the reset once (sock_error clears it): one retry.
    if (n < 0 && errno == ECONNRESET) n = recv(sync_fd, &msg, sizeof(msg), MSG_DONTWAIT);
    return n;
}

int sendPlacement(int sync_fd, const int* tasks_fds, int count) {
    if (count < 0 || count > kMaxPlacementFds) return EINVAL;
    char byte = 1;
    return sendWithFds(sync_fd, &byte, 1, tasks_fds, count);
}

int joinCgroupsInChild(int sync_fd) noexcept {
    char byte = 0;
    int fds[kMaxPassedFds];
    int count = 0;
    bool truncated = false;
    if (receiveWithFds(sync_fd, &byte, 1, fds, &count, 0, &truncated) != 1) {
        for (int i = 0; i < count; ++i) close(fds[i]);
        return -1;
    }
    int err = truncated || count > kMaxPlacementFds ? EMSGSIZE : 0;
    for (int i = 0; i < count; ++i) {
        if (err == 0 && write(fds[i], "0", 1) != 1) err = errno;
        close(fds[i]);
    }
    return err;
}

}  // namespace stockade
