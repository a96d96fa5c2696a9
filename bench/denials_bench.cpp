// What reporting denials costs (seccomp/denials.h), per call: an allowed call
// (getppid), an ENOSYS answer (clone3) and a refused call (keyctl), each timed
// in a forked child under
//   none      no filter at all;
//   errno     the default policy, refusals answered EPERM in the kernel;
//   notified  withNotifiedDenials(default policy) with a listener, every
//             refusal answered EPERM by this process through a DenialCollector.
// The claim to show: only the refused column moves between errno and notified.
//
// Each figure is the median over 40 batches of the batch's mean ns per call,
// after one batch of warm-up. Usage: denials_bench [--quick]
// (--quick: a tenth of the calls, for a smoke test).

#include <fcntl.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#include "base/unique_fd.h"
#include "seccomp/denials.h"
#include "seccomp/filter.h"
#include "seccomp/install_in_child.h"
#include "seccomp/listener_in_child.h"
#include "seccomp/policy.h"

using namespace stockade;
using namespace stockade::seccomp;

namespace {

constexpr int kBatches = 40;
// The whole run is bounded: a child that takes longer is killed.
constexpr long kDeadlineMs = 120000;

enum class Mode { None, Errno, Notified };

const char* modeName(Mode mode) {
    switch (mode) {
        case Mode::None:
            return "none";
        case Mode::Errno:
            return "errno";
        case Mode::Notified:
            return "notified";
    }
    return "?";
}

// What the child reports: ns per call, and the errno each call got (to show
// the measured calls were answered as claimed).
struct Figures {
    double ns[3];
    int err[3];
    int setup_error;  // errno of a failed setup step, else 0
};

const char* const kCallNames[3] = {"getppid (allowed)", "clone3 (ENOSYS)", "keyctl (refused)"};

long nowNs() {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

long nowMs() {
    return nowNs() / 1000000L;
}

long callOnce(int which) {
    switch (which) {
        case 0:
            return syscall(SYS_getppid);
        case 1:
            // A bad pointer: unfiltered, the kernel answers EFAULT.
            return syscall(SYS_clone3, 1L, 88L);
        default:
            // An undefined operation: unfiltered, the kernel answers EOPNOTSUPP.
            return syscall(SYS_keyctl, 0x7fffffffL, 0L, 0L, 0L, 0L);
    }
}

double medianNsPerCall(int which, long calls) {
    const long per_batch = calls / kBatches;
    double batch_ns[kBatches];
    for (long i = 0; i < per_batch; ++i) callOnce(which);
    for (double& ns : batch_ns) {
        const long start = nowNs();
        for (long i = 0; i < per_batch; ++i) callOnce(which);
        ns = static_cast<double>(nowNs() - start) / static_cast<double>(per_batch);
    }
    std::sort(batch_ns, batch_ns + kBatches);
    return (batch_ns[kBatches / 2 - 1] + batch_ns[kBatches / 2]) / 2;
}

// The child: filter per `mode`, then the three measurements, reported over
// `report_fd`. Only system calls after the filter, no allocation.
[[noreturn]] void measureInChild(Mode mode, const CompiledFilter* filter, int report_fd,
                                 int listener_socket, long allowed_calls, long refused_calls) {
    Figures figures{};
    auto fail = [&](int err) {
        figures.setup_error = err;
        (void)!write(report_fd, &figures, sizeof figures);
        _exit(1);
    };
    if (mode != Mode::None) {
        if (prctl(PR_SET_NO_NEW_PRIVS, 1UL, 0UL, 0UL, 0UL) != 0) fail(errno);
        const sock_fprog prog = filter->fprog();
        if (mode == Mode::Errno) {
            if (int err = installFilterInChild(prog)) fail(err);
        } else {
            int listener = -1;
            if (int err = installFilterWithListenerInChild(prog, &listener)) fail(err);
            if (int err = sendListenerInChild(listener_socket, listener)) fail(err);
        }
    }
    const long calls[3] = {allowed_calls, allowed_calls, refused_calls};
    for (int which = 0; which < 3; ++which) {
        figures.err[which] = callOnce(which) < 0 ? errno : 0;
        figures.ns[which] = medianNsPerCall(which, calls[which]);
    }
    if (write(report_fd, &figures, sizeof figures) != sizeof figures) _exit(2);
    _exit(0);
}

struct Run {
    std::optional<Figures> figures;
    std::uint64_t answered = 0;
    const char* failure = nullptr;
};

Run runMode(Mode mode, const CompiledFilter& filter, long allowed_calls, long refused_calls) {
    Run run;
    int report[2], sock[2];
    if (pipe2(report, O_CLOEXEC) != 0 ||
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sock) != 0) {
        run.failure = "pipe2/socketpair";
        return run;
    }
    const pid_t pid = fork();
    if (pid < 0) {
        run.failure = "fork";
        return run;
    }
    if (pid == 0) {
        close(report[0]);
        close(sock[0]);
        measureInChild(mode, &filter, report[1], sock[1], allowed_calls, refused_calls);
    }
    close(report[1]);
    close(sock[1]);
    UniqueFd report_fd(report[0]), sock_fd(sock[0]);
    UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0U)));

    if (mode == Mode::Notified && pidfd) {
        Result<UniqueFd> listener = receiveListener(sock_fd.get());
        if (!listener) {
            std::fprintf(stderr, "receiveListener: %s\n", listener.error().describe().c_str());
            run.failure = "receiving the listener";
        } else {
            // The supervisor's loop: answer while the child lives.
            DenialCollector collector{DenialAnswers(defaultPolicy())};
            const long deadline = nowMs() + kDeadlineMs;
            while (nowMs() < deadline) {
                pollfd fds[2] = {{listener->get(), POLLIN, 0}, {pidfd.get(), POLLIN, 0}};
                if (poll(fds, 2, 1000) < 0 && errno != EINTR) break;
                if (fds[0].revents & POLLIN) {
                    if (Status s = collector.handleOne(listener->get()); !s) {
                        std::fprintf(stderr, "handleOne: %s\n", s.error().describe().c_str());
                        break;
                    }
                }
                if (fds[1].revents & POLLIN) break;
            }
            run.answered = collector.total();
        }
    } else if (pidfd) {
        pollfd fd{pidfd.get(), POLLIN, 0};
        (void)poll(&fd, 1, static_cast<int>(kDeadlineMs));
    }
    kill(pid, SIGKILL);  // a no-op unless the child overran the deadline
    int status = 0;
    waitpid(pid, &status, 0);

    Figures figures{};
    if (read(report_fd.get(), &figures, sizeof figures) == sizeof figures) {
        if (figures.setup_error) {
            std::fprintf(stderr, "%s: setup failed: %s\n", modeName(mode),
                         std::strerror(figures.setup_error));
            if (!run.failure) run.failure = "child setup";
        } else {
            run.figures = figures;
        }
    } else if (!run.failure) {
        run.failure = "the child reported nothing (killed at the deadline?)";
    }
    return run;
}

const char* errText(int err) {
    return err == 0 ? "ok" : strerrorname_np(err);
}

}  // namespace

int main(int argc, char** argv) {
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    const long allowed_calls = quick ? 20000 : 200000;
    const long refused_calls = quick ? 2000 : 20000;

    const SeccompPolicy policy = defaultPolicy();
    Result<CompiledFilter> plain = compileFilter(policy);
    Result<CompiledFilter> notified = compileFilter(withNotifiedDenials(policy));
    if (!plain || !notified) {
        std::fprintf(stderr, "compileFilter: %s\n",
                     (!plain ? plain : notified).error().describe().c_str());
        return 1;
    }

    std::printf("median ns per call (%d batches; %ld allowed/ENOSYS calls, %ld refused calls)\n",
                kBatches, allowed_calls, refused_calls);
    std::printf("%-9s %20s %20s %20s\n", "filter", kCallNames[0], kCallNames[1], kCallNames[2]);
    int failures = 0;
    for (Mode mode : {Mode::None, Mode::Errno, Mode::Notified}) {
        const CompiledFilter& filter = mode == Mode::Notified ? *notified : *plain;
        const Run run = runMode(mode, filter, allowed_calls, refused_calls);
        if (!run.figures) {
            std::printf("%-9s failed: %s\n", modeName(mode), run.failure);
            ++failures;
            continue;
        }
        char cells[3][32];
        for (int i = 0; i < 3; ++i)
            std::snprintf(cells[i], sizeof cells[i], "%.0f (%s)", run.figures->ns[i],
                          errText(run.figures->err[i]));
        std::printf("%-9s %20s %20s %20s", modeName(mode), cells[0], cells[1], cells[2]);
        if (mode == Mode::Notified)
            std::printf("   [%llu refusals answered by the supervisor]",
                        static_cast<unsigned long long>(run.answered));
        std::printf("\n");
    }
    return failures ? 1 : 0;
}
