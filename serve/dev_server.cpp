#include "serve/dev_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "base/fault_injection.h"
#include "runtime/supervisor/echo_sink.h"
#include "runtime/supervisor/sandbox.h"

namespace stockade {

namespace {

constexpr long kProbeIntervalMs = 25;

int familyOf(int fd) {
    sockaddr_storage address{};
    socklen_t length = sizeof(address);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) < 0) return AF_UNSPEC;
    return address.ss_family;
}

void writeAll(int fd, const char* data, size_t size) {
    while (size > 0) {
        ssize_t n = ::write(fd, data, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        data += n;
        size -= static_cast<size_t>(n);
    }
}

}  // namespace

const char* netBackendName(NetBackend backend) {
    switch (backend) {
        case NetBackend::Userspace:
            return "userspace";
        case NetBackend::Veth:
            return "veth";
        case NetBackend::Direct:
            return "direct";
    }
    return "userspace";
}

constexpr int kLogFlags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW;

Result<BoundedLog> BoundedLog::create(int dir_fd, std::string name, const std::string& shown,
                                      uint64_t limit) {
    UniqueFd dir(fcntl(dir_fd, F_DUPFD_CLOEXEC, 3));
    if (!dir) return Error::fromErrno("fcntl(F_DUPFD_CLOEXEC) of the state directory");
    unlinkat(dir.get(), (name + ".1").c_str(), 0);
    UniqueFd fd(openat(dir.get(), name.c_str(), kLogFlags, 0600));
    if (!fd) return Error::fromErrno("open(\"" + shown + "\") for the server's log");
    return BoundedLog(std::move(dir), std::move(name), limit, std::move(fd));
}

void BoundedLog::write(const char* data, size_t size) {
    if (!fd_) return;
    if (size_ + size > limit_ && size_ > 0) {
        renameat(dir_.get(), name_.c_str(), dir_.get(), (name_ + ".1").c_str());
        fd_.reset(openat(dir_.get(), name_.c_str(), kLogFlags, 0600));
        size_ = 0;
        if (!fd_) return;
    }
    writeAll(fd_.get(), data, size);
    size_ += size;
}

class DevServer::ProbeTimer : public EventHandler {
  public:
    explicit ProbeTimer(DevServer& owner) : owner_(owner) {}
    void onEvent(uint32_t) override {
        uint64_t expirations;
        (void)!read(owner_.timer_.get(), &expirations, sizeof(expirations));
        // A prompt that stopped mid-line, whatever sizes its writes had.
        if (owner_.pattern_) owner_.pattern_->settle();
        owner_.tick();
    }

  private:
    DevServer& owner_;
};

Result<std::unique_ptr<DevServer>> DevServer::create(const DevServerOptions& options,
                                                     std::vector<UniqueFd> listeners,
                                                     BoundedLog log) {
    UniqueFd epoll(epoll_create1(EPOLL_CLOEXEC));
    if (!epoll) return Error::fromErrno("epoll_create1()");
    std::unique_ptr<DevServer> server(
        new DevServer(options, std::move(listeners), std::move(log), std::move(epoll)));
    if (options.ready_pattern) {
        auto pattern = ReadyPattern::compile(*options.ready_pattern);
        if (!pattern) return pattern.error();
        server->pattern_ = std::move(*pattern);
    }
    if (options.backend == NetBackend::Direct) {
        std::vector<int> fds;
        for (const UniqueFd& fd : server->listeners_) fds.push_back(fd.get());
        server->ingress_.emplace(options.port, std::move(fds));
        DevServer* self = server.get();
        server->call_server_ = [self](int listener_fd, const seccomp_notif& call) {
            return self->ingress_->serve(listener_fd, call);
        };
    }
    server->timer_.reset(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
    if (!server->timer_) return Error::fromErrno("timerfd_create()");
    server->timer_handler_ = std::make_unique<ProbeTimer>(*server);
    epoll_event ev{EPOLLIN, {.ptr = static_cast<EventHandler*>(server->timer_handler_.get())}};
    if (epoll_ctl(server->epoll_.get(), EPOLL_CTL_ADD, server->timer_.get(), &ev) < 0)
        return Error::fromErrno("epoll_ctl(ADD, the readiness timer)");
    return server;
}

DevServer::DevServer(const DevServerOptions& options, std::vector<UniqueFd> listeners,
                     BoundedLog log, UniqueFd epoll)
    : options_(options),
      listeners_(std::move(listeners)),
      log_(std::move(log)),
      epoll_(std::move(epoll)),
      in_use_(options.backend == NetBackend::Veth ? NetBackend::Veth : NetBackend::Userspace),
      start_(std::chrono::steady_clock::now()) {}

DevServer::~DevServer() = default;

Status DevServer::beforeStart(pid_t sandbox_pid) {
    if (options_.backend != NetBackend::Veth) return okStatus();
    auto network = VethNetwork::create(sandbox_pid, options_.port);
    if (!network) return network.error();
    veth_ = std::move(*network);
    return okStatus();
}

Status DevServer::started(pid_t sandbox_pid, InsideSockets& sockets) {
    SocketSource inside = [&sockets](int family) { return sockets.open(family); };
    // IPv4 over the veth when there is one. [::1] only through init's
    // socket: Linux delivers nothing to ::1 that arrives on another
    // interface (IPv6 has no route_localnet), and a server that binds
    // `localhost` may have taken ::1 alone (Node 17+ resolves it so).
    if (veth_)
        targets_.push_back(hostRoute(veth_->sandboxAddress(), options_.port));
    else
        targets_.push_back(insideLoopback(AF_INET, options_.port, inside));
    targets_.push_back(insideLoopback(AF_INET6, options_.port, inside));
    if (ingress_)
        if (auto s = ingress_->setSandbox(sandbox_pid); !s)
            return s.error().withContext("the direct ingress");
    // The readiness probe and --ready-timeout both run on this timer: a
    // server whose timer is not armed would never be judged ready or late.
    itimerspec every{};
    every.it_interval.tv_nsec = kProbeIntervalMs * 1000000;
    every.it_value = every.it_interval;
    if (faultInjected(FaultPoint::ServeTimerSettime, injectedFault()) ||
        timerfd_settime(timer_.get(), 0, &every, nullptr) < 0)
        return Error::fromErrno("arm the readiness probe: timerfd_settime(every " +
                                std::to_string(kProbeIntervalMs) + " ms)");
    if (on_started) on_started(sandbox_pid);
    return okStatus();
}

void DevServer::output(int stream, const char* data, size_t size) {
    log_.write(data, size);
    (void)stream;
    if (pattern_ && !ready_) {
        pattern_->feed(data, size);
        if (probe_ok_) tick();  // the pattern was the last condition
    }
}

// A connection by the way the forwarder will go (the sandbox's loopback from
// inside its namespace, or its veth address through the DNAT): the server
// accepts connections on the port.
bool DevServer::probe(const ForwardTarget& target) {
    auto socket = target.socket();
    if (!socket) return false;
    if (connect(socket->get(), reinterpret_cast<const sockaddr*>(&target.address), target.length) ==
        0)
        return true;
    if (errno != EINPROGRESS) return false;
    pollfd pfd{socket->get(), POLLOUT, 0};
    if (poll(&pfd, 1, 200) <= 0) return false;
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(socket->get(), SOL_SOCKET, SO_ERROR, &err, &len);
    return err == 0;
}

void DevServer::tick() {
    if (ready_ || ending_) return;
    uint64_t elapsed = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                 std::chrono::steady_clock::now() - start_)
                                                 .count());
    // Direct: the server listens on the host's socket once it is handed over
    // (and only then: before, the host listener accepts into a queue no one
    // reads). Its listen may also have run in the sandbox (no listener for
    // the filter, an old kernel): then the forwarder serves, as userspace.
    // A handed listener counts once a process of the sandbox has held it on
    // two probes in a row: a listen that only tests whether the port is
    // free (Vite tries 0.0.0.0 and :: before it listens on [::1]) closes
    // within the one.
    if (ingress_ && ingress_->handedFamily() && !probe_ok_) {
        const bool held = !ingress_->heldBySandbox().empty();
        probe_ok_ = held && held_before_;
        held_before_ = held;
    }
    for (const ForwardTarget& target : targets_)
        if (!probe_ok_) probe_ok_ = probe(target);
    if (probe_ok_ && (!pattern_ || pattern_->matched())) {
        ready_ = true;
        itimerspec off{};
        timerfd_settime(timer_.get(), 0, &off, nullptr);
        std::vector<UniqueFd> forwarded = std::move(listeners_);
        if (ingress_) forwarded = splitHanded(std::move(forwarded));
        for (const UniqueFd& fd : forwarded)
            forwarded_loopbacks_.push_back(familyOf(fd.get()) == AF_INET6 ? "::1" : "127.0.0.1");
        forwarder_ = std::make_unique<Forwarder>(epoll_.get(), targets_);
        if (auto s = forwarder_->start(std::move(forwarded)); !s) {
            writeWithin(2, "stockade: publish the port: " + s.error().describe() + "\n", 1000);
            ending_ = Ending::SetupFailed;
            return;
        }
        if (on_ready) on_ready();
        return;
    }
    if (elapsed >= options_.ready_timeout_ms) ending_ = Ending::NotReady;
}

// The listeners a process of the sandbox holds are the server's alone: the
// supervisor never accepts on them. A loopback not handed over is carried by
// the forwarder to the server: to the host listener it holds (a server on
// one loopback, or on `::`, which was handed [::1]), else to its own socket
// inside (it listened after it was ready, where nothing could be handed).
// A listener handed and then closed (a probe of the port) is released: the
// supervisor closes its copy and listens afresh on that loopback for the
// forwarder, and a bind that fails says the sandbox still has the socket
// somewhere (in flight in a unix socket's queue): it stays the sandbox's,
// never accepted on by the supervisor.
std::vector<UniqueFd> DevServer::splitHanded(std::vector<UniqueFd> listeners) {
    const std::vector<int> held =
        ingress_->handedFamily() ? ingress_->heldBySandbox() : std::vector<int>{};
    std::vector<UniqueFd> forwarded;
    std::vector<ForwardTarget> direct;
    for (UniqueFd& fd : listeners) {
        const int family = familyOf(fd.get());
        if (std::find(held.begin(), held.end(), fd.get()) != held.end()) {
            direct.push_back(hostLoopback(family, options_.port));
            handed_.push_back(std::move(fd));
            continue;
        }
        if (ingress_->wasHanded(fd.get())) {
            ++released_;
            fd.reset();
            auto fresh = listenOnLoopbackOf(family, options_.port);
            if (!fresh) {
                writeWithin(2,
                            "stockade: a host listener the server was handed and closed "
                            "could not be listened on afresh (the sandbox may still hold it); "
                            "that loopback is not forwarded: " +
                                fresh.error().describe() + "\n",
                            1000);
                continue;
            }
            fd = std::move(*fresh);
        }
        forwarded.push_back(std::move(fd));
    }
    ingress_->freezeHandable(held);
    if (!direct.empty()) {
        in_use_ = NetBackend::Direct;
        targets_.insert(targets_.begin(), direct.begin(), direct.end());
    }
    return forwarded;
}

std::string DevServer::fallbackReason() const {
    if (!ingress_ || in_use_ == NetBackend::Direct) return "";
    if (released_)
        return "direct: the server closed the host listener it was handed and listens inside; "
               "the userspace forwarder serves";
    if (!ingress_->listens())
        return "direct: no listen(2) reached the supervisor (the server was ready on a socket "
               "it did not listen on itself)";
    return "direct: no listen(2) on port " + std::to_string(options_.port) +
           " could be handed a host listener (an address other than loopback or any, a family "
           "the host's loopback lacks, or a kernel refusing SECCOMP_ADDFD_FLAG_SETFD); the "
           "server listens inside";
}

std::optional<Ending> DevServer::onReadable() {
    epoll_event events[64];
    int n = epoll_wait(epoll_.get(), events, 64, 0);
    for (int i = 0; i < n; ++i)
        static_cast<EventHandler*>(events[i].data.ptr)->onEvent(events[i].events);
    if (forwarder_) forwarder_->collect();
    return ending_;
}

}  // namespace stockade
