// What `stockade bench` measured, as plain data, and its two renderings: a
// table for people and stockade.bench/v1 JSON for machines. JSON stays in
// bench_report.cpp.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

namespace stockade {

struct LatencySummary {
    double median_ms = 0;
    double p95_ms = 0;
    double p99_ms = 0;
    size_t samples = 0;
};

// Nearest-rank percentiles of `samples_ms` (which need not be sorted).
LatencySummary summarize(std::vector<double> samples_ms);

struct BenchReport {
    struct Machine {
        std::string kernel;  // uname -r
        unsigned cpus = 0;   // CPUs this process may run on
        uid_t uid = 0;
        bool root = false;
        double load_before[3] = {0, 0, 0};
        double load_after[3] = {0, 0, 0};
    };
    struct Level {
        std::string name;   // "user_ns"
        std::string label;  // "+ user namespace"
        LatencySummary latency;
        double overhead_ms = 0;  // median over the bare level's median
        std::string note;        // what held the layer: "cgroup1", "rlimit", "abi-7"
    };
    struct Comparison {
        bool requested = false;
        bool available = false;
        std::string unavailable_reason;  // when !available
        std::string bwrap;               // the binary used
        std::vector<std::string> bwrap_args;
        std::vector<std::string> stockade_args;
        std::string worktree_note;  // how the stockade side got its worktree
        LatencySummary stockade;
        LatencySummary bubblewrap;
        double ratio = 0;  // stockade median / bwrap median
    };
    struct Throughput {
        size_t sequential_runs = 0;
        double sequential_per_s = 0;
        unsigned concurrency = 0;
        size_t concurrent_runs = 0;
        double concurrent_per_s = 0;
    };

    int runs = 0;
    int warmup = 0;
    Machine machine;
    std::vector<Level> levels;
    Comparison comparison;
    Throughput throughput;
};

// The target of SPEC §9: the full profile's median at most this much of
// bubblewrap's.
inline constexpr double kBwrapTargetRatio = 0.75;

std::string benchJson(const BenchReport& report);
std::string benchTable(const BenchReport& report);

}  // namespace stockade
