// Passing fds over a Unix socket (SCM_RIGHTS), as stockade does it between
// the supervisor, init and the command: one message, a few bytes, at most a
// few fds. Async-signal-safe and allocation-free, so the child side may use
// them between clone and exec.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace stockade {

inline constexpr int kMaxPassedFds = 4;

// Sends `len` bytes and `count` fds (0 to kMaxPassedFds) as one message,
// retrying EINTR, without SIGPIPE. Returns 0 or an errno.
int sendWithFds(int socket_fd, const void* data, size_t len, const int* fds, int count) noexcept;

// Receives one message: up to `len` bytes into `data`, and into `fds` (room
// for kMaxPassedFds) every fd it carried, close-on-exec, their number in
// `*count`; the caller owns and closes them. `flags` adds to recvmsg's
// (MSG_DONTWAIT). `*truncated` says the bytes or the fds did not all fit.
// Returns the byte count (0 at EOF) or -errno; EINTR is retried.
ssize_t receiveWithFds(int socket_fd, void* data, size_t len, int* fds, int* count, int flags,
                       bool* truncated) noexcept;

}  // namespace stockade
