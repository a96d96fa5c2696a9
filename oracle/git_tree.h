// The tree id of a worktree as `git add -A && git write-tree` would give it
// into a fresh index, computed by stockade from the files (git is never run:
// it would obey the worktree's config and hooks), and the blob id of every
// file, so a run's effect on the worktree can be named file by file.
//
// What it follows of git:
//  - `.git` is left out, at any depth;
//  - modes 100644, 100755 (owner's execute bit), 120000 (the link text is
//    the blob; never followed), 040000; empty directories are absent;
//  - .gitignore files (in every directory git would enter) and
//    .git/info/exclude: excluded untracked paths are left out and excluded
//    directories are not entered, as `git add -A` does;
//  - a directory holding a repository of its own (a submodule or an embedded
//    clone) is a gitlink (160000) to the commit its HEAD resolves to, read by
//    git_head; one with an unborn HEAD is an Error, as `git add` refuses it;
//  - FIFOs, sockets and devices are left out, as git leaves them out.
// What it does not: attributes (a .gitattributes with `text`, `eol` or
// `filter` changes what git stores; TreeHash says when one is present), the
// user's global excludes file, paths already tracked in an existing index that
// are now ignored (git keeps those; stockade hashes as for a fresh index),
// and SHA-256 repositories.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "oracle/git_objects.h"

namespace stockade::oracle {

struct TreeLimits {
    uint64_t max_entries = 200000;  // directory entries looked at
    uint64_t max_depth = 64;
    uint64_t max_file_bytes = 256ull << 20;    // one file
    uint64_t max_total_bytes = 2048ull << 20;  // all files
    uint64_t max_ignore_file_bytes = 1 << 20;  // one .gitignore
};

struct TreeFile {
    GitMode mode = GitMode::Regular;
    std::string id;  // blob id; for a gitlink, the nested repository's commit
    uint64_t size = 0;
};

struct TreeHash {
    std::string tree_id;
    // Every path the tree records, '/'-separated, in bytewise order.
    std::map<std::string, TreeFile> files;
    // Paths left out by ignore rules, outermost only (an ignored directory is
    // listed with a trailing '/' and not entered).
    std::vector<std::string> ignored;
    // FIFOs, sockets and devices, which git does not record: "path (FIFO)".
    std::vector<std::string> special;
    // A .gitattributes file exists somewhere in the tree, so git's own tree
    // id may differ (eol conversion, filters).
    bool has_gitattributes = false;
    uint64_t bytes_hashed = 0;
};

struct TreeOptions {
    TreeLimits limits;
    std::string info_exclude;  // the content of the repository's info/exclude, if any
};

// Hashes the worktree open at worktree_fd. Bounds passed are an Error naming
// the bound and the path.
Result<TreeHash> treeId(int worktree_fd, const TreeOptions& options = {});

// The same for the worktree at a path, with the info/exclude of its
// repository (found through `.git`, which may be a gitdir file); a worktree
// without `.git` is hashed with no info/exclude.
Result<TreeHash> treeIdOfWorktree(const std::string& worktree, const TreeLimits& limits = {});

struct TreeChanges {
    std::vector<std::string> created;
    std::vector<std::string> changed;  // another blob, or another mode
    std::vector<std::string> deleted;
};

TreeChanges diffTrees(const TreeHash& before, const TreeHash& after);

}  // namespace stockade::oracle
