// The parent's half of starting a sandbox, written once: the sockets the
// child speaks over, clone3 with the namespaces, the id maps, "go", the v1
// cgroup leaves and "placed". `stockade run` and `serve` (runtime/supervisor/sandbox.cpp)
// and `stockade bench` (runtime/bench/bench_layers.cpp) all start theirs here; the
// child's half is the setup table (runtime/child/child_setup.h).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>

#include "base/error.h"
#include "base/fault_injection.h"
#include "base/unique_fd.h"
#include "namespaces/user.h"
#include "runtime/cgroups/cgroup_limits.h"
#include "runtime/child/child_plan.h"
#include "runtime/supervisor/sandbox.h"
#include "runtime/supervisor/service_hooks.h"

namespace stockade {

// The signals the supervisor takes through a signalfd, blocked before the
// clone: the clone inherits the mask, and its init takes them with
// sigwaitinfo (runtime/child/child_in_child.cpp).
sigset_t signalsForInit();

struct LaunchSpec {
    // The namespaces: CLONE_NEW* flags. CLONE_NEWCGROUP is left to the child
    // (after it joined its cgroups); CLONE_NEWNET, without hooks, is made by
    // the child's helper beside the root's set-up (ChildPlan::netns_fd_slot).
    uint64_t namespaces = 0;
    const ns::IdMapping* ids = nullptr;  // with CLONE_NEWUSER
    SandboxCgroups* cgroups = nullptr;   // null: none (bench's levels below its cgroups)
    ServiceHooks* hooks = nullptr;
    FaultPoint fault = FaultPoint::None;
    bool seccomp_listener = true;  // a listener socket when the plan has a notified filter
    // CLONE_NEWNET made by the clone itself rather than by the child's
    // helper: an OCI bundle may mount sysfs, which needs the namespace the
    // child builds its root in to be its own already.
    bool net_in_clone = false;
    // The lower tier (issue 18): no namespace, but the sync socket, "go"
    // and "placed" as with one (there are no id maps to write); a clone3
    // refused with ENOSYS (a container's seccomp profile) falls back to
    // clone(CLONE_PIDFD).
    bool lower_tier = false;
    // Right after the clone, before the id maps: what the caller holds only
    // for the child's sake (the pipes' write ends, the idmapped tree).
    std::function<void()> after_clone;
    // Before "placed", with init's host pid: init waits for it before it
    // unshares its cgroup namespace, so that an OCI container's cgroups
    // joined here are that namespace's root (as under runc). An error
    // abandons the launch.
    std::function<Status(pid_t)> before_placed;
};

// A started sandbox: its init's pid and pidfd, and the parent's ends of its
// sockets.
struct LaunchedSandbox {
    pid_t pid = 0;
    UniqueFd pidfd;
    UniqueFd sync;      // the sync socket (none without CLONE_NEWUSER)
    UniqueFd listener;  // the seccomp listener's socket, or none
    UniqueFd factory;   // a service's socket factory, or none
    // The clone was refused in a way that means no user namespace can be
    // had here (EPERM, ENOSPC, EINVAL, ENOSYS from clone3 with
    // CLONE_NEWUSER): where the policy allows it, the lower tier is next.
    bool user_ns_refused = false;
};

// Starts the sandbox and hands it "go" and "placed". On failure nothing of
// it is left (a started child is killed and reaped) and `failed` says which
// step failed and why, with the child's own first failure as the cause when
// it reported one.
bool launchSandbox(ChildPlan& plan, const LaunchSpec& spec, LaunchedSandbox& out,
                   SandboxOutcome& failed);

// A setup failure named by its step, the call and errno in `error`.
SandboxOutcome setupFailure(const std::string& stage, const Error& error);
// A failure the child reported: its step, the mount op or the call it names.
void childSetupFailure(const ChildMessage& msg, const ChildPlan& plan, SandboxOutcome& out);

}  // namespace stockade
