// The supervisor's own process, seen from the host while it runs (issue 14,
// runtime/supervisor/supervisor_hardening.h): the supervisor of `run`, the
// detached `serve` daemon and the `oracle` keep no core limit, have left the
// caller's directory for "/", are not dumpable (their environ, which holds the
// caller's secrets, is closed to a process of the same uid), and a SIGSEGV
// leaves no core file in the caller's directory or in "/".
//
// Each is started from a directory of the test's (the worktree, as a harness
// would) with RLIMIT_CORE raised to unlimited, so that, were the hardening
// missing, the kernel (core_pattern is read, never changed) would write a
// core there: a control process started the same way shows that it does.
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "host_listener.h"

using namespace stockade::itest;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

// Starts `launch` with its cwd in `dir` and RLIMIT_CORE as high as it goes.
Launch fromDirWithCores(Launch launch, const std::string& dir) {
    launch.wrapper = "/bin/sh";
    launch.wrapperArgs = {"-c", "cd \"$1\" && ulimit -c unlimited && shift 2 && exec \"$@\"", "sh",
                          dir};
    // A sanitized build's runtime would catch the SIGSEGV and exit 1 instead
    // of dying of it as the shipped binary does; ignored by any other build.
    launch.environment.push_back("ASAN_OPTIONS=handle_segv=0");
    return launch;
}

// The soft and hard "Max core file size" of /proc/PID/limits.
std::string coreLimits(pid_t pid) {
    std::istringstream in(readFileOrEmpty("/proc/" + std::to_string(pid) + "/limits"));
    for (std::string line; std::getline(in, line);)
        if (line.rfind("Max core file size", 0) == 0) {
            std::istringstream fields(line.substr(18));
            std::string soft, hard;
            fields >> soft >> hard;
            return soft + " " + hard;
        }
    return "<missing>";
}

std::string cwdOf(pid_t pid) {
    char buf[4096];
    const std::string link = "/proc/" + std::to_string(pid) + "/cwd";
    const ssize_t n = ::readlink(link.c_str(), buf, sizeof buf);
    return n < 0 ? "<" + std::string(std::strerror(errno)) + ">"
                 : std::string(buf, static_cast<size_t>(n));
}

// What opening /proc/PID/environ gives a process of uid and gid 65534 with
// no capabilities: "ok" or the errno's text.
std::string environAsNobody(pid_t pid) {
    int pipefd[2];
    if (::pipe(pipefd) < 0) return "pipe failed";
    const pid_t child = ::fork();
    if (child == 0) {
        ::close(pipefd[0]);
        int err = 0;
        if (::setgroups(0, nullptr) < 0 || ::setgid(kNobody) < 0 || ::setuid(kNobody) < 0) {
            err = -1;
        } else {
            const std::string path = "/proc/" + std::to_string(pid) + "/environ";
            const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
            char c;
            if (fd < 0 || ::read(fd, &c, 1) < 0) err = errno;
        }
        (void)!::write(pipefd[1], &err, sizeof err);
        ::_exit(0);
    }
    ::close(pipefd[1]);
    int err = -2;
    (void)!::read(pipefd[0], &err, sizeof err);
    ::close(pipefd[0]);
    ::waitpid(child, nullptr, 0);
    if (err == 0) return "ok";
    if (err < 0) return "cannot become uid 65534";
    return std::strerror(err);
}

// The names in `dir` that a core dump would have (core, core.PID, or
// whatever core_pattern's last component starts with).
std::vector<std::string> coresIn(const std::string& dir) {
    std::vector<std::string> out;
    if (DIR* d = ::opendir(dir.c_str())) {
        while (dirent* e = ::readdir(d))
            if (std::string(e->d_name).rfind("core", 0) == 0) out.emplace_back(e->d_name);
        ::closedir(d);
    }
    return out;
}

bool waitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
        if (std::chrono::steady_clock::now() > end) return false;
        std::this_thread::sleep_for(20ms);
    }
    return true;
}

bool gone(pid_t pid) {
    if (::kill(pid, 0) < 0 && errno == ESRCH) return true;
    const std::string stat = readFileOrEmpty("/proc/" + std::to_string(pid) + "/stat");
    const size_t paren = stat.rfind(')');
    return paren != std::string::npos && paren + 2 < stat.size() &&
           (stat[paren + 2] == 'Z' || stat[paren + 2] == 'X');
}

// The host's core_pattern names a file (not a pipe to a handler), so a
// dumpable process's core lands in its cwd: what makes the "no core" checks
// able to fail. A pipe handler would keep cores out of every directory and
// prove nothing; CI's runners and this host write files.
bool coresLandInCwd() {
    const std::string pattern = readFileOrEmpty("/proc/sys/kernel/core_pattern");
    return !pattern.empty() && pattern[0] != '|' && pattern[0] != '/';
}

// The checks on a running supervisor.
void checkHardened(pid_t pid) {
    INFO("supervisor pid " << pid);
    CHECK(coreLimits(pid) == "0 0");
    CHECK(cwdOf(pid) == "/");
    // As root the supervisor is root's anyway; rootless it is uid 65534's
    // own, and only non-dumpability closes its environ.
    CHECK(environAsNobody(pid) == std::string(std::strerror(EACCES)));
}

// Starts `launch` (a supervisor whose sandbox sleeps with `token`) from the
// worktree with cores allowed, checks it hardened while the sandbox runs,
// then kills it with SIGSEGV: it must die of it and leave no core in the
// worktree or /, and its sandbox must not outlive it.
void checkHardenedUntilSegv(const Launch& launch, Sandbox& sandbox, const std::string& token) {
    StockadeProcess process(fromDirWithCores(launch, sandbox.worktree()));
    REQUIRE(waitFor([&] { return !findProcessesWithToken(token, true).empty(); }, 30s));
    checkHardened(process.pid());
    process.signal(SIGSEGV);
    const Completed done = process.finish(10s);
    INFO(done.describe());
    CHECK(done.signal == SIGSEGV);
    CHECK(coresIn(sandbox.worktree()).empty());
    CHECK(coresIn("/").empty());
    CHECK(waitUntilNoProcessHas(token, 10s));
}

}  // namespace

TEST_CASE("hardening: a dumpable process started the same way leaves a core (the control)",
          "[supervisor][G2]") {
    STOCKADE_EACH_MODE(mode);
    if (!coresLandInCwd()) {
        FAIL_CHECK(
            "core_pattern is a handler or an absolute path here: the hardening's "
            "no-core checks would prove nothing");
        return;
    }
    Sandbox sandbox(mode);
    Launch launch = sandbox.launch({"/bin/true"});
    launch.wrapper = "/bin/sh";
    launch.wrapperArgs = {"-c", "cd \"$1\" && ulimit -c unlimited && exec /bin/sleep 30", "sh",
                          sandbox.worktree()};
    StockadeProcess control(launch);
    REQUIRE(waitFor([&] { return cwdOf(control.pid()) == sandbox.worktree(); }, 5s));
    // A process of the same uid reads a dumpable one's environ.
    CHECK(environAsNobody(control.pid()) ==
          (mode == Mode::Rootless ? "ok" : std::string(std::strerror(EACCES))));
    control.signal(SIGSEGV);
    const Completed done = control.finish(10s);
    CHECK(done.signal == SIGSEGV);
    const std::vector<std::string> cores = coresIn(sandbox.worktree());
    CHECK(cores.size() == 1);
    for (const std::string& core : cores) ::unlink((sandbox.worktree() + "/" + core).c_str());
}

TEST_CASE("hardening: run's supervisor has no core limit, cwd /, a closed environ, no core",
          "[supervisor][G2]") {
    STOCKADE_EACH_MODE(mode);
    REQUIRE(coresLandInCwd());
    REQUIRE(coresIn("/").empty());
    Sandbox sandbox(mode);
    TokenReaper reaper(randomToken("hardened-run"));
    checkHardenedUntilSegv(sandbox.launch(probeCommand({"sleep-with-token", reaper.token(), "60"})),
                           sandbox, reaper.token());
}

TEST_CASE("hardening: the oracle has no core limit, cwd /, a closed environ, no core",
          "[supervisor][oracle][G2]") {
    STOCKADE_EACH_MODE(mode);
    REQUIRE(coresLandInCwd());
    REQUIRE(coresIn("/").empty());
    Sandbox sandbox(mode);
    TokenReaper reaper(randomToken("hardened-oracle"));
    checkHardenedUntilSegv(
        oracleLaunch(sandbox, probeCommand({"sleep-with-token", reaper.token(), "60"})), sandbox,
        reaper.token());
}

TEST_CASE("hardening: serve's detached daemon has no core limit, cwd /, a closed environ, no core",
          "[supervisor][serve][G2]") {
    STOCKADE_EACH_MODE(mode);
    REQUIRE(coresLandInCwd());
    REQUIRE(coresIn("/").empty());
    Sandbox sandbox(mode);
    const std::string name = randomToken("itest-hardened");
    const uint16_t port = freeLoopbackPort();
    Launch launch = sandbox.launch({"python3", "-m", "http.server", "--bind", "127.0.0.1",
                                    std::to_string(port), "--directory", "/repo"});
    launch.args[0] = "serve";
    const std::vector<std::string> options = {
        "--detach", "--name", name, "--port", std::to_string(port), "--net-backend", "userspace"};
    launch.args.insert(launch.args.begin() + 1, options.begin(), options.end());
    const Completed started = runStockade(fromDirWithCores(launch, sandbox.worktree()), 60s);
    INFO(started.describe());
    const json ready = json::parse(started.out.substr(0, started.out.find('\n')), nullptr, false);
    REQUIRE(ready.is_object());
    const pid_t daemon = ready.value("pid", 0);
    REQUIRE(daemon > 0);
    checkHardened(daemon);
    REQUIRE(::kill(daemon, SIGSEGV) == 0);
    CHECK(waitFor([&] { return gone(daemon); }, 10s));
    CHECK(coresIn(sandbox.worktree()).empty());
    CHECK(coresIn("/").empty());
    // The daemon left its log (kept for `stockade logs`) and a stale lock.
    const std::string state =
        mode == Mode::Root ? "/run/stockade" : "/tmp/stockade-" + std::to_string(kNobody);
    for (const char* suffix : {".log", ".log.1", ".lock", ".json"})
        ::unlink((state + "/" + name + suffix).c_str());
}
