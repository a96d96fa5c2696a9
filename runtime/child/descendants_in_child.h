// The lower tier's teardown (issue 18): without a PID namespace there is no
// kill(-1) that reaches only the sandbox, and no namespace whose end takes
// every process with it. Instead the process that started the command is a
// child subreaper (prctl(2) PR_SET_CHILD_SUBREAPER): every descendant that
// loses its parent (a double-forked daemon, a setsid'd worker) becomes its
// child, so its children, listed in /proc/PID/task/TID/children, are the
// whole of what is left once it kills them, again and again until none is.
// Async-signal-safe: fixed buffers, raw system calls, no allocation.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace stockade {

// SIGKILLs and reaps every child of this process (a subreaper) but `spare`
// (-1: none; a child left to its own waitid), repeating until it has no
// child left but `spare`. Returns how many it killed that had not already
// exited; *command_status gets `command`'s wait status if it is reaped here.
uint32_t killAllChildrenInChild(pid_t spare, pid_t command, int* command_status) noexcept;

}  // namespace stockade
