// The host side of the integration tests: runs the real `stockade` binary as
// root or as an unprivileged user, with the probe mounted at /probe, and looks
// at the host to see what the sandbox left behind.
//
// Every test case runs once per Mode:
//
//   TEST_CASE("G2: ...", "[G2]") {
//       STOCKADE_EACH_MODE(mode);
//       Sandbox sandbox(mode);
//       const ProbeRun run = sandbox.probe({"read-file", "/etc/shadow"});
//       CHECK(run.result() != "ok");
//   }
#pragma once

#include <sys/types.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/unique_fd.h"

namespace stockade::itest {

// Who runs stockade: root, or uid/gid 65534 with no supplementary groups.
enum class Mode { Root, Rootless };

inline constexpr uid_t kNobody = 65534;
inline constexpr std::string_view kProbeInside = "/probe/stockade-probe";
// How long one run may take before the harness kills stockade and fails the
// test: a normal run takes milliseconds.
inline constexpr std::chrono::seconds kRunTimeout{20};

std::string modeName(Mode mode);
uid_t invokingUid(Mode mode);
gid_t invokingGid(Mode mode);

// The binary under test: STOCKADE_BINARY, or $STOCKADE_ITEST_BINARY where set
// (to check that the suite fails against a sandbox that isolates nothing).
std::string stockadeBinary();

// True when this mode can be tested here. Otherwise it has already reported
// why: a FAIL when CI=true (a test of isolation that cannot run is a failed
// test there), else a loud WARN; the caller then returns.
bool modeUsable(Mode mode);

// Runs the enclosing test case once as root and once rootless; returns from it
// early where the mode cannot be tested (see modeUsable).
#define STOCKADE_EACH_MODE(mode)                                                    \
    const ::stockade::itest::Mode mode =                                            \
        GENERATE(::stockade::itest::Mode::Root, ::stockade::itest::Mode::Rootless); \
    INFO("mode: " << ::stockade::itest::modeName(mode));                            \
    if (!::stockade::itest::modeUsable(mode)) return

// Matches a string equal to one of a few answers: CHECK_THAT(errno, IsOneOf({"EROFS", "EACCES"})).
class OneOfMatcher : public Catch::MatcherBase<std::string> {
  public:
    explicit OneOfMatcher(std::vector<std::string> options) : options_(std::move(options)) {}
    bool match(const std::string& value) const override;
    std::string describe() const override;

  private:
    std::vector<std::string> options_;
};
inline OneOfMatcher IsOneOf(std::vector<std::string> options) {
    return OneOfMatcher(std::move(options));
}

// A fresh random word, for canaries and process tokens.
std::string randomToken(std::string_view prefix);

// A directory removed with all its contents when it goes out of scope, and
// everything in it created owned by `owner`.
class ScratchDir {
  public:
    ScratchDir(std::string_view parent, std::string_view label, uid_t owner, gid_t group);
    ~ScratchDir();
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;

    const std::string& path() const { return path_; }
    std::string at(std::string_view relative) const { return path_ + "/" + std::string(relative); }

    // mkdir -p under path(); returns the absolute path.
    std::string makeDir(std::string_view relative, mode_t mode = 0755) const;
    // Writes a file (parents made); returns the absolute path.
    std::string writeFile(std::string_view relative, std::string_view content,
                          mode_t mode = 0644) const;
    std::string makeSymlink(std::string_view relative, std::string_view target) const;

  private:
    std::string path_;
    uid_t owner_;
    gid_t group_;
};

// Where scratch directories go: beside the build's tests dir, outside /tmp
// (the sandbox's /tmp is a fresh tmpfs, which would hide a host path there for
// the wrong reason), traversable by 65534.
std::string scratchRoot();

// --- running stockade ----------------------------------------------------------

struct Launch {
    Mode mode = Mode::Root;
    std::vector<std::string> args;         // after the binary's name
    std::vector<std::string> environment;  // stockade's whole environment
    std::string stdinData;                 // fed through a pipe, then closed
    // Start stockade in a session of its own whose controlling terminal is a
    // fresh pty (its stdin); stdout and stderr stay pipes.
    bool controllingTerminal = false;
    // Hand stockade an fd without O_CLOEXEC (the canary file at fd 7, a pipe
    // end at fd 42), as a careless caller would.
    bool leakFds = true;
    std::string leakedFile;  // what fd 7 opens; /etc/hostname when empty
    // A caller that never drains stockade's stdout (or stderr): the pipe's
    // read end stays open, so writes neither fail nor complete once it is full.
    // A program stockade is started through, as `WRAPPER [WRAPPER ARGS] --
    // STOCKADE ARGS`
    // (the lower tier's tests: stockade-userns-blocker makes a host where no
    // user namespace can be had). Empty: stockade itself.
    std::string wrapper;
    std::vector<std::string> wrapperArgs;  // the wrapper's own, before its "--"
    bool leaveStdoutUnread = false;
    bool leaveStderrUnread = false;
    // A signal stockade starts with ignored, as under nohup (SIGHUP); the
    // three cancels are otherwise reset to their default actions.
    int ignoredSignal = 0;
};

struct Completed {
    int exitCode = -1;  // -1 when stockade itself died of a signal
    int signal = 0;     // the signal that killed stockade, 0 if it exited
    bool timedOut = false;
    std::string out;
    std::string err;

    std::string describe() const;  // for failure messages
};

// A running `stockade` process started by the harness.
class StockadeProcess {
  public:
    explicit StockadeProcess(const Launch& launch);
    ~StockadeProcess();  // SIGKILLs and reaps it if still running
    StockadeProcess(const StockadeProcess&) = delete;
    StockadeProcess& operator=(const StockadeProcess&) = delete;

    pid_t pid() const { return pid_; }
    // Reads output until stdout holds `needle` or the time is up.
    bool waitForStdout(std::string_view needle, std::chrono::milliseconds timeout);
    void signal(int sig) const;
    // Reads all output and reaps; kills stockade if it outlives `timeout`.
    Completed finish(std::chrono::milliseconds timeout);

  private:
    // Reads what is available; false once both pipes are closed.
    bool pump(int timeoutMs);

    pid_t pid_ = -1;
    bool reaped_ = false;
    UniqueFd out_;
    UniqueFd err_;
    UniqueFd ptyMaster_;
    UniqueFd unreadOut_, unreadErr_;  // held open, never read (Launch::leave*Unread)
    Completed completed_;
};

Completed runStockade(const Launch& launch, std::chrono::milliseconds timeout = kRunTimeout);

// --- probe output ----------------------------------------------------------------

// The probe's `key=value` lines.
class ProbeReport {
  public:
    ProbeReport() = default;
    explicit ProbeReport(std::string_view text);

    bool has(std::string_view key) const { return values_.count(std::string(key)) != 0; }
    // The first value for key, or "<missing>".
    std::string get(std::string_view key) const;
    std::vector<std::string> all(std::string_view key) const;
    std::string result() const { return get("result"); }

  private:
    std::map<std::string, std::vector<std::string>> values_;
};

// Bytes escaped as the probe prints them (\n, \t, \\, \0, \xNN).
std::string probeEscape(std::string_view bytes);

struct ProbeRun {
    Completed completed;
    ProbeReport report;

    std::string result() const { return report.result(); }
    int exitCode() const { return completed.exitCode; }
    std::string describe() const { return completed.describe(); }
};

// --- one sandbox set-up ----------------------------------------------------------

// A worktree (with a .git directory), a result file, a caller environment full
// of canaries, and the options to run the probe in it; all removed at the end.
class Sandbox {
  public:
    explicit Sandbox(Mode mode);

    Mode mode() const { return mode_; }
    ScratchDir& scratch() { return scratch_; }
    const std::string& worktree() const { return worktree_; }
    const std::string& resultPath() const { return resultPath_; }
    // The value of GITHUB_TOKEN and friends in stockade's environment.
    const std::string& secretCanary() const { return secretCanary_; }

    // Options placed after `run` and before the defaults.
    Sandbox& option(std::string flag);
    Sandbox& option(std::string flag, std::string value);
    // Runs without --worktree.
    Sandbox& withoutWorktree();
    Sandbox& worktreeAt(std::string path);
    // Adds KEY=VALUE to stockade's own environment.
    Sandbox& callerEnv(std::string keyValue);
    Sandbox& stdinData(std::string data);
    Sandbox& controllingTerminal();
    // The file handed to stockade as a leaked fd 7 (see Launch::leakFds).
    Sandbox& leakFile(std::string path);

    // `stockade run OPTIONS --mount PROBE_DIR:/probe [--worktree W] --result R
    //  -- COMMAND...`
    std::vector<std::string> runArgs(const std::vector<std::string>& command) const;
    Launch launch(const std::vector<std::string>& command) const;

    Completed run(const std::vector<std::string>& command,
                  std::chrono::milliseconds timeout = kRunTimeout) const;
    // Runs the probe with one action.
    ProbeRun probe(const std::vector<std::string>& actionAndArgs) const;

    // The parsed --result file; a FAIL if it is missing or not JSON.
    nlohmann::json result() const;

  private:
    Mode mode_;
    ScratchDir scratch_;
    std::string worktree_;
    std::string resultPath_;
    std::string secretCanary_;
    bool useWorktree_ = true;
    std::vector<std::string> options_;
    std::vector<std::string> callerEnv_;
    std::string stdin_;
    bool controllingTerminal_ = false;
    std::string leakedFile_;
};

std::vector<std::string> probeCommand(const std::vector<std::string>& actionAndArgs);

// A copy of the embedded held-test profile with one piece of its JSON text
// (`from`, which must be there) replaced by `to`, written to the sandbox's
// scratch directory as profile.json; returns its path.
std::string heldTestProfileWith(Sandbox& sandbox, const std::string& from, const std::string& to);

// `stockade oracle` of `command` with the sandbox's options and worktree:
// --held a scratch directory holding t.txt, --verdict the scratch's
// verdict.json, and no --result (the oracle refuses run's: its verdict
// holds the result).
Launch oracleLaunch(Sandbox& sandbox, const std::vector<std::string>& command);

// --- the host's view ---------------------------------------------------------------

// Host pids whose argv holds `token` as a whole argument and, when
// probeOnly, whose argv[0] is the probe (not stockade, whose own argv
// repeats the command).
std::vector<pid_t> findProcessesWithToken(std::string_view token, bool probeOnly);

// Waits until no host process holds the token; false if some still do.
bool waitUntilNoProcessHas(std::string_view token, std::chrono::milliseconds timeout);

// SIGKILLs every host process holding the token (cleanup after a broken
// sandbox); those are processes this test started.
void killProcessesWithToken(std::string_view token);

// Kills whatever still carries the token when the test ends, pass or fail.
class TokenReaper {
  public:
    explicit TokenReaper(std::string token) : token_(std::move(token)) {}
    ~TokenReaper() { killProcessesWithToken(token_); }
    TokenReaper(const TokenReaper&) = delete;
    TokenReaper& operator=(const TokenReaper&) = delete;
    const std::string& token() const { return token_; }

  private:
    std::string token_;
};

// A `Key:` line of /proc/PID/status, value only ("65534\t65534\t65534\t65534").
std::optional<std::string> procStatusField(pid_t pid, std::string_view key);
std::string readFileOrEmpty(const std::string& path);
bool pathExists(const std::string& path);

// Waits (up to `limit`) until `pid`'s main thread sleeps in clock_nanosleep,
// as stockade does in its STOCKADE_TEST_PAUSE_* hooks (the only sleep before
// its sandbox starts). A fixed delay instead loses to a slow start (the
// sanitized build under load). False if it never did.
bool waitUntilPausedInHook(pid_t pid, std::chrono::milliseconds limit);

// A host process started by the test (a `sleep`), run as `uid`, killed and
// reaped at the end.
class HostProcess {
  public:
    HostProcess(std::vector<std::string> argv, uid_t uid, gid_t gid);
    ~HostProcess();
    HostProcess(const HostProcess&) = delete;
    HostProcess& operator=(const HostProcess&) = delete;
    pid_t pid() const { return pid_; }
    bool alive() const;

  private:
    pid_t pid_ = -1;
};

// Host state that a refused run must leave as it found it: the entries of
// /tmp, /var/tmp, /dev/shm and /run whose names mention stockade, and the
// mounts in the harness's mount namespace (but those tests make under the
// scratch root, which a test running beside may add or remove).
struct HostSnapshot {
    std::set<std::string> stockadeEntries;
    std::multiset<std::string> mounts;

    static HostSnapshot take();
};

}  // namespace stockade::itest
