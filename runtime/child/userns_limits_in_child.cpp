#include "runtime/child/userns_limits_in_child.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace stockade {

namespace {

// Decimal digits of `value` into `out` (no terminator); their count.
int formatInChild(uint32_t value, char* out) noexcept {
    char reversed[10];
    int n = 0;
    do {
        reversed[n++] = static_cast<char>('0' + value % 10);
        value /= 10;
    } while (value != 0);
    for (int i = 0; i < n; ++i) out[i] = reversed[n - 1 - i];
    return n;
}

int writeValueInChild(const char* path, uint32_t value) noexcept {
    if (value == 0) return 0;
    // /proc/sys/user is the namespace of the opener: this process's own.
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return errno;
    char text[12];
    int len = formatInChild(value, text);
    text[len++] = '\n';
    ssize_t written = write(fd, text, static_cast<size_t>(len));
    int err = written == len ? 0 : (written < 0 ? errno : EIO);
    close(fd);
    return err;
}

}  // namespace

int boundUserNamespaceInChild(const UserNamespaceBounds& bounds) noexcept {
    if (int err =
            writeValueInChild("/proc/sys/user/max_inotify_instances", bounds.inotify_instances))
        return err;
    return writeValueInChild("/proc/sys/user/max_inotify_watches", bounds.inotify_watches);
}

}  // namespace stockade
