// The container operations the commands are made of, on the state under
// --root (oci/state.h): create up to the park, start, and what kill, delete
// and ps need to find and signal a container's processes without ever
// taking a reused pid for them.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "oci/state.h"

namespace stockade::oci {

// Now, as RFC 3339 with nanoseconds (records, log lines).
std::string rfc3339Now();

// runc's words for a command that cannot be executed (podman maps them to
// 127 and 126): a name with a '/' is stat'ed, a bare name searched on PATH.
std::string execFailureText(const std::string& name, int err);

// runc's words for an id with no container: clients match "does not exist".
std::string notExist(const std::string& id);

struct Created {
    pid_t pid = 0;
    UniqueFd pidfd;
    bool terminal = false;  // process.terminal: the pty master went to the console
};

// Where a terminal's pty master goes: the caller's --console-socket, or a
// connected socket the caller holds the other end of (`run` in the
// foreground, which relays the terminal itself). Neither, with a terminal,
// is runc's refusal.
struct ConsoleTarget {
    std::string socket_path;
    int held = -1;  // borrowed: createContainer does not close it
};

// Everything `create` does, for create and run: the bundle read and judged,
// the container's directory under `root_dir` made, the sandbox launched and
// parked, the record and the pid file written. On any failure the process
// is killed and reaped and the directory removed: nothing is left. `note`
// gets what is worth an info line in the log. `systemd_cgroup`
// (--systemd-cgroup) reads linux.cgroupsPath in systemd's form (cgroupfsPath).
// `default_profile` is --default-profile as given (oci/profile.h).
Status createContainer(const std::string& root_dir, const std::string& id,
                       const std::string& bundle, const std::string& pid_file,
                       const ConsoleTarget& console, bool systemd_cgroup,
                       const std::string& default_profile,
                       const std::function<void(const std::string&)>& note, Created& out);

// A container's directory, locked (flock) for as long as this is held, and
// its record; "does not exist" when there is none.
struct Opened {
    UniqueFd root;
    UniqueFd dir;
    Record record;
};
Result<Opened> openExisting(const std::string& root_dir, const std::string& id);

// `delete --force` of a container with no readable record (a create killed
// before it wrote one): the processes in the cgroups create listed first
// (kCgroupsFile) killed, those cgroups removed, then its directory; only
// the directory while a create still holds it.
Status removeUnrecordedContainer(int root_fd, const std::string& id);

// Removes what the container left: its monitor (ended and waited for), its
// cgroups, then its directory. Its processes must be gone (killAndWait).
Status destroyContainer(const Opened& container);

// One byte into exec.fifo: the parked command goes on to seccomp and exec.
Status startContainer(const Opened& container);

// poststart, once start has released the command, and poststop, once
// delete has removed the container (oci/hooks.h): each failure goes to
// `warn` and changes nothing else (runtime-spec runtime.md). The
// container's lock is let go first, so that a hook may ask `state`.
void runPoststart(Opened container, const std::function<void(const std::string&)>& warn);
void runPoststop(Opened container, const std::function<void(const std::string&)>& warn);

// The recorded init by a pidfd, checked after opening to be the recorded
// process (its start time); none when it is gone.
UniqueFd pidfdOf(const Record& record);
// After a SIGKILL: thaws a paused container, so that its processes die.
void thawAfterKill(const Record& record);
// SIGKILL to init (the pid namespace dies with it), then waits until it
// has; in a joined pid namespace, then every process of its cgroup too.
void killAndWait(const Record& record);
// The parent pid and the pid in each pid namespace `pid` is in, outermost
// first (the PPid and NSpid lines of /proc/PID/status, which any user may
// read); zero and empty when unreadable.
struct PidNumbers {
    pid_t parent = 0;
    std::vector<pid_t> in_namespaces;
};
PidNumbers pidNumbersOf(pid_t pid);
// init's descendants, every process of the container but init.
std::vector<pid_t> processesIn(pid_t init);
// Whether the container joined a pid namespace by path (its record's
// enforced "pid"): its init is not PID 1 there (oci/pid_join.h).
bool pidNamespaceJoined(const Record& record);
// Whether the container's command is PID 1 of a pid namespace of its own,
// beneath init's (ChildPlan::command_pid_ns), which `exec` joins.
bool commandPidNamespaceNested(const Record& record);
// Every process of the container but init: init's descendants, or in a
// joined pid namespace, whatever is in its cgroup (orphans of a killed
// init are no descendant of it there).
std::vector<pid_t> containerProcesses(const Record& record);

// The caller's --console-socket, connected before anything is made (create
// and exec alike): a socket that refuses fails the command at once.
Result<UniqueFd> connectConsoleSocket(const std::string& path);

}  // namespace stockade::oci
