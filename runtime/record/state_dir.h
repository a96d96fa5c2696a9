// stockade's state directory, one per user: $XDG_RUNTIME_DIR/stockade, else
// /run/user/UID/stockade when that runtime directory is the user's, else
// /tmp/stockade-UID (/run/stockade for root), mode 0700, so one user's state
// is invisible to another. The dev servers' records live there
// (serve/serve_state.h), and so do the oracle's report directories.
//
// A directory in /tmp (or a runtime directory a sandbox could reach) may be
// made, replaced or swapped for a symlink by someone else between a check
// and a use (issue 14). So it is opened once, every component of its path
// without following a link, judged on the fd (owner, mode, type), and every
// later operation is relative to that fd: the path is kept for messages and
// for what must be named by path (the oracle's mount sources, whose identity
// is checked against the fd: oracle/oracle_run.cpp).
#pragma once

#include <sys/stat.h>

#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/remove_tree.h"
#include "base/unique_fd.h"

namespace stockade {

struct HeldStateDir {
    std::string path;              // for messages, and mount sources checked by identity
    std::shared_ptr<UniqueFd> fd;  // O_RDONLY | O_DIRECTORY, close-on-exec
    struct stat st {};             // fstat of fd when it was judged

    int get() const { return fd ? fd->get() : -1; }
    std::string at(const std::string& name) const { return path + "/" + name; }
};

// The user's directory, created 0700 when missing; refused when it is not a
// directory owned by the caller with no access for others, or when any
// component of its path is a symlink.
Result<HeldStateDir> openUserStateDir();

// This user's other state directories that exist and are private (a shell
// without XDG_RUNTIME_DIR under su or cron sees another first): the other
// candidates, and every directory registered by registerUserStateDir.
std::vector<HeldStateDir> otherUserStateDirs(const HeldStateDir& primary);

// Records `dir` (this user's state directory, as openUserStateDir gave it)
// in /tmp/stockade-UID/elsewhere, which every shell of the user finds
// whatever its $XDG_RUNTIME_DIR: a server started from a shell with
// XDG_RUNTIME_DIR=/a is seen and stopped from one with /b or none.
Status registerUserStateDir(const HeldStateDir& dir);

// Writes `name` beneath `dir_fd` whole or not at all: a temporary name made
// O_EXCL, then renameat. `shown` names it in messages.
Status writeFileAtomicallyAt(int dir_fd, const std::string& name, const std::string& shown,
                             const std::string& content, mode_t mode);

// Refused when a sandbox given the host trees `writable` (writableHostDirs)
// could write this user's state directories, or make or replace one in the
// directory that holds it (`--worktree /tmp` rootless, where the state is
// /tmp/stockade-UID; `--worktree /run` as root): what lives there (the
// dev servers' records, the oracle's preload object and report directories,
// root's id leases) would then be the sandbox's to forge for a later run.
Status refuseWritableStateDirs(const std::vector<std::string>& writable);

// Test hook: with STOCKADE_TEST_PAUSE_AFTER_STATE_DIR=<ms> in stockade's own
// environment, sleeps that long once the state directory is held and judged,
// so a test can swap it between the check and the use. It only delays.
void pauseAfterStateDirForTests();

}  // namespace stockade
