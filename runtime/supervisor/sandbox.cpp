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
#include "runtime/child/child_setup.h"
#include "runtime/child/descendants_in_child.h"
#include "runtime/plan/child_plan_builder.h"
#include "runtime/plan/lower_tier_plan.h"
#include "runtime/plan/sandbox_seccomp.h"
#include "runtime/supervisor/cancel_hold.h"
#include "runtime/supervisor/echo_sink.h"
#include "runtime/supervisor/enforcement.h"
#include "runtime/supervisor/sandbox_launch.h"
#include "runtime/supervisor/supervision.h"
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

}  // namespace

namespace {

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

// Why the full tier cannot be had on this host, when a failed run says so.
struct FullTierBlock {
    // The clone, or the first mount in the namespace, failed in a way that
    // means no user namespace with capabilities can be had here.
    bool user_ns = false;
    // A step that fills a namespace (one the lower tier leaves out, so the
    // lower tier does not meet it again) was refused by the host: a
    // container's read-only /proc/sys or masked /proc, its seccomp profile,
    // an idmapped mount its kernel or filesystem refuses. Nothing of the
    // command ran; the step and its errno name the cause.
    bool setup = false;
    std::string step;
    int err = 0;
    bool blocked() const { return user_ns || setup; }
};

// The errnos by which a host refuses what a namespace setup step asks:
// privilege and policy (EPERM, EACCES), a read-only or masked /proc (EROFS),
// a limit of zero (ENOSPC), an unsupported operation (EINVAL, ENOSYS).
// Never ENOENT and the like, which a profile's own paths cause.
bool hostRefused(int err) {
    return err == EPERM || err == EACCES || err == EROFS || err == ENOSPC || err == EINVAL ||
           err == ENOSYS;
}

// `tier`: the full sandbox, or the lower one. *block (full tier): why the
// full tier cannot be had here, when the failure says so.
SandboxOutcome runSandboxIn(const Policy& policy, ServiceHooks* hooks, const Identity* chosen,
                            Tier tier, FullTierBlock* block) {
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
    if (geteuid() == 0 && setgroups(0, nullptr) < 0) {
        // Root of a user namespace whose setgroups(2) is denied (a rootless
        // container's, /proc/self/setgroups "deny"): with no group to drop
        // there is nothing to shed; with some, say why they stay.
        const int err = errno;
        if (err != EPERM || getgroups(0, nullptr) != 0)
            return setupFailure(
                "drop supplementary groups",
                Error::fromErrno(err == EPERM ? "setgroups(0) (this user namespace denies "
                                                "setgroups: /proc/self/setgroups; start stockade "
                                                "with no supplementary groups)"
                                              : "setgroups(0)",
                                 err));
    }

    ns::IdmappedTree idmapped;
    if (identity->idmap_worktree && !lower) {
        auto tree = ns::makeIdmappedTree(policy.fs.worktree_held.get(), *policy.fs.worktree,
                                         identity->worktree_uid, identity->worktree_gid,
                                         identity->ids.host_uid, identity->ids.host_gid);
        if (!tree) {
            // Its own user namespace (for the idmap) refused: as the
            // sandbox's clone would be, so the same tier decision follows.
            const int err = tree.error().errnum();
            if (block && tree.error().text().find("CLONE_NEWUSER") != std::string::npos &&
                (err == EPERM || err == ENOSPC || err == EINVAL || err == ENOSYS)) {
                block->user_ns = true;
            } else if (block && hostRefused(err)) {
                // The mount API refused (open_tree, mount_setattr, the
                // helper's /proc/PID/ns/user): the lower tier needs no idmap.
                block->setup = true;
                block->step = "make the worktree writable through an idmapped mount";
                block->err = err;
            }
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
    if (!lower) enforcement.layout = summarizeLayout(plan->mounts);
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
    sigset_t cancel;
    cancelSignals(&cancel);
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
    // A cancel that came while the run was planned (held since `run`
    // began, cancel_hold.h, or queued since the block above) ends it here:
    // nothing is started for it, and the record says only that.
    signalfd_siginfo info{};
    if (const int held = heldCancel();
        held != 0 || read(signal_fd.get(), &info, sizeof info) == sizeof info) {
        restore();
        SandboxOutcome out;
        out.ending = Ending::Cancelled;
        out.cancel_signal = held != 0 ? held : static_cast<int>(info.ssi_signo);
        out.stdout_summary = out.stderr_summary = OutputCapture().finish();
        out.duration_ms = msSince(start);
        return out;
    }
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
        if (block) block->user_ns = launched.user_ns_refused;
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
    std::optional<Error> service_failed;
    if (hooks)
        if (Status s = hooks->started(static_cast<pid_t>(pid), inside); !s) {
            service_failed = s.error();
            supervision.abortSetup();
        }
    supervision.run(out);
    if (service_failed) {
        out.ending = Ending::SetupFailed;
        out.error_stage = "serve";
        out.error_message = service_failed->text();
        out.error_errno = service_failed->errnum();
    }
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
        const int err = supervision.failure()->err;
        if (block && !lower &&
            (stage == ChildStage::PrivateMounts || stage == ChildStage::OpenSources ||
             stage == ChildStage::BuildRoot) &&
            looksLikeUnprivilegedUserNamespace(err)) {
            block->user_ns = true;
        } else if (block && !lower && !lowerTierRuns(stage) && hostRefused(err) &&
                   stage != ChildStage::OpenSources && stage != ChildStage::BuildRoot) {
            // Not the root's own mounts: their sources are the profile's and
            // the caller's (--mount, the worktree), whose failure is theirs
            // to fix, not the host's to excuse.
            block->setup = true;
            block->step = describeStage(stage);
            block->err = err;
        }
    }
    out.duration_ms = msSince(start);
    if (out.masks) {
        noteCreatedMaskedNames(policy, *out.masks);
        steps.done("look for hidden or read-only names the run created");
    }
    out.supervisor_cpu_ms = (threadCpuNs() - cpu_start) / 1000000;
    return out;
}

}  // namespace

SandboxOutcome runSandbox(const Policy& policy, ServiceHooks* hooks, const Identity* chosen) {
    FullTierBlock block;
    SandboxOutcome out = runSandboxIn(policy, hooks, chosen, Tier::Full, &block);
    out.tier = Tier::Full;
    if (!block.blocked()) return out;
    const int err = out.error_errno;
    std::string what, reason, fix;
    if (block.user_ns) {
        const bool apparmor = out.error_stage != "create the namespaces" &&
                              out.error_stage.find("idmapped") == std::string::npos;
        what = "no user namespace can be had here";
        reason = apparmor ? "the user namespace has no capabilities in it "
                            "(kernel.apparmor_restrict_unprivileged_userns = 1: Ubuntu's AppArmor "
                            "rule)"
                          : userNamespaceRefusalReason(err);
        fix = apparmor
                  ? "install stockade's AppArmor profile for this binary (see `stockade check`)"
                  : userNamespaceRefusalFix(err);
    } else {
        what = "the full sandbox cannot be built here";
        reason = "the host refuses the step \"" + block.step + "\" (" + errnoName(block.err) +
                 "), as a container's read-only /proc/sys, masked /proc or seccomp profile does";
        fix =
            "give the container an unmasked /proc and user namespaces (docs/ci-runners.md; "
            "`stockade check` names what is missing)";
    }
    if (policy.min_tier != Tier::Landlock) {
        // Never a weaker run than allowed: the refusal names the cause,
        // the host's fix, and the tier a profile could accept instead.
        out.tier_advice = what + ": " + reason + ". Fix: " + fix + "; " + kLowerTierHint;
        return out;
    }
    std::fprintf(stderr,
                 "stockade: %s (%s); running the lower tier, as --min-tier landlock allows (the "
                 "result's degraded lists what it loses)\n",
                 what.c_str(), reason.c_str());
    SandboxOutcome lower = runSandboxIn(policy, hooks, chosen, Tier::Landlock, nullptr);
    lower.tier = Tier::Landlock;
    return lower;
}

}  // namespace stockade
