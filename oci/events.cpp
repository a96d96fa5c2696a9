#include "oci/events.h"

#include <fcntl.h>
#include <time.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/small_file.h"
#include "oci/container.h"
#include "oci/state.h"

namespace stockade::oci {

namespace {

using nlohmann::json;

// The first word of a cgroup file as a number; "max" as `max_as`.
std::optional<uint64_t> numberAt(const std::string& dir, const char* name,
                                 std::optional<uint64_t> max_as = std::nullopt) {
    const std::string path = dir + "/" + name;
    auto file = readSmallFile(AT_FDCWD, path.c_str(), path, 64 * 1024);
    if (!file) return std::nullopt;
    std::istringstream in(file->content);
    std::string word;
    if (!(in >> word)) return std::nullopt;
    if (word == "max") return max_as;
    try {
        size_t used = 0;
        const uint64_t value = std::stoull(word, &used);
        if (used == word.size()) return value;
    } catch (const std::exception&) {
    }
    return std::nullopt;
}

// `key N` of a flat keyed file (memory.events, cpu.stat, memory.oom_control).
std::optional<uint64_t> keyedAt(const std::string& dir, const char* name, const std::string& key) {
    const std::string path = dir + "/" + name;
    auto file = readSmallFile(AT_FDCWD, path.c_str(), path, 64 * 1024);
    if (!file) return std::nullopt;
    std::istringstream in(file->content);
    std::string k;
    uint64_t value = 0;
    while (in >> k >> value)
        if (k == key) return value;
    return std::nullopt;
}

template <class T>
void take(std::optional<T>& into, std::optional<T> value) {
    if (!into && value) into = value;
}

}  // namespace

CgroupStats readCgroupStats(const std::vector<std::string>& dirs) {
    CgroupStats s;
    for (const std::string& dir : dirs) {
        // v1's memory hierarchy
        take(s.memory_usage, numberAt(dir, "memory.usage_in_bytes"));
        take(s.memory_max_usage, numberAt(dir, "memory.max_usage_in_bytes"));
        take(s.memory_limit, numberAt(dir, "memory.limit_in_bytes"));
        take(s.memory_failcnt, numberAt(dir, "memory.failcnt"));
        take(s.oom_kills, keyedAt(dir, "memory.oom_control", "oom_kill"));
        // v2's
        take(s.memory_usage, numberAt(dir, "memory.current"));
        take(s.memory_max_usage, numberAt(dir, "memory.peak"));
        take(s.memory_limit, numberAt(dir, "memory.max", UINT64_MAX));
        take(s.memory_failcnt, keyedAt(dir, "memory.events", "max"));
        take(s.oom_kills, keyedAt(dir, "memory.events", "oom_kill"));
        take(s.pids_current, numberAt(dir, "pids.current"));
        take(s.pids_limit, numberAt(dir, "pids.max", 0));
        take(s.cpu_total_ns, numberAt(dir, "cpuacct.usage"));
        if (auto usec = keyedAt(dir, "cpu.stat", "usage_usec"))
            take(s.cpu_total_ns, {*usec * 1000});
    }
    return s;
}

std::string statsEvent(const std::string& id, const CgroupStats& s) {
    json data = json::object();
    if (s.cpu_total_ns) data["cpu"]["usage"]["total"] = *s.cpu_total_ns;
    json usage = json::object();
    if (s.memory_usage) usage["usage"] = *s.memory_usage;
    if (s.memory_max_usage) usage["max"] = *s.memory_max_usage;
    if (s.memory_limit) usage["limit"] = *s.memory_limit;
    if (s.memory_failcnt) usage["failcnt"] = *s.memory_failcnt;
    if (!usage.empty()) data["memory"]["usage"] = usage;
    if (s.pids_current) data["pids"]["current"] = *s.pids_current;
    if (s.pids_limit) data["pids"]["limit"] = *s.pids_limit;
    return json{{"type", "stats"}, {"id", id}, {"data", data}}.dump();
}

std::string oomEvent(const std::string& id) {
    return json{{"type", "oom"}, {"id", id}}.dump();
}

Result<int> intervalMs(const std::string& text) {
    size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
    const std::string unit = text.substr(digits);
    const int scale = unit == "ms" ? 1 : unit == "s" ? 1000 : unit == "m" ? 60000 : 0;
    if (digits == 0 || digits > 6 || scale == 0)
        return Error::message("--interval \"" + text +
                              "\": expected a duration such as 5s or "
                              "500ms");
    const long ms = std::stol(text.substr(0, digits)) * scale;
    if (ms <= 0 || ms > 24L * 3600 * 1000)
        return Error::message("--interval \"" + text + "\": between 1ms and 24h");
    return int(ms);
}

Result<int> printEvents(const std::string& root_dir, const std::string& id, bool once,
                        int interval_ms) {
    std::optional<uint64_t> ooms;
    // The container watched: its init, told apart from one a container of
    // the same id made again between two samples has.
    std::optional<std::pair<pid_t, uint64_t>> watched;
    for (bool first = true;; first = false) {
        CgroupStats stats;
        {
            auto c = openExisting(root_dir, id);
            if (!c) {
                if (first) return c.error();
                return 0;  // deleted since: its events are over
            }
            if (statusOf(c->dir.get(), c->record) == Status3::Stopped) {
                if (first) return Error::message("container with id " + id + " is not running");
                return 0;
            }
            const std::pair<pid_t, uint64_t> init{c->record.pid, c->record.start_time};
            if (watched && *watched != init) return 0;  // deleted and made again since
            watched = init;
            if (c->record.cgroups.empty())
                return Error::message("events: container " + id +
                                      " has no cgroup of its own (rootless): nothing to report");
            stats = readCgroupStats(c->record.cgroups);
        }
        if (!once && ooms && stats.oom_kills && *stats.oom_kills > *ooms)
            std::printf("%s\n", oomEvent(id).c_str());
        ooms = stats.oom_kills;
        std::printf("%s\n", statsEvent(id, stats).c_str());
        std::fflush(stdout);
        if (once) return 0;
        timespec pause{interval_ms / 1000, (interval_ms % 1000) * 1000000L};
        while (nanosleep(&pause, &pause) < 0) {
        }
    }
}

}  // namespace stockade::oci
