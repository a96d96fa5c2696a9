#include "oci/exec.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <linux/close_range.h>
#include <linux/nsfs.h>
#include <linux/openat2.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

#include "base/small_file.h"
#include "namespaces/syscalls.h"
#include "oci/config.h"
#include "oci/container.h"
#include "oci/container_plan.h"
#include "oci/groups.h"
#include "oci/passwd.h"
#include "oci/stdio_pipes.h"
#include "oci/terminal_relay.h"
#include "runtime/child/privileges_in_child.h"
#include "runtime/supervisor/sandbox_launch.h"
#include "seccomp/install_in_child.h"

namespace stockade::oci {

namespace {

// Where the forked process failed, sent to `exec` on a close-on-exec pipe:
// EOF there means the execve happened.
enum class ExecStage : int {
    Console = 1,
    Ids,
    Cwd,
    Rlimits,
    Personality,
    Capabilities,
    NoNewPrivs,
    Find,
    Seccomp,
    Exec
};

struct ExecFailure {
    ExecStage stage;
    int err;
};

const char* stageName(ExecStage stage) {
    switch (stage) {
        case ExecStage::Console:
            return "open the terminal and send it to the console socket";
        case ExecStage::Ids:
            return "take the process's uid and gid";
        case ExecStage::Cwd:
            return "change to process.cwd";
        case ExecStage::Rlimits:
            return "set process.rlimits";
        case ExecStage::Personality:
            return "take linux.personality's domain";
        case ExecStage::Capabilities:
            return "set process.capabilities";
        case ExecStage::NoNewPrivs:
            return "set no_new_privs";
        case ExecStage::Find:
            return "find the executable";
        case ExecStage::Seccomp:
            return "install the container's seccomp filter";
        case ExecStage::Exec:
            return "execve";
    }
    return "?";
}

// A pty of the container's own devpts (this process is in its mount
// namespace, whose root is the container's): the master sent on the
// socket as one message with exactly one fd, the slave the controlling
// terminal and stdio.
int takeTerminal(int socket_fd, unsigned short rows, unsigned short cols, uid_t uid, gid_t gid) {
    // Made as the process's ids, so the pty is the process's own, as runc
    // gives it: made by this process as it is (the host's root, no id of
    // the container's) the slave was 65534's, which no chown inside can
    // change, and a process that opens its terminal by name (script, tmux,
    // a write to $(tty)) could not. setresuid sets them again later.
    setfsgid(gid);
    setfsuid(uid);
    // setfs[ug]id say nothing of a failure but by what they answer next.
    if (static_cast<gid_t>(setfsgid(static_cast<gid_t>(-1))) != gid ||
        static_cast<uid_t>(setfsuid(static_cast<uid_t>(-1))) != uid)
        return EPERM;
    int master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0) return errno;
    if (unlockpt(master) < 0) return errno;
    int slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY);
    if (slave < 0) return errno;
    if (rows || cols) {
        winsize size{rows, cols, 0, 0};
        if (ioctl(slave, TIOCSWINSZ, &size) < 0) return errno;
    }
    char byte = 0;
    iovec iov{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &master, sizeof(int));
    if (sendmsg(socket_fd, &msg, MSG_NOSIGNAL) != 1) return errno;
    close(master);
    if (ioctl(slave, TIOCSCTTY, 0) < 0) return errno;
    for (int fd = 0; fd < 3; ++fd)
        if (dup2(slave, fd) < 0) return errno;
    if (slave > 2) close(slave);
    return 0;
}

// The executable, on the PATH of the process's env as create finds the
// command's (EACCES kept when only that was seen, as execvp does).
int findExecutable(const Config& p, std::string& out) {
    const std::string& name = p.args[0];
    if (name.find('/') != std::string::npos) {
        out = name;
        return access(name.c_str(), X_OK) == 0 ? 0 : errno;
    }
    std::string path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    for (const std::string& e : p.env)
        if (e.starts_with("PATH=")) path = e.substr(5);
    int err = ENOENT;
    for (size_t i = 0; i <= path.size();) {
        size_t end = path.find(':', i);
        if (end == std::string::npos) end = path.size();
        std::string dir = end > i ? path.substr(i, end - i) : ".";
        std::string candidate = dir + "/" + name;
        struct stat st {};
        if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
            if (access(candidate.c_str(), X_OK) == 0) {
                out = candidate;
                return 0;
            }
            err = EACCES;
        }
        i = end + 1;
    }
    return err;
}

// Closes every fd above 2 but `keep_a` and `keep_b` (either may be -1).
void closeAllFdsBut(int keep_a, int keep_b) {
    int keep[2] = {std::min(keep_a, keep_b), std::max(keep_a, keep_b)};
    unsigned from = 3;
    for (int k : keep) {
        if (k < 3 || static_cast<unsigned>(k) < from) continue;
        if (static_cast<unsigned>(k) > from) syscall(SYS_close_range, from, k - 1U, 0U);
        from = static_cast<unsigned>(k) + 1;
    }
    syscall(SYS_close_range, from, ~0U, 0U);
}

// chdir to `cwd` as resolved inside the container's root (this process's,
// after setns): no symlink leads out of it and no magic link is followed.
int changeDirInRoot(const std::string& cwd) {
    UniqueFd root(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!root) return errno;
    open_how how{};
    how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    const std::string relative = cwd.find_first_not_of('/') == std::string::npos
                                     ? "."
                                     : cwd.substr(cwd.find_first_not_of('/'));
    UniqueFd dir(ns::sysOpenat2(root.get(), relative.c_str(), &how));
    if (!dir) return errno;
    return fchdir(dir.get()) < 0 ? errno : 0;
}

// The host's highest capability number, read before exec joins the
// container's mount namespace: there /proc/sys is the container's, which a
// process with CAP_SYS_ADMIN can cover (a FIFO hung exec; a smaller number
// left the bounding set whole).
int hostLastCap() {
    int last_cap = 40;
    std::ifstream last("/proc/sys/kernel/cap_last_cap");
    if (!(last >> last_cap) || last_cap < 0 || last_cap > 63) last_cap = 40;
    return last_cap;
}

// The forked process, in every namespace of the container: the spec's
// process set up as the container's command is (ids, cwd, rlimits,
// capabilities inside the container's user namespace, no_new_privs, the
// container's seccomp filter last), then execve. Never returns.
[[noreturn]] void becomeProcess(const Config& p, std::optional<unsigned long> persona, int last_cap,
                                const std::vector<sock_filter>& program, int console_fd,
                                int report_fd) {
    auto fail = [&](ExecStage stage, int err) {
        ExecFailure f{stage, err};
        (void)!write(report_fd, &f, sizeof(f));
        _exit(127);
    };
    // Nothing of the runtime's but the report pipe and the console crosses
    // into the container: exec holds host directories (the bundle, the pid
    // file's), whose /proc/self/fd links a process.cwd or an image's
    // /etc/passwd could follow out of the container's root.
    closeAllFdsBut(report_fd, console_fd);
    // A session of its own, terminal or not (runc's exec too): left in the
    // caller's, the process would have the caller's terminal as its
    // controlling one, and TIOCSTI on it types into the caller's shell.
    if (setsid() < 0) fail(ExecStage::Console, errno);
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, nullptr);
    for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT}) signal(sig, SIG_DFL);
    if (p.terminal)
        if (int err = takeTerminal(console_fd, p.console_rows, p.console_cols, p.uid, p.gid))
            fail(ExecStage::Console, err);
    if (console_fd >= 0) close(console_fd);
    if (int err = keepCapabilitiesAcrossSetuidInChild()) fail(ExecStage::Ids, err);
    if (setresgid(p.gid, p.gid, p.gid) < 0) fail(ExecStage::Ids, errno);
    if (setresuid(p.uid, p.uid, p.uid) < 0) fail(ExecStage::Ids, errno);
    // The working directory resolved in the container's root, no magic link
    // (no /proc/self/fd/N, no /proc/PID/cwd of a process outside it).
    if (int err = changeDirInRoot(p.cwd)) fail(ExecStage::Cwd, err);
    for (const Rlimit& r : p.rlimits) {
        rlimit value{r.soft, r.hard};
        if (setrlimit(r.resource, &value) < 0) fail(ExecStage::Rlimits, errno);
    }
    if (p.umask) umask(*p.umask);
    // The container's execution domain, as its command has it (runc sets it
    // for exec too); before the filter, which need not allow it then.
    if (persona) {
        if (personality(*persona) < 0) fail(ExecStage::Personality, errno);
        if (static_cast<unsigned long>(personality(0xffffffff)) != *persona)
            fail(ExecStage::Personality, EINVAL);
    }
    const Config::CapabilityMasks& c = p.capabilities;
    const uint64_t known = last_cap >= 63 ? ~uint64_t{0} : (uint64_t{1} << (last_cap + 1)) - 1;
    CapabilitySets sets{c.bounding & known, c.effective & known, c.permitted & known,
                        c.inheritable & known, c.ambient & known};
    int step = 0;
    if (int err = keepOnlyCapabilitiesInChild(last_cap, sets, &step))
        fail(ExecStage::Capabilities, err);
    if (int err = setNoNewPrivsInChild()) fail(ExecStage::NoNewPrivs, err);
    std::string executable;
    if (int err = findExecutable(p, executable)) fail(ExecStage::Find, err);
    std::vector<char*> argv, envp;
    for (const std::string& a : p.args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    // HOME when the process's env names none, from the container's own
    // /etc/passwd, read here as the process's user (runc's exec does the same).
    std::vector<std::string> env = p.env;
    if (!envHasHome(env))
        addHomeIfMissing(env, p.uid, readOwnPasswd());
    else
        keepLastHome(env);
    for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    // And nothing opened since (an ifstream above) survives the execve:
    // marked before the filter, which may refuse close_range.
    syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
    if (!program.empty()) {
        sock_fprog prog{static_cast<unsigned short>(program.size()),
                        const_cast<sock_filter*>(program.data())};
        if (int err = seccomp::installFilterInChild(prog)) fail(ExecStage::Seccomp, err);
    }
    execve(executable.c_str(), argv.data(), envp.data());
    fail(ExecStage::Exec, errno);
    _exit(127);
}

// The writer of exec's --pid-file: a child forked before the runtime joins
// the container, so that it keeps the caller's host credentials. It takes
// the pid's digits from a pipe and writes them beside the file, renamed
// over it (a reader sees the old file or the whole new one); a closed pipe
// without digits writes nothing. Its exit status is the outcome.
class PidFileWriter {
  public:
    PidFileWriter() = default;
    PidFileWriter(PidFileWriter&& other) noexcept { *this = std::move(other); }
    PidFileWriter& operator=(PidFileWriter&& other) noexcept {
        std::swap(pid_, other.pid_);
        std::swap(digits_, other.digits_);
        std::swap(shown_, other.shown_);
        return *this;
    }
    ~PidFileWriter() {
        digits_.reset();
        if (pid_ > 0) waitpid(pid_, nullptr, 0);
    }

    static Result<PidFileWriter> start(UniqueFd dir, const std::string& name,
                                       const std::string& shown) {
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) < 0) return Error::fromErrno("pipe2()");
        UniqueFd read_end(fds[0]), write_end(fds[1]);
        PidFileWriter out;
        out.shown_ = shown;
        out.pid_ = fork();
        if (out.pid_ < 0) return Error::fromErrno("fork() for --pid-file");
        if (out.pid_ == 0) {
            // Nothing of the runtime's but these two: a copy of a pipe the
            // runtime waits on for its end would hold that end back.
            // The write end by a real close, whatever close_range does
            // (ENOSYS before Linux 5.9, EPERM under some filters): held
            // here, the read below would never see its end.
            write_end.reset();
            const int keep[2] = {std::min(dir.get(), read_end.get()),
                                 std::max(dir.get(), read_end.get())};
            rlimit files{};
            const unsigned most = getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < 1u << 20
                                      ? static_cast<unsigned>(files.rlim_cur)
                                      : 1u << 20;
            const std::pair<unsigned, unsigned> gaps[] = {
                {3u, static_cast<unsigned>(keep[0] - 1)},
                {static_cast<unsigned>(keep[0] + 1), static_cast<unsigned>(keep[1] - 1)},
                {static_cast<unsigned>(keep[1] + 1), ~0u}};
            for (const auto& [first, last] : gaps) {
                if (first > last) continue;
                if (syscall(SYS_close_range, first, last, 0u) < 0)
                    for (unsigned fd = first; fd <= last && fd < most; ++fd)
                        close(static_cast<int>(fd));
            }
            char digits[32];
            size_t got = 0;
            ssize_t n;
            while (got < sizeof(digits) &&
                   ((n = read(read_end.get(), digits + got, sizeof(digits) - got)) > 0 ||
                    (n < 0 && errno == EINTR)))
                if (n > 0) got += static_cast<size_t>(n);
            if (got == 0) _exit(0);
            const int err = writePidFileAt(dir.get(), name, std::string(digits, got));
            if (err) _exit(err < 256 ? err : EIO);
            _exit(0);
        }
        out.digits_ = std::move(write_end);
        return out;
    }

    bool running() const { return pid_ > 0; }

    Status write(pid_t pid) {
        const std::string digits = std::to_string(pid);
        const bool sent = ::write(digits_.get(), digits.data(), digits.size()) ==
                          static_cast<ssize_t>(digits.size());
        digits_.reset();
        int status = 0;
        while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
        pid_ = -1;
        if (!sent) return Error::fromErrno("--pid-file: write to its writer");
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            return Error::fromErrno("--pid-file: write(\"" + shown_ + "\")",
                                    WIFEXITED(status) ? WEXITSTATUS(status) : EIO);
        return okStatus();
    }

  private:
    pid_t pid_ = -1;
    UniqueFd digits_;
    std::string shown_;
};

// A number runc's flags take (a uid or gid): decimal digits only, below
// 2^32 - 1 (the kernel's "no id").
std::optional<uint32_t> idNumber(const std::string& text) {
    if (text.empty() || text.size() > 10 ||
        text.find_first_not_of("0123456789") != std::string::npos)
        return std::nullopt;
    const unsigned long long n = std::stoull(text);
    if (n >= 0xffffffffull) return std::nullopt;
    return static_cast<uint32_t>(n);
}

// runc's exec without --process: the container's own process (as create
// read its config) with the command and the flags over it.
Result<Config> processFromFlags(const Config& container, const ExecAsk& ask) {
    Config process = container;
    process.args = ask.args;
    process.terminal = ask.tty;
    // Each --env replaces the variable of its name, or is appended.
    for (const std::string& entry : ask.env) {
        const size_t eq = entry.find('=');
        if (eq == std::string::npos || eq == 0)
            return Error::message("--env " + entry + ": expected NAME=VALUE");
        const std::string name = entry.substr(0, eq + 1);
        std::erase_if(process.env, [&](const std::string& e) { return e.starts_with(name); });
        process.env.push_back(entry);
    }
    if (!ask.cwd.empty()) {
        if (ask.cwd.front() != '/')
            return Error::message("--cwd " + ask.cwd + ": cwd must be an absolute path");
        process.cwd = ask.cwd;
    }
    if (!ask.user.empty()) {
        const size_t colon = ask.user.find(':');
        const auto uid = idNumber(ask.user.substr(0, colon));
        // Without ":GID" the container's gid stays, as under runc.
        const auto gid = colon == std::string::npos ? std::optional<uint32_t>(process.gid)
                                                    : idNumber(ask.user.substr(colon + 1));
        if (!uid || !gid)
            return Error::message("--user " + ask.user +
                                  ": expected UID[:GID], numbers (names are not looked up)");
        process.uid = *uid;
        process.gid = *gid;
    }
    // Added to the container's own, as under runc.
    if (!ask.additional_gids.empty()) {
        for (const std::string& text : ask.additional_gids) {
            const auto gid = idNumber(text);
            if (!gid) return Error::message("--additional-gids " + text + ": expected a number");
            process.additional_gids.push_back(*gid);
        }
    }
    return process;
}

const char* nsName(int type) {
    switch (type) {
        case CLONE_NEWUSER:
            return "user";
        case CLONE_NEWNS:
            return "mnt";
        case CLONE_NEWPID:
            return "pid";
        case CLONE_NEWNET:
            return "net";
        case CLONE_NEWIPC:
            return "ipc";
        case CLONE_NEWUTS:
            return "uts";
        case CLONE_NEWCGROUP:
            return "cgroup";
    }
    return "?";
}

// PPid and the last NSpid (the pid in its own pid namespace) of `pid`; 0
// when unreadable.
std::pair<pid_t, pid_t> parentAndInnerPid(pid_t pid) {
    const PidNumbers numbers = pidNumbersOf(pid);
    return {numbers.parent, numbers.in_namespaces.empty() ? 0 : numbers.in_namespaces.back()};
}

bool sameFile(int a, int b) {
    struct stat sa {
    }, sb{};
    return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

// The container's namespaces through its command, for a caller that cannot
// reach init's (a plain user's container: init is not dumpable and its mm
// is the host user namespace's; the command's, once it has exec'ed, is the
// container's, whose owner may enter it). The command is init's child that
// is PID 1 of its own pid namespace, held by a pidfd and checked after to
// be init's child still, init alive. Each namespace is opened by /proc and
// judged: the user namespace must be a child of the caller's own (one the
// container made for itself is not entered), each other one owned by it or
// the caller's own already (then not joined). As under runc, a namespace
// the command made since in its user namespace (a mount namespace of its
// own) is the one joined. In setns order, the user namespace first.
Result<std::vector<std::pair<UniqueFd, int>>> commandNamespaces(const Record& record,
                                                                int init_pidfd) {
    pid_t command = 0;
    for (pid_t pid : processesIn(record.pid)) {
        auto [parent, inner] = parentAndInnerPid(pid);
        if (parent == record.pid && inner == 1) command = pid;
    }
    if (command == 0) return Error::message("container not running");
    UniqueFd held(static_cast<int>(syscall(SYS_pidfd_open, command, 0)));
    if (!held || parentAndInnerPid(command).first != record.pid ||
        syscall(SYS_pidfd_send_signal, init_pidfd, 0, nullptr, 0) < 0)
        return Error::message("container not running");
    const int types[] = {CLONE_NEWUSER, CLONE_NEWNS,  CLONE_NEWPID,   CLONE_NEWNET,
                         CLONE_NEWIPC,  CLONE_NEWUTS, CLONE_NEWCGROUP};
    std::vector<std::pair<UniqueFd, int>> out;
    for (int type : types) {
        const std::string path = "/proc/" + std::to_string(command) + "/ns/" + nsName(type);
        UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
        if (!fd && errno == EACCES)
            return Error::fromErrno("open(\"" + path +
                                    "\") (exec as a plain user enters the container through "
                                    "its command, which is not dumpable now)");
        if (!fd) return Error::fromErrno("open(\"" + path + "\")");
        if (ioctl(fd.get(), NS_GET_NSTYPE) != type)
            return Error::message(path + " is not a " + nsName(type) + " namespace");
        out.emplace_back(std::move(fd), type);
    }
    // Alive after the opens: the pid named the command throughout.
    if (syscall(SYS_pidfd_send_signal, held.get(), 0, nullptr, 0) < 0)
        return Error::message("container not running");
    const int user = out[0].first.get();
    UniqueFd own_user(open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC));
    UniqueFd parent(ioctl(user, NS_GET_PARENT));
    if (!own_user || !parent || !sameFile(parent.get(), own_user.get()))
        return Error::message(
            "the container's command is not in the container's user namespace (one of its own "
            "making, or another's): exec does not enter it");
    std::vector<std::pair<UniqueFd, int>> joined;
    joined.push_back(std::move(out[0]));
    for (size_t i = 1; i < out.size(); ++i) {
        const std::string own_path = std::string("/proc/self/ns/") + nsName(out[i].second);
        UniqueFd own(open(own_path.c_str(), O_RDONLY | O_CLOEXEC));
        if (own && sameFile(own.get(), out[i].first.get())) continue;  // the caller's already
        UniqueFd owner(ioctl(out[i].first.get(), NS_GET_USERNS));
        if (!owner || !sameFile(owner.get(), user))
            return Error::message(std::string("the container's ") + nsName(out[i].second) +
                                  " namespace is not its user namespace's: exec as a plain "
                                  "user cannot enter it");
        joined.push_back(std::move(out[i]));
    }
    return joined;
}

}  // namespace

Result<int> execInContainer(const std::string& root_dir, const std::string& id,
                            const ExecAsk& ask) {
    Config process;
    if (!ask.process_file.empty()) {
        auto text =
            readSmallFile(AT_FDCWD, ask.process_file.c_str(), ask.process_file, kMaxConfigBytes);
        if (!text) return text.error();
        auto parsed = parseProcess(text->content);
        if (!parsed) return parsed.error();
        process = std::move(*parsed);
    } else {
        if (ask.args.empty()) return Error::message("exec: give --process or a command");
        // The rest once the container's config is read (below).
        process.terminal = ask.tty;
    }
    // In the foreground without --console-socket a terminal is relayed by
    // this process (runc's `exec -t` too); detached, it needs a socket.
    if (process.terminal && ask.console_socket.empty() && ask.detach)
        return Error::message(
            "cannot allocate tty if stockade will detach without setting console socket");
    if (!process.terminal && !ask.console_socket.empty())
        return Error::message("cannot use console socket if stockade will not allocate a tty");

    // The record, then the lock let go: a long exec must not hold up
    // kill or delete of its container.
    Record record;
    UniqueFd init;
    Result<SmallFile> text = Error::message("unread");
    {
        auto c = openExisting(root_dir, id);
        if (!c) return c.error();
        const Status3 status = statusOf(c->dir.get(), c->record);
        if (status == Status3::Paused) return Error::message("cannot exec in a paused container");
        if (status == Status3::Stopped)
            return Error::message("cannot exec in a stopped container");  // runc's words
        if (status != Status3::Running)
            return Error::message("cannot exec in a container that is not running");
        record = c->record;
        init = pidfdOf(record);
        if (!init) return Error::message("container not running");
        // The container's own filter, from the config create read and kept
        // in the runtime's directory: the bundle may have changed since,
        // by the container itself where it is bound inside.
        text = readSmallFile(c->dir.get(), kConfigFile, id + "/" + kConfigFile, kMaxConfigBytes);
        if (!text)
            return text.error().withContext(
                "exec: the container's config as create read it (a container made by a "
                "stockade before 2026-12-05 has none: make it again)");
    }
    auto config = parseConfig(text->content);
    if (!config) return config.error();
    if (ask.process_file.empty()) {
        auto flagged = processFromFlags(*config, ask);
        if (!flagged) return flagged.error();
        process = std::move(*flagged);
    }
    // A process that may remount (CAP_SYS_ADMIN in its bounding set, as
    // podman's `exec --privileged` asks) can undo nodev: as root only where
    // the container's own device rules hold behind it (oci/device_cgroup.h).
    if (mayRemount(process)) {
        auto devices = record.enforced.find("devices");
        if (isHostRoot() &&
            (devices == record.enforced.end() || devices->second.starts_with("none")))
            return Error::message(
                "process.json: process.capabilities: CAP_SYS_ADMIN: the container has no device "
                "cgroup of its own (created rootless, where none could be made, or by an older "
                "stockade), and a "
                "process that may remount its mounts could open a device node of its image");
    }
    // An idmapped root's processes, as its command: the privileged-file
    // guard and no CAP_SETFCAP (a record from before 2026-12-06, which does
    // not say, is taken as idmapped).
    auto root = record.enforced.find("root");
    const bool idmapped_root = root == record.enforced.end() || root->second == "idmapped";
    if (idmapped_root) process.capabilities = withoutFileCapabilitySetting(process.capabilities);
    auto program = seccompProgramFor(*config, record.profile, {mayRemount(process), idmapped_root});
    if (!program) return program.error();
    // process.user.additionalGids as the host gids the container's gid map
    // gives them, taken before joining its user namespace, which denies
    // setgroups (oci/groups.h). The map is the kernel's, read from the
    // host's /proc for the init the pidfd holds: still alive after the read,
    // so the pid named no other process.
    std::vector<IdMap> extents;
    const bool as_root = isHostRoot();
    // With the ids of the caller's own namespace (rootless podman's, which
    // maps its subordinate ids: oci/state.h callerNamespaceWidth), the
    // groups and the stdio pipes are given as root gives them, in the
    // caller's namespace. The caller's groups stay under the annotation.
    // As create made the container (state's enforced.ids), and only while
    // the caller is still in a namespace that wide (the same podman's). A
    // record from before enforced.ids (2026-12-07) is judged by the width
    // alone, as exec judged it then.
    const bool keep_groups = keepsOriginalGroups(config->annotations);
    auto ids = record.enforced.find("ids");
    const bool callers_ids = ids == record.enforced.end() || ids->second == "the caller's";
    const bool own_ids = as_root || (!keep_groups && callers_ids && callerNamespaceWidth() > 1);
    if (own_ids) {
        const std::string path = "/proc/" + std::to_string(record.pid) + "/gid_map";
        auto map = readSmallFile(AT_FDCWD, path.c_str(), path, 64 * 1024);
        if (!map) return map.error();
        if (syscall(SYS_pidfd_send_signal, init.get(), 0, nullptr, 0) < 0)
            return Error::message("container not running");
        auto parsed = parseGidMap(map->content);
        if (!parsed) return parsed.error();
        extents = std::move(*parsed);
        // The caller's stdio pipes given to the process's host uid, as
        // create gives them (oci/stdio_pipes.h); the uid map read as the gid
        // map is, the init still alive after.
        const std::string uid_path = "/proc/" + std::to_string(record.pid) + "/uid_map";
        auto uid_map = readSmallFile(AT_FDCWD, uid_path.c_str(), uid_path, 64 * 1024);
        if (!uid_map) return uid_map.error();
        if (syscall(SYS_pidfd_send_signal, init.get(), 0, nullptr, 0) < 0)
            return Error::message("container not running");
        auto uids = parseGidMap(uid_map->content, "uid_map");
        if (!uids) return uids.error();
        bool uid_mapped = false, gid_mapped = false;
        for (const IdMap& m : *uids)
            if (process.uid >= m.container_id && process.uid - m.container_id < m.size) {
                giveStdioPipes(m.host_id + (process.uid - m.container_id));
                uid_mapped = true;
            }
        for (const IdMap& m : extents)
            gid_mapped = gid_mapped ||
                         (process.gid >= m.container_id && process.gid - m.container_id < m.size);
        // Said here, in the words of what was asked, rather than as a
        // supplementary group or a setresuid that fails later.
        if (!uid_mapped || !gid_mapped)
            return Error::message("process.json: process.user." +
                                  (uid_mapped ? "gid " + std::to_string(process.gid)
                                              : "uid " + std::to_string(process.uid)) +
                                  " is not mapped in the container's user namespace (" +
                                  describeIdMap(uid_mapped ? extents : *uids) +
                                  "): the container has no such id to run as");
    }
    auto groups = hostGroupsFor(process.additional_gids, process.gid, extents, own_ids, keep_groups,
                                "process.json: process.user.additionalGids");
    if (!groups) return groups.error();

    UniqueFd console, console_ours;
    if (process.terminal && !ask.console_socket.empty()) {
        auto connected = connectConsoleSocket(ask.console_socket);
        if (!connected) return connected.error();
        console = std::move(*connected);
    } else if (process.terminal) {
        int pair[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
            return Error::fromErrno("socketpair(AF_UNIX, SOCK_STREAM)");
        console_ours.reset(pair[0]);
        console.reset(pair[1]);
        // Relayed, the pty takes the caller's size as it is made, before
        // the process runs (the relay gave it only after: a command's
        // `stty size` under load read 0 0).
        if (auto size = callerTerminalSize()) {
            process.console_rows = size->ws_row;
            process.console_cols = size->ws_col;
        }
    }
    // The pid file's directory is the caller's: held before the setns
    // below puts this process in the container's mount namespace.
    UniqueFd pid_dir;
    std::string pid_name;
    if (!ask.pid_file.empty()) {
        size_t slash = ask.pid_file.rfind('/');
        std::string dir = slash == std::string::npos ? "." : ask.pid_file.substr(0, slash + 1);
        pid_name = slash == std::string::npos ? ask.pid_file : ask.pid_file.substr(slash + 1);
        pid_dir.reset(open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (!pid_dir || pid_name.empty())
            return Error::fromErrno("--pid-file: open(\"" + dir + "\")");
    }
    // The pid file is written by a process left on the host as the caller:
    // this one joins the container's user namespace below, where host
    // root's override no longer reaches a directory another user owns.
    PidFileWriter pid_writer;
    if (pid_dir) {
        auto started = PidFileWriter::start(std::move(pid_dir), pid_name, ask.pid_file);
        if (!started) return started.error();
        pid_writer = std::move(*started);
    }
    // process.oomScoreAdj, inherited by the fork (below the caller's it
    // needs CAP_SYS_RESOURCE).
    if (process.oom_score_adj) {
        UniqueFd adj(open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC));
        const std::string value = std::to_string(*process.oom_score_adj);
        if (!adj ||
            write(adj.get(), value.data(), value.size()) != static_cast<ssize_t>(value.size()))
            return Error::fromErrno("process.json: process.oomScoreAdj: write(" + value + ")");
    }
    int report[2];
    if (pipe2(report, O_CLOEXEC) < 0) return Error::fromErrno("pipe2()");
    UniqueFd report_read(report[0]), report_write(report[1]);

    // As host root: the process's groups as host gids and none of root's
    // (the container's user namespace denies setgroups: they cannot be set
    // once inside, nor changed); then its cgroups, and every namespace of
    // its init at once (setns(2) on a pidfd), so the fork lands in its pid
    // namespace.
    const int last_cap = hostLastCap();
    if (own_ids && setgroups(groups->size(), groups->data()) < 0)
        return Error::fromErrno("setgroups(" + std::to_string(groups->size()) +
                                " host gids of process.user.additionalGids)");
        // Not dumpable until the execve (which resets it): between the fork and
        // its setresuid the process is the caller's host uid inside the
        // container's pid namespace, where a container process holding
        // CAP_SYS_PTRACE could otherwise attach to it (runc does the same).
#if defined(__SANITIZE_ADDRESS__)
    // The sanitizer build only: LeakSanitizer checks a process at its exit by
    // stopping it with ptrace from a task of its own, which this process,
    // non-dumpable and in the container's user namespace from here on,
    // cannot be: it waited forever (a sched_yield loop, seen with strace).
    // So the check runs now, while it can, and not at exit.
    __lsan_do_leak_check();
#endif
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) return Error::fromErrno("prctl(PR_SET_DUMPABLE)");
    const std::string self = std::to_string(getpid());
    for (const std::string& dir : record.cgroups) {
        std::ofstream procs(dir + "/cgroup.procs");
        if (!(procs << self << std::flush))
            return Error::message("join the cgroup " + dir + ": write failed");
    }
    // A pid namespace joined by path is owned by another container's user
    // namespace, out of the reach of this one's: joined first, alone, with
    // the caller's own credentials (oci/pid_join.h).
    const bool joined_pid = pidNamespaceJoined(record);
    if (joined_pid && setns(init.get(), CLONE_NEWPID) < 0)
        return Error::fromErrno("setns() into the container's joined pid namespace");
    // The command's own pid namespace, beneath init's (its PID 1 is the
    // command: ChildPlan::command_pid_ns), named by init's pid_for_children
    // while this process still sees the host's /proc; init still alive
    // after the open, so the pid named init.
    UniqueFd command_pid_ns;
    // A plain user's container: init is not dumpable and its mm is the
    // host user namespace's, so its namespaces are out of its owner's
    // reach; the command's are not (commandNamespaces, above).
    std::vector<std::pair<UniqueFd, int>> through_command;
    if (!isHostRoot() && !joined_pid) {
        const std::string probe = "/proc/" + std::to_string(record.pid) + "/ns/user";
        UniqueFd reach(open(probe.c_str(), O_RDONLY | O_CLOEXEC));
        if (!reach && errno == EACCES) {
            auto fds = commandNamespaces(record, init.get());
            if (!fds) return fds.error();
            through_command = std::move(*fds);
        }
    }
    if (!through_command.empty()) {
        // The user namespace first: the others are its to enter.
        for (auto& [fd, type] : through_command)
            if (setns(fd.get(), type) < 0)
                return Error::fromErrno(std::string("setns() into the container's ") +
                                        nsName(type) + " namespace, by its command's");
    } else if (commandPidNamespaceNested(record)) {
        const std::string path = "/proc/" + std::to_string(record.pid) + "/ns/pid_for_children";
        command_pid_ns.reset(open(path.c_str(), O_RDONLY | O_CLOEXEC));
        if (!command_pid_ns) return Error::fromErrno("open(\"" + path + "\")");
        if (syscall(SYS_pidfd_send_signal, init.get(), 0, nullptr, 0) < 0)
            return Error::message("container not running");
        if (ioctl(command_pid_ns.get(), NS_GET_NSTYPE) != CLONE_NEWPID)
            return Error::message(path + " is not a pid namespace");
    }
    if (through_command.empty() &&
        setns(init.get(), CLONE_NEWUSER | CLONE_NEWNS | (joined_pid ? 0 : CLONE_NEWPID) |
                              CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP) < 0)
        return Error::fromErrno("setns() into the container's namespaces");
    if (command_pid_ns && setns(command_pid_ns.get(), CLONE_NEWPID) < 0)
        return Error::fromErrno("setns() into the command's pid namespace");

    pid_t pid = fork();
    // A pid namespace whose PID 1 has ended takes no process (ENOMEM): the
    // command ended, and the container with it.
    if (pid < 0 && errno == ENOMEM && (command_pid_ns || !through_command.empty()))
        return Error::message("container not running");
    if (pid < 0) return Error::fromErrno("fork()");
    if (pid == 0) {
        report_read.reset();
        becomeProcess(process, config->personality, last_cap, *program, console.get(),
                      report_write.get());
    }
    report_write.reset();
    console.reset();
    ExecFailure failure{};
    ssize_t n;
    while ((n = read(report_read.get(), &failure, sizeof(failure))) < 0 && errno == EINTR) {
    }
    if (n == sizeof(failure)) {
        int status = 0;
        waitpid(pid, &status, 0);
        const std::string& name = process.args[0];
        // The file was found (by path or on PATH) and execve failed: a #!
        // interpreter the image lacks (ENOENT), in runc's words, not the
        // "stat" of a file that is there.
        if (failure.stage == ExecStage::Exec && failure.err == ENOENT)
            return Error::message("exec " + name + ": no such file or directory");
        if (failure.stage == ExecStage::Find || failure.stage == ExecStage::Exec) {
            if (failure.err == ENOENT || failure.err == ENOTDIR || failure.err == EACCES)
                return Error::message(execFailureText(name, failure.err));
        }
        return Error::message(std::string("exec failed: ") + stageName(failure.stage) + ": " +
                              strerror(failure.err));
    }
    if (pid_writer.running()) {
        if (auto s = pid_writer.write(pid); !s) {
            kill(pid, SIGKILL);
            waitpid(pid, nullptr, 0);
            return s.error();
        }
    }
    // Detached, the process is the caller's subreaper's child once this
    // exits (as the container's init is); otherwise its status is ours.
    if (ask.detach) return 0;
    int status = 0;
    if (console_ours) {
        // Signals that reach exec go on to the process while the terminal
        // is relayed (blocked only now: the fork cleared its own mask).
        sigset_t forwarded = signalsForInit();
        if (sigprocmask(SIG_BLOCK, &forwarded, nullptr) < 0)
            return Error::fromErrno("sigprocmask()");
        auto master = receivedPtyMaster(console_ours.get());
        auto relayed =
            master ? relayTerminal(master->get(), pid, forwarded) : Result<int>(master.error());
        if (!relayed) {
            kill(pid, SIGKILL);
            waitpid(pid, nullptr, 0);
            return relayed.error();
        }
        status = *relayed;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace stockade::oci
