// What the probe may read, write, create and see of the file tree.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <initializer_list>

#include "actions.h"
#include "common.h"

namespace probe {

namespace {

constexpr size_t kMaxContent = 4096;

// Whether `path` lies under one of `places` (each ending in '/') with no
// "/../" to climb out: a broken sandbox has no /repo, so the actions that
// create names can touch nothing of the host's.
bool isUnder(const std::string& path, std::initializer_list<std::string_view> places) {
    if (path.find("/../") != std::string::npos) return false;
    for (const std::string_view place : places) {
        if (path.rfind(place, 0) == 0) return true;
    }
    return false;
}

const char* fileType(mode_t mode) {
    switch (mode & S_IFMT) {
        case S_IFREG:
            return "file";
        case S_IFDIR:
            return "dir";
        case S_IFLNK:
            return "symlink";
        case S_IFCHR:
            return "char";
        case S_IFBLK:
            return "block";
        case S_IFIFO:
            return "fifo";
        case S_IFSOCK:
            return "socket";
        default:
            return "unknown";
    }
}

}  // namespace

int readFile(const Args& a) {
    std::string content;
    const int rc = readSome(a[0].c_str(), content, kMaxContent);
    emit("result", errName(-rc));
    if (rc == 0) emitContent(content);
    return 0;
}

// read-file for each of a newline-separated list of paths, in one run:
// `read=ERR PATH` per path (the path escaped), then its bytes and content.
int readEach(const Args& a) {
    for (const std::string& path : split(a[0], '\n')) {
        if (path.empty()) continue;
        std::string content;
        const int rc = readSome(path.c_str(), content, kMaxContent);
        emit("read", errName(-rc) + " " + escape(path));
        if (rc == 0) emitContent(content);
    }
    return 0;
}

// open-write for each of a newline-separated list of paths (O_WRONLY, no
// O_CREAT, no O_TRUNC; nothing written): `write=ERR PATH` per path.
int openWriteEach(const Args& a) {
    for (const std::string& path : split(a[0], '\n')) {
        if (path.empty()) continue;
        const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        const int err = errno;
        if (fd >= 0) ::close(fd);
        emit("write", (fd >= 0 ? std::string("ok") : errName(err)) + " " + escape(path));
    }
    return 0;
}

// Opens for writing without O_CREAT or O_TRUNC, writes nothing.
int openWrite(const Args& a) {
    return reportOpened(::open(a[0].c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
}

// Writes a file's own current content back over it, from offset 0 in one
// write (as /proc/sys files require). Harmless when it succeeds.
int rewriteSame(const Args& a) {
    std::string content;
    const int rc = readSome(a[0].c_str(), content, 1 << 16);
    if (rc < 0) {
        emit("stage", "read");
        emit("result", errName(-rc));
        return 0;
    }
    const int fd = ::open(a[0].c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        emit("stage", "open");
        return reportCall(fd);
    }
    const ssize_t n = ::write(fd, content.data(), content.size());
    const int err = errno;
    ::close(fd);
    emit("stage", "write");
    emitResult(n, err);
    return 0;
}

// Asks whether a new file may be created in DIR without leaving one behind:
// an O_TMPFILE file has no name and vanishes on close. The kernel checks a
// read-only mount (EROFS) and directory permissions (EACCES) first.
int createIn(const Args& a) {
    return reportOpened(::open(a[0].c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600));
}

// Creates a named file; only under the sandbox's own writable places, so that
// a broken sandbox cannot make it litter the host.
int createFile(const Args& a) {
    const std::string& path = a[0];
    if (!isUnder(path, {"/repo/", "/tmp/", "/var/tmp/"})) {
        emit("error", "create-file only writes under /repo/, /tmp/ or /var/tmp/");
        return 2;
    }
    const int fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) return reportCall(fd);
    const ssize_t n = ::write(fd, a[1].data(), a[1].size());
    const int err = errno;
    ::close(fd);
    emitResult(n, err);
    return 0;
}

// lstat plus the mount's read-only flag and filesystem magic.
int statPath(const Args& a) {
    struct stat st {};
    if (::lstat(a[0].c_str(), &st) < 0) return reportCall(-1);
    emit("result", "ok");
    emit("type", fileType(st.st_mode));
    char buf[32];
    std::snprintf(buf, sizeof buf, "%o", st.st_mode & 07777);
    emit("mode", buf);
    emit("uid", std::to_string(st.st_uid));
    emit("gid", std::to_string(st.st_gid));
    emit("rdev", std::to_string(major(st.st_rdev)) + ":" + std::to_string(minor(st.st_rdev)));
    emit("size", std::to_string(st.st_size));
    // These two follow a symlink: they describe the mount the path leads to.
    struct statvfs vfs {};
    if (::statvfs(a[0].c_str(), &vfs) == 0) emit("readonly", (vfs.f_flag & ST_RDONLY) ? "1" : "0");
    struct statfs fs {};
    if (::statfs(a[0].c_str(), &fs) == 0) {
        std::snprintf(buf, sizeof buf, "0x%lx", static_cast<unsigned long>(fs.f_type));
        emit("fsmagic", buf);
    }
    return 0;
}

int listDir(const Args& a) {
    std::vector<std::string> names;
    const int rc = listNames(a[0].c_str(), names);
    emit("result", errName(-rc));
    for (const std::string& name : names) emit("entry", name);
    return 0;
}

int readLink(const Args& a) {
    char buf[4096];
    const ssize_t n = ::readlink(a[0].c_str(), buf, sizeof buf);
    emitResult(n, errno);
    if (n >= 0) emit("target", std::string_view(buf, static_cast<size_t>(n)));
    return 0;
}

// Links within /repo (or /tmp) and, if that worked, removes the new name.
int linkFile(const Args& a) {
    if (!isUnder(a[1], {"/repo/", "/tmp/"})) {
        emit("error", "link only creates names under /repo/ or /tmp/");
        return 2;
    }
    const int rc = ::link(a[0].c_str(), a[1].c_str());
    const int err = errno;
    if (rc == 0) ::unlink(a[1].c_str());
    emitResult(rc, err);
    return 0;
}

// Renames within /repo (or /tmp) and, if that worked, puts the name back.
int renamePath(const Args& a) {
    if (!isUnder(a[0], {"/repo/", "/tmp/"}) || !isUnder(a[1], {"/repo/", "/tmp/"})) {
        emit("error", "rename only works under /repo/ or /tmp/");
        return 2;
    }
    const int rc = ::rename(a[0].c_str(), a[1].c_str());
    const int err = errno;
    if (rc == 0) ::rename(a[1].c_str(), a[0].c_str());
    emitResult(rc, err);
    return 0;
}

int cwd(const Args&) {
    char buf[4096];
    emit("value", ::getcwd(buf, sizeof buf) != nullptr ? buf : errName(errno));
    return 0;
}

}  // namespace probe
