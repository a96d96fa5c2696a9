// The lower tier (issue 18) where user namespaces are refused because
// user.max_user_namespaces is 0, made without changing this host: stockade
// is started through stockade-userns-max-zero, which enters a user
// namespace of its own, writes 0 to /proc/sys/user/max_user_namespaces
// there (a limit of that namespace and those beneath it only) and execs
// stockade. Every case reads the host's own limit before and after: it
// stays what it was.
//
// As root the outer namespace maps every id to itself (a root container with
// a user namespace); rootless, uid 65534's one id. Either way the sandbox
// runs as 65534 (root: the worktree's owner), and the host processes
// attacked are 65534's, so that only Landlock stands between them.
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <exception>

#include "harness.h"
#include "host_listener.h"

namespace stockade::itest {

namespace {

const std::string kProbeDir = STOCKADE_PROBE_DIR;
const std::string kProbe = kProbeDir + "/stockade-probe";
const std::string kMaxZero = kProbeDir + "/stockade-userns-max-zero";

bool ciMode() {
    const char* ci = ::getenv("CI");
    return ci != nullptr && std::string_view(ci) == "true";
}

// As in lower_tier_test.cpp: the attacks need Landlock ABI 6's scopes.
bool tierUsable() {
    long abi = ::syscall(444 /* landlock_create_ruleset */, nullptr, 0, 1U);
    if (abi >= 6) return true;
    const std::string why =
        "SKIPPED, NOT TESTED: the lower tier's attacks need Landlock ABI 6 (this kernel: " +
        std::to_string(abi < 0 ? 0 : abi) + ")";
    if (ciMode()) FAIL(why + " (CI=true turns this skip into a failure)");
    WARN(why);
    return false;
}

std::string hostLimit() {
    return readFileOrEmpty("/proc/sys/user/max_user_namespaces");
}

// A worktree of 65534's, a canary of the caller's outside it, a result
// file; the host's limit as it was when the case began, checked at its end.
class CappedHost {
  public:
    explicit CappedHost(Mode mode)
        : mode_(mode),
          limitBefore_(hostLimit()),
          caller_(scratchRoot(), "capped-caller", invokingUid(mode), invokingGid(mode)),
          owned_(scratchRoot(), "capped-worktree", kNobody, kNobody),
          token_(randomToken("capped")) {
        worktree_ = owned_.makeDir("worktree");
        canary_ = caller_.writeFile("canary", "canary-" + token_ + "\n", 0644);
        result_ = caller_.at("result.json");
        REQUIRE_FALSE(limitBefore_.empty());
        // A host that already forbids user namespaces would make these cases
        // pass for the wrong reason.
        REQUIRE(limitBefore_ != "0\n");
    }
    ~CappedHost() {
        // Not while a failed REQUIRE unwinds: an assertion then would
        // terminate the run instead of reporting.
        if (std::uncaught_exceptions() == 0) CHECK(hostLimit() == limitBefore_);
    }
    CappedHost(const CappedHost&) = delete;
    CappedHost& operator=(const CappedHost&) = delete;

    const std::string& worktree() const { return worktree_; }
    const std::string& canary() const { return canary_; }
    const std::string& callerDir() const { return caller_.path(); }
    const std::string& token() const { return token_; }

    // `stockade-userns-max-zero -- stockade ARGS`, with a caller environment
    // holding a secret-shaped canary.
    Launch launch(std::vector<std::string> args) const {
        Launch l;
        l.mode = mode_;
        l.wrapper = kMaxZero;
        l.args = std::move(args);
        l.environment = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                         "LANG=C.UTF-8", "GITHUB_TOKEN=" + token_,
                         "STOCKADE_ITEST_INNOCENT=" + token_};
        return l;
    }
    Completed run(std::vector<std::string> options, const std::vector<std::string>& command) const {
        std::vector<std::string> args{"run"};
        args.insert(args.end(), options.begin(), options.end());
        args.insert(args.end(), {"--worktree", worktree_, "--mount", kProbeDir + ":" + kProbeDir,
                                 "--result", result_, "--"});
        args.insert(args.end(), command.begin(), command.end());
        return runStockade(launch(std::move(args)));
    }
    ProbeRun probe(const std::vector<std::string>& actionAndArgs) const {
        std::vector<std::string> command{kProbe};
        command.insert(command.end(), actionAndArgs.begin(), actionAndArgs.end());
        ProbeRun out;
        out.completed = run({"--min-tier", "landlock"}, command);
        out.report = ProbeReport(out.completed.out);
        return out;
    }
    nlohmann::json result() const {
        const std::string text = readFileOrEmpty(result_);
        REQUIRE_FALSE(text.empty());
        return nlohmann::json::parse(text);
    }

  private:
    Mode mode_;
    std::string limitBefore_;
    ScratchDir caller_;
    ScratchDir owned_;
    std::string token_;
    std::string worktree_, canary_, result_;
};

bool degradedHas(const nlohmann::json& result, const std::string& prefix) {
    for (const auto& entry : result["degraded"])
        if (entry.get<std::string>().starts_with(prefix)) return true;
    return false;
}

}  // namespace

TEST_CASE(
    "max_user_namespaces=0: the default profile refuses, naming the limit, the sysctl that "
    "raises it and --min-tier landlock",
    "[tier][max_user_namespaces]") {
    STOCKADE_EACH_MODE(mode);
    if (!tierUsable()) return;
    CappedHost host(mode);
    const Completed c = host.run({}, {kProbe, "exit", "0"});
    INFO(c.describe());
    CHECK(c.exitCode == 125);
    CHECK(c.err.find("no user namespace can be had here: user.max_user_namespaces is 0") !=
          std::string::npos);
    CHECK(c.err.find("Fix: sysctl -w user.max_user_namespaces=") != std::string::npos);
    CHECK(c.err.find("inside an outer user namespace, raise it there") != std::string::npos);
    CHECK(c.err.find("--min-tier landlock") != std::string::npos);
    // Nothing ran: the probe would have said so.
    CHECK(c.out.find("result=") == std::string::npos);
    const nlohmann::json r = host.result();
    CHECK(r["tier"] == "full");
    CHECK(r["status"] == "error");
    CHECK(r["reason"] == "sandbox_unavailable");
    CHECK(r["error"]["message"].get<std::string>().find("max_user_namespaces") !=
          std::string::npos);
}

TEST_CASE(
    "max_user_namespaces=0: --min-tier landlock runs, and records tier landlock with each "
    "lost guarantee in degraded",
    "[tier][max_user_namespaces]") {
    STOCKADE_EACH_MODE(mode);
    if (!tierUsable()) return;
    CappedHost host(mode);
    const ProbeRun run = host.probe({"ids"});
    INFO(run.describe());
    REQUIRE(run.exitCode() == 0);
    CHECK(run.completed.err.find("running the lower tier") != std::string::npos);
    CHECK(run.completed.err.find("user.max_user_namespaces is 0") != std::string::npos);
    const nlohmann::json r = host.result();
    CHECK(r["tier"] == "landlock");
    CHECK(r["status"] == "passed");
    CHECK(r["host_uid"] == kNobody);
    for (const char* ns : {"user_ns", "mount_ns", "pid_ns", "net_ns", "ipc_ns", "uts_ns"})
        CHECK(r["enforced"][ns] == false);
    CHECK(r["enforced"]["no_new_privs"] == true);
    CHECK(r["enforced"]["landlock"].is_string());
    CHECK(r["enforced"]["seccomp"] == "default");
    for (const char* lost : {"user_ns:", "mount_ns:", "pid_ns:", "net_ns:", "signals:"})
        CHECK(degradedHas(r, lost));
}

TEST_CASE("max_user_namespaces=0: a path outside the view is refused, the worktree is writable",
          "[tier][max_user_namespaces]") {
    STOCKADE_EACH_MODE(mode);
    if (!tierUsable()) return;
    CappedHost host(mode);
    // 0644: only Landlock stands between 65534 and the caller's canary.
    const ProbeRun read = host.probe({"read-file", host.canary()});
    INFO(read.describe());
    CHECK(read.result() == "EACCES");
    CHECK(read.completed.out.find(host.token()) == std::string::npos);
    const ProbeRun write = host.probe({"open-write", host.canary()});
    CHECK(write.result() == "EACCES");
    CHECK(readFileOrEmpty(host.canary()) == "canary-" + host.token() + "\n");
    const ProbeRun outside = host.probe({"create-in", host.callerDir()});
    CHECK(outside.result() == "EACCES");
    const ProbeRun inside = host.probe({"create-in", host.worktree()});
    CHECK(inside.result() == "ok");
}

TEST_CASE("max_user_namespaces=0: no TCP or UDP socket, and a host abstract socket is out of reach",
          "[tier][max_user_namespaces]") {
    STOCKADE_EACH_MODE(mode);
    if (!tierUsable()) return;
    CappedHost host(mode);
    const ProbeRun tcp = host.probe({"connect-tcp", "127.0.0.1", "9"});
    INFO(tcp.describe());
    CHECK(tcp.report.get("stage") == "socket");
    CHECK(tcp.result() == "EPERM");
    const ProbeRun udp = host.probe({"route-udp", "192.0.2.1", "53"});
    CHECK(udp.report.get("stage") == "socket");
    CHECK(udp.result() == "EPERM");
    // The outer user namespace shares the host's network namespace: its
    // abstract sockets are the host's, and Landlock's scope refuses them.
    const std::string name = "stockade-capped-" + host.token();
    HostListener abstract = HostListener::abstractUnix(name);
    REQUIRE(abstract.ok());
    const ProbeRun reach = host.probe({"connect-abstract", name});
    CHECK(reach.result() == "EPERM");
    CHECK_FALSE(abstract.sawConnection());
}

TEST_CASE(
    "max_user_namespaces=0: a host process of the same uid can be neither signalled nor "
    "read, and the caller's environment is stripped",
    "[tier][max_user_namespaces]") {
    STOCKADE_EACH_MODE(mode);
    if (!tierUsable()) return;
    CappedHost host(mode);
    HostProcess victim({"/bin/sleep", "300"}, kNobody, kNobody);
    const std::string pid = std::to_string(victim.pid());
    const ProbeRun signal = host.probe({"kill", pid, std::to_string(SIGKILL)});
    INFO(signal.describe());
    CHECK(signal.result() == "EPERM");
    const ProbeRun environ = host.probe({"read-file", "/proc/" + pid + "/environ"});
    CHECK(environ.result() == "EACCES");
    CHECK(victim.alive());
    const ProbeRun env = host.probe({"env"});
    REQUIRE(env.exitCode() == 0);
    CHECK(env.completed.out.find(host.token()) == std::string::npos);
    CHECK(env.completed.out.find("GITHUB_TOKEN") == std::string::npos);
}

TEST_CASE("max_user_namespaces=0: a double-forked setsid daemon is gone after the run",
          "[tier][max_user_namespaces]") {
    STOCKADE_EACH_MODE(mode);
    if (!tierUsable()) return;
    CappedHost host(mode);
    TokenReaper reaper(host.token());
    const std::string script = "( setsid " + kProbe + " sleep-with-token " + host.token() +
                               " 300 </dev/null >/dev/null 2>&1 & echo $! > daemon.pid ); exit 0";
    const Completed c = host.run({"--min-tier", "landlock"}, {"/bin/sh", "-c", script});
    INFO(c.describe());
    REQUIRE(c.exitCode == 0);
    const std::string pid_text = readFileOrEmpty(host.worktree() + "/daemon.pid");
    REQUIRE_FALSE(pid_text.empty());
    // The pid the daemon saw is the host's too: the outer namespace is a
    // user namespace only, in the host's PID namespace.
    const pid_t pid = std::stoi(pid_text);
    CHECK(readFileOrEmpty("/proc/" + std::to_string(pid) + "/cmdline").find(host.token()) ==
          std::string::npos);
    CHECK(findProcessesWithToken(host.token(), false).empty());
    CHECK(host.result()["stragglers_killed"].get<int>() >= 1);
}

TEST_CASE(
    "max_user_namespaces=0: stockade check names the limit as the cause, its fix and tier "
    "landlock, in text and --json",
    "[tier][max_user_namespaces]") {
    STOCKADE_EACH_MODE(mode);
    if (!tierUsable()) return;
    CappedHost host(mode);
    const Completed text = runStockade(host.launch({"check"}));
    INFO(text.describe());
    // The default profile cannot run here: check says so in its status.
    CHECK(text.exitCode == 1);
    CHECK(text.out.find("\nTier: landlock: no full sandbox (user_ns: user.max_user_namespaces "
                        "is 0)") != std::string::npos);
    CHECK(text.out.find("fix user_ns: sysctl -w user.max_user_namespaces=") != std::string::npos);
    const Completed json = runStockade(host.launch({"check", "--json"}));
    INFO(json.describe());
    const nlohmann::json doc = nlohmann::json::parse(json.out);
    CHECK(doc["tier"]["tier"] == "landlock");
    CHECK(doc["tier"]["reason"].get<std::string>().find("user.max_user_namespaces is 0") !=
          std::string::npos);
    bool named = false;
    for (const auto& entry : doc["checks"]) {
        if (entry["id"] != "user_ns") continue;
        CHECK(entry["state"] == "unavailable");
        CHECK(entry["reason"].get<std::string>().find("ENOSPC") != std::string::npos);
        CHECK(entry["fix"].get<std::string>().starts_with("sysctl -w user.max_user_namespaces="));
        named = true;
    }
    CHECK(named);
}

}  // namespace stockade::itest
