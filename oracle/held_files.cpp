#include "oracle/held_files.h"

#include <cstdio>

#include "oracle/digest.h"

namespace stockade::oracle {

namespace {

std::string modeSuffix(mode_t mode) {
    char text[16];
    std::snprintf(text, sizeof text, " mode:%04o", static_cast<unsigned>(mode & 07777));
    return text;
}

const char* specialName(FileType type) {
    switch (type) {
        case FileType::Fifo:
            return "fifo";
        case FileType::Socket:
            return "socket";
        case FileType::CharDevice:
            return "character-device";
        case FileType::BlockDevice:
            return "block-device";
        default:
            return "unknown";
    }
}

}  // namespace

Result<std::map<std::string, std::string>> hashTree(const std::string& dir,
                                                    const HeldLimits& limits) {
    Result<UniqueFd> root = openDirectory(dir);
    if (!root.ok()) return root.error();
    Result<std::vector<Entry>> entries = walkBeneath(root->get(), limits.walk);
    if (!entries.ok()) return entries.error().withContext("walking " + quotePath(dir));

    std::map<std::string, std::string> hashes;
    uint64_t total = 0;
    for (const Entry& entry : *entries) {
        switch (entry.type) {
            case FileType::Regular: {
                Result<OpenedFile> file =
                    openRegularBeneath(root->get(), entry.path, limits.max_file_bytes);
                if (!file.ok()) return file.error().withContext("hashing held files");
                // A name elsewhere (in the worktree, in a writable --mount)
                // would let the code under test change the held file while
                // the runner read it and put it back before this hash.
                if (file->links > 1)
                    return Error::message(
                        quotePath(entry.path) + " in the held directory has " +
                        std::to_string(file->links) +
                        " names: through another (a hard link made by ln or cp -al) the code "
                        "under test could change it while the test ran; give the held test "
                        "files of their own (cp without -l)");
                // Judged by the size fstat gives the opened file, which is
                // then read to that size and no further.
                if (file->size > limits.max_total_bytes - total)
                    return Error::message(quotePath(dir) + " holds more than " +
                                          std::to_string(limits.max_total_bytes) +
                                          " bytes; stopped at " + quotePath(entry.path));
                Sha256 sha;
                Status read = readChunks(*file, file->size, [&](std::string_view chunk) {
                    sha.update(chunk);
                    total += chunk.size();
                });
                if (!read.ok()) return read.error().withContext("hashing " + quotePath(entry.path));
                hashes[entry.path] = sha.hexDigest() + modeSuffix(file->mode);
                break;
            }
            case FileType::Symlink:
                hashes[entry.path] = "symlink:" + entry.link_target;
                break;
            case FileType::Directory:
                hashes[entry.path] = "directory" + modeSuffix(entry.mode);
                break;
            default:
                hashes[entry.path] = specialName(entry.type) + modeSuffix(entry.mode);
                break;
        }
    }
    return hashes;
}

std::vector<std::string> changedPaths(const std::map<std::string, std::string>& before,
                                      const std::map<std::string, std::string>& after) {
    std::vector<std::string> changed;
    auto b = before.begin();
    auto a = after.begin();
    while (b != before.end() || a != after.end()) {
        if (a == after.end() || (b != before.end() && b->first < a->first)) {
            changed.push_back((b++)->first);
        } else if (b == before.end() || a->first < b->first) {
            changed.push_back((a++)->first);
        } else {
            if (a->second != b->second) changed.push_back(a->first);
            ++a;
            ++b;
        }
    }
    return changed;
}

}  // namespace stockade::oracle
