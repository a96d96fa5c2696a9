// Git object ids computed by stockade itself, byte-compatible with
// `git hash-object` and `git write-tree` for repositories in git's default
// SHA-1 object format. Nothing here touches the filesystem.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "oracle/digest.h"

namespace stockade::oracle {

// The modes a tree entry can have, as git defines them.
enum class GitMode : uint32_t {
    Regular = 0100644,
    Executable = 0100755,
    Symlink = 0120000,  // the blob holds the link text
    Tree = 040000,
    Gitlink = 0160000,  // a nested repository, recorded by its HEAD commit
};

// As git writes the mode inside a tree object: "100644", "100755",
// "120000", "40000" (no leading zero), "160000".
std::string gitModeText(GitMode mode);

// The id `git hash-object` gives a file with this content.
std::string blobId(std::string_view content);

// The same id, for content fed in pieces; the size must be known first
// because it is part of the object's header.
class BlobHasher {
  public:
    explicit BlobHasher(uint64_t size);
    void update(std::string_view bytes) { sha1_.update(bytes); }
    std::string hexId() { return sha1_.hexDigest(); }

  private:
    Sha1 sha1_;
};

struct TreeObjectEntry {
    std::string name;  // one path component
    GitMode mode = GitMode::Regular;
    std::string id;  // 40 lowercase hex digits
};

// True when git puts entry a before entry b in a tree: bytewise, with a tree
// compared as if its name ended in '/' (so "a.b" < "a/" < "a0").
bool gitTreeOrder(std::string_view a, GitMode mode_a, std::string_view b, GitMode mode_b);

// The id of the tree object holding these entries, sorted as git sorts them.
// No entries give git's empty tree, 4b825dc642cb6eb9a060e54bf8d69288fbee4904.
// An id that is not 40 hex digits, or a repeated name, is an Error.
Result<std::string> treeObjectId(std::vector<TreeObjectEntry> entries);

// True for 40 lowercase hex digits (a SHA-1 object id).
bool isSha1Hex(std::string_view text);

}  // namespace stockade::oracle
