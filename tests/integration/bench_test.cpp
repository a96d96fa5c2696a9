// `stockade bench` (issue 7): the JSON has every level with real numbers, the
// comparison with bubblewrap is there when asked for (or says plainly why
// not), and bad options are refused with 125. No test asserts how long
// anything took: only that it was measured.
#include <algorithm>
#include <filesystem>

#include "harness.h"

using namespace stockade::itest;

namespace {

constexpr std::chrono::seconds kBenchTimeout{180};

const std::vector<std::string> kLevels = {
    "bare",    "user_ns",      "mount_ns", "pid_ns",        "net_ns",      "ipc_uts_cgroup_ns",
    "seccomp", "capabilities", "landlock", "cgroup_limits", "full_profile"};

Completed runBench(
    Mode mode, const ScratchDir& scratch, std::vector<std::string> args,
    std::string path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin") {
    Launch launch;
    launch.mode = mode;
    launch.args = {"bench"};
    launch.args.insert(launch.args.end(), args.begin(), args.end());
    // Its scratch files go beside the tests' own, not into the host's /tmp.
    launch.environment = {"PATH=" + path, "TMPDIR=" + scratch.path(), "LANG=C.UTF-8"};
    launch.leakFds = false;
    return runStockade(launch, kBenchTimeout);
}

nlohmann::json parseJson(const Completed& done) {
    INFO(done.describe());
    REQUIRE(done.exitCode == 0);
    nlohmann::json doc = nlohmann::json::parse(done.out, nullptr, false);
    REQUIRE_FALSE(doc.is_discarded());
    return doc;
}

void checkLatency(const nlohmann::json& l) {
    INFO(l.dump());
    REQUIRE(l["median_ms"].is_number());
    CHECK(l["median_ms"].get<double>() > 0);
    CHECK(l["p95_ms"].get<double>() >= l["median_ms"].get<double>());
    CHECK(l["p99_ms"].get<double>() >= l["p95_ms"].get<double>());
    CHECK(l["samples"] == 5);
}

bool leftNothing(const ScratchDir& scratch) {
    std::error_code ec;
    auto it = std::filesystem::directory_iterator(scratch.path(), ec);
    return !ec && it == std::filesystem::directory_iterator();
}

}  // namespace

TEST_CASE("bench: --runs 5 --json measures every level", "[bench]") {
    STOCKADE_EACH_MODE(mode);
    ScratchDir scratch(scratchRoot(), "bench", invokingUid(mode), invokingGid(mode));
    const Completed done = runBench(mode, scratch, {"--runs", "5", "--warmup", "1", "--json"});
    const nlohmann::json doc = parseJson(done);
    INFO(doc.dump(2));
    CHECK(doc["schema"] == "stockade.bench/v1");
    CHECK(doc["runs"] == 5);
    CHECK(doc["machine"]["mode"] == modeName(mode));
    CHECK(doc["machine"]["uid"] == invokingUid(mode));
    CHECK(doc["machine"]["cpus"].get<int>() >= 1);
    CHECK_FALSE(doc["machine"]["kernel"].get<std::string>().empty());

    REQUIRE(doc["levels"].size() == kLevels.size());
    for (size_t i = 0; i < kLevels.size(); ++i) {
        const nlohmann::json& level = doc["levels"][i];
        CHECK(level["name"] == kLevels[i]);
        checkLatency(level);
        REQUIRE(level["overhead_ms"].is_number());
    }
    CHECK(doc["levels"][0]["overhead_ms"] == 0);
    // The limits level says what held them: rootless without a delegated
    // cgroup, rlimits.
    const std::string mechanism = doc["levels"][9]["mechanism"];
    CHECK_FALSE(mechanism.empty());
    if (mode == Mode::Rootless && mechanism.find("cgroup") == std::string::npos)
        CHECK(mechanism == "rlimit");
    CHECK(doc["comparison"].is_null());
    CHECK(doc["throughput"]["sequential_per_s"].get<double>() > 0);
    CHECK(doc["throughput"]["concurrent_per_s"].get<double>() > 0);
    CHECK(doc["throughput"]["concurrency"] == doc["machine"]["cpus"]);
    CHECK(leftNothing(scratch));
}

TEST_CASE("bench: --compare bwrap adds the comparison block", "[bench]") {
    STOCKADE_EACH_MODE(mode);
    ScratchDir scratch(scratchRoot(), "bench", invokingUid(mode), invokingGid(mode));
    const Completed done =
        runBench(mode, scratch, {"--runs", "5", "--warmup", "1", "--json", "--compare", "bwrap"});
    const nlohmann::json doc = parseJson(done);
    const nlohmann::json& comparison = doc["comparison"];
    INFO(comparison.dump(2));
    REQUIRE(comparison.is_object());
    CHECK(comparison["tool"] == "bwrap");
    if (!pathExists("/usr/bin/bwrap")) {
        WARN("bubblewrap is not installed here: only the refusal to compare is tested");
        CHECK(comparison["available"] == false);
        return;
    }
    REQUIRE(comparison["available"] == true);
    checkLatency(comparison["stockade"]);
    checkLatency(comparison["bwrap_latency"]);
    CHECK(comparison["ratio"].get<double>() > 0);
    CHECK(comparison["target_ratio"] == 0.75);
    CHECK(comparison["target_met"].is_boolean());
    const auto& bwrap_args = comparison["bwrap_args"];
    for (const char* flag : {"--unshare-all", "--die-with-parent", "--new-session", "--proc"})
        CHECK(std::find(bwrap_args.begin(), bwrap_args.end(), flag) != bwrap_args.end());
    CHECK(leftNothing(scratch));
}

TEST_CASE("bench: without bubblewrap it says so plainly", "[bench]") {
    STOCKADE_EACH_MODE(mode);
    ScratchDir scratch(scratchRoot(), "bench", invokingUid(mode), invokingGid(mode));
    SECTION("JSON") {
        const Completed done = runBench(
            mode, scratch, {"--runs", "1", "--warmup", "0", "--json", "--compare", "bwrap"},
            "/nonexistent");
        const nlohmann::json doc = parseJson(done);
        INFO(doc["comparison"].dump(2));
        CHECK(doc["comparison"]["available"] == false);
        CHECK_THAT(doc["comparison"]["reason"].get<std::string>(),
                   Catch::Contains("not installed"));
        CHECK(doc["levels"].size() == kLevels.size());
    }
    SECTION("table") {
        const Completed done = runBench(
            mode, scratch, {"--runs", "1", "--warmup", "0", "--compare", "bwrap"}, "/nonexistent");
        INFO(done.describe());
        CHECK(done.exitCode == 0);
        CHECK_THAT(done.out, Catch::Contains("bubblewrap comparison: not run") &&
                                 Catch::Contains("not installed"));
        CHECK_THAT(done.out, Catch::Contains("+ cgroup limits"));
    }
}

TEST_CASE("bench: bad options are refused with 125", "[bench][refusal]") {
    STOCKADE_EACH_MODE(mode);
    ScratchDir scratch(scratchRoot(), "bench", invokingUid(mode), invokingGid(mode));
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--runs", "0"}, "--runs"},
        {{"--runs", "x"}, "--runs"},
        {{"--runs", "-3"}, "--runs"},
        {{"--runs", "5x"}, "--runs"},
        {{"--runs"}, "--runs"},
        {{"--warmup", "many"}, "--warmup"},
        {{"--compare", "docker"}, "docker"},
        {{"--compare"}, "--compare"},
        {{"--no-such-flag"}, "--no-such-flag"},
        {{"stray"}, "stray"},
    };
    for (const auto& [args, named] : cases) {
        const Completed done = runBench(mode, scratch, args);
        INFO("bench " << args.front() << (args.size() > 1 ? " " + args[1] : "") << "\n"
                      << done.describe());
        CHECK(done.exitCode == 125);
        CHECK(done.out.empty());
        CHECK(done.err.rfind("stockade: ", 0) == 0);
        CHECK_THAT(done.err, Catch::Contains(named));
    }
    CHECK(leftNothing(scratch));
}
