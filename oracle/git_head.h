// Where a worktree's repository is and which commit HEAD names, found by
// reading git's files, never by running git (git would run the worktree's
// hooks, config and fsmonitor, all written by the party under test). Covers
// `.git` as a directory or as a `gitdir:` file (linked worktrees,
// submodules), `commondir`, symbolic refs (bounded, as git bounds them),
// loose refs and `packed-refs`. Not covered: the reftable ref backend (an
// Error says so).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"

namespace stockade::oracle {

struct GitLocation {
    // As found, not canonicalised: the worktree's path joined with what the
    // .git file and commondir say (relative to the outer worktree, for a
    // nested repository). The two are the same directory unless this is a
    // linked worktree.
    std::string git_dir;       // HEAD, index and per-worktree refs live here
    std::string common_dir;    // objects, packed-refs and shared refs live here
    bool gitdir_file = false;  // `.git` is a file naming the git dir
    // The two directories as opened when they were found (and, for a `.git`
    // file, judged: runtime/plan/git_link.h); readers use these, not the paths.
    std::shared_ptr<UniqueFd> git_dir_fd;
    std::shared_ptr<UniqueFd> common_dir_fd;
};

struct HeadState {
    enum class Kind {
        Branch,    // HEAD names a ref that exists
        Detached,  // HEAD holds a commit id
        Unborn,    // HEAD names a ref that does not exist yet (no commit)
    };
    Kind kind = Kind::Unborn;
    // The refs HEAD goes through, first the one HEAD names
    // ("refs/heads/main"), then any symbolic ref it points to; empty when
    // detached.
    std::vector<std::string> refs;
    std::string commit;  // hex object id; empty when unborn
    GitLocation location;
};

// "branch", "detached", "unborn".
const char* headKindName(HeadState::Kind kind);

// Finds the git dir and common dir of the worktree at `worktree`. A worktree
// without `.git` is an Error. A `.git` file is followed only as
// runtime/plan/git_link.h allows; `writable_dirs` are the host trees the sandbox
// could write besides the worktree (writable --mount sources).
Result<GitLocation> locateGitDir(const std::string& worktree,
                                 const std::vector<std::string>& writable_dirs = {});

// Resolves HEAD of the worktree at `worktree`, by the same rule.
Result<HeadState> resolveHead(const std::string& worktree,
                              const std::vector<std::string>& writable_dirs = {});

// The same, for a repository nested inside a worktree being hashed (a
// submodule or an embedded clone) at `nested_path`, relative to `root_fd`,
// the outer worktree. Its `gitdir:` file and commondir may only lead to a
// place beneath root_fd, because the nested repository is content the party
// under test wrote; nothing is followed through a symlink.
Result<HeadState> resolveNestedHead(int root_fd, const std::string& nested_path);

// True when `nested_path` (beneath root_fd) holds a `.git` that git would
// take for a repository
// (git's is_nonbare_repository_dir: HEAD, objects/ and refs/ present).
// Anything else means git treats the directory as an ordinary one.
bool looksLikeNestedRepository(int root_fd, const std::string& nested_path);

}  // namespace stockade::oracle
