// reportFromFacts (host_check.h): the verdicts of host_*_verdicts.cpp as
// entries, the guarantees that summarize them, and the blockers; and the
// names of the enums.
#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/check/host_check.h"
#include "runtime/check/host_verdicts.h"

namespace stockade {

using namespace host_check_detail;

namespace {

CheckState worst(CheckState a, CheckState b) {
    return static_cast<int>(a) > static_cast<int>(b) ? a : b;
}

CheckEntry makeEntry(std::string id, std::string title, CheckKind kind, Verdict v, bool required) {
    return {std::move(id),       std::move(title), kind,    v.state, std::move(v.mechanism),
            std::move(v.reason), std::move(v.fix), required};
}

// A guarantee is as strong as the weakest feature it rests on.
CheckEntry summarize(const HostReport& report, std::string id, std::string title,
                     std::vector<std::string> parts, std::string mechanism, bool required) {
    CheckEntry e{std::move(id),
                 std::move(title),
                 CheckKind::Guarantee,
                 CheckState::Ok,
                 std::move(mechanism),
                 "",
                 "",
                 required};
    std::vector<const CheckEntry*> weak;
    for (const std::string& part : parts)
        if (const CheckEntry* p = report.find(part); p && p->state != CheckState::Ok)
            weak.push_back(p);
    // One cause is given whole; several by their first clause, each with
    // its own line below.
    std::vector<std::string> fixes;
    for (const CheckEntry* p : weak) {
        e.state = worst(e.state, p->state);
        e.reason += (e.reason.empty() ? "" : "; ") + p->id + ": " +
                    (weak.size() == 1 ? p->reason : headline(p->reason));
        if (std::find(fixes.begin(), fixes.end(), p->fix) == fixes.end()) fixes.push_back(p->fix);
    }
    for (const std::string& fix : fixes) e.fix += (e.fix.empty() ? "" : "; ") + fix;
    if (e.state == CheckState::Unavailable) e.mechanism.clear();
    return e;
}

}  // namespace

const char* checkStateName(CheckState state) {
    switch (state) {
        case CheckState::Ok:
            return "ok";
        case CheckState::Degraded:
            return "degraded";
        case CheckState::Unavailable:
            return "unavailable";
    }
    return "unavailable";
}

const char* checkKindName(CheckKind kind) {
    switch (kind) {
        case CheckKind::Guarantee:
            return "guarantee";
        case CheckKind::Feature:
            return "feature";
        case CheckKind::Mechanism:
            return "mechanism";
        case CheckKind::Limit:
            return "limit";
    }
    return "feature";
}

const char* sandboxStepName(SandboxStep step) {
    switch (step) {
        case SandboxStep::Clone3:
            return "clone3(CLONE_NEWUSER|NEWNS|NEWPID|NEWNET|NEWIPC|NEWUTS)";
        case SandboxStep::PidfdSignal:
            return "pidfd_send_signal";
        case SandboxStep::IdMaps:
            return "write uid_map/gid_map";
        case SandboxStep::SetIds:
            return "setresuid to the sandbox's uid";
        case SandboxStep::CgroupNs:
            return "unshare(CLONE_NEWCGROUP)";
        case SandboxStep::PrivateMounts:
            return "mount(\"/\", MS_REC|MS_PRIVATE)";
        case SandboxStep::RootTmpfs:
            return "mount the root tmpfs";
        case SandboxStep::BindReadOnly:
            return "bind /usr read-only (open_tree, mount_setattr)";
        case SandboxStep::TmpTmpfs:
            return "mount a size-limited tmpfs";
        case SandboxStep::Proc:
            return "mount(\"proc\") in the new PID namespace";
        case SandboxStep::SealRoot:
            return "remount the root read-only";
        case SandboxStep::PivotRoot:
            return "pivot_root";
        case SandboxStep::Hostname:
            return "sethostname";
        case SandboxStep::Loopback:
            return "bring lo up";
        case SandboxStep::Dumpable:
            return "prctl(PR_SET_DUMPABLE, 0)";
        case SandboxStep::DropCapabilities:
            return "drop capabilities (securebits, bounding set, capset)";
        case SandboxStep::NoNewPrivs:
            return "prctl(PR_SET_NO_NEW_PRIVS)";
        case SandboxStep::PidfdWait:
            return "waitid(P_PIDFD)";
    }
    return "?";
}

const CheckEntry* HostReport::find(std::string_view id) const {
    for (const CheckEntry& e : entries)
        if (e.id == id) return &e;
    return nullptr;
}

TierVerdict judgeTier(const HostReport& report) {
    TierVerdict v;
    auto okay = [&](const char* id) {
        const CheckEntry* e = report.find(id);
        return e && e->state == CheckState::Ok;
    };
    auto addFix = [&](const CheckEntry* e) {
        // "see user_ns" and a fix already named for another piece add nothing.
        if (!e || e->fix.empty() || e->fix.starts_with("see ")) return;
        for (const std::string& known : v.fixes)
            if (known.ends_with(": " + e->fix)) return;
        v.fixes.push_back(e->id + ": " + e->fix);
    };
    std::string missing;
    for (const char* id : {"user_ns", "mount_ns", "pid_ns", "net_ns", "clone3"}) {
        if (okay(id)) continue;
        const CheckEntry* e = report.find(id);
        if (missing.empty() && e) missing = id + std::string(": ") + headline(e->reason);
        addFix(e);
    }
    if (missing.empty()) {
        v.tier = "full";
        v.reason =
            "user namespaces can be created, with capabilities in them: every namespace "
            "of the full sandbox";
        return v;
    }
    std::string lower_missing;
    for (const char* id : {"landlock", "seccomp", "no_new_privs"}) {
        // An older Landlock ABI degrades the tier (no TCP rules, no scopes)
        // but still holds its filesystem view.
        const CheckEntry* entry = report.find(id);
        if (okay(id) ||
            (std::string_view(id) == "landlock" && entry && entry->state == CheckState::Degraded))
            continue;
        const CheckEntry* e = report.find(id);
        if (lower_missing.empty() && e)
            lower_missing = id + std::string(": ") + headline(e->reason);
        addFix(e);
    }
    if (!lower_missing.empty()) {
        v.reason =
            "no full sandbox (" + missing + "), and no lower tier either (" + lower_missing + ")";
        return v;
    }
    v.tier = "landlock";
    const CheckEntry* landlock = report.find("landlock");
    v.reason = "no full sandbox (" + missing + "); the lower tier can run (Landlock " +
               (landlock ? landlock->mechanism : "") +
               ", seccomp, no_new_privs), only where a profile or --min-tier landlock allows it";
    if (landlock && (landlock->mechanism == "abi-2" || landlock->mechanism == "abi-3" ||
                     landlock->mechanism == "abi-4" || landlock->mechanism == "abi-5"))
        v.fixes.push_back(
            "landlock: below ABI 6 the lower tier does not scope abstract unix "
            "sockets or signals; Linux 6.12 or later gives them");
    return v;
}

HostReport reportFromFacts(const HostFacts& f, const HostCheckRequest& request) {
    HostReport report;
    report.euid = f.euid;
    report.kernel = f.kernel;
    report.probe_us = f.probe_us;
    report.setup_steps = f.setup_steps;
    auto required = [&](const std::string& id) {
        return std::find(request.require.begin(), request.require.end(), id) !=
               request.require.end();
    };
    auto feature = [&](const std::string& id, const std::string& title, Verdict v, bool needed) {
        report.entries.push_back(
            makeEntry(id, title, CheckKind::Feature, std::move(v), needed || required(id)));
    };
    using S = SandboxStep;

    // Features: what the sandbox's own code needs of the kernel. Every one
    // without a fallback in runtime/ is required.
    feature("user_ns", "user namespace", judgeUserNs(f), true);
    // Informational: where it fails, user_ns fails too and carries the blocker.
    feature("apparmor_userns", "AppArmor userns restriction", judgeAppArmorUserns(f), false);
    feature("mount_ns", "mount namespace, fresh root",
            judgeNamespace(f, "mnt", "CLONE_NEWNS",
                           {S::PrivateMounts, S::RootTmpfs, S::BindReadOnly, S::TmpTmpfs,
                            S::SealRoot, S::PivotRoot},
                           "own mount namespace; read-only binds, tmpfs, pivot_root"),
            true);
    feature("proc", "fresh /proc",
            judgeNamespace(f, "pid", "CLONE_NEWPID", {S::Proc}, "a fresh procfs for the sandbox"),
            true);
    feature("pid_ns", "PID namespace",
            judgeNamespace(f, "pid", "CLONE_NEWPID", {S::Dumpable},
                           "own PID namespace; init non-dumpable"),
            true);
    feature("net_ns", "network namespace",
            judgeNamespace(f, "net", "CLONE_NEWNET", {S::Loopback},
                           "own network namespace with only lo"),
            true);
    feature("ipc_ns", "IPC namespace",
            judgeNamespace(f, "ipc", "CLONE_NEWIPC", {}, "own IPC namespace"), true);
    feature("uts_ns", "UTS namespace",
            judgeNamespace(f, "uts", "CLONE_NEWUTS", {S::Hostname}, "own hostname"), true);
    feature("cgroup_ns", "cgroup namespace",
            judgeNamespace(f, "cgroup", "CLONE_NEWCGROUP", {}, "own cgroup namespace"), true);
    feature("clone3", "clone3 and pidfds", judgeClone3(f), true);
    feature(
        "capabilities", "capabilities dropped",
        [&] {
            if (auto failure = firstFailure(f, {S::DropCapabilities}))
                return stepVerdict(f, *failure);
            return ok("none: bounding and ambient sets cleared, securebits locked");
        }(),
        true);
    feature("no_new_privs", "no_new_privs", judgeNoNewPrivs(f), true);
    feature("close_range", "only fds 0-2 cross", judgeCloseRange(f), true);
    feature("seccomp", "seccomp filter", judgeSeccomp(f), request.seccomp);
    feature("seccomp_listener", "seccomp user notification", judgeSeccompListener(f), false);
    feature("landlock", "Landlock", judgeLandlock(f), request.landlock == LandlockMode::Required);
    // The sandbox refuses to start when a root-owned worktree cannot be idmapped.
    feature("idmapped_mounts", "idmapped mounts", judgeIdmap(f),
            f.euid == 0 && f.worktree_root_owned);
    // Only `serve --net-backend veth` needs it; never required.
    feature("veth_backend", "serve --net-backend veth", judgeVeth(f), false);
    // Only `serve --net-backend direct` needs it, and falls back without it.
    feature("direct_backend", "serve --net-backend direct", judgeDirect(f), false);

    // Mechanisms that can hold a limit, strongest first (SPEC §4).
    auto mechanism = [&](const std::string& id, const std::string& title, Verdict v) {
        report.entries.push_back(makeEntry(id, title, CheckKind::Mechanism, std::move(v), false));
    };
    Verdict v2_memory = judgeCgroup2(f, "memory"), v2_pids = judgeCgroup2(f, "pids");
    Verdict v1_memory = judgeCgroup1(f, "memory"), v1_pids = judgeCgroup1(f, "pids");
    Verdict rlimits = judgeRlimits(f);
    mechanism("cgroup2", "cgroup v2", judgeCgroup2Base(f));
    mechanism("cgroup2.memory", "cgroup v2 memory", v2_memory);
    mechanism("cgroup2.pids", "cgroup v2 pids", v2_pids);
    mechanism("cgroup1.memory", "cgroup v1 memory", v1_memory);
    mechanism("cgroup1.pids", "cgroup v1 pids", v1_pids);
    mechanism("rlimit", "rlimits", rlimits);

    auto limit = [&](const std::string& id, const std::string& title, Verdict v) {
        report.entries.push_back(
            makeEntry(id, title, CheckKind::Limit, std::move(v), required(id)));
    };
    limit("memory", "memory",
          judgeLimit(f, "memory", "RLIMIT_DATA", v2_memory, v1_memory, rlimits));
    limit("pids", "pids", judgeLimit(f, "pids", "RLIMIT_NPROC", v2_pids, v1_pids, rlimits));
    limit("cpu_time", "CPU time",
          rlimits.state == CheckState::Ok ? ok("rlimit (RLIMIT_CPU)") : rlimits);

    // Guarantees (SPEC §3), each summarizing the features it rests on.
    auto mechanismOf = [&](const std::string& id) {
        const CheckEntry* e = report.find(id);
        return e ? e->mechanism : std::string();
    };
    std::vector<std::string> limit_ids;
    std::string limits_held;
    for (auto [id, wanted] : {std::pair<const char*, bool>{"memory", request.memory_limit},
                              {"pids", request.pids_limit},
                              {"cpu_time", request.cpu_time_limit}}) {
        if (!wanted) continue;
        limit_ids.push_back(id);
        limits_held +=
            std::string(limits_held.empty() ? "" : ", ") + id + ": " + headline(mechanismOf(id));
    }
    limits_held += std::string(limits_held.empty() ? "" : "; ") +
                   "wall time, output: the supervisor; /tmp: tmpfs size";
    bool limits_required = std::any_of(limit_ids.begin(), limit_ids.end(), required);
    std::vector<CheckEntry> guarantees = {
        summarize(report, "G1", "network", {"net_ns"}, "own network namespace with only lo", true),
        summarize(report, "G2", "filesystem", {"mount_ns", "proc"},
                  "own mount namespace, fresh root (pivot_root), fresh /proc", true),
        summarize(report, "G3", "identity", {"user_ns", "idmapped_mounts"}, mechanismOf("user_ns"),
                  true),
        summarize(report, "G4", "privileges", {"capabilities", "no_new_privs"},
                  "no capabilities, securebits locked, no_new_privs", true),
        summarize(report, "G5", "syscalls", {"seccomp", "seccomp_listener"},
                  mechanismOf("seccomp") + "; " + mechanismOf("seccomp_listener"), request.seccomp),
        summarize(report, "G6", "processes", {"pid_ns", "clone3"},
                  "own PID namespace with stockade's init; pidfd supervision", true),
        summarize(report, "G7", "environment", {"close_range"},
                  "an empty environment but the profile's allowlist; only fds 0, 1, 2 cross "
                  "(close_range); a new session",
                  true),
        summarize(report, "G8", "limits", limit_ids, limits_held, limits_required),
        summarize(report, "G9", "the rest", {"ipc_ns", "uts_ns", "cgroup_ns"},
                  "own IPC, UTS and cgroup namespaces", true),
        summarize(report, "G10", "landlock", {"landlock"}, mechanismOf("landlock"),
                  request.landlock == LandlockMode::Required),
    };
    // G8 is degraded by a weaker mechanism but still holds something.
    if (guarantees[7].state != CheckState::Unavailable) guarantees[7].mechanism = limits_held;
    report.entries.insert(report.entries.begin(), guarantees.begin(), guarantees.end());

    // A requirement that failed only because an earlier one did is not
    // named again: the first cause is the one to fix.
    for (bool consequences : {false, true}) {
        for (const CheckEntry& e : report.entries) {
            if (e.kind == CheckKind::Guarantee || !e.required || e.state == CheckState::Ok)
                continue;
            if (e.reason.starts_with(kNotProbed) == consequences)
                report.blockers.push_back(e.id + ": " + e.reason);
        }
        if (!report.blockers.empty()) break;
    }
    // A step of the setup table that failed blocks a run too, whether or not
    // a verdict above maps it: run executes the same steps and would stop
    // there.
    for (const auto& [step, err] : report.setup_steps) {
        if (err == 0) continue;
        const std::string blocker =
            "setup step \"" + step + "\" failed (" + errnoName(err) + "): a run stops there";
        if (report.blockers.empty()) report.blockers.push_back(blocker);
        break;
    }
    report.can_run = report.blockers.empty();
    report.tier = judgeTier(report);
    return report;
}

}  // namespace stockade
