#include "runtime/child/hooks_in_child.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "runtime/child/command_in_child.h"

namespace stockade {

namespace {

// What a failing hook printed, as much of it as a message carries.
constexpr size_t kKept = 64;

// A note built in a fixed buffer: printable ASCII only (what a hook prints
// is anybody's bytes; the message ends up in JSON and on a terminal).
struct NoteInChild {
    char* buf;
    size_t size;
    size_t len = 0;

    void add(const char* s, size_t n) noexcept {
        for (size_t i = 0; i < n && s[i] != '\0' && len + 1 < size; ++i)
            buf[len++] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
        buf[len] = '\0';
    }
    void add(const char* s) noexcept { add(s, ~size_t{0}); }
    void number(long v) noexcept {
        char digits[24];
        size_t i = sizeof(digits);
        unsigned long u =
            v < 0 ? 0UL - static_cast<unsigned long>(v) : static_cast<unsigned long>(v);
        do {
            digits[--i] = static_cast<char>('0' + u % 10);
            u /= 10;
        } while (u != 0 && i > 1);
        if (v < 0) digits[--i] = '-';
        add(digits + i, sizeof(digits) - i);
    }
};

struct StreamInChild {
    int fd = -1;
    char kept[kKept];
    size_t len = 0;
    bool open = true;
};

// Reads what is there now, a bounded number of times (a hook that never
// stops writing cannot hold the loop), keeping the first bytes.
void drainInChild(StreamInChild& s) noexcept {
    char buf[512];
    for (int i = 0; s.open && i < 16; ++i) {
        ssize_t n = read(s.fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (n == 0 || errno != EAGAIN) s.open = false;
            return;
        }
        for (ssize_t j = 0; j < n && s.len < kKept; ++j) s.kept[s.len++] = buf[j];
    }
}

int64_t monotonicMsInChild() noexcept {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

void closeInChild(int& fd) noexcept {
    if (fd >= 0) close(fd);
    fd = -1;
}

// The hook's process: default signals, its pipes on 0-2 (the executable's
// fd at 3 when it was opened by create; a script's interpreter opens it
// through /dev/fd/3), the exec report pipe above them, nothing else.
// Takes mounts off `list.uncover` in this process's own copy of the mount
// namespace until what is there is the host's directory init saw before
// the staging mount existed (dev and inode); 0 or an errno, EBUSY when it
// never is.
int uncoverInChild(const ChildHookList& list) noexcept {
    if (unshare(CLONE_NEWNS) < 0) return errno;
    // The built root beneath is shared with init's (so that what the hook
    // mounts at root.path reaches the container): private in this copy
    // first, or taking the staging stack off here would unmount in init's.
    if (mount(nullptr, list.uncover.c_str(), nullptr, MS_PRIVATE | MS_REC, nullptr) < 0)
        return errno;
    for (int i = 0; i < 64; ++i) {
        if (umount2(list.uncover.c_str(), MNT_DETACH) < 0) return errno;
        struct stat st {};
        if (lstat(list.uncover.c_str(), &st) < 0) return errno;
        if (st.st_dev == list.uncover_dev && st.st_ino == list.uncover_ino) return 0;
    }
    return EBUSY;
}

[[noreturn]] void execHookInChild(ChildHook& hook, int state_fd, int out_fd, int err_fd,
                                  int report_fd, bool own_group,
                                  const ChildHookList& list) noexcept {
    resetSignalsInChild();
    int failed = 0;
    // A group of its own, so that a timeout takes what it started too (a
    // createContainer hook is PID 1 of its own namespace instead).
    if (own_group && setpgid(0, 0) < 0) failed = errno;
    // createContainer: a copy of init's mount namespace with the staging
    // mount taken off, so that the host path it covered (/tmp) is the
    // host's again and names nothing of the image (ChildHookList::uncover),
    // and the host's / as the working directory, not the caller's.
    if (!failed && !list.uncover.empty()) {
        failed = uncoverInChild(list);
        if (!failed && chdir("/") < 0) failed = errno;
    }
    // Above every slot first, so that no dup2 below overwrites a source.
    int from[5] = {state_fd, out_fd, err_fd, report_fd, hook.exec_fd};
    for (int& fd : from)
        if (!failed && fd >= 0 && (fd = fcntl(fd, F_DUPFD_CLOEXEC, 5)) < 0) failed = errno;
    for (int target = 0; target < 3 && !failed; ++target)
        if (dup2(from[target], target) < 0) failed = errno;
    int report = 3;
    if (!failed && hook.exec_fd >= 0) {
        if (dup2(from[4], 3) < 0) failed = errno;  // not close-on-exec: a script reads it
        report = 4;
    }
    if (!failed && dup3(from[3], report, O_CLOEXEC) < 0) failed = errno;
    if (failed) report = from[3];
    // The runner's fds and init's (mount sources, the sync socket): none
    // reaches the hook. Should a filter refuse close_range, every fd of
    // the command's is close-on-exec by now (its CloseOnExec step).
    if (!failed) (void)syscall(SYS_close_range, static_cast<unsigned>(report + 1), ~0U, 0U);
    if (!failed) {
        for (size_t i = 0; i < hook.argv_storage.size(); ++i)
            hook.argv[i] = hook.argv_storage[i].data();
        hook.argv[hook.argv_storage.size()] = nullptr;
        for (size_t i = 0; i < hook.env_storage.size(); ++i)
            hook.envp[i] = hook.env_storage[i].data();
        hook.envp[hook.env_storage.size()] = nullptr;
        if (hook.exec_fd >= 0)
            syscall(SYS_execveat, 3, "", hook.argv.data(), hook.envp.data(), AT_EMPTY_PATH);
        else
            execve(hook.path.c_str(), hook.argv.data(), hook.envp.data());
        failed = errno;
    }
    (void)!write(report, &failed, sizeof(failed));
    _exit(127);
}

// Starts the hook's process; returns its pid (and pidfd), or -errno.
long cloneHookInChild(bool own_pid_namespace, int* pidfd) noexcept {
    clone_args args{};
    args.flags = CLONE_PIDFD | (own_pid_namespace ? CLONE_NEWPID : 0);
    args.pidfd = reinterpret_cast<uintptr_t>(pidfd);
    args.exit_signal = SIGCHLD;
    long pid = syscall(SYS_clone3, &args, sizeof(args));
    // A spec's filter may answer clone3 ENOSYS, as Docker's does, so that
    // clone's flags can be read: the plain fork then (startContainer only
    // gets here after the filter, and needs no namespace).
    if (pid < 0 && (errno == ENOSYS || errno == EPERM) && !own_pid_namespace)
        pid = syscall(SYS_clone, CLONE_PIDFD | SIGCHLD, nullptr, pidfd, nullptr, 0);
    return pid < 0 ? -errno : pid;
}

struct OutcomeInChild {
    int err = 0;  // the runner's own call that failed
    const char* call = nullptr;
    int exec_errno = 0;
    bool timed_out = false;
    bool hung_up = false;  // the watched socket's peer went away
    siginfo_t info{};
    StreamInChild out, err_stream;
};

void runOneInChild(ChildHook& hook, int state_fd, const ChildHookList& list, int watch_fd,
                   OutcomeInChild& o) noexcept {
    const bool own_pid_namespace = list.own_pid_namespace;
    int out[2] = {-1, -1}, err[2] = {-1, -1}, report[2] = {-1, -1};
    if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 || pipe2(report, O_CLOEXEC) < 0) {
        o.err = errno;
        o.call = "pipe2()";
        for (int* p : {out, err, report}) {
            closeInChild(p[0]);
            closeInChild(p[1]);
        }
        return;
    }
    int pidfd = -1;
    long pid = cloneHookInChild(own_pid_namespace, &pidfd);
    if (pid == 0)
        execHookInChild(hook, state_fd, out[1], err[1], report[1], !own_pid_namespace, list);
    closeInChild(out[1]);
    closeInChild(err[1]);
    closeInChild(report[1]);
    o.out.fd = out[0];
    o.err_stream.fd = err[0];
    if (pid < 0) {
        o.err = static_cast<int>(-pid);
        o.call = "clone3()";
    } else {
        for (int fd : {out[0], err[0], report[0]}) fcntl(fd, F_SETFL, O_NONBLOCK);
        const int64_t deadline =
            hook.timeout_s > 0 ? monotonicMsInChild() + int64_t{hook.timeout_s} * 1000 : -1;
        while (true) {
            int wait_ms = -1;
            if (deadline >= 0) {
                int64_t left = deadline - monotonicMsInChild();
                if (left <= 0) {
                    o.timed_out = true;
                    break;
                }
                wait_ms = static_cast<int>(left < 60000 ? left : 60000);
            }
            // The watched socket by its hang-up only: a message queued on
            // it meanwhile is the next step's to read.
            pollfd fds[4] = {{pidfd, POLLIN, 0},
                             {o.out.open ? o.out.fd : -1, POLLIN, 0},
                             {o.err_stream.open ? o.err_stream.fd : -1, POLLIN, 0},
                             {watch_fd, POLLRDHUP, 0}};
            int n = poll(fds, 4, wait_ms);
            if (n < 0 && errno != EINTR) {
                o.err = errno;
                o.call = "poll()";
                o.timed_out = true;  // killed below, like one past its time
                break;
            }
            if (n <= 0) continue;
            if (fds[3].revents & (POLLRDHUP | POLLHUP | POLLERR)) {
                o.hung_up = true;
                o.timed_out = true;  // killed below, like one past its time
                break;
            }
            if (fds[1].revents) drainInChild(o.out);
            if (fds[2].revents) drainInChild(o.err_stream);
            // Its exit ends the wait, whatever its pipes still hold open.
            if (fds[0].revents) break;
        }
        if (o.timed_out) {
            // The hook's group, while it is unreaped (its id cannot be
            // reused), then the hook; PID 1 of its own namespace takes the
            // namespace with it.
            if (!own_pid_namespace) kill(static_cast<pid_t>(-pid), SIGKILL);
            syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0);
        }
        while (waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd), &o.info, WEXITED) <
                   0 &&
               errno == EINTR) {
        }
        drainInChild(o.out);
        drainInChild(o.err_stream);
        int reported = 0;
        if (read(report[0], &reported, sizeof(reported)) == sizeof(reported))
            o.exec_errno = reported;
    }
    closeInChild(pidfd);
    closeInChild(out[0]);
    closeInChild(err[0]);
    closeInChild(report[0]);
}

}  // namespace

int runHooksInChild(ChildHookList& list, pid_t state_pid, char* note_buf, size_t note_size,
                    int watch_fd) noexcept {
    NoteInChild note{note_buf, note_size};
    if (note_size > 0) note_buf[0] = '\0';
    if (list.hooks.empty()) return 0;
    if (list.pid_offset + kHookPidSlot > list.state.size()) {
        note.add("the hooks' state has no pid slot");
        return EINVAL;
    }
    char* slot = list.state.data() + list.pid_offset;
    for (size_t i = 0; i < kHookPidSlot; ++i) slot[i] = ' ';
    unsigned long pid = state_pid > 0 ? static_cast<unsigned long>(state_pid) : 0;
    size_t at = kHookPidSlot;
    do {
        slot[--at] = static_cast<char>('0' + pid % 10);
        pid /= 10;
    } while (pid != 0 && at > 0);

    // The state, once, in a file each hook reads from its start, sealed so
    // that no hook changes what the next one reads.
    int state_fd =
        static_cast<int>(syscall(SYS_memfd_create, "oci-state", MFD_CLOEXEC | MFD_ALLOW_SEALING));
    if (state_fd < 0) {
        int e = errno;
        note.add("memfd_create(\"oci-state\")");
        return e;
    }
    for (size_t done = 0; done < list.state.size();) {
        ssize_t n = write(state_fd, list.state.data() + done, list.state.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            close(state_fd);
            note.add("write(the hooks' state)");
            return e;
        }
        done += static_cast<size_t>(n);
    }
    if (fcntl(state_fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) <
        0) {
        int e = errno;
        close(state_fd);
        note.add("fcntl(the hooks' state, F_ADD_SEALS)");
        return e;
    }

    for (size_t i = 0; i < list.hooks.size(); ++i) {
        ChildHook& hook = list.hooks[i];
        if (lseek(state_fd, 0, SEEK_SET) < 0) {
            int e = errno;
            close(state_fd);
            note.add("lseek(the hooks' state)");
            return e;
        }
        OutcomeInChild o;
        runOneInChild(hook, state_fd, list, watch_fd, o);
        if (o.hung_up) {
            close(state_fd);
            return kHooksWatchHungUp;
        }
        int result = 0;
        NoteInChild why{note_buf, note_size};
        why.add("error running ");
        why.add(list.name);
        why.add(" hook #");
        why.number(static_cast<long>(i));
        why.add(" (");
        why.add(hook.path.c_str());
        why.add("): ");
        if (o.err != 0 && !o.timed_out) {
            why.add(o.call);
            result = o.err;
        } else if (o.exec_errno != 0) {
            why.add("exec failed");
            result = o.exec_errno;
        } else if (o.timed_out) {
            why.add("hook ran past specified timeout of ");
            why.number(hook.timeout_s);
            why.add(".0s (killed)");
            result = o.err != 0 ? o.err : ETIMEDOUT;
        } else if (o.info.si_code != CLD_EXITED || o.info.si_status != 0) {
            if (o.info.si_code == CLD_EXITED) {
                why.add("exit status ");
                why.number(o.info.si_status);
            } else {
                why.add("signal ");
                why.number(o.info.si_status);
            }
            why.add(", stdout: ");
            why.add(o.out.kept, o.out.len);
            why.add(", stderr: ");
            why.add(o.err_stream.kept, o.err_stream.len);
            result = ECANCELED;
        }
        if (result != 0) {
            close(state_fd);
            return result;
        }
        note_buf[0] = '\0';
    }
    close(state_fd);
    return 0;
}

}  // namespace stockade
