#include "base/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

namespace stockade {

Result<UniqueFd> lockFileExclusive(const std::string& path, bool create) {
    for (int attempt = 0; attempt < 8; ++attempt) {
        UniqueFd fd(
            ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), 0600));
        if (!fd) return Error::fromErrno("open(\"" + path + "\")");
        if (flock(fd.get(), LOCK_EX | LOCK_NB) < 0)
            return Error::fromErrno("flock(\"" + path + "\")");
        struct stat held, named;
        if (fstat(fd.get(), &held) == 0 && stat(path.c_str(), &named) == 0 &&
            held.st_ino == named.st_ino && held.st_dev == named.st_dev)
            return fd;
    }
    return Error::message("the lock file " + path + " keeps changing");
}

}  // namespace stockade
