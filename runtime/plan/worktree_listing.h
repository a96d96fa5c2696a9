// The worktree walk's expensive half (runtime/plan/worktree_masks.h): each
// directory of one depth opened beneath the worktree, stated and read, and
// its names matched, on as many threads as the process may run on. What a
// listing finds is judged by the caller alone, in walk order, so the walk's
// result (its names, bounds and refusals) is the one a single thread gives.
//
// The kernel's readdir and the syscalls around it are nearly all of the
// walk's cost (docs/performance.md); they are independent per directory.
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "runtime/plan/worktree_masks.h"
#include "runtime/policy/mask_patterns.h"

namespace stockade {

// A name in a listed directory that the walk must look at: a directory to
// walk, a name that matches, or one of a type readdir did not say.
struct ListedEntry {
    std::string name;
    bool hidden = false;
    bool kept = false;
    bool is_dir = false;
    // Hidden, kept, a link in a read-only directory, or of unknown type:
    // `st` (or `stat_errno`) says.
    bool examined = false;
    // A link in a read-only directory (DirListing::under_kept), examined:
    // a write through it goes wherever it leads, so the walk keeps its
    // target in the worktree read-only too.
    bool link_in_kept = false;
    // A link (examined) where a hide or read-only pattern names a directory
    // (MaskPatternSet::onTheWay): the pattern, which the run is refused
    // naming. A later write of the name through it would land elsewhere.
    const std::string* on_way = nullptr;
    int stat_errno = 0;
    struct stat st {};
};

struct DirListing {
    enum class Outcome {
        NotListed,  // no thread got to it (one ran out of memory): the walk is cut
        Listed,     // read whole: `entries`, `interesting`
        Unchanged,  // the same inode and ctime as `before` kept, settled: not read,
                    // `entries` and `interesting` are the ones kept (matches stated anew)
        Gone,       // not there as a directory, or someone else's the walker may not list
        Incomplete  // a directory of the walker's own it may not list, or readdir failed,
                    // or a case-folding directory
    };
    // In: the directory, below the worktree, and the depth of its entries.
    std::string relative;
    uint32_t depth = 1;
    // In a read-only directory (at any depth below one): its links are
    // examined (ListedEntry::link_in_kept), and kept in the walk's record.
    bool under_kept = false;

    Outcome outcome = Outcome::NotListed;
    bool vanished = false;      // Gone: no directory there any more (not someone else's, shut)
    std::string problem;        // Incomplete: what the refusal says
    int problem_errno = 0;      // ... when a call failed: the problem is that call
    bool case_folding = false;  // ... a case-folding directory (chattr +F)
    bool have_st = false;
    struct stat st {};  // the directory's, taken before it was read
    timespec btime{};   // ... and its birth time, where the filesystem keeps one
    bool has_btime = false;
    uint64_t entries = 0;
    // The walk's entry bound was passed (by all listings so far) while this
    // one was read: it stopped there.
    bool over_bound = false;
    std::vector<ListedEntry> interesting;  // in readdir order
    VisitedDir unchanged = nullptr;        // Unchanged: what the earlier walk kept
};

struct ListingRules {
    const MaskPatternSet& hide;
    const MaskPatternSet& read_only;
    const MaskPatternSet& show;
    const MaskPatternSet& writable;
    const WalkedDirs* before;  // an earlier walk (this run's, or a kept one), or null
    const WalkedDirs* kept;    // looked in for what `before` does not hold, or null
    uint64_t max_entries;
};

// `relative` opened beneath the worktree held at `root_fd` (RESOLVE_BENEATH,
// no magic links, plus `resolve`), close-on-exec.
UniqueFd openBeneathWorktree(int root_fd, const std::string& relative, int flags, uint64_t resolve);
// A directory of the worktree, opened to be read, through no link at all.
UniqueFd openDirBeneath(int root_fd, const std::string& relative);

// statx(2) of `path` beneath `at_fd` with `flags` (AT_SYMLINK_NOFOLLOW, or
// AT_EMPTY_PATH for the fd itself): `st` as fstatat fills it, and the birth
// time where the filesystem gives one (`has_btime` false elsewhere). -1 and
// errno as fstatat on failure.
int statWithBirth(int at_fd, const char* path, int flags, struct stat& st, timespec& btime,
                  bool& has_btime);

// Lists every directory in `dirs` beneath `root_fd`; `seen` counts the
// entries of every listing so far, across calls, for the entry bound.
void listDirectories(int root_fd, const ListingRules& rules, std::vector<DirListing>& dirs,
                     std::atomic<uint64_t>& seen);

// Whether every directory of `dirs` is, beneath `root_fd`, still the same
// inode with the same ctime and birth time, was settled when it was
// recorded, and is on the device `dev` (the worktree's, whose ctimes the
// caller judged local): one statx each, on several threads, stopping at the
// first that is not.
// With `steady` instead, "settled" means a ctime that any later change of
// the directory's entries would have replaced, judged by its device's rule
// (worktree_held_still.cpp, scanWorktreeHeldStill), and any device will do.
// `changed`, when given and the answer is false, gets the path of a
// directory that was not (one of them, when several threads found one).
struct DeviceRule {
    dev_t dev = 0;
    // Its ctimes are the local kernel's (worktreeCtimeIsLocal): otherwise
    // nothing is judged by them, and its directories are not checked.
    bool local = false;
    // Once read, a ctime is replaced by the next change however soon
    // (worktreeCtimeIsExactAfterQuery), for a directory with a birth time.
    bool exact = false;
};
struct SteadyRule {
    // The coarse wall clock read before the walk: a ctime older than it (in
    // whole seconds, for a directory without a birth time, whose filesystem
    // may keep no more) cannot be given again by a later change.
    timespec coarse_start{};
    std::vector<DeviceRule> devices;
    // Whether `was`, unchanged when restated, held its entries since.
    bool trusts(const WalkedDir& was) const;
};
bool allUnchanged(int root_fd, dev_t dev, const std::vector<VisitedDir>& dirs,
                  const SteadyRule* steady = nullptr, std::string* changed = nullptr);

}  // namespace stockade
