// The child's half of handing the seccomp listener to the supervisor
// (denials.h). Runs after the filter is installed and before execve, so it is
// async-signal-safe (a fixed-size message, no allocation, no exceptions) and
// makes only the calls checkDenialsReportable() requires the policy to allow:
// sendmsg(2) and close(2).
#pragma once

namespace stockade::seccomp {

// The fixed payload that travels with the fd, so the receiver can tell the
// message from anything else on the socket.
inline constexpr char kListenerMessage[] = "stockade-seccomp-listener";

// Sends `listener_fd` with SCM_RIGHTS over `socket_fd` (SOCK_SEQPACKET, one
// message), then closes it: the command must never hold its own listener,
// with which it could answer its own refused calls. The kernel opened the
// listener close-on-exec, so an exec would close it too; closing it here
// keeps it out of any fork before that. Returns 0 or the errno of sendmsg.
int sendListenerInChild(int socket_fd, int listener_fd) noexcept;

}  // namespace stockade::seccomp
