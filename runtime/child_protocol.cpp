#include "runtime/child_protocol.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

namespace stockade {

const char* describeStage(ChildStage stage) {
    switch (stage) {
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
        case ChildStage::PrivateMounts:
            return "make mounts private";
        case ChildStage::OpenSources:
            return "open mount source";
        case ChildStage::BuildRoot:
            return "build the sandbox's root";
        case ChildStage::SealRoot:
            return "make the root read-only";
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
        case ChildStage::NewSession:
            return "start a new session";
        case ChildStage::Stdio:
            return "set up stdin, stdout and stderr";
        case ChildStage::Workdir:
            return "change to the working directory";
        case ChildStage::Rlimits:
            return "set resource limits";
        case ChildStage::Securebits:
            return "lock securebits";
        case ChildStage::DropCapabilities:
            return "drop capabilities";
        case ChildStage::NoNewPrivs:
            return "set no_new_privs";
        case ChildStage::Seccomp:
            return "install the seccomp filter";
        case ChildStage::Exec:
            return "execute the command";
    }
    return "unknown step";
}

int sendPlacement(int sync_fd, const int* tasks_fds, int count) {
    if (count < 0 || count > kMaxPlacementFds) return EINVAL;
    char byte = 1;
    iovec iov{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPlacementFds)] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (count > 0) {
        msg.msg_control = control;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * static_cast<size_t>(count));
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * static_cast<size_t>(count));
        memcpy(CMSG_DATA(c), tasks_fds, sizeof(int) * static_cast<size_t>(count));
    }
    while (sendmsg(sync_fd, &msg, MSG_NOSIGNAL) < 0)
        if (errno != EINTR) return errno;
    return 0;
}

int joinCgroupsInChild(int sync_fd) noexcept {
    char byte = 0;
    iovec iov{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPlacementFds)] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    ssize_t n;
    while ((n = recvmsg(sync_fd, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
    }
    if (n != 1) return -1;
    int fds[kMaxPlacementFds];
    int count = 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        size_t bytes = c->cmsg_len - CMSG_LEN(0);
        for (size_t i = 0; i < bytes / sizeof(int) && count < kMaxPlacementFds; ++i)
            memcpy(&fds[count++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
    }
    int err = (msg.msg_flags & MSG_CTRUNC) ? EMSGSIZE : 0;
    for (int i = 0; i < count; ++i) {
        if (err == 0 && write(fds[i], "0", 1) != 1) err = errno;
        close(fds[i]);
    }
    return err;
}

}  // namespace stockade
