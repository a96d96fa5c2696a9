// The published port of a dev server (SPEC §7): a userspace TCP forwarder
// from listening sockets on the host's loopback to the server: into the
// sandbox's own loopback through sockets its init makes (the userspace
// backend, every mode), or over the veth pair to the sandbox's address (the
// veth backend, root; runtime/net/veth_backend.h). One thread, the
// supervisor's, driven by epoll; each connection moves its bytes through a
// pipe per direction with splice(2), so they are never copied to user space.
// A side is read only while its pipe is empty, so a slow reader slows its
// writer (backpressure); an EOF is passed on as shutdown(SHUT_WR) once the
// pipe has drained (half-close); a reset on either side reaches the other as
// a reset; a connection refused inside is tried again for 3 s (a server
// between a probe of its port and its real listen, or restarting; 16
// clients at most wait at once), then closes the client with a FIN. Out of fds, it stops accepting
// (the backlog waits) until a connection ends.
#pragma once

#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"

namespace stockade {

// What an epoll set in stockade wakes: each registered fd's data.ptr names
// one of these.
class EventHandler {
  public:
    virtual ~EventHandler() = default;
    virtual void onEvent(uint32_t events) = 0;
};

// An unconnected, non-blocking TCP socket of the family (AF_INET, AF_INET6)
// in the sandbox's network namespace.
using SocketSource = std::function<Result<UniqueFd>(int family)>;

// One address a client is carried to, with where its socket comes from. The
// forwarder (and the readiness probe) tries a dev server's targets in order
// until one accepts.
struct ForwardTarget {
    sockaddr_storage address{};
    socklen_t length = 0;
    std::function<Result<UniqueFd>()> socket;
    std::string describe() const;  // "169.254.128.2:8000", "[::1]:8000"
};

// The sandbox's own 127.0.0.1:port or [::1]:port, through a socket from
// `inside` (made in the sandbox's network namespace).
ForwardTarget insideLoopback(int family, uint16_t port, SocketSource inside);
// address:port reached with an ordinary host socket (the veth backend).
ForwardTarget hostRoute(in_addr address, uint16_t port);
// The host's own 127.0.0.1:port or [::1]:port (the direct ingress: the other
// loopback is carried to the server's socket, which is the host's now).
ForwardTarget hostLoopback(int family, uint16_t port);

// Binds 127.0.0.1:port and, where IPv6 is up, [::1]:port on the host. An
// address that is in use is an error; IPv6 missing is not. Listeners that
// may be handed to a sandbox are made otherwise (runtime/net/listener_cgroup.h).
Result<std::vector<UniqueFd>> listenOnLoopback(uint16_t port);
// One of them: 127.0.0.1:port (AF_INET) or [::1]:port (AF_INET6).
Result<UniqueFd> listenOnLoopbackOf(int family, uint16_t port);

class Forwarder {
  public:
    // Registers in `epoll_fd` (owned by the caller, which dispatches its
    // events to the EventHandlers and then calls collect()).
    Forwarder(int epoll_fd, std::vector<ForwardTarget> targets);
    ~Forwarder();
    Forwarder(const Forwarder&) = delete;
    Forwarder& operator=(const Forwarder&) = delete;

    // Starts accepting on the listening sockets.
    Status start(std::vector<UniqueFd> listeners);
    // Frees the connections that ended during the last batch of events (an
    // event later in the same batch may still name them).
    void collect();
    size_t connections() const { return open_; }

  private:
    class Listener;
    class Connection;
    friend class Listener;
    friend class Connection;

    void accept(Listener& listener);
    void finished(Connection* connection);
    void pauseListeners(bool paused);

    int epoll_fd_;
    std::vector<ForwardTarget> targets_;
    std::vector<std::unique_ptr<Listener>> listeners_;
    std::vector<std::unique_ptr<Connection>> live_;
    std::vector<std::unique_ptr<Connection>> ended_;
    size_t open_ = 0;
    size_t big_pipes_ = 0;  // connections whose pipes were enlarged
    size_t waiting_ = 0;    // connections waiting for the server to listen
    bool paused_ = false;
};

}  // namespace stockade
