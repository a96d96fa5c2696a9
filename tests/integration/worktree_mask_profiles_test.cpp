// G2, issue 21: the build and dev-server profiles' worktree defaults, run and
// served (the held-test profile's are worktree_masks_test.cpp's), and what the
// walk judged swapped before the child covers it. Each answer is the
// kernel's, through the probe inside; the host's files and the record's
// every field, tails included, are checked from outside.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "host_listener.h"
#include "worktree_mask_names.h"

using namespace stockade::itest;
using namespace std::chrono_literals;

namespace {

// Depths not used by the held-test cases: the first level, and deeper.
const std::vector<std::string> kProfileDepths = {"", "services/api/", "a/b/c/d/e/"};

// Canaries planted under every default name at each depth.
struct Planted {
    std::vector<std::string> files;       // hidden files, as /repo paths
    std::vector<std::string> under_dirs;  // files inside hidden directories
    std::vector<std::string> kept;        // files the dev-server profile keeps read-only
    std::vector<std::string> tokens;      // every canary's content
    std::vector<std::pair<std::string, std::string>> host;  // host path, content
};

Planted plant(Sandbox& sandbox) {
    Planted p;
    auto add = [&](const std::string& rel, std::vector<std::string>& into) {
        const std::string token = randomToken("canary");
        p.host.emplace_back(sandbox.scratch().writeFile("worktree/" + rel, token + "\n"),
                            token + "\n");
        p.tokens.push_back(token);
        into.push_back("/repo/" + rel);
    };
    for (const std::string& depth : kProfileDepths) {
        for (const std::string& name : kHiddenFiles) add(depth + name, p.files);
        for (const std::string& name : kHiddenDirFiles) add(depth + name, p.under_dirs);
        for (const std::string& name : kReadOnlyFiles) add(depth + name, p.kept);
    }
    // The top-level .git's hooks (read-only with all of .git) and a nested
    // repository's (read-only by name).
    for (const std::string rel : {".git/hooks/pre-commit", "vendor/lib/.git/hooks/pre-commit"})
        add(rel, p.kept);
    return p;
}

// What a default profile must show: each hidden file empty, nothing under a
// hidden directory, no canary of a hidden name anywhere in the output or the
// record; the read-only names EROFS where `kept`, writable otherwise.
void checkProfileView(const ProbeReport& reads, const ProbeReport& writes, const Planted& p,
                      const std::string& output, const std::string& record, bool kept) {
    for (const std::string& path : p.files) {
        INFO(path);
        CHECK(answerFor(reads, "read", path) == "ok");  // the empty cover
    }
    for (const std::string& path : p.under_dirs) {
        INFO(path);
        CHECK(answerFor(reads, "read", path) == "ENOENT");  // the empty directory
    }
    for (const std::string& bytes : reads.all("bytes")) CHECK(bytes == "0");
    const size_t hidden_tokens = p.files.size() + p.under_dirs.size();
    for (size_t i = 0; i < hidden_tokens; ++i) {
        INFO(p.tokens[i]);
        CHECK(output.find(p.tokens[i]) == std::string::npos);
        CHECK(record.find(p.tokens[i]) == std::string::npos);
    }
    for (const std::string& path : p.kept) {
        INFO(path);
        const bool top_git = path.starts_with("/repo/.git/");  // every profile's .git protection
        CHECK(answerFor(writes, "write", path) == (kept || top_git ? "EROFS" : "ok"));
    }
    for (const auto& [path, content] : p.host) {
        INFO(path);
        CHECK(readFileOrEmpty(path) == content);  // opened, never written
    }
}

}  // namespace

TEST_CASE(
    "G2: the build profile hides every default credential name at any depth and keeps "
    "the agent-instruction names writable",
    "[G2][filesystem][masks][profiles]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const Planted planted = plant(sandbox);
    sandbox.option("--profile", "build");
    // One run reads every name and prints what it read, so a canary that got
    // through would be in the stdout tail the record keeps.
    std::vector<std::string> reads = planted.files;
    reads.insert(reads.end(), planted.under_dirs.begin(), planted.under_dirs.end());
    const ProbeRun read = sandbox.probe({"read-each", joinLines(reads)});
    INFO(read.describe());
    REQUIRE(read.exitCode() == 0);
    const std::string read_record = recordText(sandbox);
    REQUIRE_FALSE(read_record.empty());
    const ProbeRun write = sandbox.probe({"open-write-each", joinLines(planted.kept)});
    INFO(write.describe());
    REQUIRE(write.exitCode() == 0);
    checkProfileView(read.report, write.report, planted, read.completed.out + read.completed.err,
                     read_record, false);
    const nlohmann::json masks = sandbox.result()["worktree_masks"];
    INFO(masks.dump());
    CHECK(masks["hidden"]["count"] ==
          kProfileDepths.size() * (kHiddenFiles.size() + kHiddenDirFiles.size()));
    CHECK(masks["read_only"]["count"] == 0);
    CHECK(masks["truncated_by"].is_null());
}

// The dev-server profile is the one `serve` runs by default: a served
// command reads and writes every name, its answers go to the server's log,
// the published port serves the worktree (a hidden name empty over HTTP),
// and the record written at stop holds none of the canaries.
TEST_CASE(
    "G2: a dev server hides every default credential name and keeps the agent-instruction "
    "names read-only, through stockade serve",
    "[G2][filesystem][masks][profiles][serve]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const Planted planted = plant(sandbox);
    std::vector<std::string> reads = planted.files;
    reads.insert(reads.end(), planted.under_dirs.begin(), planted.under_dirs.end());
    const uint16_t port = freeLoopbackPort();
    const std::string name = randomToken("masks");
    Launch launch = sandbox.launch(
        {"/bin/sh", "-c",
         "\"$0\" read-each \"$1\"; \"$0\" open-write-each \"$2\"; echo probe-done; exec python3 "
         "-m http.server --bind 127.0.0.1 \"$3\" --directory /repo",
         std::string(kProbeInside), joinLines(reads), joinLines(planted.kept),
         std::to_string(port)});
    launch.args[0] = "serve";
    launch.args.insert(launch.args.begin() + 1,
                       {"--detach", "--name", name, "--port", std::to_string(port)});
    auto stockade = [&](std::vector<std::string> args) {
        Launch l;
        l.mode = mode;
        l.args = std::move(args);
        l.environment = {"PATH=/usr/bin:/bin"};
        return runStockade(l, 30s);
    };
    const Completed started = runStockade(launch, 60s);
    INFO(started.describe());
    struct Stop {
        std::function<void()> f;
        ~Stop() { f(); }
    } stop{[&] {
        stockade({"stop", name});
        const std::string state =
            mode == Mode::Root ? "/run/stockade" : "/tmp/stockade-" + std::to_string(kNobody);
        for (const char* suffix : {".log", ".log.1"})
            ::unlink((state + "/" + name + suffix).c_str());
    }};
    REQUIRE(started.exitCode == 0);

    // Over HTTP: a hidden file is served empty, a file under a hidden
    // directory is not there.
    auto get = [&](const std::string& path) {
        stockade::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(port);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (!fd || ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0)
            return std::string("connect failed");
        const std::string request = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
        (void)!::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL);
        std::string out;
        char buf[4096];
        ssize_t n;
        while ((n = ::recv(fd.get(), buf, sizeof buf, 0)) > 0)
            out.append(buf, static_cast<size_t>(n));
        return out;
    };
    const std::string env = get("/services/api/.env");
    INFO(env);
    CHECK(env.rfind("HTTP/1.0 200", 0) == 0);
    CHECK(env.find("Content-Length: 0") != std::string::npos);
    CHECK(get("/.aws/credentials").rfind("HTTP/1.0 404", 0) == 0);

    // The probe's answers, from the server's log.
    Completed logs;
    for (int i = 0; i < 100; ++i) {
        logs = stockade({"logs", name});
        if (logs.out.find("probe-done") != std::string::npos) break;
        std::this_thread::sleep_for(100ms);
    }
    INFO(logs.describe());
    REQUIRE(logs.out.find("probe-done") != std::string::npos);
    const Completed stopped = stockade({"stop", name});
    INFO(stopped.describe());
    CHECK(stopped.exitCode == 0);
    const std::string record = recordText(sandbox);
    REQUIRE_FALSE(record.empty());
    const ProbeReport answers(logs.out);
    checkProfileView(
        answers, answers, planted,
        started.out + started.err + logs.out + logs.err + stopped.out + stopped.err + env, record,
        true);
    const nlohmann::json masks = sandbox.result()["worktree_masks"];
    INFO(masks.dump());
    CHECK(masks["hidden"]["count"] ==
          kProfileDepths.size() * (kHiddenFiles.size() + kHiddenDirFiles.size()));
    // Per depth: thirteen files, copilot-instructions.md, and the
    // .github/workflows, .husky, .vscode and .idea directories; then the
    // nested .git's hooks.
    CHECK(masks["read_only"]["count"] == kProfileDepths.size() * 18 + 1);
}

// What the walk judged, swapped before the child covers it: a hidden file
// replaced, its directory replaced or made a link, a hidden directory and a
// read-only one replaced. Each cover is attached to the inode the walk saw,
// opened without following links, so every swap refuses the run; none shows
// what the swap put there.
TEST_CASE("G2: a name swapped between the worktree walk and the mount unhides nothing",
          "[G2][filesystem][masks]") {
    STOCKADE_EACH_MODE(mode);
    struct Swap {
        const char* what;
        const char* read;  // what the sandbox would read, were the swap to work
        std::function<void(Sandbox&, const std::string&token)> plant, swap;
    };
    const std::vector<Swap> swaps = {
        {"a hidden file replaced by another", "/repo/pkg/.env",
         [](Sandbox& s, const std::string&) {
             s.scratch().writeFile("worktree/pkg/.env", "old\n");
         },
         [](Sandbox& s, const std::string& token) {
             const std::string fresh = s.scratch().writeFile("worktree/pkg/.env.swap", token);
             REQUIRE(::rename(fresh.c_str(), (s.worktree() + "/pkg/.env").c_str()) == 0);
         }},
        {"its directory replaced", "/repo/pkg/.env",
         [](Sandbox& s, const std::string&) {
             s.scratch().writeFile("worktree/pkg/.env", "old\n");
         },
         [](Sandbox& s, const std::string& token) {
             s.scratch().writeFile("worktree/pkg2/.env", token);
             REQUIRE(::rename((s.worktree() + "/pkg").c_str(), (s.worktree() + "/old").c_str()) ==
                     0);
             REQUIRE(::rename((s.worktree() + "/pkg2").c_str(), (s.worktree() + "/pkg").c_str()) ==
                     0);
         }},
        {"its directory made a link", "/repo/pkg/.env",
         [](Sandbox& s, const std::string&) {
             s.scratch().writeFile("worktree/pkg/.env", "old\n");
         },
         [](Sandbox& s, const std::string& token) {
             s.scratch().writeFile("worktree/elsewhere/.env", token);
             REQUIRE(::rename((s.worktree() + "/pkg").c_str(), (s.worktree() + "/old").c_str()) ==
                     0);
             s.scratch().makeSymlink("worktree/pkg", "elsewhere");
         }},
        {"a hidden directory replaced", "/repo/.aws/credentials",
         [](Sandbox& s, const std::string&) {
             s.scratch().writeFile("worktree/.aws/credentials", "old\n");
         },
         [](Sandbox& s, const std::string& token) {
             s.scratch().writeFile("worktree/aws2/credentials", token);
             REQUIRE(::rename((s.worktree() + "/.aws").c_str(), (s.worktree() + "/old").c_str()) ==
                     0);
             REQUIRE(::rename((s.worktree() + "/aws2").c_str(), (s.worktree() + "/.aws").c_str()) ==
                     0);
         }},
        {"a read-only directory replaced", "/repo/.github/workflows/ci.yml",
         [](Sandbox& s, const std::string&) {
             s.scratch().writeFile("worktree/.github/workflows/ci.yml", "old\n");
         },
         [](Sandbox& s, const std::string& token) {
             s.scratch().writeFile("worktree/.github/wf2/ci.yml", token);
             REQUIRE(::rename((s.worktree() + "/.github/workflows").c_str(),
                              (s.worktree() + "/old").c_str()) == 0);
             REQUIRE(::rename((s.worktree() + "/.github/wf2").c_str(),
                              (s.worktree() + "/.github/workflows").c_str()) == 0);
         }},
    };
    for (const Swap& swap : swaps) {
        INFO(swap.what);
        Sandbox sandbox(mode);
        const std::string token = randomToken("swapped");
        swap.plant(sandbox, token);
        sandbox.callerEnv("STOCKADE_TEST_PAUSE_AFTER_WALK=3000");
        // The sandbox prints what it reads and tries to write it.
        StockadeProcess process(sandbox.launch(
            {"/bin/sh", "-c", "cat \"$0\"; echo planted >> \"$0\"; echo ran", swap.read}));
        // The walk is over once stockade sleeps in the hook.
        REQUIRE(waitUntilPausedInHook(process.pid(), 15s));
        swap.swap(sandbox, token);
        const Completed done = process.finish(60s);
        INFO(done.describe());
        CHECK(done.out.find(token) == std::string::npos);
        CHECK(done.err.find(token) == std::string::npos);
        CHECK(recordText(sandbox).find(token) == std::string::npos);
        // Refused before anything ran, naming the mount it would not make.
        CHECK(done.exitCode == 125);
        CHECK(done.out.find("ran") == std::string::npos);
        CHECK(done.err.find("/repo/") != std::string::npos);
        CHECK(readFileOrEmpty(sandbox.worktree() + std::string(swap.read).substr(5)) == token);
    }
}

// The walk lists one depth after another: a writer racing it (another
// sandbox on the same worktree) could move a hidden name from where it had
// yet to look into where it had looked, and it saw the name nowhere (a red
// team's, 2026-12-07, timed by inotify). Here the move lands between the walk
// and its check, from outside the worktree, every time: the check sees the
// worktree changed, walks it again, and covers the name where it now is.
TEST_CASE("G2: a hidden name moved in while the worktree is walked is covered where it lands",
          "[G2][masks][race]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const std::string token = randomToken("moved-in");
    sandbox.scratch().writeFile("worktree/lib/file", "x\n");
    sandbox.scratch().writeFile("outside/pkg/.env", token + "\n");
    sandbox.callerEnv("STOCKADE_TEST_PAUSE_BEFORE_WALK_CHECK=1500");
    StockadeProcess process(sandbox.launch(
        {"/bin/sh", "-c", "cat /repo/lib/pkg/.env; echo ran-$(stat -c %s /repo/lib/pkg/.env)"}));
    REQUIRE(waitUntilPausedInHook(process.pid(), 15s));
    REQUIRE(::rename(sandbox.scratch().at("outside/pkg").c_str(),
                     (sandbox.worktree() + "/lib/pkg").c_str()) == 0);
    const Completed done = process.finish(60s);
    INFO(done.describe());
    CHECK(done.exitCode == 0);
    CHECK(done.out.find("ran-0") != std::string::npos);
    CHECK(done.out.find(token) == std::string::npos);
    CHECK(recordText(sandbox).find(token) == std::string::npos);
    const nlohmann::json result = sandbox.result();
    INFO(result.dump(2));
    CHECK(result["worktree_masks"]["hidden"]["first"] ==
          nlohmann::json::array({"/repo/lib/pkg/.env"}));
    // Host side: the file is where it was moved, as it was.
    CHECK(readFileOrEmpty(sandbox.worktree() + "/lib/pkg/.env") == token + "\n");
}

// A worktree that changes after every walk is refused, not taken on a walk
// that may have missed a name.
TEST_CASE("G2: a worktree that keeps changing while it is walked is refused", "[G2][masks][race]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.callerEnv("STOCKADE_TEST_PAUSE_BEFORE_WALK_CHECK=300");
    StockadeProcess process(sandbox.launch({"/bin/sh", "-c", "echo ran"}));
    // One new file in the worktree in each pause, after each walk: each
    // check then finds the top directory changed.
    int changes = 0;
    for (int walk = 1; walk <= 3; ++walk) {
        if (!waitUntilPausedInHook(process.pid(), 15s)) break;
        sandbox.scratch().writeFile("worktree/churn" + std::to_string(walk), "x\n");
        ++changes;
        std::this_thread::sleep_for(350ms);  // past this pause
    }
    const Completed done = process.finish(60s);
    INFO(done.describe());
    CHECK(done.exitCode == 125);
    CHECK(done.out.find("ran") == std::string::npos);
    CHECK(done.err.find("kept changing while it was walked") != std::string::npos);
    CHECK(changes >= 3);
}
