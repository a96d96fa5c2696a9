// The command line's contract (SPEC §2, §6): exit codes, the result JSON, and
// refusals of bad input that leave nothing behind.
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

#include "harness.h"
#include "host_listener.h"

using namespace stockade::itest;
using namespace std::chrono_literals;

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
        // Open, but stockade's own (the held worktree or --mount source,
        // opened before the record's place is judged) or read-only: either
        // would lose the record after the run.
        // (Which numbers its own fds take depends on the build: each of the
        // first few, none passed by the caller, is refused.)
        {"--result a descriptor stockade opened itself (3)",
         withCommand({"--worktree", wt, "--result", "/dev/fd/3"}), "/dev/fd/3"},
        {"--result a descriptor stockade opened itself (4)",
         withCommand({"--worktree", wt, "--result", "/dev/fd/4"}), "/dev/fd/4"},
        {"--result a descriptor stockade opened itself (5)",
         withCommand({"--worktree", wt, "--result", "/dev/fd/5"}), "/dev/fd/5"},
        {"--result a descriptor stockade opened itself (6)",
         withCommand({"--worktree", wt, "--result", "/dev/fd/6"}), "/dev/fd/6"},
        {"--result a descriptor open only for reading (stdin, a pipe's read end)",
         withCommand({"--result", "/dev/fd/0"}), "not open for writing"},
        {"--result in a directory that does not exist",
         withCommand({"--worktree", wt, "--result", missing + "/result.json"}), "--result"},
    };
    // Issue 23: a newcomer's mistakes, each named for what it is.
    const std::string bad_json = sandbox.scratch().writeFile(
        "bad-profile.json", "{\n  \"extends\": \"held-test\",\n  \"network\": none\n}\n");
    std::vector<BadInput> mistakes = {
        {"a command after a valued option, without --",
         {"--worktree", wt, "ls", "-la"},
         "missing -- before the command"},
        {"--result followed by another option", withCommand({"--result", "--quiet"}),
         "looks like an option"},
        {"--worktree followed by another option",
         withCommand({"--worktree", "--result", sandbox.scratch().at("r.json")}),
         "--worktree needs a value"},
        {"a mistyped option", withCommand({"--worktre", wt}), "did you mean --worktree?"},
        {"Docker's --rm", withCommand({"--rm"}), "every sandbox is removed"},
        {"Docker's -v", withCommand({"-v", wt + ":/src"}), "--mount SRC:DST"},
        {"Docker's -e", withCommand({"-e", "CI=1"}), "--env KEY=VALUE"},
        {"Docker's -p", withCommand({"-p", "8000:8000"}), "serve --port"},
        {"Docker's --network", withCommand({"--network", "none"}), "no network"},
        {"Docker's --pids-limit", withCommand({"--pids-limit", "64"}), "--pids N"},
        {"a --mount option that does not exist", withCommand({"--mount", wt + ":/data:rx"}),
         "unknown mount option \"rx\""},
        {"a profile that is not valid JSON", withCommand({"--profile", bad_json}),
         "line 3, column 15"},
        {"--result where no one may create a file", withCommand({"--result", "/proc/r.json"}),
         "cannot create a file in /proc"},
    };
    if (sandbox.mode() == Mode::Rootless) {
        // Another user's record in a sticky directory: not this user's to replace.
        const std::string sticky = sandbox.scratch().makeDir("sticky", 01777);
        ::chmod(sticky.c_str(), 01777);
        ::chown(sticky.c_str(), 0, 0);
        const std::string theirs = sandbox.scratch().writeFile("sticky/build.json", "{}\n");
        ::chown(theirs.c_str(), 12345, 12345);
        mistakes.push_back({"--result over another user's file in a sticky directory",
                            withCommand({"--result", theirs}), "belongs to uid 12345"});
        const std::string locked = sandbox.scratch().makeDir("root-only", 0755);
        ::chown(locked.c_str(), 0, 0);
        mistakes.push_back(
            {"--result in a directory of root's", withCommand({"--result", locked + "/r.json"}),
             "cannot create a file in " + locked + " as uid 65534", locked + "/r.json"});
    }
    cases.insert(cases.end(), mistakes.begin(), mistakes.end());
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

// base/inherited_fds notes the caller's fds with one poll(2) over the slots
// RLIMIT_NOFILE allows, and asks one by one above it: an fd the caller opened
// before lowering its soft limit (fd 90 under a limit of 80) is still its own.
TEST_CASE("CLI: --result /dev/fd/N takes the caller's fd, above the soft fd limit too",
          "[cli][result]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    for (const bool lowered : {false, true}) {
        INFO((lowered ? "soft RLIMIT_NOFILE 80" : "the limit as inherited"));
        const std::string record =
            sandbox.scratch().at(lowered ? "record-lowered.json" : "record.json");
        Launch launch = sandbox.launch({});
        // bash: dash's redirections take single-digit fds only.
        launch.wrapper = "/bin/bash";
        launch.wrapperArgs = {"-c",
                              std::string("f=$1; shift 2; exec 90>\"$f\"; ") +
                                  (lowered ? "ulimit -Sn 80; " : "") + "exec \"$@\"",
                              "sh", record};
        launch.args = {"run", "--quiet", "--result", "/dev/fd/90", "--", "true"};
        const Completed done = runStockade(launch);
        INFO(done.describe());
        CHECK(done.exitCode == 0);
        const nlohmann::json written =
            nlohmann::json::parse(readFileOrEmpty(record), nullptr, false);
        CHECK(written.is_object());
        if (written.is_object()) CHECK(written["status"] == "passed");
    }
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

namespace {

// stockade's own lines on stderr ("stockade: ..."), in order.
std::vector<std::string> stockadeLines(const std::string& err) {
    std::vector<std::string> lines;
    std::istringstream in(err);
    for (std::string line; std::getline(in, line);)
        if (line.rfind("stockade: ", 0) == 0) lines.push_back(line);
    return lines;
}

// `stockade serve --detach` of `command` in the sandbox's set-up, with
// `extra` options (XDG_RUNTIME_DIR from `environment` when given).
Completed serveDetached(const Sandbox& sandbox, const std::string& name, uint16_t port,
                        const std::vector<std::string>& command, std::vector<std::string> extra,
                        std::vector<std::string> environment = {}) {
    Launch launch = sandbox.launch(command);
    launch.args[0] = "serve";
    extra.insert(extra.end(), {"--detach", "--name", name, "--port", std::to_string(port)});
    launch.args.insert(launch.args.begin() + 1, extra.begin(), extra.end());
    if (!environment.empty()) launch.environment = environment;
    return runStockade(launch, 60s);
}

Completed stockadeAs(Mode mode, std::vector<std::string> args,
                     std::vector<std::string> environment = {"PATH=/usr/bin:/bin"}) {
    Launch launch;
    launch.mode = mode;
    launch.args = std::move(args);
    launch.environment = std::move(environment);
    return runStockade(launch, 30s);
}

// Stops the server and removes the log stockade keeps after a stop.
struct StopAtEnd {
    Mode mode;
    std::string name;
    ~StopAtEnd() {
        stockadeAs(mode, {"stop", name});
        const std::string state =
            mode == Mode::Root ? "/run/stockade" : "/tmp/stockade-" + std::to_string(kNobody);
        for (const char* suffix : {".log", ".log.1"})
            ::unlink((state + "/" + name + suffix).c_str());
    }
};

}  // namespace

// Issue 23: without --result, an OOM could not be told from an output-limit
// kill or the command's own SIGKILL. Each bound says so, --quiet or not.
TEST_CASE("CLI: a bound stockade applied is one line on stderr, with --quiet too",
          "[cli][limits]") {
    STOCKADE_EACH_MODE(mode);
    struct Bound {
        std::string what;
        std::vector<std::string> options;
        std::vector<std::string> command;
        std::string said;  // in the one line
    };
    const std::vector<Bound> bounds = {
        {"timeout", {"--timeout", "1"}, {"sleep", "30"}, "timed out"},
        {"output limit",
         {"--output-limit", "64k"},
         {"sh", "-c", "yes flood"},
         "--output-limit 64k"},
        {"cpu time",
         {"--cpu-time", "1"},
         {"sh", "-c", "trap '' XCPU; while :; do :; done"},
         "--cpu-time 1"},
    };
    for (const Bound& bound : bounds) {
        for (bool quiet : {false, true}) {
            INFO(bound.what << (quiet ? " --quiet" : ""));
            Sandbox sandbox(mode);
            for (size_t i = 0; i + 1 < bound.options.size(); i += 2)
                sandbox.option(bound.options[i], bound.options[i + 1]);
            if (quiet) sandbox.option("--quiet");
            const Completed done = sandbox.run(bound.command);
            INFO(done.describe());
            const std::vector<std::string> lines = stockadeLines(done.err);
            REQUIRE(lines.size() == 1);
            CHECK(lines[0].find(bound.said) != std::string::npos);
            CHECK(lines[0].find("raise --") != std::string::npos);
        }
    }
    SECTION("memory: the OOM kill, or the rlimit that held it instead") {
        Sandbox sandbox(mode);
        sandbox.option("--memory", "64m").option("--quiet");
        const Completed done = sandbox.run({"python3", "-c", "b = bytearray(512 << 20)"});
        INFO(done.describe());
        const nlohmann::json result = sandbox.result();
        const std::vector<std::string> lines = stockadeLines(done.err);
        REQUIRE(lines.size() == 1);
        if (result["enforced"]["memory"] == "rlimit")
            CHECK(lines[0].find("--memory 64m was held by RLIMIT_DATA") != std::string::npos);
        else
            CHECK(lines[0].find("killed by the memory limit: --memory 64m") != std::string::npos);
    }
    SECTION("pids: the cgroup's refusal, or the rlimit that held it instead") {
        TokenReaper reaper(randomToken("pids"));
        Sandbox sandbox(mode);
        sandbox.option("--pids", "16").option("--quiet");
        const Completed done = sandbox.run(
            {"sh", "-c", "for i in $(seq 40); do sleep 30 & done; wait # " + reaper.token()});
        INFO(done.describe());
        const nlohmann::json result = sandbox.result();
        const std::vector<std::string> lines = stockadeLines(done.err);
        REQUIRE(!lines.empty());
        if (result["enforced"]["pids"] == "rlimit")
            CHECK(lines.back().find("--pids 16 was held by RLIMIT_NPROC") != std::string::npos);
        else if (result["reason"] == "pids_limit")
            CHECK(lines[0].find("the process limit stopped the command: --pids 16") !=
                  std::string::npos);
    }
}

// Issue 23: a record that cannot be written is known before the run.
TEST_CASE("CLI: --result the caller cannot write is refused before anything runs",
          "[cli][result]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const std::string ran = sandbox.scratch().at("worktree/ran");
    Launch launch = sandbox.launch({});
    launch.args = {"run", "--worktree", sandbox.worktree(), "--result", "/proc/r.json",
                   "--",  "touch",      "/repo/ran"};
    const Completed done = runStockade(launch);
    INFO(done.describe());
    CHECK(done.exitCode == 125);
    CHECK(done.err.find("/proc") != std::string::npos);
    CHECK_FALSE(pathExists(ran));
}

TEST_CASE("CLI: oracle refuses --result by name, and its help is its own", "[cli][oracle]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const std::string held = sandbox.scratch().makeDir("held");
    const Completed refused =
        stockadeAs(mode, {"oracle", "--worktree", sandbox.worktree(), "--held", held, "--result",
                          sandbox.scratch().at("r.json"), "--", "true"});
    INFO(refused.describe());
    CHECK(refused.exitCode == 125);
    CHECK(refused.err.find("--verdict") != std::string::npos);
    CHECK_FALSE(pathExists(sandbox.scratch().at("r.json")));
    const Completed help = stockadeAs(mode, {"oracle", "--help"});
    CHECK(help.exitCode == 0);
    CHECK(help.out.find("Usage: stockade oracle") != std::string::npos);
    CHECK(help.out.find("Usage: stockade run") == std::string::npos);
    CHECK(help.out.find("--result") == std::string::npos);
    CHECK(help.out.find("--verdict") != std::string::npos);
}

// Issue 23: a detached server that never became ready said nothing on the
// terminal; the cause was only in `stockade logs`.
TEST_CASE("CLI: serve --detach says on stderr why a server never became ready", "[cli][serve]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const uint16_t port = freeLoopbackPort();
    struct Failure {
        std::string what;
        std::vector<std::string> command;
        std::vector<std::string> options;
        int exitCode;
        std::string said;
    };
    const std::string p = std::to_string(port);
    const std::string other = std::to_string(freeLoopbackPort());
    const std::vector<Failure> failures = {
        {"it crashes",
         {"sh", "-c", "echo boom >&2; exit 3"},
         {},
         3,
         "exited with code 3 before it was ready"},
        {"it never listens",
         probeCommand({"sleep-with-token", randomToken("mute"), "30"}),
         {"--ready-timeout", "1"},
         124,
         "nothing listened on 127.0.0.1:" + p},
        // Inside it may listen where it likes: where nothing probes.
        {"it listens on another port",
         {"python3", "-m", "http.server", "--bind", "127.0.0.1", other},
         {"--ready-timeout", "2"},
         124,
         "must listen on the port given to --port"},
        {"its ready pattern never matches",
         {"python3", "-m", "http.server", "--bind", "127.0.0.1", p},
         {"--ready-timeout", "2", "--ready-pattern", "never-printed-words"},
         124,
         "did not match --ready-pattern"},
    };
    for (const Failure& f : failures) {
        INFO(f.what);
        const std::string name = randomToken("unready");
        StopAtEnd stop{mode, name};
        const Completed done = serveDetached(sandbox, name, port, f.command, f.options);
        INFO(done.describe());
        CHECK(done.out.empty());
        const std::vector<std::string> lines = stockadeLines(done.err);
        REQUIRE(lines.size() == 1);
        CHECK(done.exitCode == f.exitCode);
        CHECK(lines[0].find(f.said) != std::string::npos);
        CHECK(lines[0].find("stockade logs " + name) != std::string::npos);
    }
}

// Issue 23: the state directory followed $XDG_RUNTIME_DIR alone, so a shell
// of the same user with another environment could neither see nor stop its
// server, and `stop` said "not running", exit 0.
TEST_CASE("CLI: a shell with another XDG_RUNTIME_DIR sees and stops the same user's server",
          "[cli][serve]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    ScratchDir runtime(scratchRoot(), "xdg-other-shell", invokingUid(mode), invokingGid(mode));
    ::chmod(runtime.path().c_str(), 0700);
    const uint16_t port = freeLoopbackPort();
    const std::string name = randomToken("othershell");
    StopAtEnd stop{mode, name};
    const Completed served = serveDetached(
        sandbox, name, port,
        {"python3", "-m", "http.server", "--bind", "127.0.0.1", std::to_string(port)}, {});
    INFO(served.describe());
    REQUIRE(served.exitCode == 0);
    const std::vector<std::string> other = {"PATH=/usr/bin:/bin",
                                            "XDG_RUNTIME_DIR=" + runtime.path()};
    const Completed ps = stockadeAs(mode, {"ps", "--json"}, other);
    INFO(ps.describe());
    CHECK(ps.out.find("\"" + name + "\"") != std::string::npos);
    const Completed stopped = stockadeAs(mode, {"stop", name}, other);
    INFO(stopped.describe());
    CHECK(stopped.exitCode == 0);
    CHECK(stopped.out == "stopped " + name + "\n");
    const Completed after = stockadeAs(mode, {"ps", "--json"});
    CHECK(after.out.find("\"" + name + "\"") == std::string::npos);
}

// Issue 23, the other way round: a server started from a shell with its own
// XDG_RUNTIME_DIR was invisible to a shell with another one or none, which
// guessed only its own candidates; the register in /tmp/stockade-UID names
// it. Where even that cannot be seen (a shell with a private /tmp), `stop`
// says the server runs and where to stop it, exit 1, not "not running".
TEST_CASE(
    "CLI: a server started under its own XDG_RUNTIME_DIR is seen and stopped from a "
    "shell with another or none",
    "[cli][serve]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    ScratchDir first(scratchRoot(), "xdg-first-shell", invokingUid(mode), invokingGid(mode));
    ScratchDir second(scratchRoot(), "xdg-second-shell", invokingUid(mode), invokingGid(mode));
    ::chmod(first.path().c_str(), 0700);
    ::chmod(second.path().c_str(), 0700);
    const std::vector<std::string> in_first = {"PATH=/usr/bin:/bin",
                                               "XDG_RUNTIME_DIR=" + first.path()};
    const std::vector<std::vector<std::string>> shells = {
        {"PATH=/usr/bin:/bin", "XDG_RUNTIME_DIR=" + second.path()}, {"PATH=/usr/bin:/bin"}};
    for (const std::vector<std::string>& shell : shells) {
        INFO("the other shell: " << (shell.size() > 1 ? shell[1] : "no XDG_RUNTIME_DIR"));
        const uint16_t port = freeLoopbackPort();
        const std::string name = randomToken("firstshell");
        StopAtEnd stop{mode, name};
        const Completed served = serveDetached(
            sandbox, name, port,
            {"python3", "-m", "http.server", "--bind", "127.0.0.1", std::to_string(port)}, {},
            in_first);
        INFO(served.describe());
        REQUIRE(served.exitCode == 0);
        const Completed ps = stockadeAs(mode, {"ps", "--json"}, shell);
        INFO(ps.describe());
        CHECK(ps.out.find("\"" + name + "\"") != std::string::npos);
        const Completed logs = stockadeAs(mode, {"logs", name}, shell);
        CHECK(logs.exitCode == 0);
        const Completed stopped = stockadeAs(mode, {"stop", name}, shell);
        INFO(stopped.describe());
        CHECK(stopped.exitCode == 0);
        CHECK(stopped.out == "stopped " + name + "\n");
        const Completed after = stockadeAs(mode, {"ps", "--json"}, in_first);
        CHECK(after.out.find("\"" + name + "\"") == std::string::npos);
        stockadeAs(mode, {"stop", name}, in_first);
    }
    if (mode == Mode::Root) return;  // root's state is /run/stockade, whatever the shell

    // Unseen: the register's entry for the first shell's directory removed,
    // as a shell with a private /tmp would see it.
    const uint16_t port = freeLoopbackPort();
    const std::string name = randomToken("unseen");
    StopAtEnd stop{mode, name};
    const Completed served =
        serveDetached(sandbox, name, port,
                      {"python3", "-m", "http.server", "--bind", "127.0.0.1", std::to_string(port)},
                      {}, in_first);
    INFO(served.describe());
    REQUIRE(served.exitCode == 0);
    const nlohmann::json ready = nlohmann::json::parse(served.out, nullptr, false);
    const std::string reg = "/tmp/stockade-" + std::to_string(kNobody) + "/elsewhere";
    int removed = 0;
    if (DIR* d = ::opendir(reg.c_str())) {
        while (dirent* e = ::readdir(d)) {
            const std::string link = reg + "/" + e->d_name;
            char target[4096];
            const ssize_t n = ::readlink(link.c_str(), target, sizeof(target) - 1);
            if (n > 0 && std::string(target, static_cast<size_t>(n)) == first.path() + "/stockade")
                removed += ::unlink(link.c_str()) == 0;
        }
        ::closedir(d);
    }
    REQUIRE(removed == 1);
    const Completed unseen = stockadeAs(mode, {"stop", name}, shells[1]);
    INFO(unseen.describe());
    CHECK(unseen.exitCode == 1);
    CHECK(unseen.out.find("not running") == std::string::npos);
    const std::vector<std::string> said = stockadeLines(unseen.err);
    REQUIRE(said.size() == 1);
    CHECK(said[0].find("runs (supervisor pid " + std::to_string(ready.value("pid", 0)) + ")") !=
          std::string::npos);
    const Completed stopped = stockadeAs(mode, {"stop", name}, in_first);
    CHECK(stopped.out == "stopped " + name + "\n");
}

// Issue 23: a record whose final write fails (here a full filesystem, which
// the check before the run cannot foresee) is no record and a non-zero exit.
TEST_CASE("CLI: a --result whose final write fails leaves no record and exits non-zero",
          "[cli][result]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const std::string full = sandbox.scratch().makeDir("full", 0777);
    REQUIRE(::mount("tmpfs", full.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=8k,mode=0777") ==
            0);
    struct Unmount {
        std::string point;
        ~Unmount() { ::umount2(point.c_str(), MNT_DETACH); }
    } unmount{full};
    {
        // Fill it: the record's data then has nowhere to go.
        std::ofstream filler(full + "/filler", std::ios::binary);
        const std::string block(4096, 'x');
        for (int i = 0; i < 64 && filler; ++i) filler << block << std::flush;
    }
    Launch launch = sandbox.launch({});
    launch.args = {"run", "--result", full + "/r.json", "--", "true"};
    const Completed done = runStockade(launch);
    INFO(done.describe());
    CHECK(done.exitCode == 1);
    const std::vector<std::string> lines = stockadeLines(done.err);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find("cannot write the result") != std::string::npos);
    CHECK_FALSE(pathExists(full + "/r.json"));
}

// Issue 23: a port another program holds was waited on for 5 s and then
// reported as a bare EADDRINUSE.
TEST_CASE("CLI: serve on a port another program holds says so, and how to find it",
          "[cli][serve]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    stockade::UniqueFd holder(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    REQUIRE(::bind(holder.get(), reinterpret_cast<sockaddr*>(&addr), len) == 0);
    REQUIRE(::listen(holder.get(), 1) == 0);
    REQUIRE(::getsockname(holder.get(), reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    const uint16_t port = ntohs(addr.sin_port);
    const std::string name = randomToken("busy");
    StopAtEnd stop{mode, name};
    const Completed done = serveDetached(sandbox, name, port, {"true"}, {});
    INFO(done.describe());
    CHECK(done.exitCode == 125);
    const std::vector<std::string> lines = stockadeLines(done.err);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find("port " + std::to_string(port) + " is in use") != std::string::npos);
    CHECK(lines[0].find("ss -ltnp") != std::string::npos);
}

// Issue 23: `check` could not be told what the run will --require, so a CI
// step passed `check` and then the run was refused.
TEST_CASE("CLI: check --require judges the requirements as run --require does", "[cli][check]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    for (const std::string required : {"memory,pids", "seccomp", "memory"}) {
        INFO("--require " << required);
        const Completed check = stockadeAs(mode, {"check", "--require", required});
        Launch launch = sandbox.launch({});
        launch.args = {"run", "--require", required, "--", "true"};
        const Completed run = runStockade(launch);
        INFO(check.describe() << run.describe());
        REQUIRE((check.exitCode == 0 || check.exitCode == 1));
        CHECK((check.exitCode == 0) == (run.exitCode == 0));
        if (check.exitCode == 1) CHECK(run.exitCode == 125);
    }
    const Completed unknown = stockadeAs(mode, {"check", "--require", "gpu"});
    CHECK(unknown.exitCode == 125);
    CHECK(unknown.err.find("\"gpu\"") != std::string::npos);
}
