// process.user.additionalGids: the container's supplementary groups.
//
// runc and crun call setgroups(2) inside the container's user namespace,
// which needs that namespace's /proc/PID/setgroups to say "allow". stockade
// sets the groups from outside instead: as host root, the runtime takes the
// container's groups as the host gids they map to, just before the clone,
// which inherits them (credentials are copied whole; a new user namespace
// changes none of them). Rootless there is nothing to take them with: an
// unprivileged process may not set groups at all.
//
// Whether a process of the container may call setgroups(2) itself is the
// other half (setgroupsAllowed): it may, as under runc, where a privileged
// writer makes its maps, since apt's sandbox, su, runuser, setpriv, gosu and
// nginx's workers (initgroups) all need it; then a process holding CAP_SETGID
// there can drop a group and pass a negative permission (a 0604 file of that
// group, CVE-2014-8989), which with the container's own gids (the lease's,
// or the engine's mapping) opens only what the container or its engine made
// so. Under the stockade profile, or the annotation run.oci.stockade.setgroups
// "deny", the namespace denies it, as every `stockade run` sandbox's does
// (G3), and no process of the container can change its groups, whatever its
// capabilities, nor from a user namespace beneath.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "namespaces/user.h"
#include "oci/config.h"

namespace stockade::oci {

// crun's annotation (run.oci.keep_original_groups, any value but "0"):
// the runtime's own supplementary groups are kept and additionalGids not set.
inline constexpr const char* kKeepOriginalGroups = "run.oci.keep_original_groups";
bool keepsOriginalGroups(const std::map<std::string, std::string>& annotations);

// "allow" (the default) or "deny": whether the container's processes may call
// setgroups(2) (above).
inline constexpr const char* kSetgroupsAnnotation = "run.oci.stockade.setgroups";
// Whether the container's user namespace is left to allow setgroups(2):
// where `privileged_writer` (host root, or uid 0 of a namespace mapping the
// container's ids: the kernel lets only such a writer leave it "allow"; and
// not under keep_original_groups, whose groups are the caller's own),
// without the stockade profile (`profile` empty) and without the annotation
// asking "deny". An annotation value other than the two is refused.
Result<bool> setgroupsAllowed(const std::map<std::string, std::string>& annotations,
                              const std::string& profile, bool privileged_writer);

// One line of a gid_map: `size` container gids from `container_id` are the
// host's from `host_id`.
std::vector<IdMap> gidExtentsOf(const ns::IdMapping& ids);
// A /proc/PID/gid_map (or uid_map, `what`) as the host reads it; an error
// for a malformed line.
Result<std::vector<IdMap>> parseGidMap(std::string_view text, const char* what = "gid_map");
// The container ids a map holds, for a message: "ids 0-65535" ("ids 0-65535
// and 100000", "no ids").
std::string describeIdMap(const std::vector<IdMap>& extents);

// The host gids the runtime takes before the clone (or exec's fork), for
// setgroups(2): `gids` (additionalGids of config.json, or of exec's
// process.json, `field` naming which) each through `extents`, in order.
// Refused, naming the field: a gid the container's gid map does not hold
// (it would show as 65534 inside and be no group of the container's);
// rootless, any gid but the process's own `primary` (which it holds
// already), since no unprivileged process can set groups; as root,
// `keep_original` (the runtime's own groups are host root's).
// Rootless with `keep_original`: nothing is set, as under crun, and the
// caller's groups stay (they would anyway: docs/threat-model.md).
Result<std::vector<gid_t>> hostGroupsFor(const std::vector<gid_t>& gids, gid_t primary,
                                         const std::vector<IdMap>& extents, bool as_root,
                                         bool keep_original, const std::string& field);

}  // namespace stockade::oci
