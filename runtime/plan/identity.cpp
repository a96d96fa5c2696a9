#include "runtime/plan/identity.h"

#include "base/small_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "base/file_lock.h"
#include "base/host_path.h"

namespace stockade {

namespace {

constexpr uid_t kNobody = 65534;

// The default range, 0x78000000 to 0x7BFFFFFF (2013265920 to 2080374783):
// in the block that systemd's table of ranges (docs/UIDS-GIDS.md) leaves
// unused between its container ranges (524288-1879048191) and the 2^31
// boundary that tools treating uid_t as signed trip over, and clear of its
// "foreign" range at 0x7FFE0000. No distribution's user, system, dynamic
// (61184-65519) or subordinate ids (/etc/subuid: 100000 upward, 65536 per
// user; LXD's 1000000 upward) come near it. 2^26 ids: 1024 blocks of
// 65536, one per sandbox running at once.
constexpr IdRange kDefaultRange{0x78000000u, 0x04000000u};
constexpr uint64_t kLastValidId = 0xFFFFFFFEull;  // 0xFFFFFFFF is (uid_t)-1

Result<uint32_t> parseNumber(std::string_view text, std::string_view what) {
    uint32_t value = 0;
    auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || err != std::errc() || end != text.data() + text.size())
        return Error::message(std::string(kIdRangeVariable) + ": " + std::string(what) +
                              " is not a decimal number: \"" + std::string(text) + "\"");
    return value;
}

Status makeLeaseDir(const std::string& dir) {
    // Root's state directory, as for the veth slots (runtime/net/veth_backend.cpp).
    size_t slash = dir.rfind('/');
    if (slash != std::string::npos && slash > 0) {
        std::string parent = dir.substr(0, slash);
        if (mkdir(parent.c_str(), 0700) < 0 && errno != EEXIST)
            return Error::fromErrno("mkdir(\"" + parent + "\")");
    }
    if (mkdir(dir.c_str(), 0700) < 0 && errno != EEXIST)
        return Error::fromErrno("mkdir(\"" + dir + "\")");
    return okStatus();
}

}  // namespace

Result<IdRange> parseIdRange(std::string_view text) {
    size_t colon = text.find(':');
    if (colon == std::string_view::npos)
        return Error::message(std::string(kIdRangeVariable) + ": expected BASE:COUNT, got \"" +
                              std::string(text) + "\"");
    auto base = parseNumber(text.substr(0, colon), "BASE");
    if (!base) return base.error();
    auto count = parseNumber(text.substr(colon + 1), "COUNT");
    if (!count) return count.error();
    if (*base == 0)
        return Error::message(std::string(kIdRangeVariable) +
                              ": the range may not start at 0, which is root");
    if (*count == 0)
        return Error::message(std::string(kIdRangeVariable) + ": COUNT must be at least 1");
    if (uint64_t{*base} + *count - 1 > kLastValidId)
        return Error::message(std::string(kIdRangeVariable) +
                              ": the range runs past 4294967294, the last valid id");
    return IdRange{*base, *count};
}

Result<IdRange> idRangeForRoot() {
    // The operator's own environment: root chose to run stockade with it.
    const char* configured = std::getenv(kIdRangeVariable);
    if (configured == nullptr || *configured == '\0') return kDefaultRange;
    return parseIdRange(configured);
}

IdLease& IdLease::operator=(IdLease&& other) noexcept {
    if (this != &other) {
        release();
        id_ = other.id_;
        width_ = other.width_;
        path_ = std::move(other.path_);
        lock_ = std::move(other.lock_);
    }
    return *this;
}

IdLease::~IdLease() {
    release();
}

// The file goes before the lock: a run that opens it meanwhile finds it
// locked and moves on, or, if it locks it after us, sees that the path no
// longer names that inode and makes a fresh one (lockFileExclusive).
void IdLease::release() {
    if (!lock_) return;
    unlink(path_.c_str());
    lock_.reset();
}

Result<IdLease> IdLease::acquire(const IdRange& range, const std::string& dir) {
    if (auto s = makeLeaseDir(dir); !s) return s.error().withContext("make the id lease directory");
    const uint32_t width = range.leaseWidth();
    const uint64_t end = uint64_t{range.base} + range.count;
    for (uint64_t id = range.base; id + width <= end; id += width) {
        std::string path = dir + "/" + std::to_string(id);
        auto lock = lockFileExclusive(path, true);
        if (!lock) {
            if (lock.error().errnum() == EWOULDBLOCK) continue;
            return lock.error().withContext("lease a host id");
        }
        // The file stays empty: the lock alone decides, and /proc/locks (or
        // lslocks) names its holder. A byte written here would cost every
        // run its release, not its take: the last close of an unlinked file
        // with data frees a block, 0.7-2.7 ms on this host's ext4 /run,
        // against about 1 us for an empty one (docs/performance.md).
        IdLease out;
        out.id_ = static_cast<uint32_t>(id);
        out.width_ = width;
        out.path_ = std::move(path);
        out.lock_ = std::move(*lock);
        return out;
    }
    return Error::message("every host id of the sandbox range " + std::to_string(range.base) + "-" +
                          std::to_string(end - 1) + " is leased to a running sandbox (" +
                          std::to_string(range.count / width) + " leases of " +
                          std::to_string(width) + "; widen it with " + kIdRangeVariable +
                          "=BASE:COUNT)");
}

std::optional<SubordinateRange> subordinateRangeFor(std::string_view text, std::string_view name,
                                                    uint32_t id) {
    std::optional<SubordinateRange> best;
    const std::string number = std::to_string(id);
    while (!text.empty()) {
        size_t end = text.find('\n');
        std::string_view line = text.substr(0, end);
        text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
        size_t first = line.find(':');
        size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
        if (second == std::string_view::npos) continue;
        std::string_view who = line.substr(0, first);
        // A line with no name matches nobody, a caller without one included.
        if ((name.empty() || who != name) && who != number) continue;
        uint32_t start = 0, count = 0;
        std::string_view start_text = line.substr(first + 1, second - first - 1);
        std::string_view count_text = line.substr(second + 1);
        auto [s_end, s_err] =
            std::from_chars(start_text.data(), start_text.data() + start_text.size(), start);
        auto [c_end, c_err] =
            std::from_chars(count_text.data(), count_text.data() + count_text.size(), count);
        if (start_text.empty() || count_text.empty() || s_err != std::errc() ||
            c_err != std::errc() || s_end != start_text.data() + start_text.size() ||
            c_end != count_text.data() + count_text.size() || count == 0 ||
            uint64_t{start} + count - 1 > kLastValidId)
            continue;
        if (!best || count > best->count) best = SubordinateRange{start, count};
    }
    return best;
}

Result<ns::IdMapping> subordinateMapping(uid_t inside_uid, uid_t host_uid, gid_t inside_gid,
                                         gid_t host_gid, const SubordinateRange& uids,
                                         const SubordinateRange& gids) {
    // count - 1 subordinate ids fill the block around the caller's own.
    const uint64_t block =
        std::min<uint64_t>({kIdBlock, uint64_t{uids.count} + 1, uint64_t{gids.count} + 1});
    auto tooFew = [&](const char* file, const char* kind, uint32_t inside,
                      const SubordinateRange& r) {
        return Error::message("--map-subids: " + std::string(file) + " grants " +
                              std::to_string(r.count) + " ids from " + std::to_string(r.start) +
                              ", too few for a block that holds the sandbox's " + kind + " " +
                              std::to_string(inside) + " (it needs " +
                              std::to_string(uint64_t{inside}) + " or more)");
    };
    // One block serves both maps: the smaller grant bounds it.
    const bool uids_smaller = uids.count <= gids.count;
    if (inside_uid >= block)
        return uids_smaller ? tooFew("/etc/subuid", "uid", inside_uid, uids)
                            : tooFew("/etc/subgid", "uid", inside_uid, gids);
    if (inside_gid >= block)
        return uids_smaller ? tooFew("/etc/subuid", "gid", inside_gid, uids)
                            : tooFew("/etc/subgid", "gid", inside_gid, gids);
    ns::IdMapping m{inside_uid, host_uid, inside_gid, host_gid, static_cast<uint32_t>(block)};
    m.subordinate = true;
    m.subuid_base = uids.start;
    m.subgid_base = gids.start;
    return m;
}

namespace {

// A small system file's text (at most 1 MiB), or the error that kept it.
Result<std::string> readSystemText(const char* file) {
    auto read = readSmallFile(AT_FDCWD, file, file, size_t{1} << 20);
    if (!read) return read.error();
    return std::move(read->content);
}

// The name /etc/passwd gives `uid`, or "" (the binary is static: glibc's
// getpwuid would need NSS modules at run time, so users that only a
// directory service knows are matched in the grant files by number).
std::string localUserName(uid_t uid) {
    auto passwd = readSystemText("/etc/passwd");
    if (!passwd) return "";
    const std::string& text = *passwd;
    const std::string id = std::to_string(uid);
    size_t at = 0;
    while (at < text.size()) {
        size_t end = text.find('\n', at);
        if (end == std::string::npos) end = text.size();
        std::string_view line(text.data() + at, end - at);
        at = end + 1;
        size_t c1 = line.find(':');
        size_t c2 = c1 == std::string_view::npos ? c1 : line.find(':', c1 + 1);
        size_t c3 = c2 == std::string_view::npos ? c2 : line.find(':', c2 + 1);
        if (c3 != std::string_view::npos && line.substr(c2 + 1, c3 - c2 - 1) == id)
            return std::string(line.substr(0, c1));
    }
    return "";
}

// What /etc/subuid (or subgid) grants the caller; an error naming the file
// when it grants nothing or cannot be read.
Result<SubordinateRange> callerGrant(const char* file, const std::string& name, uint32_t id) {
    auto text = readSystemText(file);
    if (!text) return Error::message("--map-subids: " + text.error().describe());
    auto range = subordinateRangeFor(*text, name, id);
    if (!range)
        return Error::message(
            "--map-subids: " + std::string(file) + " grants " +
            (name.empty() ? "uid " + std::to_string(id) : name + " (" + std::to_string(id) + ")") +
            " no subordinate ids (add a line NAME:START:COUNT, see subuid(5))");
    return *range;
}

// Rootless with --map-subids: newuidmap and newgidmap write what the
// caller's grants allow. Refused, never quietly narrowed to one id, when
// they or the grants are missing: the caller asked for the range.
Result<ns::IdMapping> rootlessSubordinateIds(uid_t inside_uid, gid_t inside_gid) {
    for (const char* helper : {ns::kNewUidMap, ns::kNewGidMap})
        if (access(helper, X_OK) < 0)
            return Error::message(std::string("--map-subids: ") + helper +
                                  " is not installed (Debian: apt-get install uidmap)");
    const uid_t uid = geteuid();
    const gid_t gid = getegid();
    // newgidmap, too, looks the user's name (not a group's) up in /etc/subgid.
    const std::string user = localUserName(uid);
    auto uids = callerGrant("/etc/subuid", user, uid);
    if (!uids) return uids.error();
    auto gids = callerGrant("/etc/subgid", user, uid);
    if (!gids) return gids.error();
    return subordinateMapping(inside_uid, uid, inside_gid, gid, *uids, *gids);
}

}  // namespace

Result<Identity> chooseIdentity(const Policy& policy) {
    Identity out;
    uid_t euid = geteuid();
    if (euid != 0) {
        // Rootless: the kernel lets us map only ourselves, and newuidmap
        // what /etc/subuid grants us.
        out.ids = {policy.uid.value_or(euid), euid, policy.gid.value_or(getegid()), getegid()};
        if (policy.map_subids) {
            auto ids = rootlessSubordinateIds(out.ids.inside_uid, out.ids.inside_gid);
            if (!ids) return ids.error();
            out.ids = *ids;
        }
        return out;
    }
    // Inside: the worktree owner's ids, so that its files look like the
    // sandbox's own, or 65534 when root owns it: never 0 (G3).
    uid_t inside_uid = kNobody;
    gid_t inside_gid = kNobody;
    if (policy.fs.worktree) {
        // Judged on the fd opened first (host_path.h), which the idmap and
        // the bind use too: a path swapped since then decides nothing. A
        // policy built by hand (a unit test) holds no fd: its path is held now.
        struct stat st;
        HeldPath held = policy.fs.worktree_held;
        if (!held) {
            auto now = holdHostPath("--worktree", *policy.fs.worktree, false);
            if (!now) return now.error();
            held = std::move(*now);
        }
        if (fstat(held.get(), &st) < 0)
            return Error::fromErrno("fstat(\"" + *policy.fs.worktree + "\")");
        if (st.st_uid != 0) {
            inside_uid = st.st_uid;
            inside_gid = st.st_gid != 0 ? st.st_gid : kNobody;
        }
        out.worktree_uid = st.st_uid;
        out.worktree_gid = st.st_gid;
    }
    // Outside: an id of its own, leased for the run, as both uid and gid, so
    // no other sandbox and no host process shares it.
    auto range = idRangeForRoot();
    if (!range) return range.error();
    auto lease = IdLease::acquire(*range);
    if (!lease) return lease.error();
    const uint32_t first = lease->id(), width = lease->width();
    out.lease = std::move(*lease);
    const uid_t uid = policy.uid.value_or(inside_uid);
    const gid_t gid = policy.gid.value_or(inside_gid);
    if (width > 1 && uid < width && gid < width)
        out.ids = {uid, first + uid, gid, first + gid, width};
    else
        out.ids = {uid, first, gid, first, 1};
    // The worktree stays its owner's: through the idmap its files are the
    // sandbox's to the sandbox, and what the sandbox writes there lands on
    // disk as the owner's, whoever that is.
    out.idmap_worktree = policy.fs.worktree && (out.worktree_uid != out.ids.host_uid ||
                                                out.worktree_gid != out.ids.host_gid);
    return out;
}

}  // namespace stockade
