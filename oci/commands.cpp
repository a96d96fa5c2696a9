#include "oci/commands.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "oci/config.h"
#include "oci/container_plan.h"
#include "oci/state.h"
#include "runtime/child_protocol.h"
#include "runtime/sandbox_launch.h"
#include "runtime/small_file.h"

#ifndef STOCKADE_VERSION
#define STOCKADE_VERSION "0"
#endif
#ifndef STOCKADE_GIT_REVISION
#define STOCKADE_GIT_REVISION "unknown"
#endif

namespace stockade::oci {

namespace {

using nlohmann::json;

constexpr const char* kSpecVersion = "1.2.0";

// Commands only the OCI runtime has; `run` and `ps` are stockade's own too.
const std::set<std::string_view> kOciOnly = {
    "create", "start", "state",  "kill",   "delete", "spec",       "list",   "features",
    "exec",   "pause", "resume", "update", "events", "checkpoint", "restore"};
const std::set<std::string_view> kGlobalWithValue = {"--root", "--log", "--log-format",
                                                     "--rootless", "--criu"};
const std::set<std::string_view> kGlobalBool = {"--systemd-cgroup", "--debug"};

struct Globals {
    std::string root;
    std::string log_path;
    bool log_json = false;
};

std::string rfc3339Now() {
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);
    tm utc{};
    gmtime_r(&now.tv_sec, &utc);
    char buf[64];
    size_t n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &utc);
    snprintf(buf + n, sizeof(buf) - n, ".%09ldZ", now.tv_nsec);
    return buf;
}

// Errors go to stderr and, with --log, to the log as one line each: JSON
// {"level","msg","time"} with --log-format json (containerd takes the last
// error line's msg; podman reads the file), logfmt-like text otherwise.
class Log {
  public:
    explicit Log(const Globals& g) : json_(g.log_json) {
        if (!g.log_path.empty())
            file_.reset(open(g.log_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600));
    }
    void line(const char* level, const std::string& msg) const {
        if (file_) {
            std::string text;
            if (json_)
                text = json{{"level", level}, {"msg", msg}, {"time", rfc3339Now()}}.dump() + "\n";
            else
                text = "time=\"" + rfc3339Now() + "\" level=" + level + " msg=" + json(msg).dump() +
                       "\n";
            (void)!write(file_.get(), text.data(), text.size());
        }
        if (std::string_view(level) == "error" || std::string_view(level) == "warning")
            std::fprintf(stderr, "stockade: %s\n", msg.c_str());
    }
    int error(const std::string& msg) const {
        line("error", msg);
        return 1;
    }

  private:
    bool json_;
    UniqueFd file_;
};

// A command's own flags, runc's way: `--name value`, `--name=value`, `-n
// value`, in any place before `--`; the rest are positional.
struct Args {
    std::map<std::string, std::string> values;
    std::set<std::string> bools;
    std::vector<std::string> positional;
    std::string error;
};

Args parseArgs(const std::vector<std::string>& in,
               const std::map<std::string, std::string>& with_value,  // alias -> name
               const std::map<std::string, std::string>& flags) {
    Args out;
    for (size_t i = 0; i < in.size(); ++i) {
        const std::string& a = in[i];
        if (a == "--") {
            out.positional.insert(out.positional.end(), in.begin() + static_cast<long>(i) + 1,
                                  in.end());
            break;
        }
        if (a.size() < 2 || a[0] != '-') {
            out.positional.push_back(a);
            continue;
        }
        std::string name = a, value;
        bool has_value = false;
        if (auto eq = a.find('='); eq != std::string::npos) {
            name = a.substr(0, eq);
            value = a.substr(eq + 1);
            has_value = true;
        }
        if (auto f = flags.find(name); f != flags.end()) {
            out.bools.insert(f->second);
            continue;
        }
        auto v = with_value.find(name);
        if (v == with_value.end()) {
            out.error = "flag provided but not defined: " + name;
            return out;
        }
        if (!has_value) {
            if (i + 1 >= in.size()) {
                out.error = "flag needs an argument: " + name;
                return out;
            }
            value = in[++i];
        }
        out.values[v->second] = value;
    }
    return out;
}

Result<std::string> absolutePath(const std::string& path, const std::string& what) {
    char buf[PATH_MAX];
    if (!realpath(path.c_str(), buf))
        return Error::fromErrno(what + ": realpath(\"" + path + "\")");
    return std::string(buf);
}

// Written beside and renamed over, so a reader never sees it half written;
// decimal with no trailing newline (containerd's parser refuses "1234\n").
Status writePidFile(const std::string& path, pid_t pid) {
    const std::string tmp = path + ".stockade-tmp";
    UniqueFd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644));
    if (!fd) return Error::fromErrno("open(\"" + tmp + "\")");
    const std::string text = std::to_string(pid);
    if (write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
        return Error::fromErrno("write(\"" + tmp + "\")");
    if (rename(tmp.c_str(), path.c_str()) < 0) {
        Error e = Error::fromErrno("rename(\"" + tmp + "\", \"" + path + "\")");
        unlink(tmp.c_str());
        return e;
    }
    return okStatus();
}

std::string notExist(const std::string& id) {
    return "container " + id + " does not exist";
}

// The message for a child's setup failure, runc's words where podman maps
// them to an exit code (127, 126).
std::string childFailure(const ChildMessage& msg, const ChildPlan& plan) {
    if (msg.stage == ChildStage::FindExecutable) {
        std::string name = plan.argv_storage.empty() ? "" : plan.argv_storage[0];
        if (msg.err == ENOENT || msg.err == ENOTDIR)
            return "exec: \"" + name + "\": executable file not found in $PATH";
        if (msg.err == EACCES) return "exec: \"" + name + "\": permission denied";
    }
    SandboxOutcome out;
    childSetupFailure(msg, plan, out);
    return "container setup failed: " + out.error_message + ": " + errnoName(msg.err);
}

struct Created {
    pid_t pid = 0;
    UniqueFd pidfd;
};

// Everything `create` does, for create and run: the container's directory
// exists from the mkdir on, and is removed again on any failure, with the
// process killed, so a refused create leaves nothing.
// The caller's console socket, connected before anything is made: a
// socket that refuses fails create at once.
Result<UniqueFd> connectConsole(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof(addr.sun_path))
        return Error::message("--console-socket: the path is empty or too long");
    memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) return Error::fromErrno("--console-socket: socket()");
    if (connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) < 0)
        return Error::fromErrno("--console-socket: connect(\"" + path + "\")");
    return fd;
}

Status createContainer(const Globals& g, const std::string& id, const std::string& bundle_arg,
                       const std::string& pid_file, const std::string& console_socket,
                       const Log& log, Created& out) {
    if (auto s = validateId(id); !s) return s.error();
    auto bundle = absolutePath(bundle_arg, "bundle");
    if (!bundle) return bundle.error();
    UniqueFd bundle_fd(open(bundle->c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!bundle_fd) return Error::fromErrno("bundle: open(\"" + *bundle + "\")");
    auto text =
        readSmallFile(bundle_fd.get(), "config.json", *bundle + "/config.json", kMaxConfigBytes);
    if (!text) return text.error();
    auto config = parseConfig(text->content);
    if (!config) return config.error();
    // runc's rules: a terminal needs somewhere to send it, and a socket
    // needs a terminal to carry.
    if (config->terminal && console_socket.empty())
        return Error::message(
            "cannot allocate tty if stockade will detach without setting console socket");
    if (!config->terminal && !console_socket.empty())
        return Error::message("cannot use console socket if stockade will not allocate a tty");
    UniqueFd console;
    if (config->terminal) {
        auto connected = connectConsole(console_socket);
        if (!connected) return connected.error();
        console = std::move(*connected);
    }
    if (!config->no_new_privileges)
        log.line("info",
                 "process.noNewPrivileges is false: stockade sets no_new_privs in every "
                 "container all the same (G4)");

    auto root = openRoot(g.root, true);
    if (!root) return root.error();
    if (mkdirat(root->get(), id.c_str(), 0700) < 0) {
        if (errno == EEXIST) return Error::message("container with id exists: " + id);
        return Error::fromErrno("mkdir(\"" + g.root + "/" + id + "\")");
    }
    bool ok = false;
    std::optional<pid_t> started;
    UniqueFd started_pidfd;
    struct Cleanup {
        std::function<void()> run;
        ~Cleanup() { run(); }
    } cleanup{[&] {
        if (ok) return;
        if (started_pidfd) {
            syscall(SYS_pidfd_send_signal, started_pidfd.get(), SIGKILL, nullptr, 0);
            siginfo_t info;
            syscall(SYS_waitid, P_PIDFD, started_pidfd.get(), &info, WEXITED, nullptr);
        }
        (void)removeContainer(root->get(), id);
    }};
    auto dir = openContainer(root->get(), id);
    if (!dir) return dir.error();
    flock(dir->get(), LOCK_EX);

    auto planned = planContainer(*config, *bundle);
    if (!planned) return planned.error();
    ContainerPlan& cplan = *planned;
    ChildPlan& plan = cplan.plan;

    if (mkfifoat(dir->get(), kExecFifo, 0600) < 0) return Error::fromErrno("mkfifo(exec.fifo)");
    UniqueFd fifo_read(
        openat(dir->get(), kExecFifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW));
    if (!fifo_read) return Error::fromErrno("open(exec.fifo, O_RDONLY)");
    UniqueFd fifo_write(openat(dir->get(), kExecFifo, O_WRONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fifo_write) return Error::fromErrno("open(exec.fifo, O_WRONLY)");
    if (fcntl(fifo_read.get(), F_SETFL, 0) < 0) return Error::fromErrno("fcntl(exec.fifo)");
    plan.console_socket_fd = console.get();
    plan.start_fifo_read_fd = fifo_read.get();
    plan.start_fifo_write_fd = fifo_write.get();

    for (auto& [fd, type] : cplan.joins)
        if (setns(fd.get(), type) < 0)
            return Error::fromErrno("linux.namespaces: setns(" + std::to_string(type) + ")");
    if (geteuid() == 0 && setgroups(0, nullptr) < 0) return Error::fromErrno("setgroups(0)");
    // init takes its signals with sigwaitinfo, so they are blocked before
    // the clone, which inherits the mask (runtime/sandbox_launch.h).
    sigset_t mask = signalsForInit();
    if (sigprocmask(SIG_BLOCK, &mask, nullptr) < 0) return Error::fromErrno("sigprocmask()");
    signal(SIGPIPE, SIG_IGN);

    LaunchSpec spec;
    spec.namespaces = cplan.clone_flags;
    spec.ids = &cplan.ids;
    spec.seccomp_listener = false;
    spec.net_in_clone = true;
    spec.after_clone = [&] {
        plan.prepared.clear();
        cplan.lease_fd.reset();
    };
    LaunchedSandbox launched;
    SandboxOutcome failed;
    if (!launchSandbox(plan, spec, launched, failed))
        return Error::message("container setup failed: " + failed.error_message +
                              (failed.error_errno ? ": " + errnoName(failed.error_errno) : ""));
    started = launched.pid;
    started_pidfd = std::move(launched.pidfd);

    // Parked, or the first failure the child names, or its end.
    while (true) {
        pollfd fds[2] = {{launched.sync.get(), POLLIN, 0}, {started_pidfd.get(), POLLIN, 0}};
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return Error::fromErrno("poll()");
        }
        ChildMessage msg;
        ssize_t n = recv(launched.sync.get(), &msg, sizeof(msg), MSG_DONTWAIT);
        if (n == sizeof(msg)) {
            if (msg.kind == ChildMessageKind::Parked) break;
            if (msg.kind == ChildMessageKind::SetupFailed ||
                msg.kind == ChildMessageKind::ExecFailed)
                return Error::message(childFailure(msg, plan));
            continue;
        }
        if (n < 0 && errno == EAGAIN && !(fds[1].revents & POLLIN)) continue;
        return Error::message("container setup failed: its init ended before it was set up");
    }

    Record record;
    record.id = id;
    record.pid = *started;
    record.start_time = processStartTime(*started);
    record.bundle = *bundle;
    record.rootfs = cplan.rootfs;
    record.created = rfc3339Now();
    record.annotations = config->annotations;
    if (record.start_time == 0) return Error::message("container setup failed: its init is gone");
    if (auto s = writeRecord(dir->get(), record); !s) return s.error();
    if (!pid_file.empty())
        if (auto s = writePidFile(pid_file, *started); !s) return s.error();
    ok = true;
    out.pid = *started;
    out.pidfd = std::move(started_pidfd);
    return okStatus();
}

struct Opened {
    UniqueFd root;
    UniqueFd dir;
    Record record;
};

Result<Opened> openExisting(const Globals& g, const std::string& id) {
    if (auto s = validateId(id); !s) return s.error();
    Opened out;
    auto root = openRoot(g.root, false);
    if (!root) return Error::message(notExist(id));
    out.root = std::move(*root);
    auto dir = openContainer(out.root.get(), id);
    if (!dir) return Error::message(notExist(id));
    out.dir = std::move(*dir);
    flock(out.dir.get(), LOCK_EX);
    auto record = readRecord(out.dir.get(), id);
    if (!record) return record.error();
    out.record = std::move(*record);
    return out;
}

Status startContainer(const Opened& c) {
    Status3 status = statusOf(c.dir.get(), c.record);
    if (status == Status3::Stopped)
        return Error::message("cannot start a container that has stopped");
    if (status == Status3::Running)
        return Error::message("cannot start an already running container");
    UniqueFd fifo(openat(c.dir.get(), kExecFifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW));
    if (!fifo) {
        if (errno == ENXIO) return Error::message("cannot start a container that has stopped");
        return Error::fromErrno("open(exec.fifo)");
    }
    char go = 0;
    if (write(fifo.get(), &go, 1) != 1) return Error::fromErrno("write(exec.fifo)");
    unlinkat(c.dir.get(), kExecFifo, 0);
    return okStatus();
}

// The container's init by a pidfd, checked to be the recorded process
// after it was opened (so a reused pid is never signalled); none when gone.
UniqueFd pidfdOf(const Record& record) {
    UniqueFd fd(static_cast<int>(syscall(SYS_pidfd_open, record.pid, 0)));
    if (!fd) return fd;
    if (processStartTime(record.pid) != record.start_time) fd.reset();
    return fd;
}

void killAndWait(const Record& record) {
    UniqueFd fd = pidfdOf(record);
    if (!fd) return;
    syscall(SYS_pidfd_send_signal, fd.get(), SIGKILL, nullptr, 0);
    pollfd pfd{fd.get(), POLLIN, 0};
    while (poll(&pfd, 1, -1) < 0 && errno == EINTR) {
    }
}

// Every process of the container but its init: init's descendants, by the
// parent pids of /proc/N/stat (world-readable, unlike /proc/N/ns of a
// non-dumpable init seen by its unprivileged owner). Every process of the
// pid namespace is one, since orphans there reparent to its init.
std::vector<pid_t> processesIn(pid_t init) {
    std::map<pid_t, pid_t> parent;
    DIR* proc = opendir("/proc");
    if (!proc) return {};
    while (dirent* e = readdir(proc)) {
        char* end = nullptr;
        long pid = strtol(e->d_name, &end, 10);
        if (!end || *end || pid <= 0) continue;
        std::string path = "/proc/" + std::string(e->d_name) + "/stat";
        UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
        char buf[512];
        ssize_t n = fd ? read(fd.get(), buf, sizeof(buf) - 1) : -1;
        if (n <= 0) continue;
        buf[n] = '\0';
        const char* close_paren = strrchr(buf, ')');
        if (!close_paren || strlen(close_paren) < 5) continue;
        parent[static_cast<pid_t>(pid)] = static_cast<pid_t>(strtol(close_paren + 4, nullptr, 10));
    }
    closedir(proc);
    std::vector<pid_t> out;
    for (const auto& [pid, ppid] : parent) {
        pid_t up = ppid;
        for (int depth = 0; up > 1 && up != init && depth < 4096; ++depth) {
            auto it = parent.find(up);
            up = it == parent.end() ? 0 : it->second;
        }
        if (up == init && pid != init) out.push_back(pid);
    }
    return out;
}

int cmdCreate(const Globals& g, const std::vector<std::string>& rest, const Log& log) {
    Args a = parseArgs(rest,
                       {{"--bundle", "bundle"},
                        {"-b", "bundle"},
                        {"--pid-file", "pid-file"},
                        {"--console-socket", "console-socket"},
                        {"--preserve-fds", "preserve-fds"}},
                       {{"--no-pivot", "no-pivot"}, {"--no-new-keyring", "no-new-keyring"}});
    if (!a.error.empty()) return log.error(a.error);
    if (a.positional.size() != 1) return log.error("create: expected exactly one container id");
    if (a.values.count("preserve-fds") && a.values["preserve-fds"] != "0")
        return log.error("--preserve-fds: not supported yet");
    if (a.bools.count("no-pivot"))
        return log.error("--no-pivot: not supported (stockade always pivots)");
    Created created;
    std::string bundle = a.values.count("bundle") ? a.values["bundle"] : ".";
    if (auto s = createContainer(g, a.positional[0], bundle, a.values["pid-file"],
                                 a.values["console-socket"], log, created);
        !s)
        return log.error(s.error().describe());
    return 0;
}

int cmdStart(const Globals& g, const std::vector<std::string>& rest, const Log& log) {
    Args a = parseArgs(rest, {}, {});
    if (!a.error.empty()) return log.error(a.error);
    if (a.positional.size() != 1) return log.error("start: expected exactly one container id");
    auto c = openExisting(g, a.positional[0]);
    if (!c) return log.error(c.error().describe());
    if (auto s = startContainer(*c); !s) return log.error(s.error().describe());
    return 0;
}

int cmdState(const Globals& g, const std::vector<std::string>& rest, const Log& log) {
    Args a = parseArgs(rest, {}, {});
    if (!a.error.empty()) return log.error(a.error);
    if (a.positional.size() != 1) return log.error("state: expected exactly one container id");
    auto c = openExisting(g, a.positional[0]);
    if (!c) return log.error(c.error().describe());
    std::printf("%s\n", stateJson(c->record, statusOf(c->dir.get(), c->record)).c_str());
    return 0;
}

int cmdKill(const Globals& g, const std::vector<std::string>& rest, const Log& log) {
    Args a = parseArgs(rest, {}, {{"--all", "all"}, {"-a", "all"}});
    if (!a.error.empty()) return log.error(a.error);
    if (a.positional.empty() || a.positional.size() > 2)
        return log.error("kill: expected a container id and an optional signal");
    auto sig = parseSignal(a.positional.size() == 2 ? a.positional[1] : "SIGTERM");
    if (!sig) return log.error(sig.error().describe());
    auto c = openExisting(g, a.positional[0]);
    if (!c) return log.error(c.error().describe());
    if (statusOf(c->dir.get(), c->record) == Status3::Stopped)
        return log.error("container not running");
    UniqueFd fd = pidfdOf(c->record);
    if (!fd) return log.error("no such process");
    if (a.bools.count("all") && *sig != SIGKILL)
        for (pid_t pid : processesIn(c->record.pid)) kill(pid, *sig);
    if (syscall(SYS_pidfd_send_signal, fd.get(), *sig, nullptr, 0) < 0)
        return log.error(errno == ESRCH ? "no such process"
                                        : Error::fromErrno("kill()").describe());
    return 0;
}

int cmdDelete(const Globals& g, const std::vector<std::string>& rest, const Log& log) {
    Args a = parseArgs(rest, {}, {{"--force", "force"}, {"-f", "force"}});
    if (!a.error.empty()) return log.error(a.error);
    if (a.positional.size() != 1) return log.error("delete: expected exactly one container id");
    const std::string& id = a.positional[0];
    const bool force = a.bools.count("force");
    auto c = openExisting(g, id);
    if (!c) {
        if (force && validateId(id)) {
            // A half-written directory (its record unreadable) goes too.
            if (auto root = openRoot(g.root, false); root) (void)removeContainer(root->get(), id);
            return 0;
        }
        return log.error(c.error().describe());
    }
    Status3 status = statusOf(c->dir.get(), c->record);
    if (status == Status3::Running && !force)
        return log.error("cannot delete container " + id + " that is not stopped: running");
    if (status != Status3::Stopped) killAndWait(c->record);
    if (auto s = removeContainer(c->root.get(), id); !s) return log.error(s.error().describe());
    return 0;
}

int cmdRun(const Globals& g, const std::vector<std::string>& rest, const Log& log) {
    Args a = parseArgs(rest,
                       {{"--bundle", "bundle"},
                        {"-b", "bundle"},
                        {"--pid-file", "pid-file"},
                        {"--console-socket", "console-socket"}},
                       {{"--detach", "detach"},
                        {"-d", "detach"},
                        {"--keep", "keep"},
                        {"--no-pivot", "no-pivot"},
                        {"--no-new-keyring", "no-new-keyring"}});
    if (!a.error.empty()) return log.error(a.error);
    if (a.positional.size() != 1) return log.error("run: expected exactly one container id");
    const std::string& id = a.positional[0];
    Created created;
    std::string bundle = a.values.count("bundle") ? a.values["bundle"] : ".";
    if (auto s = createContainer(g, id, bundle, a.values["pid-file"], a.values["console-socket"],
                                 log, created);
        !s)
        return log.error(s.error().describe());
    {
        auto c = openExisting(g, id);
        if (!c) return log.error(c.error().describe());
        if (auto s = startContainer(*c); !s) {
            killAndWait(c->record);
            (void)removeContainer(c->root.get(), id);
            return log.error(s.error().describe());
        }
    }
    // Detached: the container is left to this process's parent (its
    // subreaper once this exits), as create and start would leave it.
    if (a.bools.count("detach")) return 0;
    // init is this process's child: signals that reach `run` go on to it
    // (they are blocked here since the clone), and its end is ours.
    sigset_t mask = signalsForInit();
    int status = 0;
    while (true) {
        siginfo_t info;
        int sig = sigwaitinfo(&mask, &info);
        if (sig < 0) continue;
        if (sig != SIGCHLD) {
            kill(created.pid, sig);
            continue;
        }
        if (waitpid(created.pid, &status, WNOHANG) == created.pid) break;
    }
    if (!a.bools.count("keep"))
        if (auto root = openRoot(g.root, false); root) (void)removeContainer(root->get(), id);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int cmdSpec(const std::vector<std::string>& rest, const Log& log) {
    Args a =
        parseArgs(rest, {{"--bundle", "bundle"}, {"-b", "bundle"}}, {{"--rootless", "rootless"}});
    if (!a.error.empty()) return log.error(a.error);
    if (!a.positional.empty()) return log.error("spec: takes no arguments");
    std::string path = (a.values.count("bundle") ? a.values["bundle"] : ".") + "/config.json";
    UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644));
    if (!fd) {
        if (errno == EEXIST) return log.error("File " + path + " exists. Remove it first");
        return log.error(Error::fromErrno("open(\"" + path + "\")").describe());
    }
    std::string text = defaultConfigJson(a.bools.count("rootless") || geteuid() != 0);
    if (write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
        return log.error(Error::fromErrno("write(\"" + path + "\")").describe());
    return 0;
}

int cmdList(const Globals& g, const std::vector<std::string>& rest, const Log& log) {
    Args a = parseArgs(rest, {{"--format", "format"}, {"-f", "format"}},
                       {{"--quiet", "quiet"}, {"-q", "quiet"}});
    if (!a.error.empty()) return log.error(a.error);
    const std::string format = a.values.count("format") ? a.values["format"] : "table";
    if (format != "table" && format != "json") return log.error("invalid format option");
    json all = json::array();
    std::string table = "ID\tPID\tSTATUS\tBUNDLE\tCREATED\n";
    if (auto root = openRoot(g.root, false); root)
        for (const std::string& id : listContainers(root->get())) {
            auto dir = openContainer(root->get(), id);
            if (!dir) continue;
            auto record = readRecord(dir->get(), id);
            if (!record) continue;
            Status3 status = statusOf(dir->get(), *record);
            all.push_back(json::parse(stateJson(*record, status)));
            table += id + "\t" + std::to_string(status == Status3::Stopped ? 0 : record->pid) +
                     "\t" + statusName(status) + "\t" + record->bundle + "\t" + record->created +
                     "\n";
            if (a.bools.count("quiet") && format == "table") std::printf("%s\n", id.c_str());
        }
    if (a.bools.count("quiet") && format == "table") return 0;
    std::printf("%s", format == "json" ? (all.dump() + "\n").c_str() : table.c_str());
    return 0;
}

// The container's processes by host pid, init first: containerd's shim
// reads `ps --format json ID` as a JSON array of them.
int cmdPs(const Globals& g, const std::vector<std::string>& rest, const Log& log) {
    Args a = parseArgs(rest, {{"--format", "format"}, {"-f", "format"}}, {});
    if (!a.error.empty()) return log.error(a.error);
    if (a.positional.size() != 1) return log.error("ps: expected exactly one container id");
    const std::string format = a.values.count("format") ? a.values["format"] : "table";
    if (format != "table" && format != "json") return log.error("invalid format option");
    auto c = openExisting(g, a.positional[0]);
    if (!c) return log.error(c.error().describe());
    std::vector<pid_t> pids;
    if (statusOf(c->dir.get(), c->record) != Status3::Stopped) {
        pids.push_back(c->record.pid);
        for (pid_t pid : processesIn(c->record.pid)) pids.push_back(pid);
    }
    if (format == "json") {
        std::printf("%s\n", json(pids).dump().c_str());
    } else {
        std::printf("PID\n");
        for (pid_t pid : pids) std::printf("%d\n", pid);
    }
    return 0;
}

int cmdFeatures() {
    json doc = {
        {"ociVersionMin", "1.0.0"},
        {"ociVersionMax", kSpecVersion},
        {"hooks", json::array()},
        {"mountOptions", {"ro",       "rw",         "nosuid",      "suid",          "nodev",
                          "dev",      "noexec",     "exec",        "sync",          "async",
                          "dirsync",  "noatime",    "atime",       "nodiratime",    "diratime",
                          "relatime", "norelatime", "strictatime", "nostrictatime", "mand",
                          "nomand",   "bind",       "rbind",       "private",       "rprivate"}},
        {"linux",
         {{"namespaces", {"pid", "network", "mount", "ipc", "uts", "user", "cgroup"}},
          {"capabilities", capabilityNames()},
          {"cgroup", {{"v1", false}, {"v2", false}, {"systemd", false}}},
          {"seccomp", {{"enabled", true}}},
          {"apparmor", {{"enabled", false}}},
          {"selinux", {{"enabled", false}}}}},
        {"annotations", {{"io.github.stockade.version", STOCKADE_VERSION}}}};
    std::printf("%s\n", doc.dump(2).c_str());
    return 0;
}

}  // namespace

bool isOciInvocation(int argc, char** argv) {
    // `ps ID` (stockade's own ps takes no id) is the OCI runtime's.
    if (argc >= 3 && std::string_view(argv[1]) == "ps")
        for (int i = 2; i < argc; ++i)
            if (argv[i][0] != '-') return true;
    if (argc >= 1 && std::string_view(argv[0]).ends_with("stockade-oci")) return true;
    if (argc < 2) return false;
    std::string_view first = argv[1];
    std::string_view flag = first.substr(0, first.find('='));
    if (kGlobalWithValue.count(flag) || kGlobalBool.count(flag)) return true;
    if (kOciOnly.count(first)) return true;
    if (first == "run")
        for (int i = 2; i < argc; ++i) {
            std::string_view a = argv[i];
            if (a == "--") return false;
            if (a == "--bundle" || a == "-b" || a.starts_with("--bundle=")) return true;
        }
    return false;
}

int ociMain(int argc, char** argv) {
    Globals g;
    int i = 1;
    for (; i < argc; ++i) {
        std::string a = argv[i];
        if (a.empty() || a[0] != '-') break;
        std::string name = a.substr(0, a.find('='));
        bool inline_value = name.size() != a.size();
        if (a == "--version" || a == "-v") {
            std::printf("stockade version %s\ncommit: %s\nspec: %s\n", STOCKADE_VERSION,
                        STOCKADE_GIT_REVISION, kSpecVersion);
            return 0;
        }
        if (kGlobalBool.count(name)) continue;
        if (!kGlobalWithValue.count(name)) {
            std::fprintf(stderr, "stockade: flag provided but not defined: %s\n", a.c_str());
            return 1;
        }
        std::string value;
        if (inline_value) {
            value = a.substr(name.size() + 1);
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            std::fprintf(stderr, "stockade: flag needs an argument: %s\n", name.c_str());
            return 1;
        }
        if (name == "--root") g.root = value;
        if (name == "--log") g.log_path = value;
        if (name == "--log-format") {
            if (value != "text" && value != "json") {
                std::fprintf(stderr, "stockade: invalid log-format: %s\n", value.c_str());
                return 1;
            }
            g.log_json = value == "json";
        }
    }
    const Log log(g);
    if (i >= argc)
        return log.error("no command given (create, start, state, kill, delete, run, ...)");
    const std::string command = argv[i];
    std::vector<std::string> rest(argv + i + 1, argv + argc);
    if (command == "spec") return cmdSpec(rest, log);
    if (command == "features") return cmdFeatures();
    if (g.root.empty()) {
        auto root = defaultRoot();
        if (!root) return log.error(root.error().describe());
        g.root = *root;
    }
    if (command == "create") return cmdCreate(g, rest, log);
    if (command == "start") return cmdStart(g, rest, log);
    if (command == "state") return cmdState(g, rest, log);
    if (command == "kill") return cmdKill(g, rest, log);
    if (command == "delete") return cmdDelete(g, rest, log);
    if (command == "run") return cmdRun(g, rest, log);
    if (command == "list") return cmdList(g, rest, log);
    if (command == "ps") return cmdPs(g, rest, log);
    if (kOciOnly.count(command))
        return log.error(command + " is not supported yet by stockade's OCI runtime");
    return log.error("unknown command \"" + command + "\"");
}

}  // namespace stockade::oci
