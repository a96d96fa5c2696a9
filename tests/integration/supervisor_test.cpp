// The supervisor under a hostile caller or a failing host (issue 15): a
// caller that never drains stockade's stdout or stderr stretches no bound
// (the timeout, a SIGTERM, the output limit, serve's ready timeout fire on
// time), and every setup call whose failure would weaken a guarantee turns
// that failure into a refusal that names the step and the call, with the
// errno once (STOCKADE_TEST_FAIL, base/fault_injection.h).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>
#include <algorithm>

#include <chrono>
#include <regex>
#include <string>
#include <thread>

#include "harness.h"
#include "host_listener.h"

using namespace stockade::itest;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;

// Far more output than any buffer between the command and the caller holds,
// then a command that would outlive every bound here.
const std::vector<std::string> kFlood = {"/bin/sh", "-c", "yes | head -c 100000000; sleep 100"};

size_t count(const std::string& text, const std::string& needle) {
    size_t n = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
        ++n;
    return n;
}

}  // namespace

TEST_CASE("supervisor: a caller that never reads stdout does not stretch --timeout",
          "[supervisor]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.option("--timeout", "2").option("--log-level", "debug");
    Launch launch = sandbox.launch(kFlood);
    launch.leaveStdoutUnread = true;
    StockadeProcess process(launch);
    // The harness's bound, not a measure of speed: the command alone would
    // take 100 s, and a blocking echo would never return at all.
    const Completed done = process.finish(20s);
    INFO(done.describe());
    CHECK_FALSE(done.timedOut);
    CHECK(done.exitCode == 124);
    const json result = sandbox.result();
    CHECK(result.value("status", "") == "timed_out");
    CHECK(result.value("reason", "") == "timeout");
    // Everything the command wrote was read, counted and hashed, although
    // the caller took at most a pipe's worth of it: the rest of the echo
    // was dropped, and said so.
    CHECK(result["stdout"].value("bytes", 0ull) > (1ull << 20) + 65536);
    std::smatch echo;
    REQUIRE(std::regex_search(done.err, echo,
                              std::regex("echo of the command's stdout: ([^\n]*), ([0-9]+) "
                                         "bytes dropped")));
    CHECK(echo[1] != "none");
    CHECK(std::stoull(echo[2]) > 0);
}

TEST_CASE("supervisor: a caller that never reads stdout does not delay SIGTERM's cancellation",
          "[supervisor]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    Launch launch = sandbox.launch(kFlood);
    launch.leaveStdoutUnread = true;
    StockadeProcess process(launch);
    // Long enough for the caller's pipe and the echo's buffer to fill.
    std::this_thread::sleep_for(1500ms);
    process.signal(SIGTERM);
    const Completed done = process.finish(20s);
    INFO(done.describe());
    CHECK_FALSE(done.timedOut);
    CHECK(done.exitCode == 128 + SIGTERM);
    const json result = sandbox.result();
    CHECK(result.value("status", "") == "cancelled");
}

TEST_CASE("supervisor: a caller that never reads stdout does not hold off the output limit",
          "[supervisor]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.option("--output-limit", "512k");
    Launch launch = sandbox.launch(kFlood);
    launch.leaveStdoutUnread = true;
    StockadeProcess process(launch);
    const Completed done = process.finish(20s);
    INFO(done.describe());
    CHECK_FALSE(done.timedOut);
    const json result = sandbox.result();
    CHECK(result.value("status", "") == "blocked");
    CHECK(result.value("reason", "") == "output_limit");
    CHECK(result["stdout"].value("bytes", 0ull) == 512ull * 1024);
}

TEST_CASE("supervisor: a caller that never reads the oracle's stdout still gets its timeout",
          "[supervisor][oracle]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.option("--timeout", "2");
    const std::string verdict = sandbox.scratch().at("verdict.json");
    Launch launch = oracleLaunch(sandbox, kFlood);
    launch.leaveStdoutUnread = true;  // with --verdict, the echo goes to stdout
    StockadeProcess process(launch);
    const Completed done = process.finish(20s);
    INFO(done.describe());
    CHECK_FALSE(done.timedOut);
    CHECK(done.exitCode == 124);
    const json v = json::parse(readFileOrEmpty(verdict), nullptr, false);
    CHECK(v.is_object());
    if (v.is_object()) CHECK(v.value("verdict", "") == "timeout");
}

TEST_CASE("supervisor: a serve whose stderr is never read is still torn down at --ready-timeout",
          "[supervisor][serve]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const std::string name = randomToken("itest-stall");
    Launch launch = sandbox.launch({"/bin/sh", "-c", "yes >&2"});
    launch.args[0] = "serve";
    // Nothing listens in the sandbox, so it is never ready.
    const std::vector<std::string> options = {
        "--name", name, "--port", std::to_string(freeLoopbackPort()), "--ready-timeout", "2"};
    launch.args.insert(launch.args.begin() + 1, options.begin(), options.end());
    launch.leaveStderrUnread = true;
    StockadeProcess process(launch);
    const Completed done = process.finish(20s);
    INFO(done.describe());
    CHECK_FALSE(done.timedOut);
    CHECK(done.exitCode == 124);
    CHECK(sandbox.result().value("reason", "") == "not_ready");
    const std::string state =
        mode == Mode::Root ? "/run/stockade" : "/tmp/stockade-" + std::to_string(kNobody);
    for (const char* suffix : {".log", ".log.1"}) ::unlink((state + "/" + name + suffix).c_str());
}

// Each checked setup call, made to fail: the run is refused (125, status
// error), the line on stderr names the step and the call with the errno
// once, and nothing of the command is left running.
TEST_CASE("supervisor: each checked setup call that fails refuses the run and names the call",
          "[supervisor]") {
    struct Injected {
        const char* point;
        const char* line;  // what stockade's error line must hold
        const char* err;
        // When set, `line` is the line's start and this regex its rest (the
        // fd numbers of a close_range depend on the fds the child holds).
        const char* rest = nullptr;
    };
    const Injected injected = GENERATE(
        Injected{"sigprocmask",
                 "take stockade's signals through a signalfd: sigprocmask(SIG_BLOCK): EINVAL",
                 "EINVAL"},
        Injected{"signalfd",
                 "take stockade's signals through a signalfd: signalfd(SIGINT|SIGTERM|SIGHUP): "
                 "EMFILE",
                 "EMFILE"},
        Injected{"timerfd_create",
                 "create the timer for --timeout and the kill fallback: "
                 "timerfd_create(CLOCK_MONOTONIC): EMFILE",
                 "EMFILE"},
        Injected{"timerfd_settime", "arm --timeout: timerfd_settime(30000 ms): EINVAL", "EINVAL"},
        Injected{"send-go", "send the child its go: send(go): ENOBUFS", "ENOBUFS"},
        Injected{"close_range", "close the fds the sandbox inherited: close_range(", "EINVAL",
                 "[0-9]+, ([0-9]+|~0U), 0\\): EINVAL"},
        Injected{"init-close_range", "close init's fds: close_range(", "EINVAL",
                 "[0-9]+, ([0-9]+|~0U), 0\\): EINVAL"},
        // A mount of the root's build: the op, then the call with its
        // arguments (/tmp is where the new root is assembled).
        Injected{"mount-proc",
                 "mount /proc: mount(\"proc\" -> \"/tmp/proc\", \"proc\", "
                 "MS_NOSUID|MS_NODEV|MS_NOEXEC): ENOMEM",
                 "ENOMEM"},
        Injected{"init-drop-privileges", "drop init's privileges: prctl(PR_SET_SECUREBITS): EPERM",
                 "EPERM"},
        Injected{"init-no_new_privs",
                 "set no_new_privs on init: prctl(PR_SET_NO_NEW_PRIVS): EINVAL", "EINVAL"},
        // The UTS namespace's name, and the command's own last steps.
        Injected{"sethostname", "set the hostname: sethostname(\"stockade\", 8): EFAULT", "EFAULT"},
        Injected{"no_new_privs", "set no_new_privs: prctl(PR_SET_NO_NEW_PRIVS, 1): EINVAL",
                 "EINVAL"},
        Injected{"seccomp",
                 "install the seccomp filter: seccomp(SECCOMP_SET_MODE_FILTER, "
                 "SECCOMP_FILTER_FLAG_NEW_LISTENER, ",
                 "ENOMEM", "[0-9]+\\): ENOMEM"});
    STOCKADE_EACH_MODE(mode);
    INFO("STOCKADE_TEST_FAIL=" << injected.point);
    Sandbox sandbox(mode);
    TokenReaper reaper(randomToken("injected"));
    sandbox.option("--timeout", "30")
        .callerEnv(std::string("STOCKADE_TEST_FAIL=") + injected.point);
    const Completed done = sandbox.run(probeCommand({"sleep-with-token", reaper.token(), "60"}));
    INFO(done.describe());
    CHECK(done.exitCode == 125);
    if (injected.rest == nullptr) {
        CHECK(done.err.find(std::string("stockade: ") + injected.line + "\n") != std::string::npos);
    } else {
        const std::string start = std::string("stockade: ") + injected.line;
        const size_t at = done.err.find(start);
        REQUIRE(at != std::string::npos);
        const size_t end = done.err.find('\n', at);
        const std::string rest = done.err.substr(at + start.size(), end - at - start.size());
        CHECK(std::regex_match(rest, std::regex(injected.rest)));
    }
    CHECK(count(done.err, injected.err) == 1);
    const json result = sandbox.result();
    CHECK(result.value("status", "") == "error");
    CHECK(result["error"].value("errno", 0) != 0);
    CHECK(waitUntilNoProcessHas(reaper.token(), 5s));
}

TEST_CASE("supervisor: STOCKADE_TEST_FAIL naming no call changes nothing", "[supervisor]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.callerEnv("STOCKADE_TEST_FAIL=no-such-call");
    const Completed done = sandbox.run({"/bin/true"});
    INFO(done.describe());
    CHECK(done.exitCode == 0);
}

// Every refusal a shortage of fds can cause, at whichever step it comes
// (the supervisor's or the child's, a mount of the root's build included),
// is one line that names the step, then the call with its arguments, then
// the errno once: `stockade: STEP: CALL(ARGS): ENAME` (issue 15). The limit
// is swept so that the failure lands on many different steps.
TEST_CASE("supervisor: a refusal for want of fds names the step, the call and the errno once",
          "[supervisor]") {
    STOCKADE_EACH_MODE(mode);
    const std::regex line_shape(
        "stockade: [^:\n]+(: [^\n]*)?: [a-z_0-9]+\\([^\n]*\\)[^:\n]*: E[A-Z0-9]+");
    int refused = 0, ran = 0;
#if defined(__SANITIZE_ADDRESS__)
    // UBSan's vptr check asks whether an object's vtable is readable by
    // writing it into a pipe(2) of its own (sanitizer_common's
    // IsAccessibleMemoryRange); with no fd free the pipe fails and the check
    // reports an "invalid vptr" that is not there (seen in Boost and the
    // child plan's builder at limits 4 and 10). A suppression cannot take it:
    // suppressions match the dynamic type, which it could not read. The
    // sanitized build sets such a limit aside, said below; ASan and the rest
    // of UBSan judge every other one.
    constexpr bool kSanitized = true;
#else
    constexpr bool kSanitized = false;
#endif
    int blind = 0;
    constexpr int kFirstLimit = 4;
    for (int limit = kFirstLimit; limit <= 64; limit += 3) {
        INFO("ulimit -n " << limit);
        Sandbox sandbox(mode);
        Launch launch = sandbox.launch({"/bin/true"});
        launch.leakFds = false;
        launch.wrapper = "/bin/sh";
        launch.wrapperArgs = {"-c", "ulimit -n \"$1\" && shift 2 && exec \"$@\"", "sh",
                              std::to_string(limit)};
        const Completed done = runStockade(launch, 30s);
        INFO(done.describe());
        if (kSanitized && done.err.find("note: object has invalid vptr") != std::string::npos &&
            done.err.find("<memory cannot be printed>") != std::string::npos) {
            ++blind;
            continue;
        }
        if (done.exitCode == 0) {
            ++ran;
            continue;
        }
        CHECK(done.exitCode == 125);
        ++refused;
        // The first line is the refusal; it says it all, and once.
        const std::string first = done.err.substr(0, done.err.find('\n'));
        CHECK(std::regex_match(first, line_shape));
        const std::string last = first.substr(first.rfind(": ") + 2);
        CHECK(count(done.err, last) == 1);
    }
    // The sweep must have seen refusals (else it proved nothing) and the
    // limit at which everything fits.
    CHECK(refused >= 3);
    CHECK(ran >= 1);
    if (blind > 0) WARN(blind << " limits set aside: UBSan's vptr check had no fd for its pipe");
}
