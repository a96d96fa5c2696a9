// A container's cgroup (linux.cgroupsPath, linux.resources: memory, pids,
// cpu, devices) with the cgroupfs driver, as root: on cgroup v1 one
// directory in each of the memory and pids hierarchies, and in the freezer,
// cpu and devices ones where they are mounted; on a unified cgroup v2 tree
// one directory with the controllers and the device program. Made by create, the container's
// processes moved in before it is committed (while nothing of the bundle's program has run),
// changed by update, frozen by pause and thawed by resume, and removed by delete. systemd's
// "slice:prefix:name" form (--systemd-cgroup) is mapped to the directory systemd would give that
// unit and made the same way: stockade has no D-Bus client, so no systemd unit is started. Rootless
// is refused until supported.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "oci/config.h"

namespace stockade::oci {

struct CgroupAsk {
    std::string path;  // cgroupsPath, or the default one
    Resources resources;
    bool must_be_new = false;     // refused when the leaf exists already
    std::string must_be_new_why;  // why, for the refusal
    // The device cgroup's rules (oci/device_cgroup.h), held where `devices`
    // is set: v1's devices hierarchy, v2's program. Required (an error when
    // the host has neither) where `devices_required` is also set.
    bool devices = false;
    bool devices_required = false;
    std::vector<DeviceRule> device_rules;
    // A cgroup nothing asked for (as root every container gets one): where
    // one cannot be made or written (a read-only cgroupfs, a missing
    // hierarchy, inside another container) the container has none
    // (ContainerCgroups::unavailable says why) instead of an error. A
    // refusal of what is there (a leaf that exists already, another's, a
    // frozen one) is an error all the same.
    bool best_effort = false;
};

// The absolute cgroupfs path (under each hierarchy) for linux.cgroupsPath:
// as written with the cgroupfs driver (absolute, no ".."); with
// --systemd-cgroup, systemd's "slice:prefix:name" form expanded as runc's
// systemd driver names its unit's cgroup (kubepods-burstable-podU.slice
// becomes /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podU.slice,
// the unit PREFIX-NAME.scope, or NAME itself when it is a slice), an empty
// slice being system.slice. `cgroups_path` empty: /stockade-oci/ID-TAG,
// TAG naming the state root `root_dir` (canonical; rootTag below), so that
// two runtimes' containers of one id never share a cgroup, or
// /system.slice/stockade-ID.scope with --systemd-cgroup.
Result<std::string> cgroupfsPath(const std::string& cgroups_path, const std::string& id,
                                 bool systemd, const std::string& root_dir);
// Sixteen hex digits naming a state root: FNV-1a (64 bits) of its
// canonical path. Not a secret and not a defence: two roots of one host
// differ by it, as their containers' cgroups must.
std::string rootTag(const std::string& root_dir);
// Whether a component of `path` is "..", so that it names another
// directory than written ("..x" is a name like any other).
bool hasDotDotComponent(const std::string& path);

// The cgroup directories made (absolute), in the order to remove them.
struct ContainerCgroups {
    std::vector<std::string> dirs;
    // Those of `dirs` this create made itself: the only ones a failed or
    // killed create may kill everything in (a cgroupsPath that was there
    // may hold another's processes; it is only rmdir'ed, which fails while
    // anything is in it).
    std::vector<std::string> made_here;
    // Whether device rules of the container's own hold there, exactly as
    // asked (oci/device_cgroup.h): what `exec` of a process that may
    // remount requires.
    bool devices_held = false;
    // Where a best-effort ask made none (dirs empty): why.
    std::string unavailable;
};

// Whether the container cgroups under `mount_root` are cgroup v2's (a
// unified tree there), where linux.resources.unified's files exist.
bool unifiedCgroups(const std::string& mount_root = "/sys/fs/cgroup");

// Makes the directories and writes the limits; an error names the file.
Result<ContainerCgroups> makeContainerCgroups(const CgroupAsk& ask,
                                              const std::string& mount_root = "/sys/fs/cgroup");
// Writes what `resources` sets into the container's cgroup directories
// (create's and update's one path); a field no directory can take is an
// error that names it, never skipped.
Status applyResources(const std::vector<std::string>& dirs, const Resources& resources);
// Moves each of `pids` into every directory.
Status joinContainerCgroups(const ContainerCgroups& cgroups, const std::vector<pid_t>& pids);
// The freezer: v1's freezer.state where the container has a freezer
// directory, else v2's cgroup.freeze. Each returns once the kernel reports
// the whole cgroup frozen (or thawed), and fails naming the file otherwise;
// a container with no cgroup to freeze is an error that says so.
Status freezeContainerCgroups(const std::vector<std::string>& dirs, bool frozen);
// Whether the kernel reports the cgroup frozen; false with no freezer.
bool containerCgroupsFrozen(const std::vector<std::string>& dirs);
// The kernel's counters of the container's cgroup, none where no
// directory has the file: the OOM killer's kills (v2 memory.events, v1
// memory.oom_control, "oom_kill") and the forks refused at pids.max
// (pids.events, "max").
struct CgroupCounters {
    std::optional<uint64_t> oom_kills;
    std::optional<uint64_t> pids_max;
};
CgroupCounters readCgroupCounters(const std::vector<std::string>& dirs);

// Every process in the container's cgroup, by pid in the caller's pid
// namespace (cgroup.procs of the freezer's, or the first, directory);
// none where it has no cgroup.
std::vector<pid_t> processesInContainerCgroups(const std::vector<std::string>& dirs);
// SIGKILLs every process in the container's cgroup until none is left: for
// a container whose init is not PID 1 of its pid namespace (one joined by
// path), whose processes do not die with their init. v2: cgroup.kill. v1:
// rounds of freeze, list, kill, thaw (a frozen cgroup cannot fork between
// the list and the kills; a v1 freezer holds SIGKILL until thawed), or of
// list and kill without a freezer. Fails naming the directory when
// processes are still there after kFreezeWaitMs of rounds.
Status killContainerCgroups(const std::vector<std::string>& dirs);

// SIGKILLs the processes of the container's cgroup whose parent is
// `parent` (a create's own init, not PID 1 of a shared pid namespace: the
// command it parked), listed and signalled while the cgroup is frozen, so
// that no pid listed is freed and taken by another process first, and
// another's processes that share the directory are left alone. Fails, and
// kills nothing, where the cgroup cannot be frozen.
Status killChildrenInContainerCgroups(const std::vector<std::string>& dirs, pid_t parent);

// Whether killContainerCgroups can end everything in `dirs` without
// signalling pids it listed (v2's cgroup.kill, or a v1 freezer): pids a
// container reaps itself can be reused before a listed kill lands.
bool canKillWhole(const std::vector<std::string>& dirs);

// Removes the directories (waiting out a cgroup still busy with a process
// that just died), each tried; the first that cannot be removed is named.
// `busy_ms`: how long each directory still busy (EBUSY: a process of the
// container's that has not finished exiting) is tried again.
Status removeContainerCgroups(const std::vector<std::string>& dirs, int busy_ms = 100);

}  // namespace stockade::oci
