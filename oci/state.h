// The runtime's state under --root: one directory per container id, holding
// state.json (written atomically, read O_NOFOLLOW and bounded) and, until
// `start`, exec.fifo. Every call is a new process, so this is all that links
// create, start, state, kill and delete.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "oci/hooks.h"

namespace stockade::oci {

inline constexpr const char* kStateFile = "state.json";
inline constexpr const char* kExecFifo = "exec.fifo";
// The bundle's config.json as create read it: what `exec` takes the
// container's filter and annotations from, never the bundle again (a
// bundle the container can write, bound into it, would hand exec a
// config without the filter).
inline constexpr const char* kConfigFile = "config.json";
// The container's cgroup directories, one a line, written by create as
// soon as it has made them, before anything runs in them: what `delete
// --force` kills and removes of a create killed before its record.
inline constexpr const char* kCgroupsFile = "cgroups";
// The work directory create made for an overlay image root's own overlay
// (oci/idmapped_root.h), its path, written before it is made: removed with
// the container (removeContainer), whatever happened in between.
inline constexpr const char* kOverlayWorkFile = "overlay-work";
inline constexpr size_t kMaxIdLength = 1024;

// /run/stockade-oci as root, $XDG_RUNTIME_DIR/stockade-oci otherwise.
Result<std::string> defaultRoot();

// Whether this process is root of the host: euid 0 in the initial user
// namespace (its uid_map the whole range). Under rootless podman the
// runtime runs as uid 0 of podman's own user namespace, which is not: it
// takes the rootless paths (state under $XDG_RUNTIME_DIR, no cgroups; the
// caller's own id for the container, or its namespace's ids where
// callerNamespaceWidth says so).
bool isHostRoot();

// Not host root, but uid 0 of a user namespace that maps more ids than its
// own, with CAP_SETUID and CAP_SETGID over it (rootless podman's, holding
// the caller's subordinate ids): how many ids from 0 it maps without a gap,
// which a container is then given one for one (ns::IdMapping::
// callers_ranges); 1 otherwise.
uint32_t callerNamespaceWidth();

// Refused: empty, longer than kMaxIdLength, ".", "..", or holding '/', NUL
// or a control character.
Status validateId(const std::string& id);

struct Record {
    std::string id;
    pid_t pid = 0;
    uint64_t start_time = 0;  // /proc/PID/stat field 22: tells a reused pid apart
    std::string bundle;
    std::string rootfs;
    std::string created;  // RFC 3339
    std::map<std::string, std::string> annotations;
    std::vector<std::string> cgroups;  // the container's cgroup directories (oci/cgroups.h)
    // The stockade profile the container got ("default"), or none: `exec`
    // gives its processes the same filter whatever its own flags say.
    std::string profile;
    // What create enforced, as it knew it ("pid": "new", "network":
    // "joined"...; "seccomp": "none", "spec", "default", "spec+default";
    // "capabilities": the bounding set, hex; "limits": "cgroup v1"...).
    std::map<std::string, std::string> enforced;
    // The signals `kill` sent, in order (the last kMaxKills kept).
    struct Kill {
        int signal = 0;
        bool all = false;
        std::string time;  // RFC 3339
    };
    std::vector<Kill> kills;
    // The detached monitor (oci/monitor.h), so that delete can end it.
    pid_t monitor_pid = 0;
    uint64_t monitor_start_time = 0;
    // How the container ended, as its monitor heard it from init: the
    // command's wait status and the stragglers init killed after it, or,
    // when init itself was killed, no report (the kills above say why).
    struct End {
        bool reported = false;
        int exit_status = -1;  // when the command exited
        int signal = 0;        // when a signal killed it
        bool core_dumped = false;
        uint32_t stragglers = 0;
        std::string failure;  // a setup step that failed after start
        std::string time;     // RFC 3339, when the monitor heard it
    };
    std::optional<End> end;
    // The refused system calls by name, counted by the monitor, which holds
    // the filter's seccomp listener and answers each with the policy's
    // errno (docs/oci.md, "Denials by name"). Bounded: at most
    // kMaxDenialNames names, the most refused first; the rest counted in
    // `others`, so a container flooding refusals cannot grow the record.
    struct Denials {
        bool counted = false;     // create gave the monitor the listener's socket
        std::string not_counted;  // why not, for a filter whose refusals are not counted
        bool listening = false;   // the listener reached the monitor
        std::vector<std::pair<std::string, uint64_t>> by_name;
        uint64_t others = 0;  // refusals of the names past kMaxDenialNames
        uint64_t total = 0;
        bool final = false;  // written once init and the command were gone
    };
    Denials denials;
    // poststart and poststop as create read them (the others have run).
    Hooks hooks;
};
inline constexpr size_t kMaxKills = 16;
inline constexpr size_t kMaxDenialNames = 64;

enum class Status3 { Created, Running, Paused, Stopped };
const char* statusName(Status3 status);

// The --root directory, made 0700 when `create` (and its parents as needed).
Result<UniqueFd> openRoot(const std::string& root, bool create);
// The container's directory beneath the root; ENOENT when there is none.
Result<UniqueFd> openContainer(int root_fd, const std::string& id);
Status writeRecord(int dir_fd, const Record& record);
Result<Record> readRecord(int dir_fd, const std::string& id);
// What the record's process is now: gone (or another process with its pid)
// is stopped; alive in a frozen cgroup is paused; alive with exec.fifo
// still there is created.
Status3 statusOf(int dir_fd, const Record& record);
// The process's start time, 0 when it is gone or a zombie.
uint64_t processStartTime(pid_t pid);
// kCgroupsFile's directories; none when it is missing, unreadable, or
// names anything but directories of the cgroup tree (as the record's).
std::vector<std::string> readPendingCgroups(int dir_fd);
// Removes the container's directory: only the names this runtime writes.
Status removeContainer(int root_fd, const std::string& id);
// The ids under the root, sorted.
std::vector<std::string> listContainers(int root_fd);

// A --pid-file's digits: written to a name of its own beside `name` in
// `dir` (random, made exclusively, never one that was there: the
// directory's owner could have put a FIFO, whose open blocks, or a hard
// link at a fixed name), then renamed over `name`, so that a reader sees
// the old file or the whole new one. 0, or the errno of the step that
// failed (the file it made removed).
int writePidFileAt(int dir, const std::string& name, const std::string& digits);

// The record as the runtime-spec's state JSON.
std::string stateJson(const Record& record, Status3 status);
std::string recordJson(const Record& record);

}  // namespace stockade::oci
