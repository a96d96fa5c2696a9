// An OCI container's device cgroup, as root: which device nodes its
// processes may open (r, w) or make (m), whatever the mounts say. A
// container granted CAP_SYS_ADMIN in its user namespace can remount its
// root `dev` (the kernel locks no flag of a mount its own user namespace
// made), so nodev alone cannot keep a node an image carries (a 0666 node of
// the host's disk) from opening the host's device; the device cgroup is
// checked by the kernel at every open of a node, in any user namespace,
// and no process of the container can change it (devices.allow and
// BPF_PROG_ATTACH need CAP_SYS_ADMIN in the host's user namespace).
//
// cgroup v1: the `devices` hierarchy's devices.deny and devices.allow.
// cgroup v2: an eBPF program (BPF_PROG_TYPE_CGROUP_DEVICE) attached to the
// container's directory, as runc and crun attach theirs. Rootless there is
// neither (no cgroup of the container's own): docs/threat-model.md.
#pragma once

#include <linux/bpf.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "oci/config.h"

namespace stockade::oci {

// The rules a container's device cgroup holds, in order: every device
// refused, then linux.resources.devices as listed, then the devices every
// container gets (null zero full random urandom tty, ptmx and the pts) and
// each of linux.devices with the letters the rules give it (deviceAccess).
// A rule of type 'p' (no device of the cgroup's) is left out.
std::vector<DeviceRule> containerDeviceRules(const std::vector<Device>& devices,
                                             const std::vector<DeviceRule>& rules);

// Whether `rules` let a request of `access` (letters of "rwm") on the node
// through: each letter decided by the last rule that matches the node and
// names the letter, refused where none does. What the v2 program computes.
bool deviceAllowed(const std::vector<DeviceRule>& rules, char type, uint32_t major, uint32_t minor,
                   std::string_view access);

// The v2 program for `rules` (deviceAllowed, as instructions).
Result<std::vector<bpf_insn>> deviceProgram(const std::vector<DeviceRule>& rules);

// Whether cgroup v1's devices files, written as applyDeviceRulesV1 writes
// `rules`, would let through only what deviceAllowed does: v1 takes a deny
// away only from an allow of exactly the same type and numbers (a deny of
// c 1:3 after an allow of c 1:* leaves 1:3 open), so some lists cannot be
// held there. Judged by running the kernel's rules (devices.allow and
// devices.deny in default-deny and default-allow mode, an exception
// matched whole or in part) over every type, each number the rules name
// and one they do not. Empty when they can; else the first device v1
// would open that the rules refuse ("c 1:3 r").
std::string deviceRulesBeyondV1(const std::vector<DeviceRule>& rules);

// Whether this kernel takes device programs at all (CONFIG_CGROUP_BPF): a
// program that allows everything, loaded and let go.
bool deviceProgramsSupported();

// Holds `rules` on the container's cgroup directory `dir`: v1 by writing
// them (its first, every device refused, clears what the directory had),
// v2 by attaching the program. An error names the file or the call.
Status applyDeviceRulesV1(const std::string& dir, const std::vector<DeviceRule>& rules);
Status attachDeviceProgram(const std::string& dir, const std::vector<DeviceRule>& rules);

}  // namespace stockade::oci
