// Host-wide kernel counters a sandbox could take from everyone (issue 15):
// each action reports the kernel's answer, then holds what it got for a
// while so that the test can look at the host's side meanwhile.
#include <linux/aio_abi.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "actions.h"

namespace probe {

// io_setup(N), then `held=1` and a sleep of SECONDS with the context kept.
int ioSetupHold(const Args& a) {
    aio_context_t ctx = 0;
    const long rc = ::syscall(SYS_io_setup, std::strtoul(a[0].c_str(), nullptr, 10), &ctx);
    emitResult(rc, errno);
    emit("held", "1");
    sleepSeconds(std::atoi(a[1].c_str()));
    if (rc == 0) ::syscall(SYS_io_destroy, ctx);
    return 0;
}

// Queues SIGRTMIN to itself (blocked) until the kernel says no: `queued=N`
// and the errno, then `held=1` and a sleep of SECONDS with the signals kept.
int sigqueueFill(const Args& a) {
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGRTMIN);
    sigprocmask(SIG_BLOCK, &block, nullptr);
    const long limit = 1L << 20;
    long queued = 0;
    int err = 0;
    for (; queued < limit; ++queued) {
        sigval value{};
        if (::sigqueue(::getpid(), SIGRTMIN, value) < 0) {
            err = errno;
            break;
        }
    }
    emit("queued", std::to_string(queued));
    emit("result", errName(err));
    emit("held", "1");
    sleepSeconds(std::atoi(a[0].c_str()));
    return 0;
}

// inotify_init1 until the kernel says no: `instances=N` and the errno (the
// instances stay open), then `held=1` and a sleep of SECONDS.
int inotifyFill(const Args& a) {
    long instances = 0;
    int err = 0;
    for (; instances < 100000; ++instances) {
        if (::inotify_init1(IN_CLOEXEC) < 0) {
            err = errno;
            break;
        }
    }
    emit("instances", std::to_string(instances));
    emit("result", errName(err));
    emit("held", "1");
    sleepSeconds(std::atoi(a[0].c_str()));
    return 0;
}

}  // namespace probe
