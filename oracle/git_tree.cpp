#include "oracle/git_tree.h"

#include <fcntl.h>
#include <strings.h>
#include <sys/stat.h>

#include <optional>

#include "oracle/git_head.h"
#include "oracle/git_ignore.h"
#include "oracle/safe_read.h"

namespace stockade::oracle {

namespace {

class TreeHasher {
  public:
    TreeHasher(int root_fd, const TreeOptions& options, TreeHash& out)
        : root_fd_(root_fd), limits_(options.limits), out_(out) {}

    Status addInfoExclude(const std::string& content) {
        Result<IgnoreList> list = IgnoreList::parse(content, "");
        if (!list.ok()) return list.error().withContext("info/exclude");
        info_exclude_ = std::move(*list);
        return okStatus();
    }

    // The tree id of one directory, or nullopt when git would record nothing
    // of it (empty, or everything in it ignored).
    Result<std::optional<std::string>> hashDirectory(int dir_fd, const std::string& prefix,
                                                     uint64_t depth) {
        uint64_t room = limits_.max_entries - entries_seen_;
        Result<DirectoryListing> listed = listDirectory(dir_fd, room);
        if (!listed.ok())
            return listed.error().withContext(
                "listing " + (prefix.empty() ? std::string("the worktree") : quotePath(prefix)));
        if (listed->truncated)
            return Error::message("the worktree has more than " +
                                  std::to_string(limits_.max_entries) + " entries");
        entries_seen_ += listed->entries.size();
        if (!listed->entries.empty() && depth > limits_.max_depth)
            return Error::message(quotePath(prefix) + " is nested more than " +
                                  std::to_string(limits_.max_depth) + " levels deep");

        // This directory's .gitignore applies to everything beneath it.
        size_t pushed = 0;
        for (const Entry& entry : listed->entries) {
            if (entry.path != ".gitignore") continue;
            // git (2.32+) does not follow a symlinked .gitignore; it reads
            // only a regular file.
            if (entry.type != FileType::Regular) break;
            Result<std::string> content =
                readBeneath(dir_fd, entry.path, limits_.max_ignore_file_bytes);
            if (!content.ok()) return content.error().withContext(quotePath(prefix + ".gitignore"));
            Result<IgnoreList> list = IgnoreList::parse(*content, prefix);
            if (!list.ok()) return list.error().withContext(quotePath(prefix + ".gitignore"));
            ignore_stack_.push_back(std::move(*list));
            pushed = 1;
        }
        Result<std::optional<std::string>> id = hashEntries(dir_fd, prefix, depth, listed->entries);
        ignore_stack_.resize(ignore_stack_.size() - pushed);
        return id;
    }

  private:
    Result<std::optional<std::string>> hashEntries(int dir_fd, const std::string& prefix,
                                                   uint64_t depth,
                                                   const std::vector<Entry>& entries) {
        std::vector<TreeObjectEntry> tree;
        for (const Entry& entry : entries) {
            const std::string& name = entry.path;
            std::string path = prefix + name;
            if (name == ".git") continue;
            // git refuses to add ".GIT" and its kin (read-cache.c,
            // verify_dotfile), so no tree id exists for such a worktree.
            if (strcasecmp(name.c_str(), ".git") == 0)
                return Error::message(quotePath(path) + ": git refuses to add this path");
            bool is_dir = entry.type == FileType::Directory;
            Result<bool> ignored = isIgnored(path, is_dir);
            if (!ignored.ok()) return ignored.error();
            if (*ignored) {
                out_.ignored.push_back(is_dir ? path + "/" : path);
                continue;
            }
            if (name == ".gitattributes") out_.has_gitattributes = true;
            TreeObjectEntry object;
            object.name = name;
            switch (entry.type) {
                case FileType::Regular: {
                    Result<std::string> id = hashFile(dir_fd, name, path);
                    if (!id.ok()) return id.error();
                    // Only the owner's execute bit counts (git's ce_permissions).
                    object.mode = (entry.mode & S_IXUSR) ? GitMode::Executable : GitMode::Regular;
                    object.id = *id;
                    break;
                }
                case FileType::Symlink:
                    object.mode = GitMode::Symlink;
                    object.id = blobId(entry.link_target);
                    break;
                case FileType::Directory: {
                    Result<std::optional<TreeObjectEntry>> sub =
                        hashSubdirectory(dir_fd, name, path, depth);
                    if (!sub.ok()) return sub.error();
                    if (!sub->has_value()) continue;
                    object = std::move(**sub);
                    break;
                }
                default:
                    out_.special.push_back(path + " (" + fileTypeName(entry.type) + ")");
                    continue;
            }
            if (object.mode != GitMode::Tree)
                out_.files[path] = TreeFile{object.mode, object.id,
                                            entry.type == FileType::Regular ? entry.size : 0};
            tree.push_back(std::move(object));
        }
        if (tree.empty()) return std::optional<std::string>();
        Result<std::string> id = treeObjectId(std::move(tree));
        if (!id.ok()) return id.error().withContext(quotePath(prefix));
        return std::optional<std::string>(*id);
    }

    // A subdirectory as a tree, or a nested repository as a gitlink to its
    // HEAD commit; nullopt when git would record nothing of it.
    Result<std::optional<TreeObjectEntry>> hashSubdirectory(int dir_fd, const std::string& name,
                                                            const std::string& path,
                                                            uint64_t depth) {
        TreeObjectEntry object;
        object.name = name;
        Result<UniqueFd> nested_git = openBeneath(root_fd_, path + "/.git", O_PATH | O_NOFOLLOW);
        if (nested_git.ok() && looksLikeNestedRepository(root_fd_, path)) {
            Result<HeadState> head = resolveNestedHead(root_fd_, path);
            if (!head.ok()) return head.error();
            if (head->kind == HeadState::Kind::Unborn)
                return Error::message(quotePath(path) +
                                      " holds a repository with no commit checked out, which "
                                      "git add refuses");
            if (!isSha1Hex(head->commit))
                return Error::message(quotePath(path) + " holds a SHA-256 repository");
            object.mode = GitMode::Gitlink;
            object.id = head->commit;
            return std::optional<TreeObjectEntry>(std::move(object));
        }
        Result<UniqueFd> sub = openBeneath(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        if (!sub.ok()) return sub.error();
        Result<std::optional<std::string>> id = hashDirectory(sub->get(), path + "/", depth + 1);
        if (!id.ok()) return id.error();
        if (!id->has_value()) return std::optional<TreeObjectEntry>();
        object.mode = GitMode::Tree;
        object.id = **id;
        return std::optional<TreeObjectEntry>(std::move(object));
    }

    Result<std::string> hashFile(int dir_fd, const std::string& name, const std::string& path) {
        uint64_t budget = limits_.max_total_bytes - out_.bytes_hashed;
        Result<OpenedFile> file =
            openRegularBeneath(dir_fd, name, std::min(limits_.max_file_bytes, budget));
        if (!file.ok()) {
            if (file.error().errnum() == 0 && budget < limits_.max_file_bytes)
                return file.error().withContext(
                    "hashing " + quotePath(path) + " (the worktree passes " +
                    std::to_string(limits_.max_total_bytes) + " bytes in all)");
            return file.error().withContext("hashing " + quotePath(path));
        }
        BlobHasher hasher(file->size);
        uint64_t read_bytes = 0;
        Status read = readChunks(*file, file->size, [&](std::string_view chunk) {
            hasher.update(chunk);
            read_bytes += chunk.size();
        });
        if (!read.ok()) return read.error().withContext("hashing " + quotePath(path));
        // The size went into the header before the content was read.
        if (read_bytes != file->size)
            return Error::message(quotePath(path) + " shrank while being hashed");
        out_.bytes_hashed += read_bytes;
        return hasher.hexId();
    }

    // dir.c's last_matching_pattern: the deepest .gitignore that has a
    // matching pattern decides, then info/exclude.
    Result<bool> isIgnored(const std::string& path, bool is_dir) const {
        IgnoreList::Match match = IgnoreList::Match::None;
        for (auto it = ignore_stack_.rbegin(); it != ignore_stack_.rend(); ++it) {
            match = it->match(path, is_dir);
            if (match != IgnoreList::Match::None) break;
        }
        if (match == IgnoreList::Match::None) match = info_exclude_.match(path, is_dir);
        if (match == IgnoreList::Match::TooCostly)
            return Error::message("matching " + quotePath(path) +
                                  " against the ignore rules takes too long (a pattern with "
                                  "many \"**\"?); no tree id is given rather than a guess");
        return match == IgnoreList::Match::Excluded;
    }

    int root_fd_;
    const TreeLimits& limits_;
    TreeHash& out_;
    uint64_t entries_seen_ = 0;
    std::vector<IgnoreList> ignore_stack_;
    IgnoreList info_exclude_ = *IgnoreList::parse("", "");
};

}  // namespace

Result<TreeHash> treeId(int worktree_fd, const TreeOptions& options) {
    TreeHash out;
    TreeHasher hasher(worktree_fd, options, out);
    if (Status ok = hasher.addInfoExclude(options.info_exclude); !ok.ok()) return ok.error();
    Result<std::optional<std::string>> id = hasher.hashDirectory(worktree_fd, "", 1);
    if (!id.ok()) return id.error();
    if (id->has_value()) {
        out.tree_id = **id;
    } else {
        Result<std::string> empty = treeObjectId({});
        if (!empty.ok()) return empty.error();
        out.tree_id = *empty;
    }
    return out;
}

Result<TreeHash> treeIdOfWorktree(const std::string& worktree, const TreeLimits& limits) {
    Result<UniqueFd> fd = openDirectory(worktree);
    if (!fd.ok()) return fd.error();
    TreeOptions options;
    options.limits = limits;
    Result<UniqueFd> dot_git = openBeneath(fd->get(), ".git", O_PATH | O_NOFOLLOW);
    if (dot_git.ok()) {
        Result<GitLocation> location = locateGitDir(worktree);
        if (!location.ok()) return location.error();
        Result<UniqueFd> common = openDirectory(location->common_dir);
        if (!common.ok()) return common.error();
        Result<std::string> exclude =
            readBeneath(common->get(), "info/exclude", limits.max_ignore_file_bytes);
        if (exclude.ok()) {
            options.info_exclude = std::move(*exclude);
        } else if (exclude.error().errnum() != ENOENT) {
            return exclude.error().withContext("reading info/exclude of " + location->common_dir);
        }
    } else if (dot_git.error().errnum() != ENOENT) {
        return dot_git.error().withContext("looking for .git in " + worktree);
    }
    return treeId(fd->get(), options);
}

TreeChanges diffTrees(const TreeHash& before, const TreeHash& after) {
    TreeChanges changes;
    auto b = before.files.begin();
    auto a = after.files.begin();
    while (b != before.files.end() || a != after.files.end()) {
        if (a == after.files.end() || (b != before.files.end() && b->first < a->first)) {
            changes.deleted.push_back(b->first);
            ++b;
        } else if (b == before.files.end() || a->first < b->first) {
            changes.created.push_back(a->first);
            ++a;
        } else {
            if (a->second.id != b->second.id || a->second.mode != b->second.mode)
                changes.changed.push_back(a->first);
            ++a;
            ++b;
        }
    }
    return changes;
}

}  // namespace stockade::oracle
