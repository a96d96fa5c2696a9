// G6: the PID namespace, stockade's init, and teardown.
#include <glob.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "harness.h"

using namespace stockade::itest;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> sleepWithToken(const std::string& token, int seconds = 60) {
    return probeCommand({"sleep-with-token", token, std::to_string(seconds)});
}

}  // namespace

TEST_CASE("G6: host processes are invisible and cannot be signalled", "[G6][pid]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    // Runs as 65534, the sandbox's own uid in most set-ups, so that only the
    // PID namespace stands between the sandbox and it.
    HostProcess sleeper({"/bin/sleep", "300"}, kNobody, kNobody);
    const std::string hostPid = std::to_string(sleeper.pid());

    const ProbeRun killRun = sandbox.probe({"kill", hostPid, std::to_string(SIGTERM)});
    INFO(killRun.describe());
    REQUIRE(killRun.exitCode() == 0);
    CHECK(killRun.result() == "ESRCH");
    const ProbeRun ptraceRun = sandbox.probe({"ptrace", hostPid});
    INFO(ptraceRun.describe());
    CHECK_THAT(ptraceRun.result(), IsOneOf({"ESRCH", "EPERM"}));
    CHECK(sleeper.alive());

    const ProbeRun pids = sandbox.probe({"pids"});
    INFO(pids.describe());
    REQUIRE(pids.result() == "ok");
    const std::vector<std::string> seen = pids.report.all("pid");
    const std::string self = pids.report.get("self");
    CHECK(std::count(seen.begin(), seen.end(), hostPid) == 0);
    CHECK(std::count(seen.begin(), seen.end(), std::to_string(::getpid())) == 0);
    // Nothing but stockade's init and the probe itself.
    std::vector<std::string> sorted = seen;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::string> expected = {"1", self};
    std::sort(expected.begin(), expected.end());
    CHECK(sorted == expected);
}

TEST_CASE("G6: the command is not PID 1 but a child of stockade's init, which is",
          "[G6][pid][init]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const ProbeRun session = sandbox.probe({"session"});
    INFO(session.describe());
    REQUIRE(session.exitCode() == 0);
    CHECK(session.report.get("pid") != "1");
    CHECK(session.report.get("ppid") == "1");
    const ProbeRun comm = sandbox.probe({"read-file", "/proc/1/comm"});
    INFO(comm.describe());
    CHECK(comm.result() == "ok");
    CHECK(comm.report.get("content").find("stockade-probe") == std::string::npos);
    // Init is non-dumpable: its environment, memory and fds are closed to
    // the command even though they share a uid.
    const ProbeRun environ = sandbox.probe({"read-file", "/proc/1/environ"});
    INFO(environ.describe());
    CHECK(environ.result() == "EACCES");
    const ProbeRun fds = sandbox.probe({"list-dir", "/proc/1/fd"});
    INFO(fds.describe());
    CHECK(fds.result() == "EACCES");
}

TEST_CASE("G6: a setsid double-forked daemon does not outlive the run", "[G6][teardown]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    TokenReaper reaper(randomToken("daemon"));
    const ProbeRun run = sandbox.probe({"daemonize", reaper.token()});
    INFO(run.describe());
    REQUIRE(run.result() == "ok");
    CHECK(run.exitCode() == 0);
    // stockade returns only once nothing is left: no waiting here.
    const std::vector<pid_t> left = findProcessesWithToken(reaper.token(), false);
    CHECK(left.empty());
    const nlohmann::json result = sandbox.result();
    INFO(result.dump(2));
    REQUIRE(result.contains("stragglers_killed"));
    CHECK(result["stragglers_killed"].get<int>() >= 1);
    CHECK(result["status"] == "passed");
}

TEST_CASE("G6: SIGKILL to stockade takes the whole sandbox down", "[G6][teardown]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    TokenReaper reaper(randomToken("orphan"));
    StockadeProcess stockade(sandbox.launch(sleepWithToken(reaper.token())));
    REQUIRE(stockade.waitForStdout("ready=" + reaper.token(), 20s));
    const std::vector<pid_t> probes = findProcessesWithToken(reaper.token(), true);
    REQUIRE(probes.size() == 1);
    // A process of its own, not stockade having exec'd the command.
    REQUIRE(probes.front() != stockade.pid());

    stockade.signal(SIGKILL);
    const Completed done = stockade.finish(10s);
    INFO(done.describe());
    CHECK(done.signal == SIGKILL);
    CHECK(waitUntilNoProcessHas(reaper.token(), 5s));
}

TEST_CASE("G6: SIGINT, SIGTERM and SIGHUP to stockade reach the command and nothing is left",
          "[G6][init]") {
    STOCKADE_EACH_MODE(mode);
    const int sig = GENERATE(SIGTERM, SIGINT, SIGHUP);
    INFO("signal " << sig);
    Sandbox sandbox(mode);
    TokenReaper reaper(randomToken("cancelled"));
    StockadeProcess stockade(sandbox.launch(sleepWithToken(reaper.token())));
    REQUIRE(stockade.waitForStdout("ready=" + reaper.token(), 20s));

    stockade.signal(sig);
    const Completed done = stockade.finish(20s);
    INFO(done.describe());
    CHECK(done.exitCode == 128 + sig);
    CHECK(findProcessesWithToken(reaper.token(), false).empty());
    const nlohmann::json result = sandbox.result();
    INFO(result.dump(2));
    CHECK(result["signal"] == sig);
    CHECK(result["status"] == "cancelled");
}

// A cancel that comes before the supervisor's signalfd exists (here while
// stockade sleeps in its test hook after opening the worktree) is held and
// taken once it does: the run ends cancelled, with its record, the command
// never run and no cgroup leaf of its stockade left. Without the hold the
// default action ended stockade mid-plan, with no record at all.
TEST_CASE("G6: a cancel while stockade still plans the run ends it cancelled, with its record",
          "[G6][init]") {
    STOCKADE_EACH_MODE(mode);
    const int sig = GENERATE(SIGTERM, SIGINT, SIGHUP);
    INFO("signal " << sig);
    Sandbox sandbox(mode);
    const std::string worktree = sandbox.scratch().makeDir("early-cancel");
    sandbox.worktreeAt(worktree);
    sandbox.callerEnv("STOCKADE_TEST_PAUSE_AFTER_OPEN=1500");
    StockadeProcess stockade(sandbox.launch({"/bin/sh", "-c", "echo ran > /repo/ran"}));
    REQUIRE(waitUntilPausedInHook(stockade.pid(), 30s));
    const pid_t supervisor = stockade.pid();
    stockade.signal(sig);
    const Completed done = stockade.finish(30s);
    INFO(done.describe());
    CHECK(done.signal == 0);
    CHECK(done.exitCode == 128 + sig);
    CHECK_FALSE(pathExists(worktree + "/ran"));
    const nlohmann::json result = sandbox.result();
    INFO(result.dump(2));
    CHECK(result["status"] == "cancelled");
    CHECK(result["reason"] == "aborted");
    // Nothing ran to be signalled.
    CHECK(result["signal"].is_null());
    glob_t leaves{};
    const std::string pattern = "/sys/fs/cgroup/*/stockade/" + std::to_string(supervisor) + "-*";
    CHECK(glob(pattern.c_str(), 0, nullptr, &leaves) == GLOB_NOMATCH);
    globfree(&leaves);
}

// The hold waits for nothing: a second cancel while the first is held (a
// plan stuck on a FIFO or a hung filesystem would never reach the
// signalfd) ends stockade by the default action, as before the hold.
TEST_CASE("G6: a second cancel while the first is held ends stockade at once", "[G6][init]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const std::string worktree = sandbox.scratch().makeDir("held-twice");
    sandbox.worktreeAt(worktree);
    // Far longer than the harness waits below: only the second signal ends it.
    sandbox.callerEnv("STOCKADE_TEST_PAUSE_AFTER_OPEN=60000");
    StockadeProcess stockade(sandbox.launch({"/bin/sh", "-c", "echo ran > /repo/ran"}));
    REQUIRE(waitUntilPausedInHook(stockade.pid(), 30s));
    stockade.signal(SIGTERM);
    // Taken (no longer pending: a second sent before would merge with it)
    // and held, not acted on: stockade sleeps on in its hook.
    const auto taken = [&] {
        for (const char* field : {"SigPnd", "ShdPnd"}) {
            const auto pending = procStatusField(stockade.pid(), field);
            if (!pending || (std::stoull(*pending, nullptr, 16) & (1ull << (SIGTERM - 1))) != 0)
                return false;
        }
        return true;
    };
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!taken() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(10ms);
    REQUIRE(taken());
    REQUIRE(waitUntilPausedInHook(stockade.pid(), 30s));
    stockade.signal(SIGTERM);
    const Completed done = stockade.finish(30s);
    INFO(done.describe());
    CHECK_FALSE(done.timedOut);
    CHECK(done.signal == SIGTERM);
    CHECK_FALSE(pathExists(worktree + "/ran"));
}

// nohup's SIGHUP (or a background job's SIGINT) is left ignored: the run
// goes on to its own end, as the command under nohup would.
TEST_CASE("G6: a cancel the caller left ignored does not cancel the run", "[G6][init]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    TokenReaper reaper(randomToken("nohup"));
    Launch launch = sandbox.launch(sleepWithToken(reaper.token(), 2));
    launch.ignoredSignal = SIGHUP;
    StockadeProcess stockade(launch);
    REQUIRE(stockade.waitForStdout("ready=" + reaper.token(), 20s));
    stockade.signal(SIGHUP);
    const Completed done = stockade.finish(30s);
    INFO(done.describe());
    CHECK(done.exitCode == 0);
    const nlohmann::json result = sandbox.result();
    INFO(result.dump(2));
    CHECK(result["status"] == "passed");
}

TEST_CASE("G6: a daemon that keeps the output pipes open does not hold the run up",
          "[G6][teardown]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    TokenReaper reaper(randomToken("clinging"));
    const auto start = std::chrono::steady_clock::now();
    const ProbeRun run = sandbox.probe({"daemonize-keep-stdio", reaper.token()});
    const auto took = std::chrono::steady_clock::now() - start;
    INFO(run.describe());
    REQUIRE(run.result() == "ok");
    CHECK(run.exitCode() == 0);
    CHECK(took < 5s);
    CHECK(findProcessesWithToken(reaper.token(), false).empty());
    CHECK(sandbox.result()["stragglers_killed"].get<int>() >= 1);
}

TEST_CASE("G6: stockade's init reaps orphaned zombies", "[G6][init]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const ProbeRun run = sandbox.probe({"orphan-zombies", "5"});
    INFO(run.describe());
    REQUIRE(run.result() == "ok");
    CHECK(run.report.get("zombies") == "0");
}

// The supervisor sleeps in poll until something happens. Two fds hang up
// during a teardown before init's pidfd says it is over: the seccomp
// listener (once no process is left under the filter) and the sync socket
// (init closes it as it exits, before the namespaces go). Either one left in
// the poll set made poll return at once for the whole teardown, a CPU spun
// through it; counted, that is thousands of wakeups instead of a handful.
// The run has both: a refused call (so the listener is in the set) and 300
// sleepers to kill (so the teardown lasts).
TEST_CASE("G6: the supervisor sleeps through a teardown rather than spinning", "[G6][teardown]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.option("--log-level", "debug");
    std::string refused;
    for (const std::string& word : probeCommand({"unshare", "user"})) refused += word + " ";
    const Completed run =
        sandbox.run({"sh", "-c", refused + "; for i in $(seq 300); do sleep 600 & done; exit 0"});
    INFO(run.describe());
    REQUIRE(run.exitCode == 0);
    const nlohmann::json result = sandbox.result();
    INFO(result.dump(2));
    REQUIRE(result.contains("denials"));
    CHECK(result["stragglers_killed"].get<int>() >= 300);
    const std::string tag = "stockade: debug: the supervisor woke ";
    const size_t at = run.err.find(tag);
    REQUIRE(at != std::string::npos);
    const long wakeups = std::stol(run.err.substr(at + tag.size()));
    // Output, the refusal, init's messages and its end: tens at most.
    CHECK(wakeups > 0);
    CHECK(wakeups < 100);
}
