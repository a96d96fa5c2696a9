// Who the sandbox is (G3): its uid and gid inside, the host ids they map to,
// and, when stockade runs as root, the lease that makes those host ids the
// sandbox's own for as long as it runs.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/error.h"
#include "base/unique_fd.h"
#include "namespaces/user.h"
#include "runtime/policy/policy.h"

namespace stockade {

// A lease's size in a range that can hold one: 65536 ids, as many as a
// 16-bit world has, so every id a program may name (0 for chown, 65533
// for setuid) is mapped, and refused for want of privilege, as on a host.
inline constexpr uint32_t kIdBlock = 65536;

// Host ids reserved for root-run sandboxes: [base, base + count). Each id is
// both a uid and a gid; nothing else on the host should own any of them.
struct IdRange {
    uint32_t base = 0;
    uint32_t count = 0;
    // What one lease takes: a block of kIdBlock ids from base onward, or,
    // in a range smaller than one block, a single id. All leases of a range
    // have one width, so no two overlap.
    uint32_t leaseWidth() const { return count >= kIdBlock ? kIdBlock : 1; }
};

// The variable an operator sets to choose the range: "BASE:COUNT", decimal.
inline constexpr const char* kIdRangeVariable = "STOCKADE_UID_RANGE";
// Where the leases are: one lock file per leased id, named by the id.
inline constexpr const char* kIdLeaseDir = "/run/stockade/ids";

// "BASE:COUNT" -> the range; refused when it would hold 0 (root), the
// 32-bit (uid_t)-1, or anything past it.
Result<IdRange> parseIdRange(std::string_view text);
// The range root leases from: $STOCKADE_UID_RANGE, else the default one.
Result<IdRange> idRangeForRoot();

// One lease of a range (leaseWidth() ids from id()), held for the run's lifetime by an flock on its
// file under kIdLeaseDir (base/file_lock.h). A lock dies with its holder, so
// the id of a run that was killed is free again at once; nothing needs to be
// swept. Released (file removed, lock dropped) when the lease is destroyed.
class IdLease {
  public:
    IdLease() = default;
    IdLease(IdLease&&) = default;
    IdLease& operator=(IdLease&&) noexcept;
    ~IdLease();
    IdLease(const IdLease&) = delete;
    IdLease& operator=(const IdLease&) = delete;

    // The lowest free lease of `range`; an error naming the range when
    // every one is held by a live run.
    static Result<IdLease> acquire(const IdRange& range, const std::string& dir = kIdLeaseDir);

    bool held() const { return lock_.valid(); }
    // Gives up the lease's lock to whoever keeps the fd returned (an OCI
    // container's init, which no supervisor outlives): the lease is then
    // held for as long as that fd is open, and its file is left for the
    // next acquire to find free and take over.
    UniqueFd handOver() {
        path_.clear();
        return std::move(lock_);
    }
    uint32_t id() const { return id_; }  // the first of its ids
    uint32_t width() const { return width_; }

  private:
    void release();

    uint32_t id_ = 0;
    uint32_t width_ = 0;
    std::string path_;
    UniqueFd lock_;
};

// The sandbox's ids, and whether the worktree is attached through an
// idmapped mount: its files owned by worktree_uid/gid on disk appear as the
// sandbox's host ids, and what the sandbox creates lands on disk as theirs.
struct Identity {
    ns::IdMapping ids;
    bool idmap_worktree = false;
    uid_t worktree_uid = 0;
    gid_t worktree_gid = 0;
    IdLease lease;  // as root: held by whoever holds the Identity
};

// One line's grant of /etc/subuid or /etc/subgid (subuid(5)): `count` ids
// from `start`.
struct SubordinateRange {
    uint32_t start = 0;
    uint32_t count = 0;
};

// The largest range `text` (a subuid or subgid file) grants the user named
// `name` or numbered `id` (both forms are allowed, as newuidmap reads them);
// none when it grants nothing. Malformed lines are skipped, as newuidmap
// skips them.
std::optional<SubordinateRange> subordinateRangeFor(std::string_view text, std::string_view name,
                                                    uint32_t id);

// The mapping for a rootless run that asked for its subordinate ids
// (--map-subids): a block of min(65536, count + 1) ids inside, the caller's
// own uid and gid among them at inside_uid/inside_gid, the rest the
// subordinate ids in order. An error naming the problem when the ranges are
// too small to hold the inside ids.
Result<ns::IdMapping> subordinateMapping(uid_t inside_uid, uid_t host_uid, gid_t inside_gid,
                                         gid_t host_gid, const SubordinateRange& uids,
                                         const SubordinateRange& gids);

// Rootless: the caller's own uid and gid, the only ones it may map; with
// policy.map_subids, also what /etc/subuid and /etc/subgid grant it,
// through newuidmap and newgidmap (refused when either is missing).
// As root: inside the worktree owner's uid (65534 when that is root, or
// --user's); outside a leased block, inside ids 0..65535 mapped onto it
// (a single leased id, as both uid and gid, in a range smaller than a
// block or for an inside id past 65535); the worktree idmapped from its
// owner to the sandbox's host ids.
Result<Identity> chooseIdentity(const Policy& policy);

}  // namespace stockade
