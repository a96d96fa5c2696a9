// The child side of `stockade check`'s probes (host_probe.cpp). Everything
// declared here runs after fork or clone3: system calls on data allocated
// before, no allocation, no exceptions.
#pragma once

#include <sched.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "namespaces/landlock.h"
#include "namespaces/mount_plan.h"
#include "runtime/host_check.h"

namespace stockade::host_check_detail {

// A probe child reports each step it reaches as one fixed-size message over
// a pipe (smaller than PIPE_BUF, so each write is atomic), then _exits. A
// child that dies mid-way still leaves every step before the fatal one.

struct StepMessage {
    int32_t step;
    int32_t err;
};

void reportInChild(int fd, int step, int err) noexcept;

struct SandboxProbePlan {
    ns::MountPlan mounts;
    std::vector<SandboxStep> op_steps;  // the step each mount op proves
    uid_t uid = 0;
    gid_t gid = 0;
    int last_cap = 40;
    int report_fd = -1;
    int go_fd = -1;
    int go_write_fd = -1;  // the parent's end, closed at once so its EOF is seen
};

[[noreturn]] void sandboxProbeInChild(SandboxProbePlan& plan) noexcept;

struct NamespaceKind {
    const char* name;  // as in /proc/sys/user/max_<name>_namespaces
    int flag;
};
inline constexpr NamespaceKind kNamespaces[] = {
    {"user", CLONE_NEWUSER},     {"mnt", CLONE_NEWNS},  {"pid", CLONE_NEWPID},
    {"net", CLONE_NEWNET},       {"ipc", CLONE_NEWIPC}, {"uts", CLONE_NEWUTS},
    {"cgroup", CLONE_NEWCGROUP},
};
inline constexpr size_t kNamespaceCount = sizeof(kNamespaces) / sizeof(kNamespaces[0]);

void unshareEachInChild(int fd) noexcept;
void seccompInChild(int fd) noexcept;

inline constexpr std::pair<const char*, int> kRlimits[] = {
    {"RLIMIT_DATA", RLIMIT_DATA},   {"RLIMIT_NPROC", RLIMIT_NPROC},   {"RLIMIT_CPU", RLIMIT_CPU},
    {"RLIMIT_FSIZE", RLIMIT_FSIZE}, {"RLIMIT_NOFILE", RLIMIT_NOFILE},
};
inline constexpr int kCloseRangeStep = 100;

void basicsInChild(int fd) noexcept;
void landlockInChild(int fd, const ns::LandlockPlan& ruleset) noexcept;

}  // namespace stockade::host_check_detail
