// An exclusive flock on a lock file, for "this is still alive" records: the
// holder keeps the fd for its whole life, and whoever finds the lock free may
// treat what it guards as stale.
#pragma once

#include <string>

#include "base/error.h"
#include "base/unique_fd.h"

namespace stockade {

// Opens (creating when asked, never through a symlink) and flocks `path`
// without waiting; EWOULDBLOCK when another holds it. Lock files may be
// unlinked by whoever held them last, and a lock on an unlinked inode proves
// nothing, so the path must still name the inode locked (else it retries).
Result<UniqueFd> lockFileExclusive(const std::string& path, bool create);

// The same for `name` beneath the directory `dir_fd` (a state directory held
// open: nothing is reached by a path that could be swapped). `shown` names
// it in messages.
Result<UniqueFd> lockFileExclusiveAt(int dir_fd, const std::string& name, const std::string& shown,
                                     bool create);

}  // namespace stockade
