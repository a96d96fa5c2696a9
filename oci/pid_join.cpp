#include "oci/pid_join.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/mount.h>
#include <linux/nsfs.h>

#include <optional>

#include "base/fd_passing.h"

namespace stockade::oci {

namespace {

// The calls the helper makes, by index, for the error named in create.
constexpr const char* kHelperCalls[] = {"fsopen(\"proc\")", "fsconfig(FSCONFIG_SET_*, an option)",
                                        "fsconfig(FSCONFIG_CMD_CREATE)", "fsmount()"};

struct HelperReport {
    int32_t err = 0;
    int32_t call = 0;
};

// In the helper, a child of create born in the joined pid namespace: a
// proc of a pid namespace is that of its mounter's own (task_active_pid_ns),
// which setns(2) does not change for create itself. Fixed buffers only.
[[noreturn]] void mountProcsInHelper(int channel, const std::vector<JoinedProc>& asks) {
    for (const JoinedProc& ask : asks) {
        HelperReport report;
        int fd = -1;
        int fs = static_cast<int>(syscall(SYS_fsopen, "proc", FSOPEN_CLOEXEC));
        if (fs < 0) report = {errno, 0};
        // The options, "key=value" or a bare flag each, comma-separated.
        for (size_t at = 0; fs >= 0 && !report.err && at < ask.data.size();) {
            size_t end = ask.data.find(',', at);
            if (end == std::string::npos) end = ask.data.size();
            char option[256];
            const size_t length = end - at;
            if (length >= sizeof(option)) {
                report = {EINVAL, 1};
                break;
            }
            ask.data.copy(option, length, at);
            option[length] = '\0';
            at = end + 1;
            if (length == 0) continue;
            char* value = strchr(option, '=');
            if (value) *value++ = '\0';
            if (syscall(SYS_fsconfig, fs, value ? FSCONFIG_SET_STRING : FSCONFIG_SET_FLAG, option,
                        value, 0) < 0)
                report = {errno, 1};
        }
        if (fs >= 0 && !report.err &&
            syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) < 0)
            report = {errno, 2};
        if (fs >= 0 && !report.err) {
            fd = static_cast<int>(syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, ask.attrs));
            if (fd < 0) report = {errno, 3};
        }
        if (sendWithFds(channel, &report, sizeof(report), &fd, fd >= 0 ? 1 : 0) != 0) _exit(1);
        if (report.err) _exit(1);
        close(fd);
        close(fs);
    }
    _exit(0);
}

}  // namespace

namespace {

// The pid namespace of a stockade container's command, when `path` is
// /proc/PID/ns/pid of that container's init (`state`'s pid, which a pod's
// containers are given for its first's: the CRI plugin names the sandbox's
// task pid): its command is PID 1 of a namespace of its own beneath init's
// (ChildPlan::command_pid_ns), where runc's pod would find its first
// container's PID 1. Told by PID's executable being this one (by device
// and inode) and its pid_for_children a child of `joined` with a PID 1;
// an invalid fd otherwise, and the path is joined as named.
UniqueFd commandNamespaceOf(const std::string& path, const struct stat& joined) {
    const std::string prefix = "/proc/";
    const std::string suffix = "/ns/pid";
    if (!path.starts_with(prefix) || !path.ends_with(suffix) ||
        path.size() <= prefix.size() + suffix.size())
        return UniqueFd();
    const std::string pid = path.substr(prefix.size(), path.size() - prefix.size() - suffix.size());
    if (pid.find_first_not_of("0123456789") != std::string::npos) return UniqueFd();
    struct stat exe {};
    struct stat self {};
    if (stat(("/proc/" + pid + "/exe").c_str(), &exe) < 0 || stat("/proc/self/exe", &self) < 0 ||
        exe.st_dev != self.st_dev || exe.st_ino != self.st_ino)
        return UniqueFd();
    // Fails (ENOENT) where the namespace for children has no PID 1 yet.
    UniqueFd children(
        open(("/proc/" + pid + "/ns/pid_for_children").c_str(), O_RDONLY | O_CLOEXEC));
    if (!children || ioctl(children.get(), NS_GET_NSTYPE) != CLONE_NEWPID) return UniqueFd();
    UniqueFd parent(ioctl(children.get(), NS_GET_PARENT));
    struct stat up {};
    if (!parent || fstat(parent.get(), &up) < 0 || up.st_dev != joined.st_dev ||
        up.st_ino != joined.st_ino)
        return UniqueFd();
    return children;
}

}  // namespace

Result<UniqueFd> openJoinedPidNamespace(const std::string& path) {
    const std::string what = "linux.namespaces (pid): ";
    UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return Error::fromErrno(what + "open(\"" + path + "\")");
    const int type = ioctl(fd.get(), NS_GET_NSTYPE);
    if (type < 0) return Error::fromErrno(what + "ioctl(\"" + path + "\", NS_GET_NSTYPE)");
    if (type != CLONE_NEWPID)
        return Error::message("config.json: " + what + path + " is not a pid namespace");
    // The caller's own is joined as a config listing none is built (a
    // hostPID pod's containers name the pause's, which is the node's).
    // PID 1's, where the caller sits in another, is an ancestor of the
    // caller's, which setns(2) refuses: said here by name.
    struct stat joined {};
    struct stat own {};
    struct stat first {};
    if (fstat(fd.get(), &joined) < 0) return Error::fromErrno(what + "fstat(\"" + path + "\")");
    if (stat("/proc/self/ns/pid", &own) < 0)
        return Error::fromErrno(what + "stat(\"/proc/self/ns/pid\")");
    if (joined.st_dev == own.st_dev && joined.st_ino == own.st_ino) return fd;
    const bool init_seen = stat("/proc/1/ns/pid", &first) == 0;
    if (init_seen && joined.st_dev == first.st_dev && joined.st_ino == first.st_ino)
        return Error::message("config.json: " + what + path +
                              " is PID 1's pid namespace, above the caller's own, which a "
                              "process cannot join");
    if (UniqueFd command = commandNamespaceOf(path, joined)) return command;
    return fd;
}

Result<UniqueFd> openCallersPidNamespace() {
    UniqueFd fd(open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC));
    if (!fd)
        return Error::fromErrno(
            "linux.namespaces (none of type pid: the caller's): open(\"/proc/self/ns/pid\")");
    if (ioctl(fd.get(), NS_GET_NSTYPE) != CLONE_NEWPID)
        return Error::message(
            "linux.namespaces (none of type pid: the caller's): /proc/self/ns/pid is not a pid "
            "namespace (is /proc a proc filesystem?)");
    return fd;
}

namespace {

// Linux 6.17+: proc's "pidns" taken as an fd, so create makes the mount
// itself and no process of its is ever born in the joined namespace (where
// that namespace's processes could read the host's mount table and network
// through its /proc entries while it lives). nullopt where the kernel does
// not know the key (EINVAL): the helper below then.
std::optional<Result<UniqueFd>> mountWithPidnsFd(const JoinedProc& ask, int pidns_fd,
                                                 const std::string& where) {
    UniqueFd fs(static_cast<int>(syscall(SYS_fsopen, "proc", FSOPEN_CLOEXEC)));
    if (!fs) return Result<UniqueFd>(Error::fromErrno(where + ": fsopen(\"proc\")"));
    if (syscall(SYS_fsconfig, fs.get(), FSCONFIG_SET_FD, "pidns", nullptr, pidns_fd) < 0) {
        if (errno == EINVAL) return std::nullopt;
        return Result<UniqueFd>(Error::fromErrno(where + ": fsconfig(pidns)"));
    }
    for (size_t at = 0; at < ask.data.size();) {
        size_t end = ask.data.find(',', at);
        if (end == std::string::npos) end = ask.data.size();
        const std::string option = ask.data.substr(at, end - at);
        at = end + 1;
        if (option.empty()) continue;
        const size_t eq = option.find('=');
        const std::string key = option.substr(0, eq);
        const bool flag = eq == std::string::npos;
        const std::string value = flag ? "" : option.substr(eq + 1);
        if (syscall(SYS_fsconfig, fs.get(), flag ? FSCONFIG_SET_FLAG : FSCONFIG_SET_STRING,
                    key.c_str(), flag ? nullptr : value.c_str(), 0) < 0)
            return Result<UniqueFd>(Error::fromErrno(where + ": fsconfig(\"" + option + "\")"));
    }
    if (syscall(SYS_fsconfig, fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) < 0)
        return Result<UniqueFd>(Error::fromErrno(where + ": fsconfig(FSCONFIG_CMD_CREATE)"));
    UniqueFd mnt(static_cast<int>(syscall(SYS_fsmount, fs.get(), FSMOUNT_CLOEXEC, ask.attrs)));
    if (!mnt) return Result<UniqueFd>(Error::fromErrno(where + ": fsmount()"));
    return Result<UniqueFd>(std::move(mnt));
}

}  // namespace

Result<std::vector<UniqueFd>> mountJoinedProcs(const std::vector<JoinedProc>& asks,
                                               const std::vector<std::string>& where,
                                               int pidns_fd) {
    std::vector<UniqueFd> out;
    if (asks.empty()) return out;
    for (size_t i = 0; pidns_fd >= 0 && i < asks.size(); ++i) {
        auto made = mountWithPidnsFd(asks[i], pidns_fd, i < where.size() ? where[i] : "mount proc");
        if (!made) break;  // an older kernel: every one through the helper
        if (!*made) return made->error();
        out.push_back(std::move(**made));
    }
    if (out.size() == asks.size()) return out;
    out.clear();
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
        return Error::fromErrno("mount proc: socketpair()");
    UniqueFd ours(pair[0]), theirs(pair[1]);
    const pid_t helper = fork();
    // ENOMEM: the joined namespace's PID 1 has ended, and no process may
    // be born in it again (pid_namespaces(7)).
    if (helper < 0)
        return Error::fromErrno(errno == ENOMEM
                                    ? "linux.namespaces (pid): fork() into the joined pid "
                                      "namespace (its init has ended)"
                                    : "linux.namespaces (pid): fork() into the joined pid "
                                      "namespace");
    if (helper == 0) {
        ours.reset();
        mountProcsInHelper(theirs.get(), asks);
    }
    theirs.reset();
    std::optional<Error> failed;
    for (size_t i = 0; i < asks.size() && !failed; ++i) {
        HelperReport report;
        int fds[kMaxPassedFds];
        int count = 0;
        bool truncated = false;
        ssize_t n = receiveWithFds(ours.get(), &report, sizeof(report), fds, &count, 0, &truncated);
        for (int j = 1; j < count; ++j) close(fds[j]);
        UniqueFd fd(count > 0 ? fds[0] : -1);
        const std::string name = i < where.size() ? where[i] : "mount proc";
        if (n != static_cast<ssize_t>(sizeof(report)) || truncated) {
            failed = Error::message(name + ": the helper in the joined pid namespace ended");
        } else if (report.err) {
            const int call = report.call >= 0 && report.call < 4 ? report.call : 0;
            errno = report.err;
            failed =
                Error::fromErrno(name + ": in the joined pid namespace: " + kHelperCalls[call]);
        } else if (!fd) {
            failed = Error::message(name + ": the helper sent no mount");
        } else {
            out.push_back(std::move(fd));
        }
    }
    ours.reset();
    int status = 0;
    while (waitpid(helper, &status, 0) < 0 && errno == EINTR) {
    }
    if (failed) return *failed;
    return out;
}

}  // namespace stockade::oci
