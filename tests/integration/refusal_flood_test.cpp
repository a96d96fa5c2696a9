// A flood of refused calls (issue 25, point 2): every refusal is still
// answered EPERM and counted exactly in the record while the supervisor holds
// it to its budget (seccomp/refusal_budget.h), the record carries stockade's
// own CPU, and --timeout ends an endless flood. Nothing here asserts a time;
// what the flood costs is measured by bench/refusal_flood.py.
#include <regex>
#include <sstream>

#include "seccomp/refusal_budget.h"
#include "tests/integration/harness.h"

namespace stockade::itest {
namespace {

const std::string kFlood = "/probe/stockade-refusal-flood";

// The flood's `calls=N eperm=N other=N` line.
std::map<std::string, uint64_t> tally(const std::string& out) {
    std::map<std::string, uint64_t> values;
    std::istringstream words(out);
    std::string word;
    while (words >> word) {
        const size_t eq = word.find('=');
        if (eq != std::string::npos) values[word.substr(0, eq)] = std::stoull(word.substr(eq + 1));
    }
    return values;
}

uint64_t keyctlCount(const nlohmann::json& result) {
    uint64_t count = 0;
    for (const auto& d : result["denials"])
        if (d["syscall"] == "keyctl") count += d["count"].get<uint64_t>();
    return count;
}

void checkSupervisorCpu(const nlohmann::json& result) {
    REQUIRE(result.contains("supervisor_cpu_ms"));
    REQUIRE(result["supervisor_cpu_ms"].is_number_unsigned());
    // One thread cannot use more CPU than the time it had (ms, rounded down).
    CHECK(result["supervisor_cpu_ms"].get<uint64_t>() <= result["duration_ms"].get<uint64_t>() + 1);
}

}  // namespace

TEST_CASE("G5: a flood of refusals from four processes is answered EPERM and counted exactly",
          "[G5][seccomp]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.option("--log-level", "debug");
    const Completed run = sandbox.run({kFlood, "4", "2"});
    INFO(run.describe());
    REQUIRE(run.exitCode == 0);
    // The budget was reached (the flood outran it) and held: no more answers
    // than its burst and its rate over the run's own length allow.
    std::smatch ran_out;
    REQUIRE(std::regex_search(run.err, ran_out,
                              std::regex("the refusal budget ran out ([0-9]+) times")));
    CHECK(std::stoull(ran_out[1]) > 0);
    const auto counts = tally(run.out);
    REQUIRE(counts.count("calls") == 1);
    // Every call refused by the filter: none reached the kernel.
    CHECK(counts.at("other") == 0);
    CHECK(counts.at("eperm") == counts.at("calls"));
    CHECK(counts.at("calls") > 0);
    const nlohmann::json result = sandbox.result();
    INFO(result.dump(2));
    CHECK(result["status"] == "passed");
    REQUIRE(result.contains("denials"));
    // Exact, not a lower bound: the bound slows the flood, never drops a count.
    CHECK(keyctlCount(result) == counts.at("eperm"));
    const uint64_t seconds = result["duration_ms"].get<uint64_t>() / 1000 + 1;
    CHECK(keyctlCount(result) <=
          seccomp::kRefusalAnswerBurst + seccomp::kRefusalAnswersPerSecond * seconds);
    checkSupervisorCpu(result);
}

TEST_CASE("G5: --timeout ends an endless flood of refusals, whose callers wait on the supervisor",
          "[G5][seccomp]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.option("--timeout", "2");
    const Completed run = sandbox.run({kFlood, "4", "0"});
    INFO(run.describe());
    // The harness kills a stockade that outlives kRunTimeout: that would be a
    // timeout that did not hold.
    REQUIRE_FALSE(run.timedOut);
    CHECK(run.exitCode == 124);
    const nlohmann::json result = sandbox.result();
    INFO(result.dump(2));
    CHECK(result["status"] == "timed_out");
    CHECK(result["reason"] == "timeout");
    // The bound itself: 2 s and the teardown's grace, not stretched by the
    // callers waiting on the supervisor.
    CHECK(result["duration_ms"].get<uint64_t>() < 5000);
    REQUIRE(result.contains("denials"));
    CHECK(keyctlCount(result) > 0);
    checkSupervisorCpu(result);
}

TEST_CASE("the record carries the supervisor's own CPU time", "[result]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const Completed run = sandbox.run({"true"});
    INFO(run.describe());
    REQUIRE(run.exitCode == 0);
    const nlohmann::json result = sandbox.result();
    INFO(result.dump(2));
    checkSupervisorCpu(result);
}

}  // namespace stockade::itest
