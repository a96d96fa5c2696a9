// Secrets and agent instructions inside the worktree (issue 21): names the
// profile hides (credentials: .env, .npmrc, .aws/ ...) or keeps read-only
// (AGENTS.md, .github/workflows ...), matched by path component at any depth.
//
// The worktree is written by earlier sandboxes, so it is walked on the host,
// before the sandbox exists, through fds: every directory is opened beneath
// the held worktree with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, no link is
// ever followed, and a name that is a symlink is covered as itself; where it
// leads in the worktree, read from its text, is covered with it (hidden or
// read-only: worktree_links.h), and so is where each link in a read-only
// or hidden directory leads. The walk is breadth first, so the shallow names an operator keeps
// (the top-level .env) are examined before anything a deep planted tree can
// use up the bound with; it is bounded in depth and in entries examined,
// matches no name below a hidden directory, and lists what is below one
// only for its links.
//
// "Hidden" means covered: a hidden file (or symlink, FIFO, socket) is
// covered by an empty read-only file, a hidden directory by an empty
// read-only directory, both bound from the sandbox's own root. The sandbox
// sees the name, empty, and can neither read what was there nor create
// anything beneath it; a hidden name that does not exist is not created.
// Each cover is attached to the very inode the walk saw (device and inode
// checked in the child, attributes set before the attach), so nothing
// swapped in between is covered instead or left bare: a mismatch refuses
// the run. A hidden or read-only name the sandbox creates during the run
// (where the worktree lets it) is found by a second walk afterwards and
// reported; it is hidden in every later run. That walk lists only the
// directories that changed during the run, with one statx for each of the
// others (and no listing at all when every directory the first walk judged
// is unchanged: WorktreeMaskReport::visited): the first walk keeps each
// directory's inode and ctime, which any change of its entries sets anew
// and no process can set back (utimensat(2) cannot set ctime). A change in
// the same clock tick as the first walk's fstat could keep the ctime on a
// coarse-grained filesystem, so only a ctime older than the walk by a
// margin is trusted (WalkedDir::settled); a directory changed just before
// the run is listed again after it. The same rule lets the walk before a
// run take unchanged directories from the walk an earlier run kept in the
// caller's state directory (walk_cache.h).
#pragma once

#include <sys/types.h>

#include <time.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "runtime/policy/mask_patterns.h"
#include "runtime/policy/policy.h"

namespace stockade {

struct ChildPlan;

// At most this many names are covered in one run: each is a mount, which
// costs the setup time and kernel memory. More is a refusal, not a run with
// some names left bare.
inline constexpr size_t kMaxMaskedNames = 1024;
// At most this many directories above covered names are held in place (a
// mount each, so that none can be moved aside: worktree_masks.cpp, pinsAbove).
inline constexpr size_t kMaxPinnedDirs = 4096;
// How many names of each kind the result lists.
inline constexpr size_t kReportedMaskNames = 32;

// What the walk found.
struct MaskedName {
    std::string relative;  // below the worktree, '/'-separated
    bool is_dir = false;
    dev_t dev = 0;
    ino_t ino = 0;
    // Its directories are held in place whatever the patterns are: hidden
    // because a hidden link leads to it, not for its own name, which a
    // rename of a directory above it would keep out of every pattern.
    bool pin_above = false;
};

// A name of a listed directory that the walk looked at: a subdirectory, a
// hidden or read-only name (judged by the rules the walk had).
struct WalkedName {
    std::string name;
    bool hidden = false;
    bool kept = false;
    bool is_dir = false;
    bool link_in_kept = false;  // a link in a read-only directory (ListedEntry)
    bool on_way = false;        // a link where a pattern names a directory (ListedEntry)
};

// Each directory a walk listed, by its path below the worktree: what it was
// then, how many entries it held, and the names the walk went on with.
struct WalkedDir {
    dev_t dev = 0;
    ino_t ino = 0;
    timespec ctime{};
    // The ctime was older than the walk by more than a clock tick could
    // blur: the same ctime later means the same entries (worktree_walk_clock.h).
    bool settled = false;
    uint64_t entries = 0;
    std::vector<WalkedName> names;  // in readdir order
    // Its birth time (statx STATX_BTIME), where the filesystem keeps one:
    // a directory made anew where one was deleted, its inode number reused,
    // is told apart by it even where a ctime could coincide.
    timespec btime{};
    bool has_btime = false;
};
using WalkedDirs = std::unordered_map<std::string, WalkedDir>;
// A directory a walk judged, as it was then: a node of the walk's record or
// of the kept walk it took the directory from.
using VisitedDir = const WalkedDirs::value_type*;

struct WorktreeScan {
    std::vector<MaskedName> hidden;
    std::vector<MaskedName> read_only;
    uint64_t entries = 0;     // directory entries examined
    uint64_t unlistable = 0;  // someone else's directories the walker may not list
    uint64_t vanished = 0;    // directories (or matching names) gone when reached
    uint64_t unstated = 0;    // directories listed whose statx failed: not in `visited`
    // Where the walk stopped short: "", "max_entries", "max_depth",
    // "path_length", "memory" (the directories waiting to be listed),
    // "unlistable" or "unexaminable" (a directory of the walker's own it may
    // not list, a matching name it may not stat: `incomplete` says which).
    std::string truncated_by;
    std::string incomplete;
    bool incomplete_call = false;  // `incomplete` is a call that failed, with its errno
    // Directories read whole (not taken from `before`) whose ctime was
    // settled: what a kept walk (runtime/plan/walk_cache.h) would gain.
    uint64_t listed_settled = 0;
    uint64_t reused = 0;  // directories taken from `before`, not read
    // Hidden or read-only files with more names than one: the others are
    // not covered (how many, and the first of them as /repo/... paths).
    uint64_t linked_count = 0;
    std::vector<std::string> linked;  // the first kReportedMaskNames of them
    // With a record: every directory the walk judged, as it saw it (nodes
    // of the record, or of `before` where not recorded again). Not whole
    // when a directory was judged without a record of it (its fstat
    // failed, or it was gone or shut when it was reached).
    std::vector<VisitedDir> visited;
    bool visited_whole = true;
    // The wall clock `settled` was judged by, and its distance from the
    // boot (CLOCK_REALTIME - CLOCK_BOOTTIME), from one reading before the
    // walk: what a kept walk's clock is measured from (walk_cache.h).
    timespec walk_start{};
    int64_t clock_offset_ns = 0;
    // The coarse wall clock (the one ctimes are stamped from) read before
    // anything was stated: a directory whose ctime is older than it cannot
    // change without its ctime changing (scanWorktreeHeldStill).
    timespec walk_start_coarse{};
};

// Walks the worktree held at `worktree_fd` (any fd for the directory), the
// top-level .git included: read-only as a whole where it was there before
// the run, it may still hold a hidden name (a sandbox that made it when it
// was absent could move the worktree's secrets into it). With `record`,
// notes each directory listed.
// With `before` (an earlier walk's record), a directory that is still the
// same inode with the same ctime and birth time, settled then, is not listed
// again: the names seen then are judged again as if read (the matching ones
// stated anew), so the result is the one a whole walk gives. `kept` is
// looked in for a directory `before` does not hold; without
// `record_unchanged` only the directories read are recorded (the others are
// in `before` or `kept`). One recorded unchanged is settled only if its
// ctime is settled by this walk's clock: seen unchanged now, it is judged
// now, never carried with an earlier walk's word under this walk's clock.
Result<WorktreeScan> scanWorktree(int worktree_fd, const WorktreeMaskRules& rules,
                                  const WalkedDirs* before = nullptr, WalkedDirs* record = nullptr,
                                  const WalkedDirs* kept = nullptr, bool record_unchanged = true);

// How many times the walk is made before a worktree that keeps changing
// under it is refused.
inline constexpr int kWalkAttempts = 3;

// scanWorktree, made again until one walk saw the worktree as it stood at
// one instant. A walk lists one depth after another, so a process writing
// the worktree meanwhile (another sandbox on it, say) could move a
// directory holding a hidden name from where the walk had yet to look into
// where it had looked, and the walk would see it nowhere (a red team did,
// 2026-12-07). After the walk every directory it judged is stated again:
// still the same inode with the ctime and birth time it had, none (and no
// matching name) gone on the way, and that ctime one a later change would
// have replaced, by its device's rule (SteadyRule): older than the coarse
// clock read before the walk, in whole seconds where the directory has no
// birth time (an ext4 of 128-byte inodes stamps seconds), or any where the
// kernel and filesystem stamp a read ctime's next change with a later time
// and the directory has a birth time (worktreeCtimeIsExactAfterQuery). Then
// each held its entries from its judgement to the check, so at the walk's
// end the tree was the one judged, and every hidden name in it was found; a
// name moved after that is not where its cover is made by path, and the
// run fails rather than going on. Otherwise the walk is made again, once
// the clock has passed the ctimes it had to judge, at most kWalkAttempts
// times, and then refused as a worktree that does not hold still. On a
// device whose ctimes are not the local kernel's (worktreeCtimeIsLocal: NFS,
// FUSE, overlayfs, 9p), the worktree's or one mounted inside it, nothing
// can be judged this way and its directories are taken as the walk saw them
// (docs/threat-model.md).
Result<WorktreeScan> scanWorktreeHeldStill(int worktree_fd, const WorktreeMaskRules& rules,
                                           const WalkedDirs* before, WalkedDirs* record,
                                           bool record_unchanged = true);

// What the result record says of the masks.
struct WorktreeMaskReport {
    // The rules the walk before the run judged by (the policy's, with the
    // plan's additions: addWorktreeMasks), which the walk after it uses too.
    WorktreeMaskRules rules;
    uint64_t hidden_count = 0;
    uint64_t read_only_count = 0;
    std::vector<std::string> hidden;     // the first kReportedMaskNames, as /repo/... paths
    std::vector<std::string> read_only;  // likewise
    uint64_t created_count = 0;          // hidden or read-only names that appeared during the run
    std::vector<std::string> created;
    // Why the walk after the run stopped short ("" when it did not): the
    // names it did not judge are not in `created` (a sandbox's link that
    // the next run refuses stops it too).
    std::string created_unchecked;
    uint64_t linked_count = 0;        // hidden or read-only files with other names
    std::vector<std::string> linked;  // (hard links: not covered with them)
    uint64_t entries = 0;
    uint64_t unlistable = 0;
    std::string truncated_by;
    // Every name covered, sorted by path, with the inode the walk saw: what
    // the walk after the run compares with (one there now with another
    // inode was made anew where it was).
    std::vector<MaskedName> covered;
    // The directories the walk before the run read (shared, not copied,
    // with the record), so that the walk after it lists only those changed.
    std::shared_ptr<const WalkedDirs> walked;
    // The walk kept from an earlier run that the walk before this one used
    // (walk_cache.h): `walked` holds only what that walk read.
    std::shared_ptr<const WalkedDirs> kept;
    // Settled directories the walk before the run read whole: the kept walk
    // is written again after the run when it or the walk after adds one.
    uint64_t listed_settled = 0;
    uint64_t reused = 0;  // directories the walk before the run took from a kept walk
    // The clock the walk before the run judged by (WorktreeScan::walk_start),
    // and the larger of its offset from the boot and the one read before the
    // kept walk was loaded: a step back from either is a step back.
    timespec walk_start{};
    int64_t clock_offset_ns = 0;
    // Every directory the walk before the run judged (nodes of `walked` or
    // `kept`), or empty when that walk could not say: if each is still the
    // same inode with the same settled ctime after the run, no name was
    // added anywhere the walk reaches, and the walk after it is not needed.
    std::vector<VisitedDir> visited;
    // The top-level .git was there (not a symlink) before the run, so the
    // sandbox had it read-only as a whole (child_plan_builder.cpp): its
    // read-only names are not bound one by one, nor reported as created.
    // Absent or a link, the sandbox could make its own .git there (hooks,
    // config, fsmonitor: run by the host's git), which the walk after the
    // run reports.
    bool top_git_protected = false;
};

// Walks the worktree, adds a cover for each hidden name and a read-only
// bind for each read-only one to the plan (beneath /repo, after the .git
// protection; `top_git_read_only`: the plan binds the top-level .git
// read-only as a whole, and the walk judges the links in it as in any
// read-only directory), each directory above a read-only name held in
// place (and above hidden ones where pinsAbove says), and fills `report`.
// Nothing to do without patterns.
Status addWorktreeMasks(const Policy& policy, int worktree_fd, bool top_git_read_only,
                        ChildPlan& plan, std::optional<WorktreeMaskReport>& report);

// After the run: walks again and notes in `report` each matching name that
// was not covered before (the sandbox, or someone beside it, created it).
void noteCreatedMaskedNames(const Policy& policy, WorktreeMaskReport& report);

}  // namespace stockade
