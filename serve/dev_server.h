// A dev server's supervisor side (SPEC §7), plugged into runSandbox as its
// ServiceHooks: the readiness check, the bounded log, and the published
// port's forwarder, all on one epoll set the supervisor's loop polls.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "runtime/net/direct_ingress.h"
#include "runtime/net/forwarder.h"
#include "runtime/net/veth_backend.h"
#include "runtime/supervisor/service_hooks.h"
#include "serve/ready_pattern.h"

namespace stockade {

// The server's output in NAME.log, at most `limit` bytes; when full it
// becomes NAME.log.1 (replacing the one before) and a new NAME.log starts.
class BoundedLog {
  public:
    // `name` beneath the directory `dir_fd` (the state directory, held: the
    // log and its rotation never go through a path), `shown` in messages.
    static Result<BoundedLog> create(int dir_fd, std::string name, const std::string& shown,
                                     uint64_t limit);
    void write(const char* data, size_t size);

  private:
    BoundedLog(UniqueFd dir, std::string name, uint64_t limit, UniqueFd fd)
        : dir_(std::move(dir)), name_(std::move(name)), limit_(limit), fd_(std::move(fd)) {}
    UniqueFd dir_;
    std::string name_;
    uint64_t limit_;
    UniqueFd fd_;
    uint64_t size_ = 0;
};

// How the published port reaches the server (docs/dev-servers.md).
enum class NetBackend {
    Userspace,  // into the sandbox's loopback through sockets its init makes
    Veth,       // over a veth pair to the sandbox's address, DNAT to its loopback
    Direct,     // the server's listener is the host's own (runtime/net/direct_ingress.h)
};

// The name of a backend, as `serve --net-backend` takes it and the ready
// event and `ps --json` say it.
const char* netBackendName(NetBackend backend);

struct DevServerOptions {
    uint16_t port = 0;
    NetBackend backend = NetBackend::Userspace;
    std::optional<std::string> ready_pattern;
    uint64_t ready_timeout_ms = 60000;
    bool echo = false;  // the output also goes to stderr (foreground serve)
};

class DevServer : public ServiceHooks {
  public:
    // Listeners are bound already (errors come before anything starts); they
    // accept only once the server is ready.
    static Result<std::unique_ptr<DevServer>> create(const DevServerOptions& options,
                                                     std::vector<UniqueFd> listeners,
                                                     BoundedLog log);

    ~DevServer() override;

    std::function<void(pid_t sandbox_pid)> on_started;
    std::function<void()> on_ready;  // once, when ready: the listeners accept from then on

    Status beforeStart(pid_t sandbox_pid) override;
    Status started(pid_t sandbox_pid, InsideSockets& sockets) override;
    void output(int stream, const char* data, size_t size) override;
    // Foreground: both streams to stockade's stderr (stdout carries the
    // ready line), echoed by the supervisor without waiting.
    int echoFd(int) const override { return options_.echo ? 2 : -1; }
    const seccomp::CallServer* callServer() const override {
        return ingress_ ? &call_server_ : nullptr;
    }
    int pollFd() const override { return epoll_.get(); }
    std::optional<Ending> onReadable() override;
    bool ready() const { return ready_; }
    // Whether a connection to the port inside succeeded (so a server not
    // ready was waiting on --ready-pattern alone).
    bool portAnswered() const { return probe_ok_; }
    // The way the published port reaches the server, once ready: for the
    // direct backend, "userspace" when the server's listener could not be
    // handed over (its listen ran in the sandbox; the forwarder serves).
    NetBackend backendInUse() const { return in_use_; }
    // Why the direct backend asked for is not the one in use once ready, or
    // empty (it is, or another was asked for).
    std::string fallbackReason() const;
    // The host loopbacks ("127.0.0.1", "::1") the forwarder serves once
    // ready: all of them but for the direct backend, where a loopback whose
    // listener the server holds is served by nothing but the server.
    const std::vector<std::string>& forwardedLoopbacks() const { return forwarded_loopbacks_; }
    // The ports the server listened on inside other than the published one,
    // as far as the supervisor saw its listens (the direct backend only).
    std::vector<uint16_t> otherPorts() const {
        return ingress_ ? ingress_->otherPorts() : std::vector<uint16_t>{};
    }

  private:
    class ProbeTimer;
    DevServer(const DevServerOptions& options, std::vector<UniqueFd> listeners, BoundedLog log,
              UniqueFd epoll);
    void tick();
    bool probe(const ForwardTarget& target);
    std::vector<UniqueFd> splitHanded(std::vector<UniqueFd> listeners);

    DevServerOptions options_;
    std::vector<UniqueFd> listeners_;
    BoundedLog log_;
    UniqueFd epoll_;
    UniqueFd timer_;
    std::unique_ptr<ProbeTimer> timer_handler_;
    std::optional<ReadyPattern> pattern_;
    std::unique_ptr<VethNetwork> veth_;
    std::vector<ForwardTarget> targets_;
    std::unique_ptr<Forwarder> forwarder_;
    std::optional<DirectIngress> ingress_;
    seccomp::CallServer call_server_;
    std::vector<UniqueFd> handed_;  // host listeners the server holds now
    NetBackend in_use_ = NetBackend::Userspace;
    std::chrono::steady_clock::time_point start_;
    std::vector<std::string> forwarded_loopbacks_;
    uint64_t released_ = 0;  // handed listeners the server closed before ready
    bool held_before_ = false;
    bool probe_ok_ = false;
    bool ready_ = false;
    std::optional<Ending> ending_;
};

}  // namespace stockade
