// STOCKADE_TEST_FAIL=<name>: one setup call answers as if the kernel had
// refused it, so a test can see that its failure is a refusal (exit 125,
// the step and the call named) and never a weaker run (issue 15).
//
// It is honoured in the shipped binary too, on purpose: a test of the real
// binary needs it, and it is safe because it can only make a call fail, and
// every call listed here fails into a refusal, but bpf-prog-load, which sends
// `serve --net-backend direct` to the userspace forwarder (no host socket in
// the sandbox's hands at all). It widens nothing: the caller
// who sets it gets no run at all. The sandbox's environment is built from the
// policy alone, so nothing inside sees it or can set it for a later run.
#pragma once

#include <errno.h>
#include <stdlib.h>
#include <string.h>

namespace stockade {

enum class FaultPoint : int {
    None = 0,
    Sigprocmask,         // supervisor: block the signals it takes through the signalfd
    SignalFd,            // supervisor: signalfd()
    TimerFdCreate,       // supervisor: timerfd_create()
    TimerFdSettime,      // supervisor: timerfd_settime() arming --timeout
    SendGo,              // supervisor: send() of "go" to the child
    CloseFds,            // child: close_range() of the fds it inherited
    InitCloseFds,        // init: close_range() of every fd but the sync socket
    InitDropPrivileges,  // init: securebits and capability sets
    InitNoNewPrivs,      // init: PR_SET_NO_NEW_PRIVS
    BpfProgLoad,         // serve: bpf(BPF_PROG_LOAD) of the listener cgroup's programs
    ServeTimerSettime,   // serve: timerfd_settime() arming the readiness probe
    MountProc,           // init: mount(2) of the sandbox's /proc, in the root's build
    Hostname,            // init: sethostname(2) in the sandbox's UTS namespace
    NoNewPrivs,          // the command: PR_SET_NO_NEW_PRIVS before its execve
    Seccomp,             // the command: seccomp(2) installing its filter
};

struct FaultPointName {
    FaultPoint point;
    const char* name;  // the value of STOCKADE_TEST_FAIL that selects it
    int err;           // the errno the call answers, one it can really return
};

inline constexpr FaultPointName kFaultPoints[] = {
    {FaultPoint::Sigprocmask, "sigprocmask", EINVAL},
    {FaultPoint::SignalFd, "signalfd", EMFILE},
    {FaultPoint::TimerFdCreate, "timerfd_create", EMFILE},
    {FaultPoint::TimerFdSettime, "timerfd_settime", EINVAL},
    {FaultPoint::SendGo, "send-go", ENOBUFS},
    {FaultPoint::CloseFds, "close_range", EINVAL},
    {FaultPoint::InitCloseFds, "init-close_range", EINVAL},
    {FaultPoint::InitDropPrivileges, "init-drop-privileges", EPERM},
    {FaultPoint::InitNoNewPrivs, "init-no_new_privs", EINVAL},
    {FaultPoint::BpfProgLoad, "bpf-prog-load", EPERM},
    {FaultPoint::ServeTimerSettime, "serve-timerfd_settime", EINVAL},
    {FaultPoint::MountProc, "mount-proc", ENOMEM},
    {FaultPoint::Hostname, "sethostname", EFAULT},
    {FaultPoint::NoNewPrivs, "no_new_privs", EINVAL},
    {FaultPoint::Seccomp, "seccomp", ENOMEM},
};

// The point STOCKADE_TEST_FAIL names, read in the supervisor before the
// clone (the child gets it in its plan: getenv is not for the child side).
inline FaultPoint injectedFault() {
    const char* name = getenv("STOCKADE_TEST_FAIL");
    if (name == nullptr) return FaultPoint::None;
    for (const FaultPointName& f : kFaultPoints)
        if (strcmp(f.name, name) == 0) return f.point;
    return FaultPoint::None;
}

// True, with errno set as the call would set it, when `point` is to fail.
// Async-signal-safe: the child passes the point its plan carries.
inline bool faultInjected(FaultPoint point, FaultPoint injected) noexcept {
    if (point != injected || point == FaultPoint::None) return false;
    for (const FaultPointName& f : kFaultPoints)
        if (f.point == point) errno = f.err;
    return true;
}

}  // namespace stockade
