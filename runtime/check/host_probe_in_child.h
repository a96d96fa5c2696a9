// The child side of `stockade check`'s probes (host_probe.cpp). Everything
// declared here runs after fork or clone3: system calls on data allocated
// before, no allocation, no exceptions. The sandbox's own setup is not among
// them: check probes it with the sandbox's setup table itself, in its check
// mode (runtime/child/child_setup.h).
#pragma once

#include <sched.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "namespaces/landlock.h"
#include "runtime/check/host_check.h"

namespace stockade::host_check_detail {

// A probe child reports each step it reaches as one fixed-size message over
// a pipe (smaller than PIPE_BUF, so each write is atomic), then _exits. A
// child that dies mid-way still leaves every step before the fatal one.

struct StepMessage {
    int32_t step;
    int32_t err;
};

void reportInChild(int fd, int step, int err) noexcept;

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
