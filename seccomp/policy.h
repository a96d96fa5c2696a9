// A seccomp policy as plain data: what each system call gets, before any BPF
// exists. compileFilter() (filter.h) turns it into a program; importOciSeccomp()
// (oci_import.h) builds one from a Docker/OCI profile; defaultPolicy() is
// stockade's own. docs/seccomp.md states the default policy in prose.
//
// How a call is decided (compileFilter implements exactly this):
//  1. A call from another architecture, or with the x32 bit in its number,
//     kills the process.
//  2. A number above the highest one any rule names answers ENOSYS, so that
//     libraries fall back from calls newer than the policy (unless
//     `newer_syscalls_enosys` is off, or the default action allows anyway).
//  3. A rule with argument conditions that matches decides.
//  4. Otherwise the syscall's rule without conditions decides.
//  5. Otherwise `default_action` decides.
// Step 3 before 4 is what lets "allow ioctl, except TIOCSTI" be two rules;
// libseccomp alone would silently drop the exception.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace stockade::seccomp {

enum class Action {
    Allow,
    Errno,        // fail with the rule's errno, the call never runs
    Kill,         // kill the calling thread (SCMP_ACT_KILL)
    KillProcess,  // kill the whole process
    Trap,         // SIGSYS the caller, which may handle it
    Log,          // allow, and log to the audit log
    Notify,       // ask the supervisor over the seccomp listener fd
};

enum class CompareOp { NotEqual, Less, LessOrEqual, Equal, GreaterOrEqual, Greater, MaskedEqual };

// One test on the syscall's argument `index` (0..5), on all 64 bits:
// `arg OP value`, or for MaskedEqual `(arg & value) == value_two`, the operand
// order of libseccomp's SCMP_CMP_MASKED_EQ and of the OCI format.
struct ArgCondition {
    unsigned index = 0;
    CompareOp op = CompareOp::Equal;
    std::uint64_t value = 0;
    std::uint64_t value_two = 0;

    bool operator==(const ArgCondition&) const = default;
};

// `action` applies to each of `names` when all of `args` hold (an empty `args`
// always holds). Names are the kernel's ("newfstatat"); a name that does not
// exist on the native architecture is skipped (see filter.h).
struct SyscallRule {
    std::vector<std::string> names;
    Action action = Action::Allow;
    int errno_ret = 0;  // only for Action::Errno: 0..4095
    std::vector<ArgCondition> args;

    bool operator==(const SyscallRule&) const = default;
};

struct SeccompPolicy {
    Action default_action = Action::Errno;
    int default_errno = 1;  // EPERM; only for Action::Errno
    std::vector<SyscallRule> rules;
    // Step 2 above. On for every policy stockade builds or imports, as runc
    // does for OCI profiles, because EPERM from a call the policy has never
    // heard of makes glibc and language runtimes fail instead of falling back.
    bool newer_syscalls_enosys = true;

    bool operator==(const SeccompPolicy&) const = default;
};

// stockade's built-in default-deny policy (SPEC §3 G5).
SeccompPolicy defaultPolicy();

// Adds the refusals that keep the sandbox from creating setuid or setgid
// files (chmod, open, mknod and kin with S_ISUID or S_ISGID in the mode:
// EPERM; openat2, whose mode seccomp cannot read: ENOSYS). Part of
// defaultPolicy(); the runtime adds them to a user's policy too, since what
// a sandbox creates may land on the host (SPEC §3 G3). They go first, and
// any rule of the policy's own for openat2 is dropped.
void addNoSetidRules(SeccompPolicy& policy);

// A policy that allows everything but the ways a process makes a file
// that carries privilege on the host, for a sandbox whose files land as
// another owner (an idmapped mount: a root-owned worktree, an OCI image
// root): the no-setid rules above, a new user namespace (whose root could
// write a file capability valid on the host: EPERM; clone3: ENOSYS), and
// io_uring (whose open and mkdir take a mode no rule sees: EPERM). Laid
// after a user's or a spec's own filter (filter.h chainPrograms), so that
// neither's conditions are decided in an order set by the other's.
SeccompPolicy privilegedFileGuard();

// What a sandbox holding host sockets (the direct ingress's listener and the
// connections accepted from it, runtime/net/direct_ingress.h) must not do with
// them, refused with EPERM whatever the fd: TCP_FASTOPEN_CONNECT and
// TCP_FASTOPEN_NO_COOKIE (data in a SYN), SO_MEMINFO and SO_RXQ_OVFL (the
// drop counter, a port scan), SO_NETNS_COOKIE (which namespace), and the interface ioctls
// 0x8910-0x89ff and 0x8b00-0x8bff (the host's interfaces, addresses and neighbours).
void addHostSocketRefusals(SeccompPolicy& policy);

// `name` (a native call) sent to the supervisor's listener whatever its
// arguments: every rule that names it loses the name, and one Notify rule for
// it goes first. The supervisor then answers each such call itself (a dev
// server's listen(2) under the direct ingress, runtime/net/direct_ingress.h);
// without a listener the kernel answers ENOSYS.
void sendCallToSupervisor(SeccompPolicy& policy, const std::string& name);

// Where no network namespace holds (the lower tier, issue 18): socket(2) and
// socketpair(2) allowed for AF_UNIX streams and seqpackets only, and
// connect(2) not at all. Every rule that allows socket, socketpair or
// connect is dropped, so what is not allowed again falls to the policy's
// default, which must refuse (an error otherwise): AF_INET and AF_INET6 of
// every type (UDP and ICMP included, which Landlock does not see), netlink
// (the host's interfaces and routes), unix datagrams, and connecting to any
// unix socket by path, which would reach the host's (policy.cpp says why).
Status allowLocalSocketsOnly(SeccompPolicy& policy);

// Where no mount namespace holds (the lower tier): Landlock governs what
// may be read, written, made and removed beneath the view, but not a file's
// metadata, nor watching it (a red team changed the mode, times and xattrs
// of a host file outside the view, and watched a host directory's names):
// every call that changes metadata by path (chmod, chown, utimes with a
// path, *setxattr, *removexattr, file_setattr) is refused (EPERM), fd-only
// ones kept, and inotify and fanotify answer ENOSYS.
void refuseMetadataByPath(SeccompPolicy& policy);

// What keeps a container that may remount (CAP_SYS_ADMIN in its own user
// namespace, whose mounts the kernel does not lock) from making a read-only
// mount writable: mount(2) with MS_REMOUNT and without MS_RDONLY refused
// (EPERM; a remount that keeps or makes a mount read-only still works), and
// mount_setattr(2) and open_tree_attr(2), whose attributes seccomp cannot
// read, answering ENOSYS (as before Linux 5.12 and 6.15: libmount falls back
// to mount(2)). A new bind keeps its source's read-only flag, so binds stay
// allowed. They go first, and any rule of the policy's own for those two is
// dropped. A later call taking a struct mount_attr belongs here too.
void addNoRemountWritableRules(SeccompPolicy& policy);

// Whether addNoRemountWritableRules(policy) will hold as written: an error
// naming mount where the policy has its own argument conditions for it.
Status checkNoRemountWritableRulesHold(const SeccompPolicy& policy);

// Whether addNoSetidRules(policy) will hold as written: an error naming the
// call when the policy has its own argument conditions for one of the calls
// whose mode it reads (a conditional ALLOW on another argument could decide
// first). The runtime refuses such a policy rather than weaken the rule.
Status checkNoSetidRulesHold(const SeccompPolicy& policy);

// "SCMP_ACT_ALLOW"-style names, as the OCI format and libseccomp spell them.
std::string_view actionName(Action action);
std::string_view compareOpName(CompareOp op);

}  // namespace stockade::seccomp
