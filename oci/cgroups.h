// A container's cgroup (linux.cgroupsPath, linux.resources.memory.limit and
// pids.limit) with the cgroupfs driver, as root: on cgroup v1 one directory
// in each of the memory and pids hierarchies, on a unified cgroup v2 tree
// one directory with both controllers. Made by create, the container's
// processes moved in before it is committed (while nothing of the bundle's
// program has run), and removed by delete. Rootless, and systemd's
// "slice:prefix:name" form, are refused until supported.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"

namespace stockade::oci {

struct CgroupAsk {
    std::string path;  // cgroupsPath, or the default one
    std::optional<int64_t> memory_limit;
    std::optional<int64_t> pids_limit;
    std::optional<int64_t> swap_limit;  // memory and swap together, as the spec's memory.swap
};

// The cgroup directories made (absolute), in the order to remove them.
struct ContainerCgroups {
    std::vector<std::string> dirs;
};

// Makes the directories and writes the limits; an error names the file.
Result<ContainerCgroups> makeContainerCgroups(const CgroupAsk& ask,
                                              const std::string& mount_root = "/sys/fs/cgroup");
// Moves each of `pids` into every directory.
Status joinContainerCgroups(const ContainerCgroups& cgroups, const std::vector<pid_t>& pids);
// Removes the directories (waiting out a cgroup still busy with a process
// that just died); what cannot be removed is named.
Status removeContainerCgroups(const std::vector<std::string>& dirs);

}  // namespace stockade::oci
