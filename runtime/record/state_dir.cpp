#include "runtime/record/state_dir.h"

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
    paths.push_back("/tmp/stockade-" + std::to_string(uid));
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

}  // namespace

std::vector<std::string> otherUserStateDirs(const std::string& primary) {
    std::vector<std::string> out;
    for (const std::string& path : candidatePaths()) {
        struct stat st;
        if (path == primary || lstat(path.c_str(), &st) < 0) continue;
        if (checkPrivate(path, geteuid())) out.push_back(path);
    }
    return out;
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
