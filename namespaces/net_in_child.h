// Network namespace, child side (G1): a fresh namespace holds only `lo`, and
// it is down; bring it up so the sandbox can talk to itself and nothing else.
#pragma once

namespace stockade::ns {

int bringLoopbackUpInChild() noexcept;

// The network namespace made beside the rest of the set-up: its creation
// (every protocol's per-namespace state) is the costliest of the namespaces,
// and a helper can pay it on another CPU while the caller builds the root.
//
// startNetworkNamespaceInChild forks a helper that shares the caller's fd
// table, creates a network namespace, brings `lo` up in it, and puts an fd
// for it at `slot` (an fd number the caller holds open for it). Returns the
// helper's pid, or -errno. joinNetworkNamespaceInChild waits for the helper
// and moves the caller into the namespace; it returns 0 or an errno. Join
// before closing fds en masse: the helper's own fds live in the shared table
// until it is done.
int startNetworkNamespaceInChild(int slot) noexcept;
int joinNetworkNamespaceInChild(int helper, int slot) noexcept;

}  // namespace stockade::ns
