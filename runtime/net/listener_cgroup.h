// The cgroup the direct ingress's host listeners are made in (issue 17;
// docs/dev-servers.md, "direct").
//
// A listener handed to a sandbox, and every connection accepted from it, is a
// socket of the host's network namespace. Turned around (connect(AF_UNSPEC)),
// such a socket could bind(2) to any host address, which lists the host's
// addresses and ports, and connect(2), which sends SYNs to the host's own
// services. seccomp cannot tell these sockets from the sandbox's own; the
// kernel's cgroup hooks can. A socket keeps, for its whole life, the cgroup
// v2 of the process that created it (sock_cgroup_data), and an accepted
// socket takes its listener's. So the listeners are made by a short-lived
// child cloned straight into a leaf of their own (clone3 CLONE_INTO_CGROUP)
// that carries BPF_PROG_TYPE_CGROUP_SOCK_ADDR programs:
//   - BPF_CGROUP_INET4_BIND, INET6_BIND: only 127.0.0.1:PORT and [::1]:PORT,
//     the listeners' own binds, are let through; every other bind is EPERM,
//     before the kernel looks at the address (no EADDRINUSE, no
//     EADDRNOTAVAIL to read);
//   - BPF_CGROUP_INET4_CONNECT, INET6_CONNECT: every connect is EPERM, before
//     a SYN is sent (Fast Open's sendto and IPv4-mapped addresses included).
// The leaf is removed as soon as the child is reaped: the sockets hold the
// cgroup and its programs, which the kernel frees with the last of them.
// Root only: loading the programs needs CAP_BPF and CAP_NET_ADMIN, making the
// leaf and attaching to it the cgroup's owner.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"

namespace stockade {

// Binds 127.0.0.1:port and, where IPv6 is up, [::1]:port, as
// listenOnLoopback does, each confined as confineHandedSocket does, from
// inside a listener cgroup.
// `confinement_failed` says what failed was the cgroup or its programs
// (nothing bound); otherwise an error is the bind's (EADDRINUSE kept).
// Nothing is left behind on any path: no leaf, no program.
Result<std::vector<UniqueFd>> listenInListenerCgroup(uint16_t port, bool& confinement_failed);

// Why listeners cannot be made so here (not root, no cgroup v2 mount, the
// programs or the leaf refused), from a dry run on ephemeral ports; nullopt
// when they can.
std::optional<std::string> listenerCgroupProblem();

}  // namespace stockade
