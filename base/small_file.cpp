#include "base/small_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "base/unique_fd.h"

namespace stockade {

Result<SmallFile> readSmallFile(int dir_fd, const char* name, const std::string& shown,
                                size_t max_bytes) {
    UniqueFd fd(openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    if (!fd) return Error::fromErrno("open(\"" + shown + "\", O_NOFOLLOW)");
    SmallFile out;
    if (fstat(fd.get(), &out.st) < 0) return Error::fromErrno("fstat(\"" + shown + "\")");
    if (!S_ISREG(out.st.st_mode)) return Error::message(shown + " is not a regular file");
    const std::string too_large =
        shown + " is larger than " + std::to_string(max_bytes) + " bytes, more than it can be";
    if (static_cast<uint64_t>(out.st.st_size) > max_bytes) return Error::message(too_large);
    // Sized by the file, one byte over, so that a file that grows while read
    // is seen to; the buffer grows with it up to one byte more than the bound
    // (a bound of many megabytes costs nothing for a small file).
    const size_t limit = max_bytes + 1;
    // (/proc's files say size 0: a page to start.)
    out.content.resize(
        std::min<size_t>(std::max<size_t>(static_cast<size_t>(out.st.st_size) + 1, 4096), limit));
    size_t used = 0;
    while (used < limit) {
        if (used == out.content.size())
            out.content.resize(std::min<size_t>(out.content.size() * 2, limit));
        ssize_t n = read(fd.get(), out.content.data() + used, out.content.size() - used);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return Error::fromErrno("read(\"" + shown + "\")");
        if (n == 0) break;
        used += static_cast<size_t>(n);
    }
    if (used > max_bytes) return Error::message(too_large);
    out.content.resize(used);
    return out;
}

Status writeNewSmallFile(int dir_fd, const char* name, const std::string& shown,
                         const std::string& content, mode_t mode) {
    UniqueFd fd(openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
    if (!fd) return Error::fromErrno("open(\"" + shown + "\", O_CREAT|O_EXCL)");
    for (size_t done = 0; done < content.size();) {
        ssize_t n = write(fd.get(), content.data() + done, content.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return Error::fromErrno("write(\"" + shown + "\")");
        done += static_cast<size_t>(n);
    }
    return okStatus();
}

}  // namespace stockade
