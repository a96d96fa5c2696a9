// The child side of the bench's in-process levels (bench_layers.h): the steps
// of runtime/child_in_child.cpp and runtime/command_in_child.cpp, in the same
// order, each taken only from the level that adds it. Async-signal-safe like
// them: it reads a plan allocated before the clone, makes system calls, and
// reports a failure as a ChildMessage over the sync socket.
#pragma once

#include "namespaces/mount_plan.h"
#include "runtime/child_plan.h"

namespace stockade {

struct LayeredChild {
    int level = 0;                    // a BenchLevel, as its number
    ChildPlan* plan = nullptr;        // ids, hostname, seccomp, Landlock, rlimits, argv
    ns::MountPlan* mounts = nullptr;  // the plan's mounts, or those without /proc
    int dev_null_fd = -1;             // the command's stdout and stderr
};

[[noreturn]] void runLayeredChildInChild(const LayeredChild& child) noexcept;

}  // namespace stockade
