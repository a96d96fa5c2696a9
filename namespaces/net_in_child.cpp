#include "namespaces/net_in_child.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "namespaces/call_note_in_child.h"

namespace stockade::ns {

void allowEveryPortInChild(int proc) noexcept {
    const char* name = "sys/net/ipv4/ip_unprivileged_port_start";
    int fd = proc >= 0
                 ? openat(proc, name, O_WRONLY | O_CLOEXEC)
                 : open("/proc/sys/net/ipv4/ip_unprivileged_port_start", O_WRONLY | O_CLOEXEC);
    if (fd < 0) return;
    ssize_t written = write(fd, "0\n", 2);
    (void)written;
    close(fd);
}

int bringLoopbackUpInChild() noexcept {
    // SIOCSIFFLAGS on any socket in the namespace is one round trip; netlink
    // would need a message built and parsed for the same effect.
    int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (sock < 0) return noteCallInChild("socket").arg("AF_INET").arg("SOCK_DGRAM").done(errno);
    ifreq req{};
    memcpy(req.ifr_name, "lo", 3);
    int err = 0;
    if (ioctl(sock, SIOCGIFFLAGS, &req) < 0) {
        err = noteCallInChild("ioctl").path("lo").arg("SIOCGIFFLAGS").done(errno);
    } else {
        req.ifr_flags = static_cast<short>(req.ifr_flags | IFF_UP | IFF_RUNNING);
        if (ioctl(sock, SIOCSIFFLAGS, &req) < 0)
            err = noteCallInChild("ioctl").path("lo").arg("SIOCSIFFLAGS").arg("IFF_UP").done(errno);
    }
    close(sock);
    return err;
}

int startNetworkNamespaceInChild(int slot) noexcept {
    // /proc opened here: by the time the helper runs, the caller may have
    // pivoted into the sandbox's root. The fd table is shared: the helper
    // closes `proc` itself once done (a close here could come before its use).
    int proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
    // Not CLONE_VM: the helper calls into libc, whose errno it would share.
    // Exit signal 0: the caller reaps it with __WCLONE, and no SIGCHLD is
    // left pending for init's loop.
    long pid = syscall(SYS_clone, CLONE_FILES, 0, 0, 0, 0);
    if (pid != 0) {
        int err = errno;
        if (pid < 0 && proc >= 0) close(proc);
        return pid < 0 ? -err : static_cast<int>(pid);
    }
    if (unshare(CLONE_NEWNET) < 0) _exit(errno);
    if (int err = bringLoopbackUpInChild()) _exit(err);
    allowEveryPortInChild(proc);
    if (proc >= 0) close(proc);
    int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (fd < 0) _exit(errno);
    int err = dup3(fd, slot, O_CLOEXEC) < 0 ? errno : 0;
    close(fd);
    _exit(err);
}

int joinNetworkNamespaceInChild(int helper, int slot) noexcept {
    int status = 0;
    while (waitpid(helper, &status, __WCLONE) < 0)
        if (errno != EINTR) return errno;
    if (!WIFEXITED(status)) return ECHILD;
    if (WEXITSTATUS(status) != 0) return WEXITSTATUS(status);
    int err = setns(slot, CLONE_NEWNET) < 0 ? errno : 0;
    close(slot);
    return err;
}

}  // namespace stockade::ns
