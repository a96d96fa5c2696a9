#include "runtime/supervisor/enforcement.h"

#include <algorithm>

#include "runtime/plan/lower_tier_plan.h"

namespace stockade {

// Limits that no cgroup can hold
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
    // A user's filter, and "none" as root, come with stockade's
    // privileged-file guard (runtime/plan/sandbox_seccomp.h).
    if (!plan.seccomp_program.empty())
        out.enforced["seccomp"] = policy.seccomp == "default" ? "default"
                                  : policy.seccomp == "none"  ? "stockade-guard"
                                                              : "custom";
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

}  // namespace stockade
