#include "runtime/record/record_path.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "base/inherited_fds.h"
#include "base/unique_fd.h"
#include "runtime/policy/sandbox_path.h"
#include "runtime/policy/writable_trees.h"

namespace stockade {

namespace {

std::optional<int> heldFd(const std::string& path) {
    if (path == "/dev/stdout") return 1;
    if (path == "/dev/stderr") return 2;
    for (std::string_view prefix : {"/dev/fd/", "/proc/self/fd/"}) {
        if (!path.starts_with(prefix)) continue;
        const std::string digits = path.substr(prefix.size());
        if (digits.empty() || digits.size() > 9 ||
            digits.find_first_not_of("0123456789") != std::string::npos)
            return std::nullopt;
        return std::stoi(digits);
    }
    return std::nullopt;
}

std::string directoryOf(const std::string& file) {
    const size_t slash = file.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : file.substr(0, slash);
}

// Whether stockade, as the user it runs as, can leave the record where
// writeRecord will: a new file in the directory (an O_TMPFILE, which leaves
// nothing behind, or, where the filesystem has none, a named one removed at
// once), renamed over what is there. Asked before the run, so a record that
// could never be written is a refusal (nothing run), not a run whose record
// a harness then finds missing or stale.
Status checkWritable(const std::string& what, const RecordTarget& target) {
    const std::string as = " as uid " + std::to_string(geteuid());
    UniqueFd dir(open(target.dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!dir) return Error::fromErrno(what + ": open(\"" + target.dir + "\")" + as);
    auto cannot = [&](int err) {
        return Error::fromErrno(what + ": cannot create a file in " + target.dir + as +
                                    " (give a path this user can write)",
                                err);
    };
    int probe = openat(dir.get(), ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    if (probe < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
        uint32_t nonce = 0;
        if (getrandom(&nonce, sizeof(nonce), 0) != static_cast<ssize_t>(sizeof(nonce)))
            return Error::fromErrno("getrandom()");
        char name[32];
        std::snprintf(name, sizeof(name), ".stockade-probe.%08x", nonce);
        probe = openat(dir.get(), name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (probe >= 0) unlinkat(dir.get(), name, 0);
    }
    if (probe < 0) return cannot(errno);
    close(probe);
    // In a sticky directory (/tmp) only the owner of a file, of the
    // directory, or root may rename over it (rename(2), EPERM).
    struct stat d, f;
    if (geteuid() != 0 && fstat(dir.get(), &d) == 0 && (d.st_mode & S_ISVTX) &&
        d.st_uid != geteuid() &&
        fstatat(dir.get(), target.name.c_str(), &f, AT_SYMLINK_NOFOLLOW) == 0 &&
        f.st_uid != geteuid())
        return Error::message(what + ": " + target.dir + "/" + target.name + " belongs to uid " +
                              std::to_string(f.st_uid) + ", and in the sticky directory " +
                              target.dir + " uid " + std::to_string(geteuid()) +
                              " cannot replace it (give a path of your own)");
    return okStatus();
}

}  // namespace

Result<RecordTarget> resolveRecordTarget(const std::string& flag, const std::string& path,
                                         const std::vector<std::string>& writable) {
    const std::string what = flag + " " + path;
    auto refusedInside = [&](const std::string& tree) {
        return Error::message(what + ": inside " + tree +
                              ", which the sandbox can write (it could plant its own record "
                              "there, or redirect this one); give a path outside it");
    };
    RecordTarget target;
    if ((target.held_fd = heldFd(path))) {
        // The caller's own descriptor, open before stockade made any: never
        // one of stockade's (a held worktree, a lock, a cgroup or state
        // file), and open for writing, else the record is lost after the run.
        const int fd = *target.held_fd;
        const int flags = fcntl(fd, F_GETFL);
        if (flags < 0)
            return Error::fromErrno(what + ": fcntl(" + std::to_string(fd) + ", F_GETFL)");
        if (!wasInherited(fd))
            return Error::message(what + ": fd " + std::to_string(fd) +
                                  " was not open when stockade started; give a descriptor the "
                                  "caller opened for it");
        if ((flags & O_PATH) == O_PATH || (flags & O_ACCMODE) == O_RDONLY)
            return Error::message(what + ": fd " + std::to_string(fd) + " is not open for writing");
        // Redirected to a file, that file must not be the sandbox's either.
        char real[PATH_MAX];
        if (realpath(path.c_str(), real))
            if (auto tree = writableBy(directoryOf(real), writable)) return refusedInside(*tree);
        return target;
    }
    if (path.empty() || path.ends_with('/')) return Error::message(what + ": not a file name");
    struct stat st;
    if (lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
        return Error::message(what + (S_ISLNK(st.st_mode)
                                          ? ": a symlink; give the path of the file itself"
                                          : ": not a regular file"));
    char real[PATH_MAX];
    const std::string dir = directoryOf(path);
    if (!realpath(dir.c_str(), real))
        return Error::fromErrno(what + ": the directory " + dir + " cannot be resolved as uid " +
                                std::to_string(geteuid()) + " (realpath)");
    target.dir = real;
    target.name = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
    if (target.name == "." || target.name == "..")
        return Error::message(what + ": not a file name");
    if (auto tree = writableBy(target.dir, writable)) return refusedInside(*tree);
    if (Status s = checkWritable(what, target); !s) return s.error();
    return target;
}

Status writeRecord(const RecordTarget& target, const std::string& content) {
    auto writeAll = [&](int fd, const std::string& shown) -> Status {
        const char* p = content.data();
        size_t left = content.size();
        while (left > 0) {
            ssize_t n = write(fd, p, left);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return Error::fromErrno("write(\"" + shown + "\")", n < 0 ? errno : EIO);
            p += n;
            left -= static_cast<size_t>(n);
        }
        return okStatus();
    };
    if (target.held_fd) return writeAll(*target.held_fd, "fd " + std::to_string(*target.held_fd));

    // No component of the canonical directory can have changed: each lies
    // outside what the sandbox can write (resolveRecordTarget). The name is
    // replaced by rename, never followed.
    UniqueFd dir(open(target.dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!dir) return Error::fromErrno("open(\"" + target.dir + "\")");
    uint32_t nonce = 0;
    if (getrandom(&nonce, sizeof(nonce), 0) != static_cast<ssize_t>(sizeof(nonce)))
        return Error::fromErrno("getrandom()");
    char suffix[16];
    std::snprintf(suffix, sizeof(suffix), ".%08x", nonce);
    const std::string tmp = "." + target.name.substr(0, 200) + suffix;
    auto fail = [&](Error error) {
        unlinkat(dir.get(), tmp.c_str(), 0);
        unlinkat(dir.get(), target.name.c_str(), 0);
        return error;
    };
    UniqueFd file(
        openat(dir.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!file) return fail(Error::fromErrno("openat(\"" + target.dir + "/" + tmp + "\")"));
    if (Status s = writeAll(file.get(), target.dir + "/" + tmp); !s) return fail(s.error());
    if (close(file.release()) < 0)
        return fail(Error::fromErrno("close(\"" + target.dir + "/" + tmp + "\")"));
    if (renameat(dir.get(), tmp.c_str(), dir.get(), target.name.c_str()) < 0)
        return fail(Error::fromErrno("renameat(\"" + tmp + "\" -> \"" + target.dir + "/" +
                                     target.name + "\")"));
    return okStatus();
}

}  // namespace stockade
