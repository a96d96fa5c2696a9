// Which signals an OCI container's init passes on to its command.
//
// runc's command is PID 1 of the container's pid namespace; stockade's is
// init's child, with init as PID 1. The kernel runs no default action for
// a signal sent to a namespace's PID 1 (only SIGKILL and SIGSTOP from an
// ancestor namespace get through: kernel/signal.c, sig_task_ignored and
// SIGNAL_UNKILLABLE), but it queues any signal PID 1 blocks or waits for
// (sig_ignored: blocked or real_blocked). So under runc `podman stop` of a
// command with no SIGTERM handler waits for its timeout and ends it with
// SIGKILL (137), while tini (sigtimedwait), catatonit and systemd
// (signalfd) and any handler get their signal. init judges the same from
// the command's /proc: it passes a signal on when the command catches or
// blocks it (SigCgt, SigBlk of /proc/PID/status) or waits in sigtimedwait
// (its /proc/PID/wchan; during the wait the kernel unblocks the signals
// waited for, so SigBlk does not show them), and SIGCONT always (it
// resumes a stopped process whatever its disposition). Where it cannot
// tell (no /proc in the container, or wchan "0" while the command sleeps:
// it changed its uid or is not dumpable, so init may not read it), the
// signal goes on, as init passed every one on before; wchan also reads "0"
// while the command runs on a CPU, so a running command (its stat's state
// R) is looked at again for up to 50 ms until it sleeps:
// a stop that comes early is the lesser error than one that never comes.
// Where the command would not be PID 1 under runc either (a pid namespace
// joined by path, the lower tier), every signal goes on.
// Async-signal-safe: fixed buffers, raw system calls.
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

// A signal mask field of a /proc/PID/status text ("SigCgt:", "SigBlk:"):
// its hex value, bit N-1 for signal N. False when the line is missing or
// malformed. Exposed for the unit test.
bool parseSignalMask(const char* text, size_t length, const char* field, uint64_t* mask) noexcept;

// The command's /proc files init reads, opened once, when it starts to
// supervise (by the command's pid in init's namespace, in the container's
// /proc, no link followed, procfs or nothing): a /proc the command mounts
// over later does not change which files these are. -1: none.
struct CommandProcFiles {
    int status_fd = -1;
    int wchan_fd = -1;
    int stat_fd = -1;
};
CommandProcFiles openCommandProcFilesInChild(pid_t command) noexcept;

// Whether `sig` sent to the command as a namespace's PID 1 would reach it,
// as above; true where that cannot be told.
bool commandTakesSignalInChild(const CommandProcFiles& files, int sig) noexcept;

}  // namespace stockade
