#include "namespaces/user.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "namespaces/syscalls.h"

namespace stockade::ns {

namespace {

Status writeProcFile(pid_t pid, const char* name, const std::string& content) {
    std::string path = "/proc/" + std::to_string(pid) + "/" + name;
    UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) return Error::fromErrno("open(\"" + path + "\")");
    if (write(fd.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size()))
        return Error::fromErrno("write(\"" + path + "\", \"" +
                                content.substr(0, content.size() - 1) + "\")");
    return okStatus();
}

std::string mapLine(unsigned inside, unsigned host, uint32_t count) {
    if (count <= 1) return std::to_string(inside) + " " + std::to_string(host) + " 1\n";
    return "0 " + std::to_string(host - inside) + " " + std::to_string(count) + "\n";
}

}  // namespace

bool mapsInsideUid(const IdMapping& m, uid_t id) {
    return m.count > 1 ? id < m.count : id == m.inside_uid;
}

bool mapsInsideGid(const IdMapping& m, gid_t id) {
    return m.count > 1 ? id < m.count : id == m.inside_gid;
}

Status writeIdMaps(pid_t pid, const IdMapping& m) {
    if (auto s = writeProcFile(pid, "setgroups", "deny\n"); !s) return s;
    if (auto s = writeProcFile(pid, "uid_map", mapLine(m.inside_uid, m.host_uid, m.count)); !s)
        return s;
    return writeProcFile(pid, "gid_map", mapLine(m.inside_gid, m.host_gid, m.count));
}

IdmappedTree::~IdmappedTree() {
    if (!helper) return;
    siginfo_t info;
    syscall(SYS_waitid, P_PIDFD, helper.get(), &info, WEXITED, nullptr);
}

Result<IdmappedTree> makeIdmappedTree(const std::string& path, uid_t disk_uid, gid_t disk_gid,
                                      uid_t host_uid, gid_t host_gid) {
    UniqueFd dir(open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!dir) return Error::fromErrno("open(\"" + path + "\", O_PATH)");
    return makeIdmappedTree(dir.get(), path, disk_uid, disk_gid, host_uid, host_gid);
}

Result<IdmappedTree> makeIdmappedTree(int dir_fd, const std::string& path, uid_t disk_uid,
                                      gid_t disk_gid, uid_t host_uid, gid_t host_gid) {
    if (dir_fd < 0) return makeIdmappedTree(path, disk_uid, disk_gid, host_uid, host_gid);
    // A throwaway process, born in a new user namespace, holds it just long
    // enough for its maps to be written and a handle on it taken; the mount
    // keeps a reference to the namespace after the process is gone. A raw
    // clone: no atfork handlers, and nothing to wait for before the maps.
    int hold[2];
    if (pipe2(hold, O_CLOEXEC) < 0) return Error::fromErrno("pipe2()");
    UniqueFd hold_r(hold[0]), hold_w(hold[1]);
    int pidfd = -1;
    clone_args args{};
    args.flags = CLONE_NEWUSER | CLONE_PIDFD;
    args.pidfd = reinterpret_cast<uintptr_t>(&pidfd);
    args.exit_signal = SIGCHLD;
    long child = syscall(SYS_clone3, &args, sizeof(args));
    if (child < 0) return Error::fromErrno("clone3(CLONE_NEWUSER) for the idmap");
    if (child == 0) {
        char byte;
        close(hold[1]);  // else our own copy of the write end keeps read() from seeing EOF
        (void)!read(hold[0], &byte, 1);
        _exit(0);
    }
    // The helper is reaped when the tree is dropped, long after it exited:
    // waiting for its exit here would cost a context switch or two.
    IdmappedTree out;
    out.helper.reset(pidfd);
    hold_r.reset();
    auto reap = [&] { hold_w.reset(); };
    IdMapping mapping{disk_uid, host_uid, disk_gid, host_gid};
    if (auto s = writeIdMaps(static_cast<pid_t>(child), mapping); !s) {
        reap();
        return s.error().withContext("idmap user namespace");
    }
    std::string ns_path = "/proc/" + std::to_string(child) + "/ns/user";
    UniqueFd userns(open(ns_path.c_str(), O_RDONLY | O_CLOEXEC));
    int open_errno = errno;
    reap();
    if (!userns) return Error::fromErrno("open(\"" + ns_path + "\")", open_errno);

    out.tree.reset(sysOpenTree(dir_fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH));
    if (!out.tree) return Error::fromErrno("open_tree(\"" + path + "\", OPEN_TREE_CLONE)");
    mount_attr attr{};
    attr.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    attr.userns_fd = static_cast<__u64>(userns.get());
    if (sysMountSetattr(out.tree.get(), "", AT_EMPTY_PATH, &attr) < 0)
        return Error::fromErrno("mount_setattr(\"" + path + "\", MOUNT_ATTR_IDMAP)");
    return out;
}

}  // namespace stockade::ns
