// The child side, from clone to execve: the setup table (runtime/child/child_setup.h)
// and the one runner that walks it for run, check and bench. Every function
// here is async-signal-safe: it reads the ChildPlan the parent allocated,
// makes system calls, and reports a failure as a fixed-size message; it
// never allocates, throws, locks or logs. The table is constexpr data and
// plain function pointers, so walking it is a loop over read-only memory.
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>

#include "base/fd_passing.h"
#include "namespaces/call_note_in_child.h"
#include "namespaces/landlock_in_child.h"
#include "namespaces/mount_in_child.h"
#include "namespaces/net_in_child.h"
#include "namespaces/syscalls.h"
#include "namespaces/uts_in_child.h"
#include "runtime/child/child_plan.h"
#include "runtime/child/child_protocol.h"
#include "runtime/child/child_setup.h"
#include "runtime/child/command_in_child.h"
#include "runtime/child/command_signals_in_child.h"
#include "runtime/child/descendants_in_child.h"
#include "runtime/child/hooks_in_child.h"
#include "runtime/child/privileges_in_child.h"
#include "runtime/child/userns_limits_in_child.h"

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
    // Each range closed is named when it fails: close_range(3, 6, 0).
    auto closeRange = [&](unsigned first, unsigned last) noexcept {
        if (!faultInjected(point, plan.injected_fault) &&
            syscall(SYS_close_range, first, last, 0U) == 0)
            return 0;
        ns::CallNote& note = ns::noteCallInChild("close_range").number(first);
        (last == ~0U ? note.arg("~0U") : note.number(last)).arg("0");
        return note.done(errno);
    };
    for (int i = 1; i < count; ++i)  // insertion sort: count is tiny
        for (int j = i; j > 0 && keep[j - 1] > keep[j]; --j) {
            int t = keep[j];
            keep[j] = keep[j - 1];
            keep[j - 1] = t;
        }
    unsigned next = 0;
    for (int i = 0; i < count; ++i) {
        if (keep[i] < 0) continue;
        if (static_cast<unsigned>(keep[i]) > next)
            if (int err = closeRange(next, static_cast<unsigned>(keep[i]) - 1)) return err;
        next = static_cast<unsigned>(keep[i]) + 1;
    }
    return closeRange(next, ~0U);
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

// A dev server's socket factory (runtime/supervisor/service_hooks.h): each request byte
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
    // An OCI container's: blocked since before the clone (create's mask).
    if (plan.container_signals) set = containerInitSignals();
    // As the namespace's PID 1, the command would take only what it catches.
    const bool as_pid1 = plan.initStandsForPid1();
    const CommandProcFiles command_files =
        as_pid1 ? openCommandProcFilesInChild(command) : CommandProcFiles{};
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
        // limit, cancellation). From inside, it is just forwarded. The lower
        // tier has no namespace: the supervisor is told by its pid (the
        // command cannot forge that, and under Landlock's signal scope
        // cannot signal init at all).
        if (sig == SIGRTMIN && !plan.container_signals &&
            (info.si_pid == 0 || (plan.lower_tier && info.si_pid == plan.supervisor_pid)))
            break;
        if (sig == SIGIO && factory >= 0) {
            answerSocketRequestsInChild(factory);
            continue;
        }
        if (sig == SIGIO && !plan.container_signals) continue;
        if (sig != SIGCHLD) {
            if (!as_pid1 || commandTakesSignalInChild(command_files, sig)) kill(command, sig);
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
    if (plan.lower_tier || plan.pid_ns_joined) {
        // Not PID 1: kill(-1) would reach every process of this uid on the
        // host (or in the joined pid namespace). What is left of the
        // command's tree is init's children (it is their subreaper), killed
        // round by round.
        stragglers = killAllChildrenInChild(-1, command, &command_status);
    } else {
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
    }
    markInChild(plan, ChildPlan::kInitDoneSlot);
    ChildMessage msg{
        ChildMessageKind::Finished, ChildStage::Exec, 0, -1, command_status, stragglers};
    while (send(plan.sync_fd, &msg, sizeof(msg), MSG_NOSIGNAL) < 0 && errno == EINTR) {
    }
    _exit(WIFEXITED(command_status) ? WEXITSTATUS(command_status) : 128 + WTERMSIG(command_status));
}

// ------------------------------------------------------------ the steps
//
// Each step returns 0, an errno, or kSupervisorGone (the supervisor hung up:
// nothing to report to, the child just ends). A step that knows more than
// its errno says it through StepState: the mount op, the call, or another
// stage to name.

constexpr int kSupervisorGone = -1;

struct StepState {
    int op_index = -1;           // the mount op that failed
    const char* call = nullptr;  // the call that failed, when the step says
    bool renamed = false;        // the failure is named as `named_stage`
    ChildStage named_stage = ChildStage::Exec;
    int net_helper = -1;  // init: the network namespace's helper, or -errno
    pid_t command = -1;   // init: the command, once started
};

int failedCall(StepState& state, const char* call, int err) noexcept {
    state.call = call;
    return err;
}

int startNetworkHelperInChild(ChildPlan& plan, StepState& state) noexcept {
    // A helper that cannot be started, or fails, is not a failure: the child
    // then makes the namespace itself (Loopback), as the clone would have.
    if (plan.netns_fd_slot >= 0)
        state.net_helper = ns::startNetworkNamespaceInChild(plan.netns_fd_slot, plan.every_port);
    else if (plan.bring_up_loopback && plan.every_port)
        ns::allowEveryPortInChild(-1);  // the clone's own namespace (a service's), host /proc
    return 0;
}

int privateMountsInChild(ChildPlan&, StepState&) noexcept {
    return ns::makeMountsPrivateInChild();
}

// Whether `fd` (the host's /dev/null, opened or cloned by path) is the
// null device by its numbers, 1:3; 0 or ENODEV, noted.
int hostNullJudgedInChild(int fd) noexcept {
    struct stat st {};
    if (fstat(fd, &st) < 0 || !S_ISCHR(st.st_mode) || st.st_rdev != makedev(1, 3))
        return ns::noteCallInChild("fstat").path("/dev/null").arg("not the 1:3 node").done(ENODEV);
    return 0;
}

int openSourcesInChild(ChildPlan& plan, StepState& state) noexcept {
    // A terminal init's stdio: the host's null device, judged by its
    // numbers (ChildPlan::null_fd).
    if (plan.console_socket_fd >= 0) {
        plan.null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (plan.null_fd < 0)
            return ns::noteCallInChild("open").path("/dev/null").arg("O_RDWR").done(errno);
        if (int err = hostNullJudgedInChild(plan.null_fd)) return err;
    }
    // createContainer hooks: root.path, where they find the built root,
    // opened now as the caller (the container's ids may not reach it) and
    // before the staging mount covers anything.
    ChildHookList& hooks = plan.create_container_hooks;
    if (!hooks.hooks.empty() && !hooks.root_path.empty()) {
        open_how how{};
        how.flags = O_PATH | O_CLOEXEC | O_DIRECTORY;
        how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
        hooks.root_fd = ns::sysOpenat2(AT_FDCWD, hooks.root_path.c_str(), &how);
        if (hooks.root_fd < 0)
            return ns::noteCallInChild("openat2")
                .path(hooks.root_path.c_str())
                .arg("RESOLVE_NO_SYMLINKS")
                .done(errno);
        struct stat host_side {};
        if (!hooks.uncover.empty()) {
            if (lstat(hooks.uncover.c_str(), &host_side) < 0)
                return ns::noteCallInChild("lstat").path(hooks.uncover.c_str()).done(errno);
            hooks.uncover_dev = host_side.st_dev;
            hooks.uncover_ino = host_side.st_ino;
        }
    }
    size_t failed = 0;
    int err = ns::openSourcesInChild(plan.mounts, &failed);
    if (err) state.op_index = static_cast<int>(failed);
    return err;
}

int waitForGoInChild(ChildPlan& plan, StepState&) noexcept {
    return waitForByteInChild(plan.sync_fd) ? 0 : kSupervisorGone;
}

int setIdsInChild(ChildPlan& plan, StepState& state) noexcept {
    // Rootless in the lower tier the process already is the caller, the
    // only id it may have (and keeping capabilities needs CAP_SETPCAP).
    if (plan.lower_tier && !plan.lower_tier_privileged) return 0;
    if (int err = keepCapabilitiesAcrossSetuidInChild())
        return failedCall(state, "prctl(PR_SET_SECUREBITS, NO_SETUID_FIXUP)", err);
    const long gid = plan.ids.inside_gid, uid = plan.ids.inside_uid;
    if (setresgid(plan.ids.inside_gid, plan.ids.inside_gid, plan.ids.inside_gid) < 0)
        return ns::noteCallInChild("setresgid").number(gid).number(gid).number(gid).done(errno);
    if (setresuid(plan.ids.inside_uid, plan.ids.inside_uid, plan.ids.inside_uid) < 0)
        return ns::noteCallInChild("setresuid").number(uid).number(uid).number(uid).done(errno);
    return 0;
}

int parentDeathInChild(ChildPlan& plan, StepState& state) noexcept {
    // init not PID 1 of a pid namespace of its own (an OCI container's
    // joined one): what a double fork orphans comes back to it, not to the
    // namespace's init (another container's), and is killed at the end.
    if (plan.pid_ns_joined && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
        return failedCall(state, "prctl(PR_SET_CHILD_SUBREAPER, 1)", errno);
    // An OCI container outlives the runtime that created it: its life is
    // its caller's subreaper's to end (kill, delete), not tied to `create`.
    // Its init leads a session of its own, as runc's does: conmon ends a
    // container past --timeout with kill(-getpgid(pid)), which aimed at
    // the caller's group would kill conmon and leave the container up.
    if (!plan.die_with_parent) {
        if (setsid() < 0) return failedCall(state, "setsid()", errno);
        return 0;
    }
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
        return failedCall(state, "prctl(PR_SET_PDEATHSIG, SIGKILL)", errno);
    // The lower tier's init is the command tree's subreaper: what a
    // double fork orphans comes back to it, not to the host's init, and is
    // killed at the end (runtime/child/descendants_in_child.h).
    if (plan.lower_tier && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
        return failedCall(state, "prctl(PR_SET_CHILD_SUBREAPER, 1)", errno);
    return supervisorGoneInChild(plan.sync_fd) ? kSupervisorGone : 0;
}

int userNamespaceLimitsInChild(ChildPlan& plan, StepState& state) noexcept {
    if (int err = boundUserNamespaceInChild(plan.userns_bounds))
        return failedCall(state, "write(/proc/sys/user/max_inotify_*)", err);
    return 0;
}

int buildRootInChild(ChildPlan& plan, StepState& state) noexcept {
    if (faultInjected(FaultPoint::MountProc, plan.injected_fault))
        ns::injectProcMountFailureInChild(errno);
    size_t failed = 0;
    if (int err = ns::buildRootInChild(plan.mounts, &failed)) {
        state.op_index = static_cast<int>(failed);
        return err;
    }
    ns::closeSourcesInChild(plan.mounts);
    return 0;
}

int sealRootInChild(ChildPlan& plan, StepState&) noexcept {
    return ns::sealRootInChild(plan.mounts);
}

// The createContainer hooks' message: which hook, how it ended, what it
// said (runtime/child/hooks_in_child.h).
char hook_note[ns::kCallNoteSize];

// Sets the propagation of the built root (held by fd, so that a mount a
// hook stacks on it is beneath it, not in its place) and of every mount
// beneath it; 0 or an errno.
int rootPropagationInChild(int root, uint64_t propagation) noexcept {
    mount_attr attr{};
    attr.propagation = propagation;
    return ns::sysMountSetattr(root, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr) < 0 ? errno : 0;
}

// An OCI container's createContainer hooks (none for everything else): the
// root is built at root.path (the staging directory), not yet sealed, and
// the host's tree is still this mount namespace's, so each hook's path is
// the host's, run in the container's user, mount, network, IPC and UTS
// namespaces with init's credentials, as runc's init runs them before its
// pivot_root. Each is PID 1 of a pid namespace of its own inside the
// container's, so that nothing it starts outlives it holding the host's
// root. create gone (the sync socket hung up) ends the hook and init.
int createContainerHooksInChild(ChildPlan& plan, StepState& state) noexcept {
    ChildHookList& list = plan.create_container_hooks;
    if (list.hooks.empty()) return 0;
    // The built root, mounts and all, cloned onto root.path (held since
    // OpenSources, so no path is resolved through the staging mount):
    // what a hook reads and writes there is the container's root, writable
    // as it is before it is sealed (runc seals it after these hooks too).
    // It goes with the host's tree at pivot_root. The built root is made
    // shared first, so that the clone joins its mounts' peer groups: what a
    // hook mounts or unmounts beneath root.path reaches the container's root
    // (runc's hooks run in the container's own mount namespace), and is
    // made private again before anything else is mounted.
    int root = -1;
    if (list.root_fd >= 0) {
        root = open(plan.mounts.staging.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0) return failedCall(state, "open(the new root, O_PATH)", errno);
        int err = rootPropagationInChild(root, MS_SHARED);
        int tree =
            err ? -1
                : ns::sysOpenTree(
                      root, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
        const char* call = err        ? "mount_setattr(the new root, MS_SHARED, AT_RECURSIVE)"
                           : tree < 0 ? "open_tree(the new root, OPEN_TREE_CLONE)"
                                      : "move_mount(the new root's clone, root.path)";
        if (!err && tree < 0) err = errno;
        if (!err && ns::sysMoveMount(tree, "", list.root_fd, "",
                                     MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
            err = errno;
        if (tree >= 0) close(tree);
        if (err) {
            close(root);
            return failedCall(state, call, err);
        }
    }
    int err = runHooksInChild(plan.create_container_hooks, getpid(), hook_note, sizeof(hook_note),
                              plan.sync_fd);
    // Every hook's namespace is gone, but the clone at root.path is still a
    // peer: nothing sealed or masked from here may propagate to it, and
    // pivot_root refuses a shared root (or a root stacked on a shared one).
    int private_err = root >= 0 && !err ? rootPropagationInChild(root, MS_PRIVATE) : 0;
    if (root >= 0) close(root);
    if (err == kHooksWatchHungUp) return kSupervisorGone;
    if (err) {
        state.call = hook_note;
        return err;
    }
    if (private_err)
        return failedCall(state, "mount_setattr(the new root, MS_PRIVATE, AT_RECURSIVE)",
                          private_err);
    return 0;
}

int pivotRootInChild(ChildPlan& plan, StepState&) noexcept {
    // A command's own /proc masks its files with the host's null device
    // after pivot_root, when only a detached clone can still be attached;
    // cloned last, so that it is listed after the root's mounts in
    // mountinfo (Linux 6.8+ lists them by mount id): the root first.
    if (plan.command_pid_ns) {
        plan.null_tree_fd =
            ns::sysOpenTree(AT_FDCWD, "/dev/null", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
        if (plan.null_tree_fd < 0)
            return ns::noteCallInChild("open_tree")
                .path("/dev/null")
                .arg("OPEN_TREE_CLONE")
                .done(errno);
        if (int err = hostNullJudgedInChild(plan.null_tree_fd)) return err;
    }
    return ns::pivotRootInChild(plan.mounts);
}

int landlockRulesInChild(ChildPlan& plan, StepState&) noexcept {
    size_t failed_rule = 0;
    return ns::addSandboxRulesInChild(plan.landlock, &failed_rule);
}

int loopbackInChild(ChildPlan& plan, StepState& state) noexcept {
    bool joined = state.net_helper >= 0 &&
                  ns::joinNetworkNamespaceInChild(state.net_helper, plan.netns_fd_slot) == 0;
    if (plan.netns_fd_slot >= 0 && !joined && unshare(CLONE_NEWNET) < 0)
        return failedCall(state, "unshare(CLONE_NEWNET)", errno);
    if (joined || !plan.bring_up_loopback) return 0;
    return ns::bringLoopbackUpInChild();
}

int closeFdsInChild(ChildPlan& plan, StepState& state) noexcept {
    int keep[] = {plan.sync_fd,
                  plan.stdout_fd,
                  plan.stderr_fd,
                  plan.stdin_null ? -1 : 0,
                  plan.landlock.ruleset.get(),
                  plan.listener_socket_fd,
                  plan.socket_factory_fd,
                  plan.start_fifo_read_fd,
                  plan.start_fifo_write_fd,
                  plan.held_by_init_fd,
                  plan.console_socket_fd,
                  plan.null_fd,
                  plan.null_tree_fd};
    (void)state;  // the call is noted by closeInheritedFdsInChild
    if (int err = closeInheritedFdsInChild(plan, FaultPoint::CloseFds, keep, 13)) return err;
    if (plan.console_socket_fd < 0) return 0;
    // An OCI terminal: the command's stdio is the pty, so the caller's own
    // is nobody's in the container, and init, blocked in the command's
    // vfork until `start`, must not hold it: containerd's shim reads
    // create's output pipe to its end before it answers, and would never
    // send `start` (runc gives its init none either).
    for (int fd = 0; fd < 3; ++fd)
        if (plan.null_fd != fd && dup2(plan.null_fd, fd) < 0)
            return ns::noteCallInChild("dup2").number(plan.null_fd).number(fd).done(errno);
    return 0;
}

int hostnameInChild(ChildPlan& plan, StepState&) noexcept {
    // An OCI container without either: its UTS namespace as it came.
    if (plan.hostname.empty() && !plan.set_domainname) return 0;
    return ns::setHostnameInChild(plan.hostname.c_str(), plan.hostname.size(),
                                  plan.set_domainname ? plan.domainname.c_str() : nullptr,
                                  plan.domainname.size(),
                                  faultInjected(FaultPoint::Hostname, plan.injected_fault));
}

int dumpableInChild(ChildPlan&, StepState& state) noexcept {
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        return failedCall(state, "prctl(PR_SET_DUMPABLE, 0)", errno);
    return 0;
}

int wipeMemoryStepInChild(ChildPlan& plan, StepState&) noexcept {
    wipeMemoryInChild(plan);
    return 0;
}

int joinCgroupsStepInChild(ChildPlan& plan, StepState& state) noexcept {
    int err = joinCgroupsInChild(plan.sync_fd);
    if (err < 0) return kSupervisorGone;
    return err ? failedCall(state, "write(each v1 leaf's tasks fd, \"0\")", err) : 0;
}

int cgroupNamespaceInChild(ChildPlan&, StepState& state) noexcept {
    if (unshare(CLONE_NEWCGROUP) < 0) return failedCall(state, "unshare(CLONE_NEWCGROUP)", errno);
    return 0;
}

int commandEntryInChild(void* plan) noexcept;

// The command's stack until its execve: init's own is in use below init's
// frames, so the clone gets this one. Static, so it costs nothing until
// touched; init is suspended (CLONE_VFORK) while the command uses it.
alignas(64) char command_stack[128 * 1024];

int forkCommandInChild(ChildPlan& plan, StepState& state) noexcept {
    // As posix_spawn starts one: the command shares init's memory until its
    // execve (CLONE_VM), and init waits until then (CLONE_VFORK), so none of
    // init's page tables are copied and neither side pays copy-on-write
    // faults. glibc's clone(3), not fork(3): no atfork handlers, no malloc
    // locks. Everything the command does before execve is its own (fd table,
    // credentials, signal dispositions: no CLONE_FILES, CLONE_SIGHAND or
    // CLONE_THREAD).
    // An OCI container's command: PID 1 of a pid namespace of its own
    // (ChildPlan::command_pid_ns), the first process born in it.
    if (plan.command_pid_ns && unshare(CLONE_NEWPID) < 0)
        return failedCall(state, "unshare(CLONE_NEWPID)", errno);
    state.command = clone(commandEntryInChild, command_stack + sizeof(command_stack),
                          CLONE_VM | CLONE_VFORK | SIGCHLD, &plan);
    if (state.command < 0) return failedCall(state, "clone(CLONE_VM|CLONE_VFORK)", errno);
    return 0;
}

int commandProcInChild(ChildPlan& plan, StepState& state) noexcept {
    if (!plan.command_pid_ns) return 0;
    size_t failed = 0;
    int err = ns::remountProcsInChild(plan.mounts, plan.null_tree_fd, &failed);
    if (err && failed != static_cast<size_t>(-1)) state.op_index = static_cast<int>(failed);
    return err;
}

int newSessionInChild(ChildPlan&, StepState& state) noexcept {
    resetSignalsInChild();
    if (setsid() < 0) return failedCall(state, "setsid()", errno);
    return 0;
}

int stdioInChild(ChildPlan& plan, StepState&) noexcept {
    return setupStdioInChild(plan);
}

int workdirInChild(ChildPlan& plan, StepState&) noexcept {
    return chdir(plan.workdir.c_str()) < 0
               ? ns::noteCallInChild("chdir").path(plan.workdir.c_str()).done(errno)
               : 0;
}

int rlimitsInChild(ChildPlan& plan, StepState&) noexcept {
    for (const RlimitSetting& limit : plan.rlimits)
        if (setrlimit(static_cast<__rlimit_resource>(limit.resource), &limit.value) < 0)
            return ns::noteCallInChild("setrlimit")
                .number(limit.resource)
                .number(static_cast<long>(limit.value.rlim_cur))
                .number(static_cast<long>(limit.value.rlim_max))
                .done(errno);
    return 0;
}

int personalityInChild(ChildPlan& plan, StepState&) noexcept {
    if (plan.personality < 0) return 0;
    const unsigned long persona = static_cast<unsigned long>(plan.personality);
    if (personality(persona) < 0)
        return ns::noteCallInChild("personality").number(plan.personality).done(errno);
    // Read back: a kernel that does not know the domain keeps the old one
    // without an error on some architectures.
    if (static_cast<unsigned long>(personality(0xffffffff)) != persona)
        return ns::noteCallInChild("personality").number(plan.personality).done(EINVAL);
    return 0;
}

int closeOnExecInChild(ChildPlan&, StepState&) noexcept {
    // Marked rather than closed, so the sync socket still carries an exec
    // failure; only 0-2 cross the execve.
    return syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) < 0
               ? ns::noteCallInChild("close_range")
                     .number(3)
                     .arg("~0")
                     .arg("CLOSE_RANGE_CLOEXEC")
                     .done(errno)
               : 0;
}

int dropCapabilitiesInChild(ChildPlan& plan, StepState& state) noexcept {
    if (plan.lower_tier && !plan.lower_tier_privileged)
        if (int err = dropUnprivilegedInChild())
            return failedCall(state, "prctl(PR_CAP_AMBIENT_CLEAR_ALL) or capset(all empty)", err);
    if (plan.lower_tier && !plan.lower_tier_privileged) return 0;
    int failed_step = 0;
    int err = plan.keep_capabilities
                  ? keepOnlyCapabilitiesInChild(plan.last_cap, plan.capabilities, &failed_step)
                  : dropAllPrivilegesInChild(plan.last_cap, &failed_step);
    if (err && failed_step == 0) {
        state.renamed = true;
        state.named_stage = ChildStage::Securebits;
        return failedCall(state, "prctl(PR_SET_SECUREBITS)", err);
    }
    if (err)
        return failedCall(state,
                          plan.keep_capabilities
                              ? "prctl(PR_CAPBSET_DROP), prctl(PR_CAP_AMBIENT) or capset()"
                              : "prctl(PR_CAPBSET_DROP, each capability) or capset(all empty)",
                          err);
    return err;
}

int noNewPrivsInChild(ChildPlan& plan, StepState& state) noexcept {
    int err =
        faultInjected(FaultPoint::NoNewPrivs, plan.injected_fault) ? errno : setNoNewPrivsInChild();
    if (err) return failedCall(state, "prctl(PR_SET_NO_NEW_PRIVS, 1)", err);
    return 0;
}

int landlockRestrictInChild(ChildPlan& plan, StepState&) noexcept {
    return ns::restrictSelfInChild(plan.landlock);
}

int findExecutableStepInChild(ChildPlan& plan, StepState&) noexcept {
    return findExecutableInChild(plan);
}

// Parked: the supervisor hears that the setup is complete, and answers one
// byte once the container's record and pid file are written; a `create`
// that died before (the socket hung up) leaves no container to start, so
// the command ends. Then it blocks on the exec FIFO until `start` writes to
// it. The write end held here keeps the read from seeing EOF; both close
// at the execve.
int awaitStartInChild(ChildPlan& plan, StepState& state) noexcept {
    if (plan.start_fifo_read_fd < 0) return 0;
    reportInChild(plan, ChildMessageKind::Parked, ChildStage::AwaitStart, 0, -1);
    if (!waitForByteInChild(plan.sync_fd)) return kSupervisorGone;
    char byte;
    ssize_t n;
    while ((n = read(plan.start_fifo_read_fd, &byte, 1)) < 0 && errno == EINTR) {
    }
    if (n != 1) return failedCall(state, "read(exec fifo)", n < 0 ? errno : EPIPE);
    return 0;
}

int seccompInChild(ChildPlan& plan, StepState&) noexcept {
    return installSeccompInChild(plan);
}

// An OCI container's startContainer hooks (none for everything else), after
// `start` released the command and its filter is installed, as runc runs
// them: each path resolved in the container's root, each hook a child of
// the command with all it is held by (ids, capabilities, no_new_privs,
// Landlock, the filter). The state's pid is the container's PID 1 as its
// pid namespace numbers it: the command itself when it is PID 1 of its own
// (ChildPlan::command_pid_ns, where init, a level up, has no number), init
// otherwise. A failure is also said on the container's stderr, the one
// place a client shows after `start` has returned.
int startContainerHooksInChild(ChildPlan& plan, StepState& state) noexcept {
    const pid_t pid1 = plan.command_pid_ns ? getpid() : getppid();
    int err = runHooksInChild(plan.start_container_hooks, pid1, hook_note, sizeof(hook_note), -1);
    if (err) {
        state.call = hook_note;
        char line[sizeof(hook_note) + 16];
        size_t n = 0;
        for (const char* p = "stockade: "; *p; ++p) line[n++] = *p;
        for (const char* p = hook_note; *p && n + 2 < sizeof(line); ++p) line[n++] = *p;
        line[n++] = '\n';
        (void)!write(STDERR_FILENO, line, n);
    }
    return err;
}

int execInChild(ChildPlan& plan, StepState&) noexcept {
    return execSearchInChild(plan);  // returns only when it failed
}

int initCloseFdsInChild(ChildPlan& plan, StepState& state) noexcept {
    // init keeps only the sync socket (and a dev server's socket factory):
    // no host fd, not even the output pipes, whose EOF must mean the
    // command's whole tree is done.
    int keep[] = {plan.sync_fd, plan.socket_factory_fd, plan.held_by_init_fd};
    (void)state;  // the call is noted by closeInheritedFdsInChild
    return closeInheritedFdsInChild(plan, FaultPoint::InitCloseFds, keep, 3);
}

int initDropPrivilegesInChild(ChildPlan& plan, StepState& state) noexcept {
    if (plan.lower_tier && !plan.lower_tier_privileged) {
        if (int err = dropUnprivilegedInChild()) return failedCall(state, "capset()", err);
        return 0;
    }
    int failed_step = 0;
    int err = 0;
    if (faultInjected(FaultPoint::InitDropPrivileges, plan.injected_fault)) {
        err = errno;
    } else if (plan.initStandsForPid1() || plan.command_pid_ns) {
        // An OCI container's init keeps CAP_KILL, so that a signal reaches
        // a command that changed its uid (gosu, su-exec) and kill(-1) its
        // stragglers of any uid, whose waitpid would otherwise never
        // return; standing in for PID 1, also what its command may hold
        // (under no_new_privs no execve raises the permitted set), so that
        // it may read the command's /proc/PID/wchan (ptrace read access:
        // its effective set must cover the command's permitted,
        // cap_ptrace_access_check) to tell a sigtimedwait from a sleep
        // (runtime/child/command_signals_in_child.h). Neither reaches past
        // the pid namespace.
        const CapabilitySets& c = plan.capabilities;
        uint64_t held = uint64_t{1} << CAP_KILL;
        if (plan.initStandsForPid1()) held |= c.permitted | c.ambient;
        err = keepOnlyCapabilitiesInChild(plan.last_cap, CapabilitySets{held, held, held, 0, 0},
                                          &failed_step);
    } else {
        err = dropAllPrivilegesInChild(plan.last_cap, &failed_step);
    }
    if (err)
        state.call =
            failed_step == 0 ? "prctl(PR_SET_SECUREBITS)" : "capset() and the bounding set";
    return err;
}

int initNoNewPrivsInChild(ChildPlan& plan, StepState& state) noexcept {
    int err = faultInjected(FaultPoint::InitNoNewPrivs, plan.injected_fault)
                  ? errno
                  : setNoNewPrivsInChild();
    if (err) state.call = "prctl(PR_SET_NO_NEW_PRIVS)";
    return err;
}

// ------------------------------------------------------------ the table

using StepFunction = int (*)(ChildPlan&, StepState&) noexcept;

struct SetupStep {
    SetupStepInfo info;
    StepFunction run;
};

using S = ChildStage;
using P = StepProcess;
using L = BenchLevel;

// The order every sandbox is built in. Reasons are one line each; the
// orderings security depends on are asserted below, with their sources.
constexpr SetupStep kSteps[] = {
    {{S::StartNetworkHelper, P::Init, L::NetNs,
      "first: its helper builds the network namespace on the other CPU while this builds the root"},
     startNetworkHelperInChild},
    {{S::PrivateMounts, P::Init, L::MountNs,
      "before any mount, so that none propagates back to the host"},
     privateMountsInChild},
    {{S::OpenSources, P::Init, L::MountNs,
      "as the caller, before the ids change: a root caller's sources may be out of the "
      "sandbox uid's reach; overlaps the supervisor writing the id maps"},
     openSourcesInChild},
    {{S::WaitForGo, P::Init, L::UserNs,
      "the id maps are written: before, nothing made here would have an owner"},
     waitForGoInChild},
    {{S::SetIds, P::Init, L::UserNs,
      "at once, keeping capabilities in the namespace: no process of the sandbox is host root, "
      "even during setup"},
     setIdsInChild},
    {{S::ParentDeath, P::Init, L::UserNs,
      "after the uid change, which clears it (prctl(2) PR_SET_PDEATHSIG)"},
     parentDeathInChild},
    {{S::UserNamespaceLimits, P::Init, L::UserNs,
      "while CAP_SYS_RESOURCE in the namespace is held, before anything of the command runs"},
     userNamespaceLimitsInChild},
    {{S::BuildRoot, P::Init, L::MountNs,
      "the new root, /proc inside it while the old root is still there to make it allowed"},
     buildRootInChild},
    {{S::CreateContainerHooks, P::Init, L::MountNs,
      "an OCI container's createContainer hooks: the root complete, the host's tree still there "
      "for their paths (runtime-spec: before pivot_root); a no-op for run"},
     createContainerHooksInChild},
    {{S::SealRoot, P::Init, L::MountNs, "read-only once every mount is in place"}, sealRootInChild},
    {{S::PivotRoot, P::Init, L::MountNs, "the host's tree goes once the new root is complete"},
     pivotRootInChild},
    {{S::LandlockRules, P::Init, L::Landlock,
      "paths that exist only in the new root (its tmpfs, /proc) can be named only now"},
     landlockRulesInChild},
    {{S::Loopback, P::Init, L::NetNs,
      "the helper's namespace joined before fds are closed: the helper's live in this table"},
     loopbackInChild},
    {{S::CloseFds, P::Init, L::UserNs,
      "late: after the last host fd (mount sources, the helper's) is done with "
      "(GHSA-xr7r-f8xq-vfvv)"},
     closeFdsInChild},
    {{S::Hostname, P::Init, L::OtherNs, "in the sandbox's own UTS namespace, before the command"},
     hostnameInChild},
    {{S::Dumpable, P::Init, L::PidNs,
      "init may not be read or traced by the command it starts next"},
     dumpableInChild},
    {{S::WipeMemory, P::Init, L::PidNs,
      "the caller's argv and environment out of init's memory before the command can read it"},
     wipeMemoryStepInChild},
    {{S::JoinCgroups, P::Init, L::CgroupLimits,
      "the sandbox's cgroups before anything of the command runs"},
     joinCgroupsStepInChild},
    {{S::CgroupNamespace, P::Init, L::OtherNs,
      "after joining the cgroups, so that the namespace's root is the sandbox's own"},
     cgroupNamespaceInChild},
    {{S::ForkCommand, P::Init, L::PidNs,
      "the command, once everything it may not escape is in place"},
     forkCommandInChild},
    {{S::CommandProc, P::Command, L::PidNs,
      "an OCI container's command, PID 1 of a pid namespace of its own: its /proc mounted for "
      "that namespace while it still holds the capability to; a no-op for run"},
     commandProcInChild},
    {{S::NewSession, P::Command, L::PidNs,
      "no controlling terminal: the caller's cannot be reached with TIOCSTI (G7)"},
     newSessionInChild},
    {{S::Stdio, P::Command, L::PidNs, "the capture pipes at 1 and 2, /dev/null at 0"},
     stdioInChild},
    {{S::Workdir, P::Command, L::PidNs,
      "after the fds are closed, so that no host directory fd can be its way out "
      "(CVE-2024-21626)"},
     workdirInChild},
    {{S::Rlimits, P::Command, L::CgroupLimits,
      "the command's own limits; init, which must outlive it, keeps none"},
     rlimitsInChild},
    {{S::Personality, P::Command, L::PidNs,
      "an OCI container's execution domain (linux.personality), before its filter, which "
      "need not allow personality(2) then; the domain crosses execve; a no-op for run"},
     personalityInChild},
    {{S::CloseOnExec, P::Command, L::PidNs,
      "late, after the last fd is placed: only 0-2 cross the execve"},
     closeOnExecInChild},
    {{S::DropCapabilities, P::Command, L::Capabilities,
      "after every step that needed a capability in the namespace"},
     dropCapabilitiesInChild},
    {{S::NoNewPrivs, P::Command, L::Capabilities,
      "before Landlock and seccomp, which refuse an unprivileged caller without it"},
     noNewPrivsInChild},
    {{S::LandlockRestrict, P::Command, L::Landlock,
      "after no_new_privs (landlock_restrict_self(2): EPERM without it or CAP_SYS_ADMIN)"},
     landlockRestrictInChild},
    {{S::FindExecutable, P::Command, L::PidNs,
      "an OCI container's executable found before it parks, with the command's own ids and "
      "root, so that `create` fails when it is missing; a no-op for run"},
     findExecutableStepInChild},
    {{S::AwaitStart, P::Command, L::PidNs,
      "an OCI container parks here until `start`: fully set up but its filter, which would "
      "have to allow the wait; a no-op for run"},
     awaitStartInChild},
    {{S::Seccomp, P::Command, L::Seccomp,
      "last: nothing before it has to be on the allowlist, nothing after it but execve"},
     seccompInChild},
    {{S::StartContainerHooks, P::Command, L::PidNs,
      "an OCI container's startContainer hooks, under everything the command is held by, "
      "right before its execve as runc runs them; a no-op for run"},
     startContainerHooksInChild},
    {{S::Exec, P::Command, L::Bare, "the command"}, execInChild},
    {{S::InitCloseFds, P::InitAfterCommand, L::PidNs,
      "init holds no host fd while the command runs, not even the output pipes"},
     initCloseFdsInChild},
    {{S::InitDropPrivileges, P::InitAfterCommand, L::Capabilities,
      "init keeps no capability the command has shed (an OCI container's: no more than the "
      "command may hold)"},
     initDropPrivilegesInChild},
    {{S::InitNoNewPrivs, P::InitAfterCommand, L::Capabilities,
      "init gains nothing by any execve either"},
     initNoNewPrivsInChild},
};
constexpr size_t kStepCount = sizeof(kSteps) / sizeof(kSteps[0]);

constexpr size_t indexOf(ChildStage stage) {
    for (size_t i = 0; i < kStepCount; ++i)
        if (kSteps[i].info.stage == stage) return i;
    return kStepCount;  // absent: every assertion on it fails
}
constexpr bool before(ChildStage first, ChildStage then) {
    return indexOf(first) < kStepCount && indexOf(then) < kStepCount &&
           indexOf(first) < indexOf(then);
}

// Every stage once, in ChildStage's order (so a stage's number is its
// place), each process's steps together, and init's before the command's.
constexpr bool tableIsInStageOrder() {
    if (kStepCount != static_cast<size_t>(kChildStageCount) - 1)
        return false;  // all but Securebits
    for (size_t i = 0; i < kStepCount; ++i)
        if (static_cast<size_t>(kSteps[i].info.stage) != i) return false;
    for (size_t i = 1; i < kStepCount; ++i)
        if (kSteps[i].info.process < kSteps[i - 1].info.process) return false;
    return true;
}
static_assert(tableIsInStageOrder(), "kSteps lists every ChildStage once, in the enum's order");

// The orderings security depends on, and what forces each.
// seccomp(2), SECCOMP_SET_MODE_FILTER: EACCES unless the caller has
// CAP_SYS_ADMIN in its namespace or no_new_privs; the command has shed the
// former by then.
static_assert(before(S::DropCapabilities, S::NoNewPrivs) && before(S::NoNewPrivs, S::Seccomp),
              "no_new_privs before the seccomp filter (seccomp(2))");
// landlock_restrict_self(2): EPERM unless no_new_privs or CAP_SYS_ADMIN.
static_assert(before(S::NoNewPrivs, S::LandlockRestrict),
              "no_new_privs before Landlock (landlock_restrict_self(2))");
// Landlock before seccomp, and seccomp the last step before execve: a
// filter installed earlier would have to allow every call after it
// (landlock_restrict_self among them).
static_assert(before(S::LandlockRestrict, S::Seccomp), "Landlock before seccomp");
// An OCI container parks only once everything but its filter is in place
// (runc parks at the same point): `start` releases a process with nothing
// left to set up but seccomp, and the executable it found with the
// command's own ids, working directory and Landlock domain.
static_assert(before(S::DropCapabilities, S::FindExecutable) &&
                  before(S::Workdir, S::FindExecutable) &&
                  before(S::LandlockRestrict, S::FindExecutable) &&
                  indexOf(S::FindExecutable) + 1 == indexOf(S::AwaitStart) &&
                  indexOf(S::AwaitStart) + 1 == indexOf(S::Seccomp),
              "the executable found, then the park, then seccomp and execve");
// seccomp is the last step before execve but for an OCI container's
// startContainer hooks, which run under it (as runc runs them) and are
// none for every other sandbox.
static_assert(indexOf(S::Seccomp) + 1 == indexOf(S::StartContainerHooks) &&
                  indexOf(S::StartContainerHooks) + 1 == indexOf(S::Exec),
              "seccomp last before execve, but for the startContainer hooks under it");
// A createContainer hook's path is the host's: it runs while the host's
// tree is still this mount namespace's, once the root is built (and before
// it is sealed read-only, as runc seals it after them).
static_assert(indexOf(S::BuildRoot) + 1 == indexOf(S::CreateContainerHooks) &&
                  indexOf(S::CreateContainerHooks) + 1 == indexOf(S::SealRoot),
              "createContainer hooks once the root is built, before it is sealed and pivoted");
// A procfs may be mounted in a user namespace only while a fully visible one
// is mounted in its mount namespace (the kernel's mount_too_revealing(),
// fs/namespace.c): /proc and the masks over it are mounts of BuildRoot,
// made before the old root is detached.
static_assert(before(S::BuildRoot, S::PivotRoot) && before(S::SealRoot, S::PivotRoot),
              "/proc (in the new root) before pivot_root");
// prctl(2): the parent-death signal is cleared when the credentials change.
static_assert(before(S::SetIds, S::ParentDeath), "PR_SET_PDEATHSIG after the uid change");
// Fds closed late: after the last step that holds a host fd (mount sources,
// the network helper's), and before the command's working directory is
// chosen, so no leaked host fd can be its way out (GHSA-xr7r-f8xq-vfvv,
// CVE-2024-21626; CVE-2019-5736 for /proc/self/exe reached through init).
static_assert(before(S::BuildRoot, S::CloseFds) && before(S::Loopback, S::CloseFds) &&
                  before(S::CloseFds, S::ForkCommand) && before(S::CloseFds, S::Workdir),
              "inherited fds closed after the last host fd is used, before the command");
static_assert(before(S::Stdio, S::CloseOnExec) && before(S::Workdir, S::CloseOnExec),
              "close-on-exec marked after the last fd the command keeps is placed");
static_assert(before(S::Dumpable, S::ForkCommand) && before(S::WipeMemory, S::ForkCommand),
              "init non-dumpable and wiped before the command exists (CVE-2019-5736)");
// mount_namespaces(7): a new mount namespace's mounts are shared with the
// host's until made private; any mount before that would propagate back.
static_assert(before(S::PrivateMounts, S::OpenSources) && before(S::PrivateMounts, S::BuildRoot),
              "mounts made private before the first mount");
// No process of the sandbox is host root while it builds its root, even for
// an instant (the ids are set before the first mount of the root).
static_assert(before(S::SetIds, S::BuildRoot), "the sandbox's ids before its root is built");
// The user namespace's inotify bounds hold before anything of the command
// runs (issue 15).
static_assert(before(S::UserNamespaceLimits, S::ForkCommand),
              "user-namespace bounds before the command");
// A command's own /proc is mounted while it may still mount (before its
// capabilities go), by itself: a proc is of its mounter's pid namespace.
static_assert(before(S::ForkCommand, S::CommandProc) &&
                  before(S::CommandProc, S::DropCapabilities) &&
                  kSteps[indexOf(S::CommandProc)].info.process == StepProcess::Command,
              "the command's own /proc before its capabilities are dropped");
// A session of its own before execve: no controlling terminal of the
// caller's, so TIOCSTI has no terminal to reach and job control no group
// (G7); done by the command's own process, the one that execs.
static_assert(before(S::NewSession, S::Exec) &&
                  kSteps[indexOf(S::NewSession)].info.process == StepProcess::Command &&
                  kSteps[indexOf(S::Seccomp)].info.process == StepProcess::Command,
              "the command's own process takes its session and its filter");
// The child's timings are kept per stage, below the slots the supervisor
// keeps for the command's end and the stragglers.
static_assert(kChildStageCount <= ChildPlan::kCommandEndedSlot, "a time slot per stage");
// Nothing of the command runs outside the limits or the cgroup namespace.
static_assert(before(S::JoinCgroups, S::CgroupNamespace) &&
                  before(S::CgroupNamespace, S::ForkCommand),
              "cgroups joined, then the cgroup namespace, then the command");

// The lower tier keeps every step that does not need a namespace; those it
// skips would act on the host's own (its mounts' propagation, its hostname,
// its user-namespace sysctls) or have nothing to act on.
static_assert(lowerTierRuns(S::NewSession) && lowerTierRuns(S::NoNewPrivs) &&
                  lowerTierRuns(S::LandlockRestrict) && lowerTierRuns(S::Seccomp) &&
                  lowerTierRuns(S::ParentDeath) && lowerTierRuns(S::CloseFds) &&
                  lowerTierRuns(S::Rlimits) && lowerTierRuns(S::DropCapabilities) &&
                  !lowerTierRuns(S::Hostname) && !lowerTierRuns(S::PrivateMounts) &&
                  !lowerTierRuns(S::UserNamespaceLimits),
              "the lower tier's steps: all but those that need a namespace");

constexpr std::array<SetupStepInfo, kStepCount> infosOf() {
    std::array<SetupStepInfo, kStepCount> out{};
    for (size_t i = 0; i < kStepCount; ++i) out[i] = kSteps[i].info;
    return out;
}
constexpr std::array<SetupStepInfo, kStepCount> kStepInfos = infosOf();

// ------------------------------------------------------------ the runner

bool includedInChild(const ChildPlan& plan, const SetupStep& step) noexcept {
    return stepRunsIn(step.info, plan.setup_mode, plan.bench_level) &&
           (!plan.lower_tier || lowerTierRuns(step.info.stage));
}

bool forksCommandInChild(const ChildPlan& plan) noexcept {
    return includedInChild(plan, kSteps[indexOf(ChildStage::ForkCommand)]);
}

void reportStepInChild(const ChildPlan& plan, ChildStage stage, int err, int op_index) noexcept {
    ChildMessage msg{ChildMessageKind::StepReport, stage, err, op_index, 0, 0, {}};
    while (send(plan.sync_fd, &msg, sizeof(msg), MSG_NOSIGNAL) < 0 && errno == EINTR) {
    }
}

// Runs one step. Returns only when it worked; a failure ends this process:
// run and bench report it and exit 125 (init first kills a command it has
// started, so nothing of it outlives the refusal); check has reported every
// step already and ends its probe.
void runStepInChild(ChildPlan& plan, const SetupStep& step, StepState& state) noexcept {
    state.op_index = -1;
    state.call = nullptr;
    state.renamed = false;
    ns::clearCallNoteInChild();
    int err = step.run(plan, state);
    // A step that does not name its call itself (the mount steps) noted it
    // where it failed.
    if (err && state.call == nullptr && ns::notedCallInChild()[0] != '\0')
        state.call = ns::notedCallInChild();
    const bool check = plan.setup_mode == SetupMode::Check;
    if (err == kSupervisorGone) _exit(check ? 0 : 125);
    // A started command reports the fork itself, so that reports come in
    // the table's order (init resumes only once the command has exec'ed).
    if (check && !(step.info.stage == ChildStage::ForkCommand && err == 0))
        reportStepInChild(plan, step.info.stage, err, state.op_index);
    if (err) {
        if (state.command > 0) kill(state.command, SIGKILL);
        if (check) _exit(step.info.process == StepProcess::Command ? 125 : 0);
        failSetupInChild(plan, state.renamed ? state.named_stage : step.info.stage, err,
                         state.op_index, state.call);
    }
    // The fork's end is noted by the command itself, as it starts.
    if (step.info.stage != ChildStage::ForkCommand)
        markInChild(plan, static_cast<int>(step.info.stage));
}

// The command's steps, then its execve; check stops short of the execve.
[[noreturn]] void runCommandStepsInChild(ChildPlan& plan) noexcept {
    StepState state;
    for (const SetupStep& step : kSteps) {
        if (step.info.process != StepProcess::Command || !includedInChild(plan, step)) continue;
        if (step.info.stage == ChildStage::Exec) {
            if (plan.setup_mode == SetupMode::Check) _exit(0);
            int err = step.run(plan, state);
            reportInChild(plan, ChildMessageKind::ExecFailed, ChildStage::Exec, err, -1);
            if (plan.container_signals) sayExecFailedInChild(plan, err);
            _exit(err == ENOENT || err == ENOTDIR ? 127 : 126);
        }
        runStepInChild(plan, step, state);
    }
    _exit(125);  // unreachable: Exec is in every level
}

int commandEntryInChild(void* plan) noexcept {
    ChildPlan& p = *static_cast<ChildPlan*>(plan);
    markInChild(p, static_cast<int>(ChildStage::ForkCommand));
    if (p.setup_mode == SetupMode::Check) reportStepInChild(p, ChildStage::ForkCommand, 0, -1);
    runCommandStepsInChild(p);
}

}  // namespace

const SetupStepInfo* setupSteps(size_t* count) noexcept {
    *count = kStepCount;
    return kStepInfos.data();
}

[[noreturn]] void runChildInChild(ChildPlan& plan) noexcept {
    // Before any step, in every mode and tier, before anything is forked
    // from here: the supervisor's end of the sync socket is the
    // supervisor's alone (ChildPlan::supervisor_sync_fd).
    if (plan.supervisor_sync_fd >= 0) close(plan.supervisor_sync_fd);
    plan.supervisor_sync_fd = -1;
    StepState state;
    for (const SetupStep& step : kSteps)
        if (step.info.process == StepProcess::Init && includedInChild(plan, step))
            runStepInChild(plan, step, state);
    // Below the bench's PID namespace level there is no init: this process
    // is the command.
    if (!forksCommandInChild(plan)) runCommandStepsInChild(plan);
    if (plan.setup_mode == SetupMode::Check) {
        // The command's steps have ended (CLONE_VFORK); its own reports say
        // how. init's last steps are probed only after a command that made it.
        int status = 0;
        while (waitpid(state.command, &status, __WALL) < 0 && errno == EINTR) {
        }
        state.command = -1;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) _exit(0);
    }
    for (const SetupStep& step : kSteps)
        if (step.info.process == StepProcess::InitAfterCommand && includedInChild(plan, step))
            runStepInChild(plan, step, state);
    if (plan.setup_mode == SetupMode::Check) _exit(0);
    superviseCommandInChild(plan, state.command);
}

}  // namespace stockade
