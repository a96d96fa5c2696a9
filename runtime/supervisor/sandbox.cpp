#include "runtime/supervisor/sandbox.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>

#include "base/fault_injection.h"
#include "base/log.h"
#include "base/unique_fd.h"
#include "namespaces/user.h"
#include "runtime/cgroups/cgroup_limits.h"
#include "runtime/child/child_protocol.h"
#include "runtime/child/descendants_in_child.h"
#include "runtime/plan/child_plan_builder.h"
#include "runtime/plan/lower_tier_plan.h"
#include "runtime/plan/sandbox_seccomp.h"
#include "runtime/supervisor/echo_sink.h"
#include "runtime/supervisor/sandbox_launch.h"
#include "runtime/supervisor/supervisor_hardening.h"
#include "runtime/supervisor/tier_reasons.h"
#include "seccomp/denials.h"

namespace stockade {

namespace {

using Clock = std::chrono::steady_clock;

// CLOCK_THREAD_CPUTIME_ID, not RUSAGE_SELF: a process that runs several
// sandboxes (a test harness, a client library's host) is charged per run.
uint64_t threadCpuNs() {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return static_cast<uint64_t>(now.tv_sec) * 1000000000 + static_cast<uint64_t>(now.tv_nsec);
}

uint64_t msSince(Clock::time_point start) {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
}

// --log-level debug: where the child side notes the end of each stage
// (ChildPlan::stage_times), in a shared page, and the log of them after the
// run, in the order they happened.
class ChildTimes {
  public:
    ChildTimes() {
        if (!debugEnabled()) return;
        void* page =
            mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (page != MAP_FAILED) slots_ = static_cast<uint64_t*>(page);
        timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        start_ =
            static_cast<uint64_t>(now.tv_sec) * 1000000000ull + static_cast<uint64_t>(now.tv_nsec);
    }
    ~ChildTimes() {
        if (slots_) munmap(slots_, kBytes);
    }
    ChildTimes(const ChildTimes&) = delete;
    ChildTimes& operator=(const ChildTimes&) = delete;
    uint64_t* slots() { return slots_; }

    void log() const {
        if (!slots_) return;
        std::vector<std::pair<uint64_t, int>> marks;
        for (int i = 0; i < ChildPlan::kStageSlots; ++i)
            if (slots_[i]) marks.emplace_back(slots_[i], i);
        std::sort(marks.begin(), marks.end());
        uint64_t last = start_;
        for (const auto& [when, slot] : marks) {
            const char* what = slot == ChildPlan::kCommandEndedSlot ? "init: the command ended"
                               : slot == ChildPlan::kInitDoneSlot
                                   ? "init: every straggler killed and reaped"
                                   : describeStage(static_cast<ChildStage>(slot));
            std::fprintf(stderr, "stockade: debug:   %8.3f ms    child: %s\n",
                         static_cast<double>(when - last) / 1e6, what);
            last = when;
        }
    }

  private:
    static constexpr size_t kBytes = ChildPlan::kStageSlots * sizeof(uint64_t);
    uint64_t* slots_ = nullptr;
    uint64_t start_ = 0;
};

// What will hold each guarantee in this run; limits that no cgroup can hold
// fall back to rlimits on the command, which are weaker (per process, or per
// user for RLIMIT_NPROC) and so are listed as degraded.
SandboxOutcome enforcementFor(const Policy& policy, const SandboxCgroups& cgroups,
                              const ChildPlan& plan, const PlanFindings& findings) {
    SandboxOutcome out;
    for (const char* ns : {"user_ns", "mount_ns", "pid_ns", "net_ns", "ipc_ns", "uts_ns",
                           "cgroup_ns", "no_new_privs"})
        out.enforced[ns] = "true";
    out.enforced["capabilities"] = "none";
    out.git = findings.git;
    out.masks = findings.masks;
    if (!plan.seccomp_program.empty())
        out.enforced["seccomp"] = policy.seccomp == "default" ? "default" : "custom";
    if (policy.limits.cpu_time_ms) out.enforced["cpu_time"] = "rlimit";
    if (plan.landlock.active())
        out.enforced["landlock"] = plan.landlock.enforcedName();
    else if (policy.landlock == LandlockMode::BestEffort)
        out.degraded.push_back("landlock");
    if (policy.limits.memory_bytes) {
        if (const char* m = mechanismName(cgroups.memory())) {
            out.enforced["memory"] = m;
        } else {  // RLIMIT_DATA (addLimitFallbacks)
            out.enforced["memory"] = "rlimit";
            out.degraded.push_back("memory");
        }
    }
    if (policy.limits.pids) {
        if (const char* m = mechanismName(cgroups.pids())) {
            out.enforced["pids"] = m;
        } else {  // RLIMIT_NPROC (addLimitFallbacks)
            out.enforced["pids"] = "rlimit";
            out.degraded.push_back("pids");
        }
    }
    return out;
}

// A required guarantee holds when something enforces it at full strength.
std::string missingRequirements(const Policy& policy, const SandboxOutcome& e) {
    std::string missing;
    for (const std::string& r : policy.require) {
        bool held = e.enforced.count(r) > 0 &&
                    std::find(e.degraded.begin(), e.degraded.end(), r) == e.degraded.end();
        if (!held) missing += (missing.empty() ? "" : ", ") + r;
    }
    return missing;
}

struct Streams {
    UniqueFd out_read, err_read;
    UniqueFd out_write, err_write;
};

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
    while (recv(sync_fd_, &msg, sizeof(msg), MSG_DONTWAIT) == sizeof(msg)) {
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

}  // namespace

namespace {

// The lower tier's record: what holds each guarantee without namespaces,
// and, in `degraded`, each one lost (lowerTierDegraded).
SandboxOutcome lowerTierEnforcement(const Policy& policy, const SandboxCgroups& cgroups,
                                    const ChildPlan& plan, size_t read_only_names) {
    SandboxOutcome out = enforcementFor(policy, cgroups, plan, PlanFindings{});
    for (const char* ns :
         {"user_ns", "mount_ns", "pid_ns", "net_ns", "ipc_ns", "uts_ns", "cgroup_ns"})
        out.enforced.erase(ns);
    std::vector<std::string> lost = lowerTierDegraded(policy, plan, read_only_names);
    out.degraded.insert(out.degraded.end(), lost.begin(), lost.end());
    return out;
}

// The lower tier's ids, its private TMPDIR (held in `tmp` until the run
// returns) and its plan.
Result<ChildPlan> planLowerTier(const Policy& policy, const Identity& identity,
                                std::optional<LowerTierTmp>& tmp, size_t* read_only_names) {
    auto ids = lowerTierIds(policy, identity);
    if (!ids) return ids.error().withContext("choose the lower tier's ids");
    auto made = LowerTierTmp::create(ids->host_uid, ids->host_gid);
    if (!made) return made.error().withContext("make the run's private TMPDIR");
    tmp.emplace(std::move(*made));
    return buildLowerTierPlan(policy, *ids, tmp->path(), read_only_names);
}

// `tier`: the full sandbox, or the lower one. *user_ns_refused (full tier):
// the clone, or the first mount in the namespace, failed in a way that
// means no user namespace with capabilities can be had here.
SandboxOutcome runSandboxIn(const Policy& policy, ServiceHooks* hooks, const Identity* chosen,
                            Tier tier, bool* user_ns_refused) {
    const bool lower = tier == Tier::Landlock;
    if (lower && hooks)
        return setupFailure("build the lower tier",
                            Error::message("a dev server needs a network namespace; the lower "
                                           "tier runs no service"));
    auto start = Clock::now();
    const uint64_t cpu_start = threadCpuNs();
    StepLog steps;
    // Held until the run returns: the leased host id stays this sandbox's
    // until nothing of it is left.
    std::optional<Identity> own_identity;
    if (!chosen) {
        auto identity = chooseIdentity(policy);
        if (!identity) return setupFailure("choose the sandbox's identity", identity.error());
        own_identity = std::move(*identity);
        chosen = &*own_identity;
    }
    const Identity* identity = chosen;
    steps.done("choose the sandbox's identity");

    // As root, shed supplementary groups first: the clone inherits them, and
    // a sandbox that kept host gid 0 as a supplementary group could use it
    // on any host file that mount left visible.
    if (geteuid() == 0 && setgroups(0, nullptr) < 0)
        return setupFailure("drop supplementary groups", Error::fromErrno("setgroups(0)"));

    ns::IdmappedTree idmapped;
    if (identity->idmap_worktree && !lower) {
        auto tree = ns::makeIdmappedTree(policy.fs.worktree_held.get(), *policy.fs.worktree,
                                         identity->worktree_uid, identity->worktree_gid,
                                         identity->ids.host_uid, identity->ids.host_gid);
        if (!tree) {
            // Its own user namespace (for the idmap) refused: as the
            // sandbox's clone would be, so the same tier decision follows.
            const int err = tree.error().errnum();
            if (user_ns_refused && tree.error().text().find("CLONE_NEWUSER") != std::string::npos &&
                (err == EPERM || err == ENOSPC || err == EINVAL || err == ENOSYS))
                *user_ns_refused = true;
            return setupFailure("make the worktree writable through an idmapped mount",
                                tree.error());
        }
        idmapped = std::move(*tree);
        steps.done("make the worktree writable through an idmapped mount");
    }
    // The lower tier's private TMPDIR lives until the run returns.
    std::optional<LowerTierTmp> lower_tmp;
    size_t read_only_names = 0;
    PlanFindings findings;
    FilterSource filter_source;
    // One expression, so the full tier's plan is built in place as before.
    auto plan = lower ? planLowerTier(policy, *identity, lower_tmp, &read_only_names)
                      : buildChildPlan(policy, *identity, idmapped.tree, findings);
    if (!plan)
        return setupFailure(lower ? "plan the lower tier" : "plan the sandbox", plan.error());
    steps.done("plan the sandbox (mounts, environment, Landlock rules)");
    if (auto s = lower ? compileLowerTierSeccompInto(policy, *plan, filter_source)
                       : compileSeccompInto(policy, *plan, filter_source);
        !s)
        return setupFailure("compile the seccomp filter", s.error());
    steps.done("choose the seccomp filter");

    // Where this process's cgroups are, read once for the sweep and the leaves.
    const CgroupLayout layout = CgroupLayout::ofThisProcess();
    auto cgroups = SandboxCgroups::create({policy.limits.memory_bytes, policy.limits.pids}, layout);
    if (!cgroups) return setupFailure("set up the sandbox's cgroups", cgroups.error());
    steps.done("choose the sandbox's cgroups (v2: make its leaf)");
    addLimitFallbacks(policy.limits, *cgroups, *plan);
    SandboxOutcome enforcement =
        lower ? lowerTierEnforcement(policy, *cgroups, *plan, read_only_names)
              : enforcementFor(policy, *cgroups, *plan, findings);
    if (auto missing = missingRequirements(policy, enforcement); !missing.empty()) {
        SandboxOutcome out = std::move(enforcement);
        out.ending = Ending::Refused;
        out.error_stage = "require";
        out.error_message = "required guarantee cannot be enforced on this host: " + missing +
                            " (see `stockade check`)";
        return out;
    }
    auto streams = makeStreams();
    if (!streams) return setupFailure("create the output pipes", streams.error());
    plan->stdout_fd = streams->out_write.get();
    plan->stderr_fd = streams->err_write.get();
    ChildTimes child_times;
    plan->stage_times = child_times.slots();
    const FaultPoint fault = injectedFault();
    plan->injected_fault = fault;

    // Signals that end or steer the run arrive through a signalfd; they stay
    // blocked in the clone, whose init takes them with sigwaitinfo. Each of
    // these calls is checked: without the signalfd, cancellation would not
    // reach the sandbox; without the timer, neither --timeout nor the kill
    // fallback would hold. Either is a refusal, never a run without them.
    sigset_t mask = signalsForInit(), old_mask;
    if (faultInjected(FaultPoint::Sigprocmask, fault) ||
        sigprocmask(SIG_BLOCK, &mask, &old_mask) < 0)
        return setupFailure("take stockade's signals through a signalfd",
                            Error::fromErrno("sigprocmask(SIG_BLOCK)"));
    auto restore = [&] { sigprocmask(SIG_SETMASK, &old_mask, nullptr); };
    signal(SIGPIPE, SIG_IGN);
    sigset_t cancel;
    sigemptyset(&cancel);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&cancel, sig);
    UniqueFd signal_fd(faultInjected(FaultPoint::SignalFd, fault)
                           ? -1
                           : signalfd(-1, &cancel, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!signal_fd) {
        Error error = Error::fromErrno("signalfd(SIGINT|SIGTERM|SIGHUP)");
        restore();
        return setupFailure("take stockade's signals through a signalfd", error);
    }
    UniqueFd timer_fd(faultInjected(FaultPoint::TimerFdCreate, fault)
                          ? -1
                          : timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
    if (!timer_fd) {
        Error error = Error::fromErrno("timerfd_create(CLOCK_MONOTONIC)");
        restore();
        return setupFailure("create the timer for --timeout and the kill fallback", error);
    }
    if (policy.limits.timeout_ms) {
        itimerspec when{};
        when.it_value.tv_sec = static_cast<time_t>(*policy.limits.timeout_ms / 1000);
        when.it_value.tv_nsec = static_cast<long>(*policy.limits.timeout_ms % 1000) * 1000000;
        if (faultInjected(FaultPoint::TimerFdSettime, fault) ||
            timerfd_settime(timer_fd.get(), 0, &when, nullptr) < 0) {
            Error error = Error::fromErrno("timerfd_settime(" +
                                           std::to_string(*policy.limits.timeout_ms) + " ms)");
            restore();
            return setupFailure("arm --timeout", error);
        }
    }

    steps.done("pipes, signal and timer fds");
    // CLONE_NEWCGROUP is left to the child, after it has joined its v1
    // cgroups, so the namespace's root is the sandbox's own.
    LaunchSpec spec;
    spec.namespaces = lower ? 0
                            : CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET |
                                  CLONE_NEWIPC | CLONE_NEWUTS;
    spec.lower_tier = lower;
    // The lower tier: what init's death orphans comes to stockade, not to
    // the host's init, and is swept (Supervision::sweepOrphansOf).
    if (lower && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
        Error error = Error::fromErrno("prctl(PR_SET_CHILD_SUBREAPER, 1)");
        restore();
        return setupFailure("make stockade the sandbox's subreaper", error);
    }
    spec.ids = &identity->ids;
    spec.cgroups = &*cgroups;
    spec.hooks = hooks;
    spec.fault = fault;
    spec.after_clone = [&] {
        // The child holds its own copy of the idmapped worktree: closed here
        // now, the last close comes with the sandbox's mount namespace.
        // Closed at the end instead, it would unmount the detached tree and
        // wait for an expedited RCU grace period in the supervisor, after
        // the run.
        idmapped.tree.reset();
        streams->out_write.reset();
        streams->err_write.reset();
        // The held host paths cloned for the child: its copies now. (bench
        // keeps its plan's, for every run of the same plan.)
        plan->prepared.clear();
    };
    LaunchedSandbox launched;
    SandboxOutcome failed;
    if (!launchSandbox(*plan, spec, launched, failed)) {
        restore();
        if (user_ns_refused) *user_ns_refused = launched.user_ns_refused;
        return failed;
    }
    const long pid = launched.pid;
    const int pidfd = launched.pidfd.get();
    steps.done("clone3 with the new namespaces, the id maps, go, the v1 cgroup leaves");
    SandboxOutcome out = std::move(enforcement);
    out.sandbox_pid = launched.pid;
    out.host_uid = lower ? plan->ids.host_uid : identity->ids.host_uid;
    out.host_gid = lower ? plan->ids.host_gid : identity->ids.host_gid;
    // Leaves a killed stockade left behind: swept while the child starts
    // its command, off the path to it.
    removeStaleCgroups(layout);

    Supervision supervision(policy, std::move(filter_source), pidfd, *streams, launched.sync.get(),
                            signal_fd.get(), timer_fd.get(), launched.listener.get(), hooks);
    if (lower) supervision.sweepOrphansOf(launched.pid);
    InsideSockets inside(launched.factory.get());
    if (hooks) hooks->started(static_cast<pid_t>(pid), inside);
    supervision.run(out);
    steps.done("run: the child's setup, the command, the teardown of the namespace");
    child_times.log();
    if (debugEnabled())
        std::fprintf(stderr,
                     "stockade: debug: the supervisor woke %llu times; the refusal budget ran out "
                     "%llu times\n",
                     static_cast<unsigned long long>(supervision.wakeups()),
                     static_cast<unsigned long long>(supervision.refusalBudgetExhausted()));
    restore();
    if (policy.limits.cpu_time_ms)
        out.cpu_limit_ms = (*policy.limits.cpu_time_ms + 999) / 1000 * 1000;
    CgroupEvents events = cgroups->events();
    steps.done("read the cgroups' events");
    out.oom_killed = events.oom_killed;
    out.pids_limit_hit = events.pids_limit_hit;
    if (events.peak_memory) out.peak_memory_bytes = events.peak_memory;
    out.stragglers_killed += supervision.orphansKilled();
    if (out.ending == Ending::SetupFailed && supervision.failure()) {
        childSetupFailure(*supervision.failure(), *plan, out);
        // Ubuntu's rule: a user namespace without capabilities, whose first
        // mount fails. Judged only here, on the failure path.
        const ChildStage stage = supervision.failure()->stage;
        if (user_ns_refused && !lower &&
            (stage == ChildStage::PrivateMounts || stage == ChildStage::OpenSources ||
             stage == ChildStage::BuildRoot) &&
            looksLikeUnprivilegedUserNamespace(supervision.failure()->err))
            *user_ns_refused = true;
    }
    out.duration_ms = msSince(start);
    if (out.masks) noteCreatedMaskedNames(policy, *out.masks);
    out.supervisor_cpu_ms = (threadCpuNs() - cpu_start) / 1000000;
    return out;
}

}  // namespace

SandboxOutcome runSandbox(const Policy& policy, ServiceHooks* hooks, const Identity* chosen) {
    bool user_ns_refused = false;
    SandboxOutcome out = runSandboxIn(policy, hooks, chosen, Tier::Full, &user_ns_refused);
    out.tier = Tier::Full;
    if (!user_ns_refused) return out;
    const int err = out.error_errno;
    const bool apparmor = out.error_stage != "create the namespaces" &&
                          out.error_stage.find("idmapped") == std::string::npos;
    const std::string reason =
        apparmor ? "the user namespace has no capabilities in it "
                   "(kernel.apparmor_restrict_unprivileged_userns = 1: Ubuntu's AppArmor rule)"
                 : userNamespaceRefusalReason(err);
    const std::string fix =
        apparmor ? "install stockade's AppArmor profile for this binary (see `stockade check`)"
                 : userNamespaceRefusalFix(err);
    if (policy.min_tier != Tier::Landlock) {
        // Never a weaker run than allowed: the refusal names the cause,
        // the host's fix, and the tier a profile could accept instead.
        out.tier_advice = "no user namespace can be had here: " + reason + ". Fix: " + fix + "; " +
                          kLowerTierHint;
        return out;
    }
    std::fprintf(stderr,
                 "stockade: no user namespace can be had here (%s); running the lower tier, as "
                 "--min-tier landlock allows (the result's degraded lists what it loses)\n",
                 reason.c_str());
    SandboxOutcome lower = runSandboxIn(policy, hooks, chosen, Tier::Landlock, nullptr);
    lower.tier = Tier::Landlock;
    return lower;
}

}  // namespace stockade
