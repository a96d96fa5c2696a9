// Where running dev servers are recorded (SPEC §7): one directory per user,
// $XDG_RUNTIME_DIR/stockade, else /run/user/UID/stockade when that runtime
// directory is the user's, else /tmp/stockade-UID (/run/stockade for root),
// mode 0700, so one user's servers are invisible to another. A shell of the
// same user whose environment differs (no XDG_RUNTIME_DIR under su or cron)
// finds its servers in the others (StateDir::others). For each NAME:
//   NAME.lock  flock'ed by the supervisor for its whole life: the proof that
//              it runs (a record whose lock is free is stale);
//   NAME.json  the record (stockade.service/v1), written atomically;
//   NAME.log   the server's output, bounded (NAME.log.1 holds the previous
//              part); kept after the server stops, for `stockade logs`.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "runtime/record/state_dir.h"

namespace stockade {

struct ServiceRecord {
    std::string name;
    uint16_t port = 0;
    pid_t pid = 0;           // the supervisor: what `stop` signals
    pid_t sandbox_pid = 0;   // the sandbox's init
    int64_t started_ms = 0;  // Unix time
    bool ready = false;
    std::string profile;
    std::vector<std::string> command;
    // How the port reaches the server once ready (netBackendName); empty
    // until then, and in records of stockade before 0.3.
    std::string backend;
    // Why direct, asked for by name or by default, is not the backend in
    // use (the cause, from the check or the handover); empty when it is.
    std::string backend_fallback;
    // The host loopbacks the forwarder serves ("127.0.0.1", "::1"); under
    // direct, a loopback the server holds is not among them. Empty until
    // ready.
    std::vector<std::string> forwarded_loopbacks;
};

// A name must be usable as a file name: [A-Za-z0-9][A-Za-z0-9_.-]{0,63}.
Status validateServiceName(const std::string& name);

class StateDir {
  public:
    // The user's directory, created 0700 when missing; refused when it is
    // not a directory owned by the caller with no access for others.
    static Result<StateDir> open();
    // This user's other state directories that exist and are private:
    // where `stop`, `ps` and `logs` look when `primary` has no such server.
    static std::vector<StateDir> others(const StateDir& primary);
    // `primary` first, then others(primary).
    static std::vector<StateDir> all(const StateDir& primary);
    // Registers this directory where every shell of the user looks
    // (registerUserStateDir), so that others() of any environment finds it.
    Status remember() const;
    // For messages and records only: every operation below goes through the
    // directory's fd (runtime/record/state_dir.h).
    const std::string& path() const { return dir_.path; }
    std::string recordPath(const std::string& name) const { return dir_.at(name + ".json"); }
    std::string logPath(const std::string& name) const { return dir_.at(name + ".log"); }
    std::string lockPath(const std::string& name) const { return dir_.at(name + ".lock"); }
    // The held directory, whose fd every file of it is opened beneath.
    int fd() const { return dir_.get(); }
    // `file` (a name, no slash) in the directory: opened with `flags` and
    // O_NOFOLLOW | O_CLOEXEC, stat'ed or removed without following a link.
    UniqueFd openFile(const std::string& file, int flags, mode_t mode = 0600) const;
    bool statFile(const std::string& file, struct stat& st) const;
    void removeFile(const std::string& file) const;

    // Takes NAME's lock; an error when a live supervisor holds it.
    Result<UniqueFd> lock(const std::string& name) const;
    // True when a supervisor holds NAME's lock. A free lock and its record
    // are stale and removed.
    bool live(const std::string& name) const;
    // Marks the calling process as the holder of NAME's lock (`lock_fd`, from
    // lock()): a POSIX record lock on its first byte, which fork does not
    // pass on and F_GETLK reports with its owner's pid. The supervisor takes
    // it before it writes its record; stop signals only the pid it names
    // (a record is what a sandbox that could write here chose). Any close of
    // another fd of the lock file in this process drops the mark.
    static Status markHolder(int lock_fd);
    // Removes NAME's record and lock; the caller holds the lock.
    void release(const std::string& name, UniqueFd lock) const;

    Status write(const ServiceRecord& record) const;
    std::optional<ServiceRecord> read(const std::string& name) const;
    // The records of live servers, by name; stale ones are removed.
    std::vector<ServiceRecord> list() const;
    std::optional<ServiceRecord> findByPort(uint16_t port) const;

  private:
    explicit StateDir(HeldStateDir dir) : dir_(std::move(dir)) {}
    HeldStateDir dir_;
};

// Stops NAME: SIGTERM to its supervisor (which passes it to the command and
// kills the sandbox after its grace period), SIGKILL if it is still there
// after `wait_ms`; returns once the supervisor is gone and its port free.
// Returns false when nothing was running (not an error: stop is idempotent).
Result<bool> stopService(const StateDir& dir, const std::string& name, uint64_t wait_ms);

// The pid of a `stockade serve` supervisor of this user's serving NAME that
// no state directory this process can see records (its shell's /tmp or
// runtime directory is not this one's), found by its command line in /proc;
// nullopt when there is none. For `stop` to say so rather than "not running".
std::optional<pid_t> unrecordedSupervisor(const std::string& name);

}  // namespace stockade
