// The worktree walk kept between runs (issue 21's cost point,
// docs/performance.md): each directory's inode, ctime, birth time, entry
// count and the names the walk went on with, so that the next run lists only
// the directories whose ctime moved and makes one statx of each of the
// others.
//
// Why an unchanged ctime may stand for unchanged entries: any change of a
// directory's entries stamps its ctime, no process can set a ctime back
// (utimensat(2) cannot), and a listing is kept only when the ctime was older
// than the walk that read it by more than a clock tick could blur
// (WalkedDir::settled). That rule needs the clock not to have gone back
// between the two runs, so the cache records the boot and the offset of
// CLOCK_REALTIME from CLOCK_BOOTTIME and is dropped when the boot differs or
// the offset moved back; and it needs ctime to be the local kernel's own, so
// a worktree on anything but ext2/3/4, XFS, Btrfs, tmpfs or F2FS (NFS, FUSE,
// overlayfs, 9p, SMB...) is walked whole, as is any directory on another
// device than the worktree's top (a mount inside it).
//
// It needs, too, the very filesystem the kernel stamped all along, mounted
// all along: one unmounted may be written by another machine or by debugfs
// with any ctime, and another filesystem mounted at the same path (a loop
// device's or an anonymous device's number reused, an image's clone) may
// hold the same inode numbers. So the worktree's mount (statx
// STATX_MNT_ID_UNIQUE, never reused in a boot; the plain mount id where the
// kernel predates it) and its filesystem id (fstatfs f_fsid) are kept and
// must match; and each directory's birth time (statx STATX_BTIME, where the
// filesystem keeps one) must match with its inode and ctime, so a directory
// deleted and made anew with its inode number reused is never the kept one.
// Each is a reason to walk, never to trust.
//
// Where it is kept: the caller's private state directory
// (runtime/record/state_dir.h), held by fd, which no sandbox may write
// (refuseWritableStateDirs), in a "walk-cache" directory of its own, 0700:
// one file per worktree (and per linked worktree's common dir, walked for
// hidden names before it is exposed: child_plan_builder.cpp), named by its
// device and inode, 0600,
// written whole (a temporary name, then renameat), at most kMaxCacheBytes.
// The file also holds the rules that shaped the walk (patterns, bounds, the
// walker's uid): a walk under other rules does not use it. It is read
// through no link, only when it is a regular file of the caller's with no
// access for others; a file that fails any check, or does not parse to the
// byte, is passed over in silence and the walk is whole. What the cache
// cannot defend against is the caller itself (or root) writing a
// well-formed lie there: it is as trusted as the state directory.
#pragma once

#include <memory>

#include "base/unique_fd.h"
#include "runtime/plan/worktree_masks.h"
#include "runtime/policy/policy.h"

namespace stockade {

inline constexpr size_t kMaxCacheBytes = size_t{64} << 20;
// Caches for this many worktrees at most; past it the least recently
// written one goes.
inline constexpr size_t kMaxCacheFiles = 32;

// What a kept walk is for: the worktree (its fd, any kind) and the rules.
struct WalkCacheKey {
    int state_dir_fd = -1;
    int worktree_fd = -1;
    const WorktreeMaskRules* rules = nullptr;
};

// Whether the filesystem of `fd` stamps a directory's ctime itself, locally,
// on every change of its entries (ext2/3/4, XFS, Btrfs, tmpfs, F2FS): only
// there may an unchanged ctime stand for unchanged entries.
bool worktreeCtimeIsLocal(int fd);

// Whether a directory's ctime, once a process has stated it, changes with
// the next change of its entries, however soon: the multigrain timestamps
// of Linux 6.13 on ext4, XFS, Btrfs and tmpfs (a ctime that has been read is
// stamped next with a fine-grained time later than it). Elsewhere two
// changes in one tick of the coarse clock may give one ctime. Only for a
// directory with a birth time: the filesystem type alone does not say that
// its inodes keep nanoseconds (an ext4 of 128-byte inodes keeps whole
// seconds and no birth time), so a caller asks statx for STATX_BTIME too.
// Kept only in memory, the "read" mark is lost if the inode is evicted
// between the read and the change; that needs the eviction within one tick.
bool worktreeCtimeIsExactAfterQuery(int fd);

// The kept walk for `key`, or null when there is none that may be trusted.
std::shared_ptr<const WalkedDirs> loadWalkCache(const WalkCacheKey& key);

// The wall clock's distance from the boot (CLOCK_REALTIME - CLOCK_BOOTTIME),
// read before a walk: the clock its `settled` was judged by.
int64_t walkClockOffsetNs();

// The wall clock a walk judges `settled` by, and its distance from the boot,
// from one reading: the ctime judged against `now` is then measured, in a
// later run, against the very clock it was judged by.
struct WalkClock {
    timespec now{};
    int64_t offset_ns = 0;
};
WalkClock readWalkClock();

// Keeps the settled directories of `walked` (a whole walk's record) for the
// next run; failures are silent (the next walk is whole). `clock_offset_ns`:
// walkClockOffsetNs() as read before the walks that judged them (the larger,
// for two), not at the save: a clock stepped back during the run would
// otherwise be taken as the clock the listings were judged by.
void saveWalkCache(const WalkCacheKey& key, const WalkedDirs& walked, int64_t clock_offset_ns);

// Test hook and reason, for tests: why the last loadWalkCache returned null
// ("" when it did not), e.g. "owner", "parse", "version", "boot", "rules",
// "fsid", "mount".
const char* lastWalkCacheMiss();

}  // namespace stockade
