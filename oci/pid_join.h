// A container joining another's pid namespace by path (a Kubernetes pod
// with shareProcessNamespace: linux.namespaces[{type: "pid", path}]).
//
// stockade's init is then not PID 1, and what PID 1 gave is replaced
// (docs/oci.md, "A pid namespace joined by path"):
// - orphans: init is a child subreaper (ChildPlan::pid_ns_joined), so what
//   the command's tree orphans comes back to it, not to the namespace's
//   PID 1 (the first container's init);
// - the end: init kills its children round by round, not kill(-1), which
//   would reach the first container's processes of the same uid;
// - init killed (its processes live on, reparented to the first
//   container's init): every process of the container's own cgroup is
//   killed (oci/cgroups.h killContainerCgroups) by the monitor when init
//   has ended, and by kill and delete; so create makes a cgroup for every
//   such container, and refuses one it cannot make (rootless, until
//   rootless cgroups are supported);
// - /proc: the container's user namespace does not own the joined pid
//   namespace, so it may not mount a proc of it: create mounts it from a
//   process in that namespace, and the container attaches it.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"

namespace stockade::oci {

// The pid namespace at `path`, opened once (the fd that setns(2) is later
// given, so a path swapped after this check is never read again), checked
// to be a pid namespace (ioctl NS_GET_NSTYPE) and not PID 1's where that
// is not the caller's own (an ancestor, which setns(2) refuses). The
// caller's own is joined (a hostPID pod's containers name the pause's).
// Errors name linux.namespaces and the path. /proc/PID/ns/pid of a stockade
// container's init (a pod's first container, named by its `state` pid)
// is taken as its command's namespace, beneath init's, where that
// command is PID 1 as runc's would be (ChildPlan::command_pid_ns).
Result<UniqueFd> openJoinedPidNamespace(const std::string& path);
// The caller's own pid namespace, for a config that lists none (`--pid
// host`, a hostPID pod): the container is then built as in one joined by
// path, init not PID 1, the cgroup how its processes end.
Result<UniqueFd> openCallersPidNamespace();

// A proc mount asked for in the joined pid namespace: its MOUNT_ATTR_*
// and the options mount(2) would take as data ("hidepid=2").
struct JoinedProc {
    unsigned attrs = 0;
    std::string data;
};

// Once create has setns'ed into the pid namespace (its children are
// born there): one detached proc mount per ask. Made by create itself with
// proc's pidns=`pidns_fd` (Linux 6.17+: no process born in the namespace);
// on older kernels by a child of this process, which is in that namespace,
// and sent back (that child is then briefly a process of the joined
// namespace, its /proc entries readable there). `where` names each ask in
// errors.
Result<std::vector<UniqueFd>> mountJoinedProcs(const std::vector<JoinedProc>& asks,
                                               const std::vector<std::string>& where, int pidns_fd);

}  // namespace stockade::oci
