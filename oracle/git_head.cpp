#include "oracle/git_head.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <map>
#include <optional>

#include "oracle/safe_read.h"
#include "runtime/plan/git_link.h"

namespace stockade::oracle {

namespace {

// git's SYMREF_MAXDEPTH.
constexpr int kMaxSymrefDepth = 5;
constexpr size_t kMaxSmallFileBytes = 64 * 1024;           // HEAD, a loose ref, .git, commondir
constexpr size_t kMaxPackedRefsBytes = 256 * 1024 * 1024;  // large monorepos reach tens of MiB

struct OpenedGitDirs {
    UniqueFd git_dir;
    UniqueFd common_dir;
    GitLocation location;
};

std::string trimTrailingSpace(std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ' ||
                             text.back() == '\t'))
        text.pop_back();
    return text;
}

bool isObjectId(std::string_view text) {
    // SHA-1 repositories have 40 digits, SHA-256 ones 64.
    return (text.size() == 40 || text.size() == 64) &&
           std::all_of(text.begin(), text.end(),
                       [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// Enough of git's check_refname_format to keep a ref name from being a path
// trick; the reads are confined beneath the git dir regardless.
bool isPlausibleRefName(std::string_view name) {
    if (name.substr(0, 5) != "refs/" || name.back() == '/' || name.back() == '.') return false;
    if (name.find("..") != std::string_view::npos || name.find("//") != std::string_view::npos ||
        name.find("/.") != std::string_view::npos || name.find("@{") != std::string_view::npos)
        return false;
    return std::none_of(name.begin(), name.end(), [](char c) {
        auto u = static_cast<unsigned char>(c);
        return u < 0x20 || u == 0x7f || c == ' ' || c == '~' || c == '^' || c == ':' || c == '?' ||
               c == '*' || c == '[' || c == '\\';
    });
}

// Refs that git keeps per worktree (refs.c, is_per_worktree_ref); all others
// are shared through the common dir.
bool isPerWorktreeRef(std::string_view name) {
    for (std::string_view prefix : {"refs/bisect/", "refs/worktree/", "refs/rewritten/"})
        if (name.substr(0, prefix.size()) == prefix) return true;
    return false;
}

// The path a `gitdir:` file or `commondir` holds.
Result<std::string> parseGitdirFile(const std::string& content, const std::string& what) {
    std::string text = trimTrailingSpace(content);
    if (text.substr(0, 8) != "gitdir: " || text.size() == 8 || text.find('\n') != std::string::npos)
        return Error::message(what + " does not hold a single \"gitdir: PATH\" line");
    return text.substr(8);
}

Result<FileType> typeBeneath(int dir_fd, const std::string& path) {
    Result<UniqueFd> fd = openBeneath(dir_fd, path, O_PATH | O_NOFOLLOW);
    if (!fd.ok()) return fd.error();
    struct stat st {};
    if (::fstat(fd->get(), &st) != 0) return Error::fromErrno("fstat(" + quotePath(path) + ")");
    return fileTypeOf(st.st_mode);
}

bool isMissing(const Error& error) {
    return error.errnum() == ENOENT || error.errnum() == ENOTDIR;
}

// Opens a path named by a .git file or commondir for a repository the runner
// of stockade pointed at: resolved like git would, relative to `base_fd`.
Result<UniqueFd> openHostDir(int base_fd, const std::string& path) {
    int fd = ::openat(base_fd, path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return Error::fromErrno("openat(" + quotePath(path) + ", O_DIRECTORY)");
    return UniqueFd(fd);
}

std::string joinDisplay(const std::string& base, const std::string& path) {
    if (!path.empty() && path[0] == '/') return path;
    return base + "/" + path;
}

// Finds commondir beneath the git dir; without one the two are the same.
Status openCommonDir(OpenedGitDirs& dirs, int confine_fd, const std::string& git_dir_relative) {
    Result<std::string> commondir =
        readBeneath(dirs.git_dir.get(), "commondir", kMaxSmallFileBytes);
    if (!commondir.ok()) {
        if (!isMissing(commondir.error()))
            return commondir.error().withContext("reading commondir in " + dirs.location.git_dir);
        Result<UniqueFd> same = openBeneath(dirs.git_dir.get(), ".", O_RDONLY | O_DIRECTORY);
        if (!same.ok()) return same.error();
        dirs.common_dir = std::move(*same);
        dirs.location.common_dir = dirs.location.git_dir;
        return okStatus();
    }
    std::string path = trimTrailingSpace(*commondir);
    if (path.empty()) return Error::message("commondir in " + dirs.location.git_dir + " is empty");
    Result<UniqueFd> common = Error::message("");
    if (confine_fd >= 0) {
        if (path[0] == '/')
            return Error::message(
                "commondir of a nested repository names an absolute path, "
                "which would leave the worktree");
        common = openBeneath(confine_fd, git_dir_relative + "/" + path, O_RDONLY | O_DIRECTORY);
    } else {
        common = openHostDir(dirs.git_dir.get(), path);
    }
    if (!common.ok()) return common.error().withContext("opening commondir " + quotePath(path));
    dirs.common_dir = std::move(*common);
    dirs.location.common_dir = joinDisplay(dirs.location.git_dir, path);
    return okStatus();
}

Result<OpenedGitDirs> openNestedGitDirs(int root_fd, const std::string& nested_path);

Result<OpenedGitDirs> openHostGitDirs(const std::string& worktree,
                                      const std::vector<std::string>& writable_dirs) {
    Result<UniqueFd> worktree_fd = openDirectory(worktree);
    if (!worktree_fd.ok()) return worktree_fd.error();
    Result<FileType> type = typeBeneath(worktree_fd->get(), ".git");
    if (!type.ok()) return type.error().withContext("no repository at " + quotePath(worktree));
    OpenedGitDirs dirs;
    if (*type == FileType::Directory) {
        Result<UniqueFd> git_dir = openBeneath(worktree_fd->get(), ".git", O_RDONLY | O_DIRECTORY);
        if (!git_dir.ok()) return git_dir.error();
        dirs.git_dir = std::move(*git_dir);
        dirs.location.git_dir = worktree + "/.git";
    } else if (*type == FileType::Regular) {
        // The .git file is content of the worktree, which the party under
        // test wrote: the gitdir it names is read only when it is inside the
        // worktree (confined there, as a nested repository's is) or a
        // genuine linked worktree by the rule the run itself applies
        // (runtime/plan/git_link.h). Nothing else on the host is walked.
        char canonical[PATH_MAX];
        if (!realpath(worktree.c_str(), canonical))
            return Error::fromErrno("realpath(" + quotePath(worktree) + ")");
        std::vector<std::string> writable = writable_dirs;
        writable.push_back(canonical);
        Result<GitLink> link = judgeGitLink(worktree_fd->get(), canonical, writable);
        if (!link.ok())
            return link.error().withContext(worktree +
                                            "/.git names a gitdir that is not read (it is "
                                            "not a genuine linked worktree)");
        if (link->kind == GitLink::Kind::InsideWorktree) {
            Result<OpenedGitDirs> nested = openNestedGitDirs(worktree_fd->get(), ".");
            if (!nested.ok()) return nested.error();
            nested->location.git_dir = joinDisplay(worktree, nested->location.git_dir);
            nested->location.common_dir = joinDisplay(worktree, nested->location.common_dir);
            return nested;
        }
        Result<UniqueFd> git_dir = openHostDir(link->git_dir.get(), ".");
        if (!git_dir.ok()) return git_dir.error();
        Result<UniqueFd> common_dir = openHostDir(link->common_dir.get(), ".");
        if (!common_dir.ok()) return common_dir.error();
        dirs.git_dir = std::move(*git_dir);
        dirs.common_dir = std::move(*common_dir);
        dirs.location.git_dir = link->git_dir.path;
        dirs.location.common_dir = link->common_dir.path;
        dirs.location.gitdir_file = true;
        return dirs;
    } else {
        return Error::message(worktree + "/.git is a " + fileTypeName(*type) +
                              "; only a directory or a gitdir file is read");
    }
    if (Status ok = openCommonDir(dirs, -1, ""); !ok.ok()) return ok.error();
    return dirs;
}

Result<OpenedGitDirs> openNestedGitDirs(int root_fd, const std::string& nested_path) {
    std::string dot_git = nested_path + "/.git";
    Result<FileType> type = typeBeneath(root_fd, dot_git);
    if (!type.ok()) return type.error();
    OpenedGitDirs dirs;
    std::string git_dir_relative;
    if (*type == FileType::Directory) {
        git_dir_relative = dot_git;
        dirs.location.git_dir = dot_git;
    } else if (*type == FileType::Regular) {
        Result<std::string> content = readBeneath(root_fd, dot_git, kMaxSmallFileBytes);
        if (!content.ok()) return content.error();
        Result<std::string> path = parseGitdirFile(*content, quotePath(dot_git));
        if (!path.ok()) return path.error();
        if ((*path)[0] == '/')
            return Error::message(quotePath(dot_git) + " names the absolute gitdir " +
                                  quotePath(*path) + ", which would leave the worktree");
        git_dir_relative = nested_path + "/" + *path;
        dirs.location.git_dir = git_dir_relative;
        dirs.location.gitdir_file = true;
    } else {
        return Error::message(quotePath(dot_git) + " is a " + fileTypeName(*type));
    }
    Result<UniqueFd> git_dir = openBeneath(root_fd, git_dir_relative, O_RDONLY | O_DIRECTORY);
    if (!git_dir.ok()) return git_dir.error();
    dirs.git_dir = std::move(*git_dir);
    if (Status ok = openCommonDir(dirs, root_fd, git_dir_relative); !ok.ok()) return ok.error();
    return dirs;
}

class RefReader {
  public:
    explicit RefReader(const OpenedGitDirs& dirs) : dirs_(dirs) {}

    // The content of a loose ref, or nullopt when there is none.
    Result<std::optional<std::string>> loose(const std::string& name) {
        int dir = isPerWorktreeRef(name) ? dirs_.git_dir.get() : dirs_.common_dir.get();
        Result<FileType> type = typeBeneath(dir, name);
        if (!type.ok()) {
            if (isMissing(type.error())) return std::optional<std::string>();
            return type.error();
        }
        // A directory where the ref would be (refs/heads/a beside
        // refs/heads/a/b, which git forbids anyway) is no loose ref.
        if (*type == FileType::Directory) return std::optional<std::string>();
        Result<std::string> content = readBeneath(dir, name, kMaxSmallFileBytes);
        if (!content.ok()) return content.error();
        return std::optional<std::string>(trimTrailingSpace(*content));
    }

    // The id packed-refs gives the ref, or nullopt.
    Result<std::optional<std::string>> packed(const std::string& name) {
        if (!packed_loaded_) {
            if (Status ok = loadPacked(); !ok.ok()) return ok.error();
        }
        auto it = packed_.find(name);
        if (it == packed_.end()) return std::optional<std::string>();
        return std::optional<std::string>(it->second);
    }

  private:
    Status loadPacked() {
        packed_loaded_ = true;
        Result<std::string> content =
            readBeneath(dirs_.common_dir.get(), "packed-refs", kMaxPackedRefsBytes);
        if (!content.ok()) {
            if (isMissing(content.error())) return okStatus();
            return content.error();
        }
        std::string_view text = *content;
        size_t line_number = 0;
        bool have_ref = false;
        while (!text.empty()) {
            size_t end = text.find('\n');
            std::string_view line = text.substr(0, end);
            text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
            ++line_number;
            auto bad = [&](const std::string& what) {
                return Error::message("packed-refs line " + std::to_string(line_number) + ": " +
                                      what);
            };
            if (line.empty()) continue;
            if (line[0] == '#') {
                if (line_number != 1) return bad("a comment after the header");
                continue;
            }
            if (line[0] == '^') {
                // The peeled id of the annotated tag on the line before; HEAD
                // never needs it.
                if (!have_ref || !isObjectId(line.substr(1))) return bad("a stray peeled line");
                continue;
            }
            size_t space = line.find(' ');
            if (space == std::string_view::npos || !isObjectId(line.substr(0, space)))
                return bad("expected \"OBJECT-ID REFNAME\"");
            packed_.emplace(std::string(line.substr(space + 1)),
                            std::string(line.substr(0, space)));
            have_ref = true;
        }
        return okStatus();
    }

    const OpenedGitDirs& dirs_;
    bool packed_loaded_ = false;
    std::map<std::string, std::string> packed_;
};

Result<HeadState> resolveOpened(const OpenedGitDirs& dirs) {
    HeadState state;
    state.location = dirs.location;
    const std::string where = " in " + dirs.location.git_dir;
    Result<std::string> head = readBeneath(dirs.git_dir.get(), "HEAD", kMaxSmallFileBytes);
    if (!head.ok()) return head.error().withContext("reading HEAD" + where);
    std::string value = trimTrailingSpace(*head);
    if (isObjectId(value)) {
        state.kind = HeadState::Kind::Detached;
        state.commit = value;
        return state;
    }
    RefReader refs(dirs);
    for (int depth = 0;; ++depth) {
        if (value.substr(0, 4) != "ref:")
            return Error::message(
                (state.refs.empty() ? "HEAD" : state.refs.back()) + where +
                " holds neither \"ref: NAME\" nor an object id: " + quotePath(value));
        std::string name = value.substr(4);
        name.erase(0, name.find_first_not_of(" \t"));
        if (depth >= kMaxSymrefDepth)
            return Error::message("more than " + std::to_string(kMaxSymrefDepth) +
                                  " symbolic refs in a row from HEAD" + where);
        // The reftable backend (git 2.45+) leaves this placeholder in HEAD.
        if (name == "refs/heads/.invalid")
            return Error::message("the repository at " + dirs.location.git_dir +
                                  " keeps its refs in reftable, which stockade does not read");
        if (!isPlausibleRefName(name))
            return Error::message("HEAD" + where + " leads to the malformed ref name " +
                                  quotePath(name));
        state.refs.push_back(name);
        Result<std::optional<std::string>> loose = refs.loose(name);
        if (!loose.ok()) return loose.error().withContext("reading " + name + where);
        if (loose->has_value()) {
            value = **loose;
            if (isObjectId(value)) {
                state.kind = HeadState::Kind::Branch;
                state.commit = value;
                return state;
            }
            continue;  // another symbolic ref, or malformed (said above)
        }
        Result<std::optional<std::string>> packed = refs.packed(name);
        if (!packed.ok()) return packed.error().withContext("reading packed-refs" + where);
        if (packed->has_value()) {
            state.kind = HeadState::Kind::Branch;
            state.commit = **packed;
        } else {
            state.kind = HeadState::Kind::Unborn;
        }
        return state;
    }
}

}  // namespace

const char* headKindName(HeadState::Kind kind) {
    switch (kind) {
        case HeadState::Kind::Branch:
            return "branch";
        case HeadState::Kind::Detached:
            return "detached";
        case HeadState::Kind::Unborn:
            break;
    }
    return "unborn";
}

Result<GitLocation> locateGitDir(const std::string& worktree,
                                 const std::vector<std::string>& writable_dirs) {
    Result<OpenedGitDirs> dirs = openHostGitDirs(worktree, writable_dirs);
    if (!dirs.ok()) return dirs.error();
    GitLocation location = dirs->location;
    location.git_dir_fd = std::make_shared<UniqueFd>(std::move(dirs->git_dir));
    location.common_dir_fd = std::make_shared<UniqueFd>(std::move(dirs->common_dir));
    return location;
}

Result<HeadState> resolveHead(const std::string& worktree,
                              const std::vector<std::string>& writable_dirs) {
    Result<OpenedGitDirs> dirs = openHostGitDirs(worktree, writable_dirs);
    if (!dirs.ok()) return dirs.error();
    return resolveOpened(*dirs);
}

Result<HeadState> resolveNestedHead(int root_fd, const std::string& nested_path) {
    Result<OpenedGitDirs> dirs = openNestedGitDirs(root_fd, nested_path);
    if (!dirs.ok()) return dirs.error().withContext("nested repository " + quotePath(nested_path));
    Result<HeadState> head = resolveOpened(*dirs);
    if (!head.ok()) return head.error().withContext("nested repository " + quotePath(nested_path));
    return head;
}

bool looksLikeNestedRepository(int root_fd, const std::string& nested_path) {
    Result<OpenedGitDirs> dirs = openNestedGitDirs(root_fd, nested_path);
    if (!dirs.ok()) return false;
    Result<std::string> head = readBeneath(dirs->git_dir.get(), "HEAD", kMaxSmallFileBytes);
    if (!head.ok()) return false;
    std::string value = trimTrailingSpace(*head);
    if (!isObjectId(value) && value.substr(0, 10) != "ref: refs/") return false;
    for (const char* dir : {"objects", "refs"}) {
        Result<FileType> type = typeBeneath(dirs->common_dir.get(), dir);
        if (!type.ok() || *type != FileType::Directory) return false;
    }
    return true;
}

}  // namespace stockade::oracle
