// linux.devices under stockade. A container is always in a user namespace
// (G3), where mknod(2) of a device node is refused, so stockade makes no
// node: it binds the host's own node of the type and number asked (as crun
// and podman do for rootless containers). The node keeps the host's mode and
// owner, which decide who inside may open it: the container's ids are
// unprivileged host ids, so a node only root or a host group may open stays
// closed to it, whatever fileMode, uid and gid the spec asks (said as a note).
// A device linux.resources.devices grants less than read and write
// (podman's --device A:B:r) is bound only where the container's own device
// cgroup holds the rules (as root, oci/device_cgroup.h): a bind opens as
// the node's mode allows, so elsewhere (rootless) it is refused rather than
// bound writable.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"
#include "base/host_path.h"
#include "oci/config.h"

namespace stockade::oci {

struct DeviceBind {
    HeldPath node;       // the host's node, held O_PATH without following a link
    std::string target;  // absolute inside the container
};

struct DevicePlan {
    std::vector<DeviceBind> binds;
    std::vector<std::string> notes;  // what differs from what the spec asked
};

// The host's node for each device: the one at the same path when it is of
// that type and number, else the first such node in /dev or one directory
// below it (a device renamed by the caller: podman's --device A:B); held
// and judged again by fstat, so the bind is of the very node judged. Where
// stockade makes the container's /dev (`own_dev`: the bundle mounts a tmpfs
// there), the nodes it binds itself (/dev/null, zero, full, random, urandom,
// tty) and /dev/ptmx (a link to the container's devpts) are left out when
// the host's node of that path has the numbers asked. `rules_held`: the
// container's own device cgroup holds `rules` exactly, so a device they
// grant less than rw may be bound. A device stockade cannot give as asked
// is refused, naming the field.
Result<DevicePlan> planDevices(const std::vector<Device>& devices,
                               const std::vector<DeviceRule>& rules, bool own_dev, bool rules_held);

// What `rules` let a process do with the device (r, w, m), as the device
// cgroup judges them: everything without rules, each matching rule in order
// granting or taking away its letters.
std::string deviceAccess(const Device& device, const std::vector<DeviceRule>& rules);

}  // namespace stockade::oci
