// Which host directories a sandbox can write into: the trees it is given
// writable (the worktree, each writable --mount), and the same directories
// reached another way, through a mount below a tree or a bind mount of a part
// of one. Judged wherever the host is about to trust a path for what it
// holds or to write there: a --result or --verdict (runtime/record/), the
// gitdir a `.git` file names (runtime/plan/git_link.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace stockade {

// Whether the sandbox can write into the canonical directory `dir`, given
// the trees `writable` it writes: the tree that holds it (below it, on a
// mount below it, or through a bind mount of a part of it, judged by
// filesystem and path within it from /proc/self/mountinfo), or nullopt.
std::optional<std::string> writableBy(const std::string& dir,
                                      const std::vector<std::string>& writable);

// The first of the canonical directories `dirs` the sandbox can write
// into, and the tree that holds it; mountinfo read once for all of them.
struct WritableDir {
    std::string dir;
    std::string tree;
};
std::optional<WritableDir> firstWritableBy(const std::vector<std::string>& dirs,
                                           const std::vector<std::string>& writable);

// Whether the canonical directory `dir` and one of the canonical trees
// `trees` hold one another, lexically or through a mount (as writableBy
// judges, both ways), with mountinfo read once: the tree, and whether `dir`
// lies inside it (else it holds the tree).
struct Overlap {
    std::string tree;
    bool dir_inside = false;
};
std::optional<Overlap> overlapOf(const std::string& dir, const std::vector<std::string>& trees);

}  // namespace stockade
