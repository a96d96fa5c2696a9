// The child side, from clone to the init loop, as one ordered list. Every
// function here is async-signal-safe: it reads the ChildPlan the parent
// allocated, makes system calls, and reports a failure as a fixed-size
// message; it never allocates, throws, locks or logs.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fd_passing.h"
#include "namespaces/landlock_in_child.h"
#include "namespaces/mount_in_child.h"
#include "namespaces/net_in_child.h"
#include "namespaces/uts_in_child.h"
#include "runtime/child_plan.h"
#include "runtime/child_protocol.h"
#include "runtime/command_in_child.h"
#include "runtime/privileges_in_child.h"
#include "runtime/userns_limits_in_child.h"

namespace stockade {

namespace {

[[noreturn]] void failSetupInChild(const ChildPlan& plan, ChildStage stage, int err,
                                   int op_index = -1, const char* call = nullptr) noexcept {
    ChildMessage msg{ChildMessageKind::SetupFailed, stage, err, op_index, 0, 0, {}};
    setCallInChild(msg, call);
    while (send(plan.sync_fd, &msg, sizeof(msg), MSG_NOSIGNAL) < 0 && errno == EINTR) {
    }
    _exit(125);
}

// A step that is one call: the message names it.
[[noreturn]] void failCallInChild(const ChildPlan& plan, ChildStage stage, const char* call,
                                  int err) noexcept {
    failSetupInChild(plan, stage, err, -1, call);
}

// init's own setup failed after the command was started: the command goes
// first, so that nothing of it outlives the refusal.
[[noreturn]] void failInitInChild(const ChildPlan& plan, pid_t command, ChildStage stage,
                                  const char* call, int err) noexcept {
    kill(command, SIGKILL);
    failCallInChild(plan, stage, call, err);
}

void wipeMemoryInChild(const ChildPlan& plan) noexcept {
    for (const ChildPlan::MemoryRange& range : plan.wipe_ranges)
        if (range.end > range.start)
            memset(reinterpret_cast<void*>(range.start), 0, range.end - range.start);
}

// Closes every fd the clone inherited from the supervisor (its terminal, its
// pipes' read ends, a caller's leaked fd) except those in `keep`; returns 0
// or an errno. An fd left open would be a way out (a host directory, the
// caller's terminal), so a failure ends the setup.
int closeInheritedFdsInChild(const ChildPlan& plan, FaultPoint point, int* keep,
                             int count) noexcept {
    if (faultInjected(point, plan.injected_fault)) return errno;
    for (int i = 1; i < count; ++i)  // insertion sort: count is tiny
        for (int j = i; j > 0 && keep[j - 1] > keep[j]; --j) {
            int t = keep[j];
            keep[j] = keep[j - 1];
            keep[j - 1] = t;
        }
    unsigned next = 0;
    for (int i = 0; i < count; ++i) {
        if (keep[i] < 0) continue;
        if (static_cast<unsigned>(keep[i]) > next &&
            syscall(SYS_close_range, next, static_cast<unsigned>(keep[i]) - 1, 0U) < 0)
            return errno;
        next = static_cast<unsigned>(keep[i]) + 1;
    }
    return syscall(SYS_close_range, next, ~0U, 0U) < 0 ? errno : 0;
}

// The supervisor's "go" and "placed" are one byte each on the sync socket.
bool waitForByteInChild(int sync_fd) noexcept {
    char byte = 0;
    ssize_t n;
    while ((n = recv(sync_fd, &byte, 1, 0)) < 0 && errno == EINTR) {
    }
    return n == 1;
}

bool supervisorGoneInChild(int sync_fd) noexcept {
    pollfd pfd{sync_fd, POLLIN, 0};
    return poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLHUP | POLLERR));
}

// A dev server's socket factory (runtime/service_hooks.h): each request byte
// ('4' or '6') is answered with an errno and, on success, a fresh TCP socket
// of this network namespace. init never connects, binds or reads them.
void answerSocketRequestsInChild(int channel) noexcept {
    char family;
    while (recv(channel, &family, 1, MSG_DONTWAIT) == 1) {
        int fd = socket(family == '6' ? AF_INET6 : AF_INET,
                        SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        int32_t err = fd < 0 ? errno : 0;
        sendWithFds(channel, &err, sizeof(err), &fd, fd >= 0 ? 1 : 0);
        if (fd >= 0) close(fd);
    }
}

// Forwards the signals a shell's job control would send, reaps every orphan
// that reparents to PID 1, and once the command has ended kills everything
// left in the namespace. Returns the command's wait status and the number of
// processes it had to kill.
[[noreturn]] void superviseCommandInChild(const ChildPlan& plan, pid_t command) noexcept {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGRTMIN, SIGIO})
        sigaddset(&set, sig);
    // A socket request raises SIGIO (O_ASYNC), taken here like the others;
    // blocked first, since its default action would end init.
    int factory = plan.socket_factory_fd;
    if (factory >= 0) {
        sigprocmask(SIG_BLOCK, &set, nullptr);
        fcntl(factory, F_SETOWN, getpid());
        fcntl(factory, F_SETFL, O_ASYNC | O_NONBLOCK);
        answerSocketRequestsInChild(factory);  // any sent before O_ASYNC
    }
    int command_status = 0;
    bool command_done = false;
    while (!command_done) {
        siginfo_t info;
        int sig = sigwaitinfo(&set, &info);
        if (sig < 0) continue;
        // SIGRTMIN from outside the namespace (si_pid 0: the sender has no
        // pid here) is the supervisor's "end it now" (timeout, output
        // limit, cancellation). From inside, it is just forwarded.
        if (sig == SIGRTMIN && info.si_pid == 0) break;
        if (sig == SIGIO) {
            if (factory >= 0) answerSocketRequestsInChild(factory);
            continue;
        }
        if (sig != SIGCHLD) {
            kill(command, sig);
            continue;
        }
        int status;
        pid_t pid;
        while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
            if (pid == command) {
                command_status = status;
                command_done = true;
            }
        }
    }
    // kill(-1) from PID 1 reaches every other process in the namespace; each
    // one still alive is a straggler, a zombie already dead is not.
    markInChild(plan, ChildPlan::kCommandEndedSlot);
    uint32_t stragglers = 0;
    kill(-1, SIGKILL);
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, __WALL)) > 0) {
        if (pid == command) {
            command_status = status;
            continue;
        }
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ++stragglers;
    }
    markInChild(plan, ChildPlan::kInitDoneSlot);
    ChildMessage msg{
        ChildMessageKind::Finished, ChildStage::Exec, 0, -1, command_status, stragglers};
    while (send(plan.sync_fd, &msg, sizeof(msg), MSG_NOSIGNAL) < 0 && errno == EINTR) {
    }
    _exit(WIFEXITED(command_status) ? WEXITSTATUS(command_status) : 128 + WTERMSIG(command_status));
}

// The command's stack until its execve: init's own is in use below init's
// frames, so the clone gets this one. Static, so it costs nothing until
// touched; init is suspended (CLONE_VFORK) while the command uses it.
alignas(64) char command_stack[128 * 1024];

void* commandStackTopInChild() noexcept {
    return command_stack + sizeof(command_stack);
}

int commandEntryInChild(void* plan) noexcept {
    execCommandInChild(*static_cast<ChildPlan*>(plan));
}

}  // namespace

[[noreturn]] void runChildInChild(ChildPlan& plan) noexcept {
    // 0. The network namespace, made by a helper on another CPU while this
    //    process builds the root (see ns::startNetworkNamespaceInChild).
    //    If the helper cannot be started, or fails, the child makes the
    //    namespace itself in step 6, as the clone would have.
    int net_helper = -1;
    if (plan.netns_fd_slot >= 0) net_helper = ns::startNetworkNamespaceInChild(plan.netns_fd_slot);

    // 1. Open every mount source while still the caller's identity: a root
    //    caller's sources may sit in directories only root can traverse
    //    (the sandbox's uid could not open them), and nothing of the sandbox
    //    runs yet. Mounts made private first, so nothing propagates back.
    //    Neither needs the id maps (the credentials are the caller's until
    //    the switch below), so both overlap the supervisor writing them.
    if (int err = ns::makeMountsPrivateInChild())
        failSetupInChild(plan, ChildStage::PrivateMounts, err);
    size_t failed_source = 0;
    if (int err = ns::openSourcesInChild(plan.mounts, &failed_source))
        failSetupInChild(plan, ChildStage::OpenSources, err, static_cast<int>(failed_source));
    markInChild(plan, static_cast<int>(ChildStage::OpenSources));

    // 2. Wait until the supervisor has written our uid/gid maps: before that
    //    we have no identity in the namespace and nothing we create has an owner.
    if (!waitForByteInChild(plan.sync_fd)) _exit(125);
    markInChild(plan, static_cast<int>(ChildStage::WaitForGo));

    // 3. Become the sandbox's uid/gid at once, keeping capabilities (within
    //    this user namespace only), so that even in the window before the
    //    command starts no process of the sandbox is host root.
    if (int err = keepCapabilitiesAcrossSetuidInChild())
        failCallInChild(plan, ChildStage::SetIds, "prctl(PR_SET_SECUREBITS, NO_SETUID_FIXUP)", err);
    if (setresgid(plan.ids.inside_gid, plan.ids.inside_gid, plan.ids.inside_gid) < 0)
        failCallInChild(plan, ChildStage::SetIds, "setresgid()", errno);
    if (setresuid(plan.ids.inside_uid, plan.ids.inside_uid, plan.ids.inside_uid) < 0)
        failCallInChild(plan, ChildStage::SetIds, "setresuid()", errno);
    markInChild(plan, static_cast<int>(ChildStage::SetIds));

    // 4. Die with the supervisor. Set after the uid change, which clears it
    //    (prctl(2)); then check the supervisor did not die before it was set.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
        failCallInChild(plan, ChildStage::ParentDeath, "prctl(PR_SET_PDEATHSIG, SIGKILL)", errno);
    if (supervisorGoneInChild(plan.sync_fd)) _exit(125);
    markInChild(plan, static_cast<int>(ChildStage::ParentDeath));

    //    The user namespace's own inotify maxima, while CAP_SYS_RESOURCE in
    //    it is still held (only its holder may lower them, and only until
    //    the command runs): counts are charged up to the caller's uid.
    if (int err = boundUserNamespaceInChild(plan.userns_bounds))
        failCallInChild(plan, ChildStage::UserNamespaceLimits,
                        "write(/proc/sys/user/max_inotify_*)", err);
    markInChild(plan, static_cast<int>(ChildStage::UserNamespaceLimits));

    // 5. The filesystem view. Sources were opened before the staging tmpfs
    //    covers anything; /proc is mounted inside the new root before the old
    //    root goes (see MountKind::Proc); the root is sealed read-only last.
    size_t failed_op = 0;
    if (int err = ns::buildRootInChild(plan.mounts, &failed_op))
        failSetupInChild(plan, ChildStage::BuildRoot, err, static_cast<int>(failed_op));
    markInChild(plan, static_cast<int>(ChildStage::BuildRoot));
    ns::closeSourcesInChild(plan.mounts);
    if (int err = ns::sealRootInChild(plan.mounts))
        failSetupInChild(plan, ChildStage::SealRoot, err);
    markInChild(plan, static_cast<int>(ChildStage::SealRoot));
    if (int err = ns::pivotRootInChild(plan.mounts))
        failSetupInChild(plan, ChildStage::PivotRoot, err);
    markInChild(plan, static_cast<int>(ChildStage::PivotRoot));

    // Landlock rules for paths that exist only in the new root (its tmpfs
    // mounts, /proc) can be added only now, by path inside it.
    size_t failed_rule = 0;
    if (int err = ns::addSandboxRulesInChild(plan.landlock, &failed_rule))
        failSetupInChild(plan, ChildStage::LandlockRules, err, -1);
    markInChild(plan, static_cast<int>(ChildStage::LandlockRules));

    // 6. The other namespaces' contents: the network namespace is joined
    //    before the fds are closed, since the helper's live in this table.
    bool joined =
        net_helper >= 0 && ns::joinNetworkNamespaceInChild(net_helper, plan.netns_fd_slot) == 0;
    if (plan.netns_fd_slot >= 0 && !joined && unshare(CLONE_NEWNET) < 0)
        failCallInChild(plan, ChildStage::Loopback, "unshare(CLONE_NEWNET)", errno);
    if (!joined)
        if (int err = ns::bringLoopbackUpInChild())
            failSetupInChild(plan, ChildStage::Loopback, err);
    markInChild(plan, static_cast<int>(ChildStage::Loopback));

    int keep[] = {plan.sync_fd,
                  plan.stdout_fd,
                  plan.stderr_fd,
                  plan.stdin_null ? -1 : 0,
                  plan.landlock.ruleset.get(),
                  plan.listener_socket_fd,
                  plan.socket_factory_fd};
    if (int err = closeInheritedFdsInChild(plan, FaultPoint::CloseFds, keep, 7))
        failCallInChild(plan, ChildStage::CloseFds, "close_range()", err);

    if (int err = ns::setHostnameInChild(plan.hostname.c_str(), plan.hostname.size()))
        failSetupInChild(plan, ChildStage::Hostname, err);

    // 7. init may not be read or traced by the command: non-dumpable, and the
    //    caller's argv and environment (inherited in this copy of the
    //    supervisor's memory) wiped.
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        failCallInChild(plan, ChildStage::Dumpable, "prctl(PR_SET_DUMPABLE, 0)", errno);
    wipeMemoryInChild(plan);
    markInChild(plan, static_cast<int>(ChildStage::WipeMemory));

    // 8. Into the sandbox's cgroups (v1: the supervisor made the leaves
    //    while we built the root and sends their `tasks` fds with "placed";
    //    v2: we were born in the leaf), then the cgroup namespace, so its
    //    root is them; nothing of the command runs before that.
    if (int err = joinCgroupsInChild(plan.sync_fd)) {
        if (err < 0) _exit(125);
        failSetupInChild(plan, ChildStage::JoinCgroups, err);
    }
    markInChild(plan, static_cast<int>(ChildStage::JoinCgroups));
    if (unshare(CLONE_NEWCGROUP) < 0)
        failCallInChild(plan, ChildStage::CgroupNamespace, "unshare(CLONE_NEWCGROUP)", errno);
    markInChild(plan, static_cast<int>(ChildStage::CgroupNamespace));

    // 9. The command, started as posix_spawn starts one: it shares init's
    //    memory until its execve (CLONE_VM), and init waits until then
    //    (CLONE_VFORK), so none of init's page tables are copied and
    //    neither side pays copy-on-write faults. glibc's clone(3), not
    //    fork(3): no atfork handlers, no malloc locks. Everything the
    //    command does before execve is its own (fd table, credentials,
    //    signal dispositions: no CLONE_FILES, CLONE_SIGHAND or CLONE_THREAD).
    pid_t command = clone(commandEntryInChild, commandStackTopInChild(),
                          CLONE_VM | CLONE_VFORK | SIGCHLD, &plan);
    if (command < 0)
        failCallInChild(plan, ChildStage::ForkCommand, "clone(CLONE_VM|CLONE_VFORK)", errno);
    markInChild(plan, static_cast<int>(ChildStage::ForkCommand));

    // 10. init keeps only the sync socket (and a dev server's socket
    //    factory): no host fd, not even the output pipes, whose EOF must
    //    mean the command's whole tree is done.
    //    A failure here would leave init holding what the command has shed
    //    (host fds, capabilities in the namespace): the command is killed
    //    (init's exit takes the whole namespace with it) and the run is
    //    refused, never kept.
    int keep_sync[] = {plan.sync_fd, plan.socket_factory_fd};
    if (int err = closeInheritedFdsInChild(plan, FaultPoint::InitCloseFds, keep_sync, 2))
        failInitInChild(plan, command, ChildStage::InitCloseFds, "close_range()", err);
    int failed_step = 0;
    int err = faultInjected(FaultPoint::InitDropPrivileges, plan.injected_fault)
                  ? errno
                  : dropAllPrivilegesInChild(plan.last_cap, &failed_step);
    if (err)
        failInitInChild(
            plan, command, ChildStage::InitDropPrivileges,
            failed_step == 0 ? "prctl(PR_SET_SECUREBITS)" : "capset() and the bounding set", err);
    err = faultInjected(FaultPoint::InitNoNewPrivs, plan.injected_fault) ? errno
                                                                         : setNoNewPrivsInChild();
    if (err)
        failInitInChild(plan, command, ChildStage::InitNoNewPrivs, "prctl(PR_SET_NO_NEW_PRIVS)",
                        err);
    superviseCommandInChild(plan, command);
}

}  // namespace stockade
