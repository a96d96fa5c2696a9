#include "serve/serve_command.h"
#include "runtime/supervisor/supervisor_hardening.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/small_file.h"
#include "base/text_safety.h"
#include "base/units.h"
#include "runtime/net/direct_ingress.h"
#include "runtime/net/forwarder.h"
#include "runtime/net/listener_cgroup.h"
#include "runtime/net/veth_backend.h"
#include "runtime/record/result.h"
#include "runtime/record/run_report.h"
#include "runtime/supervisor/echo_sink.h"
#include "runtime/supervisor/sandbox.h"
#include "serve/dev_server.h"
#include "serve/serve_state.h"

namespace stockade {

namespace {

using nlohmann::json;
// docs/ps.schema.json: the output of `ps --json` and each entry in it.
constexpr const char* kPsSchema = "stockade.ps/v1";
constexpr int kRefused = 125;
constexpr uint64_t kDefaultLogBytes = 64ull << 20;
// SIGTERM reaches the command at once; the supervisor kills what is left
// after its own grace period (2 s) and a second more: stop waits this long
// before it SIGKILLs the supervisor itself.
constexpr uint64_t kStopWaitMs = 10000;

// A foreground caller may never read stderr (the server's echo goes there
// too): the line waits a second at most, then the exit goes ahead.
void say(const std::string& line) {
    writeWithin(2, "stockade: " + escapeForTerminal(line) + "\n", 1000);
}

int64_t unixMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

Result<uint16_t> parsePort(const std::string& text) {
    auto n = parseCount(text);
    if (!n || *n == 0 || *n > 65535)
        return Error::message("--port: expected a TCP port from 1 to 65535, got \"" + text + "\"");
    return static_cast<uint16_t>(*n);
}

// Who listens on TCP `port` of the host, as far as this user may see: "pid
// 1234 (python3)", else "a process of uid 1000" (the socket tables say whose
// it is, /proc/PID/fd only the caller's own), else nothing. The tables and
// /proc are the host's own, nothing a sandbox wrote.
std::optional<std::string> listenerOwner(uint16_t port) {
    std::vector<std::pair<unsigned long, unsigned>> sockets;  // inode, uid
    for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
        std::FILE* in = std::fopen(table, "re");
        if (!in) continue;
        char line[512];
        if (!std::fgets(line, sizeof line, in)) {  // the header
            std::fclose(in);
            continue;
        }
        while (std::fgets(line, sizeof line, in)) {
            char local[64], remote[64];
            unsigned state = 0, uid = 0;
            unsigned long inode = 0;
            if (std::sscanf(line, "%*d: %63s %63s %x %*s %*s %*s %u %*d %lu", local, remote, &state,
                            &uid, &inode) != 5)
                continue;
            const char* colon = std::strrchr(local, ':');
            if (state == 0x0A && colon && std::strtoul(colon + 1, nullptr, 16) == port && inode)
                sockets.emplace_back(inode, uid);
        }
        std::fclose(in);
    }
    if (sockets.empty()) return std::nullopt;
    if (DIR* proc = opendir("/proc")) {
        while (dirent* entry = readdir(proc)) {
            if (entry->d_name[0] < '1' || entry->d_name[0] > '9') continue;
            const std::string fds = std::string("/proc/") + entry->d_name + "/fd";
            DIR* dir = opendir(fds.c_str());
            if (!dir) continue;
            bool found = false;
            while (dirent* fd = readdir(dir)) {
                char target[64];
                const ssize_t n = readlinkat(dirfd(dir), fd->d_name, target, sizeof target - 1);
                if (n <= 0) continue;
                target[n] = 0;
                for (const auto& [inode, uid] : sockets)
                    if (std::string(target) == "socket:[" + std::to_string(inode) + "]")
                        found = true;
                if (found) break;
            }
            closedir(dir);
            if (!found) continue;
            std::string comm;
            if (std::FILE* c =
                    std::fopen((std::string("/proc/") + entry->d_name + "/comm").c_str(), "re")) {
                char name[64] = "";
                if (std::fgets(name, sizeof name, c)) comm = name;
                std::fclose(c);
                if (!comm.empty() && comm.back() == '\n') comm.pop_back();
            }
            const std::string pid = entry->d_name;  // the entry is proc's: read before closing it
            closedir(proc);
            return "pid " + pid + (comm.empty() ? "" : " (" + escapeForTerminal(comm) + ")");
        }
        closedir(proc);
    }
    return "a process of uid " + std::to_string(sockets.front().second);
}

// Binds the published port. Only a server just stopped (`just_stopped`) is
// waited for, up to 5 s, to let go of it; a port another program holds is
// said at once, with how to find it.
// `confine`: the listeners may be handed to the server (the direct ingress),
// so they are made in a listener cgroup (runtime/net/listener_cgroup.h); when
// that cannot be had, `confinement_failed` is set and nothing is bound.
Result<std::vector<UniqueFd>> bindPublished(const StateDir& dir, uint16_t port, bool just_stopped,
                                            bool confine, bool& confinement_failed) {
    const int attempts = just_stopped ? 100 : 0;
    confinement_failed = false;
    for (int attempt = 0;; ++attempt) {
        auto listeners =
            confine ? listenInListenerCgroup(port, confinement_failed) : listenOnLoopback(port);
        if (confinement_failed) return listeners;
        if (listeners || listeners.error().errnum() != EADDRINUSE || attempt >= attempts) {
            if (!listeners && listeners.error().errnum() == EADDRINUSE) {
                const std::string p = std::to_string(port);
                if (auto holder = dir.findByPort(port))
                    return Error::message("port " + p + " is published by the dev server \"" +
                                          holder->name + "\" (stockade stop " + holder->name + ")");
                const std::string owner = listenerOwner(port).value_or("another program");
                return Error::message("port " + p + " is in use on the host's loopback by " +
                                      owner + " (ss -ltnp 'sport = :" + p +
                                      "' shows which); stop it, or choose another --port");
            }
            return listeners;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

// `--detach`: the supervisor goes on in a new session; the caller waits for
// one line from it ("ready JSON" or "failed CODE") and exits.
struct Detached {
    UniqueFd channel;  // the supervisor's write end
};

int waitForDetached(UniqueFd from_supervisor) {
    std::string text;
    char buf[512];
    ssize_t n;
    while ((n = read(from_supervisor.get(), buf, sizeof(buf))) != 0) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        text.append(buf, static_cast<size_t>(n));
    }
    if (text.starts_with("ready ")) {
        std::fputs(text.substr(6).c_str(), stdout);
        return 0;
    }
    if (text.starts_with("failed ")) return std::atoi(text.c_str() + 7);
    say("the detached supervisor ended without a word");
    return kRefused;
}

void sendLine(int fd, const std::string& line) {
    const char* p = line.data();
    size_t left = line.size();
    while (left > 0) {
        ssize_t n = write(fd, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        p += n;
        left -= static_cast<size_t>(n);
    }
}

// A daemon keeps no fd its caller leaked to it (one without FD_CLOEXEC):
// every fd stockade opens itself is close-on-exec.
void closeLeakedFds() {
    std::vector<int> leaked;
    if (DIR* d = opendir("/proc/self/fd")) {
        while (dirent* e = readdir(d)) {
            int fd = std::atoi(e->d_name);
            if (fd > 2 && fd != dirfd(d)) {
                int flags = fcntl(fd, F_GETFD);
                if (flags >= 0 && !(flags & FD_CLOEXEC)) leaked.push_back(fd);
            }
        }
        closedir(d);
    }
    for (int fd : leaked) close(fd);
}

// Why the server is gone, in one line with the log to read; empty when it
// was stopped (stockade stop, a signal) or finishRun has said it already.
// The host's lowest port an unprivileged process may bind, as the kernel
// says (1024 when it cannot be read: the kernel's default).
std::string unprivilegedPortStart() {
    auto file = readSmallFile(AT_FDCWD, "/proc/sys/net/ipv4/ip_unprivileged_port_start",
                              "ip_unprivileged_port_start", 64);
    if (!file || file->content.empty()) return "1024";
    std::string text = file->content;
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    return text;
}

std::string serverEndLine(const std::string& name, const ServeOptions& options,
                          const DevServer& server, const SandboxOutcome& o) {
    const std::string logs = " (its output: stockade logs " + name + ")";
    const std::string& port = options.port;
    if (o.ending == Ending::NotReady) {
        if (server.portAnswered())
            return "\"" + name + "\" listened on port " + port + " but its output did not match " +
                   "--ready-pattern within " + options.ready_timeout + " s; a server that " +
                   "buffers its output (Python: set PYTHONUNBUFFERED=1) prints nothing until " +
                   "the buffer fills" + logs;
        std::string instead;
        for (uint16_t other : server.otherPorts())
            instead += (instead.empty() ? "; it listened on " : ", ") + std::to_string(other);
        if (!instead.empty()) instead += " instead";
        return "\"" + name + "\" was not ready within " + options.ready_timeout +
               " s: nothing listened on 127.0.0.1:" + port + " or [::1]:" + port +
               " inside the sandbox" + instead +
               "; the server must listen on the port given to --port " +
               "(a server on another port, or still starting, is not reached)" + logs;
    }
    if (SandboxResult r = classify(o);
        r.reason &&
        (*r.reason == "memory_limit" || *r.reason == "pids_limit" || *r.reason == "cpu_time"))
        return "";  // a bound: finishRun's line names it
    const std::string when = server.ready() ? "" : " before it was ready";
    if (o.ending == Ending::Exited)
        return "\"" + name + "\" exited with code " + std::to_string(o.exit_code) + when + logs;
    if (o.ending == Ending::Signaled)
        return "\"" + name + "\" was killed by signal " + std::to_string(o.signal) + when + logs;
    return "";
}

}  // namespace

int serveCommand(const ServeOptions& options) {
    RunOptions run = options.run;
    auto port = parsePort(options.port);
    if (!port)
        return refuseRun(run, run.profile, "sandbox_unavailable", "error", "arguments",
                         port.error().describe());
    if (!run.name) run.name = "dev-" + std::to_string(*port);
    if (auto s = validateServiceName(*run.name); !s)
        return refuseRun(run, run.profile, "sandbox_unavailable", "error", "arguments",
                         s.error().describe());
    NetBackend backend = NetBackend::Userspace;
    // Why the backend asked for (direct, by name or by default) is not the
    // one that serves: said in the ready event and `ps --json`.
    std::string fallback;
    const bool automatic = options.net_backend == "auto";
    if (options.net_backend == "veth") {
        backend = NetBackend::Veth;
        // Refused before anything is made: no state, no port, no link.
        if (auto problem = vethBackendProblem())
            return refuseRun(run, run.profile, "sandbox_unavailable", "error", "net-backend",
                             *problem);
    } else if (options.net_backend == "direct" || automatic) {
        backend = NetBackend::Direct;
        // Never an unconfined host socket in the sandbox's hands: where one
        // cannot be confined (rootless, no cgroup v2, bpf refused), the
        // forwarder serves, and the ready event and ps say "userspace" and
        // why. Asked for by name, stderr says it too.
        if (auto problem = directIngressProblem()) {
            fallback = "direct: " + *problem;
            if (!run.quiet && !automatic)
                say("--net-backend direct: " + *problem + "; the userspace forwarder serves");
            backend = NetBackend::Userspace;
        }
    } else if (options.net_backend != "userspace") {
        return refuseRun(run, run.profile, "sandbox_unavailable", "error", "arguments",
                         "--net-backend: expected auto, direct, userspace or veth, got \"" +
                             options.net_backend + "\"");
    }
    auto timeout = parseSecondsAsMs(options.ready_timeout);
    if (!timeout || *timeout == 0)
        return refuseRun(run, run.profile, "invalid_bounds", "blocked", "arguments",
                         "--ready-timeout: expected a positive number of seconds, got \"" +
                             options.ready_timeout + "\"");
    // Compiled here only to be refused before anything is made (no state,
    // no port, no sandbox); the supervisor compiles it again for its own.
    if (options.ready_pattern)
        if (auto p = ReadyPattern::compile(*options.ready_pattern); !p)
            return refuseRun(run, run.profile, "sandbox_unavailable", "error", "arguments",
                             p.error().describe());
    // Each forwarded connection holds two sockets and two pipes: take the
    // whole open-file allowance (the sandbox's own limit is set apart).
    rlimit files{};
    if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
        files.rlim_cur = files.rlim_max;
        setrlimit(RLIMIT_NOFILE, &files);
    }
    int refused = kRefused;
    auto built = prepareRun(run, refused);
    if (!built) return refused;
    PreparedRun prepared = std::move(*built);
    Policy& policy = prepared.policy;
    if (auto s = hardenSupervisor(policy); !s)
        return refuseRun(run, policy.profile_name, "sandbox_unavailable", "error",
                         "harden the supervisor", s.error().describe());
    if (policy.network != NetworkMode::Loopback)
        return refuseRun(run, policy.profile_name, "sandbox_unavailable", "error", "arguments",
                         "profile \"" + policy.profile_name +
                             "\" has \"network\": \"none\"; serve needs a profile with "
                             "\"network\": \"loopback-publish\" (such as dev-server)");
    policy.publish_port = *port;
    policy.listen_to_supervisor = backend == NetBackend::Direct;

    DevServerOptions server_options;
    server_options.port = *port;
    server_options.backend = backend;
    server_options.ready_pattern = options.ready_pattern;
    server_options.ready_timeout_ms = *timeout;
    server_options.echo = !options.detach && !policy.quiet;

    auto dir = StateDir::open();
    if (!dir)
        return refuseRun(run, policy.profile_name, "sandbox_unavailable", "error", "state",
                         dir.error().describe());
    const std::string& name = policy.name;
    const std::vector<StateDir> dirs = StateDir::all(*dir);
    bool just_stopped = false;
    for (const StateDir& d : dirs) {
        auto stopped = stopService(d, name, kStopWaitMs);
        if (!stopped)
            return refuseRun(
                run, policy.profile_name, "sandbox_unavailable", "error", "state",
                "cannot stop the running \"" + name + "\": " + stopped.error().describe());
        if (*stopped) say("stopped the running \"" + name + "\" first");
        just_stopped = just_stopped || *stopped;
    }
    auto lock = dir->lock(name);
    if (!lock)
        return refuseRun(run, policy.profile_name, "sandbox_unavailable", "error", "state",
                         lock.error().describe());
    // So that a shell of this user with another $XDG_RUNTIME_DIR, or none,
    // finds this server for ps, stop and logs.
    if (Status remembered = dir->remember(); !remembered)
        say("shells with another XDG_RUNTIME_DIR will not see \"" + name +
            "\": " + remembered.error().describe());
    // From here a refusal also gives the name back, and the log it made.
    auto refuseLocked = [&](const char* stage, const std::string& message) {
        dir->release(name, std::move(*lock));
        return refuseRun(run, policy.profile_name, "sandbox_unavailable", "error", stage, message);
    };
    bool confinement_failed = false;
    auto listeners =
        bindPublished(*dir, *port, just_stopped, backend == NetBackend::Direct, confinement_failed);
    if (!listeners && confinement_failed) {
        // Checked at the start (directIngressProblem), and failed now: the
        // same fallback, said the same way. Nothing was bound.
        fallback =
            "direct: cannot make the listeners in a cgroup that refuses their bind and "
            "connect: " +
            listeners.error().describe();
        if (!run.quiet && !automatic)
            say("--net-backend " + fallback + "; the userspace forwarder serves");
        backend = NetBackend::Userspace;
        policy.listen_to_supervisor = false;
        server_options.backend = backend;
        listeners = bindPublished(*dir, *port, just_stopped, false, confinement_failed);
    }
    if (!listeners) {
        std::string why =
            "cannot publish port " + std::to_string(*port) + ": " + listeners.error().describe();
        // A port below the host's unprivileged bound is root's to bind on
        // the host's loopback (ip(7): net.ipv4.ip_unprivileged_port_start).
        if (listeners.error().errnum() == EACCES && geteuid() != 0)
            why += "; a port below net.ipv4.ip_unprivileged_port_start (" +
                   unprivilegedPortStart() +
                   " here) is root's alone: publish a higher one (--port 8080, with the "
                   "server on 8080)";
        return refuseLocked("publish", why);
    }
    auto log = BoundedLog::create(dir->fd(), name + ".log", dir->logPath(name),
                                  policy.limits.output_bytes.value_or(kDefaultLogBytes));
    if (!log) return refuseLocked("state", log.error().describe());
    auto server = DevServer::create(server_options, std::move(*listeners), std::move(*log));
    if (!server) {
        dir->removeFile(name + ".log");
        return refuseLocked("publish", server.error().describe());
    }

    // Where the ready line goes: stdout, or the caller waiting on a pipe.
    int ready_fd = 1;
    UniqueFd to_caller;
    UniqueFd supervisor_log;  // detached: stderr once ready
    if (options.detach) {
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
            return refuseLocked("detach", Error::fromErrno("pipe2()").describe());
        UniqueFd read_end(p[0]);
        to_caller.reset(p[1]);
        pid_t child = fork();
        if (child < 0) return refuseLocked("detach", Error::fromErrno("fork()").describe());
        if (child > 0) {
            to_caller.reset();
            lock->reset();  // the supervisor holds it now
            // And the listeners: a copy here would keep a listener the server
            // was handed and closed bound until the caller exits, so the
            // supervisor could not release it to the forwarder at ready.
            server->reset();
            return waitForDetached(std::move(read_end));
        }
        read_end.reset();
        closeLeakedFds();
        setsid();
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        supervisor_log = dir->openFile(name + ".log", O_WRONLY | O_APPEND);
        dup2(null, 0);
        dup2(null, 1);
        // stderr stays the caller's until the server is ready: a server that
        // never gets there (it crashed, never listened, never printed the
        // pattern) is explained on the caller's terminal, not only in the log.
        // From ready on, the supervisor's own messages go to the log.
        if (null > 2) close(null);
        ready_fd = to_caller.get();
    }

    if (Status marked = StateDir::markHolder(lock->get()); !marked)
        return refuseLocked("mark the lock", marked.error().describe());
    ServiceRecord record;
    record.name = name;
    record.port = *port;
    record.pid = getpid();
    record.started_ms = unixMs();
    record.profile = policy.profile_name;
    record.command = policy.command;
    auto start = std::chrono::steady_clock::now();
    (*server)->on_started = [&](pid_t sandbox_pid) {
        record.sandbox_pid = sandbox_pid;
        if (auto s = dir->write(record); !s)
            say("cannot record the server: " + s.error().describe());
    };
    (*server)->on_ready = [&] {
        record.ready = true;
        record.backend = netBackendName((*server)->backendInUse());
        if (fallback.empty()) fallback = (*server)->fallbackReason();
        record.backend_fallback = fallback;
        record.forwarded_loopbacks = (*server)->forwardedLoopbacks();
        (void)dir->write(record);
        nlohmann::ordered_json line{
            {"schema", "stockade.ready/v1"},
            {"event", "ready"},
            {"name", name},
            {"port", *port},
            {"pid", record.pid},
            {"backend", record.backend},
            {"backend_fallback",
             fallback.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(fallback)},
            {"forwarded_loopbacks", record.forwarded_loopbacks},
            {"elapsed_ms", std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::steady_clock::now() - start)
                               .count()}};
        sendLine(ready_fd, (options.detach ? "ready " : "") + line.dump() + "\n");
        if (options.detach) {
            to_caller.reset();
            int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
            dup2(supervisor_log ? supervisor_log.get() : null, 2);
            if (null >= 0) close(null);
        }
    };
    SandboxOutcome outcome = runSandbox(policy, server->get());
    int code = finishRun(prepared, outcome, &run);
    if (std::string why = serverEndLine(name, options, **server, outcome); !why.empty()) say(why);
    if (to_caller) sendLine(to_caller.get(), "failed " + std::to_string(code) + "\n");
    dir->release(name, std::move(*lock));
    return code;
}

int stopCommand(const std::string& name_given, const std::optional<std::string>& port_given) {
    removeStaleVethNetworks();  // a SIGKILLed supervisor's table and slot (root only)
    auto dir = StateDir::open();
    if (!dir) {
        say(dir.error().describe());
        return kRefused;
    }
    const std::vector<StateDir> dirs = StateDir::all(*dir);
    std::string name = name_given;
    if (port_given) {
        auto port = parsePort(*port_given);
        if (!port) {
            say(port.error().describe());
            return kRefused;
        }
        std::optional<ServiceRecord> record;
        for (const StateDir& d : dirs)
            if (!record) record = d.findByPort(*port);
        if (!record) {
            std::printf("nothing of yours serves port %u\n", static_cast<unsigned>(*port));
            return 0;
        }
        name = record->name;
    } else if (auto s = validateServiceName(name); !s) {
        say(s.error().describe());
        return kRefused;
    }
    // Every state directory of this user's: a server started from a shell
    // with another $XDG_RUNTIME_DIR is still this user's to stop.
    bool any = false;
    for (const StateDir& d : dirs) {
        auto stopped = stopService(d, name, kStopWaitMs);
        if (!stopped) {
            say("cannot stop \"" + name + "\": " + stopped.error().describe());
            return 1;
        }
        any = any || *stopped;
    }
    if (!any) {
        // Not in any directory this shell can see is not "not running": a
        // shell whose /tmp differs (a private /tmp) sees no register either.
        if (std::optional<pid_t> pid = unrecordedSupervisor(name)) {
            say("\"" + name + "\" runs (supervisor pid " + std::to_string(*pid) +
                ") but is recorded in a state directory this shell does not see; stop it from "
                "the shell that started it (same XDG_RUNTIME_DIR), or kill " +
                std::to_string(*pid));
            return 1;
        }
    }
    std::printf(any ? "stopped %s\n" : "%s is not running\n", name.c_str());
    return 0;
}

int psCommand(bool as_json) {
    removeStaleVethNetworks();
    auto dir = StateDir::open();
    if (!dir) {
        say(dir.error().describe());
        return kRefused;
    }
    int64_t now = unixMs();
    std::vector<std::pair<ServiceRecord, std::string>> records;  // and its log
    const std::vector<StateDir> dirs = StateDir::all(*dir);
    for (const StateDir& d : dirs)
        for (ServiceRecord& r : d.list()) {
            std::string log = d.logPath(r.name);
            records.emplace_back(std::move(r), std::move(log));
        }
    if (as_json) {
        // An object, not a bare array, so that the output names its schema
        // even when no server runs; each entry names it too, so an entry
        // taken out of the list (jq '.servers[0]') still says what it is.
        json servers = json::array();
        for (const auto& [r, log] : records)
            servers.push_back(
                {{"schema", kPsSchema},
                 {"name", r.name},
                 {"port", r.port},
                 {"pid", r.pid},
                 {"sandbox_pid", r.sandbox_pid},
                 {"ready", r.ready},
                 {"uptime_s", (now - r.started_ms) / 1000},
                 {"profile", r.profile},
                 {"command", r.command},
                 {"backend", r.backend},
                 {"backend_fallback",
                  r.backend_fallback.empty() ? json(nullptr) : json(r.backend_fallback)},
                 {"forwarded_loopbacks", r.forwarded_loopbacks},
                 {"log", log}});
        json out{{"schema", kPsSchema}, {"servers", std::move(servers)}};
        std::printf("%s\n", jsonText(out, 2).c_str());
        return 0;
    }
    std::printf("%-20s %-6s %-8s %-8s %-6s %s\n", "NAME", "PORT", "PID", "UPTIME", "READY",
                "COMMAND");
    for (const auto& [r, log] : records) {
        std::string command;
        for (const std::string& arg : r.command) command += (command.empty() ? "" : " ") + arg;
        int64_t up = (now - r.started_ms) / 1000;
        std::string uptime = up < 120    ? std::to_string(up) + "s"
                             : up < 7200 ? std::to_string(up / 60) + "m"
                                         : std::to_string(up / 3600) + "h";
        std::printf("%-20s %-6u %-8d %-8s %-6s %s\n", r.name.c_str(), static_cast<unsigned>(r.port),
                    r.pid, uptime.c_str(), r.ready ? "yes" : "no",
                    escapeForTerminal(command).c_str());
    }
    return 0;
}

int logsCommand(const std::string& name, bool follow, bool raw) {
    if (auto s = validateServiceName(name); !s) {
        say(s.error().describe());
        return kRefused;
    }
    auto dir = StateDir::open();
    if (!dir) {
        say(dir.error().describe());
        return kRefused;
    }
    // The log of a server started from a shell with another environment
    // is in another of this user's state directories.
    const std::string log_name = name + ".log";
    struct stat log_st;
    StateDir* holder = &*dir;
    std::vector<StateDir> others = StateDir::others(*dir);
    for (StateDir& other : others)
        if (!holder->statFile(log_name, log_st) && other.statFile(log_name, log_st))
            holder = &other;
    // The log is the sandbox's bytes: on a terminal they could move the
    // cursor, rewrite earlier lines or set the window title. Escaped unless
    // --raw, chunk by chunk, holding back a character cut by a read.
    std::string pending;
    auto emit = [&](bool all) {
        if (raw) {
            fwrite(pending.data(), 1, pending.size(), stdout);
            pending.clear();
            return;
        }
        size_t n = all ? pending.size() : completeUtf8Prefix(pending);
        std::string shown =
            escapeForTerminal(std::string_view(pending).substr(0, n), Newlines::Keep);
        fwrite(shown.data(), 1, shown.size(), stdout);
        pending.erase(0, n);
    };
    auto copy = [&](int fd) {
        char buf[65536];
        ssize_t n;
        while ((n = read(fd, buf, sizeof(buf))) > 0) {
            pending.append(buf, static_cast<size_t>(n));
            emit(false);
        }
        fflush(stdout);
    };
    UniqueFd older = holder->openFile(log_name + ".1", O_RDONLY | O_NONBLOCK);
    UniqueFd current = holder->openFile(log_name, O_RDONLY | O_NONBLOCK);
    if (!current) {
        say("no log for \"" + name + "\" (stockade ps lists the running servers)");
        return 1;
    }
    if (older) copy(older.get());
    copy(current.get());
    // Following ends once the server is gone and its last words are read;
    // a rotation (a new inode at the path) is followed into the new file.
    while (follow) {
        bool running = holder->live(name);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        copy(current.get());
        struct stat held, named;
        if (fstat(current.get(), &held) == 0 && holder->statFile(log_name, named) &&
            held.st_ino != named.st_ino) {
            current = holder->openFile(log_name, O_RDONLY | O_NONBLOCK);
            if (!current) break;
            copy(current.get());
        }
        if (!running) break;
    }
    emit(true);
    fflush(stdout);
    return 0;
}

}  // namespace stockade
