#include "namespaces/user.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
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

std::string oneToOne(unsigned inside, unsigned host) {
    return std::to_string(inside) + " " + std::to_string(host) + " 1\n";
}

}  // namespace

Status writeIdMaps(pid_t pid, const IdMapping& m) {
    if (auto s = writeProcFile(pid, "setgroups", "deny\n"); !s) return s;
    if (auto s = writeProcFile(pid, "uid_map", oneToOne(m.inside_uid, m.host_uid)); !s) return s;
    return writeProcFile(pid, "gid_map", oneToOne(m.inside_gid, m.host_gid));
}

Result<UniqueFd> makeIdmappedTree(const std::string& path, uid_t disk_uid, gid_t disk_gid,
                                  uid_t host_uid, gid_t host_gid) {
    // A throwaway process holds a user namespace just long enough for its
    // maps to be written and a handle on it taken; the mount keeps a
    // reference to the namespace after the process is gone.
    int ready[2], hold[2];
    if (pipe2(ready, O_CLOEXEC) < 0) return Error::fromErrno("pipe2()");
    UniqueFd ready_r(ready[0]), ready_w(ready[1]);
    if (pipe2(hold, O_CLOEXEC) < 0) return Error::fromErrno("pipe2()");
    UniqueFd hold_r(hold[0]), hold_w(hold[1]);

    pid_t child = fork();
    if (child < 0) return Error::fromErrno("fork()");
    if (child == 0) {
        close(hold[1]);  // else our own copy of the write end keeps read() from seeing EOF
        char byte = unshare(CLONE_NEWUSER) == 0 ? 1 : 0;
        (void)!write(ready[1], &byte, 1);
        (void)!read(hold[0], &byte, 1);
        _exit(0);
    }
    ready_w.reset();
    hold_r.reset();
    auto reap = [&] {
        hold_w.reset();
        waitpid(child, nullptr, 0);
    };
    char byte = 0;
    if (read(ready_r.get(), &byte, 1) != 1 || byte != 1) {
        reap();
        return Error::message("unshare(CLONE_NEWUSER) failed in the idmap helper");
    }
    IdMapping mapping{disk_uid, host_uid, disk_gid, host_gid};
    if (auto s = writeIdMaps(child, mapping); !s) {
        reap();
        return s.error().withContext("idmap user namespace");
    }
    std::string ns_path = "/proc/" + std::to_string(child) + "/ns/user";
    UniqueFd userns(open(ns_path.c_str(), O_RDONLY | O_CLOEXEC));
    int open_errno = errno;
    reap();
    if (!userns) return Error::fromErrno("open(\"" + ns_path + "\")", open_errno);

    UniqueFd tree(sysOpenTree(AT_FDCWD, path.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC));
    if (!tree) return Error::fromErrno("open_tree(\"" + path + "\", OPEN_TREE_CLONE)");
    mount_attr attr{};
    attr.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    attr.userns_fd = static_cast<__u64>(userns.get());
    if (sysMountSetattr(tree.get(), "", AT_EMPTY_PATH, &attr) < 0)
        return Error::fromErrno("mount_setattr(\"" + path + "\", MOUNT_ATTR_IDMAP)");
    return tree;
}

}  // namespace stockade::ns
