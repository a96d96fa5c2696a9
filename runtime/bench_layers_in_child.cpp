#include "runtime/bench_layers_in_child.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/filter.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "namespaces/landlock_in_child.h"
#include "namespaces/mount_in_child.h"
#include "namespaces/net_in_child.h"
#include "namespaces/uts_in_child.h"
#include "runtime/bench_layers.h"
#include "runtime/command_in_child.h"
#include "runtime/privileges_in_child.h"
#include "seccomp/install_in_child.h"
#include "seccomp/listener_in_child.h"

namespace stockade {

namespace {

bool at(const LayeredChild& c, BenchLevel level) noexcept {
    return c.level >= static_cast<int>(level);
}

[[noreturn]] void failInChild(const LayeredChild& c, ChildStage stage, int err) noexcept {
    if (at(c, BenchLevel::UserNs))
        reportInChild(*c.plan, ChildMessageKind::SetupFailed, stage, err, -1);
    _exit(125);
}

sock_fprog programOf(const std::vector<sock_filter>& program) noexcept {
    return sock_fprog{static_cast<unsigned short>(program.size()),
                      const_cast<sock_filter*>(program.data())};
}

// As command_in_child.cpp's installSeccompInChild: the notified program and
// the listener's hand-over when the plan has one, else the plain filter.
int installSeccompInChild(const ChildPlan& plan) noexcept {
    if (!plan.seccomp_notified_program.empty() && plan.listener_socket_fd >= 0) {
        int listener = -1;
        int err = seccomp::installFilterWithListenerInChild(
            programOf(plan.seccomp_notified_program), &listener);
        if (err == 0) return seccomp::sendListenerInChild(plan.listener_socket_fd, listener);
        if (err != EBUSY && err != EINVAL) return err;
    }
    if (plan.seccomp_program.empty()) return 0;
    return seccomp::installFilterInChild(programOf(plan.seccomp_program));
}

[[noreturn]] void execCommandInChild(const LayeredChild& c) noexcept {
    const ChildPlan& plan = *c.plan;
    if (at(c, BenchLevel::PidNs)) {
        // The command is a process of its own from this level on: what the
        // real one does before execve to stand apart from init.
        struct sigaction dfl {};
        dfl.sa_handler = SIG_DFL;
        for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);
        if (setsid() < 0) failInChild(c, ChildStage::NewSession, errno);
        int null_in = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null_in < 0 || dup2(null_in, 0) < 0 || dup2(c.dev_null_fd, 1) < 0 ||
            dup2(c.dev_null_fd, 2) < 0)
            failInChild(c, ChildStage::Stdio, errno);
        if (chdir(plan.workdir.c_str()) < 0) failInChild(c, ChildStage::Workdir, errno);
    }
    if (at(c, BenchLevel::CgroupLimits))
        for (const RlimitSetting& limit : plan.rlimits)
            if (setrlimit(static_cast<__rlimit_resource>(limit.resource), &limit.value) < 0)
                failInChild(c, ChildStage::Rlimits, errno);
    if (at(c, BenchLevel::PidNs) && syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
        failInChild(c, ChildStage::Stdio, errno);
    if (at(c, BenchLevel::Capabilities)) {
        int failed_step = 0;
        if (int err = dropAllPrivilegesInChild(plan.last_cap, &failed_step))
            failInChild(c, ChildStage::DropCapabilities, err);
        if (int err = setNoNewPrivsInChild()) failInChild(c, ChildStage::NoNewPrivs, err);
    }
    if (at(c, BenchLevel::Landlock))
        if (int err = ns::restrictSelfInChild(plan.landlock))
            failInChild(c, ChildStage::LandlockRestrict, err);
    if (at(c, BenchLevel::Seccomp))
        if (int err = installSeccompInChild(plan)) failInChild(c, ChildStage::Seccomp, err);
    execve(plan.argv[0], plan.argv.data(), plan.envp.data());
    failInChild(c, ChildStage::Exec, errno);
}

// PID 1 of the bench's PID namespace: waits for the command, then kills and
// reaps whatever is left, as the real init does once the command has ended.
[[noreturn]] void initInChild(const LayeredChild& c, pid_t command) noexcept {
    if (at(c, BenchLevel::Capabilities)) {
        int failed_step = 0;
        dropAllPrivilegesInChild(c.plan->last_cap, &failed_step);
        setNoNewPrivsInChild();
    }
    int command_status = 0;
    while (waitpid(command, &command_status, 0) < 0 && errno == EINTR) {
    }
    kill(-1, SIGKILL);
    int status;
    while (waitpid(-1, &status, __WALL) > 0 || errno == EINTR) {
    }
    _exit(WIFEXITED(command_status) ? WEXITSTATUS(command_status) : 128);
}

}  // namespace

[[noreturn]] void runLayeredChildInChild(const LayeredChild& c) noexcept {
    ChildPlan& plan = *c.plan;
    if (!at(c, BenchLevel::UserNs)) {
        execve(plan.argv[0], plan.argv.data(), plan.envp.data());
        _exit(127);
    }
    // The same order as runChildInChild; see the reasons there.
    char go = 0;
    ssize_t n;
    while ((n = recv(plan.sync_fd, &go, 1, 0)) < 0 && errno == EINTR) {
    }
    if (n != 1) _exit(125);
    size_t failed = 0;
    if (at(c, BenchLevel::MountNs)) {
        if (int err = ns::makeMountsPrivateInChild())
            failInChild(c, ChildStage::PrivateMounts, err);
        if (int err = ns::openSourcesInChild(*c.mounts, &failed))
            failInChild(c, ChildStage::OpenSources, err);
    }
    if (int err = keepCapabilitiesAcrossSetuidInChild()) failInChild(c, ChildStage::SetIds, err);
    if (setresgid(plan.ids.inside_gid, plan.ids.inside_gid, plan.ids.inside_gid) < 0 ||
        setresuid(plan.ids.inside_uid, plan.ids.inside_uid, plan.ids.inside_uid) < 0)
        failInChild(c, ChildStage::SetIds, errno);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
        failInChild(c, ChildStage::ParentDeath, errno);
    if (at(c, BenchLevel::MountNs)) {
        if (int err = ns::buildRootInChild(*c.mounts, &failed))
            failInChild(c, ChildStage::BuildRoot, err);
        ns::closeSourcesInChild(*c.mounts);
        if (int err = ns::sealRootInChild(*c.mounts)) failInChild(c, ChildStage::SealRoot, err);
        if (int err = ns::pivotRootInChild(*c.mounts)) failInChild(c, ChildStage::PivotRoot, err);
    }
    if (at(c, BenchLevel::Landlock))
        if (int err = ns::addSandboxRulesInChild(plan.landlock))
            failInChild(c, ChildStage::LandlockRules, err);
    if (at(c, BenchLevel::OtherNs))
        if (int err = ns::setHostnameInChild(plan.hostname.c_str(), plan.hostname.size()))
            failInChild(c, ChildStage::Hostname, err);
    if (at(c, BenchLevel::NetNs))
        if (int err = ns::bringLoopbackUpInChild()) failInChild(c, ChildStage::Loopback, err);
    if (at(c, BenchLevel::CgroupLimits))
        if (int err = joinCgroupsInChild(plan.sync_fd))
            failInChild(c, ChildStage::JoinCgroups, err < 0 ? ECHILD : err);
    if (at(c, BenchLevel::OtherNs) && unshare(CLONE_NEWCGROUP) < 0)
        failInChild(c, ChildStage::CgroupNamespace, errno);
    if (!at(c, BenchLevel::PidNs)) execCommandInChild(c);

    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) failInChild(c, ChildStage::Dumpable, errno);
    pid_t command = static_cast<pid_t>(syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0));
    if (command < 0) failInChild(c, ChildStage::ForkCommand, errno);
    if (command == 0) execCommandInChild(c);
    initInChild(c, command);
}

}  // namespace stockade
