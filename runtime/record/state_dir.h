// stockade's state directory, one per user: $XDG_RUNTIME_DIR/stockade, else
// /run/user/UID/stockade when that runtime directory is the user's, else
// /tmp/stockade-UID (/run/stockade for root), mode 0700, so one user's state
// is invisible to another. The dev servers' records live there
// (serve/serve_state.h), and so do the oracle's report directories.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"

namespace stockade {

// The user's directory, created 0700 when missing; refused when it is not a
// directory owned by the caller with no access for others.
Result<std::string> openUserStateDir();

// This user's other state directories that exist and are private (a shell
// without XDG_RUNTIME_DIR under su or cron sees another first): the other
// candidates, and every directory registered by registerUserStateDir.
std::vector<std::string> otherUserStateDirs(const std::string& primary);

// Records `path` (this user's state directory, as openUserStateDir gave it)
// in /tmp/stockade-UID/elsewhere, which every shell of the user finds
// whatever its $XDG_RUNTIME_DIR: a server started from a shell with
// XDG_RUNTIME_DIR=/a is seen and stopped from one with /b or none.
Status registerUserStateDir(const std::string& path);

}  // namespace stockade
