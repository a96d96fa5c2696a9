#include "runtime/plan/git_link.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <utility>

#include "base/small_file.h"
#include "runtime/policy/sandbox_path.h"
#include "runtime/policy/writable_trees.h"

namespace stockade {

namespace {

// git's own files here are one line; a bigger one is no git file.
constexpr size_t kMaxLinkFile = 4096;

Result<UniqueFd> openNoSymlinks(int dir_fd, const std::string& path, int flags) {
    open_how how{};
    how.flags = static_cast<__u64>(flags | O_CLOEXEC);
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    long fd = syscall(SYS_openat2, dir_fd, path.c_str(), &how, sizeof(how));
    if (fd < 0) {
        int err = errno;
        if (err == ELOOP)
            return Error::message(path + " cannot be reached without following a symlink");
        return Error::fromErrno("openat2(\"" + path + "\", RESOLVE_NO_SYMLINKS)", err);
    }
    return UniqueFd(static_cast<int>(fd));
}

Result<std::string> canonicalOf(int fd) {
    char buf[PATH_MAX];
    std::string link = "/proc/self/fd/" + std::to_string(fd);
    ssize_t n = readlink(link.c_str(), buf, sizeof(buf) - 1);
    if (n < 0) return Error::fromErrno("readlink(\"" + link + "\")");
    return std::string(buf, static_cast<size_t>(n));
}

Result<HeldPath> holdDir(int dir_fd, const std::string& path) {
    auto fd = openNoSymlinks(dir_fd, path, O_PATH | O_DIRECTORY);
    if (!fd) return fd.error();
    HeldPath held;
    if (fstat(fd->get(), &held.st) < 0) return Error::fromErrno("fstat(\"" + path + "\")");
    auto canonical = canonicalOf(fd->get());
    if (!canonical) return canonical.error();
    held.path = *canonical;
    held.fd = std::make_shared<UniqueFd>(std::move(*fd));
    return held;
}

Result<SmallFile> readSmall(int dir_fd, const char* name, const std::string& shown) {
    return readSmallFile(dir_fd, name, shown, kMaxLinkFile);
}

// git strips the line end (read_gitfile_gently); a path with a NUL or a
// second line in it is nothing git wrote.
Result<std::string> singleLine(std::string text, const std::string& shown) {
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    if (text.empty()) return Error::message(shown + " is empty");
    if (text.find('\n') != std::string::npos || text.find('\0') != std::string::npos)
        return Error::message(shown + " holds more than one path");
    return text;
}

std::string parentOf(const std::string& path) {
    size_t slash = path.rfind('/');
    return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

std::string baseOf(const std::string& path) {
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool ownedByOwnerOrRoot(const struct stat& st, uid_t owner) {
    return st.st_uid == owner || st.st_uid == 0;
}

// (a): neither inside a tree the sandbox can write nor holding one.
Status outsideWritable(const std::string& dir, const std::vector<std::string>& writable,
                       const char* what) {
    if (auto tree = writableBy(dir, writable))
        return Error::message(std::string(what) + " " + dir + " lies in " + *tree +
                              ", which the sandbox can write");
    for (const std::string& tree : writable)
        if (isUnder(tree, dir))
            return Error::message(std::string(what) + " " + dir + " holds " + tree +
                                  ", which the sandbox can write");
    return okStatus();
}

}  // namespace

Result<GitLink> judgeGitLink(int worktree_fd, const std::string& worktree,
                             const std::vector<std::string>& writable) {
    const std::string dotgit = worktree + "/.git";
    struct stat wt {};
    if (fstat(worktree_fd, &wt) < 0) return Error::fromErrno("fstat(\"" + worktree + "\")");
    auto file = readSmall(worktree_fd, ".git", dotgit);
    if (!file) return file.error();
    auto line = singleLine(file->content, dotgit);
    if (!line) return line.error();
    if (!line->starts_with("gitdir: ") || line->size() == 8)
        return Error::message(dotgit + " holds no \"gitdir: PATH\" line");
    const std::string named = line->substr(8);

    // Relative to the directory holding the .git file, as git reads it.
    int base = named[0] == '/' ? AT_FDCWD : worktree_fd;
    auto git_dir = holdDir(base, named);
    if (!git_dir) return git_dir.error().withContext("the gitdir " + named);
    GitLink link;
    if (isUnder(git_dir->path, worktree)) {
        // Content of the worktree itself: making it read-only only narrows.
        link.kind = GitLink::Kind::InsideWorktree;
        auto relativeToWorktree = [&](const std::string& path) {
            std::string out = path.substr(worktree.size());
            while (out.starts_with("/")) out.erase(0, 1);
            return out;
        };
        link.git_dir_relative = relativeToWorktree(git_dir->path);
        // A commondir in G (a linked worktree's layout) is where git reads
        // config and hooks too: one inside W is made read-only with G, or
        // the sandbox would write the config the host's git then runs. One
        // outside W is nothing the sandbox reaches through W; one that
        // cannot be reached without a symlink is a residual (threat-model.md).
        if (auto text = readSmall(git_dir->get(), "commondir", git_dir->path + "/commondir"))
            if (auto named_common = singleLine(text->content, git_dir->path + "/commondir"))
                if (auto common = holdDir(git_dir->get(), *named_common);
                    common && isUnder(common->path, worktree))
                    link.common_dir_relative = relativeToWorktree(common->path);
        link.git_dir = std::move(*git_dir);
        return link;
    }
    const std::string& g = git_dir->path;
    if (auto s = outsideWritable(g, writable, "the gitdir"); !s) return s.error();

    // (c) G is C/worktrees/NAME.
    const std::string common_path = parentOf(parentOf(g));
    if (baseOf(parentOf(g)) != "worktrees" || common_path == "/")
        return Error::message("the gitdir " + g +
                              " is not in a \"worktrees\" directory of a repository");

    // (b) git's back-pointer names this very .git file.
    const std::string back_shown = g + "/gitdir";
    auto back = readSmall(git_dir->get(), "gitdir", back_shown);
    if (!back) return back.error().withContext("no back-pointer to " + dotgit);
    auto back_path = singleLine(back->content, back_shown);
    if (!back_path) return back_path.error();
    auto pointed =
        openNoSymlinks((*back_path)[0] == '/' ? AT_FDCWD : git_dir->get(), *back_path, O_PATH);
    // The same file, and by this very name: a hard link of some genuine
    // worktree's .git, made in this one, is not this worktree's link.
    struct stat pointed_st {};
    Result<std::string> pointed_path =
        pointed ? canonicalOf(pointed->get()) : Result<std::string>(pointed.error());
    if (!pointed || fstat(pointed->get(), &pointed_st) < 0 ||
        pointed_st.st_dev != file->st.st_dev || pointed_st.st_ino != file->st.st_ino ||
        !pointed_path || *pointed_path != dotgit)
        return Error::message(back_shown + " does not name " + dotgit);

    // (c) G/commondir leads back to C.
    const std::string commondir_shown = g + "/commondir";
    auto commondir = readSmall(git_dir->get(), "commondir", commondir_shown);
    if (!commondir) return commondir.error();
    auto commondir_path = singleLine(commondir->content, commondir_shown);
    if (!commondir_path) return commondir_path.error();
    auto common = holdDir((*commondir_path)[0] == '/' ? AT_FDCWD : git_dir->get(), *commondir_path);
    if (!common) return common.error().withContext(commondir_shown);
    if (common->path != common_path)
        return Error::message(commondir_shown + " names " + common->path + ", not " + common_path);
    if (auto s = outsideWritable(common->path, writable, "the common dir"); !s) return s.error();
    // (e) the .git directory of a checkout, not a directory laid out as one.
    if (baseOf(common->path) != ".git")
        return Error::message("the common dir " + common->path +
                              " is not a checkout's .git directory (a bare repository, or a "
                              "layout an earlier run could have written, is never exposed)");

    // (d) a git dir, and one of the worktree owner's (or root's): a third
    // user's directory is not theirs to lend, whatever it holds.
    struct stat head {
    }, objects{}, refs{};
    if (fstatat(common->get(), "HEAD", &head, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(head.st_mode) ||
        fstatat(common->get(), "objects", &objects, AT_SYMLINK_NOFOLLOW) < 0 ||
        !S_ISDIR(objects.st_mode) ||
        fstatat(common->get(), "refs", &refs, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(refs.st_mode))
        return Error::message("the common dir " + common->path +
                              " has no HEAD, objects/ and refs/ of a git dir");
    using Owned = std::pair<const struct stat*, const std::string*>;
    for (const auto& [st, what] :
         {Owned{&common->st, &common->path}, Owned{&git_dir->st, &git_dir->path},
          Owned{&back->st, &back_shown}})
        if (!ownedByOwnerOrRoot(*st, wt.st_uid))
            return Error::message(*what + " is owned by uid " + std::to_string(st->st_uid) +
                                  ", neither the worktree's owner (" + std::to_string(wt.st_uid) +
                                  ") nor root");
    link.kind = GitLink::Kind::Linked;
    link.git_dir = std::move(*git_dir);
    link.common_dir = std::move(*common);
    return link;
}

}  // namespace stockade
