// The OCI hooks that run inside the container's namespaces (runtime-spec
// config.md, "createContainer" and "startContainer"), run by the child side
// itself, as runc's init runs them: createContainer by init once the root
// is built and before pivot_root, so that the hook's path resolves in the
// host's tree; startContainer by the command once `start` released it and
// its filter is in place, right before its execve, so that the path
// resolves in the container's root and the hook is held by everything the
// command is. Async-signal-safe, as the rest of the child side.
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "runtime/child/child_plan.h"

namespace stockade {

// Runs `list`'s hooks in order, each with the state JSON on its stdin (the
// pid slot filled with `state_pid`), its stdout and stderr captured (the
// first bytes kept for a message), and bounded by its timeout; stops at the
// first that fails. Returns 0, or an errno with `note` (NUL-terminated,
// printable ASCII, cut to `note_size`) naming the hook and how it failed:
// "error running createContainer hook #0 (/usr/bin/x): exit status 3,
// stdout: ..., stderr: ..." (ECANCELED, or ETIMEDOUT for "hook ran past
// specified timeout of 1.0s (killed)"); "... (/x): exec failed" with
// execve's errno; a call of the runner's own that failed with its errno.
// With `watch_fd` (a socket; -1: none), a hang-up of its peer kills the
// running hook as a timeout does and returns kHooksWatchHungUp, no note.
inline constexpr int kHooksWatchHungUp = -1;
int runHooksInChild(ChildHookList& list, pid_t state_pid, char* note, size_t note_size,
                    int watch_fd) noexcept;

}  // namespace stockade
