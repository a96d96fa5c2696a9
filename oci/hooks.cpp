#include "oci/hooks.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/unique_fd.h"
#include "oci/hook_exec_in_child.h"

namespace stockade::oci {

namespace {

using nlohmann::json;

// What a failing hook printed, as much as a message carries.
constexpr size_t kMaxCaptured = 4096;

int64_t monotonicMs() {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

struct Captured {
    UniqueFd fd;
    std::string text;
    bool open = true;
};

// Reads what is there now; closes on EOF. Past kMaxCaptured it still
// reads, so that a talkative hook never blocks on a full pipe.
void drain(Captured& c, int max_reads) {
    char buf[4096];
    for (int i = 0; c.open && i < max_reads; ++i) {
        ssize_t n = read(c.fd.get(), buf, sizeof(buf));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (n == 0 || errno != EAGAIN) c.open = false;
            return;
        }
        if (c.text.size() < kMaxCaptured)
            c.text.append(buf, std::min(static_cast<size_t>(n), kMaxCaptured - c.text.size()));
    }
}

struct Outcome {
    int exec_errno = 0;
    bool timed_out = false;
    bool cancelled = false;  // the client's signal, on place.cancel_fd
    siginfo_t info{};
    std::string out, err;
};

Result<Outcome> runOne(const Hook& hook, const std::string& state, const HookPlace& place) {
    std::vector<std::string> args = hook.args.empty() ? std::vector{hook.path} : hook.args;
    std::vector<char*> argv, envp;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env = hook.env;
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);

    // stdin is a socket: sent with MSG_NOSIGNAL, so a hook that closes it
    // early costs an EPIPE, never a SIGPIPE to the runtime.
    int in[2], out[2], err[2], report[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) < 0)
        return Error::fromErrno("hook: socketpair()");
    UniqueFd in_parent(in[0]), in_child(in[1]);
    if (pipe2(out, O_CLOEXEC) < 0) return Error::fromErrno("hook: pipe2()");
    Captured cout{UniqueFd(out[0])};
    UniqueFd out_child(out[1]);
    if (pipe2(err, O_CLOEXEC) < 0) return Error::fromErrno("hook: pipe2()");
    Captured cerr{UniqueFd(err[0])};
    UniqueFd err_child(err[1]);
    if (pipe2(report, O_CLOEXEC) < 0) return Error::fromErrno("hook: pipe2()");
    UniqueFd report_parent(report[0]), report_child(report[1]);

    pid_t pid = fork();
    if (pid < 0) return Error::fromErrno("hook: fork()");
    if (pid == 0)
        execHookInChild(hook.path.c_str(), argv.data(), envp.data(),
                        {in_child.get(), out_child.get(), err_child.get(), report_child.get()},
                        place.namespaces.data(), place.namespaces.size());
    in_child.reset();
    out_child.reset();
    err_child.reset();
    report_child.reset();
    // Ours until waited for: the pid cannot be reused before.
    UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
    if (!pidfd) {
        Error e = Error::fromErrno("hook: pidfd_open(" + std::to_string(pid) + ")");
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
        return e;
    }
    for (int fd : {in_parent.get(), cout.fd.get(), cerr.fd.get()})
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);

    Outcome o;
    size_t sent = 0;
    bool writing = true;
    const int64_t deadline = hook.timeout ? monotonicMs() + int64_t{*hook.timeout} * 1000 : -1;
    while (true) {
        pollfd fds[5] = {{pidfd.get(), POLLIN, 0},
                         {writing ? in_parent.get() : -1, POLLOUT, 0},
                         {cout.open ? cout.fd.get() : -1, POLLIN, 0},
                         {cerr.open ? cerr.fd.get() : -1, POLLIN, 0},
                         {place.cancel_fd, POLLIN, 0}};
        int wait_ms = -1;
        if (deadline >= 0) {
            int64_t left = deadline - monotonicMs();
            if (left <= 0) {
                o.timed_out = true;
                break;
            }
            wait_ms = static_cast<int>(std::min<int64_t>(left, 60000));
        }
        int n = poll(fds, 5, wait_ms);
        if (n < 0 && errno != EINTR) {
            Error e = Error::fromErrno("hook: poll()");
            syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0);
            waitid(P_PID, pid, &o.info, WEXITED);
            return e;
        }
        if (n <= 0) continue;
        // The client's signal: killed as a hook past its timeout is, the
        // signal left for create's own loop to read.
        if (fds[4].revents) {
            o.cancelled = true;
            break;
        }
        if (fds[1].revents) {
            ssize_t w = send(in_parent.get(), state.data() + sent, state.size() - sent,
                             MSG_NOSIGNAL | MSG_DONTWAIT);
            if (w > 0) sent += static_cast<size_t>(w);
            if ((w < 0 && errno != EAGAIN && errno != EINTR) || sent == state.size()) {
                writing = false;
                shutdown(in_parent.get(), SHUT_WR);
            }
        }
        if (fds[2].revents) drain(cout, 1);
        if (fds[3].revents) drain(cerr, 1);
        // Its exit ends the wait, whatever its pipes still hold open.
        if (fds[0].revents) break;
    }
    if (o.timed_out || o.cancelled) {
        // The group the child made (hook_exec_in_child.cpp), while the hook
        // is unreaped (its pid, and so the group's id, cannot be reused),
        // then the hook by its pidfd, should the group not have been made.
        ::kill(-pid, SIGKILL);
        syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0);
    }
    while (waitid(P_PID, pid, &o.info, WEXITED) < 0 && errno == EINTR) {
    }
    drain(cout, 64);
    drain(cerr, 64);
    o.out = std::move(cout.text);
    o.err = std::move(cerr.text);
    int reported = 0;
    if (read(report_parent.get(), &reported, sizeof(reported)) == sizeof(reported))
        o.exec_errno = reported;
    return o;
}

// "" when the hook succeeded, else why not, in runc's words where it has them.
std::string failureOf(const Hook& hook, const Result<Outcome>& r) {
    if (!r) return r.error().describe();
    const Outcome& o = *r;
    if (o.exec_errno)
        return "exec " + hook.path + ": " + strerror(o.exec_errno) + " (" +
               errnoName(o.exec_errno) + ")";
    if (o.cancelled) return "killed: create was ended by a signal";
    if (o.timed_out) {
        char secs[32];
        snprintf(secs, sizeof(secs), "%d.0s", *hook.timeout);
        return std::string("hook ran past specified timeout of ") + secs + " (killed)";
    }
    std::string what;
    if (o.info.si_code == CLD_EXITED) {
        if (o.info.si_status == 0) return "";
        what = "exit status " + std::to_string(o.info.si_status);
    } else {
        const char* abbrev = sigabbrev_np(o.info.si_status);
        what = "signal: SIG" + std::string(abbrev ? abbrev : "?") + " (" +
               std::to_string(o.info.si_status) + ")";
    }
    return what + ", stdout: " + o.out + ", stderr: " + o.err;
}

std::string failureMessage(std::string_view name, size_t i, const Hook& hook,
                           const std::string& why) {
    return "error running " + std::string(name) + " hook #" + std::to_string(i) + " (" + hook.path +
           "): " + why;
}

json hookToJson(const Hook& h) {
    json out = {{"path", h.path}, {"args", h.args}, {"env", h.env}};
    if (h.timeout) out["timeout"] = *h.timeout;
    return out;
}

}  // namespace

Status checkHookPaths(const Hooks& hooks) {
    const std::pair<const char*, const std::vector<Hook>*> lists[] = {
        {"prestart", &hooks.prestart},
        {"createRuntime", &hooks.create_runtime},
        {"createContainer", &hooks.create_container},
        {"poststart", &hooks.poststart},
        {"poststop", &hooks.poststop}};
    for (const auto& [name, list] : lists)
        for (size_t i = 0; i < list->size(); ++i) {
            const std::string& path = (*list)[i].path;
            const std::string field =
                std::string("config.json: hooks.") + name + "[" + std::to_string(i) + "].path";
            struct stat st {};
            if (stat(path.c_str(), &st) < 0)
                return Error::fromErrno(field + ": stat(\"" + path + "\")");
            if (!S_ISREG(st.st_mode))
                return Error::message(field + ": \"" + path + "\" is not a regular file");
            if (access(path.c_str(), X_OK) < 0)
                return Error::fromErrno(field + ": access(\"" + path + "\", X_OK)");
        }
    return okStatus();
}

Status runHooks(std::string_view name, const std::vector<Hook>& list, const std::string& state_json,
                const HookPlace& place) {
    for (size_t i = 0; i < list.size(); ++i) {
        std::string why = failureOf(list[i], runOne(list[i], state_json, place));
        if (!why.empty()) return Error::message(failureMessage(name, i, list[i], why));
    }
    return okStatus();
}

std::vector<std::string> runHooksWarning(std::string_view name, const std::vector<Hook>& list,
                                         const std::string& state_json) {
    std::vector<std::string> failures;
    for (size_t i = 0; i < list.size(); ++i) {
        std::string why = failureOf(list[i], runOne(list[i], state_json, {}));
        if (!why.empty()) failures.push_back(failureMessage(name, i, list[i], why));
    }
    return failures;
}

Result<ChildHookList> childHookList(const char* name, const std::vector<Hook>& list, json state,
                                    bool open_on_host, std::vector<UniqueFd>& held) {
    ChildHookList out;
    out.name = name;
    if (list.empty()) return out;
    // A number of the slot's width marks where the child writes the pid:
    // in the dumped text it is the only unquoted one after "pid".
    constexpr uint64_t kMark = 9999999999ull;
    static_assert(kHookPidSlot == 10, "the mark is as wide as the slot");
    state["pid"] = kMark;
    out.state = state.dump();
    const std::string key = "\"pid\":" + std::to_string(kMark);
    const size_t at = out.state.find(key);
    if (at == std::string::npos || out.state.find(key, at + 1) != std::string::npos)
        return Error::message(std::string(name) + " hooks: the state has no single pid");
    out.pid_offset = at + key.size() - kHookPidSlot;
    for (size_t i = 0; i < list.size(); ++i) {
        const Hook& h = list[i];
        ChildHook c;
        c.path = h.path;
        c.argv_storage = h.args.empty() ? std::vector{h.path} : h.args;
        c.argv.assign(c.argv_storage.size() + 1, nullptr);
        c.env_storage = h.env;
        c.envp.assign(c.env_storage.size() + 1, nullptr);
        c.timeout_s = h.timeout.value_or(0);
        if (open_on_host) {
            UniqueFd fd(open(h.path.c_str(), O_PATH | O_CLOEXEC));
            if (!fd)
                return Error::fromErrno(std::string("config.json: hooks.") + name + "[" +
                                        std::to_string(i) + "].path: open(\"" + h.path + "\")");
            c.exec_fd = fd.get();
            held.push_back(std::move(fd));
        }
        out.hooks.push_back(std::move(c));
    }
    return out;
}

std::string printableCallNote(const ChildMessage& msg) {
    std::string out;
    for (size_t i = 0; i < sizeof(msg.call) && msg.call[i] != '\0'; ++i)
        out += msg.call[i] >= 0x20 && msg.call[i] < 0x7f ? msg.call[i] : '?';
    return out;
}

std::string hooksJson(const Hooks& hooks) {
    json out = {{"poststart", json::array()}, {"poststop", json::array()}};
    for (const Hook& h : hooks.poststart) out["poststart"].push_back(hookToJson(h));
    for (const Hook& h : hooks.poststop) out["poststop"].push_back(hookToJson(h));
    return out.dump();
}

Result<Hooks> hooksFromJson(std::string_view text) {
    json doc = json::parse(text, nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) return Error::message("hooks: not an object");
    Hooks out;
    try {
        for (auto [key, into] :
             {std::pair{"poststart", &out.poststart}, std::pair{"poststop", &out.poststop}}) {
            if (!doc.contains(key)) continue;
            for (const json& h : doc[key]) {
                Hook hook;
                hook.path = h.at("path").get<std::string>();
                hook.args = h.at("args").get<std::vector<std::string>>();
                hook.env = h.at("env").get<std::vector<std::string>>();
                if (h.contains("timeout")) hook.timeout = h["timeout"].get<int>();
                if (hook.path.empty() || hook.path[0] != '/' ||
                    (hook.timeout && *hook.timeout <= 0))
                    return Error::message("hooks: not a hook");
                into->push_back(std::move(hook));
            }
        }
    } catch (const json::exception&) {
        return Error::message("hooks: not a hook");
    }
    return out;
}

}  // namespace stockade::oci
