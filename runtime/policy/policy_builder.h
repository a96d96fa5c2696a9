// Profile + RunOptions -> Policy. Every check of user input that does not
// need the sandbox happens here, so bad input is refused before anything is
// created (exit 125, nothing left behind).
#pragma once

#include "base/error.h"
#include "runtime/policy/policy.h"
#include "runtime/policy/profile.h"
#include "runtime/policy/run_options.h"
#include "runtime/policy/sandbox_path.h"

namespace stockade {

// Errors from here are the user's to fix; their text names the option.
Result<Policy> buildPolicy(const Profile& profile, const RunOptions& options);

// Parses one --mount value ("SRC:DST[:rw]") and checks DST is not a hole
// over /, /proc, /dev, /sys, or inside /repo/.git. SRC is opened once and
// held (host_path.h): a symlink in it is refused unless `follow_symlinks`.
Result<ExtraMount> parseMountSpec(const std::string& spec, bool follow_symlinks = false);

// The host directories the sandbox can write: the worktree and each writable
// --mount (record_path.h keeps a --result or --verdict out of them).
std::vector<std::string> writableHostDirs(const FilesystemView& fs);

}  // namespace stockade
