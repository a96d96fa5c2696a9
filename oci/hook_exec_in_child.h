// A hook's child, between fork and execve (oci/hooks.h): async-signal-safe
// only, so that tests/suite/child_symbols.sh checks it with the rest of the
// child side.
#pragma once

#include <stddef.h>

#include <utility>

namespace stockade::oci {

// The hook's stdin, stdout and stderr, and the CLOEXEC pipe that carries
// execve's errno back.
struct HookChildFds {
    int in, out, err, report;
};

// Resets the signal mask and dispositions (create holds init's signals
// blocked), enters `namespaces` (fd, CLONE_NEW*), places the fds on 0-2
// and execs; on failure writes the errno to `report` and exits 127.
[[noreturn]] void execHookInChild(const char* path, char* const* argv, char* const* envp,
                                  HookChildFds fds, const std::pair<int, int>* namespaces,
                                  size_t namespace_count);

}  // namespace stockade::oci
