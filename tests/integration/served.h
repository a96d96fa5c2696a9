// The shared pieces of the serve suites (serve_test.cpp and the files beside
// it): a host client of the published port, `stockade serve --detach` of a
// command in a Sandbox's set-up, and the setups every publishing case runs.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "harness.h"

namespace stockade::itest {

using nlohmann::json;
using namespace std::chrono_literals;

// A blocking TCP connection from the host; errno on failure.
inline UniqueFd connectFromHost(int family, uint16_t port, int& err, int receive_seconds = 5) {
    UniqueFd fd(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_storage addr{};
    socklen_t len;
    if (family == AF_INET6) {
        auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        v6->sin6_addr = in6addr_loopback;
        len = sizeof *v6;
    } else {
        auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        v4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        len = sizeof *v4;
    }
    timeval bound{receive_seconds, 0};
    ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
    err = ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) == 0 ? 0 : errno;
    if (err) fd.reset();
    return fd;
}

inline std::string connectResult(int family, uint16_t port) {
    int err = 0;
    UniqueFd fd = connectFromHost(family, port, err);
    return err == 0 ? "ok" : std::strerror(err);
}

inline void sendAll(int fd, std::string_view data) {
    while (!data.empty()) {
        const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
        if (n <= 0) return;
        data.remove_prefix(static_cast<size_t>(n));
    }
}

// Leaves errno 0 at EOF, recv's errno otherwise.
inline std::string readToEof(int fd) {
    std::string out;
    char buf[65536];
    ssize_t n;
    while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
    if (n == 0) errno = 0;
    return out;
}

// GET PATH over HTTP/1.0 through the published port: the whole response,
// and how its reading ended if not at EOF (a server slower than
// `receive_seconds` to answer shows as "[recv: Resource temporarily
// unavailable]", not as an empty answer).
inline std::string httpGet(int family, uint16_t port, const std::string& path,
                           int receive_seconds = 5) {
    int err = 0;
    UniqueFd fd = connectFromHost(family, port, err, receive_seconds);
    if (!fd) return std::string("connect: ") + std::strerror(err);
    sendAll(fd.get(), "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n");
    std::string out = readToEof(fd.get());
    if (errno != 0) out += std::string("[recv: ") + std::strerror(errno) + "]";
    return out;
}

// Gone, or a zombie waiting for a parent that is not stockade (a detached
// supervisor's parent is whoever reaps orphans here).
inline bool processGone(pid_t pid) {
    if (::kill(pid, 0) < 0 && errno == ESRCH) return true;
    const std::string stat = readFileOrEmpty("/proc/" + std::to_string(pid) + "/stat");
    const size_t paren = stat.rfind(')');
    return paren != std::string::npos && paren + 2 < stat.size() &&
           (stat[paren + 2] == 'Z' || stat[paren + 2] == 'X');
}

inline bool waitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
        if (std::chrono::steady_clock::now() > end) return false;
        std::this_thread::sleep_for(20ms);
    }
    return true;
}

// `stockade serve --detach` of a command in a Sandbox's set-up (the probe at
// /probe, the worktree at /repo, the result file), stopped at the end.
class Served {
  public:
    Served(const Sandbox& sandbox, std::string name, uint16_t port,
           const std::vector<std::string>& command, std::vector<std::string> options = {},
           const std::string& backend = "userspace",
           const std::vector<std::string>& environment = {})
        : sandbox_(sandbox), name_(std::move(name)), port_(port) {
        Launch launch = sandbox.launch(command);
        launch.environment.insert(launch.environment.end(), environment.begin(), environment.end());
        launch.args[0] = "serve";
        options.insert(options.end(),
                       {"--detach", "--name", name_, "--port", std::to_string(port_)});
        // "default": no --net-backend, as a user who names none.
        if (backend != "default") options.insert(options.end(), {"--net-backend", backend});
        launch.args.insert(launch.args.begin() + 1, options.begin(), options.end());
        started_ = runStockade(launch, 60s);
        const std::string line = started_.out.substr(0, started_.out.find('\n'));
        ready_ = json::parse(line, nullptr, false);
    }
    // Stopped, and its log (kept by stockade after a stop) removed: the
    // state directory is the invoking user's (no XDG_RUNTIME_DIR here).
    ~Served() {
        stockade({"stop", name_});
        const std::string state = sandbox_.mode() == Mode::Root
                                      ? "/run/stockade"
                                      : "/tmp/stockade-" + std::to_string(kNobody);
        for (const char* suffix : {".log", ".log.1"})
            ::unlink((state + "/" + name_ + suffix).c_str());
    }

    Completed stockade(std::vector<std::string> args) const {
        Launch launch;
        launch.mode = sandbox_.mode();
        launch.args = std::move(args);
        launch.environment = {"PATH=/usr/bin:/bin"};
        return runStockade(launch, 30s);
    }
    const Completed& started() const { return started_; }
    // What the server has written so far (`stockade logs`), for a failure's
    // message.
    std::string logs() const {
        const Completed logs = stockade({"logs", name_});
        return logs.out + logs.err;
    }
    bool ready() const { return started_.exitCode == 0 && ready_.is_object(); }
    const json& readyEvent() const { return ready_; }
    pid_t supervisor() const { return ready_.value("pid", 0); }
    // This server's entry in `stockade ps --json`, or null.
    json psEntry() const {
        const Completed ps = stockade({"ps", "--json"});
        const json all = json::parse(ps.out, nullptr, false);
        if (all.is_object() && all.value("schema", "") == "stockade.ps/v1" &&
            all["servers"].is_array())
            for (const json& entry : all["servers"])
                if (entry.value("name", "") == name_) return entry;
        return nullptr;
    }
    const std::string& name() const { return name_; }
    uint16_t port() const { return port_; }

  private:
    const Sandbox& sandbox_;
    std::string name_;
    uint16_t port_;
    Completed started_;
    json ready_;
};

// A host command's stdout (ip, nft, nsenter, ss).
inline std::string hostOutput(const std::string& command) {
    std::string out;
    if (FILE* pipe = ::popen(command.c_str(), "r")) {
        char buf[4096];
        size_t n;
        while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
        ::pclose(pipe);
    }
    return out;
}

// Whether this kernel has IPv6 on loopback: ::1 can be bound.
inline bool hostHasIpv6Loopback() {
    UniqueFd fd(::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) return false;
    sockaddr_in6 addr{};
    addr.sin6_family = AF_INET6;
    addr.sin6_addr = in6addr_loopback;
    return ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
}

inline std::string serviceName() {
    return randomToken("itest");
}

inline std::vector<std::string> httpServer(uint16_t port) {
    return {"python3",     "-m",   "http.server", "--bind", "127.0.0.1", std::to_string(port),
            "--directory", "/repo"};
}

inline std::string readFile(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The publishing and zero-egress cases run as root with each backend and
// rootless with userspace and the default. The default is direct where its
// listeners can be confined (as root here) and the userspace forwarder
// elsewhere (rootless: the listener cgroup's programs need CAP_BPF and
// CAP_NET_ADMIN), named in the ready event and ps. A root run of the veth
// or direct backend that cannot work here (no nft, no veth, no bpf) fails:
// it is not skipped. `took` is the backend the ready event must name.
struct ServeSetup {
    Mode mode;
    const char* backend;
    const char* took;
};

#define STOCKADE_EACH_SERVE_SETUP(mode, backend)                                                   \
    const ServeSetup serve_setup_ = GENERATE(ServeSetup{Mode::Root, "userspace", "userspace"},     \
                                             ServeSetup{Mode::Root, "veth", "veth"},               \
                                             ServeSetup{Mode::Root, "default", "direct"},          \
                                             ServeSetup{Mode::Rootless, "userspace", "userspace"}, \
                                             ServeSetup{Mode::Rootless, "default", "userspace"});  \
    const Mode mode = serve_setup_.mode;                                                           \
    const std::string backend = serve_setup_.backend;                                              \
    INFO("mode: " << modeName(mode) << ", backend: " << backend);                                  \
    if (!modeUsable(mode)) return

}  // namespace stockade::itest
