#include "runtime/identity.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>

#include "base/file_lock.h"

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
    // Root's state directory, as for the veth slots (runtime/veth_backend.cpp).
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
        // The holder's pid, for whoever wonders who holds an id; the lock,
        // not this, is what decides.
        std::string pid = std::to_string(getpid()) + "\n";
        if (ftruncate(lock->get(), 0) < 0 || write(lock->get(), pid.data(), pid.size()) < 0) {
            int err = errno;
            unlink(path.c_str());
            return Error::fromErrno("write(\"" + path + "\")", err);
        }
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

Result<Identity> chooseIdentity(const Policy& policy) {
    Identity out;
    uid_t euid = geteuid();
    if (euid != 0) {
        // Rootless: the kernel lets us map only ourselves.
        out.ids = {policy.uid.value_or(euid), euid, policy.gid.value_or(getegid()), getegid()};
        return out;
    }
    // Inside: the worktree owner's ids, so that its files look like the
    // sandbox's own, or 65534 when root owns it: never 0 (G3).
    uid_t inside_uid = kNobody;
    gid_t inside_gid = kNobody;
    if (policy.fs.worktree) {
        struct stat st;
        if (stat(policy.fs.worktree->c_str(), &st) < 0)
            return Error::fromErrno("stat(\"" + *policy.fs.worktree + "\")");
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
