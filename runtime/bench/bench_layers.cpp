#include "runtime/bench/bench_layers.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>

#include "namespaces/landlock.h"
#include "namespaces/user.h"
#include "runtime/child/child_protocol.h"
#include "runtime/plan/child_plan_builder.h"
#include "runtime/plan/sandbox_seccomp.h"
#include "runtime/supervisor/sandbox_launch.h"
#include "seccomp/denials.h"

namespace stockade {

namespace {

bool at(BenchLevel have, BenchLevel level) {
    return static_cast<int>(have) >= static_cast<int>(level);
}

// The namespaces each level's sandbox has. CLONE_NEWCGROUP is the child's
// own unshare (the table's CgroupNamespace step), as in runSandbox.
uint64_t namespacesFor(BenchLevel level) {
    uint64_t flags = 0;
    if (at(level, BenchLevel::UserNs)) flags |= CLONE_NEWUSER;
    if (at(level, BenchLevel::MountNs)) flags |= CLONE_NEWNS;
    if (at(level, BenchLevel::PidNs)) flags |= CLONE_NEWPID;
    if (at(level, BenchLevel::NetNs)) flags |= CLONE_NEWNET;
    if (at(level, BenchLevel::OtherNs)) flags |= CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;
    return flags;
}

bool isProcOp(const ns::MountOp& op) {
    return op.kind == ns::MountKind::Proc || op.target == "proc" || op.target.starts_with("proc/");
}

// The child's own account of a failed step, or what its exit says.
Error childFailure(BenchLevel level, int sync_fd, const siginfo_t& info) {
    std::string name = benchLevels()[static_cast<size_t>(level)].name;
    ChildMessage msg{};
    if (sync_fd >= 0 && receiveChildMessage(sync_fd, msg) == sizeof(msg) &&
        msg.kind != ChildMessageKind::Finished)
        return Error::fromErrno("bench level " + name + ": " + describeStage(msg.stage), msg.err);
    if (info.si_code == CLD_EXITED)
        return Error::message("bench level " + name + ": /bin/true exited with " +
                              std::to_string(info.si_status));
    return Error::message("bench level " + name + ": killed by signal " +
                          std::to_string(info.si_status));
}

std::string mechanismOr(CgroupMechanism m) {
    const char* name = mechanismName(m);
    return name ? name : "rlimit";
}

}  // namespace

const std::array<BenchLevelInfo, kBenchLevelCount>& benchLevels() {
    static const std::array<BenchLevelInfo, kBenchLevelCount> levels = {{
        {BenchLevel::Bare, "bare", "bare fork+exec"},
        {BenchLevel::UserNs, "user_ns", "+ user namespace"},
        {BenchLevel::MountNs, "mount_ns", "+ mount namespace, fresh root"},
        {BenchLevel::PidNs, "pid_ns", "+ PID namespace, init, /proc"},
        {BenchLevel::NetNs, "net_ns", "+ network namespace (lo up)"},
        {BenchLevel::OtherNs, "ipc_uts_cgroup_ns", "+ IPC, UTS, cgroup namespaces"},
        {BenchLevel::Seccomp, "seccomp", "+ seccomp (default filter)"},
        {BenchLevel::Capabilities, "capabilities", "+ capabilities dropped, no_new_privs"},
        {BenchLevel::Landlock, "landlock", "+ Landlock ruleset"},
        {BenchLevel::CgroupLimits, "cgroup_limits", "+ cgroup limits"},
        {BenchLevel::FullProfile, "full_profile", "= stockade run (capture, result JSON)"},
    }};
    return levels;
}

Result<LayerBench> LayerBench::prepare(const Policy& policy) {
    LayerBench out;
    out.policy_ = policy;
    auto identity = chooseIdentity(policy);
    if (!identity) return identity.error().withContext("choose the sandbox's identity");
    UniqueFd no_idmap;  // the bench's levels have no worktree
    PlanFindings no_worktree;
    auto plan = buildChildPlan(policy, *identity, no_idmap, no_worktree);
    if (!plan) return plan.error().withContext("plan the sandbox");
    FilterSource unused;  // the bench's levels name no refusals
    if (auto s = compileSeccompInto(policy, *plan, unused); !s)
        return s.error().withContext("compile the seccomp filter");
    out.plan_ = std::move(*plan);
    out.id_lease_ = std::move(identity->lease);  // the plan's host ids, for every run
    out.base_rlimits_ = out.plan_.rlimits;
    out.plan_.landlock = ns::LandlockPlan{};  // built per run, from its level up

    out.mounts_without_proc_.staging = out.plan_.mounts.staging;
    out.mounts_without_proc_.root_options = out.plan_.mounts.root_options;
    for (const ns::MountOp& op : out.plan_.mounts.ops)
        if (!isProcOp(op)) ns::addOp(out.mounts_without_proc_, op);

    out.dev_null_.reset(open("/dev/null", O_WRONLY | O_CLOEXEC));
    if (!out.dev_null_) return Error::fromErrno("open(\"/dev/null\")");

    // As runSandbox does before its clone: a root caller's supplementary
    // groups would otherwise follow every sandbox.
    if (geteuid() == 0 && setgroups(0, nullptr) < 0) return Error::fromErrno("setgroups(0)");

    if (policy.landlock != LandlockMode::Off) {
        ns::LandlockSupport support = ns::probeLandlock();
        out.landlock_state_ = support.abi > 0 ? "abi-" + std::to_string(support.abi)
                                              : "unavailable: " + support.reason;
    } else {
        out.landlock_state_ = "off in the profile";
    }
    // One throwaway round tells which mechanism holds the limits here.
    removeStaleCgroups();
    auto cgroups = SandboxCgroups::create({policy.limits.memory_bytes, policy.limits.pids});
    if (!cgroups) return cgroups.error().withContext("set up the sandbox's cgroups");
    std::string memory = mechanismOr(cgroups->memory()), pids = mechanismOr(cgroups->pids());
    out.limit_mechanism_ = memory == pids ? memory : "memory: " + memory + ", pids: " + pids;
    return out;
}

Result<double> LayerBench::runOnce(BenchLevel level) {
    if (level == BenchLevel::FullProfile)
        return Error::message("the full profile is measured through `stockade run`");
    auto start = std::chrono::steady_clock::now();
    auto status = runLevel(level);
    if (!status) return status.error();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
}

Status LayerBench::runLevel(BenchLevel level) {
    ChildPlan& plan = plan_;
    plan.rlimits = base_rlimits_;
    plan.landlock = ns::LandlockPlan{};

    // Parent-side work per run, as runSandbox and buildChildPlan do it: the
    // Landlock ruleset (one per sandbox: the child adds to it) and the
    // cgroup leaves, or the rlimits that stand in for them.
    if (at(level, BenchLevel::Landlock) && policy_.landlock != LandlockMode::Off) {
        ns::LandlockRequest request;
        ns::mirrorMountPlan(plan.mounts, request);
        request.network = ns::LandlockNetwork::Unrestricted;
        auto landlock = ns::buildLandlockPlan(request);
        if (!landlock) return landlock.error().withContext("plan the Landlock ruleset");
        plan.landlock = std::move(*landlock);
    }
    std::optional<SandboxCgroups> cgroups;
    if (at(level, BenchLevel::CgroupLimits)) {
        removeStaleCgroups();
        auto created = SandboxCgroups::create({policy_.limits.memory_bytes, policy_.limits.pids});
        if (!created) return created.error().withContext("set up the sandbox's cgroups");
        cgroups = std::move(*created);
        addLimitFallbacks(policy_.limits, *cgroups, plan);
    }

    plan.setup_mode = SetupMode::Bench;
    plan.bench_level = level;
    plan.stdout_fd = plan.stderr_fd = dev_null_.get();
    // Below the PID namespace no procfs can be mounted (proc(5)): the same
    // plan without it, for that run only.
    const bool without_proc = level == BenchLevel::MountNs;
    if (without_proc) std::swap(plan.mounts, mounts_without_proc_);
    struct Unswap {
        bool on;
        ns::MountPlan& a;
        ns::MountPlan& b;
        ~Unswap() {
            if (on) std::swap(a, b);
        }
    } unswap{without_proc, plan.mounts, mounts_without_proc_};

    // As runSandbox: init takes these with sigwaitinfo, blocked from the clone.
    sigset_t mask = signalsForInit(), old_mask;
    if (sigprocmask(SIG_BLOCK, &mask, &old_mask) < 0) return Error::fromErrno("sigprocmask()");
    struct Restore {
        sigset_t mask;
        ~Restore() { sigprocmask(SIG_SETMASK, &mask, nullptr); }
    } restore{old_mask};

    LaunchSpec spec;
    spec.namespaces = namespacesFor(level);
    spec.ids = &plan.ids;
    spec.cgroups = cgroups ? &*cgroups : nullptr;
    spec.seccomp_listener = at(level, BenchLevel::Seccomp);
    LaunchedSandbox launched;
    SandboxOutcome failed;
    if (!launchSandbox(plan, spec, launched, failed)) {
        std::string text = "bench level " +
                           std::string(benchLevels()[static_cast<size_t>(level)].name) + ": " +
                           failed.error_message;
        return failed.error_errno ? Error::fromErrno(text, failed.error_errno)
                                  : Error::message(text);
    }
    siginfo_t info{};
    rusage usage{};
    while (syscall(SYS_waitid, P_PIDFD, launched.pidfd.get(), &info, WEXITED, &usage) < 0 &&
           errno == EINTR) {
    }
    // The listener the command handed over, taken as the supervisor takes it.
    if (launched.listener) (void)seccomp::receiveListener(launched.listener.get());
    if (cgroups) (void)cgroups->events();
    if (info.si_code != CLD_EXITED || info.si_status != 0)
        return childFailure(level, launched.sync.get(), info);
    return okStatus();
}

}  // namespace stockade
