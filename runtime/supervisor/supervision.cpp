#include "runtime/supervisor/supervision.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "base/log.h"
#include "runtime/child/descendants_in_child.h"
#include "seccomp/denials.h"

namespace stockade {

Result<Streams> makeStreams() {
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) < 0) return Error::fromErrno("pipe2(O_CLOEXEC) for stdout");
    Streams s;
    s.out_read.reset(out[0]);
    s.out_write.reset(out[1]);
    if (pipe2(err, O_CLOEXEC) < 0) return Error::fromErrno("pipe2(O_CLOEXEC) for stderr");
    s.err_read.reset(err[0]);
    s.err_write.reset(err[1]);
    // Bigger pipes mean fewer wakeups when a command floods its output.
    fcntl(out[0], F_SETPIPE_SZ, 1 << 20);
    fcntl(err[0], F_SETPIPE_SZ, 1 << 20);
    return s;
}

bool Supervision::pump(int fd, int stream, OutputCapture& capture, EchoSink& echo) {
    size_t want = sizeof(buffer_);
    if (pauses()) want = std::min(want, echo.room());  // never 0: polled only with room
    ssize_t n = read(fd, buffer_, want);
    if (n < 0) return errno == EINTR || errno == EAGAIN;
    if (n == 0) return false;
    size_t size = static_cast<size_t>(n);
    if (hooks_) {  // a service's output goes to its log, with no limit that kills
        capture.feed(buffer_, size);
        hooks_->output(stream, buffer_, size);
        echo.accept(buffer_, size);
        return true;
    }
    if (kill_reason_ == Ending::OutputLimit) return true;  // discard past the limit
    if (policy_.limits.output_bytes) {
        uint64_t used = out_capture_.bytes() + err_capture_.bytes();
        uint64_t limit = *policy_.limits.output_bytes;
        if (used + size > limit) {
            size = static_cast<size_t>(limit - used);
            capture.markTruncated();
            kill(Ending::OutputLimit);
        }
    }
    capture.feed(buffer_, size);
    echo.accept(buffer_, size);
    return true;
}

void Supervision::logEcho() const {
    if (!debugEnabled()) return;
    const EchoSink* sinks[] = {&out_echo_, &err_echo_};
    const char* names[] = {"stdout", "stderr"};
    for (int i = 0; i < 2; ++i)
        std::fprintf(stderr, "stockade: debug: echo of the command's %s: %s, %llu bytes dropped\n",
                     names[i], sinks[i]->methodName(),
                     static_cast<unsigned long long>(sinks[i]->dropped()));
}

// A refused syscall waits in the kernel until answered: answer it now, as
// the budget allows (runtime/plan/sandbox_seccomp.h).
void Supervision::answerDenial() {
    const seccomp::CallServer* server = hooks_ ? hooks_->callServer() : nullptr;
    if (!refusals_.answerOne(listener_.get(), server)) listener_.reset();
}

void Supervision::readMessages() {
    ChildMessage msg;
    while (receiveChildMessage(sync_fd_, msg) == sizeof(msg)) {
        if (msg.kind == ChildMessageKind::Finished)
            finished_ = msg;
        else if (!failure_)
            failure_ = msg;  // the first failure is the cause
    }
}

void Supervision::run(SandboxOutcome& out) {
    bool out_open = true, err_open = true, alive = true, sync_open = true;
    // Once the sandbox is gone, what the echo still holds goes out while the
    // caller takes it, but never past the timeout or a signal to stockade;
    // after a bound fired it is dropped at once.
    auto flushing = [&] { return !kill_reason_ && (out_echo_.pending() || err_echo_.pending()); };
    while (alive || out_open || err_open || flushing()) {
        pollfd fds[11];
        nfds_t n = 0;
        auto add = [&](int fd, bool want, short events = POLLIN) -> int {
            if (!want || fd < 0) return -1;
            fds[n] = {fd, events, 0};
            return static_cast<int>(n++);
        };
        auto readable = [&](bool open, const EchoSink& echo) {
            return open && (!pauses() || echo.room() > 0);
        };
        int i_out = add(streams_.out_read.get(), readable(out_open, out_echo_));
        int i_err = add(streams_.err_read.get(), readable(err_open, err_echo_));
        int i_out_echo = add(out_echo_.pollFd(), true, POLLOUT);
        int i_err_echo = add(err_echo_.pollFd(), true, POLLOUT);
        int i_pid = add(pidfd_, alive);
        int i_sync = add(sync_fd_, alive && sync_open);
        int i_sig = add(signal_fd_, true);
        int i_timer = add(timer_fd_, true);
        int i_lsock = add(listener_socket_, alive && !listener_);
        // Past the refusal budget the listener stays out of the set, and
        // poll wakes when the budget allows the next answer.
        const bool answering = alive && listener_ && refusals_.answering();
        int i_listener = add(listener_.get(), answering);
        int i_hooks = add(hooks_ ? hooks_->pollFd() : -1, alive);
        const int wait_ms = alive && listener_ && !answering ? refusals_.pollTimeoutMs() : -1;
        if (poll(fds, n, wait_ms) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        ++wakeups_;
        auto ready = [&](int i) {
            return i >= 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR));
        };
        auto writable = [&](int i) {
            return i >= 0 && (fds[i].revents & (POLLOUT | POLLHUP | POLLERR | POLLNVAL));
        };
        if (writable(i_out_echo)) out_echo_.flush();
        if (writable(i_err_echo)) err_echo_.flush();
        if (ready(i_out)) out_open = pump(streams_.out_read.get(), 1, out_capture_, out_echo_);
        if (ready(i_err)) err_open = pump(streams_.err_read.get(), 2, err_capture_, err_echo_);
        if (ready(i_sync)) {
            readMessages();
            // init closes its end as it exits, some time before the pidfd
            // says so (the namespaces are torn down in between): a hung-up
            // socket left in the set would wake poll all that time.
            if (fds[i_sync].revents & (POLLHUP | POLLERR)) sync_open = false;
        }
        if (ready(i_hooks)) onHooks();
        if (i_listener >= 0) {
            if (fds[i_listener].revents & POLLIN) {
                answerDenial();
            } else if (fds[i_listener].revents & (POLLHUP | POLLERR)) {
                // Every process under the filter is gone: nothing more can
                // be refused, and a hung-up listener would wake poll forever.
                listener_.reset();
                listener_socket_ = -1;
            }
        }
        if (ready(i_lsock)) {
            if (auto listener = seccomp::receiveListener(listener_socket_)) {
                listener_ = std::move(*listener);
                listener_received_ = true;
            } else {
                listener_socket_ = -1;  // hung up without a listener: nothing to report
            }
        }
        // After the sandbox is gone, the timer or a signal only ends the
        // echo's flush: the command's own ending stands.
        if (ready(i_sig)) {
            signalfd_siginfo info;
            if (read(signal_fd_, &info, sizeof(info)) == sizeof(info)) {
                if (alive)
                    cancel(static_cast<int>(info.ssi_signo));
                else
                    abandonEcho();
            }
        }
        if (ready(i_timer)) {
            uint64_t expirations;
            (void)!read(timer_fd_, &expirations, sizeof(expirations));
            if (alive)
                onTimer();
            else
                abandonEcho();
        }
        if (ready(i_pid)) {
            // init is gone, and the kernel reaped every other process of the
            // namespace before reporting it: the pipes' writers are all dead,
            // so what is left in them ends in EOF.
            alive = false;
            readMessages();
            if (sweep_init_ > 0)
                orphans_killed_ += killAllChildrenInChild(sweep_init_, -1, nullptr);
        }
    }

    abandonEcho();  // after a bound fired: what the caller did not take is dropped, counted
    logEcho();

    siginfo_t info{};
    rusage usage{};
    syscall(SYS_waitid, P_PIDFD, pidfd_, &info, WEXITED, &usage);
    out.cpu_ms = static_cast<uint64_t>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000 +
                 static_cast<uint64_t>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1000;
    out.peak_memory_bytes = static_cast<uint64_t>(usage.ru_maxrss) * 1024;
    out.stdout_summary = out_capture_.finish();
    out.stderr_summary = err_capture_.finish();
    out.cancel_signal = cancel_signal_;
    out.denials_reported = listener_received_;
    out.denials = refusals_.denials();
    listener_.reset();

    if (failure_ && failure_->kind == ChildMessageKind::SetupFailed) {
        out.ending = Ending::SetupFailed;
        return;  // described by the caller, which has the plan
    }
    if (kill_reason_) {
        out.ending = *kill_reason_;
        if (finished_) {
            out.stragglers_killed = finished_->stragglers;
            int status = finished_->wait_status;
            if (WIFSIGNALED(status)) out.signal = WTERMSIG(status);
            out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        return;
    }
    if (failure_ && failure_->kind == ChildMessageKind::ExecFailed) {
        out.ending = failure_->err == ENOENT || failure_->err == ENOTDIR ? Ending::NotFound
                                                                         : Ending::NotExecutable;
        out.error_errno = failure_->err;
        out.exit_code = out.ending == Ending::NotFound ? 127 : 126;
        return;
    }
    if (finished_) {
        int status = finished_->wait_status;
        out.stragglers_killed = finished_->stragglers;
        if (WIFEXITED(status)) {
            out.ending = Ending::Exited;
            out.exit_code = WEXITSTATUS(status);
        } else {
            out.ending = Ending::Signaled;
            out.signal = WTERMSIG(status);
            out.exit_code = 128 + out.signal;
        }
        return;
    }
    // init died without a word: something outside killed it.
    out.ending = Ending::Signaled;
    out.signal =
        info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED ? info.si_status : SIGKILL;
    out.exit_code = 128 + out.signal;
}

}  // namespace stockade
