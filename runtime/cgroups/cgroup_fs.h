// Reading and writing cgroupfs files, and parsing what the kernel writes in
// them and in /proc. Shared by the v1 and v2 code (cgroup_v1.h, cgroup_v2.h);
// pure parsing is exposed for tests.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"

namespace stockade {

// What a sandbox asks of its cgroups.
struct CgroupRequest {
    std::optional<uint64_t> memory_bytes;
    std::optional<uint64_t> pids;
};

// What the kernel counted for one sandbox, read from its own leaves.
struct CgroupEvents {
    bool oom_killed = false;      // from memory.events / memory.oom_control, not guessed
    bool pids_limit_hit = false;  // from pids.events
    uint64_t peak_memory = 0;     // memory.peak / memory.max_usage_in_bytes
};

// The whole file, or the open/read error.
Result<std::string> readCgroupFile(const std::string& path);
// The whole file, or "" on any error (for files whose absence means "nothing").
std::string readCgroupFileOr(const std::string& path);
// One write(2) of `value`, as cgroupfs wants (a value split over two writes
// is two values).
Status writeCgroupFile(const std::string& path, const std::string& value);
// rmdir that waits out EBUSY for up to `attempts` milliseconds: a cgroup
// whose last process just died is busy until the kernel has released it.
Status removeCgroupDir(const std::string& path, int attempts = 100);
// The entries of a directory (no "." or ".."), empty when it cannot be read.
std::vector<std::string> directoryEntries(const std::string& path);

// The cgroup2 mount point in /proc/self/mountinfo text, or "".
std::string findCgroup2Mount(const std::string& mountinfo);
// The path of `controller` ("" for the v2 line) in /proc/self/cgroup text.
std::optional<std::string> cgroupPathOf(const std::string& proc_cgroup,
                                        const std::string& controller);
// The value of `key` in a flat-keyed file ("oom_kill 3\n..."), or 0.
uint64_t keyedValue(const std::string& text, const std::string& key);
// A whole-file number ("786432\n"); nullopt for "max", "" or garbage.
std::optional<uint64_t> numberIn(const std::string& text);
// Whether `word` is one of the whitespace-separated words of `text`.
bool hasWord(const std::string& text, const std::string& word);
// The pids listed in a cgroup.procs text.
std::vector<pid_t> pidsIn(const std::string& procs);
// The stockade process that named a cgroup "<prefix><pid>" or
// "<prefix><pid>-<n>", or 0 when `name` is not such a name.
pid_t ownerOf(const std::string& name, const std::string& prefix = "");
// Whether the process `pid` still exists (EPERM counts as existing).
bool processExists(pid_t pid);

}  // namespace stockade
