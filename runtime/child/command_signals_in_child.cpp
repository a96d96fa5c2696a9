#include "runtime/child/command_signals_in_child.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <initializer_list>

#include "namespaces/syscalls.h"

namespace stockade {

sigset_t containerInitSignals() noexcept {
    sigset_t set;
    sigfillset(&set);
    for (int sig : {SIGKILL, SIGSTOP, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS})
        sigdelset(&set, sig);
    return set;
}

bool parseCaughtSignals(const char* text, size_t length, uint64_t* mask) noexcept {
    static constexpr char kField[] = "SigCgt:";
    constexpr size_t kFieldLength = sizeof(kField) - 1;
    size_t at = 0;
    while (at < length) {
        size_t end = at;
        while (end < length && text[end] != '\n') ++end;
        bool named = end - at >= kFieldLength;
        for (size_t i = 0; named && i < kFieldLength; ++i) named = text[at + i] == kField[i];
        if (named) {
            size_t i = at + kFieldLength;
            while (i < end && (text[i] == '\t' || text[i] == ' ')) ++i;
            // The kernel prints the mask as 16 hex digits (render_sigset_t).
            if (end - i != 16) return false;
            uint64_t value = 0;
            for (; i < end; ++i) {
                char c = text[i];
                int digit = c >= '0' && c <= '9'   ? c - '0'
                            : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                                   : -1;
                if (digit < 0) return false;
                value = value << 4 | static_cast<uint64_t>(digit);
            }
            *mask = value;
            return true;
        }
        at = end + 1;
    }
    return false;
}

namespace {

int openStatusInChild(pid_t command) noexcept {
    // "/proc/<pid>/status", formatted by hand: no stdio on the child side.
    char path[32] = "/proc/";
    char digits[12];
    int count = 0;
    for (unsigned value = static_cast<unsigned>(command); count == 0 || value; value /= 10)
        digits[count++] = static_cast<char>('0' + value % 10);
    size_t len = 6;
    while (count) path[len++] = digits[--count];
    const char tail[] = "/status";
    for (size_t i = 0; i < sizeof(tail); ++i) path[len++] = tail[i];
    // The container's /proc is the command's to remount: no link is
    // followed to another file, and what opens must be procfs.
    open_how how{};
    how.flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    int fd = ns::sysOpenat2(AT_FDCWD, path, &how);
    if (fd < 0) return -1;
    struct statfs fs {};
    if (fstatfs(fd, &fs) < 0 || fs.f_type != PROC_SUPER_MAGIC) {
        close(fd);
        return -1;
    }
    return fd;
}

}  // namespace

bool commandTakesSignalInChild(pid_t command, int sig, int* status_fd) noexcept {
    if (sig == SIGCONT) return true;
    if (*status_fd < 0) *status_fd = openStatusInChild(command);
    if (*status_fd < 0) return true;
    // About 1.5 KiB today; SigCgt sits in its first half.
    char text[4096];
    ssize_t got;
    while ((got = pread(*status_fd, text, sizeof(text), 0)) < 0 && errno == EINTR) {
    }
    uint64_t caught = 0;
    if (got <= 0 || !parseCaughtSignals(text, static_cast<size_t>(got), &caught)) return true;
    return caught & (uint64_t{1} << (sig - 1));
}

}  // namespace stockade
