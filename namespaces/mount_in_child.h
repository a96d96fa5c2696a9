// Child side of the filesystem view. Every function here runs after clone in
// the new mount namespace: async-signal-safe, no allocation, no exceptions.
// Each returns 0 or an errno; on failure *failed_op names the op.
#pragma once

#include <cstddef>

#include "namespaces/mount_plan.h"

namespace stockade::ns {

// Stops mount events from propagating back to the host (mount_namespaces(7)).
int makeMountsPrivateInChild() noexcept;
// Opens every source into plan.source_fds while the host's paths are still
// what they were: each BindFromHost as a detached clone of its mount tree
// (open_tree(OPEN_TREE_CLONE)), taken before the staging tmpfs exists so a
// source that holds the staging directory shows the host's files, not the
// new root; each CopyFromHost as a file to read.
int openSourcesInChild(MountPlan& plan, size_t* failed_op) noexcept;
// Mounts the new root's tmpfs on the staging directory and applies each op.
int buildRootInChild(MountPlan& plan, size_t* failed_op) noexcept;
// Test-only (STOCKADE_TEST_FAIL=mount-proc, base/fault_injection.h): the
// mount(2) of /proc in this process's root build answers `err`, so that a
// test sees how a failed mount of the root's build is reported.
void injectProcMountFailureInChild(int err) noexcept;
// Closes the source fds: after pivot_root they would be handles on the host.
void closeSourcesInChild(MountPlan& plan) noexcept;
// Makes the root tmpfs read-only, then pivots into it and detaches the old
// root so nothing of the host's tree stays reachable.
int sealRootInChild(const MountPlan& plan) noexcept;
int pivotRootInChild(const MountPlan& plan) noexcept;

}  // namespace stockade::ns
