// The walk made again until it saw the worktree held still
// (worktree_masks.h, scanWorktreeHeldStill).
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <string>

#include "base/text_safety.h"
#include "base/unique_fd.h"
#include "runtime/plan/walk_cache.h"
#include "runtime/plan/worktree_listing.h"
#include "runtime/plan/worktree_masks.h"
#include "runtime/plan/worktree_walk_clock.h"

namespace stockade {

void pauseForTests(const char* variable) {
    const char* value = getenv(variable);
    if (!value || !*value) return;
    const long ms = strtol(value, nullptr, 10);
    if (ms <= 0 || ms > 60000) return;
    timespec ts{ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

namespace {

// The rule each device of the walk's directories is judged by: the
// worktree's own, and any mounted inside it (listOne walks into mounts), each
// looked at once through a directory of it opened beneath the worktree.
SteadyRule steadyRuleFor(int worktree_fd, const WorktreeScan& scan) {
    SteadyRule rule;
    rule.coarse_start = scan.walk_start_coarse;
    for (VisitedDir d : scan.visited) {
        const dev_t dev = d->second.dev;
        if (std::any_of(rule.devices.begin(), rule.devices.end(),
                        [&](const DeviceRule& r) { return r.dev == dev; }))
            continue;
        const UniqueFd fd = openBeneathWorktree(
            worktree_fd, d->first, O_PATH | O_DIRECTORY | O_NOFOLLOW, RESOLVE_NO_SYMLINKS);
        // Not opened (gone, swapped): a device judged by the clock, which
        // the restat of that very directory then fails.
        const bool local = !fd || worktreeCtimeIsLocal(fd.get());
        rule.devices.push_back(
            {dev, local, fd && local && worktreeCtimeIsExactAfterQuery(fd.get())});
    }
    return rule;
}

// Waits (ppoll, not a sleep a test's hook could be taken for) until the
// coarse clock has passed the ctime of every directory `rule` judged by it,
// and `seen` (the coarse clock when the check failed: a change it met has no
// later ctime), so that the next walk can trust them if they hold still; at
// most 2 s. A ctime further ahead than that (a clock stepped back) is not
// waited for: the walks go round and the run is refused.
void waitPastJudgedCtimes(const WorktreeScan& scan, const SteadyRule& rule, timespec seen) {
    auto later = [](const timespec& a, const timespec& b) {
        return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec > b.tv_nsec);
    };
    timespec latest = seen;
    bool seconds = false;
    for (VisitedDir d : scan.visited) {
        const WalkedDir& was = d->second;
        const auto dev = std::find_if(rule.devices.begin(), rule.devices.end(),
                                      [&](const DeviceRule& r) { return r.dev == was.dev; });
        if (dev == rule.devices.end() || !dev->local || (dev->exact && was.has_btime)) continue;
        if (!was.has_btime) seconds = true;
        if (later(was.ctime, latest)) latest = was.ctime;
    }
    // Stamped in whole seconds, the next walk must begin in a later second.
    if (seconds) latest.tv_nsec = 999'999'999;
    timespec tick{0, 1'000'000};
    clock_getres(CLOCK_REALTIME_COARSE, &tick);
    timespec deadline{};
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += 2;
    while (true) {
        timespec now{}, mono{};
        clock_gettime(CLOCK_REALTIME_COARSE, &now);
        clock_gettime(CLOCK_MONOTONIC, &mono);
        if (later(now, latest) || later(mono, deadline)) return;
        if (latest.tv_sec > now.tv_sec + 2) return;  // not to be waited for
        timespec wait = tick;
        ppoll(nullptr, 0, &wait, nullptr);
    }
}

}  // namespace

Result<WorktreeScan> scanWorktreeHeldStill(int worktree_fd, const WorktreeMaskRules& rules,
                                           const WalkedDirs* before, WalkedDirs* record,
                                           bool record_unchanged) {
    struct stat top;
    if (fstat(worktree_fd, &top) < 0) return Error::fromErrno("fstat the worktree");
    std::string changed;
    for (int attempt = 1;; ++attempt) {
        // The record is this walk's alone: what an earlier one judged of a
        // tree that moved is not carried.
        if (record) record->clear();
        auto scan = scanWorktree(worktree_fd, rules, before, record, nullptr, record_unchanged);
        if (!scan) return scan;
        // A test's writer moves things here, as one racing the walk would.
        pauseForTests("STOCKADE_TEST_PAUSE_BEFORE_WALK_CHECK");
        // A walk cut short is refused anyway; without a record nothing was
        // noted to check (every caller gives one).
        if (!scan->truncated_by.empty() || !record) return scan;
        const SteadyRule steady = steadyRuleFor(worktree_fd, *scan);
        const bool judged = std::any_of(steady.devices.begin(), steady.devices.end(),
                                        [](const DeviceRule& r) { return r.local; });
        // A directory or matching name gone while it was walked is a tree
        // that moved, whatever its ctimes are worth. Where no directory's
        // ctime is the local kernel's (NFS, FUSE, overlayfs...) nothing else
        // can be judged: the walk stands as it is.
        std::string where;
        if (scan->vanished > 0) {
            where = "a directory or a matching name vanished while it was walked";
        } else if (!judged) {
            return scan;
        } else if (scan->unstated > 0) {
            where = "a directory could not be stated";
        } else {
            changed.clear();
            if (!allUnchanged(worktree_fd, top.st_dev, scan->visited, &steady, &changed))
                where = "the last: /repo/" + escapeForTerminal(changed);
            // Read after the restat: a clock stepped back during the walk or
            // the check could give a new ctime an old one's value.
            else if (walkClockOffsetNs() < scan->clock_offset_ns - kClockJitterNs)
                where = "the wall clock stepped back";
        }
        if (where.empty()) return scan;
        timespec seen{};
        clock_gettime(CLOCK_REALTIME_COARSE, &seen);
        if (attempt == kWalkAttempts) {
            return Error::message(
                "the worktree kept changing while it was walked for the names to hide or keep "
                "read-only (" +
                std::to_string(kWalkAttempts) + " walks; " + where +
                "): another process is writing it; run again when it holds still");
        }
        // A directory changed in the tick (or, stamped in whole seconds,
        // the second) the walk began in has a ctime that clock has not yet
        // passed: the next walk, once it has, can judge it.
        waitPastJudgedCtimes(*scan, steady, seen);
    }
}

}  // namespace stockade
