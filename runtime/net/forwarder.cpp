#include "runtime/net/forwarder.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <string>

namespace stockade {

namespace {

constexpr size_t kSpliceChunk = 1 << 20;
// A pipe of 1 MiB instead of 64 KiB moves a stream in fewer, larger splices
// (measured: docs/performance.md). Pipe buffers count against the user's
// pipe-user-pages-soft (64 MiB by default), past which every new pipe of that
// user, anywhere, gets two pages; so only the first few connections get
// them, 16 MiB in all.
constexpr int kBigPipeBytes = 1 << 20;
constexpr size_t kMaxBigPipeConnections = 8;
// A client that finds nothing listening inside waits this long for the
// server, tried again every kRefusedRetry. Servers leave such gaps at
// startup, after the readiness probe met a listener that only tested the
// port (Vite listens on 0.0.0.0, ::, :: and closes each, for up to ~100 ms
// apiece, before its real listen), and while they restart (a watcher
// reloading its config).
constexpr std::chrono::milliseconds kRefusedGrace{3000};
constexpr long kRefusedRetryNs = 25 * 1000 * 1000;
// At most this many clients wait at once; past it a refused client is closed
// at once, as it was before the wait existed. Each waiting one costs two
// sockets from the sandbox's init per try, so a host flood of clients while
// nothing listens costs the supervisor and init a bounded rate.
constexpr size_t kMaxWaiting = 16;

void setNoDelay(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// The address the forwarder connects to inside, or binds on the host.
struct Loopback {
    sockaddr_storage address{};
    socklen_t length = 0;
};

Loopback loopback(int family, uint16_t port) {
    Loopback out;
    if (family == AF_INET6) {
        auto* a = reinterpret_cast<sockaddr_in6*>(&out.address);
        a->sin6_family = AF_INET6;
        a->sin6_port = htons(port);
        a->sin6_addr = in6addr_loopback;
        out.length = sizeof(sockaddr_in6);
    } else {
        auto* a = reinterpret_cast<sockaddr_in*>(&out.address);
        a->sin_family = AF_INET;
        a->sin_port = htons(port);
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        out.length = sizeof(sockaddr_in);
    }
    return out;
}

// A client that cannot be carried inside gets a FIN, not a reset: what it
// already sent is read and dropped first (closing a socket with unread data
// sends RST).
void closeGently(UniqueFd fd) {
    std::array<char, 4096> scratch;
    for (int i = 0; i < 16 && recv(fd.get(), scratch.data(), scratch.size(), MSG_DONTWAIT) > 0;
         ++i) {
    }
    shutdown(fd.get(), SHUT_WR);
}

}  // namespace

std::string ForwardTarget::describe() const {
    char text[INET6_ADDRSTRLEN] = "?";
    if (address.ss_family == AF_INET6) {
        const auto* a = reinterpret_cast<const sockaddr_in6*>(&address);
        inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof(text));
        return "[" + std::string(text) + "]:" + std::to_string(ntohs(a->sin6_port));
    }
    const auto* a = reinterpret_cast<const sockaddr_in*>(&address);
    inet_ntop(AF_INET, &a->sin_addr, text, sizeof(text));
    return std::string(text) + ":" + std::to_string(ntohs(a->sin_port));
}

ForwardTarget insideLoopback(int family, uint16_t port, SocketSource inside) {
    Loopback where = loopback(family, port);
    ForwardTarget target;
    target.address = where.address;
    target.length = where.length;
    target.socket = [family, inside = std::move(inside)] { return inside(family); };
    return target;
}

ForwardTarget hostRoute(in_addr address, uint16_t port) {
    ForwardTarget target;
    auto* a = reinterpret_cast<sockaddr_in*>(&target.address);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    a->sin_addr = address;
    target.length = sizeof(sockaddr_in);
    target.socket = []() -> Result<UniqueFd> {
        UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
        if (!fd) return Error::fromErrno("socket(AF_INET)");
        return fd;
    };
    return target;
}

ForwardTarget hostLoopback(int family, uint16_t port) {
    Loopback where = loopback(family, port);
    ForwardTarget target;
    target.address = where.address;
    target.length = where.length;
    target.socket = [family]() -> Result<UniqueFd> {
        UniqueFd fd(socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
        if (!fd) return Error::fromErrno("socket() on the host's loopback");
        return fd;
    };
    return target;
}

Result<UniqueFd> listenOnLoopbackOf(int family, uint16_t port) {
    const char* where = family == AF_INET ? "127.0.0.1" : "[::1]";
    UniqueFd fd(socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd) return Error::fromErrno(std::string("socket() for ") + where);
    // Bound to `lo` before bind: a packet for the loopback address that
    // arrives by another interface (a host with route_localnet=1, as
    // kube-proxy sets it) is not delivered to the published port. Allowed
    // unprivileged on an unbound socket since Linux 5.7; before that,
    // rootless, the loopback address alone holds.
    static const char kLoopbackDevice[] = "lo";
    if (setsockopt(fd.get(), SOL_SOCKET, SO_BINDTODEVICE, kLoopbackDevice,
                   sizeof(kLoopbackDevice)) < 0 &&
        errno != EPERM)
        return Error::fromErrno(std::string("setsockopt(SO_BINDTODEVICE, \"lo\") for ") + where);
    int one = 1;
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (family == AF_INET6) setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    Loopback address = loopback(family, port);
    if (bind(fd.get(), reinterpret_cast<sockaddr*>(&address.address), address.length) < 0)
        return Error::fromErrno(std::string("bind(") + where + ":" + std::to_string(port) + ")" +
                                (errno == EADDRINUSE ? " (the port is in use)" : ""));
    if (listen(fd.get(), SOMAXCONN) < 0)
        return Error::fromErrno(std::string("listen(") + where + ")");
    return fd;
}

Result<std::vector<UniqueFd>> listenOnLoopback(uint16_t port) {
    std::vector<UniqueFd> out;
    for (int family : {AF_INET, AF_INET6}) {
        auto fd = listenOnLoopbackOf(family, port);
        if (!fd) {
            // No IPv6 loopback on this host: publish on 127.0.0.1 alone.
            const int err = fd.error().errnum();
            if (family == AF_INET6 && (err == EAFNOSUPPORT || err == EADDRNOTAVAIL)) break;
            return fd.error();
        }
        out.push_back(std::move(*fd));
    }
    return out;
}

class Forwarder::Listener : public EventHandler {
  public:
    Listener(Forwarder& owner, UniqueFd fd) : owner_(owner), fd_(std::move(fd)) {}
    // Out of the epoll set before its fd closes (Connection::release).
    ~Listener() override { epoll_ctl(owner_.epoll_fd_, EPOLL_CTL_DEL, fd_.get(), nullptr); }
    Listener(const Listener&) = delete;
    Listener& operator=(const Listener&) = delete;
    void onEvent(uint32_t) override { owner_.accept(*this); }
    int fd() const { return fd_.get(); }

  private:
    Forwarder& owner_;
    UniqueFd fd_;
};

// One client and its peer inside. Both sockets are registered edge-triggered
// for reading and writing; any event on either moves both directions as far
// as they go, so each stops only at EAGAIN and the next edge resumes it.
class Forwarder::Connection {
  public:
    Connection(Forwarder& owner, UniqueFd client)
        : owner_(owner), client_(std::move(client)), began_(std::chrono::steady_clock::now()) {}
    // One still open when the forwarder goes leaves the epoll set too.
    ~Connection() {
        release(client_);
        release(upstream_);
        release(retry_timer_);
    }
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    // Starts connecting to the first target.
    void begin() { tryNext(); }
    bool done() const { return done_; }
    size_t index = 0;  // in the owner's live_ list

  private:
    struct Side : EventHandler {
        Connection* connection = nullptr;
        void onEvent(uint32_t events) override { connection->onEvent(events); }
    };
    struct RetryTimer : EventHandler {
        Connection* connection = nullptr;
        void onEvent(uint32_t) override { connection->retry(); }
    };
    struct Direction {
        int from = -1, to = -1;
        UniqueFd pipe_read, pipe_write;
        size_t in_pipe = 0;
        bool eof = false;   // `from` has nothing more to send
        bool shut = false;  // and `to` has been told (SHUT_WR)
    };

    void tryNext() {
        while (next_target_ < owner_.targets_.size()) {
            const ForwardTarget& target = owner_.targets_[next_target_++];
            auto socket = target.socket();
            if (!socket) continue;
            upstream_ = std::move(*socket);
            if (connect(upstream_.get(), reinterpret_cast<const sockaddr*>(&target.address),
                        target.length) == 0) {
                open();
                return;
            }
            if (errno == EINPROGRESS) {
                connecting_ = true;
                upstream_side_.connection = this;
                epoll_event ev{EPOLLOUT | EPOLLET,
                               {.ptr = static_cast<EventHandler*>(&upstream_side_)}};
                if (epoll_ctl(owner_.epoll_fd_, EPOLL_CTL_ADD, upstream_.get(), &ev) == 0) return;
            }
            upstream_.reset();  // refused (nothing listens there): the next
        }
        if (waitToRetry()) return;
        closeGently(std::move(client_));
        end();
    }

    // Every target refused: tried again in kRefusedRetry while the client is
    // younger than kRefusedGrace. False once it is not (or no timer can be
    // had: the client is closed as before).
    bool waitToRetry() {
        if (std::chrono::steady_clock::now() - began_ >= kRefusedGrace) return false;
        if (!retry_timer_) {
            if (owner_.waiting_ >= kMaxWaiting) return false;
            retry_timer_.reset(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
            if (!retry_timer_) return false;
            retry_side_.connection = this;
            epoll_event ev{EPOLLIN, {.ptr = static_cast<EventHandler*>(&retry_side_)}};
            if (epoll_ctl(owner_.epoll_fd_, EPOLL_CTL_ADD, retry_timer_.get(), &ev) < 0) {
                retry_timer_.reset();
                return false;
            }
            ++owner_.waiting_;
        }
        itimerspec once{};
        once.it_value.tv_nsec = kRefusedRetryNs;
        return timerfd_settime(retry_timer_.get(), 0, &once, nullptr) == 0;
    }

    // No longer waiting: its timer out of the epoll set and closed, and its
    // place among the waiting freed.
    void stopWaiting() {
        if (!retry_timer_) return;
        release(retry_timer_);
        --owner_.waiting_;
    }

    // `fd` out of the epoll set, then closed. A close alone takes it out
    // only with the last reference to its file: init's copy of a socket it
    // has just sent lives on until init runs again (a loaded host, an ASan
    // build), and an event on the registration left behind named this
    // connection after collect() had freed it (a use-after-free the ASan
    // suite caught in `serve`).
    void release(UniqueFd& fd) {
        if (!fd) return;
        epoll_ctl(owner_.epoll_fd_, EPOLL_CTL_DEL, fd.get(), nullptr);
        fd.reset();
    }

    void retry() {
        if (done_) return;
        // Read to disarm the level-triggered event; a failed read (nothing
        // expired) only means one try more, never a client left waiting.
        uint64_t expirations;
        const ssize_t read_bytes = read(retry_timer_.get(), &expirations, sizeof expirations);
        (void)read_bytes;
        next_target_ = 0;
        tryNext();
    }

    void onEvent(uint32_t events) {
        if (done_) return;
        if (connecting_) {
            int err = 0;
            socklen_t len = sizeof(err);
            getsockopt(upstream_.get(), SOL_SOCKET, SO_ERROR, &err, &len);
            if (err == 0 && (events & EPOLLOUT)) {
                connecting_ = false;
                epoll_ctl(owner_.epoll_fd_, EPOLL_CTL_DEL, upstream_.get(), nullptr);
                open();
            } else if (err != 0 || (events & (EPOLLERR | EPOLLHUP))) {
                connecting_ = false;
                release(upstream_);
                tryNext();
            }
            return;
        }
        pumpBoth();
    }

    void open() {
        stopWaiting();
        int to_inside[2], to_client[2];
        if (pipe2(to_inside, O_CLOEXEC | O_NONBLOCK) < 0) return fail();
        up_.pipe_read.reset(to_inside[0]);
        up_.pipe_write.reset(to_inside[1]);
        if (pipe2(to_client, O_CLOEXEC | O_NONBLOCK) < 0) return fail();
        down_.pipe_read.reset(to_client[0]);
        down_.pipe_write.reset(to_client[1]);
        if (owner_.big_pipes_ < kMaxBigPipeConnections &&
            fcntl(to_inside[1], F_SETPIPE_SZ, kBigPipeBytes) >= 0 &&
            fcntl(to_client[1], F_SETPIPE_SZ, kBigPipeBytes) >= 0) {
            big_pipes_ = true;
            ++owner_.big_pipes_;
        }
        up_.from = down_.to = client_.get();
        up_.to = down_.from = upstream_.get();
        setNoDelay(client_.get());
        setNoDelay(upstream_.get());
        client_side_.connection = upstream_side_.connection = this;
        uint32_t wanted = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
        epoll_event c{wanted, {.ptr = static_cast<EventHandler*>(&client_side_)}};
        epoll_event u{wanted, {.ptr = static_cast<EventHandler*>(&upstream_side_)}};
        if (epoll_ctl(owner_.epoll_fd_, EPOLL_CTL_ADD, client_.get(), &c) < 0 ||
            epoll_ctl(owner_.epoll_fd_, EPOLL_CTL_ADD, upstream_.get(), &u) < 0)
            return fail();
        pumpBoth();
    }

    void pumpBoth() {
        if (!pump(up_) || !pump(down_)) return fail();
        if (up_.shut && down_.shut) end();
    }

    // Moves what it can; false on an error that ends the connection.
    static bool pump(Direction& d) {
        for (;;) {
            if (d.in_pipe > 0) {
                ssize_t n = splice(d.pipe_read.get(), nullptr, d.to, nullptr, d.in_pipe,
                                   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
                if (n > 0) {
                    d.in_pipe -= static_cast<size_t>(n);
                    continue;
                }
                if (n < 0 && errno == EINTR) continue;
                return n < 0 && errno == EAGAIN;  // wait for room in `to`
            }
            if (d.eof) {
                if (!d.shut) {
                    shutdown(d.to, SHUT_WR);
                    d.shut = true;
                }
                return true;
            }
            ssize_t n = splice(d.from, nullptr, d.pipe_write.get(), nullptr, kSpliceChunk,
                               SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (n > 0) {
                d.in_pipe += static_cast<size_t>(n);
                continue;
            }
            if (n == 0) {
                d.eof = true;
                continue;
            }
            if (errno == EINTR) continue;
            return errno == EAGAIN;  // the pipe is empty: nothing to read yet
        }
    }

    // An error on either side (a reset, a failed pipe): both go at once,
    // each with a reset rather than an orderly end, so neither peer can
    // take a cut-off stream for a complete one.
    void fail() {
        linger hard{1, 0};
        for (const UniqueFd* side : {&client_, &upstream_})
            if (*side) setsockopt(side->get(), SOL_SOCKET, SO_LINGER, &hard, sizeof(hard));
        end();
    }

    void end() {
        if (done_) return;
        done_ = true;
        if (big_pipes_) --owner_.big_pipes_;
        stopWaiting();
        release(client_);
        release(upstream_);
        up_ = Direction{};
        down_ = Direction{};
        owner_.finished(this);
    }

    Forwarder& owner_;
    UniqueFd client_, upstream_;
    Side client_side_, upstream_side_;
    UniqueFd retry_timer_;  // armed while every target refuses
    RetryTimer retry_side_;
    std::chrono::steady_clock::time_point began_;
    Direction up_, down_;  // client → inside, inside → client
    size_t next_target_ = 0;
    bool connecting_ = false;
    bool big_pipes_ = false;
    bool done_ = false;
};

Forwarder::Forwarder(int epoll_fd, std::vector<ForwardTarget> targets)
    : epoll_fd_(epoll_fd), targets_(std::move(targets)) {}

Forwarder::~Forwarder() = default;

Status Forwarder::start(std::vector<UniqueFd> listeners) {
    for (UniqueFd& fd : listeners) {
        // accept() runs until EAGAIN: a blocking listener would stall the loop.
        int flags = fcntl(fd.get(), F_GETFL);
        if (flags < 0 || fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK) < 0)
            return Error::fromErrno("fcntl(O_NONBLOCK) on a published port");
        auto listener = std::make_unique<Listener>(*this, std::move(fd));
        epoll_event ev{EPOLLIN, {.ptr = static_cast<EventHandler*>(listener.get())}};
        if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listener->fd(), &ev) < 0)
            return Error::fromErrno("epoll_ctl(ADD, a published port)");
        listeners_.push_back(std::move(listener));
    }
    return okStatus();
}

void Forwarder::accept(Listener& listener) {
    for (;;) {
        int fd = accept4(listener.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            // Out of fds: stop accepting (the backlog waits) until a
            // connection ends, rather than spin on a readable listener.
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                pauseListeners(true);
            // No longer listening (shut down by someone holding it): it
            // would wake the loop forever, so it is dropped.
            if (errno == EINVAL) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listener.fd(), nullptr);
            return;
        }
        auto connection = std::make_unique<Connection>(*this, UniqueFd(fd));
        Connection* c = connection.get();
        c->index = live_.size();
        live_.push_back(std::move(connection));
        ++open_;
        c->begin();
    }
}

void Forwarder::finished(Connection* connection) {
    --open_;
    size_t i = connection->index;
    ended_.push_back(std::move(live_[i]));
    if (i + 1 != live_.size()) {
        live_[i] = std::move(live_.back());
        live_[i]->index = i;
    }
    live_.pop_back();
    if (paused_) pauseListeners(false);
}

void Forwarder::pauseListeners(bool paused) {
    paused_ = paused;
    for (auto& listener : listeners_) {
        epoll_event ev{paused ? 0u : static_cast<uint32_t>(EPOLLIN),
                       {.ptr = static_cast<EventHandler*>(listener.get())}};
        epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listener->fd(), &ev);
    }
}

void Forwarder::collect() {
    ended_.clear();
}

}  // namespace stockade
