// `run` in the foreground with process.terminal: the container's pty
// master, which would go to a client's --console-socket, is relayed to
// run's own stdio instead, as `runc run` does for a person at a terminal.
#pragma once

#include <signal.h>
#include <sys/ioctl.h>
#include <sys/types.h>

#include <optional>

#include "base/error.h"
#include "base/unique_fd.h"

namespace stockade::oci {

// The one message the container's command sent on `console` (a socket the
// caller holds the other end of) before create returned: its one fd, the
// pty master, judged a character device. Never waits.
Result<UniqueFd> receivedPtyMaster(int console);

// Copies run's stdin to `master` and `master` to run's stdout until `init`
// has ended and the container's side of the pty is closed, then returns
// init's wait status. While it runs, a stdin that is a terminal is raw
// (restored before return) and its size is the pty's (again on SIGWINCH);
// every other signal of `forwarded` (blocked by the caller) goes on to init.
// Once init has ended, what the pty still holds is relayed until the pty
// closes, is quiet for kQuietAfterInitMs, kDrainAfterInitMs have passed or
// a signal of `forwarded` comes: another process holding the pty (a
// background job of an exec'd shell, a process of a joined pid namespace)
// never holds the relay, nor the caller's terminal raw.
Result<int> relayTerminal(int master, pid_t init, const sigset_t& forwarded);

// The size of the caller's own terminal (stdin's, else stdout's) given to
// the pty `master`; nothing without one. `run` gives it before `start`, as
// runc does, so the command never sees the config's size first (a test's
// `stty size` raced it under load and read the config's).
void giveTerminalSize(int master);
// That size itself, for a pty not yet made (`exec` makes it in the forked
// process, which sizes it before the command runs); nullopt without one.
std::optional<winsize> callerTerminalSize();

inline constexpr int kQuietAfterInitMs = 200;
inline constexpr int kDrainAfterInitMs = 1000;

}  // namespace stockade::oci
