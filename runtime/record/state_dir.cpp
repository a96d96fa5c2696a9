#include "runtime/record/state_dir.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <sstream>

namespace stockade {

namespace {

// A runtime directory of this user's own: $XDG_RUNTIME_DIR, or where
// pam_systemd makes it (/run/user/UID), which a shell opened without a login
// session (su, sudo -u, cron, a CI agent) lacks in its environment.
// A runtime directory that is the user's own, and its identity.
struct RuntimeDir {
    std::string path;
    dev_t dev;
    ino_t ino;
};
std::optional<RuntimeDir> ownRuntimeDir(const char* dir, uid_t uid) {
    struct stat st;
    if (!dir || dir[0] != '/' || stat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid)
        return std::nullopt;
    return RuntimeDir{dir, st.st_dev, st.st_ino};
}

// The directory every shell of this user can name whatever its environment
// (the last candidate: no variable decides it), and in it the register of
// the state directories this user's servers were started from. A shell
// cannot guess another shell's $XDG_RUNTIME_DIR; it can read this.
std::string anchorPath() {
    return "/tmp/stockade-" + std::to_string(geteuid());
}

// Every place this user's servers may be recorded, the one to use first;
// one directory named twice ("/run/user/1000/", a link to it) is listed once.
std::vector<std::string> candidatePaths() {
    uid_t uid = geteuid();
    if (uid == 0) return {"/run/stockade"};
    const std::string systemd = "/run/user/" + std::to_string(uid);
    std::vector<RuntimeDir> dirs;
    for (const auto& dir :
         {ownRuntimeDir(std::getenv("XDG_RUNTIME_DIR"), uid), ownRuntimeDir(systemd.c_str(), uid)})
        if (dir && std::none_of(dirs.begin(), dirs.end(), [&](const RuntimeDir& seen) {
                return seen.dev == dir->dev && seen.ino == dir->ino;
            }))
            dirs.push_back(*dir);
    std::vector<std::string> paths;
    for (const RuntimeDir& dir : dirs) paths.push_back(dir.path + "/stockade");
    paths.push_back(anchorPath());
    return paths;
}

Status checkPrivate(const std::string& path, uid_t uid) {
    struct stat st;
    if (lstat(path.c_str(), &st) < 0) return Error::fromErrno("lstat(\"" + path + "\")");
    if (!S_ISDIR(st.st_mode) || st.st_uid != uid || (st.st_mode & 077) != 0) {
        std::ostringstream why;
        why << "the state directory " << path << " is not private to uid " << uid << " (owner "
            << st.st_uid << ", mode " << std::oct << (st.st_mode & 07777)
            << "); remove it and retry";
        return Error::message(why.str());
    }
    return okStatus();
}

std::string registerPath() {
    return anchorPath() + "/elsewhere";
}

// One entry per directory, named by its identity so that two paths of one
// directory are one entry and re-registering is idempotent.
std::string registerEntry(const struct stat& st) {
    return std::to_string(st.st_dev) + "-" + std::to_string(st.st_ino);
}

// The registered directories that still exist, are private to this user and
// are the directory they were registered as; other entries are removed. A
// register only this user can write names only this user's directories, and
// each is checked again here as any candidate is.
std::vector<std::string> registeredPaths() {
    std::vector<std::string> out;
    const std::string reg = registerPath();
    if (!checkPrivate(anchorPath(), geteuid()) || !checkPrivate(reg, geteuid())) return out;
    DIR* d = opendir(reg.c_str());
    if (!d) return out;
    while (dirent* e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        const std::string link = reg + "/" + e->d_name;
        char target[4096];
        ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
        if (n <= 0) continue;
        target[n] = '\0';
        struct stat st;
        if (target[0] != '/' || lstat(target, &st) < 0 || registerEntry(st) != e->d_name ||
            !checkPrivate(target, geteuid())) {
            unlink(link.c_str());  // a directory gone (a logout) or replaced
            continue;
        }
        out.emplace_back(target);
    }
    closedir(d);
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

std::vector<std::string> otherUserStateDirs(const std::string& primary) {
    std::vector<std::string> out;
    std::vector<std::pair<dev_t, ino_t>> seen;
    struct stat st;
    if (stat(primary.c_str(), &st) == 0) seen.emplace_back(st.st_dev, st.st_ino);
    std::vector<std::string> paths = candidatePaths();
    for (std::string& path : registeredPaths()) paths.push_back(std::move(path));
    for (const std::string& path : paths) {
        if (path == primary || lstat(path.c_str(), &st) < 0) continue;
        const std::pair<dev_t, ino_t> id{st.st_dev, st.st_ino};
        if (std::find(seen.begin(), seen.end(), id) != seen.end()) continue;
        if (checkPrivate(path, geteuid())) {
            seen.push_back(id);
            out.push_back(path);
        }
    }
    return out;
}

Status registerUserStateDir(const std::string& path) {
    if (geteuid() == 0) return okStatus();  // root has one directory, /run/stockade
    const std::string anchor = anchorPath();
    if (path == anchor) return okStatus();
    const std::string reg = registerPath();
    for (const std::string& dir : {anchor, reg}) {
        if (mkdir(dir.c_str(), 0700) < 0 && errno != EEXIST)
            return Error::fromErrno("mkdir(\"" + dir + "\")");
        if (Status s = checkPrivate(dir, geteuid()); !s) return s;
    }
    struct stat st;
    if (lstat(path.c_str(), &st) < 0) return Error::fromErrno("lstat(\"" + path + "\")");
    const std::string link = reg + "/" + registerEntry(st);
    if (symlink(path.c_str(), link.c_str()) == 0) return okStatus();
    if (errno != EEXIST) return Error::fromErrno("symlink(\"" + path + "\" -> \"" + link + "\")");
    // This directory, registered before under another name of it: renamed.
    char target[4096];
    ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
    if (n > 0 && std::string(target, static_cast<size_t>(n)) == path) return okStatus();
    const std::string fresh = link + ".new";
    unlink(fresh.c_str());
    if (symlink(path.c_str(), fresh.c_str()) < 0 || rename(fresh.c_str(), link.c_str()) < 0)
        return Error::fromErrno("replace \"" + link + "\" with a link to \"" + path + "\"");
    return okStatus();
}

Result<std::string> openUserStateDir() {
    uid_t uid = geteuid();
    std::string path = candidatePaths().front();
    if (mkdir(path.c_str(), 0700) < 0 && errno != EEXIST)
        return Error::fromErrno("mkdir(\"" + path + "\") for stockade's state, as uid " +
                                std::to_string(uid));
    if (Status s = checkPrivate(path, uid); !s) return s.error();
    return path;
}

}  // namespace stockade
