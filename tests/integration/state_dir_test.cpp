// stockade's state directory (runtime/record/state_dir.h) is opened once,
// judged on its fd, and used through that fd (issue 14): a directory swapped
// in by path between the check and the use gets nothing, and a directory
// someone else made in its place is refused.
//
// Root's directory is /run/stockade: its cases run in a mount namespace of
// their own where /run is a scratch directory (unshare(1)), so the host's
// /run/stockade, which other runs use, is never swapped or replaced. The
// rootless cases name theirs through XDG_RUNTIME_DIR, or, for
// /tmp/stockade-65534, see a private /tmp the same way.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "host_listener.h"

using namespace stockade::itest;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

// The names in a state directory, but root's uid leases ("ids",
// runtime/plan/identity.h): a lock store of root's own under /run, which
// only root can swap, and which a later run's lease may make there.
std::vector<std::string> entries(const std::string& dir) {
    std::vector<std::string> out;
    if (DIR* d = ::opendir(dir.c_str())) {
        while (dirent* e = ::readdir(d))
            if (std::string(e->d_name) != "." && std::string(e->d_name) != ".." &&
                std::string(e->d_name) != "ids")
                out.emplace_back(e->d_name);
        ::closedir(d);
    }
    return out;
}

bool hasEntryStartingWith(const std::string& dir, const std::string& prefix) {
    for (const std::string& name : entries(dir))
        if (name.rfind(prefix, 0) == 0) return true;
    return false;
}

// Runs `launch` with a private mount namespace in which `setup` (a shell
// command run as root) has prepared the mounts; then stockade starts as the
// mode's user (setpriv for rootless). unshare and the setup need root, so
// the harness starts the wrapper as root either way.
Launch inOwnMountNamespace(Launch launch, Mode mode, const std::string& setup) {
    launch.mode = Mode::Root;
    launch.wrapper = "/usr/bin/unshare";
    const std::string drop =
        mode == Mode::Root ? "" : "setpriv --reuid=65534 --regid=65534 --clear-groups ";
    launch.wrapperArgs = {"--mount", "--propagation",
                          "private", "/bin/sh",
                          "-c",      setup + " && shift && exec " + drop + "\"$@\"",
                          "sh"};
    return launch;
}

// Where the state directory will be for `mode`, and the launch that puts it
// there: root's /run is `run` (bound over /run privately); rootless the
// directory is XDG_RUNTIME_DIR/stockade.
struct StatePlace {
    std::string parent;  // the directory holding "stockade"
    Launch launch;
};

StatePlace placeState(Sandbox& sandbox, Mode mode, Launch launch) {
    if (mode == Mode::Root) {
        const std::string run = sandbox.scratch().makeDir("run", 0755);
        return {run,
                inOwnMountNamespace(std::move(launch), mode, "mount --bind '" + run + "' /run")};
    }
    const std::string xdg = sandbox.scratch().makeDir("xdg", 0700);
    launch.environment.push_back("XDG_RUNTIME_DIR=" + xdg);
    return {xdg, std::move(launch)};
}

// A report the oracle's runner writes, so that the verdict reads one.
const std::vector<std::string> kPassingRunner = {
    "/bin/sh", "-c",
    "printf '<testsuite tests=\"1\"><testcase name=\"t\"/></testsuite>' > "
    "\"$STOCKADE_REPORT_DIR/r.xml\""};

// The state directory at `parent`/stockade, made beforehand (the caller's,
// private) so that a swap has a directory to move.
std::string makeStateDir(const std::string& parent, Mode mode) {
    const std::string dir = parent + "/stockade";
    REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
    REQUIRE(::chown(dir.c_str(), invokingUid(mode), invokingGid(mode)) == 0);
    return dir;
}

// Waits until stockade is paused after judging its state directory, then
// swaps the directory at `parent`/stockade for a new private one of the same
// owner, which a path-based stockade would take for its own.
void swapStateDir(pid_t stockade, const std::string& parent, uid_t owner) {
    REQUIRE(waitUntilPausedInHook(stockade, 30s));
    const std::string dir = parent + "/stockade";
    REQUIRE(::rename(dir.c_str(), (parent + "/moved").c_str()) == 0);
    REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
    REQUIRE(::chown(dir.c_str(), owner, owner) == 0);
}

}  // namespace

TEST_CASE("state dir: swapped after its check, the oracle's files still go to the one judged",
          "[state][oracle][G2]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    Launch base = oracleLaunch(sandbox, kPassingRunner);
    base.environment.push_back("STOCKADE_TEST_PAUSE_AFTER_STATE_DIR=2500");
    StatePlace place = placeState(sandbox, mode, std::move(base));
    const std::string dir = makeStateDir(place.parent, mode);
    StockadeProcess process(place.launch);
    swapStateDir(process.pid(), place.parent, invokingUid(mode));
    const Completed done = process.finish(60s);
    INFO(done.describe());
    // Nothing of the run went into the directory swapped in.
    CHECK(entries(dir).empty());
    if (mode == Mode::Root) {
        // Mounted from the fds found beneath the held directory: the run
        // went on, with the report it wrote read back.
        CHECK(done.exitCode == 0);
        const json v =
            json::parse(readFileOrEmpty(sandbox.scratch().at("verdict.json")), nullptr, false);
        CHECK(v.is_object());
        if (v.is_object()) CHECK(v.value("verdict", "") == "pass");
        CHECK(pathExists(place.parent + "/moved/nodump.so"));
    } else {
        // Rootless the child opens the report directory's path again and
        // refuses anything but the inode held: the run could not start,
        // which the oracle gives as an `error` verdict (exit 2), never a
        // pass from what was swapped in.
        CHECK(done.exitCode == 2);
        const json v =
            json::parse(readFileOrEmpty(sandbox.scratch().at("verdict.json")), nullptr, false);
        CHECK(v.is_object());
        if (v.is_object()) CHECK(v.value("verdict", "") == "error");
    }
    // Its report directory is gone from the one it used, either way.
    CHECK_FALSE(hasEntryStartingWith(place.parent + "/moved", "report."));
}

TEST_CASE("state dir: swapped after its check, serve's lock, record and log stay in the one judged",
          "[state][serve][G2]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const std::string name = randomToken("itest-swap");
    const std::string token = randomToken("swap-output");
    Launch base = sandbox.launch({"/bin/sh", "-c", "echo " + token + "; sleep 4"});
    base.args[0] = "serve";
    const std::vector<std::string> options = {
        "--name",          name, "--port",        std::to_string(freeLoopbackPort()),
        "--ready-timeout", "20", "--net-backend", "userspace"};
    base.args.insert(base.args.begin() + 1, options.begin(), options.end());
    base.environment.push_back("STOCKADE_TEST_PAUSE_AFTER_STATE_DIR=2500");
    StatePlace place = placeState(sandbox, mode, std::move(base));
    const std::string dir = makeStateDir(place.parent, mode);
    StockadeProcess process(place.launch);
    swapStateDir(process.pid(), place.parent, invokingUid(mode));
    // While it runs: its lock and record in the directory judged, none in
    // the one swapped in.
    bool seen_lock = false;
    for (int i = 0; i < 100 && !seen_lock; ++i) {
        seen_lock = pathExists(place.parent + "/moved/" + name + ".lock");
        if (!seen_lock) std::this_thread::sleep_for(50ms);
    }
    CHECK(seen_lock);
    CHECK(entries(dir).empty());
    const Completed done = process.finish(60s);
    INFO(done.describe());
    CHECK(entries(dir).empty());
    // The server's output is in its log there (kept after it ends).
    CHECK(readFileOrEmpty(place.parent + "/moved/" + name + ".log").find(token) !=
          std::string::npos);
    CHECK_FALSE(pathExists(place.parent + "/moved/" + name + ".lock"));
}

TEST_CASE("state dir: one made by another user, or a symlink, in its place is refused",
          "[state][G2]") {
    STOCKADE_EACH_MODE(mode);
    const bool symlinked = GENERATE(false, true);
    INFO((symlinked ? "a symlink" : "another user's directory"));
    Sandbox sandbox(mode);
    // Another user's, mode 0700, where this user's directory would be: root's
    // /run/stockade, or /tmp/stockade-65534 (each in a private mount
    // namespace, over a scratch /run or a fresh /tmp).
    const std::string other = sandbox.scratch().makeDir("other", 0700);
    REQUIRE(::chown(other.c_str(), 1, 1) == 0);
    const std::string name = mode == Mode::Root ? "/run/stockade" : "/tmp/stockade-65534";
    const std::string plant =
        symlinked ? "ln -s '" + sandbox.scratch().makeDir("elsewhere", 0700) + "' " + name
                  : "mkdir -m 0700 " + name + " && chown 1:1 " + name;
    const std::string setup =
        (mode == Mode::Root ? "mount --bind '" + sandbox.scratch().makeDir("run", 0755) + "' /run"
                            : std::string("mount -t tmpfs -o mode=1777 none /tmp")) +
        " && " + plant;
    Launch launch = sandbox.launch({"/bin/true"});
    launch.args = {"ps"};
    const Completed done = runStockade(inOwnMountNamespace(launch, mode, setup), 30s);
    INFO(done.describe());
    CHECK(done.exitCode == 125);
    const std::string line =
        symlinked ? "stockade: the state directory " + name +
                        " is not a directory (a symlink or a file, which someone else may have "
                        "planted); remove it and retry\n"
                  : "stockade: the state directory " + name + " is not private to uid " +
                        std::to_string(invokingUid(mode)) +
                        " (owner 1, mode 700); remove it "
                        "and retry\n";
    CHECK(done.err == line);
    CHECK(done.out.empty());
}

TEST_CASE(
    "state dir: a run, serve or oracle that could write where the state directory lives is "
    "refused before anything runs",
    "[state][G2]") {
    // A sandbox given the directory that holds the state (root's /run, a
    // rootless XDG_RUNTIME_DIR or /tmp) could plant a serve record, the
    // oracle's preload object or a report directory for a later run
    // (issue 14): refused with 125 naming both, the command never started.
    STOCKADE_EACH_MODE(mode);
    const std::string job = GENERATE(as<std::string>{}, "run", "serve", "oracle");
    const bool as_mount = GENERATE(false, true);
    INFO(job << (as_mount ? " with a writable --mount" : " with --worktree"));
    Sandbox sandbox(mode);
    const std::string ran = sandbox.scratch().makeDir("ran", 0777);
    const std::vector<std::string> command = {"/bin/sh", "-c", "touch /ran-mark/started"};
    Launch base = job == "oracle" ? oracleLaunch(sandbox, command) : sandbox.launch(command);
    if (job == "serve") {
        base.args[0] = "serve";
        const auto result_flag = std::find(base.args.begin(), base.args.end(), "--result");
        if (result_flag != base.args.end()) base.args.erase(result_flag, result_flag + 2);
        const std::vector<std::string> options = {"--port", std::to_string(freeLoopbackPort()),
                                                  "--ready-timeout", "5"};
        base.args.insert(base.args.begin() + 1, options.begin(), options.end());
    }
    StatePlace place = placeState(sandbox, mode, std::move(base));
    Launch& launch = place.launch;
    const auto dashes = std::find(launch.args.begin(), launch.args.end(), "--");
    REQUIRE(dashes != launch.args.end());
    const std::vector<std::string> extra =
        as_mount ? std::vector<std::string>{"--mount", place.parent + ":/data:rw", "--mount",
                                            ran + ":/ran-mark:rw"}
                 : std::vector<std::string>{"--mount", ran + ":/ran-mark:rw"};
    launch.args.insert(dashes, extra.begin(), extra.end());
    if (!as_mount) {
        const auto worktree = std::find(launch.args.begin(), launch.args.end(), "--worktree");
        REQUIRE(worktree != launch.args.end());
        *(worktree + 1) = place.parent;
    }
    const Completed done = runStockade(launch, 60s);
    INFO(done.describe());
    CHECK(done.exitCode == 125);
    // Root's is /run/stockade in its own mount namespace, where /run is
    // the scratch directory given.
    const std::string state = mode == Mode::Root ? "/run/stockade" : place.parent + "/stockade";
    const std::string prefix = job == "oracle" ? "stockade oracle: " : "stockade: ";
    CHECK(done.err.rfind(prefix + "the sandbox could write " + place.parent +
                             ", which holds stockade's state directory " + state + " ",
                         0) == 0);
    CHECK_FALSE(pathExists(ran + "/started"));
}
