// Network namespace, child side (G1): a fresh namespace holds only `lo`, and
// it is down; bring it up so the sandbox can talk to itself and nothing else.
#pragma once

namespace stockade::ns {

int bringLoopbackUpInChild() noexcept;

// The sandbox is a machine of its own (SPEC §7): its processes bind any port
// on its loopback, 80 included, as Docker's containers do
// (ip_unprivileged_port_start=0 since Docker 20.10). The bound is per network
// namespace, and a sandbox's holds only lo, so this opens nothing to the
// host. /proc/sys/net is the namespace of the process that looks the name up,
// so the caller must be in the sandbox's namespace, with CAP_NET_ADMIN over
// it, and see a /proc that is not yet the sandbox's (whose /proc/sys is
// read-only): `proc` is an fd of the host's /proc opened earlier, or -1 for
// the path /proc. Best effort: where the host's /proc/sys is read-only (a
// container) the kernel's 1024 stays, and a server that cannot bind its port
// is explained when it exits.
void allowEveryPortInChild(int proc) noexcept;

// The network namespace made beside the rest of the set-up: its creation
// (every protocol's per-namespace state) is the costliest of the namespaces,
// and a helper can pay it on another CPU while the caller builds the root.
//
// startNetworkNamespaceInChild forks a helper that shares the caller's fd
// table, creates a network namespace, brings `lo` up in it, lets every port
// be bound in it (allowEveryPortInChild) where `every_port`, and puts an fd
// for it at `slot` (an fd number the caller holds open for it). Returns the
// helper's pid, or -errno. joinNetworkNamespaceInChild waits for the helper
// and moves the caller into the namespace; it returns 0 or an errno. Join
// before closing fds en masse: the helper's own fds live in the shared table
// until it is done.
int startNetworkNamespaceInChild(int slot, bool every_port) noexcept;
int joinNetworkNamespaceInChild(int helper, int slot) noexcept;

}  // namespace stockade::ns
