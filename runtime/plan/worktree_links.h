// Where a hidden or read-only name that is a symlink leads (issue 21): read
// from the link's text on the host, never by following a link the walk has
// not judged, and taken as every reader would take it. A writer follows a
// link, and so does a host reader: an agent reading AGENTS.md, the host's
// git running a hook linked from .git/hooks, the operator's tool writing a
// secret to a .env an earlier sandbox made a link. What the link leads to
// in the worktree is covered with it (worktree_walk.cpp).
#pragma once

#include <sys/stat.h>

#include <string>

#include "base/error.h"

namespace stockade {

struct LinkLead {
    enum class Kind {
        Outside,  // out of the worktree for every reader: the sandbox cannot reach it
        Inside,   // a name below the worktree's top, reached through no other link
        Missing,  // a name below the top that does not exist (a write would make it)
    };
    Kind kind = Kind::Outside;
    std::string relative;  // Inside, Missing: below the worktree's top ("" is the top)
    struct stat st {};     // Inside: the name itself, not followed
};

// The link at `relative` below the worktree held at `root_fd` (whose path,
// as the kernel names the held directory, is `host_path`, or "" when it
// has none). Its text is judged three ways:
// - as a path below the link's directory: resolved beneath the worktree
//   through no link and no magic link, `..` taken as the kernel takes it;
// - as the sandbox reads it (the worktree at /repo) and as the host does
//   (the worktree at `host_path`), lexically from the root: `/repo/...`,
//   `//repo/...`, `../repo/...` above the sandbox's root, and the host path
//   name the worktree, and are resolved beneath it as above;
// - anything else is resolved on the host (no magic link), and where it
//   lands in the worktree by another road (a link to it, a bind mount of
//   it) it is refused: such a road is not judged.
// An error (the run is refused) names why: a name reached through another
// link, a path through /proc or /dev/fd (where it leads depends on who
// reads it), one into the worktree by another road, the top itself.
Result<LinkLead> linkLeadOf(int root_fd, const std::string& host_path, const std::string& relative);

// The path the kernel gives the held directory (its d_path), "" when it has
// none a link could name.
std::string heldDirectoryPath(int fd);

}  // namespace stockade
