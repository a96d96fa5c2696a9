#include "oracle/git_objects.h"

#include <algorithm>

namespace stockade::oracle {

namespace {

int hexValue(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

// Git's base_name_compare: a tree sorts as if its name had a trailing '/'.
// A gitlink is not a tree here, as in git.
unsigned char sortByteAt(std::string_view name, GitMode mode, size_t i) {
    if (i < name.size()) return static_cast<unsigned char>(name[i]);
    return mode == GitMode::Tree ? '/' : '\0';
}

}  // namespace

std::string gitModeText(GitMode mode) {
    switch (mode) {
        case GitMode::Regular:
            return "100644";
        case GitMode::Executable:
            return "100755";
        case GitMode::Symlink:
            return "120000";
        case GitMode::Tree:
            return "40000";
        case GitMode::Gitlink:
            return "160000";
    }
    return "100644";
}

BlobHasher::BlobHasher(uint64_t size) {
    std::string header = "blob " + std::to_string(size);
    header.push_back('\0');
    sha1_.update(header);
}

std::string blobId(std::string_view content) {
    BlobHasher hasher(content.size());
    hasher.update(content);
    return hasher.hexId();
}

bool isSha1Hex(std::string_view text) {
    return text.size() == 40 &&
           std::all_of(text.begin(), text.end(), [](char c) { return hexValue(c) >= 0; });
}

bool gitTreeOrder(std::string_view a, GitMode mode_a, std::string_view b, GitMode mode_b) {
    size_t common = std::min(a.size(), b.size());
    for (size_t i = 0; i < common; ++i)
        if (a[i] != b[i])
            return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[i]);
    // One name is a prefix of the other (or they are equal): compare the byte
    // after the shorter, which is '/' for a tree and NUL otherwise.
    return sortByteAt(a, mode_a, common) < sortByteAt(b, mode_b, common);
}

Result<std::string> treeObjectId(std::vector<TreeObjectEntry> entries) {
    std::sort(entries.begin(), entries.end(),
              [](const TreeObjectEntry& x, const TreeObjectEntry& y) {
                  return gitTreeOrder(x.name, x.mode, y.name, y.mode);
              });
    std::string body;
    for (size_t i = 0; i < entries.size(); ++i) {
        const TreeObjectEntry& entry = entries[i];
        if (i > 0 && entries[i - 1].name == entry.name)
            return Error::message("two tree entries named \"" + entry.name + "\"");
        if (!isSha1Hex(entry.id))
            return Error::message("tree entry \"" + entry.name + "\" has no SHA-1 id: \"" +
                                  entry.id + "\"");
        body += gitModeText(entry.mode);
        body.push_back(' ');
        body += entry.name;
        body.push_back('\0');
        for (size_t j = 0; j < entry.id.size(); j += 2)
            body.push_back(
                static_cast<char>(hexValue(entry.id[j]) * 16 + hexValue(entry.id[j + 1])));
    }
    Sha1 sha1;
    std::string header = "tree " + std::to_string(body.size());
    header.push_back('\0');
    sha1.update(header);
    sha1.update(body);
    return sha1.hexDigest();
}

}  // namespace stockade::oracle
