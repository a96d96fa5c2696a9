#include "oci/commands.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "oci/cgroups.h"
#include "oci/config.h"
#include "oci/container.h"
#include "oci/events.h"
#include "oci/exec.h"
#include "oci/passwd.h"
#include "oci/state.h"
#include "oci/terminal_relay.h"
#include "runtime/supervisor/sandbox_launch.h"

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
const std::set<std::string_view> kGlobalWithValue = {"--root",     "--log",  "--log-format",
                                                     "--rootless", "--criu", "--default-profile"};
const std::set<std::string_view> kGlobalBool = {"--systemd-cgroup", "--debug"};

struct Globals {
    std::string root;
    std::string log_path;
    bool log_json = false;
    bool systemd_cgroup = false;
    std::string default_profile;  // --default-profile (oci/profile.h)
};

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

// The info lines of create, into the log.
std::function<void(const std::string&)> note(const Log& log) {
    return [&log](const std::string& msg) { log.line("info", msg); };
}

// A command's own flags, runc's way: `--name value`, `--name=value`, `-n
// value`, in any place before `--`; the rest are positional.
struct Args {
    std::map<std::string, std::string> values;              // the last of each
    std::map<std::string, std::vector<std::string>> lists;  // every one, in order
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
        out.lists[v->second].push_back(value);
    }
    return out;
}

// A hook's failure after create, as a warning line.
std::function<void(const std::string&)> warn(const Log& log) {
    return [&log](const std::string& msg) { log.line("warning", msg); };
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
    if (auto s = createContainer(g.root, a.positional[0], bundle, a.values["pid-file"],
                                 ConsoleTarget{a.values["console-socket"]}, g.systemd_cgroup,
                                 g.default_profile, note(log), created);
        !s)
        return log.error(s.error().describe());
    return 0;
}

int cmdExec(const Globals& g, const std::vector<std::string>& all, const Log& log) {
    // As runc: flags, the id, then the command, whose own flags stay its own.
    std::vector<std::string> rest, command;
    for (size_t i = 0; i < all.size(); ++i) {
        const std::string& a = all[i];
        if (a == "--" || a.empty() || a[0] != '-') {
            size_t id = a == "--" ? i + 1 : i;
            if (id < all.size()) rest.push_back(all[id]);
            command.assign(all.begin() + static_cast<long>(std::min(id + 1, all.size())),
                           all.end());
            break;
        }
        rest.push_back(a);
        static const std::set<std::string> kWithValue = {"--process",
                                                         "-p",
                                                         "--pid-file",
                                                         "--console-socket",
                                                         "--preserve-fds",
                                                         "--env",
                                                         "-e",
                                                         "--cwd",
                                                         "--user",
                                                         "-u",
                                                         "--additional-gids",
                                                         "-g",
                                                         "--cap",
                                                         "-c"};
        if (kWithValue.count(a) && i + 1 < all.size()) rest.push_back(all[++i]);
    }
    Args a = parseArgs(rest,
                       {{"--process", "process"},
                        {"-p", "process"},
                        {"--pid-file", "pid-file"},
                        {"--console-socket", "console-socket"},
                        {"--preserve-fds", "preserve-fds"},
                        {"--env", "env"},
                        {"-e", "env"},
                        {"--cwd", "cwd"},
                        {"--user", "user"},
                        {"-u", "user"},
                        {"--additional-gids", "additional-gids"},
                        {"-g", "additional-gids"},
                        {"--cap", "cap"},
                        {"-c", "cap"}},
                       {{"--detach", "detach"}, {"-d", "detach"}, {"--tty", "tty"}, {"-t", "tty"}});
    if (!a.error.empty()) return log.error(a.error);
    if (a.positional.size() != 1) return log.error("exec: expected a container id");
    if (a.values.count("preserve-fds") && a.values["preserve-fds"] != "0")
        return log.error("--preserve-fds: not supported yet");
    if (a.values.count("cap"))
        return log.error("--cap: not supported (give a --process with the capabilities)");
    ExecAsk ask;
    ask.process_file = a.values["process"];
    ask.args = command;
    if (!ask.process_file.empty() && !ask.args.empty())
        return log.error("exec: give --process or a command, not both");
    ask.env = a.lists["env"];
    ask.cwd = a.values["cwd"];
    ask.user = a.values["user"];
    ask.additional_gids = a.lists["additional-gids"];
    // runc ignores these flags beside --process; stockade says so.
    if (!ask.process_file.empty() &&
        (!ask.env.empty() || !ask.cwd.empty() || !ask.user.empty() || !ask.additional_gids.empty()))
        return log.error(
            "exec: --env, --cwd, --user and --additional-gids apply to a command "
            "given without --process");
    ask.pid_file = a.values["pid-file"];
    ask.console_socket = a.values["console-socket"];
    ask.detach = a.bools.count("detach");
    ask.tty = a.bools.count("tty");
    // runc's code and prefix for an exec that failed once its arguments
    // were read (podman reads the cause from the words that follow).
    auto status = execInContainer(g.root, a.positional[0], ask);
    if (!status) {
        log.error("exec failed: " + status.error().describe());
        return 255;
    }
    return *status;
}

int cmdStart(const Globals& g, const std::vector<std::string>& rest, const Log& log) {
    Args a = parseArgs(rest, {}, {});
    if (!a.error.empty()) return log.error(a.error);
    if (a.positional.size() != 1) return log.error("start: expected exactly one container id");
    auto c = openExisting(g.root, a.positional[0]);
    if (!c) return log.error(c.error().describe());
    if (auto s = startContainer(*c); !s) return log.error(s.error().describe());
    runPoststart(std::move(*c), warn(log));
    return 0;
}

int cmdState(const Globals& g, const std::vector<std::string>& rest, const Log& log) {
    Args a = parseArgs(rest, {}, {});
    if (!a.error.empty()) return log.error(a.error);
    if (a.positional.size() != 1) return log.error("state: expected exactly one container id");
    auto c = openExisting(g.root, a.positional[0]);
    if (!c) return log.error(c.error().describe());
    std::printf("%s\n", stateJson(c->record, statusOf(c->dir.get(), c->record)).c_str());
    return 0;
}

// `sig` to each process `list` names, listed and signalled with the
// container's cgroups frozen, as runc does: a frozen process cannot exit,
// so no pid listed is freed and taken by another process before its signal
// lands (in a shared pid namespace, and for what is left of a stopped
// container, the pids are the host's). A paused container stays paused;
// one without a freezer (rootless) is signalled as listed.
void signalFrozen(const std::vector<std::string>& dirs, int sig,
                  const std::function<std::vector<pid_t>()>& list) {
    const bool froze =
        !dirs.empty() && !containerCgroupsFrozen(dirs) && freezeContainerCgroups(dirs, true).ok();
    for (pid_t pid : list()) kill(pid, sig);
    if (froze) (void)freezeContainerCgroups(dirs, false);
}

int cmdKill(const Globals& g, const std::vector<std::string>& rest, const Log& log) {
    Args a = parseArgs(rest, {}, {{"--all", "all"}, {"-a", "all"}});
    if (!a.error.empty()) return log.error(a.error);
    if (a.positional.empty() || a.positional.size() > 2)
        return log.error("kill: expected a container id and an optional signal");
    auto sig = parseSignal(a.positional.size() == 2 ? a.positional[1] : "SIGTERM");
    if (!sig) return log.error(sig.error().describe());
    auto c = openExisting(g.root, a.positional[0]);
    if (!c) return log.error(c.error().describe());
    if (statusOf(c->dir.get(), c->record) == Status3::Stopped) {
        // As runc's --all: whatever is left in the container's cgroup is
        // signalled, and a stopped container is no error ("kill -a TERM",
        // then "kill -a KILL", as scripts and ctr do).
        if (!a.bools.count("all")) return log.error("container not running");
        signalFrozen(c->record.cgroups, *sig,
                     [&] { return processesInContainerCgroups(c->record.cgroups); });
        return 0;
    }
    UniqueFd fd = pidfdOf(c->record);
    if (!fd) return log.error("no such process");
    if (a.bools.count("all") && *sig != SIGKILL)
        signalFrozen(c->record.cgroups, *sig, [&] { return containerProcesses(c->record); });
    if (syscall(SYS_pidfd_send_signal, fd.get(), *sig, nullptr, 0) < 0)
        return log.error(errno == ESRCH ? "no such process"
                                        : Error::fromErrno("kill()").describe());
    // As runc: only SIGKILL thaws a paused container; other signals wait
    // for resume.
    if (*sig == SIGKILL) thawAfterKill(c->record);
    // The record's account of the ending: what this runtime sent, when.
    if (*sig != 0) {
        Record& r = c->record;
        r.kills.push_back({*sig, a.bools.count("all") > 0, rfc3339Now()});
        if (r.kills.size() > kMaxKills) r.kills.erase(r.kills.begin());
        if (auto s = writeRecord(c->dir.get(), r); !s)
            log.line("warning", "kill: the record: " + s.error().describe());
    }
    return 0;
}

// pause and resume: the container's cgroup frozen or thawed, runc's words
// when the state does not allow it (clients match "container not running"
// and "container not paused").
int cmdFreeze(const Globals& g, const std::vector<std::string>& rest, const Log& log, bool frozen) {
    const char* command = frozen ? "pause" : "resume";
    Args a = parseArgs(rest, {}, {});
    if (!a.error.empty()) return log.error(a.error);
    if (a.positional.size() != 1)
        return log.error(std::string(command) + ": expected exactly one container id");
    auto c = openExisting(g.root, a.positional[0]);
    if (!c) return log.error(c.error().describe());
    const Status3 status = statusOf(c->dir.get(), c->record);
    // runc's words even for a paused one (runc 1.1.5 measured).
    if (frozen && status != Status3::Running && status != Status3::Created)
        return log.error("container not running");
    if (!frozen && status != Status3::Paused) return log.error("container not paused");
    if (auto s = freezeContainerCgroups(c->record.cgroups, frozen); !s)
        return log.error(std::string(command) + " " + c->record.id + ": " + s.error().describe());
    return 0;
}

// events [--stats] [--interval D] ID: runc's, from the container's cgroups
// (oci/events.h).
int cmdEvents(const Globals& g, const std::vector<std::string>& rest, const Log& log) {
    Args a = parseArgs(rest, {{"--interval", "interval"}}, {{"--stats", "stats"}});
    if (!a.error.empty()) return log.error(a.error);
    if (a.positional.size() != 1) return log.error("events: expected exactly one container id");
    auto interval = intervalMs(a.values.count("interval") ? a.values["interval"] : "5s");
    if (!interval) return log.error(interval.error().describe());
    auto done = printEvents(g.root, a.positional[0], a.bools.count("stats") > 0, *interval);
    if (!done) return log.error(done.error().describe());
    return *done;
}

// update --resources FILE|-: linux.resources JSON (containerd's shim gives
// it on stdin) applied to the running container's cgroup. The other
// per-field flags of runc's update are refused rather than dropped.
int cmdUpdate(const Globals& g, const std::vector<std::string>& rest, const Log& log) {
    Args a = parseArgs(rest, {{"--resources", "resources"}, {"-r", "resources"}}, {});
    if (!a.error.empty()) return log.error(a.error + " (stockade's update takes --resources)");
    if (a.positional.size() != 1) return log.error("update: expected exactly one container id");
    if (!a.values.count("resources")) return log.error("update: --resources FILE|- is required");
    const std::string& from = a.values["resources"];
    std::string text;
    {
        UniqueFd fd(from == "-" ? dup(STDIN_FILENO)
                                : open(from.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
        if (!fd)
            return log.error(Error::fromErrno("--resources: open(\"" + from + "\")").describe());
        char buf[65536];
        while (true) {
            ssize_t n = read(fd.get(), buf, sizeof(buf));
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) return log.error(Error::fromErrno("--resources: read()").describe());
            if (n == 0) break;
            text.append(buf, static_cast<size_t>(n));
            if (text.size() > kMaxConfigBytes) return log.error("--resources: too large");
        }
    }
    auto resources = parseResources(text);
    if (!resources) return log.error(resources.error().describe());
    auto c = openExisting(g.root, a.positional[0]);
    if (!c) return log.error(c.error().describe());
    if (statusOf(c->dir.get(), c->record) == Status3::Stopped)
        return log.error("container not running");
    if (auto s = applyResources(c->record.cgroups, *resources); !s)
        return log.error("update " + c->record.id + ": " + s.error().describe());
    return 0;
}

int cmdDelete(const Globals& g, const std::vector<std::string>& rest, const Log& log) {
    Args a = parseArgs(rest, {}, {{"--force", "force"}, {"-f", "force"}});
    if (!a.error.empty()) return log.error(a.error);
    if (a.positional.size() != 1) return log.error("delete: expected exactly one container id");
    const std::string& id = a.positional[0];
    const bool force = a.bools.count("force");
    auto c = openExisting(g.root, id);
    if (!c) {
        if (force && validateId(id)) {
            // A half-written directory (its record unreadable) goes too,
            // with the cgroups its create made.
            if (auto root = openRoot(g.root, false); root)
                if (auto s = removeUnrecordedContainer(root->get(), id); !s)
                    return log.error(s.error().describe());
            return 0;
        }
        return log.error(c.error().describe());
    }
    Status3 status = statusOf(c->dir.get(), c->record);
    if ((status == Status3::Running || status == Status3::Paused) && !force)
        return log.error("cannot delete container " + id +
                         " that is not stopped: " + statusName(status));
    if (status != Status3::Stopped) killAndWait(c->record);
    if (auto s = destroyContainer(*c); !s) return log.error(s.error().describe());
    runPoststop(std::move(*c), warn(log));
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
    // In the foreground without --console-socket, a terminal the config
    // asks for is relayed here (runc's `run` does the same): its master
    // comes on a socket this process holds the other end of.
    ConsoleTarget console{a.values["console-socket"]};
    UniqueFd console_ours, console_theirs;
    if (!a.bools.count("detach") && console.socket_path.empty()) {
        int pair[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
            return log.error(Error::fromErrno("socketpair(AF_UNIX, SOCK_STREAM)").describe());
        console_ours.reset(pair[0]);
        console_theirs.reset(pair[1]);
        console.held = console_theirs.get();
    }
    if (auto s = createContainer(g.root, id, bundle, a.values["pid-file"], console,
                                 g.systemd_cgroup, g.default_profile, note(log), created);
        !s)
        return log.error(s.error().describe());
    console_theirs.reset();
    UniqueFd master;
    {
        auto c = openExisting(g.root, id);
        if (!c) return log.error(c.error().describe());
        if (created.terminal && console_ours) {
            auto received = receivedPtyMaster(console_ours.get());
            if (!received) {
                killAndWait(c->record);
                (void)destroyContainer(*c);
                return log.error(received.error().describe());
            }
            master = std::move(*received);
            // Before start, as runc sizes it: the command must not see the
            // config's size first and then be resized under it.
            giveTerminalSize(master.get());
        }
        console_ours.reset();
        if (auto s = startContainer(*c); !s) {
            killAndWait(c->record);
            (void)destroyContainer(*c);
            return log.error(s.error().describe());
        }
        runPoststart(std::move(*c), warn(log));
    }
    // Detached: the container is left to this process's parent (its
    // subreaper once this exits), as create and start would leave it.
    if (a.bools.count("detach")) return 0;
    // init is this process's child: signals that reach `run` go on to it
    // (they are blocked here since the clone), and its end is ours.
    sigset_t mask = signalsForInit();
    int status = 0;
    if (master) {
        auto relayed = relayTerminal(master.get(), created.pid, mask);
        if (!relayed) {
            if (auto c = openExisting(g.root, id)) {
                killAndWait(c->record);
                (void)destroyContainer(*c);
            }
            return log.error(relayed.error().describe());
        }
        status = *relayed;
    } else {
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
    }
    if (!a.bools.count("keep"))
        if (auto c = openExisting(g.root, id); c && destroyContainer(*c))
            runPoststop(std::move(*c), warn(log));
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
    std::string table = "ID\tPID\tSTATUS\tBUNDLE\tCREATED\tOWNER\n";
    // The owner, as runc's list names it: whose the container's directory is.
    const std::string passwd = readOwnPasswd();
    if (auto root = openRoot(g.root, false); root)
        for (const std::string& id : listContainers(root->get())) {
            auto dir = openContainer(root->get(), id);
            if (!dir) continue;
            auto record = readRecord(dir->get(), id);
            if (!record) continue;
            Status3 status = statusOf(dir->get(), *record);
            json state = json::parse(stateJson(*record, status));
            struct stat st {};
            if (fstat(dir->get(), &st) == 0) state["owner"] = nameOfUid(passwd, st.st_uid);
            const std::string owner = state["owner"];
            all.push_back(std::move(state));
            table += id + "\t" + std::to_string(status == Status3::Stopped ? 0 : record->pid) +
                     "\t" + statusName(status) + "\t" + record->bundle + "\t" + record->created +
                     "\t" + owner + "\n";
            if (a.bools.count("quiet") && format == "table") std::printf("%s\n", id.c_str());
        }
    if (a.bools.count("quiet") && format == "table") return 0;
    std::printf("%s", format == "json" ? (all.dump() + "\n").c_str() : table.c_str());
    return 0;
}

// The container's processes by host pid, init first: containerd's shim
// reads `ps --format json ID` as a JSON array of them.
// The output of `ps ARGS` from the host's PATH, stdout and stderr together
// (runc's table is the same program's); its exit status, or an error.
Result<std::pair<int, std::string>> runPs(const std::vector<std::string>& args) {
    int out[2];
    if (pipe2(out, O_CLOEXEC) < 0) return Error::fromErrno("ps: pipe2()");
    UniqueFd read_end(out[0]), write_end(out[1]);
    std::vector<char*> argv{const_cast<char*>("ps")};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_t pid = fork();
    if (pid < 0) return Error::fromErrno("ps: fork()");
    if (pid == 0) {
        dup2(write_end.get(), 1);
        dup2(write_end.get(), 2);
        execvp("ps", argv.data());
        _exit(127);
    }
    write_end.reset();
    std::string text;
    char buffer[4096];
    for (;;) {
        ssize_t n = read(read_end.get(), buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        text.append(buffer, static_cast<size_t>(n));
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return Error::fromErrno("ps: waitpid()");
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && text.empty())
        return Error::message("ps: exec: \"ps\": executable file not found in $PATH");
    return std::pair<int, std::string>{WIFEXITED(status) ? WEXITSTATUS(status) : 128, text};
}

std::vector<std::string> fieldsOf(const std::string& line) {
    std::vector<std::string> fields;
    size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
        size_t start = i;
        while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
        if (i > start) fields.push_back(line.substr(start, i - start));
    }
    return fields;
}

// `ps [--format table|json] ID [PS_OPTIONS...]`, as runc parses it: flags
// before the id, everything after it is the host ps's (default `-ef`).
// The table is that ps's header and its lines whose PID column names a
// process of the container; json is containerd's array of host pids (ps's
// options are then not used, as under runc).
int cmdPs(const Globals& g, const std::vector<std::string>& rest, const Log& log) {
    std::vector<std::string> flags, ps_args;
    std::string id;
    size_t i = 0;
    for (; i < rest.size(); ++i) {
        const std::string& a = rest[i];
        if (a == "--") {
            ++i;
            break;
        }
        if (a.size() < 2 || a[0] != '-') break;
        flags.push_back(a);
        if ((a == "--format" || a == "-f") && i + 1 < rest.size()) flags.push_back(rest[++i]);
    }
    if (i < rest.size()) id = rest[i++];
    ps_args.assign(rest.begin() + static_cast<long>(i), rest.end());
    Args a = parseArgs(flags, {{"--format", "format"}, {"-f", "format"}}, {});
    if (!a.error.empty()) return log.error(a.error);
    if (id.empty()) return log.error("ps: expected a container id");
    const std::string format = a.values.count("format") ? a.values["format"] : "table";
    if (format != "table" && format != "json") return log.error("invalid format option");
    auto c = openExisting(g.root, id);
    if (!c) return log.error(c.error().describe());
    std::vector<pid_t> pids;
    if (statusOf(c->dir.get(), c->record) != Status3::Stopped) {
        pids.push_back(c->record.pid);
        for (pid_t pid : containerProcesses(c->record)) pids.push_back(pid);
    }
    if (format == "json") {
        std::printf("%s\n", json(pids).dump().c_str());
        return 0;
    }
    if (ps_args.empty()) ps_args = {"-ef"};
    auto ran = runPs(ps_args);
    if (!ran) return log.error(ran.error().describe());
    const auto& [status, text] = *ran;
    if (status != 0) return log.error("ps: exit status " + std::to_string(status) + ": " + text);
    std::vector<std::string> lines;
    for (size_t start = 0; start < text.size();) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        lines.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    if (lines.empty()) return log.error("ps: no output");
    const std::vector<std::string> header = fieldsOf(lines[0]);
    auto pid_column = std::find(header.begin(), header.end(), "PID");
    if (pid_column == header.end()) return log.error("couldn't find PID field in ps output");
    const size_t column = static_cast<size_t>(pid_column - header.begin());
    std::string table = lines[0] + "\n";
    for (size_t n = 1; n < lines.size(); ++n) {
        const std::vector<std::string> fields = fieldsOf(lines[n]);
        if (fields.size() <= column) continue;
        char* end = nullptr;
        const long pid = std::strtol(fields[column].c_str(), &end, 10);
        if (*end != '\0' || fields[column].empty()) continue;
        if (std::find(pids.begin(), pids.end(), static_cast<pid_t>(pid)) != pids.end())
            table += lines[n] + "\n";
    }
    std::fputs(table.c_str(), stdout);
    return 0;
}

int cmdFeatures() {
    json doc = {
        {"ociVersionMin", "1.0.0"},
        {"ociVersionMax", kSpecVersion},
        {"hooks", json::array({"prestart", "createRuntime", "createContainer", "startContainer",
                               "poststart", "poststop"})},
        {"mountOptions",
         {"ro", "rw", "nosuid", "suid", "nodev", "dev", "noexec", "exec", "sync", "async",
          "dirsync", "noatime", "atime", "nodiratime", "diratime", "relatime", "norelatime",
          "strictatime", "nostrictatime", "mand", "nomand", "bind", "rbind", "private", "rprivate",
          // The recursive forms (containerd 2 looks for "rro" here before
          // it asks for a recursively read-only mount) and nosymfollow:
          // oci/config.cpp readMountOptions.
          "rro", "rrw", "rnosuid", "rsuid", "rnodev", "rdev", "rnoexec", "rexec", "rnoatime",
          "ratime", "rnodiratime", "rdiratime", "rrelatime", "rnorelatime", "rstrictatime",
          "rnostrictatime", "nosymfollow", "symfollow", "rnosymfollow", "rsymfollow"}},
        {"linux",
         {{"namespaces", {"pid", "network", "mount", "ipc", "uts", "user", "cgroup"}},
          {"capabilities", capabilityNames()},
          // systemd: --systemd-cgroup's slice:prefix:name paths are made
          // where systemd's unit would have its cgroup (no unit is started).
          {"cgroup",
           {{"v1", true},
            {"v2", true},
            {"systemd", true},
            {"systemdUser", false},
            {"rdma", false}}},
          // What seccomp/oci_import.cpp reads; SCMP_ACT_NOTIFY is refused
          // by create, so it is not listed.
          {"seccomp",
           {{"enabled", true},
            {"actions",
             {"SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", "SCMP_ACT_KILL", "SCMP_ACT_KILL_THREAD",
              "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_TRAP", "SCMP_ACT_TRACE", "SCMP_ACT_LOG"}},
            {"operators",
             {"SCMP_CMP_NE", "SCMP_CMP_LT", "SCMP_CMP_LE", "SCMP_CMP_EQ", "SCMP_CMP_GE",
              "SCMP_CMP_GT", "SCMP_CMP_MASKED_EQ"}},
            {"archs", {"SCMP_ARCH_X86",      "SCMP_ARCH_X86_64",      "SCMP_ARCH_X32",
                       "SCMP_ARCH_ARM",      "SCMP_ARCH_AARCH64",     "SCMP_ARCH_MIPS",
                       "SCMP_ARCH_MIPS64",   "SCMP_ARCH_MIPS64N32",   "SCMP_ARCH_MIPSEL",
                       "SCMP_ARCH_MIPSEL64", "SCMP_ARCH_MIPSEL64N32", "SCMP_ARCH_PPC",
                       "SCMP_ARCH_PPC64",    "SCMP_ARCH_PPC64LE",     "SCMP_ARCH_S390",
                       "SCMP_ARCH_S390X",    "SCMP_ARCH_PARISC",      "SCMP_ARCH_PARISC64",
                       "SCMP_ARCH_RISCV64",  "SCMP_ARCH_LOONGARCH64", "SCMP_ARCH_M68K",
                       "SCMP_ARCH_SH",       "SCMP_ARCH_SHEB"}},
            // Accepted and not applied (oci_import.cpp says why).
            {"knownFlags",
             {"SECCOMP_FILTER_FLAG_TSYNC", "SECCOMP_FILTER_FLAG_LOG",
              "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"}},
            {"supportedFlags", json::array()}}},
          {"apparmor", {{"enabled", false}}},
          {"selinux", {{"enabled", false}}},
          {"intelRdt", {{"enabled", false}}},
          {"mountExtensions", {{"idmap", {{"enabled", false}}}}}}},
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
        if (kGlobalBool.count(name)) {
            if (name == "--systemd-cgroup")
                g.systemd_cgroup = !inline_value || a.substr(name.size() + 1) != "false";
            continue;
        }
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
        if (name == "--default-profile") g.default_profile = value;
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
    if (command == "exec") return cmdExec(g, rest, log);
    if (command == "pause") return cmdFreeze(g, rest, log, true);
    if (command == "resume") return cmdFreeze(g, rest, log, false);
    if (command == "update") return cmdUpdate(g, rest, log);
    if (command == "events") return cmdEvents(g, rest, log);
    if (kOciOnly.count(command))
        return log.error(command + " is not supported yet by stockade's OCI runtime");
    return log.error("unknown command \"" + command + "\"");
}

}  // namespace stockade::oci
