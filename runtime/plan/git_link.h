// Whether a worktree's `.git` FILE is a genuine `git worktree add` link,
// judged only from facts the sandbox cannot have forged (issue 14). The
// worktree is writable by the sandbox, so the file's "gitdir:" line is
// content a previous run may have written; it can narrow a run (a path
// inside the worktree is made read-only) but never widen it: a host
// directory outside the worktree is exposed only when git's own
// administrative files, outside every place the sandbox can write, vouch for
// the link. Shared by the run (child_plan_builder.cpp, which exposes the
// common dir read-only) and the oracle (oracle/git_head.cpp, which reads and
// digests it), so the two never disagree.
//
// The rule, for a `.git` file in worktree W naming G:
//  (a) G, and the common dir C, lie outside every tree the sandbox can write
//      (runtime/policy/writable_trees.h), and no such tree lies inside C;
//  (b) G/gitdir, git's back-pointer, names W/.git (the same file: device and
//      inode of the file the link was read from);
//  (c) G is C/worktrees/NAME, and G/commondir resolves to C;
//  (d) C has HEAD, objects/ and refs/, and C, G and G/gitdir are owned by
//      W's owner or by root;
//  (e) C is named `.git`: the git dir of the checkout that holds it, the
//      layout `git clone` and `git worktree add` make. (a) asks only about
//      this run's writable trees; an earlier run could write anywhere in its
//      own worktree P, and so lay out "HEAD, objects, refs, worktrees/NAME"
//      at P itself or in any directory of P, and name it from a tree this
//      run writes. With (e) what that exposes is at most a `.git` directory
//      such a run made: P's top-level .git is read-only in every run on P.
//      Such a .git holds what that run put there, and that may be P's own
//      files moved in, the hidden ones with their covers (never read there,
//      bare once bound elsewhere): so the run also refuses a common dir
//      that holds a name it hides (child_plan_builder.cpp,
//      hiddenNameInCommonDir; the oracle only reads C, on the host).
//      A bare repository's worktrees are refused for the same reason: a
//      bare repository is exactly the layout an earlier run can forge.
// Every path is opened without following a symlink (RESOLVE_NO_SYMLINKS) and
// every file read is bounded.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"
#include "base/host_path.h"

namespace stockade {

struct GitLink {
    enum class Kind {
        Linked,          // a genuine linked worktree: expose common_dir read-only
        InsideWorktree,  // G is inside W: only narrows (made read-only in place)
    };
    Kind kind = Kind::Linked;
    HeldPath git_dir;              // G
    HeldPath common_dir;           // C (Linked only)
    std::string git_dir_relative;  // InsideWorktree: G relative to W
    // InsideWorktree: the directory G's `commondir` names, relative to W,
    // where it is inside W ("" for none): git reads config and hooks there
    // too, so it is made read-only with G.
    std::string common_dir_relative;
};

// What a run did with a `.git` file, for the result and the log.
struct GitLinkReport {
    std::string file;     // host path of the .git file (or symlink)
    std::string status;   // "honoured", "inside_worktree", "refused"
    std::string exposed;  // honoured: the common dir, read-only at its own path
    std::string reason;   // refused: why
};

// `worktree_fd`: the held worktree (any fd for the directory); `worktree`:
// its canonical path; `writable`: the canonical host trees the sandbox can
// write (the worktree and each writable --mount). The Error's text is the
// reason the link is refused; a refusal is no setup failure.
Result<GitLink> judgeGitLink(int worktree_fd, const std::string& worktree,
                             const std::vector<std::string>& writable);

}  // namespace stockade
