// cgroup v1 for sandboxes: a leaf per sandbox in each controller's own
// hierarchy (memory, pids), under stockade's own cgroup there so the limits
// above it still apply. Only root may use these (v1 is not delegated).
//
// The sandbox is moved into its leaves after clone (v1 has no
// CLONE_INTO_CGROUP), before it is let go; the move is what costs (see
// docs/performance.md, "cgroup cost").
#pragma once

#include <string>

#include "base/error.h"
#include "runtime/cgroups/cgroup_fs.h"

namespace stockade {

// mkdir parent/stockade/name (parent/stockade made when missing).
Result<std::string> makeV1Leaf(const std::string& parent, const std::string& name);

// memory.limit_in_bytes, and memory.memsw.limit_in_bytes to the same bound
// where swap is accounted, so swap cannot stretch it.
Status writeV1MemoryLimit(const std::string& leaf, uint64_t bytes);
Status writeV1PidsLimit(const std::string& leaf, uint64_t pids);

// memory.oom_control oom_kill, memory.max_usage_in_bytes, pids.events max;
// an empty leaf path means that controller is not in use.
CgroupEvents readV1Events(const std::string& memory_leaf, const std::string& pids_leaf);

// Kills what is left in a v1 leaf (SIGKILL per pid in cgroup.procs, until
// none is left) and removes it.
Status removeV1Leaf(const std::string& leaf);

// Leaves of stockades that are gone (parent/stockade/PID-N), removed.
void removeStaleV1(const std::string& parent);

}  // namespace stockade
