// Host paths the operator named (--worktree, --mount sources, --rootfs, the
// oracle's --held), opened once and used from then on through the fd. A
// sandbox can write into the worktree and into writable mounts, so a path
// given for a later run may have been turned into a symlink, or be swapped
// for one while stockade is between its check and its mount (issue 14); the
// fd is what was judged, and it is what gets mounted.
#pragma once

#include <sys/stat.h>

#include <memory>
#include <string>

#include "base/error.h"
#include "base/unique_fd.h"

namespace stockade {

struct HeldPath {
    std::string path;              // canonical, as the kernel names the opened object
    std::shared_ptr<UniqueFd> fd;  // O_PATH, close-on-exec; shared so a Policy stays copyable
    struct stat st {};             // fstat of fd when it was opened

    explicit operator bool() const { return fd && fd->get() >= 0; }
    int get() const { return fd ? fd->get() : -1; }
    // Whether `other` is the very same file (device and inode).
    bool sameFileAs(const struct stat& other) const {
        return st.st_dev == other.st_dev && st.st_ino == other.st_ino;
    }
};

// Opens `path` (relative to the cwd, or absolute) O_PATH. Without
// `follow_symlinks`, every component is opened with O_NOFOLLOW from "/", and
// a symlink anywhere is refused with an Error naming `option`, the path and
// the symlinked component. With it, the path is resolved by the kernel once,
// and the result held the same way.
Result<HeldPath> holdHostPath(const std::string& option, const std::string& path,
                              bool follow_symlinks);

// Test hook: with STOCKADE_TEST_PAUSE_AFTER_OPEN=<ms> in stockade's own
// environment, sleeps that long once the host paths are held, so a test can
// swap a path between the check and the mount. It only delays.
void pauseAfterOpenForTests();

}  // namespace stockade
