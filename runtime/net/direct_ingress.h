// The direct ingress of a dev server (`serve --net-backend direct`, issue 17;
// docs/dev-servers.md, "direct"): no forwarder in the data path. The
// sandbox's filter sends every listen(2) to the supervisor. When the server
// listens on its published port, the supervisor installs in place of the
// server's socket (SECCOMP_IOCTL_NOTIF_ADDFD with SETFD, at the same fd
// number) its own listener of the host's network namespace, bound to the
// host's loopback on that port, and answers the call itself. The host's
// clients then reach the server's accept() with nothing in between.
//
// The supervisor judges the socket from the kernel's answers about the file
// it takes from the caller (pidfd_getfd: its family, type and protocol, its
// network namespace, getsockname), never from the sandbox's memory, and it
// never lets the call run in the kernel (no SECCOMP_USER_NOTIF_FLAG_CONTINUE):
// a listen it does not hand over it performs itself, on that file.
//
// A socket of the host's namespace in the sandbox's hands could be turned
// back into one that connects (shutdown or connect(AF_UNSPEC) returns a
// listener, or an accepted socket, to CLOSE). confineHandedSocket closes
// that way with the kernel's help before the socket is ever handed over;
// docs/dev-servers.md reasons through each way out and names its test.
#pragma once

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "seccomp/denials.h"

namespace stockade {

// What keeps a host socket handed to a sandbox, and every socket accepted
// from it, from carrying anything but connections made to it:
//  - SO_BINDTODEVICE "lo": its packets leave by the loopback alone, so
//    nothing it sends leaves the machine; changing or clearing it needs
//    CAP_NET_RAW in the host's user namespace.
//  - a classic BPF socket filter, locked (SO_LOCK_FILTER: no detach, no
//    replacement), that drops every segment with SYN and ACK set, so a
//    connect(2) on it never completes its handshake, and every RST whose
//    sequence number is 0, the reset a closed port answers a bare SYN
//    with, so a closed port looks like an open one (no scan of the host's
//    ports by the reset; docs/dev-servers.md names the other ways, still
//    open). Accepted sockets share the filter and the lock.
// Call it before bind(2). Since Linux 6.17 (commit 5d39580f68e6) a filter
// on a TCP socket needs CAP_NET_ADMIN over its network namespace, so a
// rootless supervisor cannot confine a host socket there: see below.
Status confineHandedSocket(int fd);
// That filter, for a socket confined elsewhere (runtime/net/listener_cgroup.h).
sock_fprog handedSocketFilter();

// Why this process cannot hand a confined host socket to a sandbox (a TCP
// socket confined in a throwaway try, and listeners made in a throwaway
// listener cgroup, runtime/net/listener_cgroup.h), or nullopt when it can.
// `serve --net-backend direct` then serves through the userspace forwarder,
// and says so: never an unconfined host socket.
std::optional<std::string> directIngressProblem();

class DirectIngress {
  public:
    // `listeners`: the supervisor's confined, listening host sockets for the
    // published port, one per family (not owned; they outlive this).
    DirectIngress(uint16_t port, std::vector<int> listeners);

    // The sandbox's network namespace, by init's pid: what tells a socket
    // of the sandbox's own from one of the host's.
    Status setSandbox(pid_t sandbox_pid);

    // Answers one notified call: listen(2), handed over or performed; any
    // other call is left to the refusal path (nullopt).
    std::optional<seccomp::ServedAnswer> serve(int listener_fd, const seccomp_notif& call);

    // The family (AF_INET, AF_INET6) of the first listener handed over, or 0.
    int handedFamily() const { return handed_family_; }
    // Whether `listener` has been handed to the sandbox: from then on it is
    // the sandbox's to accept on, and to change (its flags are the file's),
    // so the supervisor must never accept on it.
    bool wasHanded(int listener) const;
    // The listeners handed over that a process of the sandbox still holds,
    // by the kernel's links in /proc/PID/fd of every process under the
    // sandbox's init (not the sandbox's word). A server may listen only to
    // see whether the port is free and close at once (Vite probes 0.0.0.0
    // and :: before it listens on [::1]): such a listener is no longer the
    // server's, and no one accepts on it. A socket in flight in an
    // SCM_RIGHTS message is held by no process: the caller releases such a
    // listener only where the kernel then agrees (its port is free again).
    std::vector<int> heldBySandbox() const;
    // The server is ready: only `kept` (those handed and held) may be handed
    // again (to a restarted server, a second worker); the others go to the
    // forwarder. Any other listen on the published port runs on the
    // caller's own socket, inside.
    void freezeHandable(const std::vector<int>& kept);
    uint64_t handedOver() const { return handed_; }
    // The TCP ports the server listened on inside, other than the published
    // one (the kernel's getsockname, first 8): what a server that never got
    // ready was listening on instead.
    const std::vector<uint16_t>& otherPorts() const { return other_ports_; }
    uint64_t listens() const { return listens_; }

  private:
    seccomp::ServedAnswer handOver(int listener_fd, const seccomp_notif& call, int theirs,
                                   int listener, int backlog);
    bool inSandboxNetns(int fd) const;

    uint16_t port_;
    std::vector<int> listeners_;  // may be handed over
    std::vector<int> handed_listeners_;
    std::vector<uint16_t> other_ports_;
    pid_t sandbox_pid_ = 0;
    ino_t sandbox_netns_ = 0;
    dev_t sandbox_netns_dev_ = 0;
    int handed_family_ = 0;
    uint64_t handed_ = 0;
    uint64_t listens_ = 0;
};

}  // namespace stockade
