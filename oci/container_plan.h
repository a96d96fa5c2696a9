// config.json's Config -> the ChildPlan every stockade sandbox is built
// from, and what the parent's launch needs beside it: the bundle is a
// second front end to the one setup table (runtime/child/child_setup.h), not a
// copy of it. Policy, the profile's shape, is skipped: a bundle says the
// mounts, ids and process itself, and Policy has no words for them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "namespaces/user.h"
#include "oci/config.h"
#include "oci/idmapped_root.h"
#include "oci/pid_join.h"
#include "runtime/child/child_plan.h"
#include "runtime/plan/identity.h"
#include "runtime/plan/sandbox_seccomp.h"

namespace stockade::oci {

struct ContainerPlan {
    ChildPlan plan;
    uint64_t clone_flags = 0;  // CLONE_NEW* for the clone
    ns::IdMapping ids{};
    std::optional<IdLease> lease;  // as root: handed to init (held_by_init_fd)
    // As root: process.user.additionalGids as host gids, which create takes
    // with setgroups(2) just before the clone (oci/groups.h); empty: none.
    std::vector<gid_t> host_groups;
    // Whether create sets host_groups (as root, or with the ids of the
    // caller's own namespace unless the caller's groups are to be kept).
    bool sets_groups = false;
    UniqueFd lease_fd;  // the lease's lock until the clone has its copy
    // Namespaces joined by path (setns before the clone): fd and CLONE_NEW* type.
    std::vector<std::pair<UniqueFd, int>> joins;
    std::string rootfs;  // the image root, resolved
    // A network namespace joined by path (podman's, made and configured
    // before create), or the caller's own when none is listed (podman's
    // --network host), is owned by a user namespace the container's is not
    // beneath, so the container can neither mount a sysfs of it nor write
    // its sysctls: create does both after joining it, before the clone
    // (prepareJoinedNetwork); sysctls only in a joined one not the host's. The sysfs ops wait in
    // plan.mounts for the mounts made then; the sysctls hold host ids where the kernel reads ids.
    std::vector<std::pair<size_t, unsigned>> joined_net_sysfs;  // op index, MOUNT_ATTR_*
    std::vector<std::pair<std::string, std::string>> joined_net_sysctls;
    // An ipc namespace joined by path (a pod's first container's, as the
    // CRI path joins the pause container's), or the caller's own, is as
    // foreign: an mqueue is mounted by the ipc namespace's owner, so create
    // makes that too, and the child attaches it.
    std::vector<std::pair<size_t, unsigned>> joined_ipc_mqueue;  // op index, MOUNT_ATTR_*
    // What the container gets other than the spec asked, said by create
    // (a device node's mode and owner are the host's).
    std::vector<std::string> notes;
    // A pid namespace joined by path (oci/pid_join.h): a proc of it is
    // mounted by create from a process in it, for the same reason.
    std::vector<std::pair<size_t, JoinedProc>> joined_pid_proc;  // op index, the mount
    // As root with a leased block: the image root idmapped onto it
    // (oci/idmapped_root.h), its tree the plan's root_prepared_fd.
    ns::IdmappedTree idmapped_root;
};

// Builds the plan for the bundle at `bundle` (absolute, resolved). Errors
// name the config field or the host path at fault.
// `cgroup_dirs` are the container's cgroup directories (oci/cgroups.h),
// which a cgroup mount shows it.
// `profile` is containerProfile()'s answer (oci/profile.h).
// `device_rules_held`: the container's own device cgroup holds
// linux.resources.devices exactly (oci/cgroups.h ContainerCgroups).
// `overlay_work`: where an overlay image root's own work directory goes and
// how create records it (oci/idmapped_root.h); none: such a root is bound
// as it is.
Result<ContainerPlan> planContainer(const Config& config, const std::string& bundle,
                                    const std::vector<std::string>& cgroup_dirs,
                                    const std::string& profile, bool device_rules_held,
                                    const OverlayWork* overlay_work = nullptr);

// What a container's process is kept from whatever its spec says.
struct ProcessGuards {
    // It may remount (mayRemount below): stockade's mount refusals.
    bool may_remount = false;
    // Its root is idmapped (oci/idmapped_root.h), so what its root makes is
    // disk root's: seccomp::privilegedFileGuard after every other filter.
    bool idmapped_root = false;
};

// The seccomp program of a container: the bundle's filter with stockade's
// no-setid rules (G3); empty without linux.seccomp, as runc, unless the
// process may remount: then its mount refusals
// (seccomp::addNoRemountWritableRules) are added, to the bundle's filter or
// to an otherwise empty one. Under the stockade profile ("default",
// oci/profile.h), stockade's default filter after it (chainPrograms: a call
// runs only if both allow it), or alone. Where the root is idmapped, the
// privileged-file guard last, whatever came before. `exec`'s processes get
// the same one as the container's command, judged by their own
// capabilities.
Result<std::vector<sock_filter>> seccompProgramFor(const Config& config, const std::string& profile,
                                                   ProcessGuards guards);

// The capabilities a process keeps where its root is idmapped: all it asks
// but CAP_SETFCAP, with which its root would write a file capability that
// names disk root and so holds on the host.
Config::CapabilityMasks withoutFileCapabilitySetting(Config::CapabilityMasks caps);

// Whether a process of these capabilities can remount its container's
// mounts: CAP_SYS_ADMIN in its bounding set.
bool mayRemount(const Config& process);

// How the container's refusals reach its monitor (oci/monitor.h): the
// notified program (into plan.seccomp_notified_program, installed by the
// command with a listener it hands over before execve) and the policy the
// monitor answers each refusal from (null: stockade's default); or, in
// `not_counted`, why the refusals stay the kernel's, uncounted.
struct DenialPlan {
    FilterSource source;
    std::string not_counted;
};
// Where the root is idmapped, the notified program ends with the guard too
// (its refusals are the kernel's, uncounted).
Result<DenialPlan> planDenials(const Config& config, const std::string& profile, bool idmapped_root,
                               ChildPlan& plan);

// What a joined network, ipc or pid namespace needs done by create itself
// (above), called once create has joined it and before the clone.
Status prepareJoinedNamespaces(ContainerPlan& planned);

// net.ipv4.ping_group_range's "LOW HIGH" of container gids as the host's
// gids the container's map to (the kernel reads them in the writer's user
// namespace); "1 0" (nobody) when none of them is mapped.
std::string pingGroupRangeOnHost(const std::string& value, const ns::IdMapping& ids);

// A caller's own map as ns::ownMapRanges reads it: (first id, count) each.
using CallerRanges = std::vector<std::pair<uint64_t, uint64_t>>;
// linux.uidMappings and gidMappings of several ranges (rootless podman's
// --userns=keep-id: the user's own id at its uid, the subordinate ids
// around it), written as given by a caller that is uid 0 of a namespace
// mapping `uids` and `gids` (its own map; empty: a caller of one id, which
// cannot write them): each range within one of the caller's, none
// overlapping another inside or outside, the process's ids mapped.
Result<ns::IdMapping> idsFromRanges(const Config& config, const CallerRanges& uids,
                                    const CallerRanges& gids);

// The ids the container gets, from linux.uidMappings/gidMappings or, without
// them, stockade's own choice (as root a leased block, rootless the
// caller's ids); refused when the mappings are not a shape stockade writes
// or would make the container host root. Pure but for the lease.
Result<ns::IdMapping> idsFor(const Config& config, bool as_root, uid_t caller_uid, gid_t caller_gid,
                             uint32_t leased_first, uint32_t leased_width);

}  // namespace stockade::oci
