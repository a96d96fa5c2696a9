#include "runtime/bench/bench_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace stockade {

namespace {

using json = nlohmann::ordered_json;

double percentile(const std::vector<double>& sorted, double p) {
    size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(sorted.size()))) - 1;
    return sorted[std::min(i, sorted.size() - 1)];
}

// Milliseconds to the microsecond: finer digits would be noise.
double rounded(double ms) {
    return std::round(ms * 1000.0) / 1000.0;
}

json latencyJson(const LatencySummary& s) {
    return {{"median_ms", rounded(s.median_ms)},
            {"p95_ms", rounded(s.p95_ms)},
            {"p99_ms", rounded(s.p99_ms)},
            {"samples", s.samples}};
}

json loadJson(const double load[3]) {
    auto two = [](double v) { return std::round(v * 100.0) / 100.0; };
    return {two(load[0]), two(load[1]), two(load[2])};
}

std::string format(const char* fmt, double a, double b, double c, double d) {
    char buf[128];
    std::snprintf(buf, sizeof(buf), fmt, a, b, c, d);
    return buf;
}

std::string loadText(const double load[3]) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.2f %.2f %.2f", load[0], load[1], load[2]);
    return buf;
}

std::string joined(const std::vector<std::string>& words) {
    std::string out;
    for (const std::string& w : words) out += (out.empty() ? "" : " ") + w;
    return out;
}

}  // namespace

LatencySummary summarize(std::vector<double> samples_ms) {
    LatencySummary out;
    out.samples = samples_ms.size();
    if (samples_ms.empty()) return out;
    std::sort(samples_ms.begin(), samples_ms.end());
    out.median_ms = percentile(samples_ms, 0.5);
    out.p95_ms = percentile(samples_ms, 0.95);
    out.p99_ms = percentile(samples_ms, 0.99);
    return out;
}

std::string benchJson(const BenchReport& r) {
    json doc;
    doc["schema"] = "stockade.bench/v1";
    doc["command"] = {"/bin/true"};
    doc["runs"] = r.runs;
    doc["warmup"] = r.warmup;
    doc["interleaved"] = true;
    doc["machine"] = {{"kernel", r.machine.kernel},
                      {"cpus", r.machine.cpus},
                      {"uid", r.machine.uid},
                      {"mode", r.machine.root ? "root" : "rootless"},
                      {"load_before", loadJson(r.machine.load_before)},
                      {"load_after", loadJson(r.machine.load_after)}};
    json levels = json::array();
    for (const BenchReport::Level& level : r.levels) {
        json l = {{"name", level.name}, {"label", level.label}};
        l.update(latencyJson(level.latency));
        l["overhead_ms"] = rounded(level.overhead_ms);
        if (!level.note.empty()) l["mechanism"] = level.note;
        levels.push_back(std::move(l));
    }
    doc["levels"] = std::move(levels);

    const BenchReport::Comparison& c = r.comparison;
    if (!c.requested) {
        doc["comparison"] = nullptr;
    } else {
        json comp = {{"tool", "bwrap"}, {"available", c.available}};
        if (!c.available) {
            comp["reason"] = c.unavailable_reason;
        } else {
            comp["bwrap"] = c.bwrap;
            comp["bwrap_args"] = c.bwrap_args;
            comp["stockade_args"] = c.stockade_args;
            comp["worktree"] = c.worktree_note;
            comp["stockade"] = latencyJson(c.stockade);
            comp["bwrap_latency"] = latencyJson(c.bubblewrap);
            comp["ratio"] = std::round(c.ratio * 1000.0) / 1000.0;
            comp["target_ratio"] = kBwrapTargetRatio;
            comp["target_met"] = c.ratio <= kBwrapTargetRatio;
        }
        doc["comparison"] = std::move(comp);
    }
    const BenchReport::Throughput& t = r.throughput;
    doc["throughput"] = {{"profile", "full_profile"},
                         {"sequential_runs", t.sequential_runs},
                         {"sequential_per_s", std::round(t.sequential_per_s * 10.0) / 10.0},
                         {"concurrency", t.concurrency},
                         {"concurrent_runs", t.concurrent_runs},
                         {"concurrent_per_s", std::round(t.concurrent_per_s * 10.0) / 10.0}};
    return doc.dump(2) + "\n";
}

std::string benchTable(const BenchReport& r) {
    std::string out;
    char line[256];
    std::snprintf(line, sizeof(line),
                  "stockade bench: /bin/true, %d interleaved runs per level after %d warm-up "
                  "rounds\n",
                  r.runs, r.warmup);
    out += line;
    std::snprintf(line, sizeof(line),
                  "machine: Linux %s, %u CPU(s), %s (uid %u); load average %s before, %s "
                  "after\n\n",
                  r.machine.kernel.c_str(), r.machine.cpus, r.machine.root ? "root" : "rootless",
                  static_cast<unsigned>(r.machine.uid), loadText(r.machine.load_before).c_str(),
                  loadText(r.machine.load_after).c_str());
    out += line;
    std::snprintf(line, sizeof(line), "%-48s %9s %9s %9s %9s\n", "level (ms)", "median", "p95",
                  "p99", "overhead");
    out += line;
    for (const BenchReport::Level& level : r.levels) {
        std::string label = level.label;
        if (!level.note.empty()) label += " [" + level.note + "]";
        if (label.size() > 48) label = label.substr(0, 45) + "...";
        std::snprintf(line, sizeof(line), "%-48s", label.c_str());
        out += line;
        out += format(" %9.3f %9.3f %9.3f %+9.3f\n", level.latency.median_ms, level.latency.p95_ms,
                      level.latency.p99_ms, level.overhead_ms);
    }

    const BenchReport::Comparison& c = r.comparison;
    if (c.requested && !c.available) {
        out += "\nbubblewrap comparison: not run: " + c.unavailable_reason + "\n";
    } else if (c.requested) {
        out += "\nbubblewrap comparison, interleaved with the levels above (ms):\n";
        std::snprintf(line, sizeof(line), "%-48s %9s %9s %9s\n", "", "median", "p95", "p99");
        out += line;
        std::snprintf(line, sizeof(line), "%-48s %9.3f %9.3f %9.3f\n",
                      "stockade run, worktree at /repo", c.stockade.median_ms, c.stockade.p95_ms,
                      c.stockade.p99_ms);
        out += line;
        std::snprintf(line, sizeof(line), "%-48s %9.3f %9.3f %9.3f\n", "bwrap --unshare-all ...",
                      c.bubblewrap.median_ms, c.bubblewrap.p95_ms, c.bubblewrap.p99_ms);
        out += line;
        // A measurement of stockade against its own design goal, not a test
        // of the user's machine: worded so it cannot read as a failure here.
        std::snprintf(line, sizeof(line),
                      "ratio of medians, stockade / bwrap: %.2f (stockade's design goal is at "
                      "most %.2f; %s)\n",
                      c.ratio, kBwrapTargetRatio,
                      c.ratio <= kBwrapTargetRatio
                          ? "reached here"
                          : "not reached here: a figure about stockade, not a fault of this host");
        out += line;
        out += "  stockade: " + joined(c.stockade_args) + "\n";
        out += "  worktree: " + c.worktree_note + "\n";
        out += "  bwrap:    " + joined(c.bwrap_args) + "\n";
    }

    const BenchReport::Throughput& t = r.throughput;
    std::snprintf(line, sizeof(line),
                  "\nthroughput, full profile: %.1f sandboxes/s one after another (%zu runs), "
                  "%.1f/s with %u concurrent runners (%zu runs)\n",
                  t.sequential_per_s, t.sequential_runs, t.concurrent_per_s, t.concurrency,
                  t.concurrent_runs);
    out += line;
    return out;
}

}  // namespace stockade
