// The published port's cost (SPEC §9, issue 5): the same small server run
// straight on the host's loopback and under `stockade serve` with each
// network backend (all three by default as root: userspace, direct and veth;
// userspace and direct rootless), measured
// side by side, interleaved:
//   - throughput: the server streams BYTES to the client, and the CPU each
//     party spends per GiB moved (client, server, the forwarder), with how
//     busy the whole machine was meanwhile;
//   - latency: one-byte ping-pongs, median and p99, and the added median;
//   - short requests: REQUESTS connections one after another, each opened,
//     asked one byte, answered and closed (an HTTP/1.0 request's shape),
//     median and p99 of each whole exchange;
//   - concurrency: CONNS connections opened, each echoing once, all held;
//   - concurrent requests: CONNS short requests in flight at once (every
//     connect started before any answer is read), each timed from its
//     connect to its answer, median and p99, and requests per second.
//
//   stockade_forward_bench STOCKADE [--backend userspace|direct|veth|auto[,...]|all] [--bytes N]
//                          [--pings N]
//                          [--requests N] [--conns N] [--rounds N]
//   stockade_forward_bench server PORT      (what runs on both sides)
//
// Prints one JSON document. Targets: >= 90% of direct throughput, < 50 us
// added median latency, 1,000 concurrent connections held.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

bool readFull(int fd, void* data, size_t size) {
    auto* p = static_cast<char*>(data);
    while (size > 0) {
        ssize_t n = recv(fd, p, size, 0);
        if (n <= 0) return false;
        p += n;
        size -= static_cast<size_t>(n);
    }
    return true;
}

bool writeFull(int fd, const void* data, size_t size) {
    const auto* p = static_cast<const char*>(data);
    while (size > 0) {
        ssize_t n = send(fd, p, size, MSG_NOSIGNAL);
        if (n <= 0) return false;
        p += n;
        size -= static_cast<size_t>(n);
    }
    return true;
}

// One thread per connection. The first byte picks the job: 'T' + 8 bytes
// of count: stream that many bytes; 'E': echo until EOF.
void serveConnection(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    char job;
    if (readFull(fd, &job, 1)) {
        if (job == 'T') {
            uint64_t left;
            if (readFull(fd, &left, sizeof(left))) {
                static char block[1 << 16];
                while (left > 0) {
                    size_t n = std::min<uint64_t>(left, sizeof(block));
                    if (!writeFull(fd, block, n)) break;
                    left -= n;
                }
            }
        } else {
            char buf[4096];
            ssize_t n;
            while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
                if (!writeFull(fd, buf, static_cast<size_t>(n))) break;
        }
    }
    close(fd);
}

int runServer(uint16_t port) {
    rlimit files{};
    getrlimit(RLIMIT_NOFILE, &files);
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) < 0 || listen(fd, 4096) < 0) {
        std::perror("bind/listen");
        return 1;
    }
    std::printf("listening on %u\n", port);
    std::fflush(stdout);
    for (;;) {
        int conn = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (conn < 0) continue;
        // Small stacks: rootless, the dev-server profile's memory limit is
        // RLIMIT_AS, which 1,000 threads of 8 MiB stacks would exceed.
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 256 * 1024);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_t thread;
        if (pthread_create(
                &thread, &attr,
                [](void* fd) -> void* {
                    serveConnection(static_cast<int>(reinterpret_cast<intptr_t>(fd)));
                    return nullptr;
                },
                reinterpret_cast<void*>(static_cast<intptr_t>(conn))) != 0)
            close(conn);
        pthread_attr_destroy(&attr);
    }
}

int connectTo(uint16_t port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) < 0) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

// Bytes per second streamed from the server.
double throughput(uint16_t port, uint64_t bytes) {
    int fd = connectTo(port);
    if (fd < 0) return 0;
    char request[9] = {'T'};
    std::memcpy(request + 1, &bytes, sizeof(bytes));
    auto start = Clock::now();
    writeFull(fd, request, sizeof(request));
    static char buf[1 << 18];
    uint64_t got = 0;
    ssize_t n;
    while (got < bytes && (n = recv(fd, buf, sizeof(buf), 0)) > 0) got += static_cast<uint64_t>(n);
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    close(fd);
    return got == bytes ? static_cast<double>(bytes) / seconds : 0;
}

// CPU milliseconds a whole process has used (all its threads, live and
// exited), or -1 if it cannot be read. Its CPU-time clock is the sum that
// /proc/PID/stat shows as utime + stime, in nanoseconds rather than 10 ms
// ticks: a stream lasts well under a second, so ticks would be a few
// percent off. The kernel checks no permission on it, so this reads the
// sandboxed server too, whichever uid it runs as.
double processCpuMs(pid_t pid) {
    clockid_t clock;
    timespec ts{};
    if (pid <= 0 || clock_getcpuclockid(pid, &clock) != 0 || clock_gettime(clock, &ts) != 0)
        return -1;
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double threadCpuMs() {
    timespec ts{};
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return -1;
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// The aggregate "cpu" line of /proc/stat, in ticks: all of them, and the
// idle ones (idle + iowait). guest and guest_nice are left out: user and
// nice already count them.
struct MachineTicks {
    uint64_t total = 0, idle = 0;
};

MachineTicks machineTicks() {
    std::ifstream in("/proc/stat");
    std::string cpu;
    uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    if (!(in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) ||
        cpu != "cpu")
        return {};
    return {user + nice + system + idle + iowait + irq + softirq + steal, idle + iowait};
}

// What one stream cost, read before and after it: the client is this
// thread; server and forwarder are processes (-1: none, or unreadable).
struct CpuReading {
    double client = -1, server = -1, forwarder = -1;
    MachineTicks machine;
};

CpuReading readCpu(pid_t server, pid_t forwarder) {
    return {threadCpuMs(), processCpuMs(server), processCpuMs(forwarder), machineTicks()};
}

// Per round: each party's CPU ms per GiB moved, the whole machine's (every
// CPU, every process), and the fraction of the machine that was busy. A
// party that could not be read gets no entry, so its median is null.
struct CpuRounds {
    std::vector<double> client, server, forwarder, machine, busy;
};

void addRound(CpuRounds& rounds, const CpuReading& before, const CpuReading& after,
              uint64_t bytes) {
    double per_gib = static_cast<double>(1ull << 30) / static_cast<double>(bytes);
    auto add = [&](std::vector<double>& to, double from_ms, double to_ms) {
        if (from_ms >= 0 && to_ms >= 0) to.push_back((to_ms - from_ms) * per_gib);
    };
    add(rounds.client, before.client, after.client);
    add(rounds.server, before.server, after.server);
    add(rounds.forwarder, before.forwarder, after.forwarder);
    if (before.machine.total == 0 || after.machine.total <= before.machine.total) return;
    uint64_t total = after.machine.total - before.machine.total;
    uint64_t idle = after.machine.idle - before.machine.idle;
    double tick_ms = 1e3 / static_cast<double>(sysconf(_SC_CLK_TCK));
    rounds.machine.push_back(static_cast<double>(total - idle) * tick_ms * per_gib);
    rounds.busy.push_back(1 - static_cast<double>(idle) / static_cast<double>(total));
}

// The processes /proc/PID/task/*/children names, for every thread of pid.
std::vector<pid_t> childrenOf(pid_t pid) {
    std::vector<pid_t> out;
    std::error_code error;
    for (std::filesystem::directory_iterator task("/proc/" + std::to_string(pid) + "/task", error);
         !error && task != std::filesystem::directory_iterator(); task.increment(error)) {
        std::ifstream in(task->path() / "children");
        for (pid_t child; in >> child;) out.push_back(child);
    }
    return out;
}

std::string commOf(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
    std::string comm;
    std::getline(in, comm);
    return comm;
}

// The server under `stockade serve`: this same binary, so the supervisor's
// descendant with our comm (the sandbox's init sits between them). Host
// pids, since the host's /proc shows the sandbox's PID namespace too.
pid_t servedServer(pid_t supervisor, const std::string& comm) {
    for (pid_t child : childrenOf(supervisor)) {
        if (commOf(child) == comm) return child;
        if (pid_t found = servedServer(child, comm); found > 0) return found;
    }
    return -1;
}

// Round trips of one byte, in microseconds.
std::vector<double> pings(uint16_t port, int count) {
    std::vector<double> out;
    int fd = connectTo(port);
    if (fd < 0) return out;
    char job = 'E';
    writeFull(fd, &job, 1);
    for (int i = 0; i < count; ++i) {
        char b = 'x';
        auto start = Clock::now();
        if (!writeFull(fd, &b, 1) || !readFull(fd, &b, 1)) break;
        out.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    }
    close(fd);
    return out;
}

// Short requests, one after another: connect, one byte there and back,
// close. Microseconds per whole exchange.
std::vector<double> requests(uint16_t port, int count) {
    std::vector<double> out;
    for (int i = 0; i < count; ++i) {
        auto start = Clock::now();
        int fd = connectTo(port);
        if (fd < 0) break;
        char request[2] = {'E', 'x'}, b;
        const bool ok = writeFull(fd, request, 2) && readFull(fd, &b, 1);
        close(fd);
        if (!ok) break;
        out.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    }
    return out;
}

// Opens `count` connections, makes each echo a byte, holds them all, then
// checks each still echoes. Returns how many did both.
int concurrent(uint16_t port, int count) {
    std::vector<int> fds;
    for (int i = 0; i < count; ++i) {
        int fd = connectTo(port);
        if (fd < 0) break;
        char hello[2] = {'E', 'x'};
        writeFull(fd, hello, 2);
        fds.push_back(fd);
    }
    int ok = 0;
    for (int fd : fds) {
        char b;
        if (readFull(fd, &b, 1) && writeFull(fd, &b, 1) && readFull(fd, &b, 1)) ++ok;
    }
    for (int fd : fds) close(fd);
    return ok;
}

// `count` short requests at once: non-blocking connects all started, then
// each sends its request once connected and is done at its one-byte answer.
// Microseconds per request (connect to answer) and the whole burst's wall
// time, in `wall_us`. A request that fails or stalls 10 s is left out.
std::vector<double> burst(uint16_t port, int count, double& wall_us) {
    struct Request {
        int fd = -1;
        Clock::time_point start;
        bool sent = false;
    };
    std::vector<Request> all(static_cast<size_t>(count));
    std::vector<double> out;
    int epoll = epoll_create1(EPOLL_CLOEXEC);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const auto begin = Clock::now();
    int pending = 0;
    for (size_t i = 0; i < all.size(); ++i) {
        Request& r = all[i];
        r.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (r.fd < 0) continue;
        int one = 1;
        setsockopt(r.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        r.start = Clock::now();
        if (connect(r.fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) < 0 &&
            errno != EINPROGRESS) {
            close(r.fd);
            r.fd = -1;
            continue;
        }
        epoll_event ev{EPOLLOUT | EPOLLIN, {.u64 = i}};
        epoll_ctl(epoll, EPOLL_CTL_ADD, r.fd, &ev);
        ++pending;
    }
    epoll_event events[256];
    while (pending > 0) {
        int n = epoll_wait(epoll, events, 256, 10000);
        if (n <= 0) break;
        for (int k = 0; k < n; ++k) {
            Request& r = all[events[k].data.u64];
            if (r.fd < 0) continue;
            bool done = (events[k].events & (EPOLLERR | EPOLLHUP)) != 0;
            if (!done && !r.sent && (events[k].events & EPOLLOUT)) {
                char request[2] = {'E', 'x'};
                done = send(r.fd, request, 2, MSG_NOSIGNAL) != 2;
                r.sent = true;
                epoll_event ev{EPOLLIN, {.u64 = events[k].data.u64}};
                epoll_ctl(epoll, EPOLL_CTL_MOD, r.fd, &ev);
            } else if (!done && r.sent && (events[k].events & EPOLLIN)) {
                char b;
                if (recv(r.fd, &b, 1, 0) == 1)
                    out.push_back(
                        std::chrono::duration<double, std::micro>(Clock::now() - r.start).count());
                done = true;
            }
            if (done) {
                close(r.fd);
                r.fd = -1;
                --pending;
            }
        }
    }
    for (Request& r : all)
        if (r.fd >= 0) close(r.fd);
    close(epoll);
    wall_us = std::chrono::duration<double, std::micro>(Clock::now() - begin).count();
    return out;
}

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))];
}

nlohmann::json medianOrNull(const std::vector<double>& v) {
    return v.empty() ? nlohmann::json() : nlohmann::json(percentile(v, 0.5));
}

uint16_t freePort() {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    bind(fd, reinterpret_cast<sockaddr*>(&addr), len);
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    close(fd);
    return ntohs(addr.sin_port);
}

// The child's stdout goes to our stderr: `stockade serve` prints its ready
// event there, and our stdout is the report alone (one JSON document).
pid_t spawn(const std::vector<std::string>& argv) {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    if (posix_spawn_file_actions_init(&actions) != 0) return -1;
    posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
    pid_t pid;
    const int err = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    return err == 0 ? pid : -1;
}

bool waitForPort(uint16_t port) {
    for (int i = 0; i < 500; ++i) {
        int fd = connectTo(port);
        if (fd >= 0) {
            close(fd);
            return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 3 && std::string(argv[1]) == "server")
        return runServer(static_cast<uint16_t>(std::atoi(argv[2])));
    if (argc < 2) {
        std::fprintf(stderr,
                     "usage: stockade_forward_bench STOCKADE [--backend "
                     "userspace|direct|veth|auto[,...]|all] "
                     "[--bytes N] [--pings N] [--requests N] [--conns N] [--rounds N]\n");
        return 2;
    }
    std::string stockade = argv[1];
    uint64_t bytes = 1ull << 30;
    int ping_count = 20000, request_count = 1000, conns = 1000, rounds = 5;
    // Every backend side by side that can run: veth only as root.
    std::string backend_choice = "all";
    for (int i = 2; i + 1 < argc; i += 2) {
        std::string flag = argv[i];
        long long value = std::atoll(argv[i + 1]);
        if (flag == "--backend") backend_choice = argv[i + 1];
        if (flag == "--bytes") bytes = static_cast<uint64_t>(value);
        if (flag == "--pings") ping_count = static_cast<int>(value);
        if (flag == "--requests") request_count = static_cast<int>(value);
        if (flag == "--conns") conns = static_cast<int>(value);
        if (flag == "--rounds") rounds = static_cast<int>(value);
    }
    std::vector<std::string> backends;
    if (backend_choice == "all" || backend_choice == "both")
        backends = geteuid() == 0 ? std::vector<std::string>{"userspace", "direct", "veth"}
                                  : std::vector<std::string>{"userspace", "direct"};
    else {
        // A list, comma-separated: `auto` is serve's default (direct where
        // it holds), measured under the name a user gets it by.
        for (size_t at = 0; at <= backend_choice.size();) {
            size_t end = backend_choice.find(',', at);
            if (end == std::string::npos) end = backend_choice.size();
            backends.push_back(backend_choice.substr(at, end - at));
            at = end + 1;
        }
        for (const std::string& b : backends)
            if (b != "userspace" && b != "veth" && b != "direct" && b != "auto") {
                std::fprintf(stderr,
                             "--backend: userspace, direct, veth, auto, a list of them "
                             "(auto,userspace) or all\n");
                return 2;
            }
    }
    rlimit files{};
    getrlimit(RLIMIT_NOFILE, &files);
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);

    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (len <= 0) return 2;
    self[len] = 0;
    std::string exe = self, dir = exe.substr(0, exe.rfind('/'));

    // One measured target: the server straight on the host's loopback, or
    // one served per backend. pid is that server, or the `stockade serve`
    // supervisor (the forwarder, where there is one); server is the process
    // that streams.
    struct Target {
        std::string label;
        uint16_t port = 0;
        pid_t pid = -1, server = -1;
        std::vector<double> tput, ping, request, burst, burst_rate;
        int burst_ok = 0;
        CpuRounds cpu;
        int held = 0;
    };
    std::vector<Target> targets(1 + backends.size());
    targets[0].label = "loopback";
    targets[0].port = freePort();
    targets[0].pid = spawn({exe, "server", std::to_string(targets[0].port)});
    targets[0].server = targets[0].pid;
    for (size_t i = 0; i < backends.size(); ++i) {
        Target& t = targets[i + 1];
        t.label = backends[i];
        t.port = freePort();
        while (std::any_of(targets.begin(), targets.begin() + static_cast<long>(i) + 1,
                           [&](const Target& o) { return o.port == t.port; }))
            t.port = freePort();
        std::string name = "forward-bench-" + std::to_string(getpid()) + "-" + t.label;
        t.pid =
            spawn({stockade, "serve", "--quiet", "--net-backend", t.label, "--name", name, "--port",
                   std::to_string(t.port), "--mount", dir + ":/bench", "--",
                   "/bench/" + exe.substr(exe.rfind('/') + 1), "server", std::to_string(t.port)});
    }
    for (const Target& t : targets)
        if (t.pid < 0 || !waitForPort(t.port)) {
            std::fprintf(stderr, "the %s server did not come up\n", t.label.c_str());
            for (const Target& o : targets)
                if (o.pid > 0) kill(o.pid, o.label == "loopback" ? SIGKILL : SIGTERM);
            for (const Target& o : targets)
                if (o.pid > 0) waitpid(o.pid, nullptr, 0);
            return 1;
        }

    std::string comm = commOf(getpid());
    for (int r = 0; r < rounds; ++r)  // interleaved, so drift hits all alike
        for (Target& t : targets) {
            bool served = t.label != "loopback";
            // Looked up here, not at start: the forwarder may accept before
            // the sandboxed command has exec'd the server.
            if (served && t.server < 0) t.server = servedServer(t.pid, comm);
            CpuReading before = readCpu(t.server, served ? t.pid : -1);
            double rate = throughput(t.port, bytes);
            CpuReading after = readCpu(t.server, served ? t.pid : -1);
            t.tput.push_back(rate);
            if (rate > 0) addRound(t.cpu, before, after, bytes);
            auto p = pings(t.port, ping_count / rounds);
            t.ping.insert(t.ping.end(), p.begin(), p.end());
            auto q = requests(t.port, request_count / rounds);
            t.request.insert(t.request.end(), q.begin(), q.end());
            double wall_us = 0;
            auto b = burst(t.port, conns, wall_us);
            t.burst.insert(t.burst.end(), b.begin(), b.end());
            t.burst_ok = r == 0 ? static_cast<int>(b.size())
                                : std::min(t.burst_ok, static_cast<int>(b.size()));
            if (wall_us > 0) t.burst_rate.push_back(static_cast<double>(b.size()) * 1e6 / wall_us);
        }
    for (Target& t : targets) t.held = concurrent(t.port, conns);

    for (const Target& t : targets) kill(t.pid, t.label == "loopback" ? SIGKILL : SIGTERM);
    for (const Target& t : targets) waitpid(t.pid, nullptr, 0);

    auto cpuJson = [](const Target& t) {
        nlohmann::ordered_json parties{{"client", medianOrNull(t.cpu.client)},
                                       {"server", medianOrNull(t.cpu.server)}};
        if (t.label != "loopback") parties["forwarder"] = medianOrNull(t.cpu.forwarder);
        return parties;
    };
    const Target& loopback = targets[0];
    double md = percentile(loopback.tput, 0.5), ld = percentile(loopback.ping, 0.5),
           rd = percentile(loopback.request, 0.5);
    nlohmann::ordered_json out{
        {"schema", "stockade.forward-bench/v5"},
        {"uid", geteuid()},
        {"throughput_bytes", bytes},
        {"pings", ping_count},
        {"requests", request_count},
        {"concurrent_requested", conns},
        {"loopback",
         {{"throughput_mib_s", md / (1 << 20)},
          {"latency_us", {{"median", ld}, {"p99", percentile(loopback.ping, 0.99)}}},
          {"request_us", {{"median", rd}, {"p99", percentile(loopback.request, 0.99)}}},
          {"concurrent_ok", loopback.held},
          {"concurrent_requests",
           {{"median_us", percentile(loopback.burst, 0.5)},
            {"p99_us", percentile(loopback.burst, 0.99)},
            {"per_s", percentile(loopback.burst_rate, 0.5)},
            {"fewest_ok", loopback.burst_ok}}},
          {"cpu_ms_per_gib", cpuJson(loopback)},
          {"machine_cpu_ms_per_gib", medianOrNull(loopback.cpu.machine)},
          {"machine_busy", medianOrNull(loopback.cpu.busy)}}},
    };
    for (size_t i = 1; i < targets.size(); ++i) {
        const Target& t = targets[i];
        double m = percentile(t.tput, 0.5), l = percentile(t.ping, 0.5);
        out["backends"][t.label] = {
            {"throughput_mib_s", m / (1 << 20)},
            {"throughput_ratio", md > 0 ? m / md : 0},
            {"latency_us", {{"median", l}, {"p99", percentile(t.ping, 0.99)}}},
            {"latency_added_median_us", l - ld},
            {"request_us",
             {{"median", percentile(t.request, 0.5)}, {"p99", percentile(t.request, 0.99)}}},
            {"request_added_median_us", percentile(t.request, 0.5) - rd},
            {"concurrent_ok", t.held},
            {"concurrent_requests",
             {{"median_us", percentile(t.burst, 0.5)},
              {"p99_us", percentile(t.burst, 0.99)},
              {"added_median_us", percentile(t.burst, 0.5) - percentile(loopback.burst, 0.5)},
              {"per_s", percentile(t.burst_rate, 0.5)},
              {"per_s_ratio",
               percentile(loopback.burst_rate, 0.5) > 0
                   ? percentile(t.burst_rate, 0.5) / percentile(loopback.burst_rate, 0.5)
                   : 0},
              {"fewest_ok", t.burst_ok}}},
            {"cpu_ms_per_gib", cpuJson(t)},
            {"machine_cpu_ms_per_gib", medianOrNull(t.cpu.machine)},
            {"machine_busy", medianOrNull(t.cpu.busy)},
        };
        // On a CPU-bound machine (busy near 1) every CPU is spent and a
        // stream moves as fast as the CPU it costs per byte allows, all
        // parties together: throughput ~ 1 / (CPU per GiB). So the best a
        // forwarded stream can do against direct is direct's client + server
        // over this backend's client + server + forwarder. With CPUs to
        // spare the parties overlap instead, and this is no limit.
        nlohmann::json ceiling;
        if (!loopback.cpu.client.empty() && !loopback.cpu.server.empty() && !t.cpu.client.empty() &&
            !t.cpu.server.empty() && !t.cpu.forwarder.empty())
            ceiling =
                (percentile(loopback.cpu.client, 0.5) + percentile(loopback.cpu.server, 0.5)) /
                (percentile(t.cpu.client, 0.5) + percentile(t.cpu.server, 0.5) +
                 percentile(t.cpu.forwarder, 0.5));
        out["backends"][t.label]["cpu_bound_ceiling_ratio"] = ceiling;
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
}
