#include "runtime/host_check.h"

#include "runtime/host_check_internal.h"

namespace stockade {

using namespace host_check_detail;

HostReport checkHost(const HostCheckRequest& request) {
    auto start = Clock::now();
    HostFacts facts = probeHost(request);
    HostReport report = reportFromFacts(facts, request);
    report.elapsed_us = microsSince(start);
    return report;
}

HostCheckRequest hostCheckRequestFor(const Profile& profile) {
    HostCheckRequest r;
    r.memory_limit = profile.limits.memory_bytes.has_value();
    r.pids_limit = profile.limits.pids.has_value();
    r.cpu_time_limit = profile.limits.cpu_time_ms.has_value();
    r.seccomp = profile.seccomp != "none";
    r.landlock = profile.landlock;
    r.require = profile.require;
    return r;
}

HostCheckRequest hostCheckRequestFor(const Policy& policy) {
    HostCheckRequest r;
    r.memory_limit = policy.limits.memory_bytes.has_value();
    r.pids_limit = policy.limits.pids.has_value();
    r.cpu_time_limit = policy.limits.cpu_time_ms.has_value();
    r.seccomp = policy.seccomp != "none";
    r.landlock = policy.landlock;
    r.require = policy.require;
    r.worktree = policy.fs.worktree;
    return r;
}

}  // namespace stockade
