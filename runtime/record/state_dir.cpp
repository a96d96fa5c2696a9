#include "runtime/record/state_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <sstream>

#include "base/host_path.h"
#include "runtime/policy/writable_trees.h"

namespace stockade {

namespace {

// A runtime directory that is the user's own, and its identity, judged on
// the fd it was opened as (no component a symlink).
struct RuntimeDir {
    std::string path;
    dev_t dev;
    ino_t ino;
};
// $XDG_RUNTIME_DIR, or where pam_systemd makes it (/run/user/UID), which a
// shell opened without a login session (su, sudo -u, cron, a CI agent) lacks
// in its environment.
std::optional<RuntimeDir> ownRuntimeDir(const char* dir, uid_t uid) {
    if (!dir || dir[0] != '/') return std::nullopt;
    auto held = holdHostPath("the runtime directory", dir, false);
    if (!held || !S_ISDIR(held->st.st_mode) || held->st.st_uid != uid) return std::nullopt;
    return RuntimeDir{held->path, held->st.st_dev, held->st.st_ino};
}

// A state directory: `name` in `parent`.
struct Candidate {
    std::string parent;
    std::string name;
};

// The directory every shell of this user can name whatever its environment
// (the last candidate: no variable decides it), and in it the register of
// the state directories this user's servers were started from. A shell
// cannot guess another shell's $XDG_RUNTIME_DIR; it can read this.
Candidate anchor() {
    return {"/tmp", "stockade-" + std::to_string(geteuid())};
}

// Every place this user's servers may be recorded, the one to use first;
// one directory named twice ("/run/user/1000/", a link to it) is listed once.
std::vector<Candidate> candidates() {
    uid_t uid = geteuid();
    if (uid == 0) return {{"/run", "stockade"}};
    const std::string systemd = "/run/user/" + std::to_string(uid);
    std::vector<RuntimeDir> dirs;
    for (const auto& dir :
         {ownRuntimeDir(std::getenv("XDG_RUNTIME_DIR"), uid), ownRuntimeDir(systemd.c_str(), uid)})
        if (dir && std::none_of(dirs.begin(), dirs.end(), [&](const RuntimeDir& seen) {
                return seen.dev == dir->dev && seen.ino == dir->ino;
            }))
            dirs.push_back(*dir);
    std::vector<Candidate> out;
    for (const RuntimeDir& dir : dirs) out.push_back({dir.path, "stockade"});
    out.push_back(anchor());
    return out;
}

Status checkPrivate(const struct stat& st, const std::string& path, uid_t uid) {
    if (!S_ISDIR(st.st_mode) || st.st_uid != uid || (st.st_mode & 077) != 0) {
        std::ostringstream why;
        why << "the state directory " << path << " is not private to uid " << uid << " (owner "
            << st.st_uid << ", mode " << std::oct << (st.st_mode & 07777)
            << "); remove it and retry";
        return Error::message(why.str());
    }
    return okStatus();
}

// `name` beneath the held directory `parent_fd` (shown as `path`), created
// 0700 when asked, opened without following a link and judged on the fd.
Result<HeldStateDir> openPrivateAt(int parent_fd, const std::string& name, const std::string& path,
                                   bool create) {
    const uid_t uid = geteuid();
    if (create && mkdirat(parent_fd, name.c_str(), 0700) < 0 && errno != EEXIST)
        return Error::fromErrno("mkdirat(\"" + path + "\", 0700) for stockade's state, as uid " +
                                std::to_string(uid));
    UniqueFd fd(openat(parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) {
        const int err = errno;
        // Another user's directory, closed to this one: named as such.
        struct stat st;
        if (err == EACCES && fstatat(parent_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0)
            if (Status s = checkPrivate(st, path, uid); !s) return s.error();
        errno = err;
        if (errno == ELOOP || errno == ENOTDIR)
            return Error::message("the state directory " + path +
                                  " is not a directory (a symlink or a file, which someone "
                                  "else may have planted); remove it and retry");
        return Error::fromErrno("open(\"" + path + "\", O_DIRECTORY | O_NOFOLLOW) as uid " +
                                std::to_string(uid));
    }
    HeldStateDir held;
    if (fstat(fd.get(), &held.st) < 0) return Error::fromErrno("fstat(\"" + path + "\")");
    if (Status s = checkPrivate(held.st, path, uid); !s) return s.error();
    held.path = path;
    held.fd = std::make_shared<UniqueFd>(std::move(fd));
    return held;
}

Result<HeldStateDir> openPrivate(const Candidate& c, bool create) {
    auto parent = holdHostPath("the state directory's parent", c.parent, false);
    if (!parent) return parent.error();
    return openPrivateAt(parent->get(), c.name, parent->path + "/" + c.name, create);
}

bool sameDir(const struct stat& a, const struct stat& b) {
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

constexpr const char* kRegister = "elsewhere";

// One entry per directory, named by its identity so that two paths of one
// directory are one entry and re-registering is idempotent.
std::string registerEntry(const struct stat& st) {
    return std::to_string(st.st_dev) + "-" + std::to_string(st.st_ino);
}

// The registered directories that still exist, are private to this user and
// are the directory they were registered as; other entries are removed. A
// register only this user can write names only this user's directories, and
// each is opened and checked again here as any candidate is.
std::vector<HeldStateDir> registeredDirs() {
    std::vector<HeldStateDir> out;
    auto home = openPrivate(anchor(), false);
    if (!home) return out;
    auto reg = openPrivateAt(home->get(), kRegister, home->at(kRegister), false);
    if (!reg) return out;
    const int listing_fd = openat(reg->get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR* d = listing_fd < 0 ? nullptr : fdopendir(listing_fd);
    if (!d) {
        if (listing_fd >= 0) close(listing_fd);
        return out;
    }
    while (dirent* e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        char target[4096];
        ssize_t n = readlinkat(reg->get(), e->d_name, target, sizeof(target) - 1);
        if (n <= 0) continue;
        target[n] = '\0';
        const std::string path(target);
        const size_t slash = path.rfind('/');
        std::optional<HeldStateDir> dir;
        if (path[0] == '/' && slash != std::string::npos && slash + 1 < path.size())
            if (auto opened = openPrivate(
                    {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)}, false))
                dir = std::move(*opened);
        if (!dir || registerEntry(dir->st) != e->d_name) {
            unlinkat(reg->get(), e->d_name, 0);  // a directory gone (a logout) or replaced
            continue;
        }
        out.push_back(std::move(*dir));
    }
    closedir(d);
    std::sort(out.begin(), out.end(),
              [](const HeldStateDir& a, const HeldStateDir& b) { return a.path < b.path; });
    return out;
}

}  // namespace

std::vector<HeldStateDir> otherUserStateDirs(const HeldStateDir& primary) {
    std::vector<HeldStateDir> out;
    std::vector<struct stat> seen{primary.st};
    std::vector<HeldStateDir> dirs;
    for (const Candidate& c : candidates())
        if (auto dir = openPrivate(c, false)) dirs.push_back(std::move(*dir));
    for (HeldStateDir& dir : registeredDirs()) dirs.push_back(std::move(dir));
    for (HeldStateDir& dir : dirs) {
        if (std::any_of(seen.begin(), seen.end(),
                        [&](const struct stat& st) { return sameDir(st, dir.st); }))
            continue;
        seen.push_back(dir.st);
        out.push_back(std::move(dir));
    }
    return out;
}

Status registerUserStateDir(const HeldStateDir& dir) {
    if (geteuid() == 0) return okStatus();  // root has one directory, /run/stockade
    auto home = openPrivate(anchor(), true);
    if (!home) return home.error();
    if (sameDir(home->st, dir.st)) return okStatus();
    auto reg = openPrivateAt(home->get(), kRegister, home->at(kRegister), true);
    if (!reg) return reg.error();
    const std::string entry = registerEntry(dir.st);
    const std::string link = reg->at(entry);
    if (symlinkat(dir.path.c_str(), reg->get(), entry.c_str()) == 0) return okStatus();
    if (errno != EEXIST)
        return Error::fromErrno("symlinkat(\"" + dir.path + "\" -> \"" + link + "\")");
    // This directory, registered before under another name of it: renamed.
    char target[4096];
    ssize_t n = readlinkat(reg->get(), entry.c_str(), target, sizeof(target) - 1);
    if (n > 0 && std::string(target, static_cast<size_t>(n)) == dir.path) return okStatus();
    const std::string fresh = entry + ".new";
    unlinkat(reg->get(), fresh.c_str(), 0);
    if (symlinkat(dir.path.c_str(), reg->get(), fresh.c_str()) < 0 ||
        renameat(reg->get(), fresh.c_str(), reg->get(), entry.c_str()) < 0)
        return Error::fromErrno("replace \"" + link + "\" with a link to \"" + dir.path + "\"");
    return okStatus();
}

Status refuseWritableStateDirs(const std::vector<std::string>& writable) {
    if (writable.empty()) return okStatus();
    // Every place this user's state may be, whether it exists yet or not:
    // its parent, where it is made or replaced, and the directory itself
    // where it exists (a link there is refused when it is opened).
    std::vector<std::string> dirs;
    std::vector<std::string> shown;
    auto add = [&](const std::string& parent, const std::string& name) {
        char real[PATH_MAX];
        if (!realpath(parent.c_str(), real)) return;
        const std::string dir =
            std::string(real) == "/" ? "/" + name : std::string(real) + "/" + name;
        dirs.push_back(real);
        shown.push_back(dir);
        char own[PATH_MAX];
        if (realpath(dir.c_str(), own)) {
            dirs.push_back(own);
            shown.push_back(dir);
        }
    };
    std::vector<Candidate> places = candidates();
    if (geteuid() != 0) places.push_back(anchor());
    for (const Candidate& c : places) add(c.parent, c.name);
    for (const HeldStateDir& dir : registeredDirs()) {
        const size_t slash = dir.path.rfind('/');
        if (slash != std::string::npos)
            add(slash == 0 ? "/" : dir.path.substr(0, slash), dir.path.substr(slash + 1));
    }
    auto found = firstWritableBy(dirs, writable);
    if (!found) return okStatus();
    const size_t at =
        static_cast<size_t>(std::find(dirs.begin(), dirs.end(), found->dir) - dirs.begin());
    return Error::message(
        "the sandbox could write " + found->tree + ", which holds stockade's state directory " +
        shown[at] +
        " (dev servers' records, the oracle's files): a later run would trust what it left "
        "there; give a worktree or writable --mount that does not contain it" +
        (geteuid() == 0 ? std::string()
                        : std::string(", or set XDG_RUNTIME_DIR to a directory outside it")));
}

Result<HeldStateDir> openUserStateDir() {
    auto dir = openPrivate(candidates().front(), true);
    if (dir) pauseAfterStateDirForTests();
    return dir;
}

Status writeFileAtomicallyAt(int dir_fd, const std::string& name, const std::string& shown,
                             const std::string& content, mode_t mode) {
    const std::string tmp = "." + name + ".tmp." + std::to_string(getpid());
    UniqueFd fd(
        openat(dir_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode));
    if (!fd) return Error::fromErrno("openat(\"" + shown + "\" temporary, O_EXCL)");
    const char* p = content.data();
    size_t left = content.size();
    int err = 0;
    while (left > 0 && err == 0) {
        ssize_t n = write(fd.get(), p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            err = n < 0 ? errno : EIO;
            break;
        }
        p += n;
        left -= static_cast<size_t>(n);
    }
    if (err == 0 && close(fd.release()) < 0) err = errno;
    if (err != 0) {
        unlinkat(dir_fd, tmp.c_str(), 0);
        return Error::fromErrno("write(\"" + shown + "\")", err);
    }
    if (renameat(dir_fd, tmp.c_str(), dir_fd, name.c_str()) < 0) {
        err = errno;
        unlinkat(dir_fd, tmp.c_str(), 0);
        return Error::fromErrno("renameat(\"" + shown + "\")", err);
    }
    return okStatus();
}

namespace {}  // namespace

void pauseAfterStateDirForTests() {
    const char* value = getenv("STOCKADE_TEST_PAUSE_AFTER_STATE_DIR");
    if (!value || !*value) return;
    long ms = strtol(value, nullptr, 10);
    if (ms <= 0 || ms > 60000) return;
    timespec ts{ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

}  // namespace stockade
