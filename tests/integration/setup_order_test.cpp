// One setup order (issue 16): `stockade check` probes the sandbox's setup
// with the steps `stockade run` executes, in the order run executes them.
// run's side is read from what its child noted as each step ended
// (--log-level debug, ChildPlan::stage_times); check's from its JSON, where
// each step is what the probe's child reported as it ran it. Both come from
// the one table (runtime/child/child_setup.h); the unit test pins the table.
#include <sstream>

#include "harness.h"

using namespace stockade::itest;

namespace {

// "stockade: debug:   0.012 ms    child: make mounts private" -> the words.
std::vector<std::string> stepsRunNoted(const std::string& err) {
    std::vector<std::string> steps;
    std::istringstream lines(err);
    std::string line;
    const std::string marker = "    child: ";
    while (std::getline(lines, line)) {
        auto at = line.find(marker);
        if (line.rfind("stockade: debug:", 0) != 0 || at == std::string::npos) continue;
        std::string step = line.substr(at + marker.size());
        if (step.rfind("init: ", 0) == 0) continue;  // after the setup: the command ended
        steps.push_back(step);
    }
    return steps;
}

}  // namespace

TEST_CASE("setup order: check probes the steps run executes, in run's order", "[check][setup]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.option("--log-level", "debug");
    const Completed run = sandbox.run({"/bin/true"});
    INFO(run.describe());
    REQUIRE(run.exitCode == 0);
    const std::vector<std::string> ran = stepsRunNoted(run.err);

    Launch launch;
    launch.mode = mode;
    launch.args = {"check", "--json"};
    launch.leakFds = false;
    const Completed check = runStockade(launch);
    INFO(check.describe());
    REQUIRE(check.exitCode == 0);
    const nlohmann::json doc = nlohmann::json::parse(check.out, nullptr, false);
    REQUIRE_FALSE(doc.is_discarded());
    REQUIRE(doc["setup_steps"].is_array());
    std::vector<std::string> probed;
    for (const nlohmann::json& step : doc["setup_steps"]) {
        INFO(step.dump());
        // On a host where run works, every step of check's probe does.
        CHECK(step["errno"] == 0);
        probed.push_back(step["step"]);
    }
    // Every step but the execve, which check stops short of and which run's
    // child cannot note once it has happened: the whole table.
    CHECK(ran.size() >= 30);
    CHECK(probed == ran);
}
