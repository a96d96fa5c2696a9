#include "runtime/child/descendants_in_child.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace stockade {

namespace {

constexpr int kMaxBatch = 512;

// "123 456 " -> pids; returns how many fit in `out`.
int parsePidsInChild(const char* text, ssize_t length, pid_t* out, int room) noexcept {
    int count = 0;
    pid_t value = 0;
    bool in_number = false;
    for (ssize_t i = 0; i < length && count < room; ++i) {
        char c = text[i];
        if (c >= '0' && c <= '9') {
            value = value * 10 + (c - '0');
            in_number = true;
        } else if (in_number) {
            out[count++] = value;
            value = 0;
            in_number = false;
        }
    }
    if (in_number && count < room) out[count++] = value;
    return count;
}

// Appends "/proc/self/task/<tid>/children" for each of this process's
// threads; the process is single-threaded here, but a list per thread is
// what the kernel keeps (proc(5)), so every one is read.
int listChildrenInChild(pid_t* out, int room) noexcept {
    int count = 0;
    int tasks = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (tasks < 0) return 0;
    alignas(8) char entries[2048];
    long n;
    while ((n = syscall(SYS_getdents64, tasks, entries, sizeof(entries))) > 0) {
        for (long at = 0; at < n;) {
            auto* entry = reinterpret_cast<struct dirent64*>(entries + at);
            at += entry->d_reclen;
            if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
            char path[64];
            int len = 0;
            for (const char* s = entry->d_name; *s && len < 40; ++s) path[len++] = *s;
            const char tail[] = "/children";
            for (size_t i = 0; i < sizeof(tail); ++i) path[len++] = tail[i];
            int fd = openat(tasks, path, O_RDONLY | O_CLOEXEC);
            if (fd < 0) continue;
            char text[4096];
            ssize_t got = read(fd, text, sizeof(text));
            close(fd);
            if (got > 0) count += parsePidsInChild(text, got, out + count, room - count);
        }
    }
    close(tasks);
    return count;
}

}  // namespace

uint32_t killAllChildrenInChild(pid_t spare, pid_t command, int* command_status) noexcept {
    uint32_t killed = 0;
    pid_t batch[kMaxBatch];
    for (;;) {
        int count = listChildrenInChild(batch, kMaxBatch);
        int others = 0;
        for (int i = 0; i < count; ++i)
            if (batch[i] != spare) batch[others++] = batch[i];
        if (others == 0) {
            // The list may lag a child that is being created; waitpid says
            // for certain whether any child but `spare` is left.
            // Peeked at, not reaped: `spare` is the caller's to reap.
            siginfo_t info{};
            if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT | __WALL) < 0) break;
            if (info.si_pid == 0 || info.si_pid == spare) break;
            int status;
            pid_t pid = waitpid(info.si_pid, &status, __WALL);
            if (pid == command && command_status) *command_status = status;
            continue;
        }
        // Each killed parent's children are re-parented here before it is
        // reported (exit_notify), so the next round lists them.
        for (int i = 0; i < others; ++i) kill(batch[i], SIGKILL);
        for (int i = 0; i < others; ++i) {
            int status;
            pid_t pid;
            while ((pid = waitpid(batch[i], &status, __WALL)) < 0 && errno == EINTR) {
            }
            if (pid != batch[i]) continue;
            if (pid == command) {
                if (command_status) *command_status = status;
                continue;
            }
            if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ++killed;
        }
    }
    return killed;
}

}  // namespace stockade
