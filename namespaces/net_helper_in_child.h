// The network namespace's helper, its body alone (namespaces/net_in_child.cpp
// starts it). It shares its parent's memory (CLONE_VM) and thread pointer, so
// anything that writes thread-local state (errno, above all) would write the
// parent's while the parent runs on the other CPU. The body therefore calls
// the kernel directly and nothing else: its object imports no libc function
// that can set errno (tests/suite/net_helper_symbols.sh), and it is built
// without sanitizers, whose runtime keeps per-thread state too.
#pragma once

namespace stockade::ns {

struct NetHelperArgs {
    int proc;                // the host's /proc, opened by the parent, or -1; the helper closes it
    int slot;                // where the namespace's fd is put (an fd number the parent holds)
    bool every_port = true;  // allowEveryPortInChild's write, or the kernel's 1024 kept
};

// Makes a network namespace, brings `lo` up in it, lets every port be bound
// in it where asked (best effort, as allowEveryPortInChild), and dup3s a handle on it to
// `slot`. Returns 0 or the errno of the first call that failed: the helper's
// exit status, read by joinNetworkNamespaceInChild.
int buildNetworkNamespaceInHelper(void* args) noexcept;

// Whether this architecture has the direct kernel calls the body needs; where
// it does not, the helper is a fork instead (its own memory, libc allowed).
bool netHelperSharesMemory() noexcept;

}  // namespace stockade::ns
