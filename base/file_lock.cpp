#include "base/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

namespace stockade {

Result<UniqueFd> lockFileExclusive(const std::string& path, bool create) {
    return lockFileExclusiveAt(AT_FDCWD, path, path, create);
}

Result<UniqueFd> lockFileExclusiveAt(int dir_fd, const std::string& name, const std::string& shown,
                                     bool create) {
    for (int attempt = 0; attempt < 8; ++attempt) {
        UniqueFd fd(::openat(dir_fd, name.c_str(),
                             O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), 0600));
        if (!fd) return Error::fromErrno("open(\"" + shown + "\")");
        if (flock(fd.get(), LOCK_EX | LOCK_NB) < 0)
            return Error::fromErrno("flock(\"" + shown + "\")");
        struct stat held, named;
        if (fstat(fd.get(), &held) == 0 &&
            fstatat(dir_fd, name.c_str(), &named, AT_SYMLINK_NOFOLLOW) == 0 &&
            held.st_ino == named.st_ino && held.st_dev == named.st_dev)
            return fd;
    }
    return Error::message("the lock file " + shown + " keeps changing");
}

}  // namespace stockade
