// config.json's Config -> the ChildPlan every stockade sandbox is built
// from, and what the parent's launch needs beside it: the bundle is a
// second front end to the one setup table (runtime/child_setup.h), not a
// copy of it. Policy, the profile's shape, is skipped: a bundle says the
// mounts, ids and process itself, and Policy has no words for them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "namespaces/user.h"
#include "oci/config.h"
#include "runtime/child_plan.h"
#include "runtime/identity.h"

namespace stockade::oci {

struct ContainerPlan {
    ChildPlan plan;
    uint64_t clone_flags = 0;  // CLONE_NEW* for the clone
    ns::IdMapping ids{};
    std::optional<IdLease> lease;  // as root: handed to init (held_by_init_fd)
    UniqueFd lease_fd;             // the lease's lock until the clone has its copy
    // Namespaces joined by path (setns before the clone): fd and CLONE_NEW* type.
    std::vector<std::pair<UniqueFd, int>> joins;
    std::string rootfs;  // the image root, resolved
};

// Builds the plan for the bundle at `bundle` (absolute, resolved). Errors
// name the config field or the host path at fault.
Result<ContainerPlan> planContainer(const Config& config, const std::string& bundle);

// The ids the container gets, from linux.uidMappings/gidMappings or, without
// them, stockade's own choice (as root a leased block, rootless the
// caller's ids); refused when the mappings are not a shape stockade writes
// or would make the container host root. Pure but for the lease.
Result<ns::IdMapping> idsFor(const Config& config, bool as_root, uid_t caller_uid, gid_t caller_gid,
                             uint32_t leased_first, uint32_t leased_width);

}  // namespace stockade::oci
