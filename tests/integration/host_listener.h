// Host-side sockets for the network tests: listeners a sandbox must not
// reach, and the host's own outside address.
#pragma once

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "base/unique_fd.h"

namespace stockade::itest {

// A port nothing on the host's loopback listens on now (bound to 0, then
// released), for a server the test is about to start.
inline uint16_t freeLoopbackPort() {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), len);
    ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len);
    return ntohs(addr.sin_port);
}

// A listening socket on the host that records whether anyone connected.
class HostListener {
  public:
    static HostListener tcp(int family, const char* address) {
        HostListener listener;
        listener.fd_.reset(::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        sockaddr_storage addr{};
        socklen_t len = 0;
        if (family == AF_INET) {
            auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
            v4->sin_family = AF_INET;
            ::inet_pton(AF_INET, address, &v4->sin_addr);
            len = sizeof *v4;
        } else {
            auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
            v6->sin6_family = AF_INET6;
            ::inet_pton(AF_INET6, address, &v6->sin6_addr);
            len = sizeof *v6;
        }
        if (!listener.fd_ ||
            ::bind(listener.fd_.get(), reinterpret_cast<sockaddr*>(&addr), len) < 0 ||
            ::listen(listener.fd_.get(), 16) < 0 ||
            ::getsockname(listener.fd_.get(), reinterpret_cast<sockaddr*>(&addr), &len) < 0) {
            listener.fd_.reset();
            return listener;
        }
        listener.port_ =
            ntohs(family == AF_INET ? reinterpret_cast<sockaddr_in*>(&addr)->sin_port
                                    : reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
        return listener;
    }

    static HostListener abstractUnix(const std::string& name) {
        HostListener listener;
        listener.fd_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::memcpy(addr.sun_path + 1, name.data(), name.size());
        const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
        if (!listener.fd_ ||
            ::bind(listener.fd_.get(), reinterpret_cast<sockaddr*>(&addr), len) < 0 ||
            ::listen(listener.fd_.get(), 16) < 0)
            listener.fd_.reset();
        return listener;
    }

    // A unix stream socket bound at `path` (a scratch path the test owns),
    // mode 0777 so any uid may connect; the file is the caller's to remove.
    static HostListener pathUnix(const std::string& path) {
        HostListener listener;
        listener.fd_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        if (path.size() >= sizeof(addr.sun_path)) {
            listener.fd_.reset();
            return listener;
        }
        std::memcpy(addr.sun_path, path.data(), path.size());
        if (!listener.fd_ ||
            ::bind(listener.fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) < 0 ||
            ::chmod(path.c_str(), 0777) < 0 || ::listen(listener.fd_.get(), 16) < 0)
            listener.fd_.reset();
        return listener;
    }

    bool ok() const { return fd_.valid(); }
    std::string port() const { return std::to_string(port_); }
    // True if a connection is waiting to be accepted.
    bool sawConnection() const {
        const int conn = ::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC);
        if (conn >= 0) ::close(conn);
        return conn >= 0;
    }

  private:
    UniqueFd fd_;
    int port_ = 0;
};

// The host's first non-loopback IPv4 address, if it has one.
inline std::string hostExternalAddress() {
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) < 0) return {};
    std::string found;
    for (const ifaddrs* i = list; i != nullptr && found.empty(); i = i->ifa_next) {
        if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
        char text[INET_ADDRSTRLEN];
        ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr, text,
                    sizeof text);
        if (std::string_view(text).rfind("127.", 0) != 0) found = text;
    }
    ::freeifaddrs(list);
    return found;
}

}  // namespace stockade::itest
