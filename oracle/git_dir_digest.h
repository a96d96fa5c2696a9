// One SHA-256 over everything in a repository's git dir (and common dir), to
// tell whether a run changed .git. .git is mounted read-only in the sandbox,
// so any difference is an alarm, whatever the file: the index, a ref, an
// object, a hook. Nothing is excluded and nothing is skipped; a git dir past
// the bounds is reported as too large to hash, never hashed in part.
#pragma once

#include <cstdint>
#include <string>

#include "base/error.h"
#include "oracle/git_head.h"

namespace stockade::oracle {

struct GitDirDigestLimits {
    uint64_t max_total_bytes = 512ull << 20;  // content read, over all files
    uint64_t max_entries = 200000;
    uint64_t max_depth = 32;  // loose refs nest; nothing in a git dir nests deeper
};

struct GitDirDigest {
    enum class Status { Complete, TooLarge };
    Status status = Status::Complete;
    // Over the sorted listing "path NUL type NUL mode NUL (SHA-256 of the
    // content | link text) LF" of every entry; empty when TooLarge.
    std::string sha256;
    uint64_t entries = 0;
    uint64_t bytes = 0;
    std::string too_large;  // which bound was passed, when TooLarge
};

// Hashes location.common_dir, and location.git_dir too when it lies outside
// the common dir (a gitdir file pointing elsewhere).
Result<GitDirDigest> digestGitDir(const GitLocation& location,
                                  const GitDirDigestLimits& limits = {});

}  // namespace stockade::oracle
