#include "seccomp/policy.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <utility>

namespace stockade::seccomp {
namespace {

// The allowlist, grouped by what ordinary programs (shells, coreutils, python3
// with subprocess and multiprocessing, gcc, make, node, git) use it for. The
// facts follow Docker's default profile; where stockade differs it says so in
// docs/seccomp.md. Names that x86_64 lacks are kept for other architectures
// and skipped there by compileFilter.
const std::vector<std::string>& allowedEverywhere() {
    static const std::vector<std::string> names = {
        // Reading and writing what is already open.
        "read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "preadv2",
        "pwritev2", "lseek", "_llseek", "sendfile", "sendfile64", "splice", "tee", "vmsplice",
        "copy_file_range", "readahead",
        // File descriptors.
        "close", "close_range", "dup", "dup2", "dup3", "fcntl", "fcntl64", "pipe", "pipe2", "flock",
        "fsync", "fdatasync", "sync", "syncfs", "sync_file_range", "fadvise64", "fadvise64_64",
        "fallocate", "ftruncate", "ftruncate64", "truncate", "truncate64",
        // Paths and metadata.
        "open", "openat", "creat", "access", "faccessat", "faccessat2", "stat", "stat64", "lstat",
        "lstat64", "fstat", "fstat64", "newfstatat", "fstatat64", "statx", "statfs", "statfs64",
        "fstatfs", "fstatfs64", "getdents", "getdents64", "getcwd", "chdir", "fchdir", "mkdir",
        "mkdirat", "rmdir", "rename", "renameat", "renameat2", "link", "linkat", "symlink",
        "symlinkat", "unlink", "unlinkat", "readlink", "readlinkat", "mknod", "mknodat", "umask",
        "chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "chown32", "fchown", "fchown32",
        "fchownat", "lchown", "lchown32", "utime", "utimes", "utimensat", "utimensat_time64",
        "futimesat", "file_getattr", "file_setattr",
        // Extended attributes.
        "getxattr", "lgetxattr", "fgetxattr", "getxattrat", "listxattr", "llistxattr", "flistxattr",
        "listxattrat", "setxattr", "lsetxattr", "fsetxattr", "setxattrat", "removexattr",
        "lremovexattr", "fremovexattr", "removexattrat",
        // Watching files, asynchronous I/O.
        "inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch", "fanotify_mark",
        "io_destroy", "io_submit", "io_cancel", "io_getevents", "io_pgetevents",
        "io_pgetevents_time64",
        // Memory.
        "brk", "mmap", "mmap2", "munmap", "mremap", "mprotect", "madvise", "mincore", "msync",
        "mlock", "mlock2", "munlock", "mlockall", "munlockall", "remap_file_pages", "membarrier",
        "memfd_create", "memfd_secret", "pkey_alloc", "pkey_free", "pkey_mprotect", "mseal",
        "cachestat", "map_shadow_stack",
        // Processes and threads (clone and clone3 are decided apart, below).
        "fork", "vfork", "execve", "execveat", "exit", "exit_group", "wait4", "waitid", "waitpid",
        "kill", "tkill", "tgkill", "getpid", "getppid", "gettid", "getpgid", "setpgid", "getpgrp",
        "getsid", "setsid", "set_tid_address", "set_robust_list", "get_robust_list", "rseq",
        "futex", "futex_time64", "futex_waitv", "futex_wake", "futex_wait", "futex_requeue",
        "pidfd_open", "pidfd_send_signal", "process_mrelease", "prctl", "seccomp",
        "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self", "get_thread_area",
        "set_thread_area",
        // Scheduling.
        "sched_yield", "sched_getaffinity", "sched_setaffinity", "sched_getparam", "sched_setparam",
        "sched_getscheduler", "sched_setscheduler", "sched_get_priority_max",
        "sched_get_priority_min", "sched_rr_get_interval", "sched_rr_get_interval_time64",
        "sched_getattr", "sched_setattr", "getpriority", "setpriority", "ioprio_get", "ioprio_set",
        "getcpu",
        // Identity, inside the user namespace, and limits.
        "getuid", "getuid32", "geteuid", "geteuid32", "getgid", "getgid32", "getegid", "getegid32",
        "getresuid", "getresuid32", "getresgid", "getresgid32", "getgroups", "getgroups32",
        "setuid", "setuid32", "setgid", "setgid32", "setreuid", "setreuid32", "setregid",
        "setregid32", "setresuid", "setresuid32", "setresgid", "setresgid32", "setfsuid",
        "setfsuid32", "setfsgid", "setfsgid32", "setgroups", "setgroups32", "capget", "capset",
        "getrlimit", "ugetrlimit", "setrlimit", "prlimit64", "getrusage", "times", "sysinfo",
        "uname", "lsm_get_self_attr", "lsm_list_modules", "statmount", "listmount",
        // Signals.
        "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigtimedwait",
        "rt_sigtimedwait_time64", "rt_sigsuspend", "rt_sigqueueinfo", "rt_tgsigqueueinfo",
        "sigaltstack", "sigreturn", "sigprocmask", "signalfd", "signalfd4", "pause", "alarm",
        "getitimer", "setitimer", "restart_syscall",
        // Reading clocks, sleeping, timers.
        "clock_gettime", "clock_gettime64", "clock_getres", "clock_getres_time64",
        "clock_nanosleep", "clock_nanosleep_time64", "nanosleep", "gettimeofday", "time",
        "timer_create", "timer_settime", "timer_settime64", "timer_gettime", "timer_gettime64",
        "timer_getoverrun", "timer_delete", "timerfd_create", "timerfd_settime",
        "timerfd_settime64", "timerfd_gettime", "timerfd_gettime64",
        // Waiting for events.
        "select", "_newselect", "pselect6", "pselect6_time64", "poll", "ppoll", "ppoll_time64",
        "epoll_create", "epoll_create1", "epoll_ctl", "epoll_ctl_old", "epoll_wait",
        "epoll_wait_old", "epoll_pwait", "epoll_pwait2", "eventfd", "eventfd2",
        // Sockets once created (socket and socketpair are decided apart, below).
        "bind", "listen", "accept", "accept4", "connect", "shutdown", "getsockname", "getpeername",
        "getsockopt", "setsockopt", "sendto", "recvfrom", "send", "recv", "sendmsg", "recvmsg",
        "sendmmsg", "recvmmsg", "recvmmsg_time64",
        // System V and POSIX IPC, confined by the IPC namespace.
        "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop", "semtimedop",
        "semtimedop_time64", "semctl", "shmget", "shmat", "shmdt", "shmctl", "mq_open", "mq_unlink",
        "mq_timedsend", "mq_timedsend_time64", "mq_timedreceive", "mq_timedreceive_time64",
        "mq_notify", "mq_getsetattr",
        // Randomness.
        "getrandom",
        // x86_64's own: thread-local storage.
        "arch_prctl"};
    return names;
}

// Known-dangerous calls. The default action refuses them too; naming them
// pins their answer to EPERM whatever the default becomes, and says why.
const std::vector<std::vector<std::string>>& deniedGroups() {
    static const std::vector<std::vector<std::string>> groups = {
        // The kernel keyring is not namespaced: a sandbox could read or fill
        // the host user's keys.
        {"add_key", "keyctl", "request_key"},
        // New namespaces are how container escapes start (CVE-2022-0185 needed
        // one); the sandbox already has all it needs.
        {"unshare", "setns"},
        // The mount API, old and new: the view is fixed before exec.
        {"mount", "umount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount",
         "fspick", "move_mount", "open_tree", "open_tree_attr", "mount_setattr"},
        // Reading or changing another process's memory or files.
        {"ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "kcmp",
         "pidfd_getfd"},
        // Kernel attack surface with a long CVE history and no use in a build.
        {"bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
         "io_uring_register", "modify_ldt", "lsm_set_self_attr"},
        // Kernel code and the running kernel.
        {"init_module", "finit_module", "delete_module", "create_module", "query_module",
         "get_kernel_syms", "kexec_load", "kexec_file_load", "reboot"},
        // File handles bypass the mount view (the "shocker" escape).
        {"open_by_handle_at", "name_to_handle_at"},
        // Host-wide state the sandbox must not change. Clocks:
        {"clock_settime", "clock_settime64", "settimeofday", "stime", "adjtimex", "clock_adjtime",
         "clock_adjtime64"},
        // names (the UTS namespace would confine them, but nothing needs them):
        {"sethostname", "setdomainname"},
        // accounting, swap, quotas, the kernel log, the terminal:
        {"acct", "swapon", "swapoff", "quotactl", "quotactl_fd", "syslog", "vhangup"},
        // I/O ports and 8086 mode:
        {"iopl", "ioperm", "vm86", "vm86old"},
        // and calls the kernel has removed or never needs from a program.
        {"lookup_dcookie", "nfsservctl", "_sysctl", "uselib", "ustat", "sysfs"},
        // NUMA placement of other processes' memory.
        {"mbind", "set_mempolicy", "get_mempolicy", "set_mempolicy_home_node", "migrate_pages",
         "move_pages"},
    };
    return groups;
}

SyscallRule rule(std::vector<std::string> names, Action action, int err = 0,
                 std::vector<ArgCondition> args = {}) {
    return SyscallRule{std::move(names), action, err, std::move(args)};
}

ArgCondition argEquals(unsigned index, std::uint64_t value) {
    return ArgCondition{index, CompareOp::Equal, value, 0};
}

}  // namespace

namespace {

// The calls whose mode addNoSetidRules reads.
constexpr const char* kModeCalls[] = {"chmod", "fchmod",  "fchmodat", "fchmodat2", "creat",
                                      "mknod", "mknodat", "open",     "openat"};

}  // namespace

void addHostSocketRefusals(SeccompPolicy& policy) {
    auto refuse = [&](const char* name, std::vector<ArgCondition> args) {
        policy.rules.push_back(rule({name}, Action::Errno, EPERM, std::move(args)));
    };
    // Both are ints to the kernel: compared on the lower 32 bits.
    auto int32 = [](unsigned index, std::uint64_t value) {
        return ArgCondition{index, CompareOp::MaskedEqual, 0xffffffffULL, value};
    };
    // The other way to TCP Fast Open's data in a SYN (the first is
    // MSG_FASTOPEN, refused in every policy).
    for (std::uint64_t option : {std::uint64_t{TCP_FASTOPEN_CONNECT}, std::uint64_t{34}})
        refuse("setsockopt", {int32(1, IPPROTO_TCP), int32(2, option)});  // 34: ..._NO_COOKIE
    // The drop counter: the confining filter's drops, told apart by how many
    // SYN-ACKs an open port resends, would say which host ports listen.
    refuse("getsockopt", {int32(1, SOL_SOCKET), int32(2, SO_MEMINFO)});
    refuse("setsockopt", {int32(1, SOL_SOCKET), int32(2, SO_RXQ_OVFL)});
    // The host's network namespace by its cookie: which namespace it is.
    refuse("getsockopt", {int32(1, SOL_SOCKET), int32(2, SO_NETNS_COOKIE)});
    // The interface ioctls answer for the socket's own network namespace:
    // SIOCGIFNAME (0x8910) to SIOCDEVPRIVATE's end (0x89ff), and the wireless
    // ones (0x8b00-0x8bff). The few below 0x8910 (FIOSETOWN, SIOCATMARK,
    // SIOCGSTAMP) say nothing of the host.
    for (std::uint64_t high = 0x8910; high <= 0x89f0; high += 0x10)
        refuse("ioctl", {ArgCondition{1, CompareOp::MaskedEqual, 0xfffffff0ULL, high}});
    refuse("ioctl", {ArgCondition{1, CompareOp::MaskedEqual, 0xffffff00ULL, 0x8b00}});
}

Status allowLocalSocketsOnly(SeccompPolicy& policy) {
    if (policy.default_action == Action::Allow || policy.default_action == Action::Log)
        return Error::message(
            "the seccomp policy allows what it does not name, so it cannot "
            "refuse socket families by leaving them out");
    std::vector<SyscallRule> kept;
    for (SyscallRule& r : policy.rules) {
        // Every rule that allows socket, socketpair or connect goes (the
        // family and type rules are made again below), so they fall to the
        // policy's default, which refuses.
        if (r.action == Action::Allow) {
            for (const char* name : {"socket", "socketpair", "connect"}) std::erase(r.names, name);
            if (r.names.empty()) continue;
        }
        kept.push_back(std::move(r));
    }
    policy.rules = std::move(kept);
    // AF_UNIX streams and seqpackets only. A unix socket reaches another by
    // the path it is bound to, and a path lookup is not something Landlock
    // mediates (ABI 7 has no right for connecting to a socket file): with
    // connect(2) or a datagram's destination a command could reach every
    // socket of the host its uid may open, a terminal multiplexer's, an
    // ssh agent's, the session bus's (which starts programs on the host).
    // So connect is refused and datagram sockets too (sendto or sendmsg with
    // an address would reach a path); a stream or seqpacket socket ignores
    // or refuses an address on send. socketpair(2) still gives connected
    // pairs, and a socket bound in the view can still be listened on.
    for (int type : {SOCK_STREAM, SOCK_SEQPACKET})
        policy.rules.push_back(
            rule({"socket", "socketpair"}, Action::Allow, 0,
                 {argEquals(0, AF_UNIX),
                  // The type's low bits; SOCK_NONBLOCK and SOCK_CLOEXEC above.
                  ArgCondition{1, CompareOp::MaskedEqual, 0xf, static_cast<std::uint64_t>(type)}}));
    return okStatus();
}

void refuseMetadataByPath(SeccompPolicy& policy) {
    // By path (or by an O_PATH fd with AT_EMPTY_PATH, which Landlock does
    // not check either): every change of a file's mode, owner, times,
    // extended attributes or inode flags, and every watch. The fd-only
    // calls (fchmod, fchown, futimens, fsetxattr) stay: their fd came from an
    // open Landlock allowed, and O_PATH fds are EBADF to them.
    static const char* const kByPath[] = {
        "chmod",         "fchmodat",      "fchmodat2",         "chown",
        "chown32",       "lchown",        "lchown32",          "fchownat",
        "utime",         "utimes",        "utimensat",         "utimensat_time64",
        "futimesat",     "file_setattr",  "setxattr",          "lsetxattr",
        "setxattrat",    "removexattr",   "lremovexattr",      "removexattrat",
        "inotify_init",  "inotify_init1", "inotify_add_watch", "inotify_rm_watch",
        "fanotify_init", "fanotify_mark"};
    std::vector<SyscallRule> kept;
    for (SyscallRule& r : policy.rules) {
        for (const char* name : kByPath) std::erase(r.names, name);
        if (!r.names.empty()) kept.push_back(std::move(r));
    }
    policy.rules = std::move(kept);
    // futimens(fd, times) is utimensat(fd, NULL, times, 0): a null path.
    policy.rules.push_back(rule({"utimensat"}, Action::Allow, 0, {argEquals(1, 0)}));
    // No watches at all (a watch needs no right Landlock has, and the
    // inotify instances are the user's, shared with the host): ENOSYS, as a
    // kernel without inotify answers, so watchers fall back to polling.
    policy.rules.push_back(rule(
        {"inotify_init", "inotify_init1", "inotify_add_watch", "fanotify_init", "fanotify_mark"},
        Action::Errno, ENOSYS));
}

void sendCallToSupervisor(SeccompPolicy& policy, const std::string& name) {
    std::vector<SyscallRule> kept;
    for (SyscallRule& r : policy.rules) {
        std::erase(r.names, name);
        if (!r.names.empty()) kept.push_back(std::move(r));
    }
    kept.insert(kept.begin(), rule({name}, Action::Notify));
    policy.rules = std::move(kept);
}

Status checkNoSetidRulesHold(const SeccompPolicy& policy) {
    // Among conditional rules for one call, libseccomp decides which matches
    // first, not the policy's order: a policy's own conditional rule for one
    // of these calls (an ALLOW on another argument) could decide before the
    // mode is looked at, and a setuid file be made (session 5 red team).
    for (const SyscallRule& r : policy.rules) {
        if (r.args.empty()) continue;
        for (const std::string& name : r.names)
            for (const char* guarded : kModeCalls)
                if (name == guarded)
                    return Error::message(
                        "the seccomp policy has its own argument conditions for " + name +
                        ", which stockade cannot combine with its refusal of setuid and setgid "
                        "modes (the two would be decided in an order neither controls); remove "
                        "the conditions, or allow or refuse " +
                        name + " whole");
    }
    return okStatus();
}

Status checkNoRemountWritableRulesHold(const SeccompPolicy& policy) {
    // As for the mode calls: among conditional rules for one call the order
    // is libseccomp's, so a policy's own condition on mount could decide
    // before the flags are looked at.
    for (const SyscallRule& r : policy.rules)
        if (!r.args.empty() && std::find(r.names.begin(), r.names.end(), "mount") != r.names.end())
            return Error::message(
                "the seccomp policy has its own argument conditions for mount, which stockade "
                "cannot combine with its refusal of remounting a read-only mount writable (the "
                "container may remount: CAP_SYS_ADMIN); remove the conditions, or allow or "
                "refuse mount whole");
    return okStatus();
}

void addNoRemountWritableRules(SeccompPolicy& policy) {
    std::vector<SyscallRule> added;
    added.push_back(
        rule({"mount"}, Action::Errno, EPERM,
             {ArgCondition{3, CompareOp::MaskedEqual, MS_REMOUNT | MS_RDONLY, MS_REMOUNT}}));
    // Every call that takes a struct mount_attr, in memory where seccomp
    // cannot look: mount_setattr, and open_tree_attr (Linux 6.15), which
    // clones a mount and clears its MOUNT_ATTR_RDONLY in one call (the
    // second review wrote through a read-only bind with it).
    static constexpr const char* kAttrCalls[] = {"mount_setattr", "open_tree_attr"};
    added.push_back(rule({kAttrCalls[0], kAttrCalls[1]}, Action::Errno, ENOSYS));
    for (SyscallRule& r : policy.rules)
        for (const char* call : kAttrCalls) std::erase(r.names, std::string(call));
    std::erase_if(policy.rules, [](const SyscallRule& r) { return r.names.empty(); });
    policy.rules.insert(policy.rules.begin(), added.begin(), added.end());
}

void addNoSetidRules(SeccompPolicy& policy) {
    // A file the sandbox creates lands on the host: in a root-owned worktree
    // (shown to the sandbox through an idmapped mount) it is root's on disk,
    // and a setuid bit on it is root's to anyone who runs it from the host's
    // path, where nosuid does not apply. So no call may set S_ISUID or
    // S_ISGID: the mode arguments are compared here, in the kernel, and the
    // answer is the EPERM a file's non-owner gets. File capabilities need
    // CAP_SETFCAP, which the sandbox never has. The mode is an int to the
    // kernel: the masks look at single bits, whatever the upper half holds.
    std::vector<SyscallRule> added;
    constexpr std::uint64_t kSetidBits[] = {S_ISUID, S_ISGID};
    auto refuseMode = [&](const char* name, unsigned mode_index,
                          std::vector<ArgCondition> also = {}) {
        for (std::uint64_t bit : kSetidBits) {
            std::vector<ArgCondition> args = also;
            args.push_back(ArgCondition{mode_index, CompareOp::MaskedEqual, bit, bit});
            added.push_back(rule({name}, Action::Errno, EPERM, std::move(args)));
        }
    };
    refuseMode("chmod", 1);
    refuseMode("fchmod", 1);
    refuseMode("fchmodat", 2);
    refuseMode("fchmodat2", 2);
    refuseMode("creat", 1);
    refuseMode("mknod", 1);
    refuseMode("mknodat", 2);
    // open and openat read their mode only when they create: O_CREAT, or
    // O_TMPFILE (whose own bit is __O_TMPFILE; linkat names the file later).
    // Without either, the mode register holds whatever the caller left there.
    constexpr std::uint64_t kTmpfileBit = 020000000;
    for (std::uint64_t creating : {std::uint64_t{O_CREAT}, kTmpfileBit}) {
        refuseMode("open", 2, {ArgCondition{1, CompareOp::MaskedEqual, creating, creating}});
        refuseMode("openat", 3, {ArgCondition{2, CompareOp::MaskedEqual, creating, creating}});
    }
    // openat2 passes its flags and mode in memory, where seccomp cannot look;
    // ENOSYS, as on kernels before 5.6, sends its callers back to openat.
    added.push_back(rule({"openat2"}, Action::Errno, ENOSYS));

    // First, so that no rule of a user's policy decides before them, and with
    // the policy's own say on openat2 taken away (two unconditional answers
    // for one call would not compile).
    for (SyscallRule& r : policy.rules) std::erase(r.names, std::string("openat2"));
    std::erase_if(policy.rules, [](const SyscallRule& r) { return r.names.empty(); });
    policy.rules.insert(policy.rules.begin(), added.begin(), added.end());
}

SeccompPolicy privilegedFileGuard() {
    SeccompPolicy policy;
    policy.default_action = Action::Allow;
    policy.default_errno = 0;
    addNoSetidRules(policy);
    // A new user namespace's root holds every capability there, CAP_SETFCAP
    // included, over the files whose owner it maps: a file capability it
    // writes through an idmapped mount names, as its root id, the disk id
    // the mount maps it to (disk root for a root-owned worktree or image),
    // and so holds on the host. clone's flags are argument 0 on x86_64, as
    // are unshare's; clone3 keeps its flags in memory, where seccomp cannot
    // look: ENOSYS, and glibc falls back to clone.
    policy.rules.push_back(
        rule({"clone", "unshare"}, Action::Errno, EPERM,
             {ArgCondition{0, CompareOp::MaskedEqual, CLONE_NEWUSER, CLONE_NEWUSER}}));
    policy.rules.push_back(rule({"clone3"}, Action::Errno, ENOSYS));
    // io_uring's OPENAT, OPENAT2 and MKDIRAT take a mode the rules above
    // never see (the calls are made by the kernel, not through the filter).
    policy.rules.push_back(
        rule({"io_uring_setup", "io_uring_enter", "io_uring_register"}, Action::Errno, EPERM));
    return policy;
}

SeccompPolicy defaultPolicy() {
    SeccompPolicy policy;
    policy.default_action = Action::Errno;
    policy.default_errno = EPERM;
    policy.newer_syscalls_enosys = true;

    policy.rules.push_back(rule(allowedEverywhere(), Action::Allow));

    // The kernel reads ioctl's command as 32 bits, so the comparison must
    // ignore the upper half or TIOCSTI | (1 << 32) slips through
    // (CVE-2019-10063). TIOCSTI pushes input into a terminal outside the
    // sandbox (CVE-2017-5226); TIOCLINUX can do the same on a console.
    // TIOCSETD attaches a line discipline, which the kernel may load as a
    // module (dev.tty.ldisc_autoload): n_hdlc's CVE-2017-2636 and others were
    // reached this way, and since every sandbox has ptys of its own (devpts)
    // no build or test needs it.
    policy.rules.push_back(rule({"ioctl"}, Action::Allow));
    for (std::uint64_t command :
         {std::uint64_t{TIOCSTI}, std::uint64_t{TIOCLINUX}, std::uint64_t{TIOCSETD}}) {
        policy.rules.push_back(
            rule({"ioctl"}, Action::Errno, EPERM,
                 {ArgCondition{1, CompareOp::MaskedEqual, 0xffffffffULL, command}}));
    }

    // Only the families a build or test needs: local, IP (inside an empty
    // network namespace), and netlink for getaddrinfo and ip(8). AF_PACKET,
    // AF_VSOCK (reaches the hypervisor's host) and the rest answer EPERM.
    for (int family : {AF_UNIX, AF_NETLINK}) {
        policy.rules.push_back(
            rule({"socket", "socketpair"}, Action::Allow, 0, {argEquals(0, family)}));
    }
    // IP with the protocols programs ask for by number: the default (0), TCP,
    // UDP, UDP-Lite and ICMP (unprivileged ping). Not MPTCP (IPPROTO_MPTCP,
    // 262): Landlock's TCP rules do not see it (it once got past a dev
    // server's "bind its port only, connect nowhere"), and no build needs it
    // (Go falls back to TCP on any error). Compared on all 64 bits, like the
    // family.
    for (int family : {AF_INET, AF_INET6}) {
        for (int protocol : {0, int{IPPROTO_TCP}, int{IPPROTO_UDP}, int{IPPROTO_UDPLITE},
                             family == AF_INET ? int{IPPROTO_ICMP} : int{IPPROTO_ICMPV6}}) {
            policy.rules.push_back(rule({"socket", "socketpair"}, Action::Allow, 0,
                                        {argEquals(0, family), argEquals(2, protocol)}));
        }
    }

    // TCP Fast Open from the client side connects inside sendto/sendmsg,
    // without connect(2), where Landlock's connect rule never looks, and
    // puts data in the SYN, which a host service with server TFO takes
    // before any handshake (the direct ingress's host sockets: runtime/
    // direct_ingress.h). Refused as a kernel with client TFO off refuses it
    // (EOPNOTSUPP), so programs fall back to connect. The flags are an int to the kernel: the mask
    // looks at the one bit whatever the upper half holds.
    for (const auto& [name, flags_index] :
         {std::pair{"sendto", 3u}, std::pair{"sendmsg", 2u}, std::pair{"sendmmsg", 3u}}) {
        policy.rules.push_back(
            rule({name}, Action::Errno, EOPNOTSUPP,
                 {ArgCondition{flags_index, CompareOp::MaskedEqual, MSG_FASTOPEN, MSG_FASTOPEN}}));
    }

    // personality(2) with anything but these turns off ASLR or changes how
    // the kernel reads the program; 0xffffffff only queries.
    for (std::uint64_t persona :
         {std::uint64_t{PER_LINUX}, std::uint64_t{PER_LINUX32}, std::uint64_t{UNAME26},
          std::uint64_t{PER_LINUX32} | std::uint64_t{UNAME26}, std::uint64_t{0xffffffff}}) {
        policy.rules.push_back(rule({"personality"}, Action::Allow, 0, {argEquals(0, persona)}));
    }

    // clone's flags are argument 0 on x86_64. Threads and fork are fine; a
    // new namespace is not. CLONE_NEWTIME cannot be asked for through clone.
    constexpr std::uint64_t kNamespaceFlags = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS |
                                              CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |
                                              CLONE_NEWNET;
    policy.rules.push_back(rule({"clone"}, Action::Allow, 0,
                                {ArgCondition{0, CompareOp::MaskedEqual, kNamespaceFlags, 0}}));

    // clone3 passes its flags in memory, where seccomp cannot look. ENOSYS
    // makes glibc (2.34+) fall back to clone, whose flags we can inspect.
    policy.rules.push_back(rule({"clone3"}, Action::Errno, ENOSYS));

    // Linux AIO contexts are counted against fs.aio-max-nr, one number for
    // the whole machine: one io_setup(65472) from a sandbox took all of it
    // until the run ended, and io_setup failed for every host process. No
    // per-sandbox bound exists, so the call answers as on a kernel built
    // without AIO (CONFIG_AIO=n), which libaio's users already handle; the
    // rest of the family needs a context and stays allowed.
    policy.rules.push_back(rule({"io_setup"}, Action::Errno, ENOSYS));

    addNoSetidRules(policy);

    for (const std::vector<std::string>& group : deniedGroups()) {
        policy.rules.push_back(rule(group, Action::Errno, EPERM));
    }
    return policy;
}

std::string_view actionName(Action action) {
    switch (action) {
        case Action::Allow:
            return "SCMP_ACT_ALLOW";
        case Action::Errno:
            return "SCMP_ACT_ERRNO";
        case Action::Kill:
            return "SCMP_ACT_KILL";
        case Action::KillProcess:
            return "SCMP_ACT_KILL_PROCESS";
        case Action::Trap:
            return "SCMP_ACT_TRAP";
        case Action::Log:
            return "SCMP_ACT_LOG";
        case Action::Notify:
            return "SCMP_ACT_NOTIFY";
    }
    return "SCMP_ACT_?";
}

std::string_view compareOpName(CompareOp op) {
    switch (op) {
        case CompareOp::NotEqual:
            return "SCMP_CMP_NE";
        case CompareOp::Less:
            return "SCMP_CMP_LT";
        case CompareOp::LessOrEqual:
            return "SCMP_CMP_LE";
        case CompareOp::Equal:
            return "SCMP_CMP_EQ";
        case CompareOp::GreaterOrEqual:
            return "SCMP_CMP_GE";
        case CompareOp::Greater:
            return "SCMP_CMP_GT";
        case CompareOp::MaskedEqual:
            return "SCMP_CMP_MASKED_EQ";
    }
    return "SCMP_CMP_?";
}

}  // namespace stockade::seccomp
