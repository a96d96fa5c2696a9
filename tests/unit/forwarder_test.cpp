// The forwarder on its own, host to host: a listener on an ephemeral port
// forwarded to servers on another, with host sockets as the "inside" ones.
#include "runtime/forwarder.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <thread>

using namespace stockade;

namespace {

uint16_t portOf(int fd) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    return ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

UniqueFd listenOn(int family, uint16_t port) {
    UniqueFd fd(socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    int one = 1;
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (family == AF_INET6) setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    sockaddr_storage addr{};
    socklen_t len;
    if (family == AF_INET6) {
        auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
        a->sin6_family = AF_INET6;
        a->sin6_port = htons(port);
        a->sin6_addr = in6addr_loopback;
        len = sizeof *a;
    } else {
        auto* a = reinterpret_cast<sockaddr_in*>(&addr);
        a->sin_family = AF_INET;
        a->sin_port = htons(port);
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        len = sizeof *a;
    }
    if (bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) < 0 || listen(fd.get(), 16) < 0)
        fd.reset();
    return fd;
}

UniqueFd connectTo(uint16_t port) {
    UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval five{5, 0};
    setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &five, sizeof five);
    if (connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) < 0) fd.reset();
    return fd;
}

// The forwarder's loop on a thread of its own, as the supervisor runs it.
class Running {
  public:
    explicit Running(uint16_t target) : epoll_(epoll_create1(EPOLL_CLOEXEC)) {
        SocketSource host = [](int family) {
            return Result<UniqueFd>(
                UniqueFd(socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)));
        };
        std::vector<ForwardTarget> targets;
        targets.push_back(insideLoopback(AF_INET, target, host));
        targets.push_back(insideLoopback(AF_INET6, target, host));
        forwarder_ = std::make_unique<Forwarder>(epoll_.get(), std::move(targets));
        std::vector<UniqueFd> listeners;
        listeners.push_back(listenOn(AF_INET, 0));
        port_ = portOf(listeners.back().get());
        REQUIRE(forwarder_->start(std::move(listeners)).ok());
        thread_ = std::thread([this] {
            epoll_event events[64];
            while (!stop_) {
                int n = epoll_wait(epoll_.get(), events, 64, 20);
                for (int i = 0; i < n; ++i)
                    static_cast<EventHandler*>(events[i].data.ptr)->onEvent(events[i].events);
                forwarder_->collect();
            }
        });
    }
    ~Running() {
        stop_ = true;
        thread_.join();
    }
    uint16_t port() const { return port_; }

  private:
    UniqueFd epoll_;
    std::unique_ptr<Forwarder> forwarder_;
    std::thread thread_;
    std::atomic<bool> stop_{false};
    uint16_t port_ = 0;
};

std::string readAll(int fd) {
    std::string out;
    char buf[65536];
    ssize_t n;
    while ((n = recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
    return out;
}

}  // namespace

TEST_CASE("the forwarder carries both directions and passes a half-close on", "[forwarder]") {
    UniqueFd server = listenOn(AF_INET, 0);
    REQUIRE(server);
    Running forwarding(portOf(server.get()));
    // The server reads until the client's EOF, then answers with the count.
    std::thread peer([&] {
        UniqueFd conn(accept4(server.get(), nullptr, nullptr, SOCK_CLOEXEC));
        std::string got = readAll(conn.get());
        std::string answer = "got " + std::to_string(got.size()) + "\n";
        send(conn.get(), answer.data(), answer.size(), MSG_NOSIGNAL);
    });
    UniqueFd client = connectTo(forwarding.port());
    REQUIRE(client);
    const std::string payload(4 << 20, 'x');  // more than both pipes and socket buffers
    size_t sent = 0;
    while (sent < payload.size()) {
        ssize_t n = send(client.get(), payload.data() + sent, payload.size() - sent, MSG_NOSIGNAL);
        REQUIRE(n > 0);
        sent += static_cast<size_t>(n);
    }
    shutdown(client.get(), SHUT_WR);
    CHECK(readAll(client.get()) == "got 4194304\n");
    peer.join();
}

TEST_CASE("the forwarder tries [::1] when 127.0.0.1 refuses", "[forwarder]") {
    UniqueFd v6 = listenOn(AF_INET6, 0);
    if (!v6) {
        WARN("no IPv6 loopback here; the fallback is not tested");
        return;
    }
    Running forwarding(portOf(v6.get()));
    std::thread peer([&] {
        UniqueFd conn(accept4(v6.get(), nullptr, nullptr, SOCK_CLOEXEC));
        send(conn.get(), "v6\n", 3, MSG_NOSIGNAL);
    });
    UniqueFd client = connectTo(forwarding.port());
    REQUIRE(client);
    CHECK(readAll(client.get()) == "v6\n");
    peer.join();
}

TEST_CASE("a port refused inside closes the client with a FIN, not a reset", "[forwarder]") {
    UniqueFd probe = listenOn(AF_INET, 0);
    const uint16_t nothing = portOf(probe.get());
    probe.reset();  // now nothing listens there, on either address
    Running forwarding(nothing);
    UniqueFd client = connectTo(forwarding.port());
    REQUIRE(client);
    send(client.get(), "GET / HTTP/1.0\r\n\r\n", 18, MSG_NOSIGNAL);
    char byte;
    errno = 0;
    CHECK(recv(client.get(), &byte, 1, 0) == 0);  // EOF; ECONNRESET would be -1
    CHECK(errno == 0);
}
