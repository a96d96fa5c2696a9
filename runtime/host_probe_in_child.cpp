#include "runtime/host_probe_in_child.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "namespaces/landlock_in_child.h"
#include "namespaces/mount_in_child.h"
#include "namespaces/net_in_child.h"
#include "namespaces/uts_in_child.h"
#include "runtime/privileges_in_child.h"
#include "seccomp/default_program.h"
#include "seccomp/install_in_child.h"

namespace stockade::host_check_detail {

void reportInChild(int fd, int step, int err) noexcept {
    StepMessage m{step, err};
    while (write(fd, &m, sizeof(m)) < 0 && errno == EINTR) {
    }
}

// The sandbox child's setup sequence (runtime/child_in_child.cpp), in the
// same order and through the same functions, up to the exec it stops short of.
[[noreturn]] void sandboxProbeInChild(SandboxProbePlan& plan) noexcept {
    auto report = [&](SandboxStep step, int err) {
        reportInChild(plan.report_fd, static_cast<int>(step), err);
    };
    close(plan.go_write_fd);
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    char go = 0;
    ssize_t n;
    while ((n = read(plan.go_fd, &go, 1)) < 0 && errno == EINTR) {
    }
    if (n != 1 || go != 1) _exit(0);  // the maps could not be written, or the parent is gone

    int err = keepCapabilitiesAcrossSetuidInChild();
    if (err == 0 && (setresgid(plan.gid, plan.gid, plan.gid) < 0 ||
                     setresuid(plan.uid, plan.uid, plan.uid) < 0))
        err = errno;
    report(SandboxStep::SetIds, err);
    if (err) _exit(0);
    // The uid change cleared the parent-death signal (prctl(2)).
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    report(SandboxStep::CgroupNs, unshare(CLONE_NEWCGROUP) < 0 ? errno : 0);

    err = ns::makeMountsPrivateInChild();
    report(SandboxStep::PrivateMounts, err);
    if (err) _exit(0);
    size_t failed = 0;
    if ((err = ns::openSourcesInChild(plan.mounts, &failed))) {
        report(plan.op_steps[failed], err);
        _exit(0);
    }
    if ((err = ns::buildRootInChild(plan.mounts, &failed))) {
        report(failed < plan.op_steps.size() ? plan.op_steps[failed] : SandboxStep::RootTmpfs, err);
        _exit(0);
    }
    report(SandboxStep::RootTmpfs, 0);
    for (SandboxStep step : plan.op_steps) report(step, 0);
    ns::closeSourcesInChild(plan.mounts);
    err = ns::sealRootInChild(plan.mounts);
    report(SandboxStep::SealRoot, err);
    if (err) _exit(0);
    err = ns::pivotRootInChild(plan.mounts);
    report(SandboxStep::PivotRoot, err);
    if (err) _exit(0);

    // Nothing of the host's fds stays, as in the sandbox (judged elsewhere).
    if (plan.report_fd > 0) syscall(SYS_close_range, 0U, plan.report_fd - 1U, 0U);
    syscall(SYS_close_range, plan.report_fd + 1U, ~0U, 0U);

    static constexpr char kHostname[] = "stockade";
    report(SandboxStep::Hostname, ns::setHostnameInChild(kHostname, sizeof(kHostname) - 1));
    report(SandboxStep::Loopback, ns::bringLoopbackUpInChild());
    report(SandboxStep::Dumpable, prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 ? errno : 0);
    int failed_step = 0;
    report(SandboxStep::DropCapabilities, dropAllPrivilegesInChild(plan.last_cap, &failed_step));
    report(SandboxStep::NoNewPrivs, setNoNewPrivsInChild());
    _exit(0);
}

// Each namespace alone, the others inside the user namespace as the
// sandbox's clone3 makes them, so the one at fault has a name.
void unshareEachInChild(int fd) noexcept {
    for (size_t i = 0; i < kNamespaceCount; ++i) {
        int err = unshare(kNamespaces[i].flag) < 0 ? errno : 0;
        reportInChild(fd, static_cast<int>(i), err);
        if (i == 0 && err) return;
    }
}

void seccompInChild(int fd) noexcept {
    auto report = [&](SeccompStep step, int err) {
        reportInChild(fd, static_cast<int>(step), err);
    };
    int err = setNoNewPrivsInChild();
    report(SeccompStep::NoNewPrivs, err);
    if (err) return;
    sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    sock_fprog allow_all{1, allow};
    err = seccomp::installFilterInChild(allow_all);
    report(SeccompStep::AllowAll, err);
    if (err) return;
    int listener = -1;
    err = seccomp::installFilterWithListenerInChild(allow_all, &listener);
    if (err == 0) close(listener);
    report(SeccompStep::Listener, err);
    // Last: after the default filter only write and _exit are needed.
    auto program = seccomp::defaultProgram();
    sock_fprog fprog{static_cast<unsigned short>(program.size()),
                     const_cast<sock_filter*>(program.data())};
    report(SeccompStep::DefaultFilter, seccomp::installFilterInChild(fprog));
}

void basicsInChild(int fd) noexcept {
    for (size_t i = 0; i < sizeof(kRlimits) / sizeof(kRlimits[0]); ++i) {
        // Lowering the hard limit to the soft one is always permitted, and
        // dies with this child.
        rlimit limit;
        int err = getrlimit(kRlimits[i].second, &limit) < 0 ? errno : 0;
        limit.rlim_max = limit.rlim_cur;
        if (err == 0 && setrlimit(kRlimits[i].second, &limit) < 0) err = errno;
        reportInChild(fd, static_cast<int>(i), err);
    }
    // Above every fd this child has: closes nothing, answers ENOSYS before 5.9.
    int err = syscall(SYS_close_range, ~0U - 1, ~0U, 0U) < 0 ? errno : 0;
    reportInChild(fd, kCloseRangeStep, err);
}

void landlockInChild(int fd, const ns::LandlockPlan& ruleset) noexcept {
    int err = setNoNewPrivsInChild();
    if (err == 0) err = ns::restrictSelfInChild(ruleset);
    reportInChild(fd, 0, err);
}

}  // namespace stockade::host_check_detail
