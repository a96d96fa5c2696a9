// Profile + RunOptions -> Policy. Every check of user input that does not
// need the sandbox happens here, so bad input is refused before anything is
// created (exit 125, nothing left behind).
#pragma once

#include "base/error.h"
#include "runtime/policy.h"
#include "runtime/profile.h"
#include "runtime/run_options.h"
#include "runtime/sandbox_path.h"

namespace stockade {

// Errors from here are the user's to fix; their text names the option.
Result<Policy> buildPolicy(const Profile& profile, const RunOptions& options);

// Parses one --mount value ("SRC:DST[:rw]") and checks DST is not a hole
// over /, /proc, /dev, /sys, or inside /repo/.git.
Result<ExtraMount> parseMountSpec(const std::string& spec);

// A file stockade writes once the sandbox is over (--result, the oracle's
// --verdict) must not sit where the sandbox can write: there it could plant
// a record of its own, or make stockade's write fail and leave its own in
// place, or swap the directory for a symlink elsewhere on the host. Refuses
// `path` (naming `flag`) when its directory is the worktree or a writable
// --mount of `fs`, or lies below one, and when that directory does not
// exist. Compared by device and inode from the directory up to /, so a
// symlink or a bind mount on the way cannot hide it. A symlink at `path` is
// judged by where it leads, and refused when another user (not root) owns
// it (writeRecord would not follow it).
Status refuseWhereSandboxWrites(const std::string& flag, const std::string& path,
                                const FilesystemView& fs);

}  // namespace stockade
