#include "base/host_path.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <ctime>

namespace stockade {

namespace {

Result<std::string> canonicalOf(int fd) {
    char buf[PATH_MAX];
    std::string link = "/proc/self/fd/" + std::to_string(fd);
    ssize_t n = readlink(link.c_str(), buf, sizeof(buf) - 1);
    if (n < 0) return Error::fromErrno("readlink(\"" + link + "\")");
    return std::string(buf, static_cast<size_t>(n));
}

Result<std::string> absoluteOf(const std::string& path) {
    if (!path.empty() && path[0] == '/') return path;
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof(cwd))) return Error::fromErrno("getcwd()");
    return std::string(cwd) + "/" + path;
}

// One component at a time from "/", O_NOFOLLOW: a symlink is opened as
// itself (O_PATH) and seen by fstat, so it can be named, never followed. Each
// step is relative to the fd of the one before, so a rename above a checked
// component does not change what is reached.
Result<UniqueFd> openNoSymlinks(const std::string& option, const std::string& given,
                                const std::string& absolute) {
    UniqueFd dir(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!dir) return Error::fromErrno("open(\"/\")");
    std::string walked;
    size_t pos = 0;
    while (pos < absolute.size()) {
        size_t next = absolute.find('/', pos);
        if (next == std::string::npos) next = absolute.size();
        std::string component = absolute.substr(pos, next - pos);
        pos = next + 1;
        if (component.empty() || component == ".") continue;
        walked += "/" + component;
        UniqueFd fd(openat(dir.get(), component.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
        if (!fd)
            return Error::fromErrno(option + " " + given + ": open(\"" + walked + "\") as uid " +
                                    std::to_string(geteuid()));
        struct stat st;
        if (fstat(fd.get(), &st) < 0) return Error::fromErrno("fstat(\"" + walked + "\")");
        if (S_ISLNK(st.st_mode))
            return Error::message(option + " " + given + ": " + walked +
                                  " is a symlink; refusing to follow it (a sandbox may have "
                                  "planted it; --follow-symlinks resolves it once)");
        dir = std::move(fd);
    }
    return dir;
}

}  // namespace

Result<HeldPath> holdHostPath(const std::string& option, const std::string& path,
                              bool follow_symlinks) {
    if (path.empty()) return Error::message(option + ": empty path");
    auto absolute = absoluteOf(path);
    if (!absolute) return absolute.error();
    UniqueFd fd;
    if (follow_symlinks) {
        fd.reset(open(absolute->c_str(), O_PATH | O_CLOEXEC));
        if (!fd)
            return Error::fromErrno(option + " " + path + ": open(\"" + *absolute + "\") as uid " +
                                    std::to_string(geteuid()));
    } else {
        auto opened = openNoSymlinks(option, path, *absolute);
        if (!opened) return opened.error();
        fd = std::move(*opened);
    }
    HeldPath held;
    if (fstat(fd.get(), &held.st) < 0) return Error::fromErrno(option + " " + path + ": fstat");
    auto canonical = canonicalOf(fd.get());
    if (!canonical) return canonical.error();
    held.path = *canonical;
    held.fd = std::make_shared<UniqueFd>(std::move(fd));
    return held;
}

void pauseAfterOpenForTests() {
    const char* value = getenv("STOCKADE_TEST_PAUSE_AFTER_OPEN");
    if (!value || !*value) return;
    long ms = strtol(value, nullptr, 10);
    if (ms <= 0 || ms > 60000) return;
    timespec ts{ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

}  // namespace stockade
