// What the worktree walk's files share (worktree_walk.cpp, worktree_held_still.cpp,
// worktree_masks.cpp): how a ctime is judged against the walk's clock, and
// the test hooks that pause between the walk's steps.
#pragma once

#include <cstdint>
#include <ctime>

namespace stockade {

// CLOCK_REALTIME - CLOCK_BOOTTIME is read with two calls: a step back below
// this is their jitter, not the clock's (as walk_cache.cpp judges it).
constexpr int64_t kClockJitterNs = 5'000'000;

// How far before the walk a directory's ctime must be for an unchanged
// ctime to mean unchanged entries. A filesystem stamps a change with its
// clock's coarse time (a jiffy; a second on some), so a change in the same
// tick as the walk's fstat could keep the ctime the walk saw; a ctime older
// than the walk by more than the coarsest granularity (and a leap second)
// cannot be given again by a later change. Where the kernel keeps multigrain
// timestamps (Linux 6.13+: ext4, XFS, Btrfs, tmpfs) the fstat itself makes
// the next change fine-grained; this rule does not rely on it.
constexpr time_t kSettledSeconds = 2;

inline bool settledBefore(const timespec& ctime, const timespec& walk_start) {
    return ctime.tv_sec + kSettledSeconds < walk_start.tv_sec;
}

// Test hooks: with `variable`=<ms> in stockade's own environment, sleeps that
// long. STOCKADE_TEST_PAUSE_BEFORE_WALK_CHECK: after each walk, before the
// check that the tree held still, so a test can move things as a writer
// racing the walk would; STOCKADE_TEST_PAUSE_AFTER_WALK: after that check,
// before the plan's mounts, so a test can swap what the walk judged before
// the child covers it. They only delay (like STOCKADE_TEST_PAUSE_AFTER_OPEN,
// base/host_path.h).
void pauseForTests(const char* variable);

}  // namespace stockade
