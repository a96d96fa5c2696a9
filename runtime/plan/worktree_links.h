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
#include <vector>

#include "base/error.h"
#include "runtime/policy/policy.h"

namespace stockade {

// Where a link leads in the worktree, for one reader.
struct LinkLead {
    enum class Kind {
        Inside,   // a name below the worktree's top, reached through no other link
        Missing,  // a name below the top that does not exist (a write would make it)
    };
    Kind kind = Kind::Inside;
    std::string relative;  // Inside, Missing: below the worktree's top ("" is the top)
    struct stat st {};     // Inside: the name itself, not followed
};

// Where the link at `relative` below the worktree held at `root_fd` (whose
// path, as the kernel names the held directory, is `host_path`, or "" when
// it has none) leads in the worktree, for each reader: none when it leads
// out of it. The link is opened beneath the worktree through no link, and
// its text judged:
// - as a path below the link's directory: resolved beneath the worktree
//   through no link and no magic link, `..` taken as the kernel takes it;
// - where it leaves the worktree, as the sandbox reads it (the worktree at
//   /repo) and as the host does (the worktree at `host_path`), lexically
//   from the root: `/repo/...`, `//repo/...`, `../repo/...` above the
//   sandbox's root, and the host path name the worktree, each resolved
//   beneath it as above. Lexical is the kernel's reading only where no
//   `..` follows a name; such a text is refused.
// Refused too (an error: the run does not go on): a name reached through
// another link, a path through /proc or /dev/fd (where it lands depends on
// who reads it), and a place of `mounted` (for a hidden link, any; for a
// read-only one, a writable one), which the sandbox reaches too. A road
// into the worktree through something else on the host (a link or a bind
// mount of the operator's) is not seen: the walk resolves no host path.
Result<std::vector<LinkLead>> linkLeadsOf(int root_fd, const std::string& host_path,
                                          const std::string& relative,
                                          const std::vector<MountedPlace>& mounted, bool hide);

// The path the kernel gives the held directory (its d_path), "" when it has
// none a link could name.
std::string heldDirectoryPath(int fd);

}  // namespace stockade
