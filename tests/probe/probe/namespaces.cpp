// The mounts and namespaces the probe sees, and whether it may change what it
// shares with others: mount, unshare, make a device, chroot, look up System V
// IPC, set the host name.
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <functional>
#include <map>

#include "actions.h"
#include "common.h"

namespace probe {

namespace {

// Runs `attempt` in a directory of the probe's own, made for it under /tmp and
// removed after, and reports its answer (0 or -errno); `attempt` undoes what
// it did. `stage=mkdtemp` if there was no directory.
int reportInScratchDir(const std::function<int(const std::string& dir)>& attempt) {
    char templ[] = "/tmp/stockade-probe-XXXXXX";
    if (::mkdtemp(templ) == nullptr) {
        emit("stage", "mkdtemp");
        return reportCall(-1);
    }
    const int rc = attempt(templ);
    ::rmdir(templ);
    emit("result", errName(-rc));
    return 0;
}

}  // namespace

// Every mount this process sees: "MOUNTPOINT FSTYPE OPTIONS".
int mounts(const Args&) {
    for (const std::string& line : split(readOrEmpty("/proc/self/mountinfo"), '\n')) {
        const std::vector<std::string> f = split(line, ' ');
        size_t dash = 6;
        while (dash < f.size() && f[dash] != "-") ++dash;
        if (f.size() < 6 || dash + 1 >= f.size()) continue;
        emit("mount", f[4] + " " + f[dash + 1] + " " + f[5]);
    }
    return 0;
}

// Mounts a tmpfs and unmounts it at once if the kernel let it.
int mountTmpfs(const Args&) {
    return reportInScratchDir([](const std::string& dir) {
        if (::mount("stockade-probe", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=4k") < 0)
            return -errno;
        ::umount2(dir.c_str(), MNT_DETACH);
        return 0;
    });
}

// The new mount API's first step; it changes nothing by itself.
int fsopenTmpfs(const Args&) {
    return reportOpened(::syscall(SYS_fsopen, "tmpfs", 1 /* FSOPEN_CLOEXEC */));
}

// A /dev/null twin, removed at once.
int mknodDevice(const Args&) {
    return reportInScratchDir([](const std::string& dir) {
        const std::string node = dir + "/null";
        const int rc = ::mknod(node.c_str(), S_IFCHR | 0600, makedev(1, 3)) < 0 ? -errno : 0;
        ::unlink(node.c_str());
        return rc;
    });
}

// chroot("/") changes nothing even where it is allowed.
int chrootSelf(const Args&) {
    return reportCall(::chroot("/"));
}

int unshareNamespace(const Args& a) {
    static const std::map<std::string, int> flags = {
        {"user", CLONE_NEWUSER},    {"mount", CLONE_NEWNS}, {"net", CLONE_NEWNET},
        {"pid", CLONE_NEWPID},      {"ipc", CLONE_NEWIPC},  {"uts", CLONE_NEWUTS},
        {"cgroup", CLONE_NEWCGROUP}};
    const auto it = flags.find(a[0]);
    if (it == flags.end()) {
        emit("error", "unknown namespace " + a[0]);
        return 2;
    }
    return reportCall(::unshare(it->second));
}

// Looks a System V shared memory segment up by key; creates nothing.
int shmLookup(const Args& a) {
    return reportCall(::shmget(static_cast<key_t>(std::atol(a[0].c_str())), 0, 0));
}

int hostname(const Args&) {
    utsname u{};
    ::uname(&u);
    emit("value", u.nodename);
    return 0;
}

// Sets the host name to the one it already has.
int sethostnameSame(const Args&) {
    utsname u{};
    ::uname(&u);
    return reportCall(::sethostname(u.nodename, strlen(u.nodename)));
}

}  // namespace probe
