// `events ID`: the container's cgroup statistics as runc's `events`
// prints them, one JSON object a line: `--stats` once, otherwise every
// interval (and an "oom" object each time the kernel's OOM kill count
// grows) until the container stops.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"

namespace stockade::oci {

// What the container's cgroup directories (Record::cgroups, v1 hierarchies
// or one v2 directory) say; a value no directory holds is absent.
struct CgroupStats {
    std::optional<uint64_t> memory_usage, memory_max_usage, memory_limit, memory_failcnt;
    std::optional<uint64_t> pids_current, pids_limit;  // limit 0: none ("max")
    std::optional<uint64_t> cpu_total_ns;
    std::optional<uint64_t> oom_kills;
};
CgroupStats readCgroupStats(const std::vector<std::string>& dirs);

// runc's shapes: {"type":"stats","id":ID,"data":{"cpu":{"usage":{"total"}},
// "memory":{"usage":{"usage","max","limit","failcnt"}},"pids":{"current",
// "limit"}}} (a part none of the directories holds is left out), and
// {"type":"oom","id":ID}.
std::string statsEvent(const std::string& id, const CgroupStats& stats);
std::string oomEvent(const std::string& id);

// A Go duration as runc's --interval takes it: "5s", "500ms", "1m".
Result<int> intervalMs(const std::string& text);

// Prints the events of the container `id` under `root_dir` to stdout: once
// with `once`, else every `interval_ms` until it stops (0 then). A
// container without cgroups (rootless) is an error that says so. The
// container's lock is held only while each sample is read, so that
// `delete` is never held up.
Result<int> printEvents(const std::string& root_dir, const std::string& id, bool once,
                        int interval_ms);

}  // namespace stockade::oci
