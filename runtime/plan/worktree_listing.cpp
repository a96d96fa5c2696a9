#include "runtime/plan/worktree_listing.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/openat2.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <functional>
#include <new>
#include <system_error>
#include <thread>

#include "base/error.h"
#include "base/text_safety.h"
#include "namespaces/syscalls.h"

namespace stockade {

namespace {

// A depth with fewer directories is listed on the calling thread: a thread
// costs more to start than a few directories cost to read.
constexpr size_t kDirectoriesPerThread = 64;
// Past a few threads the kernel's dcache and the disk are what is waited on.
constexpr unsigned kMaxThreads = 4;

// Whether this kernel can have a case-folding directory at all: ext4, f2fs
// and tmpfs built with Unicode say so in sysfs (features/casefold). Where
// none can exist no directory is asked; where sysfs cannot be read, each is.
bool caseFoldingPossible() {
    static const bool possible = [] {
        if (access("/sys/fs", F_OK) != 0) return true;
        for (const char* feature :
             {"/sys/fs/ext4/features/casefold", "/sys/fs/f2fs/features/casefold",
              "/sys/fs/tmpfs/features/casefold"})
            if (access(feature, F_OK) == 0) return true;
        return false;
    }();
    return possible;
}

unsigned usableCpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) < 0) return 1;
    return static_cast<unsigned>(std::max(1, CPU_COUNT(&set)));
}

// The inode number alone may be a deleted directory's, reused; its ctime
// is new unless a clock or another machine gave it the old one, and its
// birth time is new too: all three must match, and a birth time kept must
// still be given (one gone is another filesystem, or another inode).
bool sameDirectory(const WalkedDir& was, const struct stat& now, const timespec& btime,
                   bool has_btime) {
    return S_ISDIR(now.st_mode) && was.dev == now.st_dev && was.ino == now.st_ino &&
           was.ctime.tv_sec == now.st_ctim.tv_sec && was.ctime.tv_nsec == now.st_ctim.tv_nsec &&
           was.has_btime == has_btime &&
           (!has_btime || (was.btime.tv_sec == btime.tv_sec && was.btime.tv_nsec == btime.tv_nsec));
}

// The hide or read-only pattern that names `name` in `above` as a directory
// on its way (MaskPatternSet::onTheWay), or null. A link kept read-only
// itself is judged by the hide patterns alone: what is written through it
// lands read-only (its target is kept with it), but nothing hides it there
// (a review's: `.vscode -> x` with a hide of `.vscode/sftp.json`).
// A pattern the operator exempted as written (`--show config/master.key`,
// `--writable .github/workflows`) holds nothing to escape.
const std::string* linkOnTheWay(const ListingRules& rules, const std::vector<std::string>& above,
                                const std::string& name, bool kept) {
    const std::string* p = rules.hide.onTheWay(above, name, &rules.show);
    return p || kept ? p : rules.read_only.onTheWay(above, name, &rules.writable);
}

void listOne(int root_fd, const ListingRules& rules, DirListing& dir, std::vector<char>& buffer,
             std::atomic<uint64_t>& seen) {
    const char* path = dir.relative.empty() ? "." : dir.relative.c_str();
    const WalkedDir* was = nullptr;
    VisitedDir was_node = nullptr;
    for (const WalkedDirs* earlier : {rules.before, rules.kept}) {
        if (!earlier || was) continue;
        const auto at = earlier->find(dir.relative);
        if (at != earlier->end()) {
            was = &at->second;
            was_node = &*at;
        }
    }
    if (was) {
        // One statx, no open: a directory still the same inode with the
        // same ctime, settled when it was listed, gained no name. The path
        // may resolve through a link a racing writer just made, but only to
        // a directory of that same inode, listed before; the covers
        // themselves are opened through no link (mount_in_child.cpp).
        struct stat now;
        timespec btime;
        bool has_btime;
        if (was->settled &&
            statWithBirth(root_fd, path, AT_SYMLINK_NOFOLLOW, now, btime, has_btime) == 0 &&
            sameDirectory(*was, now, btime, has_btime)) {
            // Its names are the ones seen then; a matching one is stated
            // anew (a file keeps its name but not its link count), as the
            // listing would have.
            dir.outcome = DirListing::Outcome::Unchanged;
            dir.have_st = true;
            dir.st = now;
            dir.btime = btime;
            dir.has_btime = has_btime;
            dir.unchanged = was_node;
            dir.entries = was->entries;
            dir.interesting.reserve(was->names.size());
            const std::vector<std::string> above = pathComponents(dir.relative);
            for (const WalkedName& n : was->names) {
                ListedEntry e;
                e.name = n.name;
                e.hidden = n.hidden;
                e.kept = n.kept;
                e.is_dir = n.is_dir;
                e.link_in_kept = n.link_in_kept;
                e.on_way = n.on_way ? linkOnTheWay(rules, above, n.name, n.kept) : nullptr;
                if (e.hidden || e.kept || e.link_in_kept || e.on_way) {
                    e.examined = true;
                    // Through no link at all, the name itself included: a
                    // directory above swapped for a link since the check
                    // above (ELOOP) makes the name unexaminable, and the run
                    // is refused, rather than a file elsewhere stated.
                    const std::string at =
                        dir.relative.empty() ? n.name : dir.relative + "/" + n.name;
                    const UniqueFd name =
                        openBeneathWorktree(root_fd, at, O_PATH | O_NOFOLLOW, RESOLVE_NO_SYMLINKS);
                    if (!name || fstat(name.get(), &e.st) < 0) {
                        e.stat_errno = errno;
                    } else {
                        e.is_dir = S_ISDIR(e.st.st_mode);
                        e.link_in_kept = e.link_in_kept && S_ISLNK(e.st.st_mode);
                        if (!S_ISLNK(e.st.st_mode)) e.on_way = nullptr;
                    }
                }
                dir.interesting.push_back(std::move(e));
            }
            if (seen.fetch_add(dir.entries) + dir.entries > rules.max_entries)
                dir.over_bound = true;
            return;
        }
    }
    UniqueFd fd = openDirBeneath(root_fd, dir.relative);  // EAGAIN tried again (syscalls.h)
    if (!fd) {
        const int err = errno;
        // Gone or swapped for a link since it was listed: nothing of it can
        // be covered, and nothing needs to be.
        if (err == ENOENT || err == ENOTDIR || err == ELOOP) {
            dir.outcome = DirListing::Outcome::Gone;
            dir.vanished = true;
            return;
        }
        // Any other failure (EMFILE, ENOMEM, EIO...) says nothing of what
        // the directory holds, and the sandbox may well list it: the walk
        // is incomplete.
        if (err != EACCES && err != EPERM) {
            dir.problem = "openat2(\"/repo/" + escapeForTerminal(dir.relative) +
                          "\", O_DIRECTORY|O_NOFOLLOW, RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS): " +
                          errnoName(err);
            dir.problem_errno = err;
            dir.outcome = DirListing::Outcome::Incomplete;
            return;
        }
        // A directory of the walker's own that it may not list is one a
        // sandbox of the same user could have closed to hide what it moved
        // there, and could open again: the walk is incomplete. Someone
        // else's stays shut to the sandbox too, and is counted.
        struct stat st {};  // gone: no directory at all
        if (fstatat(root_fd, path, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno != ENOENT &&
            errno != ENOTDIR) {
            dir.problem_errno = errno;
            dir.problem = "fstatat(\"/repo/" + escapeForTerminal(dir.relative) +
                          "\", AT_SYMLINK_NOFOLLOW): " + errnoName(dir.problem_errno);
            dir.outcome = DirListing::Outcome::Incomplete;
            return;
        }
        if (S_ISDIR(st.st_mode) && st.st_uid == geteuid()) {
            char mode[8];
            std::snprintf(mode, sizeof mode, "%03o", st.st_mode & 0777);
            dir.problem = "/repo/" + escapeForTerminal(dir.relative) + " cannot be listed (mode " +
                          mode + "), though it is uid " + std::to_string(geteuid()) + "'s own";
            dir.outcome = DirListing::Outcome::Incomplete;
            return;
        }
        // Someone else's, but one the walker (and so a sandbox of the same
        // user) may write into and reach names in without listing (0733):
        // what an earlier sandbox moved there is out of the walk's sight
        // and not out of the next sandbox's (a red team's, 2026-12-07).
        if (S_ISDIR(st.st_mode) &&
            faccessat(root_fd, path, W_OK | X_OK, AT_EACCESS | AT_SYMLINK_NOFOLLOW) == 0) {
            char mode[8];
            std::snprintf(mode, sizeof mode, "%03o", st.st_mode & 0777);
            dir.problem = "/repo/" + escapeForTerminal(dir.relative) + " cannot be listed (mode " +
                          mode + ", uid " + std::to_string(st.st_uid) + "'s), yet uid " +
                          std::to_string(geteuid()) + " may write into it";
            dir.outcome = DirListing::Outcome::Incomplete;
            return;
        }
        dir.outcome = DirListing::Outcome::Gone;
        dir.vanished = !S_ISDIR(st.st_mode);
        return;
    }
    // A case-folding directory (chattr +F) finds `.ENV` for `.env`, and a
    // host's write of `.env` there lands in a `.ENV` a sandbox made first:
    // names are matched as written, so no pattern covers their other
    // cases, and such a directory is refused. A sandbox can make one where
    // the filesystem has the feature (an empty directory of its own).
    if (int flags = 0; caseFoldingPossible() && ioctl(fd.get(), FS_IOC_GETFLAGS, &flags) == 0 &&
                       (flags & FS_CASEFOLD_FL)) {
        dir.problem = "/repo/" + escapeForTerminal(dir.relative) +
                      " is a case-folding directory (chattr +F), where a name is found under "
                      "its other cases (.ENV for .env) and the names to hide or keep read-only, "
                      "matched as written, would not cover them";
        dir.case_folding = true;
        dir.outcome = DirListing::Outcome::Incomplete;
        return;
    }
    // Stated before it is read: a change after this fstat gives the
    // directory a ctime other than the one kept (WalkedDir::settled).
    dir.have_st = statWithBirth(fd.get(), "", AT_EMPTY_PATH, dir.st, dir.btime, dir.has_btime) == 0;
    if (buffer.empty()) buffer.resize(size_t{1} << 16);
    const std::vector<std::string> above = pathComponents(dir.relative);
    while (true) {
        const long n = syscall(SYS_getdents64, fd.get(), buffer.data(), buffer.size());
        if (n < 0) {
            dir.problem_errno = errno;
            dir.problem = "getdents64(\"/repo/" + escapeForTerminal(dir.relative) +
                          "\"): " + errnoName(dir.problem_errno);
            dir.outcome = DirListing::Outcome::Incomplete;
            return;
        }
        if (n == 0) break;
        uint64_t in_buffer = 0;
        for (long off = 0; off < n;) {
            auto* d = reinterpret_cast<struct dirent64*>(buffer.data() + off);
            off += d->d_reclen;
            const char* raw = d->d_name;
            if (raw[0] == '.' && (raw[1] == '\0' || (raw[1] == '.' && raw[2] == '\0'))) continue;
            ++in_buffer;
            const std::string name = raw;
            ListedEntry e;
            e.is_dir = d->d_type == DT_DIR;
            e.hidden = rules.hide.match(above, name) && !rules.show.match(above, name);
            e.kept = !e.hidden && rules.read_only.match(above, name) &&
                     !rules.writable.match(above, name);
            const bool kept_link = dir.under_kept && d->d_type == DT_LNK;
            if (!e.hidden && (d->d_type == DT_LNK || d->d_type == DT_UNKNOWN))
                e.on_way = linkOnTheWay(rules, above, name, e.kept);
            // Most entries are files that match nothing: nothing is kept.
            if (!e.hidden && !e.kept && !e.is_dir && !kept_link && !e.on_way &&
                d->d_type != DT_UNKNOWN)
                continue;
            if (e.hidden || e.kept || kept_link || e.on_way || d->d_type == DT_UNKNOWN) {
                e.examined = true;
                if (fstatat(fd.get(), raw, &e.st, AT_SYMLINK_NOFOLLOW) < 0) {
                    e.stat_errno = errno;
                } else {
                    e.is_dir = S_ISDIR(e.st.st_mode);
                    e.link_in_kept = dir.under_kept && S_ISLNK(e.st.st_mode);
                    if (!S_ISLNK(e.st.st_mode)) e.on_way = nullptr;
                }
                // A name of unknown type that is neither matched nor a
                // directory nor such a link tells the walk nothing.
                if (!e.hidden && !e.kept && !e.is_dir && !e.link_in_kept && !e.on_way &&
                    !e.stat_errno)
                    continue;
            }
            e.name = std::move(name);
            dir.interesting.push_back(std::move(e));
        }
        dir.entries += in_buffer;
        // The bound holds over every listing so far: past it, the walk is
        // cut (the caller refuses the run), so reading on is wasted.
        if (seen.fetch_add(in_buffer) + in_buffer > rules.max_entries) {
            dir.over_bound = true;
            break;
        }
    }
    dir.outcome = DirListing::Outcome::Listed;
}

// How many the threads of allUnchanged take at a time.
constexpr size_t kUnchangedBatch = 256;

// Runs `work` on this thread and on helpers, one per kDirectoriesPerThread of
// `directories`, as many as the CPUs and kMaxThreads allow, and waits for
// them. With no thread to be had (RLIMIT_NPROC) this one does the rest: each
// `work` takes items until none is left.
void onThreads(size_t directories, const std::function<void()>& work) {
    const size_t wanted =
        std::min<size_t>({directories / kDirectoriesPerThread, usableCpus(), kMaxThreads});
    std::vector<std::thread> helpers;
    for (size_t t = 1; t < wanted; ++t) {
        try {
            helpers.emplace_back(work);
        } catch (const std::system_error&) {
            break;
        }
    }
    work();
    for (std::thread& t : helpers) t.join();
}

}  // namespace

int statWithBirth(int at_fd, const char* path, int flags, struct stat& st, timespec& btime,
                  bool& has_btime) {
    struct statx x;
    if (statx(at_fd, path, flags | AT_STATX_SYNC_AS_STAT, STATX_BASIC_STATS | STATX_BTIME, &x) < 0)
        return -1;
    // A field not given reads zero, and a zero ctime kept would match a zero
    // ctime forever: not given, not judged.
    constexpr unsigned kNeeded = STATX_TYPE | STATX_MODE | STATX_INO | STATX_CTIME;
    if ((x.stx_mask & kNeeded) != kNeeded) {
        errno = ENODATA;
        return -1;
    }
    st = {};
    st.st_dev = makedev(x.stx_dev_major, x.stx_dev_minor);
    st.st_rdev = makedev(x.stx_rdev_major, x.stx_rdev_minor);
    st.st_ino = x.stx_ino;
    st.st_mode = x.stx_mode;
    st.st_nlink = x.stx_nlink;
    st.st_uid = x.stx_uid;
    st.st_gid = x.stx_gid;
    st.st_size = static_cast<off_t>(x.stx_size);
    st.st_blksize = x.stx_blksize;
    st.st_blocks = static_cast<blkcnt_t>(x.stx_blocks);
    st.st_atim = {x.stx_atime.tv_sec, x.stx_atime.tv_nsec};
    st.st_mtim = {x.stx_mtime.tv_sec, x.stx_mtime.tv_nsec};
    st.st_ctim = {x.stx_ctime.tv_sec, x.stx_ctime.tv_nsec};
    has_btime = (x.stx_mask & STATX_BTIME) != 0;
    btime = has_btime ? timespec{x.stx_btime.tv_sec, x.stx_btime.tv_nsec} : timespec{};
    return 0;
}

UniqueFd openBeneathWorktree(int root_fd, const std::string& relative, int flags,
                             uint64_t resolve) {
    open_how how{};
    how.flags = static_cast<uint64_t>(flags) | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | resolve;
    return UniqueFd(ns::sysOpenat2(root_fd, relative.empty() ? "." : relative.c_str(), &how));
}

UniqueFd openDirBeneath(int root_fd, const std::string& relative) {
    return openBeneathWorktree(root_fd, relative, O_RDONLY | O_DIRECTORY | O_NOFOLLOW,
                               RESOLVE_NO_SYMLINKS);
}

void listDirectories(int root_fd, const ListingRules& rules, std::vector<DirListing>& dirs,
                     std::atomic<uint64_t>& seen) {
    std::atomic<size_t> next{0};
    auto work = [&] {
        try {
            // Made when a listing is read: a walk that finds every
            // directory unchanged reads none, and a zeroed 64 KiB per
            // thread and depth is a page fault for each of its pages.
            std::vector<char> buffer;
            for (size_t i; (i = next.fetch_add(1)) < dirs.size();)
                listOne(root_fd, rules, dirs[i], buffer, seen);
        } catch (const std::bad_alloc&) {
            // The directory this thread was reading stays NotListed, and
            // the walk is cut there: the run is refused, not narrowed.
        }
    };
    onThreads(dirs.size(), work);
}

bool SteadyRule::trusts(const WalkedDir& was) const {
    for (const DeviceRule& d : devices) {
        if (d.dev != was.dev) continue;
        if (!d.local) return true;  // not judged by its ctimes (the caller says so)
        if (d.exact && was.has_btime) return true;
        if (was.has_btime)
            return was.ctime.tv_sec < coarse_start.tv_sec ||
                   (was.ctime.tv_sec == coarse_start.tv_sec &&
                    was.ctime.tv_nsec < coarse_start.tv_nsec);
        return was.ctime.tv_sec < coarse_start.tv_sec;
    }
    return false;  // a device the rule does not know: not trusted
}

bool allUnchanged(int root_fd, dev_t dev, const std::vector<VisitedDir>& dirs,
                  const SteadyRule* steady, std::string* changed) {
    auto trusted = [&](const WalkedDir& was) {
        if (!steady) return was.settled && was.dev == dev;
        return steady->trusts(was);
    };
    std::atomic<size_t> next{0};
    std::atomic<bool> same{true};
    size_t changed_at = dirs.size();
    auto work = [&] {
        for (size_t from; same.load(std::memory_order_relaxed) &&
                          (from = next.fetch_add(kUnchangedBatch)) < dirs.size();) {
            const size_t to = std::min(dirs.size(), from + kUnchangedBatch);
            for (size_t i = from; i < to; ++i) {
                const auto& [relative, was] = *dirs[i];
                // A path through a link a concurrent writer made reaches
                // only a directory of the same inode and ctime, which is
                // the one judged: the answer stands.
                struct stat now;
                timespec btime;
                bool has_btime;
                if (!trusted(was) ||
                    statWithBirth(root_fd, relative.empty() ? "." : relative.c_str(),
                                  AT_SYMLINK_NOFOLLOW, now, btime, has_btime) < 0 ||
                    !sameDirectory(was, now, btime, has_btime)) {
                    // The first to find one marks it (named after the join:
                    // nothing is allocated on these threads).
                    if (same.exchange(false)) changed_at = i;
                    return;
                }
            }
        }
    };
    onThreads(dirs.size(), work);
    if (!same && changed && changed_at < dirs.size())
        *changed = dirs[changed_at]->first.empty() ? "." : dirs[changed_at]->first;
    return same;
}

}  // namespace stockade
