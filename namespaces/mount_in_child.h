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
// For a command that is PID 1 of a pid namespace of its own, beneath
// init's (an OCI container's: runtime/child/child_plan.h command_pid_ns),
// once the root is its root: each proc of the image root's plan mounted
// again for the caller's pid namespace, on top of the one init mounted for
// its own, and the ops beneath it (masks, read-only paths; not the
// sysctls, which are the namespace's) applied again on the new one, a
// file masked with the host's null device: `null_tree`, a detached clone of
// it made before pivot_root (the root's /dev/null is the image's, and the
// host's mounts are gone), attached at the first. Every mount is made on
// an fd (fsmount, open_tree, move_mount): no path is resolved through the
// container's /proc, which no longer is the host's. A new procfs is allowed
// here because the one init mounted is fully visible: its masks were made
// in this user namespace, so none is locked (mount_too_revealing()).
int remountProcsInChild(MountPlan& plan, int null_tree, size_t* failed_op) noexcept;

}  // namespace stockade::ns
