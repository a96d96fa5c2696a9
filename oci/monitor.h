// The detached monitor of an OCI container: the process that holds
// create's end of the sync socket after `create` has exited, so that the
// Finished message stockade's init sends when the command ends (its wait
// status, the stragglers it killed) reaches the container's record.
//
// What it must be (docs/oci.md, "The command's end and the stragglers"):
// - never the container's parent: forked twice by `create`, with setsid
//   between, it is reparented to the caller's subreaper beside init;
// - holding none of create's fds: stdio is /dev/null, and it keeps only
//   the sync socket, its control socket with `create` (until the commit)
//   and the container's directory (an open file description of its own,
//   so create's flock is not held with it);
// - holding the sync socket before the commit only while `create` lives:
//   it sends "committed" itself when `create` says the record is written,
//   and ends at once when `create` goes away first, so a create killed at
//   any point leaves no process.
// It ends when the socket closes (init and everything of the container are
// gone); `delete` ends it sooner, by its recorded pid and start time.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "oci/state.h"
#include "runtime/plan/sandbox_seccomp.h"

namespace stockade::oci {

// The Finished message read into the record's end, validated: a wait
// status that is an exit or a death by a signal (1..64), nothing else.
// Exposed for the unit test.
bool endFromWaitStatus(int32_t wait_status, Record::End& end);

// The collector's counts (one per syscall number, at most 1025 entries)
// into the record: the kMaxDenialNames most refused names (ties by name),
// the rest summed in `others`, and the total. Exposed for the unit test.
void denialsIntoRecord(std::vector<std::pair<std::string, uint64_t>> counts, Record::Denials& out);

class Monitor {
  public:
    // Forks the monitor (twice, setsid between) holding `sync_fd` and a
    // fresh open file description of the container's directory `dir_fd`.
    // It is not committed yet: it waits for commit() and ends if this
    // object (create) goes away first.
    // With `listener_socket_fd` (else -1) it also takes the seccomp
    // listener the command hands over before its execve, answers each
    // refused call from `source` (null: stockade's default policy) within
    // the answer budget, and keeps the counts by name in the record.
    static Result<Monitor> start(int dir_fd, int sync_fd, int listener_socket_fd,
                                 FilterSource source, const std::string& id);
    Monitor(Monitor&&) = default;
    Monitor& operator=(Monitor&&) = default;
    ~Monitor();

    pid_t pid() const { return pid_; }
    // Its start time (/proc/PID/stat), read while its pidfd says it lives:
    // 0 when it has ended.
    uint64_t startTime() const;
    // Tells the monitor the record and pid file are written: it sends
    // "committed" on the sync socket (the parked command may then wait for
    // `start`) and says it has. On failure the monitor is ended.
    Status commit();

  private:
    Monitor() = default;
    void end();
    pid_t pid_ = 0;
    UniqueFd pidfd_;
    UniqueFd control_;
    bool committed_ = false;
};

// Ends the recorded monitor, if it is still the recorded process, and waits
// until it has: for delete, which then removes the directory it holds.
void stopMonitor(const Record& record);

}  // namespace stockade::oci
