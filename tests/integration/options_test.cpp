// The run options of SPEC §2 that shape the sandbox without being a guarantee
// of their own: --workdir, --user, --stdin, --quiet, --name.
#include <signal.h>

#include <chrono>
#include <sstream>

#include "harness.h"

using namespace stockade::itest;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> words(const std::string& text) {
    std::istringstream in(text);
    std::vector<std::string> out;
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}

}  // namespace

TEST_CASE("Options: --workdir defaults to /repo with a worktree, else /tmp", "[options]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    CHECK(sandbox.probe({"cwd"}).report.get("value") == "/repo");
    sandbox.option("--workdir", "/var/tmp");
    CHECK(sandbox.probe({"cwd"}).report.get("value") == "/var/tmp");
    Sandbox bare(mode);
    bare.withoutWorktree();
    CHECK(bare.probe({"cwd"}).report.get("value") == "/tmp");
}

TEST_CASE("Options: --user sets the ids inside, and even --user 0 is not host root",
          "[options][G3]") {
    STOCKADE_EACH_MODE(mode);
    SECTION("--user 1000:1001") {
        Sandbox sandbox(mode);
        sandbox.option("--user", "1000:1001");
        const ProbeRun ids = sandbox.probe({"ids"});
        INFO(ids.describe());
        CHECK(ids.report.get("uid") == "1000");
        CHECK(ids.report.get("gid") == "1001");
    }
    SECTION("--user 0") {
        Sandbox sandbox(mode);
        sandbox.option("--user", "0");
        const ProbeRun caps = sandbox.probe({"caps"});
        INFO(caps.describe());
        CHECK(caps.report.get("CapEff") == "0000000000000000");
        CHECK(caps.report.get("CapBnd") == "0000000000000000");

        TokenReaper reaper(randomToken("user0"));
        StockadeProcess stockade(
            sandbox.launch(probeCommand({"sleep-with-token", reaper.token(), "60"})));
        REQUIRE(stockade.waitForStdout("ready=" + reaper.token(), 20s));
        const std::vector<pid_t> found = findProcessesWithToken(reaper.token(), true);
        REQUIRE(found.size() == 1);
        const std::optional<std::string> uids = procStatusField(found.front(), "Uid");
        INFO("host Uid: " << uids.value_or("<missing>"));
        REQUIRE(uids);
        for (const std::string& id : words(*uids)) CHECK(id != "0");
        stockade.signal(SIGKILL);
    }
}

TEST_CASE("Options: --stdin inherit passes stockade's stdin through", "[options][G7]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.option("--stdin", "inherit").stdinData("hello from the caller\n");
    const ProbeRun run = sandbox.probe({"read-stdin"});
    INFO(run.describe());
    CHECK(run.result() == "ok");
    CHECK(run.report.get("content") == "hello from the caller\\n");
}

TEST_CASE("Options: --quiet keeps the output out of stockade's own, --name names the run",
          "[options][result]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.option("--quiet").option("--name", "quiet-one");
    const Completed done = sandbox.run(probeCommand({"hostname"}));
    INFO(done.describe());
    CHECK(done.exitCode == 0);
    CHECK(done.out.empty());
    const nlohmann::json result = sandbox.result();
    INFO(result.dump(2));
    CHECK(result["name"] == "quiet-one");
    // Still captured and counted: "value=stockade\n".
    CHECK(result["stdout"]["bytes"] == 15);
}
