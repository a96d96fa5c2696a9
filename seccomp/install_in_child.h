// The child's half of seccomp: hand a program compiled before the clone
// (filter.h) to the kernel. Runs after clone, so it is async-signal-safe: one
// system call, no allocation, no libseccomp, no exceptions, no errno left
// behind that anyone reads.
//
// Call it after no_new_privs is set (without it the kernel refuses an
// unprivileged filter with EACCES) and as the last step before execve: every
// call made after it must pass the filter.
#pragma once

#include <linux/filter.h>

namespace stockade::seccomp {

// Returns 0, or the errno the kernel gave.
int installFilterInChild(const sock_fprog& prog) noexcept;

// As installFilterInChild, and asks for a user-notification listener
// (SECCOMP_FILTER_FLAG_NEW_LISTENER) for the filter's SCMP_ACT_NOTIFY
// answers. On success *listener_fd holds the new fd, which the kernel opens
// close-on-exec; the child must pass it to the supervisor before execve.
// Kernels older than 5.0 answer EINVAL; there is no prctl fallback.
int installFilterWithListenerInChild(const sock_fprog& prog, int* listener_fd) noexcept;

}  // namespace stockade::seccomp
