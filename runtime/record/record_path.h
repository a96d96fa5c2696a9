// Where stockade writes a record once the sandbox is over (`run --result`,
// `oracle --verdict`). The place is fixed and judged before anything of the
// sandbox runs, because the sandbox must not be able to plant a record of its
// own there, make stockade's write fail so that its own stays, or swap a
// directory on the way for a symlink that sends the write elsewhere on the
// host (all three shown by reviews of earlier versions).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "runtime/policy/writable_trees.h"

namespace stockade {

struct RecordTarget {
    // /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N: the fd stockade
    // already holds, written as a shell writes a redirection to it.
    std::optional<int> held_fd;
    std::string dir;   // otherwise: the directory, canonical (no symlinks)
    std::string name;  // and the file's name in it
};

// `writable`: the host directories the sandbox can write (the worktree, each
// writable --mount). Refused, with `flag` and `path` named: a directory the
// sandbox can write into, whether below one of them, on a mount below one of
// them, or a bind mount of a part of one (judged by filesystem and path
// within it, from /proc/self/mountinfo); a path that is a symlink or not a
// regular file; a directory that does not exist.
Result<RecordTarget> resolveRecordTarget(const std::string& flag, const std::string& path,
                                         const std::vector<std::string>& writable);

// Through a randomly named temporary file in the directory and rename(2), so
// a reader sees the old file or the whole new one. On failure nothing is left
// at the path, so a harness finds no record rather than an old one.
Status writeRecord(const RecordTarget& target, const std::string& content);

}  // namespace stockade
