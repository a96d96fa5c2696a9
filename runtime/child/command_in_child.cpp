#include "runtime/child/command_in_child.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/close_range.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/fd_passing.h"
#include "namespaces/call_note_in_child.h"
#include "namespaces/landlock_in_child.h"
#include "namespaces/syscalls.h"
#include "runtime/child/privileges_in_child.h"
#include "seccomp/install_in_child.h"
#include "seccomp/listener_in_child.h"

namespace stockade {

void reportInChild(const ChildPlan& plan, ChildMessageKind kind, ChildStage stage, int err,
                   int op_index) noexcept {
    ChildMessage msg{kind, stage, err, op_index, 0, 0};
    while (send(plan.sync_fd, &msg, sizeof(msg), MSG_NOSIGNAL) < 0 && errno == EINTR) {
    }
}

void resetSignalsInChild() noexcept {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
}

namespace {

// Puts `from` at `to` so that it survives execve: dup2 when they differ, and
// when they are the same fd already, clears the close-on-exec flag that dup2
// would have cleared.
int placeFdInChild(int from, int to) noexcept {
    if (from == to)
        return fcntl(to, F_SETFD, 0) < 0
                   ? ns::noteCallInChild("fcntl").number(to).arg("F_SETFD").number(0).done(errno)
                   : 0;
    return dup2(from, to) < 0 ? ns::noteCallInChild("dup2").number(from).number(to).done(errno) : 0;
}

}  // namespace

namespace {

// The terminal at /dev/console too, as runc puts it (a bind of the slave
// over a file made there): programs that write to the console, and the
// shells that ask for it, find the container's terminal, not nothing or a
// regular file. A /dev that cannot take it (read-only, or the name a
// symlink or a directory of the image's) keeps what it has; 0 or an errno.
int consoleAtDevInChild(int slave) noexcept {
    int target = open("/dev/console", O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (target < 0 && errno == ENOENT) {
        int made = open("/dev/console", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0);
        if (made < 0) return 0;  // no /dev, or one that cannot take it
        close(made);
        target = open("/dev/console", O_PATH | O_NOFOLLOW | O_CLOEXEC);
    }
    if (target < 0) return 0;
    struct stat st {};
    int err = 0;
    if (fstat(target, &st) < 0 || !(S_ISREG(st.st_mode) || S_ISCHR(st.st_mode))) {
        close(target);  // a symlink or a directory of the image's: left as it is
        return 0;
    }
    int tree = ns::sysOpenTree(slave, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
    if (tree < 0)
        err =
            ns::noteCallInChild("open_tree").arg("the terminal").arg("OPEN_TREE_CLONE").done(errno);
    else if (ns::sysMoveMount(tree, "", target, "",
                              MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
        err =
            ns::noteCallInChild("move_mount").arg("the terminal").path("/dev/console").done(errno);
    if (tree >= 0) close(tree);
    close(target);
    return err;
}

// An OCI container's terminal: a pty of the container's own devpts (its
// /dev/ptmx, after pivot_root), the slave opened through the master
// (TIOCGPTPEER: no path lookup in the container's /dev/pts) and made the
// command's controlling terminal and stdio, the master sent to the caller.
int consoleInChild(const ChildPlan& plan) noexcept {
    int master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0) return errno;
    int unlock = 0;
    int err = ioctl(master, TIOCSPTLCK, &unlock) < 0 ? errno : 0;
    if (!err && plan.console_rows && plan.console_cols) {
        winsize size{plan.console_rows, plan.console_cols, 0, 0};
        if (ioctl(master, TIOCSWINSZ, &size) < 0) err = errno;
    }
    int slave = err ? -1 : ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY);
    if (!err && slave < 0) err = errno;
    if (!err && ioctl(slave, TIOCSCTTY, 0) < 0) err = errno;
    if (!err) err = consoleAtDevInChild(slave);
    for (int fd = 0; !err && fd < 3; ++fd)
        if (dup2(slave, fd) < 0) err = errno;
    if (slave > 2) close(slave);
    if (!err) {
        const char name[] = "console";
        err = sendWithFds(plan.console_socket_fd, name, sizeof(name) - 1, &master, 1);
    }
    close(master);
    close(plan.console_socket_fd);
    return err;
}

}  // namespace

namespace {

bool isNullDeviceInChild(int fd) noexcept {
    struct stat st {};
    return fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
}

// runc's reOpenDevNull: an OCI container's 0-2 that are the null device
// (conmon's fd 0 without -i, opened read-only on the host) become the
// container's own /dev/null opened read and write, so that a write to fd 0
// works as under runc. Only where stockade made the container's /dev (it
// bound the host's null device there); the name is opened without
// following a link, with O_NONBLOCK and O_NOCTTY, and taken only when it is
// the null device (a bundle's mount over it may put anything there). What
// cannot be reopened keeps the inherited fd, as before: nothing is refused.
void reopenNullStdioInChild() noexcept {
    bool any = false;
    for (int fd = 0; fd < 3; ++fd) any = any || isNullDeviceInChild(fd);
    if (!any) return;
    int null_fd = open("/dev/null", O_RDWR | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (null_fd < 0) return;
    if (isNullDeviceInChild(null_fd) && fcntl(null_fd, F_SETFL, 0) == 0)
        for (int fd = 0; fd < 3; ++fd)
            if (fd != null_fd && isNullDeviceInChild(fd)) (void)dup3(null_fd, fd, 0);
    if (null_fd > 2) close(null_fd);
}

}  // namespace

int setupStdioInChild(const ChildPlan& plan) noexcept {
    if (plan.console_socket_fd >= 0) return consoleInChild(plan);
    if (plan.reopen_null_stdio) reopenNullStdioInChild();
    if (plan.stdin_null) {
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return ns::noteCallInChild("open").path("/dev/null").arg("O_RDONLY").done(errno);
        if (int err = placeFdInChild(fd, 0)) return err;
        if (fd != 0) close(fd);
    }
    if (plan.stdout_fd >= 0)
        if (int err = placeFdInChild(plan.stdout_fd, 1)) return err;
    if (plan.stderr_fd >= 0)
        if (int err = placeFdInChild(plan.stderr_fd, 2)) return err;
    return 0;
}

// execvp(3) without its allocation: each PATH entry is tried in a stack
// buffer. EACCES from any entry wins over ENOENT, as execvp does.
int execSearchInChild(const ChildPlan& plan) noexcept {
    if (!plan.exec_path_storage.empty() && plan.exec_path_storage[0] != '\0') {
        execve(plan.exec_path_storage.data(), plan.argv.data(), plan.envp.data());
        return errno;
    }
    const char* file = plan.argv[0];
    if (strchr(file, '/')) {
        execve(file, plan.argv.data(), plan.envp.data());
        return errno;
    }
    size_t file_len = strlen(file);
    bool saw_eacces = false;
    const char* p = plan.search_path.c_str();
    while (true) {
        const char* end = strchrnul(p, ':');
        size_t dir_len = static_cast<size_t>(end - p);
        char buf[PATH_MAX];
        if (dir_len + 1 + file_len + 1 <= sizeof(buf)) {
            size_t n = 0;
            if (dir_len == 0) {
                buf[n++] = '.';
            } else {
                memcpy(buf, p, dir_len);
                n = dir_len;
            }
            buf[n++] = '/';
            memcpy(buf + n, file, file_len + 1);
            execve(buf, plan.argv.data(), plan.envp.data());
            if (errno == EACCES)
                saw_eacces = true;
            else if (errno != ENOENT && errno != ENOTDIR)
                return errno;
        }
        if (*end == '\0') break;
        p = end + 1;
    }
    return saw_eacces ? EACCES : ENOENT;
}

namespace {

// What execve(2) can answer, in runc's words (Go's, lower case).
const char* execErrorTextInChild(int err) noexcept {
    switch (err) {
        case ENOENT:
            return "no such file or directory";
        case ENOTDIR:
            return "not a directory";
        case EACCES:
            return "permission denied";
        case EPERM:
            return "operation not permitted";
        case ENOEXEC:
            return "exec format error";
        case ELOOP:
            return "too many levels of symbolic links";
        case ENAMETOOLONG:
            return "file name too long";
        case ETXTBSY:
            return "text file busy";
        case E2BIG:
            return "argument list too long";
        case ENOMEM:
            return "cannot allocate memory";
        case EISDIR:
            return "is a directory";
        case ELIBBAD:
            return "accessing a corrupted shared library";
        default:
            return "exec failed";
    }
}

void writeAllInChild(int fd, const char* text) noexcept {
    size_t left = strlen(text);
    while (left > 0) {
        ssize_t n = write(fd, text, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        text += n;
        left -= static_cast<size_t>(n);
    }
}

}  // namespace

void sayExecFailedInChild(const ChildPlan& plan, int err) noexcept {
    const char* path = plan.exec_path_storage.empty() || plan.exec_path_storage[0] == '\0'
                           ? plan.argv[0]
                           : plan.exec_path_storage.data();
    writeAllInChild(2, "exec ");
    writeAllInChild(2, path ? path : "");
    writeAllInChild(2, ": ");
    writeAllInChild(2, execErrorTextInChild(err));
    writeAllInChild(2, "\n");
}

namespace {

// 0 when `path` is a regular file this process may execute; else its errno
// (EACCES for a directory or a file without the x bit).
int executableInChild(const char* path) noexcept {
    struct stat st;
    if (stat(path, &st) < 0) return errno;
    if (!S_ISREG(st.st_mode)) return EACCES;
    return access(path, X_OK) < 0 ? errno : 0;
}

int keepPathInChild(ChildPlan& plan, const char* dir, size_t dir_len, const char* file,
                    size_t file_len) noexcept {
    std::vector<char>& out = plan.exec_path_storage;
    if (dir_len + 1 + file_len + 1 > out.size()) return ENAMETOOLONG;
    memcpy(out.data(), dir, dir_len);
    size_t n = dir_len;
    if (dir_len) out[n++] = '/';
    memcpy(out.data() + n, file, file_len + 1);
    return 0;
}

}  // namespace

int findExecutableInChild(ChildPlan& plan) noexcept {
    if (plan.exec_path_storage.empty()) return 0;
    const char* file = plan.argv[0];
    size_t file_len = strlen(file);
    if (file_len == 0) return ENOENT;
    if (strchr(file, '/')) {
        if (int err = executableInChild(file)) return err;
        return keepPathInChild(plan, "", 0, file, file_len);
    }
    bool saw_eacces = false;
    const char* p = plan.search_path.c_str();
    while (true) {
        const char* end = strchrnul(p, ':');
        size_t dir_len = static_cast<size_t>(end - p);
        const char* dir = dir_len ? p : ".";
        if (!dir_len) dir_len = 1;
        if (int err = keepPathInChild(plan, dir, dir_len, file, file_len); err == 0) {
            int found = executableInChild(plan.exec_path_storage.data());
            if (found == 0) return 0;
            if (found == EACCES) saw_eacces = true;
        }
        if (*end == '\0') break;
        p = end + 1;
    }
    plan.exec_path_storage[0] = '\0';
    return saw_eacces ? EACCES : ENOENT;
}

// With a listener, refusals reach the supervisor, which answers and counts
// them; the listener fd goes to it and is closed here before execve. Where
// the kernel cannot give a listener (EBUSY: stockade itself runs under a
// filter with one; EINVAL: before 5.0), the plain filter goes in instead.
int installSeccompInChild(const ChildPlan& plan) noexcept {
    auto fprog = [](const std::vector<sock_filter>& program) {
        return sock_fprog{static_cast<unsigned short>(program.size()),
                          const_cast<sock_filter*>(program.data())};
    };
    if (!plan.seccomp_notified_program.empty() && plan.listener_socket_fd >= 0) {
        int listener = -1;
        int err = faultInjected(FaultPoint::Seccomp, plan.injected_fault)
                      ? errno
                      : seccomp::installFilterWithListenerInChild(
                            fprog(plan.seccomp_notified_program), &listener);
        if (err == 0) {
            err = seccomp::sendListenerInChild(plan.listener_socket_fd, listener);
            return err ? ns::noteCallInChild("sendmsg")
                             .arg("the supervisor's socket")
                             .arg("SCM_RIGHTS the listener")
                             .done(err)
                       : 0;
        }
        if (err != EBUSY && err != EINVAL)
            return ns::noteCallInChild("seccomp")
                .arg("SECCOMP_SET_MODE_FILTER")
                .arg("SECCOMP_FILTER_FLAG_NEW_LISTENER")
                .number(static_cast<long>(plan.seccomp_notified_program.size()))
                .done(err);
    }
    if (plan.seccomp_program.empty()) return 0;
    int err = faultInjected(FaultPoint::Seccomp, plan.injected_fault)
                  ? errno
                  : seccomp::installFilterInChild(fprog(plan.seccomp_program));
    return err ? ns::noteCallInChild("seccomp")
                     .arg("SECCOMP_SET_MODE_FILTER")
                     .number(0)
                     .number(static_cast<long>(plan.seccomp_program.size()))
                     .done(err)
               : 0;
}

}  // namespace stockade
