// Which signals an OCI container's init passes on to its command.
//
// runc's command is PID 1 of the container's pid namespace; stockade's is
// init's child, with init as PID 1. The kernel never runs a default action
// for a signal sent to a namespace's PID 1 (only SIGKILL and SIGSTOP from
// an ancestor namespace get through: kernel/signal.c, sig_task_ignored and
// SIGNAL_UNKILLABLE), so under runc `podman stop` of a command with no
// SIGTERM handler waits for its timeout and ends it with SIGKILL (137),
// and a signal the command catches reaches its handler. Forwarding every
// signal would instead end that command at once by SIGTERM (143). So init
// passes a signal on only when the command catches it (SigCgt in
// /proc/PID/status), and SIGCONT always (it resumes a stopped process
// whatever the disposition). Where the command would not be PID 1 under
// runc either (a pid namespace joined by path, the lower tier), every
// signal goes on. Async-signal-safe: fixed buffers, raw system calls.
#pragma once

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

namespace stockade {

// The signals an OCI container's init takes with sigwaitinfo: every one it
// may block but those the kernel raises for a fault of init's own
// (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS), which a blocked mask
// would turn into a forced death. Blocked by `create` before the clone, so
// none reaches init unblocked (a signal with no handler would end an init
// that is not PID 1, and one that is would drop it).
sigset_t containerInitSignals() noexcept;

// The caught-signals mask from a /proc/PID/status text: the hex field of
// its "SigCgt:" line, bit N-1 for signal N. False when the line is missing
// or malformed. Exposed for the unit test.
bool parseCaughtSignals(const char* text, size_t length, uint64_t* mask) noexcept;

// Whether `sig` sent to the command as a namespace's PID 1 would reach it:
// it catches `sig`, or `sig` is SIGCONT. The command's status file (by its
// pid in init's namespace, in the container's /proc) is opened at the
// first call and kept in *status_fd (-1 until then), so a /proc the
// command mounts over later changes nothing. When it cannot be read (no
// /proc in the container, hidepid, not procfs there), true: the signal
// goes on, as init passed every one on before.
bool commandTakesSignalInChild(pid_t command, int sig, int* status_fd) noexcept;

}  // namespace stockade
