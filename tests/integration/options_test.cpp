// The run options of SPEC §2 that shape the sandbox without being a guarantee
// of their own: --workdir, --user, --stdin, --quiet, --name.
#include <signal.h>

#include <algorithm>
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

// The new root is assembled on the host's /tmp before pivot_root: a recursive
// bind of /tmp taken after that would show the sandbox its own root at the
// target, not the host's files (issue 23).
TEST_CASE("Options: --mount of a host directory shows that directory, /tmp included",
          "[options][G2]") {
    STOCKADE_EACH_MODE(mode);
    ScratchDir inTmp("/tmp", "stockade-itest-mount-source", invokingUid(mode), invokingGid(mode));
    const std::string token = randomToken("mounted");
    inTmp.writeFile("canary", token);
    const std::string name = inTmp.path().substr(std::string("/tmp/").size());
    Sandbox probeRoot(mode);
    const ProbeRun root = probeRoot.withoutWorktree().probe({"list-dir", "/"});
    REQUIRE(root.result() == "ok");
    const std::vector<std::string> rootEntries = root.report.all("entry");
    REQUIRE(!rootEntries.empty());

    struct Case {
        std::string source;
        std::string canaryInside;  // relative to the target
    };
    for (const Case& c : {Case{"/tmp", name + "/canary"}, Case{inTmp.path(), "canary"}}) {
        for (const std::string suffix : {"", ":rw"}) {
            Sandbox sandbox(mode);
            sandbox.withoutWorktree().option("--mount", c.source + ":/data" + suffix);
            INFO("--mount " << c.source << ":/data" << suffix);
            const ProbeRun read = sandbox.probe({"read-file", "/data/" + c.canaryInside});
            INFO(read.describe());
            if (mode == Mode::Rootless && c.source == "/tmp" && suffix == ":rw") {
                // Rootless, with no XDG_RUNTIME_DIR, the state directory is
                // /tmp/stockade-65534: a writable /tmp is refused before
                // anything runs (state_dir_test has the rule's own cases).
                CHECK(read.completed.exitCode == 125);
                CHECK(read.completed.err.find("which holds stockade's state directory "
                                              "/tmp/stockade-65534") != std::string::npos);
                continue;
            }
            CHECK(read.result() == "ok");
            CHECK(read.report.get("content") == token);
            const ProbeRun list = sandbox.probe({"list-dir", "/data"});
            INFO(list.describe());
            REQUIRE(list.result() == "ok");
            // None of the sandbox root's own entries shows at the target,
            // unless the host directory itself has one of that name.
            for (const std::string& entry : list.report.all("entry")) {
                const bool rootsOwn =
                    std::find(rootEntries.begin(), rootEntries.end(), entry) != rootEntries.end();
                if (rootsOwn) CHECK(pathExists(c.source + "/" + entry));
            }
        }
    }
}
