#include "runtime/supervisor/sandbox_launch.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

#include "base/proc_stat.h"
#include "runtime/child/child_protocol.h"
#include "runtime/supervisor/supervisor_hardening.h"

namespace stockade {

namespace {

// The supervisor's own argv and environment strings live in one range each of
// its initial stack; /proc/self/stat names them (proc(5), fields 48-51).
void findWipeRanges(ChildPlan& plan) {
    auto stat = ProcStat::read(0);
    if (!stat) return;
    uintptr_t arg_start = stat->field(48), arg_end = stat->field(49);
    uintptr_t env_start = stat->field(50), env_end = stat->field(51);
    if (!arg_start || !arg_end || !env_start || !env_end) return;
    plan.wipe_ranges = {{arg_start, arg_end}, {env_start, env_end}};
}

bool socketPair(UniqueFd& parent, UniqueFd& child) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) return false;
    parent.reset(sv[0]);
    child.reset(sv[1]);
    return true;
}

}  // namespace

sigset_t signalsForInit() {
    sigset_t mask;
    sigemptyset(&mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2, SIGRTMIN})
        sigaddset(&mask, sig);
    return mask;
}

// The message says the step and the call once; the errno travels apart and
// is named once where the line is printed ("<step>: <call>: ENAME").
SandboxOutcome setupFailure(const std::string& stage, const Error& error) {
    SandboxOutcome out;
    out.ending = Ending::SetupFailed;
    // Nothing ran: the record's streams are the empty ones, hashed as such.
    out.stdout_summary = out.stderr_summary = OutputCapture().finish();
    out.error_stage = stage;
    out.error_message = stage + ": " + error.text();
    out.error_errno = error.errnum();
    return out;
}

void childSetupFailure(const ChildMessage& msg, const ChildPlan& plan, SandboxOutcome& out) {
    out.ending = Ending::SetupFailed;
    out.error_errno = msg.err;
    out.error_stage = describeStage(msg.stage);
    out.error_message = out.error_stage;
    if (msg.op_index >= 0 && static_cast<size_t>(msg.op_index) < plan.mounts.ops.size())
        out.error_message = plan.mounts.ops[static_cast<size_t>(msg.op_index)].description;
    std::string call(msg.call, strnlen(msg.call, sizeof(msg.call)));
    if (!call.empty()) out.error_message += ": " + call;
}

namespace {

// "CLONE_NEWUSER|CLONE_NEWNS|...": the namespace flags a clone3 asked for.
std::string cloneFlagNames(uint64_t flags) {
    static constexpr std::pair<uint64_t, const char*> kNames[] = {
        {CLONE_NEWUSER, "CLONE_NEWUSER"},        {CLONE_NEWNS, "CLONE_NEWNS"},
        {CLONE_NEWPID, "CLONE_NEWPID"},          {CLONE_NEWNET, "CLONE_NEWNET"},
        {CLONE_NEWIPC, "CLONE_NEWIPC"},          {CLONE_NEWUTS, "CLONE_NEWUTS"},
        {CLONE_INTO_CGROUP, "CLONE_INTO_CGROUP"}};
    std::string names;
    for (const auto& [flag, name] : kNames)
        if (flags & flag) names += (names.empty() ? "" : "|") + std::string(name);
    return names.empty() ? "no new namespaces" : names;
}

}  // namespace

bool launchSandbox(ChildPlan& plan, const LaunchSpec& spec, LaunchedSandbox& out,
                   SandboxOutcome& failed) {
    const bool user_ns = spec.namespaces & CLONE_NEWUSER;
    // The child waits for "go" and "placed" with a user namespace, and in
    // the lower tier; bench's levels below its user namespace have neither.
    const bool handshake = user_ns || spec.lower_tier;
    // Without the handshake hooks and cgroups would be skipped, and the
    // sandbox run without them; the lower tier runs no service.
    if ((!handshake && spec.cgroups) || (!user_ns && spec.hooks)) {
        failed = setupFailure("launch the sandbox",
                              Error::message("a service's hooks or cgroups need a user namespace"));
        return false;
    }
    plan.sync_fd = plan.listener_socket_fd = plan.socket_factory_fd = plan.netns_fd_slot = -1;
    UniqueFd sync_child;
    if (handshake && !socketPair(out.sync, sync_child)) {
        failed = setupFailure("create the sync socket", Error::fromErrno("socketpair()"));
        return false;
    }
    // A socket of its own for the seccomp listener: the sync socket carries
    // only fixed-size messages, and an fd riding on one would be lost.
    UniqueFd listener_child;
    if (spec.seccomp_listener && !plan.seccomp_notified_program.empty()) {
        if (!socketPair(out.listener, listener_child)) {
            failed = setupFailure("create the seccomp listener socket",
                                  Error::fromErrno("socketpair()"));
            return false;
        }
        plan.listener_socket_fd = listener_child.get();
    }
    // A service's socket factory: init makes TCP sockets in the sandbox's
    // network namespace on request (service_hooks.h).
    UniqueFd factory_child;
    if (spec.hooks) {
        if (!socketPair(out.factory, factory_child)) {
            failed = setupFailure("create the socket factory", Error::fromErrno("socketpair()"));
            return false;
        }
        plan.socket_factory_fd = factory_child.get();
    }
    // A run without a service makes its network namespace beside the root's
    // set-up (ChildPlan::netns_fd_slot). A service's is made by the clone:
    // its hooks reach the namespace through the child's pid at once.
    UniqueFd netns_slot;
    if ((spec.namespaces & CLONE_NEWNET) && !spec.hooks && !spec.net_in_clone) {
        netns_slot.reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
        if (!netns_slot.valid()) {
            failed = setupFailure("hold an fd for the network namespace",
                                  Error::fromErrno("open(\"/dev/null\")"));
            return false;
        }
        plan.netns_fd_slot = netns_slot.get();
    }
    plan.sync_fd = sync_child.get();
    plan.supervisor_sync_fd = out.sync ? out.sync.get() : -1;
    findWipeRanges(plan);

    int pidfd = -1;
    clone_args args{};
    args.flags = (spec.namespaces & ~static_cast<uint64_t>(CLONE_NEWCGROUP)) | CLONE_PIDFD;
    if (netns_slot.valid()) args.flags &= ~static_cast<uint64_t>(CLONE_NEWNET);
    if (spec.cgroups && spec.cgroups->cloneIntoFd() >= 0) {
        args.flags |= CLONE_INTO_CGROUP;
        args.cgroup = static_cast<uint64_t>(spec.cgroups->cloneIntoFd());
    }
    args.pidfd = reinterpret_cast<uintptr_t>(&pidfd);
    args.exit_signal = SIGCHLD;
    DumpableAcrossClone dumpable;
    long pid = syscall(SYS_clone3, &args, sizeof(args));
    if (pid == 0) runChildInChild(plan);
    int clone_errno = errno;
    // Docker's default seccomp profile answers every clone3 ENOSYS, so that
    // glibc falls back to clone, whose flags it can read (older profiles
    // answered EPERM). The lower tier asks for no namespace and can do the
    // same; its v2 leaf is then joined by pid below, since only clone3 can
    // start a child in one.
    bool cloned_plain = false;
    if (pid < 0 && (clone_errno == ENOSYS || clone_errno == EPERM) && spec.lower_tier) {
        pid = syscall(SYS_clone, CLONE_PIDFD | SIGCHLD, nullptr, &pidfd, nullptr, 0);
        if (pid == 0) runChildInChild(plan);
        clone_errno = errno;
        cloned_plain = pid > 0;
    }
    dumpable.restore();
    out.pidfd.reset(pidfd);
    sync_child.reset();
    listener_child.reset();
    factory_child.reset();
    netns_slot.reset();
    if (spec.after_clone) spec.after_clone();
    if (pid < 0) {
        out.user_ns_refused = user_ns && (clone_errno == EPERM || clone_errno == ENOSPC ||
                                          clone_errno == EINVAL || clone_errno == ENOSYS);
        failed = setupFailure(
            "create the namespaces",
            Error::fromErrno("clone3(" + cloneFlagNames(args.flags) + ")", clone_errno));
        return false;
    }
    out.pid = static_cast<pid_t>(pid);

    auto abandon = [&](const char* stage, const Error& error) {
        syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0);
        siginfo_t info;
        syscall(SYS_waitid, P_PIDFD, pidfd, &info, WEXITED, nullptr);
        out.pid = 0;  // reaped: the number may be another process's now
        // The child may have failed first, and the parent's error be only
        // its reaction (EPIPE or ECONNRESET on the socket the child closed):
        // the child's own first failure is the cause to report.
        failed = setupFailure(stage, error);
        ChildMessage msg;
        while (out.sync && receiveChildMessage(out.sync.get(), msg) == sizeof(msg)) {
            if (msg.kind != ChildMessageKind::SetupFailed) continue;
            childSetupFailure(msg, plan, failed);
            break;
        }
        return false;
    };
    if (!handshake) return true;
    // The id maps first, then "go": the child builds its root while the
    // supervisor makes its v1 cgroup leaves. "Placed" carries their `tasks`
    // fds; the child joins them before anything of the command runs.
    if (user_ns)
        if (auto maps = ns::writeIdMaps(out.pid, *spec.ids); !maps)
            return abandon("write the user namespace's id maps", maps.error());
    if (cloned_plain && spec.cgroups && spec.cgroups->cloneIntoFd() >= 0) {
        UniqueFd procs(openat(spec.cgroups->cloneIntoFd(), "cgroup.procs", O_WRONLY | O_CLOEXEC));
        std::string text = std::to_string(out.pid);
        if (!procs || write(procs.get(), text.data(), text.size()) < 0)
            return abandon("place the sandbox in its cgroup",
                           Error::fromErrno("write(cgroup.procs, " + text + ")"));
    }
    char go = 1;
    if (faultInjected(FaultPoint::SendGo, spec.fault) ||
        send(out.sync.get(), &go, 1, MSG_NOSIGNAL) != 1)
        return abandon("send the child its go", Error::fromErrno("send(go)"));
    std::vector<UniqueFd> tasks;
    if (spec.cgroups) {
        auto leaves = spec.cgroups->makeV1Leaves();
        if (!leaves) return abandon("set up the sandbox's cgroups", leaves.error());
        tasks = std::move(*leaves);
    }
    // A service's network (the veth backend) is connected before anything
    // runs in the sandbox: the child waits for "placed" before its command.
    if (spec.hooks)
        if (Status connected = spec.hooks->beforeStart(out.pid); !connected)
            return abandon("connect the sandbox's network", connected.error());
    if (spec.before_placed)
        if (Status placed = spec.before_placed(out.pid); !placed)
            return abandon("place the sandbox in its cgroups", placed.error());
    int tasks_fds[kMaxPlacementFds];
    int count = 0;
    for (const UniqueFd& fd : tasks)
        if (count < kMaxPlacementFds) tasks_fds[count++] = fd.get();
    if (int err = sendPlacement(out.sync.get(), tasks_fds, count); err && err != EPIPE)
        return abandon("send the child its cgroups", Error::fromErrno("sendmsg()", err));
    return true;
}

}  // namespace stockade
