// stockade-probe: runs inside the sandbox, performs one attack or observation,
// and prints what the kernel answered as `key=value` lines on stdout.
//
//   stockade-probe ACTION [ARG...]
//
// `result=` is "ok" or the errno's symbolic name ("EROFS"). The probe exits 0
// unless the action itself is about the exit status (exit, raise) or the
// action is unknown or misused (exit 2, `error=` line).
//
// Every attack here must stay harmless when the sandbox is broken and the
// probe runs as real root on the host: it writes back values that are already
// there, creates only unnamed (O_TMPFILE) or self-removed files, opens for
// writing without truncating, and signals only pids it was given. The probe
// uses nothing of stockade, only libc and raw system calls, and is linked
// statically so that it runs under any --rootfs.

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr size_t kMaxContent = 4096;

// Output goes straight to fd 1 with write(2), one line per call, so that a
// host-side reader sees each line the moment it is printed (sleep-with-token
// and daemonize are read while the probe is still running).
void emit(std::string_view key, std::string_view value) {
    std::string line;
    line.reserve(key.size() + value.size() + 2);
    line.append(key).append("=").append(value).append("\n");
    const char* p = line.data();
    size_t left = line.size();
    while (left > 0) {
        const ssize_t n = ::write(STDOUT_FILENO, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        p += n;
        left -= static_cast<size_t>(n);
    }
}

std::string errName(int err) {
    if (err == 0) return "ok";
    if (const char* name = strerrorname_np(err)) return name;
    return "errno" + std::to_string(err);
}

// Reports the outcome of a call that returned `rc` (negative on failure).
void emitResult(long rc, int err) {
    emit("result", rc < 0 ? errName(err) : "ok");
}

// Bytes as one printable line: \n, \t, \\, \0 and \xNN escaped.
std::string escape(std::string_view bytes) {
    std::string out;
    for (const unsigned char c : bytes) {
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\0') {
            out += "\\0";
        } else if (c < 0x20 || c >= 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

// Reads at most `limit` bytes of `path`; returns -errno on failure.
int readSome(const char* path, std::string& out, size_t limit) {
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) return -errno;
    out.clear();
    char buf[4096];
    int rc = 0;
    while (out.size() < limit) {
        const ssize_t n = ::read(fd, buf, std::min(sizeof buf, limit - out.size()));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            rc = -errno;
            break;
        }
        if (n == 0) break;
        out.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return rc;
}

std::string readOrEmpty(const char* path) {
    std::string s;
    if (readSome(path, s, 1 << 20) < 0) s.clear();
    return s;
}

std::vector<std::string> splitLines(const std::string& text) {
    std::vector<std::string> lines;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        lines.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return lines;
}

// "/tmp/stockade-probe-XXXXXX", created empty; "" on failure (errno set).
std::string makeScratchDir() {
    char templ[] = "/tmp/stockade-probe-XXXXXX";
    if (::mkdtemp(templ) == nullptr) return {};
    return templ;
}

using Args = std::vector<std::string>;
using Action = std::function<int(const Args&)>;

struct ActionSpec {
    size_t argCount;
    const char* usage;
    Action run;
};

// --- filesystem --------------------------------------------------------------

int readFile(const Args& a) {
    std::string content;
    const int rc = readSome(a[0].c_str(), content, kMaxContent);
    emit("result", errName(-rc));
    if (rc == 0) {
        emit("bytes", std::to_string(content.size()));
        emit("content", escape(content));
    }
    return 0;
}

// Opens for writing without O_CREAT or O_TRUNC, writes nothing.
int openWrite(const Args& a) {
    const int fd = ::open(a[0].c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    emitResult(fd, errno);
    if (fd >= 0) ::close(fd);
    return 0;
}

// Writes a file's own current content back over it, from offset 0 in one
// write (as /proc/sys files require). Harmless when it succeeds.
int rewriteSame(const Args& a) {
    std::string content;
    const int rc = readSome(a[0].c_str(), content, 1 << 16);
    if (rc < 0) {
        emit("stage", "read");
        emit("result", errName(-rc));
        return 0;
    }
    const int fd = ::open(a[0].c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        emit("stage", "open");
        emitResult(-1, errno);
        return 0;
    }
    const ssize_t n = ::write(fd, content.data(), content.size());
    const int err = errno;
    ::close(fd);
    emit("stage", "write");
    emitResult(n, err);
    return 0;
}

// Asks whether a new file may be created in DIR without leaving one behind:
// an O_TMPFILE file has no name and vanishes on close. The kernel checks a
// read-only mount (EROFS) and directory permissions (EACCES) first.
int createIn(const Args& a) {
    const int fd = ::open(a[0].c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    emitResult(fd, errno);
    if (fd >= 0) ::close(fd);
    return 0;
}

// Creates a named file; only under the sandbox's own writable places, so that
// a broken sandbox cannot make it litter the host.
int createFile(const Args& a) {
    const std::string& path = a[0];
    const bool allowed = path.rfind("/repo/", 0) == 0 || path.rfind("/tmp/", 0) == 0 ||
                         path.rfind("/var/tmp/", 0) == 0;
    if (!allowed || path.find("/../") != std::string::npos) {
        emit("error", "create-file only writes under /repo/, /tmp/ or /var/tmp/");
        return 2;
    }
    const int fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) {
        emitResult(-1, errno);
        return 0;
    }
    const ssize_t n = ::write(fd, a[1].data(), a[1].size());
    const int err = errno;
    ::close(fd);
    emitResult(n, err);
    return 0;
}

const char* fileType(mode_t mode) {
    switch (mode & S_IFMT) {
        case S_IFREG:
            return "file";
        case S_IFDIR:
            return "dir";
        case S_IFLNK:
            return "symlink";
        case S_IFCHR:
            return "char";
        case S_IFBLK:
            return "block";
        case S_IFIFO:
            return "fifo";
        case S_IFSOCK:
            return "socket";
        default:
            return "unknown";
    }
}

// lstat plus the mount's read-only flag and filesystem magic.
int statPath(const Args& a) {
    struct stat st {};
    if (::lstat(a[0].c_str(), &st) < 0) {
        emitResult(-1, errno);
        return 0;
    }
    emit("result", "ok");
    emit("type", fileType(st.st_mode));
    char buf[32];
    std::snprintf(buf, sizeof buf, "%o", st.st_mode & 07777);
    emit("mode", buf);
    emit("uid", std::to_string(st.st_uid));
    emit("gid", std::to_string(st.st_gid));
    emit("rdev", std::to_string(major(st.st_rdev)) + ":" + std::to_string(minor(st.st_rdev)));
    emit("size", std::to_string(st.st_size));
    // These two follow a symlink: they describe the mount the path leads to.
    struct statvfs vfs {};
    if (::statvfs(a[0].c_str(), &vfs) == 0) emit("readonly", (vfs.f_flag & ST_RDONLY) ? "1" : "0");
    struct statfs fs {};
    if (::statfs(a[0].c_str(), &fs) == 0) {
        std::snprintf(buf, sizeof buf, "0x%lx", static_cast<unsigned long>(fs.f_type));
        emit("fsmagic", buf);
    }
    return 0;
}

int listDir(const Args& a) {
    DIR* dir = ::opendir(a[0].c_str());
    if (dir == nullptr) {
        emitResult(-1, errno);
        return 0;
    }
    emit("result", "ok");
    while (const dirent* e = ::readdir(dir)) {
        const std::string_view name = e->d_name;
        if (name != "." && name != "..") emit("entry", name);
    }
    ::closedir(dir);
    return 0;
}

int readLink(const Args& a) {
    char buf[4096];
    const ssize_t n = ::readlink(a[0].c_str(), buf, sizeof buf);
    emitResult(n, errno);
    if (n >= 0) emit("target", std::string_view(buf, static_cast<size_t>(n)));
    return 0;
}

// Only under /repo/ (or /tmp/): a broken sandbox has no /repo, so these can
// touch nothing of the host's.
bool underRepoOrTmp(const std::string& path) {
    return (path.rfind("/repo/", 0) == 0 || path.rfind("/tmp/", 0) == 0) &&
           path.find("/../") == std::string::npos;
}

int linkFile(const Args& a) {
    if (!underRepoOrTmp(a[1])) {
        emit("error", "link only creates names under /repo/ or /tmp/");
        return 2;
    }
    const int rc = ::link(a[0].c_str(), a[1].c_str());
    const int err = errno;
    if (rc == 0) ::unlink(a[1].c_str());
    emitResult(rc, err);
    return 0;
}

// Renames within /repo and, if that worked, puts the name back at once.
int renamePath(const Args& a) {
    if (!underRepoOrTmp(a[0]) || !underRepoOrTmp(a[1])) {
        emit("error", "rename only works under /repo/ or /tmp/");
        return 2;
    }
    const int rc = ::rename(a[0].c_str(), a[1].c_str());
    const int err = errno;
    if (rc == 0) ::rename(a[1].c_str(), a[0].c_str());
    emitResult(rc, err);
    return 0;
}

// Every mount this process sees: "MOUNTPOINT FSTYPE OPTIONS".
int mounts(const Args&) {
    for (const std::string& line : splitLines(readOrEmpty("/proc/self/mountinfo"))) {
        std::vector<std::string> f;
        size_t pos = 0;
        while (pos < line.size()) {
            size_t end = line.find(' ', pos);
            if (end == std::string::npos) end = line.size();
            f.push_back(line.substr(pos, end - pos));
            pos = end + 1;
        }
        size_t dash = 6;
        while (dash < f.size() && f[dash] != "-") ++dash;
        if (f.size() < 6 || dash + 1 >= f.size()) continue;
        emit("mount", f[4] + " " + f[dash + 1] + " " + f[5]);
    }
    return 0;
}

int cwd(const Args&) {
    char buf[4096];
    emit("value", ::getcwd(buf, sizeof buf) != nullptr ? buf : errName(errno));
    return 0;
}

// --- network -----------------------------------------------------------------

bool parseAddress(const std::string& host, const std::string& port, sockaddr_storage& out,
                  socklen_t& len) {
    const int portNumber = std::atoi(port.c_str());
    auto* v4 = reinterpret_cast<sockaddr_in*>(&out);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&out);
    out = {};
    if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(static_cast<uint16_t>(portNumber));
        len = sizeof *v4;
        return true;
    }
    if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(static_cast<uint16_t>(portNumber));
        len = sizeof *v6;
        return true;
    }
    return false;
}

// A blocking-style connect bounded at three seconds.
int connectWithTimeout(int fd, const sockaddr* addr, socklen_t len) {
    if (::connect(fd, addr, len) == 0) return 0;
    if (errno != EINPROGRESS) return -errno;
    pollfd p{fd, POLLOUT, 0};
    const int ready = ::poll(&p, 1, 3000);
    if (ready == 0) return -ETIMEDOUT;
    if (ready < 0) return -errno;
    int soError = 0;
    socklen_t soLen = sizeof soError;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &soLen);
    return -soError;
}

int connectTcp(const Args& a) {
    sockaddr_storage addr;
    socklen_t len = 0;
    if (!parseAddress(a[0], a[1], addr, len)) {
        emit("error", "bad address");
        return 2;
    }
    const int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        emit("stage", "socket");
        emitResult(-1, errno);
        return 0;
    }
    const int rc = connectWithTimeout(fd, reinterpret_cast<sockaddr*>(&addr), len);
    ::close(fd);
    emit("result", errName(-rc));
    return 0;
}

// Binds and listens on HOST PORT, says whether it could, and holds the
// listener for SECONDS: a second port a dev server opens beside its own.
int listenTcp(const Args& a) {
    sockaddr_storage addr;
    socklen_t len = 0;
    if (!parseAddress(a[0], a[1], addr, len)) {
        emit("error", "bad address");
        return 2;
    }
    const int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    long rc = fd < 0 ? -1 : ::bind(fd, reinterpret_cast<sockaddr*>(&addr), len);
    if (rc == 0) rc = ::listen(fd, 16);
    emitResult(rc, errno);
    timespec left{std::atoi(a[2].c_str()), 0};
    while (rc == 0 && ::nanosleep(&left, &left) < 0 && errno == EINTR) {
    }
    return 0;
}

// connect(2) on a UDP socket only looks up a route and sends nothing, so this
// asks "is there a way out to HOST?" without putting a packet on any wire.
int routeUdp(const Args& a) {
    sockaddr_storage addr;
    socklen_t len = 0;
    if (!parseAddress(a[0], a[1], addr, len)) {
        emit("error", "bad address");
        return 2;
    }
    const int fd = ::socket(addr.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        emit("stage", "socket");
        emitResult(-1, errno);
        return 0;
    }
    const int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), len);
    const int err = errno;
    ::close(fd);
    emitResult(rc, err);
    return 0;
}

int connectUnixAddress(const sockaddr_un& addr, socklen_t len) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        emit("stage", "socket");
        emitResult(-1, errno);
        return 0;
    }
    const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), len);
    const int err = errno;
    ::close(fd);
    emitResult(rc, err);
    return 0;
}

int connectAbstract(const Args& a) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const size_t n = std::min(a[0].size(), sizeof addr.sun_path - 1);
    memcpy(addr.sun_path + 1, a[0].data(), n);
    return connectUnixAddress(addr,
                              static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n));
}

int connectUnix(const Args& a) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", a[0].c_str());
    return connectUnixAddress(addr, sizeof addr);
}

// Interfaces from /proc/net/dev with their IFF_UP flag, and every route the
// kernel lists for this network namespace.
int ifaces(const Args&) {
    const int sock = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    const std::vector<std::string> lines = splitLines(readOrEmpty("/proc/net/dev"));
    for (size_t i = 2; i < lines.size(); ++i) {
        const std::string& line = lines[i];
        const size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        const size_t first = line.find_first_not_of(' ');
        const std::string name = line.substr(first, colon - first);
        ifreq req{};
        std::snprintf(req.ifr_name, sizeof req.ifr_name, "%s", name.c_str());
        std::string state = "unknown";
        if (sock >= 0 && ::ioctl(sock, SIOCGIFFLAGS, &req) == 0)
            state = (req.ifr_flags & IFF_UP) ? "up" : "down";
        emit("iface", name + ":" + state);
    }
    if (sock >= 0) ::close(sock);
    const std::vector<std::string> v4 = splitLines(readOrEmpty("/proc/net/route"));
    for (size_t i = 1; i < v4.size(); ++i) emit("route4", escape(v4[i]));
    for (const std::string& line : splitLines(readOrEmpty("/proc/net/ipv6_route")))
        emit("route6", escape(line));
    return 0;
}

// --- processes ---------------------------------------------------------------

int killPid(const Args& a) {
    const int rc = ::kill(std::atoi(a[0].c_str()), std::atoi(a[1].c_str()));
    emitResult(rc, errno);
    return 0;
}

// PTRACE_SEIZE does not stop the tracee; detach at once if it worked.
int ptracePid(const Args& a) {
    const pid_t pid = std::atoi(a[0].c_str());
    const long rc = ::ptrace(PTRACE_SEIZE, pid, nullptr, nullptr);
    const int err = errno;
    if (rc == 0) ::ptrace(PTRACE_DETACH, pid, nullptr, nullptr);
    emitResult(rc, err);
    return 0;
}

int listPids(const Args&) {
    emit("self", std::to_string(::getpid()));
    DIR* dir = ::opendir("/proc");
    if (dir == nullptr) {
        emitResult(-1, errno);
        return 0;
    }
    emit("result", "ok");
    while (const dirent* e = ::readdir(dir)) {
        const std::string_view name = e->d_name;
        if (!name.empty() && name.find_first_not_of("0123456789") == std::string_view::npos)
            emit("pid", name);
    }
    ::closedir(dir);
    return 0;
}

int listFds(const Args&) {
    const int dirFd = ::open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirFd < 0) {
        emitResult(-1, errno);
        return 0;
    }
    DIR* dir = ::fdopendir(dirFd);
    emit("result", "ok");
    while (const dirent* e = ::readdir(dir)) {
        const std::string_view name = e->d_name;
        if (name == "." || name == ".." || std::atoi(e->d_name) == dirFd) continue;
        char target[4096];
        const ssize_t n = ::readlinkat(dirFd, e->d_name, target, sizeof target);
        emit("fd", std::string(name) + ":" +
                       (n >= 0 ? std::string(target, static_cast<size_t>(n)) : "?"));
    }
    ::closedir(dir);
    return 0;
}

// Whatever arrives on stdin within one second.
int readStdin(const Args&) {
    pollfd p{STDIN_FILENO, POLLIN, 0};
    std::string data;
    if (::poll(&p, 1, 1000) > 0) {
        char buf[4096];
        const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
        if (n < 0) {
            emitResult(-1, errno);
            return 0;
        }
        data.assign(buf, static_cast<size_t>(n));
    }
    emit("result", "ok");
    emit("bytes", std::to_string(data.size()));
    emit("content", escape(data));
    return 0;
}

// Sleeps SECONDS with TOKEN in its argv, so the host can find it in /proc.
int sleepWithToken(const Args& a) {
    emit("pid", std::to_string(::getpid()));
    emit("ready", a[0]);
    timespec left{std::atoi(a[1].c_str()), 0};
    while (::nanosleep(&left, &left) < 0 && errno == EINTR) {
    }
    return 0;
}

// The classic daemon: fork, setsid, fork again; the grandchild re-executes the
// probe as `sleep-with-token TOKEN 120` (bounded, so even a broken sandbox
// leaves nothing forever) and the probe returns once it has started.
int daemonize(const Args& a) {
    int ready[2];
    if (::pipe2(ready, O_CLOEXEC) < 0) {
        emitResult(-1, errno);
        return 0;
    }
    const pid_t child = ::fork();
    if (child < 0) {
        emitResult(-1, errno);
        return 0;
    }
    if (child == 0) {
        ::setsid();
        const pid_t grandchild = ::fork();
        if (grandchild != 0) ::_exit(grandchild > 0 ? 0 : 1);
        const int devnull = ::open("/dev/null", O_RDWR);
        if (devnull >= 0) {
            ::dup2(devnull, STDIN_FILENO);
            ::dup2(devnull, STDOUT_FILENO);
            ::dup2(devnull, STDERR_FILENO);
        }
        const std::string token = a[0];
        char self[] = "/proc/self/exe";
        char* argv[] = {const_cast<char*>("stockade-probe"), const_cast<char*>("sleep-with-token"),
                        const_cast<char*>(token.c_str()), const_cast<char*>("120"), nullptr};
        char* envp[] = {nullptr};
        // The pipe's write end closes on exec: that is the "started" signal.
        ::execve(self, argv, envp);
        ::_exit(127);
    }
    ::close(ready[1]);
    int status = 0;
    ::waitpid(child, &status, 0);
    char byte;
    while (::read(ready[0], &byte, 1) < 0 && errno == EINTR) {
    }
    ::close(ready[0]);
    emit("result", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "ok" : "fork-failed");
    return 0;
}

// Like daemonize, but the daemon keeps the run's stdout and stderr open: a
// supervisor that waits for EOF on its pipes would wait for it forever.
int daemonizeKeepStdio(const Args& a) {
    const pid_t child = ::fork();
    if (child < 0) {
        emitResult(-1, errno);
        return 0;
    }
    if (child == 0) {
        ::setsid();
        if (::fork() != 0) ::_exit(0);
        const std::string token = a[0];
        char self[] = "/proc/self/exe";
        char* argv[] = {const_cast<char*>("stockade-probe"), const_cast<char*>("sleep-with-token"),
                        const_cast<char*>(token.c_str()), const_cast<char*>("120"), nullptr};
        char* envp[] = {nullptr};
        ::execve(self, argv, envp);
        ::_exit(127);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    emit("result", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "ok" : "fork-failed");
    return 0;
}

// Leaves N exited orphans for PID 1 to reap, then counts the zombies left
// after half a second.
int orphanZombies(const Args& a) {
    const int count = std::atoi(a[0].c_str());
    for (int i = 0; i < count; ++i) {
        const pid_t child = ::fork();
        if (child == 0) {
            if (::fork() == 0) {
                ::usleep(50 * 1000);  // outlive the parent: an orphan when it exits
                ::_exit(0);
            }
            ::_exit(0);
        }
        if (child > 0) ::waitpid(child, nullptr, 0);
    }
    ::usleep(500 * 1000);
    int zombies = 0;
    DIR* dir = ::opendir("/proc");
    while (dir != nullptr) {
        const dirent* e = ::readdir(dir);
        if (e == nullptr) break;
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        const std::string stat = readOrEmpty((std::string("/proc/") + e->d_name + "/stat").c_str());
        const size_t close = stat.rfind(')');
        if (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z')
            ++zombies;
    }
    if (dir != nullptr) ::closedir(dir);
    emit("result", "ok");
    emit("zombies", std::to_string(zombies));
    return 0;
}

// --- identity and privileges -------------------------------------------------

int ids(const Args&) {
    uid_t r, e, s;
    gid_t rg, eg, sg;
    ::getresuid(&r, &e, &s);
    ::getresgid(&rg, &eg, &sg);
    emit("uid", std::to_string(r));
    emit("euid", std::to_string(e));
    emit("suid", std::to_string(s));
    emit("gid", std::to_string(rg));
    emit("egid", std::to_string(eg));
    emit("sgid", std::to_string(sg));
    gid_t groups[256];
    const int n = ::getgroups(256, groups);
    std::string list;
    for (int i = 0; i < n; ++i) list += (i ? "," : "") + std::to_string(groups[i]);
    emit("groups", list);
    return 0;
}

// The capability, no_new_privs and seccomp lines of /proc/self/status, and
// the securebits as the kernel reports them.
int caps(const Args&) {
    for (const std::string& line : splitLines(readOrEmpty("/proc/self/status"))) {
        const size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        const std::string key = line.substr(0, colon);
        if (key.rfind("Cap", 0) == 0 || key == "NoNewPrivs" || key == "Seccomp") {
            const size_t start = line.find_first_not_of(" \t", colon + 1);
            emit(key, start == std::string::npos ? "" : line.substr(start));
        }
    }
    const int bits = ::prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
    emit("securebits", std::to_string(bits));
    emit("dumpable", std::to_string(::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0)));
    return 0;
}

// Only this process's ids change if it works.
int setuid0(const Args&) {
    const int rc = ::setuid(0);
    emitResult(rc, errno);
    emit("uid", std::to_string(::getuid()));
    return 0;
}

int setgid0(const Args&) {
    const int rc = ::setgid(0);
    emitResult(rc, errno);
    return 0;
}

int setgroupsEmpty(const Args&) {
    const int rc = ::setgroups(0, nullptr);
    emitResult(rc, errno);
    return 0;
}

// Asks for every capability in the effective, permitted and inheritable sets.
int capsetRaise(const Args&) {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2];
    for (auto& d : data) d = {0xffffffffu, 0xffffffffu, 0xffffffffu};
    const long rc = ::syscall(SYS_capset, &header, data);
    emitResult(rc, errno);
    return 0;
}

int securebitsClear(const Args&) {
    const int rc = ::prctl(PR_SET_SECUREBITS, 0, 0, 0, 0);
    emitResult(rc, errno);
    return 0;
}

int ambientRaise(const Args&) {
    const int rc = ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SYS_ADMIN, 0, 0);
    emitResult(rc, errno);
    return 0;
}

// Mounts a tmpfs on a directory the probe made itself, and undoes both at
// once if the kernel let it.
int mountTmpfs(const Args&) {
    const std::string dir = makeScratchDir();
    if (dir.empty()) {
        emit("stage", "mkdtemp");
        emitResult(-1, errno);
        return 0;
    }
    const int rc = ::mount("stockade-probe", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=4k");
    const int err = errno;
    if (rc == 0) ::umount2(dir.c_str(), MNT_DETACH);
    ::rmdir(dir.c_str());
    emitResult(rc, err);
    return 0;
}

// The new mount API's first step; it changes nothing by itself.
int fsopenTmpfs(const Args&) {
    const long fd = ::syscall(SYS_fsopen, "tmpfs", 1 /* FSOPEN_CLOEXEC */);
    emitResult(fd, errno);
    if (fd >= 0) ::close(static_cast<int>(fd));
    return 0;
}

int unshareNamespace(const Args& a) {
    static const std::map<std::string, int> flags = {
        {"user", CLONE_NEWUSER},    {"mount", CLONE_NEWNS}, {"net", CLONE_NEWNET},
        {"pid", CLONE_NEWPID},      {"ipc", CLONE_NEWIPC},  {"uts", CLONE_NEWUTS},
        {"cgroup", CLONE_NEWCGROUP}};
    const auto it = flags.find(a[0]);
    if (it == flags.end()) {
        emit("error", "unknown namespace " + a[0]);
        return 2;
    }
    const int rc = ::unshare(it->second);
    emitResult(rc, errno);
    return 0;
}

// A /dev/null twin in a directory of the probe's own, removed at once.
int mknodDevice(const Args&) {
    const std::string dir = makeScratchDir();
    if (dir.empty()) {
        emit("stage", "mkdtemp");
        emitResult(-1, errno);
        return 0;
    }
    const std::string node = dir + "/null";
    const int rc = ::mknod(node.c_str(), S_IFCHR | 0600, makedev(1, 3));
    const int err = errno;
    ::unlink(node.c_str());
    ::rmdir(dir.c_str());
    emitResult(rc, err);
    return 0;
}

// chroot("/") changes nothing even where it is allowed.
int chrootSelf(const Args&) {
    const int rc = ::chroot("/");
    emitResult(rc, errno);
    return 0;
}

// Looks a System V shared memory segment up by key; creates nothing.
int shmLookup(const Args& a) {
    const int id = ::shmget(static_cast<key_t>(std::atol(a[0].c_str())), 0, 0);
    emitResult(id, errno);
    return 0;
}

// --- session, terminal, host name ----------------------------------------------

// Field 7 of /proc/self/stat (tty_nr): the controlling terminal, 0 for none.
std::string ttyNumber() {
    const std::string stat = readOrEmpty("/proc/self/stat");
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) return "?";
    std::vector<std::string> fields;
    size_t pos = close + 2;
    while (pos < stat.size() && fields.size() < 5) {
        size_t end = stat.find(' ', pos);
        if (end == std::string::npos) end = stat.size();
        fields.push_back(stat.substr(pos, end - pos));
        pos = end + 1;
    }
    return fields.size() >= 5 ? fields[4] : "?";  // state ppid pgrp session tty_nr
}

int session(const Args&) {
    emit("pid", std::to_string(::getpid()));
    emit("ppid", std::to_string(::getppid()));
    emit("sid", std::to_string(::getsid(0)));
    emit("pgid", std::to_string(::getpgid(0)));
    emit("tty_nr", ttyNumber());
    for (int fd = 0; fd <= 2; ++fd) {
        char name[256];
        const int rc = ::ttyname_r(fd, name, sizeof name);
        emit("ttyname" + std::to_string(fd), rc == 0 ? name : errName(rc));
    }
    return 0;
}

int openTty(const Args&) {
    const int fd = ::open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
    emitResult(fd, errno);
    if (fd >= 0) ::close(fd);
    return 0;
}

// Tries to make FD's terminal the controlling one, stealing it from the
// session that has it (arg 1, which needs CAP_SYS_ADMIN in the initial user
// namespace). Where it works, only the probe's own session is affected.
int acquireCtty(const Args& a) {
    ::setsid();  // fails harmlessly when already a session leader
    const int rc = ::ioctl(std::atoi(a[0].c_str()), TIOCSCTTY, 1);
    emitResult(rc, errno);
    emit("tty_nr", ttyNumber());
    return 0;
}

int hostname(const Args&) {
    utsname u{};
    ::uname(&u);
    emit("value", u.nodename);
    return 0;
}

// Sets the host name to the one it already has.
int sethostnameSame(const Args&) {
    utsname u{};
    ::uname(&u);
    const int rc = ::sethostname(u.nodename, strlen(u.nodename));
    emitResult(rc, errno);
    return 0;
}

// --- exit status -------------------------------------------------------------

int exitWith(const Args& a) {
    return std::atoi(a[0].c_str());
}

int raiseSignal(const Args& a) {
    const int sig = std::atoi(a[0].c_str());
    ::signal(sig, SIG_DFL);
    ::raise(sig);
    emit("error", "still alive after raise");
    return 2;
}

int env(const Args&) {
    for (char** e = environ; *e != nullptr; ++e) emit("env", escape(*e));
    return 0;
}

const std::map<std::string, ActionSpec>& actions() {
    static const std::map<std::string, ActionSpec> table = {
        {"read-file", {1, "PATH", readFile}},
        {"open-write", {1, "PATH", openWrite}},
        {"rewrite-same", {1, "PATH", rewriteSame}},
        {"create-in", {1, "DIR", createIn}},
        {"create-file", {2, "PATH CONTENT", createFile}},
        {"stat", {1, "PATH", statPath}},
        {"list-dir", {1, "PATH", listDir}},
        {"readlink", {1, "PATH", readLink}},
        {"link", {2, "EXISTING NEW", linkFile}},
        {"rename", {2, "FROM TO", renamePath}},
        {"mounts", {0, "", mounts}},
        {"cwd", {0, "", cwd}},
        {"shmget", {1, "KEY", shmLookup}},
        {"connect-tcp", {2, "HOST PORT", connectTcp}},
        {"route-udp", {2, "HOST PORT", routeUdp}},
        {"listen-tcp", {3, "HOST PORT SECONDS", listenTcp}},
        {"connect-abstract", {1, "NAME", connectAbstract}},
        {"connect-unix", {1, "PATH", connectUnix}},
        {"ifaces", {0, "", ifaces}},
        {"kill", {2, "PID SIG", killPid}},
        {"ptrace", {1, "PID", ptracePid}},
        {"pids", {0, "", listPids}},
        {"fds", {0, "", listFds}},
        {"read-stdin", {0, "", readStdin}},
        {"env", {0, "", env}},
        {"sleep-with-token", {2, "TOKEN SECONDS", sleepWithToken}},
        {"daemonize", {1, "TOKEN", daemonize}},
        {"daemonize-keep-stdio", {1, "TOKEN", daemonizeKeepStdio}},
        {"orphan-zombies", {1, "N", orphanZombies}},
        {"ids", {0, "", ids}},
        {"caps", {0, "", caps}},
        {"setuid0", {0, "", setuid0}},
        {"setgid0", {0, "", setgid0}},
        {"setgroups", {0, "", setgroupsEmpty}},
        {"capset-raise", {0, "", capsetRaise}},
        {"securebits-clear", {0, "", securebitsClear}},
        {"ambient-raise", {0, "", ambientRaise}},
        {"mount-tmpfs", {0, "", mountTmpfs}},
        {"fsopen", {0, "", fsopenTmpfs}},
        {"unshare", {1, "user|mount|net|pid|ipc|uts|cgroup", unshareNamespace}},
        {"mknod", {0, "", mknodDevice}},
        {"chroot", {0, "", chrootSelf}},
        {"session", {0, "", session}},
        {"open-tty", {0, "", openTty}},
        {"acquire-ctty", {1, "FD", acquireCtty}},
        {"hostname", {0, "", hostname}},
        {"sethostname-same", {0, "", sethostnameSame}},
        {"exit", {1, "CODE", exitWith}},
        {"raise", {1, "SIGNAL", raiseSignal}},
    };
    return table;
}

int usage() {
    std::string text = "usage: stockade-probe ACTION [ARG...]\nactions:\n";
    for (const auto& [name, spec] : actions()) text += "  " + name + " " + spec.usage + "\n";
    ::write(STDERR_FILENO, text.data(), text.size());
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) return usage();
    const auto it = actions().find(argv[1]);
    if (it == actions().end()) {
        emit("error", std::string("unknown action ") + argv[1]);
        return usage();
    }
    const Args args(argv + 2, argv + argc);
    if (args.size() != it->second.argCount) {
        emit("error", std::string(argv[1]) + " takes " + std::to_string(it->second.argCount) +
                          " argument(s)");
        return 2;
    }
    return it->second.run(args);
}
