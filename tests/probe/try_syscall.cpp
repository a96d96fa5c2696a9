// stockade-try-syscall: calls system calls that a seccomp filter should
// refuse and prints what came back, one line per call:
//
//   stockade-try-syscall NAME...     e.g.  keyctl clone3 socket-packet
//   stockade-try-syscall all         every probe below, x32 last
//
//   keyctl errno=EPERM        refused by the filter (or by the kernel itself)
//   clone3 errno=ENOSYS       refused by the filter as unknown, or absent
//   mount errno=EFAULT        reached the kernel, which rejected the arguments
//   getpid ok                 reached the kernel and succeeded
//
// The idea is bubblewrap's tests/try-syscall.c: each call gets arguments the
// kernel rejects (a bad fd, a bad pointer, an undefined flag), so an answer
// other than EPERM/ENOSYS means the call got through the filter, and a broken
// sandbox still changes nothing. That has to hold when this runs as real root
// on the host, so no call here is ever given arguments that could succeed:
// no NULL to acct(2), no valid magic to reboot(2), no valid flags to kexec.
// The only calls that may succeed are the controls `getpid` and
// `personality-query`, and `personality` (which only changes this process and
// is undone at once).
//
// Some refusals come from the kernel as well as the filter (EPERM without
// CAP_SYS_ADMIN for mount, bpf, init_module, ...): run the probe outside the
// sandbox too and compare.
//
// `x32` makes a call with the x32 ABI bit set. Under stockade's filter the
// kernel kills the process with SIGSYS, so it runs last and prints nothing;
// the caller reads the signal from the exit status. If it prints a line, the
// call was not killed.
//
// Exit status: 0 after the last probe; 2 for an unknown NAME or no NAME.
// Uses only libc and raw syscall(2), nothing of stockade.

#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#ifndef __NR_open_tree_attr
#define __NR_open_tree_attr 467
#endif

namespace {

// An address no process maps: the kernel answers EFAULT when it reads it.
const long kBadPointer = 1;
// No valid fd.
const long kBadFd = -1;
// Undefined in every flags word the probes pass it to.
const long kBadFlags = 0x40000000;

constexpr unsigned long kX32SyscallBit = 0x40000000;

struct Probe {
    const char* name;
    long (*call)();
};

long tryPersonality() {
    const long before = syscall(SYS_personality, 0xffffffffL);
    const long result = syscall(SYS_personality, 0xffffL);
    const int err = errno;
    if (result >= 0 && before >= 0) syscall(SYS_personality, before);
    errno = err;
    return result;
}

const Probe kProbes[] = {
    // Controls: these must reach the kernel under any sandbox.
    {"getpid", [] { return syscall(SYS_getpid); }},
    {"personality-query", [] { return syscall(SYS_personality, 0xffffffffL); }},
    {"ioctl-tcgets", [] { return syscall(SYS_ioctl, kBadFd, TCGETS, kBadPointer); }},
    {"socket-unix", [] { return syscall(SYS_socket, AF_UNIX, SOCK_STREAM | 0x100, 0); }},
    {"socket-inet", [] { return syscall(SYS_socket, AF_INET, SOCK_STREAM | 0x100, 0); }},
    {"socket-inet6", [] { return syscall(SYS_socket, AF_INET6, SOCK_STREAM | 0x100, 0); }},
    {"socket-netlink", [] { return syscall(SYS_socket, AF_NETLINK, SOCK_RAW | 0x100, 0); }},
    // CLONE_SIGHAND without CLONE_VM is EINVAL before anything is copied.
    {"clone", [] { return syscall(SYS_clone, CLONE_SIGHAND, 0L, 0L, 0L, 0L); }},

    // Keyring. keyctl's operation number is undefined: EOPNOTSUPP.
    {"add_key", [] { return syscall(SYS_add_key, kBadPointer, kBadPointer, 0L, 0L, 0L); }},
    {"keyctl", [] { return syscall(SYS_keyctl, 0x7fffffffL, 0L, 0L, 0L, 0L); }},
    {"request_key", [] { return syscall(SYS_request_key, kBadPointer, kBadPointer, 0L, 0L); }},

    // Namespaces. unshare's CLONE_PARENT_SETTID is not an unshare flag;
    // CLONE_FS with CLONE_NEWUSER or CLONE_NEWNS, and CLONE_SIGHAND without
    // CLONE_VM, are EINVAL in copy_process before anything is done.
    {"unshare", [] { return syscall(SYS_unshare, CLONE_NEWUSER | CLONE_PARENT_SETTID); }},
    {"setns", [] { return syscall(SYS_setns, kBadFd, CLONE_NEWNET); }},
    {"clone-newuser", [] { return syscall(SYS_clone, CLONE_NEWUSER | CLONE_FS, 0L, 0L, 0L, 0L); }},
    {"clone-newns", [] { return syscall(SYS_clone, CLONE_NEWNS | CLONE_FS, 0L, 0L, 0L, 0L); }},
    {"clone-newnet",
     [] { return syscall(SYS_clone, CLONE_NEWNET | CLONE_SIGHAND, 0L, 0L, 0L, 0L); }},
    {"clone-newpid",
     [] { return syscall(SYS_clone, CLONE_NEWPID | CLONE_SIGHAND, 0L, 0L, 0L, 0L); }},
    // clone3 reads its arguments from memory first: EFAULT.
    {"clone3", [] { return syscall(SYS_clone3, kBadPointer, 88L); }},

    // The mount API.
    {"mount", [] { return syscall(SYS_mount, kBadPointer, kBadPointer, kBadPointer, 0L, 0L); }},
    {"umount2", [] { return syscall(SYS_umount2, kBadPointer, kBadFlags); }},
    {"pivot_root", [] { return syscall(SYS_pivot_root, kBadPointer, kBadPointer); }},
    {"chroot", [] { return syscall(SYS_chroot, kBadPointer); }},
    {"fsopen", [] { return syscall(SYS_fsopen, kBadPointer, kBadFlags); }},
    {"fsconfig", [] { return syscall(SYS_fsconfig, kBadFd, 0x7fffL, 0L, 0L, 0L); }},
    {"fsmount", [] { return syscall(SYS_fsmount, kBadFd, kBadFlags, 0L); }},
    {"fspick", [] { return syscall(SYS_fspick, kBadFd, kBadPointer, kBadFlags); }},
    {"move_mount",
     [] { return syscall(SYS_move_mount, kBadFd, kBadPointer, kBadFd, kBadPointer, kBadFlags); }},
    {"open_tree", [] { return syscall(SYS_open_tree, kBadFd, kBadPointer, kBadFlags); }},
    {"mount_setattr",
     [] { return syscall(SYS_mount_setattr, kBadFd, kBadPointer, kBadFlags, kBadPointer, 0L); }},
    {"open_tree_attr",
     [] { return syscall(__NR_open_tree_attr, kBadFd, kBadPointer, kBadFlags, kBadPointer, 0L); }},

    // Other processes. No pid is -1; flags must be 0.
    {"ptrace", [] { return syscall(SYS_ptrace, 0x7fffffffL, -1L, 0L, 0L); }},
    {"process_vm_readv",
     [] { return syscall(SYS_process_vm_readv, -1L, kBadPointer, 1L, kBadPointer, 1L, 1L); }},
    {"process_vm_writev",
     [] { return syscall(SYS_process_vm_writev, -1L, kBadPointer, 1L, kBadPointer, 1L, 1L); }},
    {"process_madvise", [] { return syscall(SYS_process_madvise, kBadFd, 0L, 0L, 0L, 1L); }},
    {"kcmp", [] { return syscall(SYS_kcmp, -1L, -1L, 0x7fffL, 0L, 0L); }},
    {"pidfd_getfd", [] { return syscall(SYS_pidfd_getfd, kBadFd, 0L, 0L); }},

    // Kernel attack surface.
    {"bpf", [] { return syscall(SYS_bpf, 0x7fffffffL, 0L, 0L); }},
    {"perf_event_open", [] { return syscall(SYS_perf_event_open, kBadPointer, 0L, -1L, -1L, 0L); }},
    {"io_uring_setup", [] { return syscall(SYS_io_uring_setup, 1L, kBadPointer); }},
    {"io_uring_enter", [] { return syscall(SYS_io_uring_enter, kBadFd, 0L, 0L, 0L, 0L, 0L); }},
    {"io_uring_register", [] { return syscall(SYS_io_uring_register, kBadFd, 0L, 0L, 0L); }},
    // UFFD_USER_MODE_ONLY (1) keeps unprivileged callers past the kernel's
    // own permission check, so the undefined flag is what fails.
    {"userfaultfd", [] { return syscall(SYS_userfaultfd, 1L | kBadFlags); }},

    // Modules and kexec. A zero-length image is not a module; undefined
    // flags and 1000 segments are EINVAL before kexec looks at anything.
    {"init_module", [] { return syscall(SYS_init_module, kBadPointer, 0L, kBadPointer); }},
    {"finit_module", [] { return syscall(SYS_finit_module, kBadFd, kBadPointer, kBadFlags); }},
    {"delete_module", [] { return syscall(SYS_delete_module, kBadPointer, 0L); }},
    {"kexec_load", [] { return syscall(SYS_kexec_load, 0L, 1000L, 0L, 0x8000L); }},
    {"kexec_file_load",
     [] { return syscall(SYS_kexec_file_load, kBadFd, kBadFd, 0L, 0L, kBadFlags); }},

    // File handles.
    {"open_by_handle_at", [] { return syscall(SYS_open_by_handle_at, kBadFd, kBadPointer, 0L); }},
    {"name_to_handle_at",
     [] {
         return syscall(SYS_name_to_handle_at, kBadFd, kBadPointer, kBadPointer, kBadPointer,
                        kBadFlags);
     }},

    // Clocks and names. Each reads its argument before any permission check.
    {"clock_settime", [] { return syscall(SYS_clock_settime, CLOCK_REALTIME, kBadPointer); }},
    {"settimeofday", [] { return syscall(SYS_settimeofday, kBadPointer, kBadPointer); }},
    {"adjtimex", [] { return syscall(SYS_adjtimex, kBadPointer); }},
    {"clock_adjtime", [] { return syscall(SYS_clock_adjtime, CLOCK_REALTIME, kBadPointer); }},
    // 65 is one past the longest name.
    {"sethostname", [] { return syscall(SYS_sethostname, kBadPointer, 65L); }},
    {"setdomainname", [] { return syscall(SYS_setdomainname, kBadPointer, 65L); }},

    // Host-wide state. acct never gets NULL (which turns accounting off),
    // reboot never gets its magic numbers, syslog never an action that
    // clears or changes the log.
    {"acct", [] { return syscall(SYS_acct, kBadPointer); }},
    {"swapon", [] { return syscall(SYS_swapon, kBadPointer, kBadFlags); }},
    {"swapoff", [] { return syscall(SYS_swapoff, kBadPointer); }},
    {"reboot", [] { return syscall(SYS_reboot, 0L, 0L, 0L, 0L); }},
    {"quotactl", [] { return syscall(SYS_quotactl, 0xffL, kBadPointer, 0L, kBadPointer); }},
    {"quotactl_fd", [] { return syscall(SYS_quotactl_fd, kBadFd, 0xffL, 0L, 0L); }},
    {"lookup_dcookie", [] { return syscall(SYS_lookup_dcookie, 0L, kBadPointer, 0L); }},
    {"nfsservctl", [] { return syscall(SYS_nfsservctl, -1L, kBadPointer, kBadPointer); }},
    {"syslog", [] { return syscall(SYS_syslog, 0x7fffL, 0L, 0L); }},
    {"iopl", [] { return syscall(SYS_iopl, 4L); }},
    {"ioperm", [] { return syscall(SYS_ioperm, 0x10000L, 1L, 0L); }},

    // personality: 0xffff is not one of the allowed personas.
    {"personality", tryPersonality},

    // TIOCSTI and TIOCLINUX, plain and with bits above 32 that the kernel
    // ignores (CVE-2019-10063): the filter must refuse both.
    {"ioctl-tiocsti", [] { return syscall(SYS_ioctl, kBadFd, TIOCSTI, kBadPointer); }},
    {"ioctl-tiocsti-high",
     [] { return syscall(SYS_ioctl, kBadFd, (1UL << 32) | TIOCSTI, kBadPointer); }},
    {"ioctl-tioclinux", [] { return syscall(SYS_ioctl, kBadFd, TIOCLINUX, kBadPointer); }},
    {"ioctl-tioclinux-high",
     [] { return syscall(SYS_ioctl, kBadFd, (1UL << 32) | TIOCLINUX, kBadPointer); }},

    // Socket families outside UNIX, INET, INET6 and NETLINK. The type carries
    // an undefined flag bit, EINVAL before the kernel creates anything.
    {"socket-packet", [] { return syscall(SYS_socket, AF_PACKET, SOCK_RAW | 0x100, 0); }},
    {"socket-vsock", [] { return syscall(SYS_socket, AF_VSOCK, SOCK_STREAM | 0x100, 0); }},
    {"socket-alg", [] { return syscall(SYS_socket, AF_ALG, SOCK_SEQPACKET | 0x100, 0); }},
    {"socket-key", [] { return syscall(SYS_socket, AF_KEY, SOCK_RAW | 0x100, 0); }},
    {"socketpair-vsock",
     [] { return syscall(SYS_socketpair, AF_VSOCK, SOCK_STREAM | 0x100, 0, kBadPointer); }},

    // Past Landlock's TCP rules: an MPTCP socket (the undefined type flag
    // again makes the kernel's own answer EINVAL), and TCP Fast Open's
    // connect inside a send on a bad fd (EBADF if it reached the kernel).
    {"socket-inet-mptcp",
     [] { return syscall(SYS_socket, AF_INET, SOCK_STREAM | 0x100, IPPROTO_MPTCP); }},
    {"socket-inet6-mptcp",
     [] { return syscall(SYS_socket, AF_INET6, SOCK_STREAM | 0x100, IPPROTO_MPTCP); }},
    {"sendto-fastopen",
     [] { return syscall(SYS_sendto, kBadFd, kBadPointer, 1L, MSG_FASTOPEN, kBadPointer, 16L); }},
    {"sendmsg-fastopen", [] { return syscall(SYS_sendmsg, kBadFd, kBadPointer, MSG_FASTOPEN); }},
    {"sendmmsg-fastopen",
     [] { return syscall(SYS_sendmmsg, kBadFd, kBadPointer, 1L, MSG_FASTOPEN); }},

    // Must stay last: under stockade it kills the process. close(-1) in the
    // x32 ABI, EBADF if it ever ran.
    {"x32", [] { return syscall(kX32SyscallBit | SYS_close, kBadFd); }},
};

void report(const char* name, long result, int err) {
    char line[128];
    int n;
    if (result >= 0) {
        n = snprintf(line, sizeof line, "%s ok\n", name);
    } else {
        const char* errname = strerrorname_np(err);
        n = errname ? snprintf(line, sizeof line, "%s errno=%s\n", name, errname)
                    : snprintf(line, sizeof line, "%s errno=%d\n", name, err);
    }
    // write(2), not stdio: the x32 probe kills the process, and a buffered
    // line would die with it.
    if (n > 0) (void)!write(STDOUT_FILENO, line, static_cast<size_t>(n));
}

void run(const Probe& probe) {
    errno = 0;
    const long result = probe.call();
    report(probe.name, result, errno);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s NAME... | all\nprobes:", argv[0]);
        for (const Probe& p : kProbes) fprintf(stderr, " %s", p.name);
        fprintf(stderr, "\n");
        return 2;
    }
    for (int i = 1; i < argc; ++i) {
        bool known = strcmp(argv[i], "all") == 0;
        for (const Probe& p : kProbes) known = known || strcmp(argv[i], p.name) == 0;
        if (!known) {
            fprintf(stderr, "%s: unknown probe \"%s\" (run without arguments for the list)\n",
                    argv[0], argv[i]);
            return 2;
        }
    }
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "all") == 0) {
            for (const Probe& p : kProbes) run(p);
            continue;
        }
        for (const Probe& p : kProbes) {
            if (strcmp(argv[i], p.name) == 0) run(p);
        }
    }
    return 0;
}
