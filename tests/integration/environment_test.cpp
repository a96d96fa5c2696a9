// G7: environment, file descriptors, session and terminal.
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>

#include "harness.h"

using namespace stockade::itest;
using namespace std::chrono_literals;

namespace {

std::map<std::string, std::string> environmentOf(const ProbeRun& run) {
    std::map<std::string, std::string> env;
    for (const std::string& entry : run.report.all("env")) {
        const size_t eq = entry.find('=');
        env[entry.substr(0, eq)] = eq == std::string::npos ? "" : entry.substr(eq + 1);
    }
    return env;
}

// Exit 125 and one line on stderr, `stockade: ...`, that names `subject`.
void checkRefusal(const Completed& done, const std::string& subject) {
    INFO(done.describe());
    CHECK(done.exitCode == 125);
    CHECK(done.err.rfind("stockade: ", 0) == 0);
    CHECK(done.err.find(subject) != std::string::npos);
    CHECK(std::count(done.err.begin(), done.err.end(), '\n') == 1);
}

}  // namespace

TEST_CASE("G7: the environment is the allowlist plus what --env adds", "[G7][env]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.callerEnv("STOCKADE_ITEST_PLAIN=copied-from-caller")
        .option("--env", "FOO=bar")
        .option("--env", "STOCKADE_ITEST_PLAIN");
    const ProbeRun run = sandbox.probe({"env"});
    INFO(run.describe());
    REQUIRE(run.exitCode() == 0);
    std::map<std::string, std::string> env = environmentOf(run);
    const std::set<std::string> allowed = {"PATH", "HOME", "LANG", "FOO", "STOCKADE_ITEST_PLAIN"};
    for (const auto& [key, value] : env) {
        INFO(key << "=" << value);
        CHECK(allowed.count(key) == 1);
        CHECK(value.find(sandbox.secretCanary()) == std::string::npos);
    }
    CHECK(env.count("PATH") == 1);
    CHECK(env.count("TERM") == 0);  // not interactive: no terminal
    CHECK(env["HOME"] == "/tmp");
    CHECK(env["FOO"] == "bar");
    CHECK(env["STOCKADE_ITEST_PLAIN"] == "copied-from-caller");
}

TEST_CASE("G7: PID 1 holds none of the caller's secrets", "[G7][env][init]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    for (const std::string path : {"/proc/1/environ", "/proc/1/cmdline", "/proc/self/environ"}) {
        const ProbeRun run = sandbox.probe({"read-file", path});
        INFO(path << "\n" << run.describe());
        REQUIRE(run.exitCode() == 0);
        // Init is non-dumpable, so EACCES is the usual answer for environ.
        CHECK_THAT(run.result(), IsOneOf({"ok", "EACCES"}));
        CHECK(run.completed.out.find(sandbox.secretCanary()) == std::string::npos);
        CHECK(run.completed.out.find("GITHUB_TOKEN") == std::string::npos);
    }

    // Init's environ is closed to the command; the host can read it.
    TokenReaper reaper(randomToken("init-env"));
    StockadeProcess stockade(
        sandbox.launch(probeCommand({"sleep-with-token", reaper.token(), "60"})));
    REQUIRE(stockade.waitForStdout("ready=" + reaper.token(), 20s));
    const std::vector<pid_t> found = findProcessesWithToken(reaper.token(), true);
    REQUIRE(found.size() == 1);
    const std::string init = procStatusField(found.front(), "PPid").value_or("0");
    REQUIRE(init != "0");
    for (const std::string& file : {"/proc/" + init + "/environ", "/proc/" + init + "/cmdline",
                                    "/proc/" + std::to_string(found.front()) + "/environ"}) {
        const std::string content = readFileOrEmpty(file);
        INFO(file << ": " << probeEscape(content));
        CHECK(content.find(sandbox.secretCanary()) == std::string::npos);
        CHECK(content.find("GITHUB_TOKEN") == std::string::npos);
    }
    stockade.signal(SIGKILL);
}

TEST_CASE("G7: --env refuses a secret-shaped name unless --allow-secret names it",
          "[G7][env][secret]") {
    STOCKADE_EACH_MODE(mode);
    const std::string name =
        GENERATE(as<std::string>{}, "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "SSH_AUTH_SOCK",
                 "MY_API_KEY", "DB_PASSWORD", "ANTHROPIC_API_KEY", "SESSION_COOKIE");
    INFO("name: " << name);
    const std::string value = "canary-value-of-" + name;

    Sandbox refused(mode);
    refused.callerEnv(name + "=" + value).option("--env", name);
    const ProbeRun blocked = refused.probe({"env"});
    checkRefusal(blocked.completed, name);
    CHECK(blocked.completed.out.find(value) == std::string::npos);

    Sandbox allowed(mode);
    allowed.callerEnv(name + "=" + value).option("--env", name).option("--allow-secret", name);
    const ProbeRun run = allowed.probe({"env"});
    INFO(run.describe());
    REQUIRE(run.exitCode() == 0);
    CHECK(environmentOf(run)[name] == value);
}

TEST_CASE("G7: only fds 0, 1 and 2 cross in, and stdin is /dev/null", "[G7][fds]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    // The harness hands stockade this file as fd 7 and a pipe as fds 42/43,
    // all without O_CLOEXEC, and a pipe with data as its stdin.
    const std::string leaked =
        sandbox.scratch().writeFile("leaked-secret", sandbox.secretCanary(), 0644);
    sandbox.leakFile(leaked);

    const ProbeRun fds = sandbox.probe({"fds"});
    INFO(fds.describe());
    REQUIRE(fds.result() == "ok");
    std::set<std::string> numbers;
    for (const std::string& fd : fds.report.all("fd")) {
        numbers.insert(fd.substr(0, fd.find(':')));
        CHECK(fd.find("leaked-secret") == std::string::npos);
    }
    CHECK(numbers == std::set<std::string>{"0", "1", "2"});
    CHECK(fds.report.get("fd") == "0:/dev/null");

    const ProbeRun in = sandbox.probe({"read-stdin"});
    INFO(in.describe());
    CHECK(in.result() == "ok");
    CHECK(in.report.get("bytes") == "0");

    // From the host: neither the command nor its init holds the leaked file.
    TokenReaper reaper(randomToken("fds"));
    StockadeProcess stockade(
        sandbox.launch(probeCommand({"sleep-with-token", reaper.token(), "60"})));
    REQUIRE(stockade.waitForStdout("ready=" + reaper.token(), 20s));
    const std::vector<pid_t> found = findProcessesWithToken(reaper.token(), true);
    REQUIRE(found.size() == 1);
    const std::string ppid = procStatusField(found.front(), "PPid").value_or("0");
    for (const std::string& pid : {std::to_string(found.front()), ppid}) {
        std::error_code ec;
        for (const auto& entry : std::filesystem::directory_iterator("/proc/" + pid + "/fd", ec)) {
            const std::string target = std::filesystem::read_symlink(entry.path(), ec).string();
            INFO("pid " << pid << " fd " << entry.path().filename() << " -> " << target);
            CHECK(target != leaked);
        }
    }
    stockade.signal(SIGKILL);
}

TEST_CASE("G7: the command runs in a new session with no controlling terminal",
          "[G7][session][tty]") {
    STOCKADE_EACH_MODE(mode);
    // stockade itself is started from a terminal: the sandbox must not get it.
    Sandbox sandbox(mode);
    sandbox.controllingTerminal();
    const ProbeRun session = sandbox.probe({"session"});
    INFO(session.describe());
    REQUIRE(session.exitCode() == 0);
    CHECK(session.report.get("tty_nr") == "0");
    // A session whose leader is outside the PID namespace reads as 0.
    CHECK(session.report.get("sid") != "0");
    const ProbeRun tty = sandbox.probe({"open-tty"});
    INFO(tty.describe());
    CHECK_THAT(tty.result(), IsOneOf({"ENXIO", "ENOENT"}));

    SECTION("even with the terminal as its stdin") {
        Sandbox inherit(mode);
        inherit.controllingTerminal().option("--stdin", "inherit");
        const ProbeRun steal = inherit.probe({"acquire-ctty", "0"});
        INFO(steal.describe());
        REQUIRE(steal.exitCode() == 0);
        CHECK(steal.result() == "EPERM");
        CHECK(steal.report.get("tty_nr") == "0");
    }
}
