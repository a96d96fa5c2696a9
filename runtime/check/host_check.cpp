#include "runtime/check/host_check.h"

#include "runtime/check/host_check_internal.h"

namespace stockade {

using namespace host_check_detail;

HostReport checkHost(const HostCheckRequest& request) {
    auto start = Clock::now();
    HostFacts facts = probeHost(request);
    HostReport report = reportFromFacts(facts, request);
    report.elapsed_us = microsSince(start);
    return report;
}

namespace {

// What the check is asked to judge, named alike in a Profile and a Policy.
template <class Source>
HostCheckRequest requestFrom(const Source& source) {
    HostCheckRequest r;
    r.memory_limit = source.limits.memory_bytes.has_value();
    r.pids_limit = source.limits.pids.has_value();
    r.cpu_time_limit = source.limits.cpu_time_ms.has_value();
    r.seccomp = source.seccomp != "none";
    r.landlock = source.landlock;
    r.require = source.require;
    return r;
}

}  // namespace

HostCheckRequest hostCheckRequestFor(const Profile& profile) {
    return requestFrom(profile);
}

HostCheckRequest hostCheckRequestFor(const Policy& policy) {
    HostCheckRequest r = requestFrom(policy);
    r.worktree = policy.fs.worktree;
    return r;
}

}  // namespace stockade
