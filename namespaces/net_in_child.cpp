#include "namespaces/net_in_child.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "namespaces/call_note_in_child.h"
#include "namespaces/net_helper_in_child.h"

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

int startNetworkNamespaceInChild(int slot, bool every_port) noexcept {
    // The helper's arguments and stack are static: one helper per process,
    // started once by a single-threaded init, and they must outlive this frame.
    alignas(16) static char stack[16 * 1024];
    static NetHelperArgs args;
    // /proc opened here: by the time the helper runs, the caller may have
    // pivoted into the sandbox's root. The fd table is shared: the helper
    // closes `proc` itself once done (a close here could come before its use).
    args.proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
    args.slot = slot;
    args.every_port = every_port;
    // CLONE_VM where the body makes its calls without libc: no page tables
    // copied and no copy-on-write faults left behind for init (a fork of it
    // cost about 2 ms a run). Every signal is blocked while it starts, so it
    // runs none of init's handlers in init's memory. Exit signal 0: the caller
    // reaps it with __WCLONE, and no SIGCHLD is left pending for init's loop.
    int flags = CLONE_FILES | (netHelperSharesMemory() ? CLONE_VM : 0);
    sigset_t all, old_mask;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, &old_mask);
    int pid = clone(buildNetworkNamespaceInHelper, stack + sizeof stack, flags, &args);
    int err = errno;
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    if (pid >= 0) return pid;
    if (args.proc >= 0) close(args.proc);
    return -err;
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
