// User namespace, parent side: the id maps of G3 and the idmapped mount that
// makes a root-owned worktree writable without running anything as root.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"

namespace stockade::ns {

// One line of an id map: `count` ids from `inside` in the namespace made,
// from `outside` in the writer's.
struct IdRange {
    uint32_t inside = 0;
    uint32_t outside = 0;
    uint32_t count = 0;
};

// The sandbox's uid and gid inside and the host ids they are. With count 1,
// only those two are mapped, one id each. With a larger count, the block of
// inside ids 0..count-1 maps onto the host ids starting at host - inside (a
// block that is the sandbox's alone), so that another id is a real id the
// sandbox lacks the privilege for (EPERM) rather than an unmapped one
// (EINVAL). Never host root either way.
struct IdMapping {
    uid_t inside_uid;
    uid_t host_uid;
    gid_t inside_gid;
    gid_t host_gid;
    uint32_t count = 1;
    // Rootless with subordinate ids (--map-subids): the block 0..count-1
    // inside is the caller's subordinate ids from these bases, in order,
    // but for inside_uid and inside_gid, which are the caller's own
    // host_uid and host_gid. Only the setuid helpers newuidmap and
    // newgidmap may write such maps (they check /etc/subuid, /etc/subgid).
    bool subordinate = false;
    uint32_t subuid_base = 0;
    uint32_t subgid_base = 0;
    // Host root's ids (uid 0, gid 0) mapped at this inside id as well, 0
    // for none (writeIdMaps, not with `subordinate`): for an idmapped mount
    // where host root may write, so that what it writes lands on disk as
    // this id rather than failing EOVERFLOW. Must lie past the block
    // (count..), whose host ids must not hold 0.
    uint32_t host_root_inside = 0;
    // The block 0..count-1 is the caller's own namespace's ids 0..count-1,
    // one for one (an OCI runtime run by rootless podman as uid 0 of a
    // namespace mapping the caller's subordinate ids): written one line per
    // range of the caller's own map (/proc/self/uid_map, gid_map), since the
    // kernel takes a line only when its ids lie in one range of the
    // writer's. inside_uid == host_uid, inside_gid == host_gid.
    bool callers_ranges = false;
    // The lines of an OCI linux.uidMappings and gidMappings of several
    // ranges (rootless podman's --userns=keep-id), written as given by a
    // writer that is uid 0 of a namespace mapping those ids (as with
    // callers_ranges); empty otherwise. inside_uid/host_uid and
    // inside_gid/host_gid are then the process's ids and where they land,
    // and count is 1.
    std::vector<IdRange> uid_ranges;
    std::vector<IdRange> gid_ranges;
    // The namespace's /proc/PID/setgroups left "allow" (not written "deny"
    // before its gid_map): only for an OCI container whose maps a writer
    // privileged over the parent namespace writes (host root, or uid 0 of
    // rootless podman's), as runc leaves it (oci/groups.h). Never with
    // `subordinate`.
    bool setgroups_allowed = false;

    // Whether the ids are the caller's own namespace's (callers_ranges, or
    // the given ranges): groups and stdio are given there as root gives
    // them on the host.
    bool callersIds() const { return callers_ranges || !uid_ranges.empty(); }
};

// The id `inside` lands on under `ranges`, nullopt where none maps it.
std::optional<uint32_t> outsideIdOf(const std::vector<IdRange>& ranges, uint32_t inside);

// The setuid helpers of shadow's uidmap package, at the one path Debian,
// Fedora and Arch install them: never looked up on PATH, which is the
// caller's to change.
inline constexpr const char* kNewUidMap = "/usr/bin/newuidmap";
inline constexpr const char* kNewGidMap = "/usr/bin/newgidmap";

// Whether an inside id has a host id under `mapping`: a file owned by an id
// that has none shows as the overflow id 65534, and an id that has none
// cannot be taken (setuid, chown, a devpts gid= option: EINVAL).
bool mapsInsideUid(const IdMapping& mapping, uid_t id);
bool mapsInsideGid(const IdMapping& mapping, gid_t id);

// The extra map line IdMapping::host_root_inside asks ("N 0 1\n"; empty
// for none), or an error where N or host id 0 falls in the block itself.
Result<std::string> hostRootMapLine(const IdMapping& mapping);

// This process's own /proc/self/<file> (uid_map or gid_map) as ranges of
// (first id inside, count), sorted by the first; empty where it cannot be
// read. What IdMapping::callers_ranges maps from, and how wide it can be.
std::vector<std::pair<uint64_t, uint64_t>> ownMapRanges(const char* file);

// Writes "deny" to setgroups, then uid_map and gid_map of `pid`. Unprivileged
// callers must deny setgroups before writing gid_map (user_namespaces(7));
// stockade denies it in both modes so the sandbox can never drop into, or
// out of, a supplementary group. A subordinate mapping is written by
// newuidmap and newgidmap, an error carrying what they printed.
Status writeIdMaps(pid_t pid, const IdMapping& mapping);

// A detached, recursive-free clone of the mount at `path` in which files that
// are owned on disk by disk_uid/disk_gid appear as host_uid/host_gid, and new
// files written as host_uid land on disk as disk_uid. Needs CAP_SYS_ADMIN in
// the initial user namespace (mount_setattr(2), MOUNT_ATTR_IDMAP).
struct IdmappedTree {
    IdmappedTree() = default;
    IdmappedTree(IdmappedTree&&) = default;
    IdmappedTree& operator=(IdmappedTree&&);  // reaps the helper it replaces
    ~IdmappedTree();                          // reaps the helper
    UniqueFd tree;                            // the detached mount
    std::vector<UniqueFd> more;               // makeIdmappedTrees: the rest, in order
    UniqueFd helper;                          // pidfd of the process that held the user namespace
    // The helper shares the supervisor's memory (CLONE_VM) and runs on this
    // stack, which must outlive it: freed only after the helper is reaped.
    std::unique_ptr<char[]> helper_stack;
};
Result<IdmappedTree> makeIdmappedTree(const std::string& path, uid_t disk_uid, gid_t disk_gid,
                                      uid_t host_uid, gid_t host_gid);
// The same for the directory held open at `dir_fd` (`path` is for messages):
// the mount is cloned from the fd, so what was checked is what is mapped.
Result<IdmappedTree> makeIdmappedTree(int dir_fd, const std::string& path, uid_t disk_uid,
                                      gid_t disk_gid, uid_t host_uid, gid_t host_gid);
// The same with a whole mapping: with a count above 1, disk ids
// 0..count-1 show as the block of host ids the mapping gives
// (IdMapping's rule), and those host ids write them.
// Not `recursive`: the top mount alone (a probe of one filesystem, which
// mounts of others beneath it must not decide).
Result<IdmappedTree> makeIdmappedTree(int dir_fd, const std::string& path, const IdMapping& mapping,
                                      bool recursive = true);
// Several directories at once, idmapped through one user namespace (an
// overlay's layers: one namespace each would count hundreds against
// max_user_namespaces for a deep image), each its top mount alone: `tree`
// the first, `more` the rest in order. `paths` name them in messages.
Result<IdmappedTree> makeIdmappedTrees(const std::vector<int>& dir_fds,
                                       const std::vector<std::string>& paths,
                                       const IdMapping& mapping);

}  // namespace stockade::ns
