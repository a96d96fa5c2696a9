// What a long-lived sandbox (`stockade serve`, SPEC §7) adds to the
// supervisor's loop in runSandbox. One-shot runs pass no hooks and are
// unchanged; with hooks, the command's output goes to them instead of the
// output limit, the echo goes where they say, and they may end the sandbox
// (not ready).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>

#include "base/error.h"
#include "base/unique_fd.h"
#include "seccomp/denials.h"

namespace stockade {

enum class Ending;

// Unconnected, non-blocking TCP sockets made by the sandbox's init, so they
// belong to the sandbox's network namespace (a socket keeps the namespace it
// was created in; connect(2) on it reaches the sandbox's own loopback). The
// supervisor cannot make them itself when rootless: entering the namespace
// would need CAP_SYS_ADMIN in the caller's own user namespace.
class InsideSockets {
  public:
    explicit InsideSockets(int channel) : channel_(channel) {}
    // family: AF_INET or AF_INET6. Waits at most a second for init.
    Result<UniqueFd> open(int family);

  private:
    int channel_;
    bool broken_ = false;
};

class ServiceHooks {
  public:
    virtual ~ServiceHooks() = default;
    // The namespaces exist, the id maps are written and init has its go, but
    // waits for "placed" before anything of the command runs. The veth backend connects the network
    // namespace here, so the command starts with its network as it will stay. An error ends the run
    // before anything runs (SetupFailed).
    virtual Status beforeStart(pid_t sandbox_pid) {
        (void)sandbox_pid;
        return okStatus();
    }
    // init is up and the command is starting; `sandbox_pid` is init's host pid.
    // An error (a setup call of the service's own failed) ends the run as
    // SetupFailed, named by the error: a weaker service is never served.
    virtual Status started(pid_t sandbox_pid, InsideSockets& sockets) = 0;
    // A chunk of the command's stdout (stream 1) or stderr (stream 2).
    virtual void output(int stream, const char* data, size_t size) = 0;
    // Where the supervisor echoes `stream` live (stockade's 1 or 2), or -1.
    // The supervisor writes it without ever waiting (runtime/supervisor/echo_sink.h):
    // a stalled terminal must not stall the loop that forwards the port.
    virtual int echoFd(int stream) const {
        (void)stream;
        return -1;
    }
    // Calls the seccomp filter sends to the supervisor that the hooks answer
    // themselves (a dev server's listen under the direct ingress), or null.
    virtual const seccomp::CallServer* callServer() const { return nullptr; }
    // An fd the loop polls for readability (the hooks' own epoll set).
    virtual int pollFd() const = 0;
    // Called when pollFd() is readable; an Ending ends the sandbox with it.
    virtual std::optional<Ending> onReadable() = 0;
};

}  // namespace stockade
