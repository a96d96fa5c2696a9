#include "runtime/child/command_signals_in_child.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <time.h>
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

bool parseSignalMask(const char* text, size_t length, const char* field, uint64_t* mask) noexcept {
    size_t field_length = 0;
    while (field[field_length]) ++field_length;
    size_t at = 0;
    while (at < length) {
        size_t end = at;
        while (end < length && text[end] != '\n') ++end;
        bool named = end - at >= field_length;
        for (size_t i = 0; named && i < field_length; ++i) named = text[at + i] == field[i];
        if (named) {
            size_t i = at + field_length;
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

// "/proc/<pid>/<name>", formatted by hand (no stdio on the child side),
// opened without following a link and kept only when it is procfs.
int openProcFileInChild(pid_t pid, const char* name) noexcept {
    char path[48] = "/proc/";
    char digits[12];
    int count = 0;
    for (unsigned value = static_cast<unsigned>(pid); count == 0 || value; value /= 10)
        digits[count++] = static_cast<char>('0' + value % 10);
    size_t len = 6;
    while (count) path[len++] = digits[--count];
    path[len++] = '/';
    for (size_t i = 0; name[i] && len < sizeof(path) - 1; ++i) path[len++] = name[i];
    path[len] = '\0';
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

ssize_t readAllInChild(int fd, char* buf, size_t size) noexcept {
    ssize_t got;
    while ((got = pread(fd, buf, size, 0)) < 0 && errno == EINTR) {
    }
    return got;
}

bool contains(const char* text, size_t length, const char* word) noexcept {
    size_t word_length = 0;
    while (word[word_length]) ++word_length;
    for (size_t at = 0; at + word_length <= length; ++at) {
        size_t i = 0;
        while (i < word_length && text[at + i] == word[i]) ++i;
        if (i == word_length) return true;
    }
    return false;
}

}  // namespace

CommandProcFiles openCommandProcFilesInChild(pid_t command) noexcept {
    return {openProcFileInChild(command, "status"), openProcFileInChild(command, "wchan"),
            openProcFileInChild(command, "stat")};
}

bool commandTakesSignalInChild(const CommandProcFiles& files, int sig) noexcept {
    if (sig == SIGCONT) return true;
    if (files.status_fd < 0) return true;
    // About 1.5 KiB today; the signal masks sit in its first half.
    char text[4096];
    ssize_t got = readAllInChild(files.status_fd, text, sizeof(text));
    uint64_t caught = 0, blocked = 0;
    if (got <= 0 || !parseSignalMask(text, static_cast<size_t>(got), "SigCgt:", &caught) ||
        !parseSignalMask(text, static_cast<size_t>(got), "SigBlk:", &blocked))
        return true;
    const uint64_t bit = uint64_t{1} << (sig - 1);
    if ((caught | blocked) & bit) return true;
    // Neither caught nor blocked: dropped, unless the command sleeps in
    // sigtimedwait for it (tini, dumb-init's sigwait) or this cannot be
    // told: the kernel prints "0" for a running task and for a reader
    // without ptrace access to it (proc_pid_wchan).
    if (files.wchan_fd < 0) return true;
    char wchan[128];
    for (int look = 0; look < 50; ++look) {
        got = readAllInChild(files.wchan_fd, wchan, sizeof(wchan));
        if (got <= 0) return true;
        if (!(got == 1 && wchan[0] == '0'))
            // do_sigtimedwait (with a compiler's suffix: "do_sigtimedwait.isra.0").
            return contains(wchan, static_cast<size_t>(got), "sigtimedwait");
        // "0": running, or not ours to read. Only a running command (state
        // R in its stat, after the name's last ')') is looked at again.
        if (files.stat_fd < 0) return true;
        got = readAllInChild(files.stat_fd, text, sizeof(text));
        if (got <= 0) return true;
        const char* state = nullptr;
        for (ssize_t i = got - 1; i > 0; --i)
            if (text[i] == ')') {
                state = i + 2 < got ? text + i + 2 : nullptr;
                break;
            }
        if (!state || *state != 'R') return true;
        struct timespec pause_for {
            0, 1000 * 1000
        };
        nanosleep(&pause_for, nullptr);
    }
    return true;
}

}  // namespace stockade
