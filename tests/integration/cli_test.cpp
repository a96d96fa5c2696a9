// The command line's contract (SPEC §2, §6): exit codes, the result JSON, and
// refusals of bad input that leave nothing behind.
#include <sys/mount.h>
#include <sys/stat.h>

#include <algorithm>

#include "harness.h"

using namespace stockade::itest;

namespace {

struct BadInput {
    std::string what;
    std::vector<std::string> args;  // after `run --mount PROBE:/probe`
    std::string named;              // what the message must mention
    std::string absent = {};        // a file the refusal must not write
};

std::vector<BadInput> badInputs(Sandbox& sandbox, const std::vector<std::string>& command) {
    const std::string wt = sandbox.worktree();
    // Where a --result would be the sandbox's to plant or to swap: the
    // worktree, a path into it through a symlink, a writable --mount.
    const std::string into_wt = sandbox.scratch().makeSymlink("into-worktree", wt + "/sub");
    sandbox.scratch().makeDir("worktree/sub");
    const std::string data = sandbox.scratch().makeDir("data");
    const std::string dangling =
        sandbox.scratch().makeSymlink("dangling-into-worktree.json", wt + "/planted.json");
    // A link another user made (in a sticky /tmp, say) is not followed.
    const std::string foreign =
        sandbox.scratch().makeSymlink("foreign-link.json", sandbox.scratch().at("victim.json"));
    ::lchown(foreign.c_str(), 12345, 12345);
    const std::string file = sandbox.worktree() + "/README";
    const std::string missing = sandbox.worktree() + "-missing";
    auto withCommand = [&](std::vector<std::string> args) {
        args.push_back("--");
        args.insert(args.end(), command.begin(), command.end());
        return args;
    };
    std::vector<BadInput> cases = {
        {"--worktree without its value", {"--worktree"}, "--worktree"},
        {"--mount without its value", {"--mount"}, "--mount"},
        {"--env without its value", {"--env"}, "--env"},
        {"an unknown flag", withCommand({"--no-such-flag"}), "--no-such-flag"},
        {"no command", {}, ""},
        {"-- and no command", {"--"}, ""},
        {"a command without --", command, ""},
        {"a worktree that does not exist", withCommand({"--worktree", missing}), missing},
        {"a worktree that is a file", withCommand({"--worktree", file}), file},
        {"a --mount source that does not exist",
         withCommand({"--worktree", wt, "--mount", missing + ":/data"}), missing},
        {"--stdin with a bad value", withCommand({"--stdin", "sideways"}), "stdin"},
        {"--user that is not a number", withCommand({"--user", "somebody"}), "user"},
        {"a profile that does not exist", withCommand({"--profile", "no-such-profile-anywhere"}),
         "no-such-profile-anywhere"},
        {"--result inside the worktree",
         withCommand({"--worktree", wt, "--result", wt + "/result.json"}), "--result",
         wt + "/result.json"},
        {"--result into the worktree through a symlink",
         withCommand({"--worktree", wt, "--result", into_wt + "/result.json"}), "--result",
         wt + "/sub/result.json"},
        {"--result inside a writable --mount",
         withCommand(
             {"--worktree", wt, "--mount", data + ":/data:rw", "--result", data + "/result.json"}),
         "--result", data + "/result.json"},
        {"--result a dangling symlink into the worktree",
         withCommand({"--worktree", wt, "--result", dangling}), "--result", wt + "/planted.json"},
        {"--result a symlink another user owns",
         withCommand({"--worktree", wt, "--result", foreign}), "--result",
         sandbox.scratch().at("victim.json")},
        {"another refusal, with --result inside the worktree",
         withCommand({"--worktree", wt, "--profile", "no-such-profile-x", "--result",
                      wt + "/refused.json"}),
         "no-such-profile-x", wt + "/refused.json"},
        {"--result a descriptor that is not open", withCommand({"--result", "/dev/fd/97"}),
         "/dev/fd/97"},
        {"--result in a directory that does not exist",
         withCommand({"--worktree", wt, "--result", missing + "/result.json"}), "--result"},
    };
    // Each --mount is a hole: none may go over these, however spelled.
    for (const std::string target :
         {"/", "/proc", "/dev", "/sys", "/repo/.git", "/repo/.git/hooks", "//", "/proc/", "/dev/",
          "/repo/../proc", "/repo/./.git/x", "/repo//.git"}) {
        cases.push_back({"--mount over " + target,
                         withCommand({"--worktree", wt, "--mount", wt + ":" + target}), "mount"});
    }
    return cases;
}

}  // namespace

TEST_CASE("CLI: exit codes follow the command", "[cli][exit]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.scratch().writeFile("worktree/not-executable.sh", "#!/bin/sh\nexit 0\n", 0644);

    SECTION("its own exit code") {
        const Completed done = sandbox.run(probeCommand({"exit", "3"}));
        INFO(done.describe());
        CHECK(done.exitCode == 3);
        const nlohmann::json result = sandbox.result();
        INFO(result.dump(2));
        CHECK(result["status"] == "failed");
        CHECK(result["reason"] == "nonzero_exit");
        CHECK(result["exit_code"] == 3);
        CHECK(result["signal"].is_null());
    }
    SECTION("128+N when it dies of signal N") {
        const Completed done = sandbox.run(probeCommand({"raise", "15"}));
        INFO(done.describe());
        CHECK(done.exitCode == 143);
        const nlohmann::json result = sandbox.result();
        INFO(result.dump(2));
        CHECK(result["reason"] == "signal");
        CHECK(result["signal"] == 15);
    }
    SECTION("127 when it is not found") {
        for (const std::string command : {"/no/such/command", "no-such-command-on-the-path"}) {
            const Completed done = sandbox.run({command});
            INFO(command << "\n" << done.describe());
            CHECK(done.exitCode == 127);
            CHECK(sandbox.result()["reason"] == "not_found");
        }
    }
    SECTION("126 when it is not executable") {
        const Completed done = sandbox.run({"/repo/not-executable.sh"});
        INFO(done.describe());
        CHECK(done.exitCode == 126);
        CHECK(sandbox.result()["reason"] == "not_executable");
    }
}

TEST_CASE("CLI: the result JSON records the run and what was enforced", "[cli][result]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const Completed done = sandbox.run(probeCommand({"exit", "0"}));
    INFO(done.describe());
    REQUIRE(done.exitCode == 0);
    const nlohmann::json result = sandbox.result();
    INFO(result.dump(2));
    CHECK(result["schema"] == "stockade.result/v1");
    CHECK(result["status"] == "passed");
    CHECK(result["reason"].is_null());
    CHECK(result["exit_code"] == 0);
    CHECK(result["signal"].is_null());
    CHECK(result["duration_ms"].is_number());
    CHECK(result["stragglers_killed"] == 0);
    const nlohmann::json& enforced = result["enforced"];
    for (const char* ns :
         {"user_ns", "mount_ns", "pid_ns", "net_ns", "ipc_ns", "uts_ns", "cgroup_ns"}) {
        INFO(ns);
        CHECK(enforced[ns] == true);
    }
    CHECK(enforced["capabilities"] == "none");
    CHECK(enforced["no_new_privs"] == true);
}

TEST_CASE("CLI: --result /dev/stdout writes to stockade's stdout and leaves the host's alone",
          "[cli][result]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    struct stat before {};
    REQUIRE(lstat("/dev/stdout", &before) == 0);
    REQUIRE(S_ISLNK(before.st_mode));
    Launch launch = sandbox.launch({});
    launch.args = {"run", "--quiet", "--result", "/dev/stdout", "--", "true"};
    const Completed done = runStockade(launch);
    INFO(done.describe());
    CHECK(done.exitCode == 0);
    const nlohmann::json printed = nlohmann::json::parse(done.out, nullptr, false);
    CHECK(printed.is_object());
    if (printed.is_object()) CHECK(printed["status"] == "passed");
    // As root a rename would have replaced the host's own /dev/stdout.
    struct stat after {};
    REQUIRE(lstat("/dev/stdout", &after) == 0);
    CHECK(S_ISLNK(after.st_mode));
    CHECK(after.st_ino == before.st_ino);
}

// The place of the record is fixed before the run: a directory on the way
// that the sandbox swaps for a symlink during the run (the worktree's `out`,
// a link to a host directory when stockade starts) changes nothing.
TEST_CASE("CLI: the sandbox cannot redirect its record by swapping a directory on the way",
          "[cli][result]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const std::string records = sandbox.scratch().makeDir("records");
    const std::string victim = sandbox.scratch().writeFile("victim/precious", "precious\n");
    sandbox.scratch().makeSymlink("worktree/out", records);
    Launch launch = sandbox.launch({});
    launch.args = {"run",
                   "--worktree",
                   sandbox.worktree(),
                   "--result",
                   sandbox.worktree() + "/out/r.json",
                   "--",
                   "sh",
                   "-c",
                   "rm /repo/out && mkdir /repo/d && ln -s d /repo/out && ln -s " + victim +
                       " /repo/d/r.json"};
    const Completed done = runStockade(launch);
    INFO(done.describe());
    CHECK(done.exitCode == 0);
    CHECK(readFileOrEmpty(victim) == "precious\n");
    const nlohmann::json written =
        nlohmann::json::parse(readFileOrEmpty(records + "/r.json"), nullptr, false);
    CHECK(written.is_object());
    if (written.is_object()) CHECK(written["status"] == "passed");
}

// Ways into the worktree that a path check alone misses: a bind mount of a
// part of it elsewhere, and the source of a mount below it (the sandbox's
// view of the worktree is recursive). Both are refused before anything runs.
TEST_CASE("CLI: --result is refused on a bind mount of the worktree and below a mount in it",
          "[cli][result]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const std::string sub = sandbox.scratch().makeDir("worktree/sub");
    const std::string alias = sandbox.scratch().makeDir("alias");
    const std::string cache = sandbox.scratch().makeDir("cache-source");
    const std::string under = sandbox.scratch().makeDir("worktree/cache");
    REQUIRE(::mount(sub.c_str(), alias.c_str(), nullptr, MS_BIND, nullptr) == 0);
    REQUIRE(::mount(cache.c_str(), under.c_str(), nullptr, MS_BIND, nullptr) == 0);
    struct Unmount {
        std::vector<std::string> points;
        ~Unmount() {
            for (const std::string& p : points) ::umount2(p.c_str(), MNT_DETACH);
        }
    } unmount{{alias, under}};
    for (const std::string& dir : {alias, cache}) {
        INFO(dir);
        Launch launch = sandbox.launch({});
        launch.args = {"run", "--worktree", sandbox.worktree(), "--result", dir + "/r.json",
                       "--",  "true"};
        const Completed done = runStockade(launch);
        INFO(done.describe());
        CHECK(done.exitCode == 125);
        CHECK(done.err.find("--result") != std::string::npos);
        CHECK_FALSE(pathExists(dir + "/r.json"));
    }
}

TEST_CASE("CLI: bad input is refused with 125 and one line, leaving nothing behind",
          "[cli][refusal]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    TokenReaper reaper(randomToken("refused"));
    const std::vector<std::string> command =
        probeCommand({"sleep-with-token", reaper.token(), "5"});
    for (const BadInput& bad : badInputs(sandbox, command)) {
        INFO("case: " << bad.what);
        const HostSnapshot before = HostSnapshot::take();
        Launch launch = sandbox.launch({});
        launch.args = {"run", "--mount", std::string(STOCKADE_PROBE_DIR) + ":/probe"};
        launch.args.insert(launch.args.end(), bad.args.begin(), bad.args.end());
        const Completed done = runStockade(launch);
        INFO(done.describe());
        CHECK(done.exitCode == 125);
        CHECK(done.err.rfind("stockade: ", 0) == 0);
        CHECK(std::count(done.err.begin(), done.err.end(), '\n') == 1);
        if (!bad.named.empty()) CHECK(done.err.find(bad.named) != std::string::npos);
        if (!bad.absent.empty()) CHECK_FALSE(pathExists(bad.absent));
        CHECK(done.out.empty());
        CHECK(findProcessesWithToken(reaper.token(), false).empty());
        const HostSnapshot after = HostSnapshot::take();
        CHECK(after.stockadeEntries == before.stockadeEntries);
        CHECK(after.mounts == before.mounts);
    }
}

TEST_CASE("CLI: --log-level debug times each step of the parent and of the child", "[cli][log]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.option("--log-level", "debug");
    const Completed done = sandbox.run(probeCommand({"exit", "0"}));
    INFO(done.describe());
    CHECK(done.exitCode == 0);
    // Parent steps, then the child's stages as the child noted them, in order.
    for (const char* step : {"plan the sandbox", "clone3 with the new namespaces",
                             "child: build the sandbox's root", "child: install the seccomp filter",
                             "child: init: the command ended", "write the result"}) {
        INFO(step);
        CHECK(done.err.find(step) != std::string::npos);
    }
    CHECK(done.err.find("child: build the sandbox's root") <
          done.err.find("child: install the seccomp filter"));
    // Nothing of it without the flag, and a level that does not exist is refused.
    Sandbox quiet(mode);
    const Completed plain = quiet.run(probeCommand({"exit", "0"}));
    CHECK(plain.err.find("stockade: debug:") == std::string::npos);
    Sandbox wrong(mode);
    wrong.option("--log-level", "loud");
    const Completed refused = wrong.run({"true"});
    CHECK(refused.exitCode == 125);
    CHECK(refused.err.find("--log-level") != std::string::npos);
}
