// The supervisor's event loop: from the clone until the sandbox is gone, it
// drains the command's output (capture and echo, never blocking on a reader),
// answers refused calls through the seccomp listener, takes signals and the
// timer, reads init's messages, and says how the run ended.
#pragma once

#include <signal.h>
#include <sys/timerfd.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>

#include "base/error.h"
#include "base/unique_fd.h"
#include "runtime/child/child_protocol.h"
#include "runtime/plan/sandbox_seccomp.h"
#include "runtime/policy/policy.h"
#include "runtime/supervisor/echo_sink.h"
#include "runtime/supervisor/output_capture.h"
#include "runtime/supervisor/sandbox.h"
#include "runtime/supervisor/service_hooks.h"

namespace stockade {

struct Streams {
    UniqueFd out_read, err_read;
    UniqueFd out_write, err_write;
};

// The capture pipes, both ends close-on-exec.
Result<Streams> makeStreams();

// What the supervisor's event loop tracks until the sandbox is gone.
class Supervision {
  public:
    Supervision(const Policy& policy, FilterSource filter, int pidfd, Streams& streams, int sync_fd,
                int signal_fd, int timer_fd, int listener_socket, ServiceHooks* hooks)
        : policy_(policy),
          pidfd_(pidfd),
          streams_(streams),
          sync_fd_(sync_fd),
          signal_fd_(signal_fd),
          timer_fd_(timer_fd),
          listener_socket_(listener_socket),
          hooks_(hooks),
          refusals_(std::move(filter)),
          out_echo_(echoFdFor(policy, hooks, 1)),
          err_echo_(echoFdFor(policy, hooks, 2)) {}

    void run(SandboxOutcome& out);
    // The child's first failure, if it reported one.
    const std::optional<ChildMessage>& failure() const { return failure_; }
    // How often poll returned: a handful for a quiet run, one more per chunk
    // of output or refused call. An fd left in the set after it hung up
    // makes poll return at once, again and again, and shows here as
    // thousands (--log-level debug logs it).
    uint64_t wakeups() const { return wakeups_; }
    // How often the refusal budget ran out and refused calls waited.
    uint64_t refusalBudgetExhausted() const { return refusals_.budgetExhausted(); }
    void logEcho() const;
    // The lower tier: stockade is a subreaper too, and once init is gone
    // (killed by the fallback before its own sweep) what it left is
    // stockade's children; killed here before the pipes are drained, since
    // no namespace's end takes them.
    void sweepOrphansOf(pid_t init) { sweep_init_ = init; }
    // A service's own setup failed once the sandbox was up (its hooks'
    // started()): the sandbox is killed, and the run is SetupFailed.
    void abortSetup() { kill(Ending::SetupFailed); }
    uint32_t orphansKilled() const { return orphans_killed_; }

  private:
    pid_t sweep_init_ = 0;
    uint32_t orphans_killed_ = 0;
    static int echoFdFor(const Policy& policy, ServiceHooks* hooks, int stream) {
        if (hooks) return hooks->echoFd(stream);
        return policy.quiet ? -1 : stream;
    }
    // A one-shot run's echo holds back the sandbox's pipe while it is full:
    // the command waits as the writer of any full pipe would, and a slow
    // reader (`| less`, `| wc -l`) still gets every byte. A service's echo
    // drops instead: its log has every byte, and a stalled terminal must not
    // stall the server. Once a bound has fired, or the echo was abandoned,
    // nothing holds back: what is left is read, counted and hashed at once.
    bool pauses() const { return !hooks_ && !kill_reason_ && !echo_abandoned_; }
    void abandonEcho() {
        echo_abandoned_ = true;
        out_echo_.abandon();
        err_echo_.abandon();
    }
    // Asks init to kill everything and report (so stragglers are counted
    // and the command's status is known); if init has not finished within a
    // second, the kernel does it: SIGKILL to init ends the whole namespace.
    // Where the request or the fallback timer cannot be had, SIGKILL at once.
    void kill(Ending why) {
        if (!kill_reason_) kill_reason_ = why;
        if (phase_ >= Phase::KillRequested) return;
        phase_ = Phase::KillRequested;
        if (syscall(SYS_pidfd_send_signal, pidfd_, SIGRTMIN, nullptr, 0) < 0 || !arm(1000))
            forceKill();
    }
    void forceKill() {
        phase_ = Phase::Forced;
        syscall(SYS_pidfd_send_signal, pidfd_, SIGKILL, nullptr, 0);
    }
    // SIGINT/SIGTERM/SIGHUP to stockade: passed on to the command (through
    // init), as a shell would; whatever is still running after the grace
    // period is killed. A second signal kills at once.
    void cancel(int sig) {
        if (kill_reason_) {
            kill(*kill_reason_);
            return;
        }
        kill_reason_ = Ending::Cancelled;
        cancel_signal_ = sig;
        phase_ = Phase::Forwarded;
        // No grace period without a timer to end it: killed at once.
        if (syscall(SYS_pidfd_send_signal, pidfd_, sig, nullptr, 0) < 0 || !arm(kCancelGraceMs))
            kill(Ending::Cancelled);
    }
    void onTimer() {
        switch (phase_) {
            case Phase::Running:
                kill(Ending::TimedOut);
                break;
            case Phase::Forwarded:
                kill(Ending::Cancelled);
                break;
            case Phase::KillRequested:
                forceKill();
                break;
            case Phase::Forced:
                break;
        }
    }
    bool arm(long ms) {
        itimerspec when{};
        when.it_value.tv_sec = ms / 1000;
        when.it_value.tv_nsec = (ms % 1000) * 1000000;
        return timerfd_settime(timer_fd_, 0, &when, nullptr) == 0;
    }
    static constexpr long kCancelGraceMs = 2000;
    enum class Phase { Running, Forwarded, KillRequested, Forced };
    Phase phase_ = Phase::Running;
    // Returns false at EOF.
    bool pump(int fd, int stream, OutputCapture& capture, EchoSink& echo);
    void onHooks() {
        if (auto ending = hooks_->onReadable()) kill(*ending);
    }
    void readMessages();

    const Policy& policy_;
    int pidfd_;
    Streams& streams_;
    void answerDenial();

    int sync_fd_, signal_fd_, timer_fd_;
    int listener_socket_;
    ServiceHooks* hooks_;
    UniqueFd listener_;
    bool listener_received_ = false;
    RefusalAnswering refusals_;
    OutputCapture out_capture_, err_capture_;
    std::optional<Ending> kill_reason_;
    int cancel_signal_ = 0;
    std::optional<ChildMessage> failure_;
    std::optional<ChildMessage> finished_;
    uint64_t wakeups_ = 0;
    EchoSink out_echo_, err_echo_;
    bool echo_abandoned_ = false;
    char buffer_[1 << 18];  // 256 KiB: fewer reads per byte when a command floods its output
};

}  // namespace stockade
