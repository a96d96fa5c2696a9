#include "oracle/git_dir_digest.h"

#include <fcntl.h>
#include <stdlib.h>

#include <memory>

#include "oracle/digest.h"
#include "oracle/safe_read.h"

namespace stockade::oracle {

namespace {

class DirDigester {
  public:
    DirDigester(const GitDirDigestLimits& limits, GitDirDigest& out) : limits_(limits), out_(out) {}

    // False once a bound is passed (out_.too_large says which).
    Result<bool> digest(int dir_fd, const std::string& prefix, uint64_t depth) {
        uint64_t room = limits_.max_entries - out_.entries;
        Result<DirectoryListing> listed = listDirectory(dir_fd, room);
        if (!listed.ok()) return listed.error().withContext("listing " + quotePath(prefix));
        if (listed->truncated)
            return tooLarge("more than " + std::to_string(limits_.max_entries) + " entries");
        if (!listed->entries.empty() && depth > limits_.max_depth)
            return Error::message(quotePath(prefix) + " is nested more than " +
                                  std::to_string(limits_.max_depth) + " levels deep");
        for (const Entry& entry : listed->entries) {
            std::string path = prefix + "/" + entry.path;
            ++out_.entries;
            std::string summary;
            if (entry.type == FileType::Regular) {
                if (out_.bytes + entry.size > limits_.max_total_bytes)
                    return tooLarge("more than " + std::to_string(limits_.max_total_bytes) +
                                    " bytes of content");
                Result<std::string> hash = hashFile(dir_fd, entry.path);
                if (!hash.ok()) return hash.error().withContext("hashing " + quotePath(path));
                summary = *hash;
            } else if (entry.type == FileType::Symlink) {
                summary = entry.link_target;
            }
            std::string line = path;
            line.push_back('\0');
            line += fileTypeName(entry.type);
            line.push_back('\0');
            line += std::to_string(entry.mode);
            line.push_back('\0');
            line += summary;
            line.push_back('\n');
            listing_.update(line);
            if (entry.type != FileType::Directory) continue;
            Result<UniqueFd> sub =
                openBeneath(dir_fd, entry.path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
            if (!sub.ok()) return sub.error();
            Result<bool> more = digest(sub->get(), path, depth + 1);
            if (!more.ok() || !*more) return more;
        }
        return true;
    }

    std::string finish() { return listing_.hexDigest(); }

  private:
    Result<bool> tooLarge(const std::string& why) {
        out_.status = GitDirDigest::Status::TooLarge;
        out_.too_large = why;
        return false;
    }

    Result<std::string> hashFile(int dir_fd, const std::string& name) {
        uint64_t budget = limits_.max_total_bytes - out_.bytes;
        Result<OpenedFile> file = openRegularBeneath(dir_fd, name, budget);
        if (!file.ok()) return file.error();
        Sha256 content;
        Status read = readChunks(*file, budget, [&](std::string_view chunk) {
            content.update(chunk);
            out_.bytes += chunk.size();
        });
        if (!read.ok()) return read.error();
        return content.hexDigest();
    }

    const GitDirDigestLimits& limits_;
    GitDirDigest& out_;
    Sha256 listing_;
};

// The canonical path, to tell whether the git dir lies inside the common
// dir. Both are host paths the runner of stockade chose.
Result<std::string> canonical(const std::string& path) {
    std::unique_ptr<char, decltype(&free)> resolved(::realpath(path.c_str(), nullptr), &free);
    if (!resolved) return Error::fromErrno("realpath(" + quotePath(path) + ")");
    return std::string(resolved.get());
}

}  // namespace

Result<GitDirDigest> digestGitDir(const GitLocation& location, const GitDirDigestLimits& limits) {
    Result<std::string> common = canonical(location.common_dir);
    if (!common.ok()) return common.error();
    Result<std::string> git_dir = canonical(location.git_dir);
    if (!git_dir.ok()) return git_dir.error();
    struct Root {
        std::string label, path;
        const std::shared_ptr<UniqueFd>& held;
    };
    std::vector<Root> roots = {{"common", *common, location.common_dir_fd}};
    if (*git_dir != *common && git_dir->rfind(*common + "/", 0) != 0)
        roots.push_back({"gitdir", *git_dir, location.git_dir_fd});

    GitDirDigest out;
    DirDigester digester(limits, out);
    for (const auto& [label, path, held] : roots) {
        // The directory as located (and judged, for a .git file), not
        // whatever the path names by now.
        Result<UniqueFd> fd = held && *held
                                  ? Result<UniqueFd>(UniqueFd(::openat(
                                        held->get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)))
                                  : openDirectory(path);
        if (fd.ok() && !*fd) return Error::fromErrno("openat(" + quotePath(path) + ")");
        if (!fd.ok()) return fd.error();
        Result<bool> complete = digester.digest(fd->get(), label, 1);
        if (!complete.ok()) return complete.error().withContext("digesting " + path);
        if (!*complete) {
            out.sha256.clear();
            return out;
        }
    }
    out.sha256 = digester.finish();
    return out;
}

}  // namespace stockade::oracle
