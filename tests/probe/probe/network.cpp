// Where the probe's sockets can reach, and which interfaces and routes its
// network namespace has.
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "actions.h"
#include "common.h"

namespace probe {

namespace {

struct SocketAddress {
    sockaddr_storage storage{};
    socklen_t length = 0;

    int family() const { return storage.ss_family; }
    const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
};

// A numeric IPv4 or IPv6 HOST and a PORT; none if HOST is neither.
std::optional<SocketAddress> parseAddress(const std::string& host, const std::string& port) {
    const auto portNumber = htons(static_cast<uint16_t>(std::atoi(port.c_str())));
    SocketAddress out;
    auto* v4 = reinterpret_cast<sockaddr_in*>(&out.storage);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&out.storage);
    if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = portNumber;
        out.length = sizeof *v4;
        return out;
    }
    if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = portNumber;
        out.length = sizeof *v6;
        return out;
    }
    return std::nullopt;
}

int badAddress() {
    emit("error", "bad address");
    return 2;
}

// A blocking-style connect bounded at three seconds; on a blocking socket,
// which never answers EINPROGRESS, a plain connect(2).
int connectWithTimeout(int fd, const SocketAddress& addr) {
    if (::connect(fd, addr.get(), addr.length) == 0) return 0;
    if (errno != EINPROGRESS) return -errno;
    pollfd p{fd, POLLOUT, 0};
    const int ready = ::poll(&p, 1, 3000);
    if (ready == 0) return -ETIMEDOUT;
    if (ready < 0) return -errno;
    int soError = 0;
    socklen_t soLen = sizeof soError;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &soLen);
    return -soError;
}

// Connects a socket of `type` to `addr` and reports what connect answered,
// or `stage=socket` and why there was no socket.
int reportConnect(const SocketAddress& addr, int type) {
    const int fd = ::socket(addr.family(), type | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        emit("stage", "socket");
        return reportCall(fd);
    }
    const int rc = connectWithTimeout(fd, addr);
    ::close(fd);
    emit("result", errName(-rc));
    return 0;
}

SocketAddress unixAddress(const std::string& name, bool abstract) {
    SocketAddress out;
    auto* un = reinterpret_cast<sockaddr_un*>(&out.storage);
    un->sun_family = AF_UNIX;
    if (abstract) {
        // A NUL first, then the name, which is as long as the length says.
        const size_t n = std::min(name.size(), sizeof un->sun_path - 1);
        memcpy(un->sun_path + 1, name.data(), n);
        out.length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
    } else {
        std::snprintf(un->sun_path, sizeof un->sun_path, "%s", name.c_str());
        out.length = sizeof *un;
    }
    return out;
}

}  // namespace

int connectTcp(const Args& a) {
    const std::optional<SocketAddress> addr = parseAddress(a[0], a[1]);
    if (!addr) return badAddress();
    return reportConnect(*addr, SOCK_STREAM | SOCK_NONBLOCK);
}

// Binds and listens on HOST PORT, says whether it could, and holds the
// listener for SECONDS: a second port a dev server opens beside its own.
int listenTcp(const Args& a) {
    const std::optional<SocketAddress> addr = parseAddress(a[0], a[1]);
    if (!addr) return badAddress();
    const int fd = ::socket(addr->family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return emitResult(-1, errno), 0;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    long rc = ::bind(fd, addr->get(), addr->length);
    if (rc == 0) rc = ::listen(fd, 16);
    emitResult(rc, errno);
    if (rc == 0) sleepSeconds(std::atoi(a[2].c_str()));
    return 0;
}

// connect(2) on a UDP socket only looks up a route and sends nothing, so this
// asks "is there a way out to HOST?" without putting a packet on any wire.
int routeUdp(const Args& a) {
    const std::optional<SocketAddress> addr = parseAddress(a[0], a[1]);
    if (!addr) return badAddress();
    return reportConnect(*addr, SOCK_DGRAM);
}

int connectAbstract(const Args& a) {
    return reportConnect(unixAddress(a[0], true), SOCK_STREAM);
}

int connectUnix(const Args& a) {
    return reportConnect(unixAddress(a[0], false), SOCK_STREAM);
}

// Interfaces from /proc/net/dev with their IFF_UP flag, and every route the
// kernel lists for this network namespace.
int ifaces(const Args&) {
    const int sock = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    const std::vector<std::string> lines = split(readOrEmpty("/proc/net/dev"), '\n');
    for (size_t i = 2; i < lines.size(); ++i) {
        const std::string& line = lines[i];
        const size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        const size_t first = line.find_first_not_of(' ');
        const std::string name = line.substr(first, colon - first);
        ifreq req{};
        std::snprintf(req.ifr_name, sizeof req.ifr_name, "%s", name.c_str());
        std::string state = "unknown";
        if (sock >= 0 && ::ioctl(sock, SIOCGIFFLAGS, &req) == 0)
            state = (req.ifr_flags & IFF_UP) ? "up" : "down";
        emit("iface", name + ":" + state);
    }
    if (sock >= 0) ::close(sock);
    const std::vector<std::string> v4 = split(readOrEmpty("/proc/net/route"), '\n');
    for (size_t i = 1; i < v4.size(); ++i) emit("route4", escape(v4[i]));
    for (const std::string& line : split(readOrEmpty("/proc/net/ipv6_route"), '\n'))
        emit("route6", escape(line));
    return 0;
}

}  // namespace probe
