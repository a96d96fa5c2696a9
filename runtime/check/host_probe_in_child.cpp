#include "runtime/check/host_probe_in_child.h"

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
#include "runtime/child/privileges_in_child.h"
#include "seccomp/default_program.h"
#include "seccomp/install_in_child.h"

namespace stockade::host_check_detail {

void reportInChild(int fd, int step, int err) noexcept {
    StepMessage m{step, err};
    while (write(fd, &m, sizeof(m)) < 0 && errno == EINTR) {
    }
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
