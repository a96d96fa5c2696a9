// G2, issue 21: credential names inside the worktree are hidden and
// agent-instruction names read-only, at any depth; what the sandbox reads,
// writes and sees is the kernel's answer through the probe, and the host's
// files and the whole result record are checked from outside.
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "harness.h"
#include "worktree_mask_names.h"

using namespace stockade::itest;

TEST_CASE(
    "G2: canaries under every default hidden name, at depth 1 and deeper, are unreadable "
    "and absent from the record",
    "[G2][filesystem][masks]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    std::vector<std::string> files, under_dirs;
    std::vector<std::pair<std::string, std::string>> canaries;  // host path, content
    for (const std::string& depth : kDepths) {
        for (const std::string& name : kHiddenFiles) {
            const std::string rel = depth + name;
            const std::string token = randomToken("canary");
            canaries.emplace_back(sandbox.scratch().writeFile("worktree/" + rel, token + "\n"),
                                  token + "\n");
            files.push_back("/repo/" + rel);
        }
        for (const std::string& name : kHiddenDirFiles) {
            const std::string rel = depth + name;
            const std::string token = randomToken("canary");
            canaries.emplace_back(sandbox.scratch().writeFile("worktree/" + rel, token + "\n"),
                                  token + "\n");
            under_dirs.push_back("/repo/" + rel);
        }
    }
    // A FIFO under a hidden name is covered too, and reading it cannot block.
    const std::string fifo = sandbox.worktree() + "/pkg/fifo/.env";
    sandbox.scratch().makeDir("worktree/pkg/fifo");
    REQUIRE(mkfifo(fifo.c_str(), 0644) == 0);
    REQUIRE(chown(fifo.c_str(), invokingUid(mode), invokingGid(mode)) == 0);
    files.push_back("/repo/pkg/fifo/.env");

    std::vector<std::string> all = files;
    all.insert(all.end(), under_dirs.begin(), under_dirs.end());
    const ProbeRun run = sandbox.probe({"read-each", joinLines(all)});
    INFO(run.describe());
    REQUIRE(run.exitCode() == 0);
    for (const std::string& path : files) {
        INFO(path);
        CHECK(answerFor(run, "read", path) == "ok");  // the empty cover
    }
    for (const std::string& path : under_dirs) {
        INFO(path);
        CHECK(answerFor(run, "read", path) == "ENOENT");  // the empty directory
    }
    for (const std::string& bytes : run.report.all("bytes")) CHECK(bytes == "0");

    const std::string record = recordText(sandbox);
    REQUIRE_FALSE(record.empty());
    for (const auto& [path, content] : canaries) {
        INFO(path);
        const std::string token = content.substr(0, content.size() - 1);
        CHECK(run.completed.out.find(token) == std::string::npos);
        CHECK(run.completed.err.find(token) == std::string::npos);
        CHECK(record.find(token) == std::string::npos);
        CHECK(readFileOrEmpty(path) == content);  // the host's file is untouched
    }
    const nlohmann::json masks = sandbox.result()["worktree_masks"];
    INFO(masks.dump());
    CHECK(masks["hidden"]["count"] ==
          kDepths.size() * (kHiddenFiles.size() + kHiddenDirFiles.size()) + 1);
    CHECK(masks["hidden"]["first"].size() == 32);
    CHECK(masks["truncated_by"].is_null());
    CHECK(masks["created"]["count"] == 0);
}

TEST_CASE(
    "G2: writes to each default read-only name fail with EROFS and the host file is "
    "unchanged",
    "[G2][filesystem][masks]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    std::vector<std::string> paths;
    std::vector<std::pair<std::string, std::string>> host;
    for (const std::string& depth : kDepths)
        for (const std::string& name : kReadOnlyFiles) {
            const std::string content = "instructions for the next agent\n";
            host.emplace_back(sandbox.scratch().writeFile("worktree/" + depth + name, content),
                              content);
            paths.push_back("/repo/" + depth + name);
        }
    // A nested repository's .git directory: its hooks and config.
    for (const std::string rel : {"vendor/lib/.git/hooks/pre-commit", "vendor/lib/.git/config"}) {
        host.emplace_back(
            sandbox.scratch().writeFile(std::string("worktree/") + rel, "#!/bin/sh\n"),
            "#!/bin/sh\n");
        paths.push_back(std::string("/repo/") + rel);
    }
    const ProbeRun run = sandbox.probe({"open-write-each", joinLines(paths)});
    INFO(run.describe());
    REQUIRE(run.exitCode() == 0);
    for (const std::string& path : paths) {
        INFO(path);
        CHECK(answerFor(run, "write", path) == "EROFS");
    }
    for (const std::string dir :
         {"/repo/.github/workflows", "/repo/pkg/.vscode", "/repo/vendor/lib/.git/hooks"}) {
        const ProbeRun create = sandbox.probe({"create-in", dir});
        INFO(dir << "\n" << create.describe());
        CHECK(create.result() == "EROFS");
    }
    // Replacing one by a rename is refused too: it is a mount point.
    sandbox.scratch().writeFile("worktree/planted.md", "planted\n");
    const ProbeRun rename = sandbox.probe({"rename", "/repo/planted.md", "/repo/AGENTS.md"});
    INFO(rename.describe());
    CHECK(rename.result() == "EBUSY");
    for (const auto& [path, content] : host) {
        INFO(path);
        CHECK(readFileOrEmpty(path) == content);
    }
    const nlohmann::json masks = sandbox.result()["worktree_masks"];
    // Per depth: thirteen files, copilot-instructions.md, and the
    // .github/workflows, .husky, .vscode and .idea directories; then the
    // nested .git, read-only whole.
    CHECK(masks["read_only"]["count"] == kDepths.size() * 18 + 1);
}

TEST_CASE(
    "G2: a symlinked .env is covered as itself, whether it points into the worktree or "
    "out of it",
    "[G2][filesystem][masks]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const std::string outside_token = randomToken("outside");
    ScratchDir outside(scratchRoot(), "outside", invokingUid(mode), invokingGid(mode));
    const std::string outside_file = outside.writeFile("secret", outside_token + "\n");
    sandbox.scratch().writeFile("worktree/config/settings.txt", "not a secret\n");
    sandbox.scratch().makeSymlink("worktree/.env", "config/settings.txt");
    sandbox.scratch().makeSymlink("worktree/pkg/.env", outside_file);
    sandbox.scratch().makeSymlink("worktree/pkg/.aws", "../config");

    const ProbeRun read =
        sandbox.probe({"read-each", "/repo/.env\n/repo/pkg/.env\n/repo/pkg/.aws/settings.txt\n"});
    INFO(read.describe());
    REQUIRE(read.exitCode() == 0);
    CHECK(answerFor(read, "read", "/repo/.env") == "ok");
    CHECK(answerFor(read, "read", "/repo/pkg/.env") == "ok");
    CHECK(answerFor(read, "read", "/repo/pkg/.aws/settings.txt") == "ENOTDIR");
    for (const std::string& bytes : read.report.all("bytes")) CHECK(bytes == "0");
    const ProbeRun link = sandbox.probe({"readlink", "/repo/.env"});
    INFO(link.describe());
    CHECK(link.result() == "EINVAL");  // a covered name, no longer a link
    CHECK(read.completed.out.find(outside_token) == std::string::npos);
    CHECK(recordText(sandbox).find(outside_token) == std::string::npos);

    // The host's links are links still, their targets untouched.
    struct stat st {};
    REQUIRE(lstat(sandbox.worktree().c_str(), &st) == 0);
    for (const std::string rel : {"/.env", "/pkg/.env", "/pkg/.aws"}) {
        INFO(rel);
        REQUIRE(lstat((sandbox.worktree() + rel).c_str(), &st) == 0);
        CHECK(S_ISLNK(st.st_mode));
    }
    CHECK(readFileOrEmpty(outside_file) == outside_token + "\n");
    CHECK(readFileOrEmpty(sandbox.worktree() + "/config/settings.txt") == "not a secret\n");
}

TEST_CASE("G2: --show and --writable exempt names, and a profile's own lists are honoured",
          "[G2][filesystem][masks]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.scratch().writeFile("worktree/.env.example", "EXAMPLE=1\n");
    sandbox.scratch().writeFile("worktree/.env", "LIVE=secret\n");
    sandbox.scratch().writeFile("worktree/AGENTS.md", "instructions\n");
    sandbox.scratch().writeFile("worktree/CLAUDE.md", "instructions\n");
    sandbox.option("--show", ".env.example").option("--writable", "AGENTS.md");
    sandbox.option("--show", "no-such-name-*");  // a pattern that matches nothing is fine

    const ProbeRun read = sandbox.probe({"read-each", "/repo/.env.example\n/repo/.env\n"});
    INFO(read.describe());
    REQUIRE(read.exitCode() == 0);
    CHECK(read.report.all("content") == std::vector<std::string>{"EXAMPLE=1\\n", ""});
    const ProbeRun write = sandbox.probe({"open-write-each", "/repo/AGENTS.md\n/repo/CLAUDE.md\n"});
    INFO(write.describe());
    CHECK(answerFor(write, "write", "/repo/AGENTS.md") == "ok");
    CHECK(answerFor(write, "write", "/repo/CLAUDE.md") == "EROFS");

    // A profile of the operator's: its own names, anchored and not.
    const std::string profile = sandbox.scratch().writeFile("custom.json",
                                                            R"({"schema": "stockade.profile/v1",
            "filesystem": {"system_dirs": ["/usr", "/bin", "/lib", "/lib64"],
                           "worktree": {"hide": ["/repo/top-only.key", "*.secret"],
                                        "read_only": ["config/*.toml"]}}})");
    sandbox.scratch().writeFile("worktree/top-only.key", "k1\n");
    sandbox.scratch().writeFile("worktree/sub/top-only.key", "k2\n");
    sandbox.scratch().writeFile("worktree/a/b/db.secret", "k3\n");
    sandbox.scratch().writeFile("worktree/config/app.toml", "x=1\n");
    Sandbox custom(mode);
    custom.worktreeAt(sandbox.worktree()).option("--profile", profile);
    const ProbeRun mine = custom.probe(
        {"read-each",
         "/repo/top-only.key\n/repo/sub/top-only.key\n/repo/a/b/db.secret\n/repo/.env\n"});
    INFO(mine.describe());
    REQUIRE(mine.exitCode() == 0);
    CHECK(mine.report.all("content") ==
          std::vector<std::string>{"", "k2\\n", "", "LIVE=secret\\n"});
    const ProbeRun toml = custom.probe({"open-write", "/repo/config/app.toml"});
    CHECK(toml.result() == "EROFS");
}

// A pattern that names directories (`config/master.key`, an anchored one,
// `--show examples/.env`) matches by the names above the secret: a rename
// there would take the secret out of its pattern, or into a shown one, for
// the next run. The directories above hidden names are then held in place.
TEST_CASE("G2: a secret matched by its directories cannot be renamed out of its pattern",
          "[G2][filesystem][masks]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const std::string key = randomToken("master-key");
    const std::string prod = randomToken("prod-key");
    const std::string backend = randomToken("backend-env");
    sandbox.scratch().writeFile("worktree/config/master.key", key);
    sandbox.scratch().writeFile("worktree/deploy/prod.key", prod);
    sandbox.scratch().writeFile("worktree/backend/.env", backend);
    sandbox.scratch().writeFile("worktree/examples/.env", "EXAMPLE=1\n");
    sandbox.scratch().makeDir("worktree/x");
    const std::string profile = sandbox.scratch().writeFile("dirs.json",
                                                            R"({"schema": "stockade.profile/v1",
            "filesystem": {"system_dirs": ["/usr", "/bin", "/lib", "/lib64"],
                           "worktree": {"hide": [".env", "config/master.key",
                                                 "/repo/deploy/prod.key"]}}})");
    sandbox.option("--profile", profile).option("--show", "examples/.env");
    for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
             {"/repo/config", "/repo/conf1g"},
             {"/repo/deploy", "/repo/x/deploy"},
             {"/repo/backend", "/repo/examples.new"}}) {
        const ProbeRun rename = sandbox.probe({"rename", from, to});
        INFO(rename.describe());
        CHECK_THAT(rename.result(), IsOneOf({"EBUSY", "EXDEV"}));
    }
    // And seen from the host: every secret where it was.
    CHECK(readFileOrEmpty(sandbox.worktree() + "/config/master.key") == key);
    CHECK(readFileOrEmpty(sandbox.worktree() + "/deploy/prod.key") == prod);
    CHECK(readFileOrEmpty(sandbox.worktree() + "/backend/.env") == backend);
    CHECK_FALSE(pathExists(sandbox.worktree() + "/conf1g"));
    CHECK_FALSE(pathExists(sandbox.worktree() + "/x/deploy"));
    // The shown directory moved aside is fine: nothing secret is in it.
    const ProbeRun aside = sandbox.probe({"rename", "/repo/examples", "/repo/examples.orig"});
    INFO(aside.describe());
    CHECK(aside.result() == "ok");
    const ProbeRun read = sandbox.probe(
        {"read-each", "/repo/config/master.key\n/repo/deploy/prod.key\n/repo/backend/.env\n"});
    INFO(read.describe());
    REQUIRE(read.exitCode() == 0);
    CHECK(read.report.all("content") == std::vector<std::string>{"", "", ""});
    CHECK(recordText(sandbox).find(key) == std::string::npos);
}

TEST_CASE("G2: a hidden name the sandbox creates is reported, and hidden in the next run",
          "[G2][filesystem][masks]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.scratch().makeDir("worktree/pkg");
    const std::string token = randomToken("planted");
    const ProbeRun create = sandbox.probe({"create-file", "/repo/pkg/.env", token});
    INFO(create.describe());
    REQUIRE(create.result() == "ok");
    const nlohmann::json masks = sandbox.result()["worktree_masks"];
    INFO(masks.dump());
    CHECK(masks["created"]["count"] == 1);
    CHECK(masks["created"]["first"] == nlohmann::json::array({"/repo/pkg/.env"}));

    const ProbeRun read = sandbox.probe({"read-file", "/repo/pkg/.env"});
    INFO(read.describe());
    CHECK(read.result() == "ok");
    CHECK(read.report.get("bytes") == "0");
    CHECK(sandbox.result()["worktree_masks"]["created"]["count"] == 0);

    // A hidden directory one run and a file the next: covered as what it is.
    const std::string first = randomToken("dir");
    sandbox.scratch().writeFile("worktree/.aws/credentials", first);
    const ProbeRun as_dir = sandbox.probe({"read-each", "/repo/.aws/credentials\n/repo/.aws\n"});
    INFO(as_dir.describe());
    CHECK(answerFor(as_dir, "read", "/repo/.aws/credentials") == "ENOENT");
    REQUIRE(system(("rm -rf '" + sandbox.worktree() + "/.aws'").c_str()) == 0);
    const std::string second = randomToken("file");
    sandbox.scratch().writeFile("worktree/.aws", second);
    const ProbeRun as_file = sandbox.probe({"read-file", "/repo/.aws"});
    INFO(as_file.describe());
    CHECK(as_file.result() == "ok");
    CHECK(as_file.report.get("bytes") == "0");
    CHECK(recordText(sandbox).find(second) == std::string::npos);
    CHECK(as_dir.completed.out.find(first) == std::string::npos);
}

// A worktree with no .git of its own (a package of a monorepo, an exported
// tree): the sandbox can make one, and a .git/config or .git/hooks there is
// run by the host's git in that directory (core.fsmonitor, hooks). The walk
// after the run looks into a top-level .git that was not there before, and
// reports what it made; the next run has the whole .git read-only.
TEST_CASE(
    "G2: a top-level .git the sandbox makes where there was none is reported, and "
    "read-only in the next run",
    "[G2][filesystem][masks][git]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    // The harness's worktree is a repository: this one is not.
    REQUIRE(system(("rm -rf '" + sandbox.worktree() + "/.git'").c_str()) == 0);
    sandbox.scratch().writeFile("worktree/README", "no repository here\n");
    const Completed made = sandbox.run({"/bin/sh", "-c",
                                        "mkdir -p .git/hooks && printf '[core]\\n' > .git/config "
                                        "&& echo x > .git/hooks/pre-commit"});
    INFO(made.describe());
    REQUIRE(made.exitCode == 0);
    const nlohmann::json masks = sandbox.result()["worktree_masks"];
    INFO(masks.dump());
    CHECK(masks["created"]["count"] == 1);
    CHECK(masks["created"]["first"] == nlohmann::json::array({"/repo/.git"}));
    // The next run: .git is there, read-only as a whole.
    const std::string config = sandbox.worktree() + "/.git/config";
    const std::string before = readFileOrEmpty(config);
    const Completed again =
        sandbox.run({"/bin/sh", "-c", "echo '[core] fsmonitor = x' >> .git/config; echo rc=$?"});
    INFO(again.describe());
    CHECK(again.out.find("rc=0") == std::string::npos);  // the write failed
    CHECK(again.err.find("Read-only file system") != std::string::npos);
    CHECK(readFileOrEmpty(config) == before);
}

// Undone when the test ends, whatever it asserted.
struct ScratchMount {
    explicit ScratchMount(const std::string& source, const std::string& target) : at(target) {
        ok = ::mount(source.c_str(), target.c_str(), nullptr, MS_BIND, nullptr) == 0;
    }
    ~ScratchMount() {
        if (ok) ::umount2(at.c_str(), MNT_DETACH);
    }
    std::string at;
    bool ok = false;
};

// A directory of the worktree with another mounted on it: the walk (through
// the host's fd) judges what is mounted there, so the sandbox must see that
// too, never the directory beneath, which no walk judged (as root the
// worktree is an idmapped clone, which once took the top mount alone).
TEST_CASE("G2: a secret under a mount inside the worktree is not what the sandbox sees",
          "[G2][filesystem][masks]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const std::string under = randomToken("under-the-mount");
    const std::string over = randomToken("over-the-mount");
    sandbox.scratch().writeFile("worktree/m/.env", under + "\n");
    sandbox.scratch().writeFile("worktree/m/plain", under + "\n");
    sandbox.scratch().writeFile("over/.env", over + "\n");
    sandbox.scratch().writeFile("over/plain", "over\n");
    ScratchMount mounted(sandbox.scratch().at("over"), sandbox.worktree() + "/m");
    REQUIRE(mounted.ok);
    const Completed run = sandbox.run(
        {"/bin/sh", "-c", "cat m/plain; cat m/.env; echo .env-bytes=$(wc -c < m/.env)"});
    INFO(run.describe());
    CHECK(run.exitCode == 0);
    CHECK(run.out.find("over\n") != std::string::npos);        // the mount, as the host sees it
    CHECK(run.out.find(".env-bytes=0") != std::string::npos);  // its .env hidden
    CHECK(run.out.find(under) == std::string::npos);
    CHECK(run.out.find(over) == std::string::npos);
    CHECK(recordText(sandbox).find(under) == std::string::npos);
    CHECK(recordText(sandbox).find(over) == std::string::npos);
}

TEST_CASE("G2: a 50,000-file worktree is walked whole and its deep .env hidden",
          "[G2][filesystem][masks]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    // node_modules-like: 2,500 packages of 20 files in lib/.
    const std::string base = sandbox.scratch().makeDir("worktree/node_modules");
    for (int p = 0; p < 2500; ++p) {
        const std::string pkg = base + "/pkg" + std::to_string(p);
        REQUIRE(mkdir(pkg.c_str(), 0755) == 0);
        REQUIRE(mkdir((pkg + "/lib").c_str(), 0755) == 0);
        for (int f = 0; f < 20; ++f)
            std::ofstream(pkg + "/lib/f" + std::to_string(f) + ".js") << "x";
    }
    const std::string token = randomToken("deep");
    sandbox.scratch().writeFile("worktree/node_modules/pkg2499/lib/.env", token);
    const ProbeRun read = sandbox.probe({"read-file", "/repo/node_modules/pkg2499/lib/.env"});
    INFO(read.describe());
    CHECK(read.result() == "ok");
    CHECK(read.report.get("bytes") == "0");
    CHECK(recordText(sandbox).find(token) == std::string::npos);
    const nlohmann::json masks = sandbox.result()["worktree_masks"];
    INFO(masks.dump());
    CHECK(masks["entries_examined"].get<uint64_t>() > 50000);
    CHECK(masks["truncated_by"].is_null());

    // A name the run creates deep in that tree is reported: the walk after
    // the run lists only the directories that changed, so it reaches every
    // one of them (a walk of the first 10,000 entries once missed it), and
    // says nothing of stopping short.
    // (The tree was made by the test, as root: that one directory is the
    // invoking user's, as a real checkout's would be.)
    REQUIRE(::chown((base + "/pkg1234/lib").c_str(), invokingUid(mode), invokingGid(mode)) == 0);
    const ProbeRun create =
        sandbox.probe({"create-file", "/repo/node_modules/pkg1234/lib/.env", "x"});
    INFO(create.describe());
    REQUIRE(create.result() == "ok");
    const nlohmann::json after = sandbox.result()["worktree_masks"];
    INFO(after.dump());
    CHECK(after["created"]["count"] == 1);
    CHECK(after["created"]["first"] ==
          nlohmann::json::array({"/repo/node_modules/pkg1234/lib/.env"}));
    CHECK(create.completed.err.find("stopped short") == std::string::npos);
}

// What the walk did not see is what an earlier sandbox could have moved out
// of its sight: a walk cut short refuses the run, naming the bound.
TEST_CASE("G2: a worktree walk cut short by a bound refuses the run, naming the bound",
          "[G2][filesystem][masks]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const std::string token = randomToken("beyond");
    for (int i = 0; i < 200; ++i)
        sandbox.scratch().writeFile("worktree/aaa/f" + std::to_string(i), "x");
    // An earlier run's move: the secret's directory put deeper than the bound.
    sandbox.scratch().writeFile("worktree/d1/d2/d3/d4/config/.env", token);
    for (const auto& [bounds, named] : std::vector<std::pair<std::string, std::string>>{
             {R"("max_entries": 50)", "max_entries"}, {R"("max_depth": 3)", "max_depth"}}) {
        const std::string profile =
            sandbox.scratch().writeFile("bounded.json", R"({"schema": "stockade.profile/v1",
            "filesystem": {"system_dirs": ["/usr", "/bin", "/lib", "/lib64"],
                           "worktree": {"hide": [".env"], )" +
                                                            bounds + "}}}");
        Launch launch;
        launch.mode = mode;
        launch.args = {"run",   "--worktree", sandbox.worktree(), "--profile",
                       profile, "--",         "/bin/cat",         "/repo/d1/d2/d3/d4/config/.env"};
        const Completed done = runStockade(launch);
        INFO(bounds << "\n" << done.describe());
        CHECK(done.exitCode == 125);
        CHECK(done.err.find(named) != std::string::npos);
        CHECK(done.out.find(token) == std::string::npos);
    }
}

// Places a walk once skipped: a nested .git directory (its entries were
// examined, not walked), and, rootless, a directory of the caller's own that
// an earlier sandbox closed to its owner (and could open again).
TEST_CASE("G2: a secret moved into a nested .git or a closed directory of its own stays hidden",
          "[G2][filesystem][masks]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const std::string token = randomToken("stash");
    sandbox.scratch().writeFile("worktree/x/.git/stash/.env", token);
    const ProbeRun read = sandbox.probe({"read-file", "/repo/x/.git/stash/.env"});
    INFO(read.describe());
    CHECK(read.result() == "ok");
    CHECK(read.report.get("bytes") == "0");
    CHECK(recordText(sandbox).find(token) == std::string::npos);

    sandbox.scratch().writeFile("worktree/locked/config/.env", token);
    const std::string locked = sandbox.worktree() + "/locked";
    REQUIRE(::chmod(locked.c_str(), 0) == 0);
    Launch launch;
    launch.mode = mode;
    launch.args = {"run", "--worktree", sandbox.worktree(), "--", "/bin/true"};
    const Completed done = runStockade(launch);
    ::chmod(locked.c_str(), 0755);
    INFO(done.describe());
    if (mode == Mode::Rootless) {
        // The caller's own directory it may not list: refused, named.
        CHECK(done.exitCode == 125);
        CHECK(done.err.find("/repo/locked cannot be listed") != std::string::npos);
    } else {
        // Root lists it whatever its mode: walked, and the run goes on.
        CHECK(done.exitCode == 0);
    }
}

// Someone else's directory that the caller may write into but not list
// (0733): rootless, an earlier sandbox could move the worktree's secrets
// into it, out of the walk's sight and not out of the next sandbox's, which
// reaches them by name (a red team's, 2026-12-07). Refused, named; root
// lists it and covers what is there.
TEST_CASE("G2: a directory the walker may write into but not list is refused, not skipped",
          "[G2][filesystem][masks]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const std::string token = randomToken("drop");
    sandbox.scratch().writeFile("worktree/drop/pkg/.env", token);
    const std::string drop = sandbox.worktree() + "/drop";
    REQUIRE(::chown(drop.c_str(), 0, 0) == 0);
    REQUIRE(::chmod(drop.c_str(), 0733) == 0);
    const ProbeRun read = sandbox.probe({"read-file", "/repo/drop/pkg/.env"});
    INFO(read.describe());
    CHECK(read.completed.out.find(token) == std::string::npos);
    CHECK(recordText(sandbox).find(token) == std::string::npos);
    if (mode == Mode::Rootless) {
        CHECK(read.exitCode() == 125);
        CHECK(read.completed.err.find("/repo/drop cannot be listed (mode 733, uid 0's), yet uid " +
                                      std::to_string(invokingUid(mode)) + " may write into it") !=
              std::string::npos);
    } else {
        CHECK(read.exitCode() == 0);
        CHECK(read.report.get("bytes") == "0");
    }
    ::chmod(drop.c_str(), 0755);
    CHECK(readFileOrEmpty(drop + "/pkg/.env") == token);
}

// Moving a directory above a read-only name would take the read-only mount
// with it and leave the name free to be made anew where the next agent or CI
// run will look (the review's `mv .github old && mkdir -p .github/workflows`):
// each such directory is a mount point, which rename(2) and rmdir(2) refuse.
// A hidden name's directory may move (the secret goes with its cover, never
// read), and a hidden name made anew where one was is reported. And the
// top-level .git, read-only as a whole, is walked for hidden names: a
// sandbox that made one where there was none could have moved secrets in.
TEST_CASE(
    "G2: directories above read-only names cannot be moved aside, a hidden name made anew "
    "where one was is reported, and the top-level .git's hidden names are covered",
    "[G2][filesystem][masks]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const std::string secret = randomToken("secret"), in_git = randomToken("in-git");
    const std::string workflow = "on: push\n", agents = "instructions\n";
    const std::string workflow_path =
        sandbox.scratch().writeFile("worktree/.github/workflows/ci.yml", workflow);
    const std::string agents_path = sandbox.scratch().writeFile("worktree/pkg/AGENTS.md", agents);
    sandbox.scratch().writeFile("worktree/pkg/deep/sub/.env", secret);
    sandbox.scratch().writeFile("worktree/.git/stash/.env", in_git);
    sandbox.scratch().writeFile("worktree/.git/config", "[core]\n");
    sandbox.scratch().writeFile("worktree/plain/file", "x\n");

    for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
             {"/repo/.github", "/repo/gh-old"},
             {"/repo/pkg", "/repo/pkg2"},
             {"/repo/pkg/deep", "/repo/deep"},
             {"/repo/pkg/deep/sub", "/repo/.git/sub"}}) {
        const ProbeRun rename = sandbox.probe({"rename", from, to});
        INFO(from << " -> " << to << "\n" << rename.describe());
        // EBUSY: a mount point; EXDEV: out of its mount, to another.
        CHECK_THAT(rename.result(), IsOneOf({"EBUSY", "EXDEV"}));
    }
    // Within one mount, a directory holding no read-only name moves as
    // before (and the probe moves it back).
    for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
             {"/repo/plain", "/repo/plain-moved"}, {"/repo/pkg/deep", "/repo/pkg/deep2"}}) {
        const ProbeRun moved = sandbox.probe({"rename", from, to});
        INFO(from << " -> " << to << "\n" << moved.describe());
        CHECK(moved.result() == "ok");
    }

    const ProbeRun read = sandbox.probe(
        {"read-each", joinLines({"/repo/.git/stash/.env", "/repo/pkg/deep/sub/.env"})});
    INFO(read.describe());
    REQUIRE(read.exitCode() == 0);
    CHECK(answerFor(read, "read", "/repo/.git/stash/.env") == "ok");
    CHECK(answerFor(read, "read", "/repo/pkg/deep/sub/.env") == "ok");
    for (const std::string& bytes : read.report.all("bytes")) CHECK(bytes == "0");
    CHECK(recordText(sandbox).find(in_git) == std::string::npos);
    CHECK(read.completed.out.find(in_git) == std::string::npos);
    nlohmann::json masks = sandbox.result()["worktree_masks"];
    INFO(masks.dump());
    // .git's read-only names are read-only with it, not bound one by one.
    CHECK(masks["hidden"]["count"] == 2);
    CHECK(masks["read_only"]["count"] == 2);
    CHECK(masks["created"]["count"] == 0);

    // The hidden name's directory moved aside with its cover, and a .env
    // made where it was: both named, the secret never read.
    const Completed replaced =
        sandbox.run({"/bin/sh", "-c",
                     "mv pkg/deep pkg/deep-old && mkdir -p pkg/deep/sub && "
                     "echo planted > pkg/deep/sub/.env && cat pkg/deep-old/sub/.env"});
    INFO(replaced.describe());
    CHECK(replaced.exitCode == 0);
    masks = sandbox.result()["worktree_masks"];
    INFO(masks.dump());
    std::vector<std::string> created = masks["created"]["first"];
    std::sort(created.begin(), created.end());  // in the walk's order, the directory's
    CHECK(created ==
          std::vector<std::string>{"/repo/pkg/deep-old/sub/.env", "/repo/pkg/deep/sub/.env"});
    CHECK(replaced.out.find(secret) == std::string::npos);
    CHECK(recordText(sandbox).find(secret) == std::string::npos);

    // The host's side: the read-only names where they were, as they were;
    // the secret unchanged where the sandbox moved it.
    CHECK(readFileOrEmpty(workflow_path) == workflow);
    CHECK(readFileOrEmpty(agents_path) == agents);
    CHECK(readFileOrEmpty(sandbox.worktree() + "/pkg/deep-old/sub/.env") == secret);
    CHECK(readFileOrEmpty(sandbox.worktree() + "/.git/stash/.env") == in_git);
}

// A write follows a link: a read-only name that is one keeps its target in the
// worktree read-only too; one whose target is missing refuses the run (the
// write would make it). A second name of a read-only file is said on stderr.
TEST_CASE("G2: a read-only name that is a link keeps its target read-only",
          "[G2][filesystem][masks]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const std::string content = "the operator's instructions\n";
    const std::string target =
        sandbox.scratch().writeFile("worktree/docs/instructions.md", content);
    sandbox.scratch().makeSymlink("worktree/AGENTS.md", "docs/instructions.md");
    const std::string workflow = sandbox.scratch().writeFile("worktree/realwf/ci.yml", content);
    sandbox.scratch().makeSymlink("worktree/.github/workflows", "../realwf");
    const ProbeRun run =
        sandbox.probe({"open-write-each", "/repo/AGENTS.md\n/repo/.github/workflows/ci.yml\n"});
    INFO(run.describe());
    REQUIRE(run.exitCode() == 0);
    CHECK(answerFor(run, "write", "/repo/AGENTS.md") == "EROFS");
    CHECK(answerFor(run, "write", "/repo/.github/workflows/ci.yml") == "EROFS");
    CHECK(readFileOrEmpty(target) == content);
    CHECK(readFileOrEmpty(workflow) == content);

    // A dangling one: refused, nothing run.
    ::unlink((sandbox.worktree() + "/AGENTS.md").c_str());
    sandbox.scratch().makeSymlink("worktree/AGENTS.md", "notes/missing.md");
    Launch launch;
    launch.mode = mode;
    launch.args = {"run",
                   "--worktree",
                   sandbox.worktree(),
                   "--",
                   "/bin/sh",
                   "-c",
                   "echo planted > /repo/AGENTS.md"};
    const Completed dangling = runStockade(launch);
    INFO(dangling.describe());
    CHECK(dangling.exitCode == 125);
    CHECK(dangling.err.find("does not exist") != std::string::npos);
    CHECK_FALSE(pathExists(sandbox.worktree() + "/notes/missing.md"));

    // A hard link of a read-only file: said, on stderr and in the record,
    // not stopped.
    ::unlink((sandbox.worktree() + "/AGENTS.md").c_str());
    sandbox.scratch().writeFile("worktree/AGENTS.md", content);
    REQUIRE(::link((sandbox.worktree() + "/AGENTS.md").c_str(),
                   (sandbox.worktree() + "/notes.txt").c_str()) == 0);
    const Completed linked = sandbox.run({"/bin/true"});
    INFO(linked.describe());
    CHECK(linked.exitCode == 0);
    CHECK(linked.err.find("have other names in the worktree") != std::string::npos);
    const nlohmann::json masks = sandbox.result()["worktree_masks"];
    INFO(masks.dump());
    CHECK(masks["linked"]["count"] == 1);
    CHECK(masks["linked"]["first"] == nlohmann::json::array({"/repo/AGENTS.md"}));
}

// Links a host reader follows (an agent reading AGENTS.md, CI reading a
// workflow, a tool writing the operator's secret to .env), named as the
// operator or an earlier sandbox made them: by the worktree's host path,
// climbing out of it and back in, inside a read-only directory, and a
// .env an earlier sandbox made a link to a file of its choosing.
TEST_CASE("G2: where a read-only or hidden link leads in the worktree is covered with it",
          "[G2][filesystem][masks]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const std::string content = "the operator's instructions\n";
    const std::string top = sandbox.worktree();
    const std::string base = top.substr(top.rfind('/') + 1);
    const std::string agents = sandbox.scratch().writeFile("worktree/docs/agents.md", content);
    const std::string claude = sandbox.scratch().writeFile("worktree/docs/claude.md", content);
    const std::string workflow = sandbox.scratch().writeFile("worktree/ci/ci.yml", content);
    sandbox.scratch().makeSymlink("worktree/AGENTS.md", top + "/docs/agents.md");
    sandbox.scratch().makeSymlink("worktree/CLAUDE.md", "../" + base + "/docs/claude.md");
    sandbox.scratch().makeSymlink("worktree/.github/workflows/ci.yml", "../../ci/ci.yml");
    // Twice: the second run takes the unchanged directories from the kept
    // walk, and must still know the link in .github/workflows.
    for (int run = 0; run < 2; ++run) {
        const ProbeRun write = sandbox.probe(
            {"open-write-each", "/repo/docs/agents.md\n/repo/docs/claude.md\n/repo/ci/ci.yml\n"});
        INFO(write.describe());
        REQUIRE(write.exitCode() == 0);
        CHECK(answerFor(write, "write", "/repo/docs/agents.md") == "EROFS");
        CHECK(answerFor(write, "write", "/repo/docs/claude.md") == "EROFS");
        CHECK(answerFor(write, "write", "/repo/ci/ci.yml") == "EROFS");
        CHECK(readFileOrEmpty(agents) == content);
        CHECK(readFileOrEmpty(claude) == content);
        CHECK(readFileOrEmpty(workflow) == content);
    }

    // An earlier sandbox plants a link (`plant`); the operator's tool then
    // writes a secret to the hidden name, which lands where the link leads
    // (`lands`); the next run reads `lands` and the name, and sees neither.
    auto writtenThrough = [&](const std::string& plant, const std::string& name,
                              const std::string& lands) {
        const Completed planted = sandbox.run({"/bin/sh", "-c", plant});
        INFO(planted.describe());
        REQUIRE(planted.exitCode == 0);
        const std::string secret = randomToken("written-through");
        {
            std::ofstream through(top + "/" + name);
            through << secret;
        }
        REQUIRE(readFileOrEmpty(top + "/" + lands) == secret);
        const ProbeRun read =
            sandbox.probe({"read-each", "/repo/" + lands + "\n/repo/" + name + "\n"});
        INFO(read.describe());
        REQUIRE(read.exitCode() == 0);
        CHECK(read.completed.out.find(secret) == std::string::npos);
        CHECK(recordText(sandbox).find(secret) == std::string::npos);
        const std::vector<std::string> contents = read.report.all("content");
        CHECK(std::none_of(contents.begin(), contents.end(), [&](const std::string& c) {
            return c.find(secret) != std::string::npos;
        }));
    };
    // .env a link to a file of the sandbox's own.
    writtenThrough(
        "mkdir -p /repo/app && touch /repo/app/notes.txt && ln -s notes.txt /repo/app/.env",
        "app/.env", "app/notes.txt");
    // A link in a hidden directory the sandbox made.
    writtenThrough(
        "mkdir -p /repo/notes /repo/.aws && touch /repo/notes/c && "
        "ln -s ../notes/c /repo/.aws/credentials",
        ".aws/credentials", "notes/c");

    // A hidden link's target is hidden for the link's sake: the directory
    // above it is held in place, or `mv config cfg` would show it next run.
    const std::string local = randomToken("local-env");
    sandbox.scratch().writeFile("worktree/config/local.env", local);
    sandbox.scratch().makeSymlink("worktree/.env", "config/local.env");
    // The husky layout: a (nested) repository's .git/hooks a link to a
    // directory of the worktree whose hooks are links to scripts. Each script is what the host's
    // git runs, so each is read-only.
    const std::string hook = "#!/bin/sh\nexit 0\n";
    const std::string script = sandbox.scratch().writeFile("worktree/scripts/pc.sh", hook);
    sandbox.scratch().makeSymlink("worktree/githooks/pre-commit", "../scripts/pc.sh");
    sandbox.scratch().makeDir("worktree/pkg/.git");
    sandbox.scratch().makeSymlink("worktree/pkg/.git/hooks", "../../githooks");
    const ProbeRun moved = sandbox.probe({"rename", "/repo/config", "/repo/cfg"});
    INFO(moved.describe());
    CHECK_THAT(moved.result(), IsOneOf({"EBUSY", "EXDEV"}));
    CHECK(readFileOrEmpty(top + "/config/local.env") == local);
    CHECK_FALSE(pathExists(top + "/cfg"));
    const ProbeRun hooked =
        sandbox.probe({"open-write-each", "/repo/scripts/pc.sh\n/repo/githooks/pre-commit\n"});
    INFO(hooked.describe());
    REQUIRE(hooked.exitCode() == 0);
    CHECK(answerFor(hooked, "write", "/repo/scripts/pc.sh") == "EROFS");
    CHECK(answerFor(hooked, "write", "/repo/githooks/pre-commit") == "EROFS");
    CHECK(readFileOrEmpty(script) == hook);
    CHECK(recordText(sandbox).find(local) == std::string::npos);

    // `..` after a link is the kernel's, not the text's: refused, nothing run.
    sandbox.scratch().makeDir("worktree/a/b");
    sandbox.scratch().makeSymlink("worktree/lnk", "a/b");
    sandbox.scratch().makeSymlink("worktree/GEMINI.md", "lnk/../docs/agents.md");
    const Completed refused = sandbox.run({"/bin/sh", "-c", "echo ran > /repo/ran"});
    INFO(refused.describe());
    CHECK(refused.exitCode == 125);
    CHECK(refused.err.find("reached only through another link") != std::string::npos);
    CHECK_FALSE(pathExists(top + "/ran"));
}

// The top-level .git is read-only in every profile (addGitProtection), the
// build profile's too, which keeps no agent file read-only: a hook in it
// that links to a script of the worktree keeps the script read-only, since
// the host's git runs it.
TEST_CASE("G2: a hook the top-level .git links to a script keeps the script read-only",
          "[G2][filesystem][masks]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.option("--profile", "build");
    const std::string hook = "#!/bin/sh\nexit 0\n";
    const std::string script = sandbox.scratch().writeFile("worktree/scripts/pc.sh", hook);
    sandbox.scratch().makeDir("worktree/.git/hooks");
    const std::string link = sandbox.worktree() + "/.git/hooks/pre-commit";
    ::unlink(link.c_str());
    REQUIRE(::symlink("../../scripts/pc.sh", link.c_str()) == 0);
    const ProbeRun run = sandbox.probe({"open-write", "/repo/scripts/pc.sh"});
    INFO(run.describe());
    CHECK(run.result() == "EROFS");
    CHECK(readFileOrEmpty(script) == hook);
}

// A name the walk after the run cannot judge (a sandbox's `.env -> .`, a
// link to the worktree itself) stops that walk: the record says so, rather
// than a `created` count of 0, and the next run refuses.
TEST_CASE("G2: a walk after the run that stops short says so in the record",
          "[G2][filesystem][masks]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const Completed made = sandbox.run({"/bin/sh", "-c", "ln -s . /repo/.env"});
    INFO(made.describe());
    REQUIRE(made.exitCode == 0);
    const nlohmann::json masks = sandbox.result()["worktree_masks"];
    INFO(masks.dump());
    CHECK(masks.value("created_unchecked", "").find("links to /repo itself") != std::string::npos);
    const Completed next = sandbox.run({"/bin/sh", "-c", "echo ran > /repo/ran"});
    INFO(next.describe());
    CHECK(next.exitCode == 125);
    CHECK_FALSE(pathExists(sandbox.worktree() + "/ran"));
}

TEST_CASE("G2: a hidden name in a directory whose name holds a newline is covered",
          "[G2][filesystem][masks]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const std::string token = randomToken("newline");
    sandbox.scratch().writeFile("worktree/we\nird/.npmrc", token);
    const ProbeRun read = sandbox.probe({"read-file", "/repo/we\nird/.npmrc"});
    INFO(read.describe());
    CHECK(read.result() == "ok");
    CHECK(read.report.get("bytes") == "0");
    const nlohmann::json masks = sandbox.result()["worktree_masks"];
    CHECK(masks["hidden"]["first"] == nlohmann::json::array({"/repo/we\nird/.npmrc"}));
    CHECK(recordText(sandbox).find(token) == std::string::npos);
}

TEST_CASE(
    "G2: a malformed pattern, or one that would hide /repo or the --workdir, is refused "
    "with exit 125 naming it",
    "[G2][filesystem][masks][cli]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.scratch().makeDir("worktree/.aws/sub");
    const std::string bad_profile = sandbox.scratch().writeFile("bad.json",
                                                                R"({"schema": "stockade.profile/v1",
            "filesystem": {"system_dirs": ["/usr"], "worktree": {"hide": ["/repo"]}}})");
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--show", "[abc"}, "[abc"},
        {{"--writable", "a/**/b"}, "a/**/b"},
        {{"--show", "auth.{json"}, "auth.{json"},
        {{"--show", "/repo"}, "/repo itself"},
        {{"--show", "../x"}, "../x"},
        {{"--show", "/etc/passwd"}, "/etc/passwd"},
        {{"--show", ""}, "--show"},
        {{"--workdir", "/repo/.aws/sub"}, ".aws"},
        {{"--profile", bad_profile}, "/filesystem/worktree/hide/0"},
    };
    for (const auto& [args, named] : cases) {
        Launch launch;
        launch.mode = mode;
        launch.args = {"run", "--worktree", sandbox.worktree(), "--result", sandbox.resultPath()};
        launch.args.insert(launch.args.end(), args.begin(), args.end());
        launch.args.insert(launch.args.end(), {"--", "/bin/true"});
        const Completed done = runStockade(launch);
        INFO(args.front() << " " << args.back() << "\n" << done.describe());
        CHECK(done.exitCode == 125);
        CHECK(done.err.find(named) != std::string::npos);
    }
    // --show exempts the workdir's hidden ancestor.
    Launch ok;
    ok.mode = mode;
    ok.args = {"run",  "--worktree", sandbox.worktree(), "--workdir", "/repo/.aws/sub", "--show",
               ".aws", "--",         "/bin/true"};
    const Completed done = runStockade(ok);
    INFO(done.describe());
    CHECK(done.exitCode == 0);
}

// A link where a pattern names a directory (`.github` for the default
// read-only `.github/workflows`; `config` for a hide `config/master.key`),
// planted by one run before the host writes there: the operator's later
// `.github/workflows/ci.yml` lands in the link's target, where the pattern
// does not reach, and the next run could rewrite it (a red team's,
// 2026-12-07). The next run is refused, naming the link and the pattern;
// the host's file is as the operator wrote it.
TEST_CASE("G2: a link planted where a pattern names a directory refuses the next run",
          "[G2][filesystem][masks]") {
    STOCKADE_EACH_MODE(mode);
    // 0: the default read-only .github/workflows; 1: a hide of an anchored
    // /repo/config/master.key; 2: a hide of .vscode/sftp.json where .vscode
    // is read-only itself (a review's: the kept link was not judged).
    const int kind = GENERATE(0, 1, 2);
    struct Case {
        const char* profile;  // the worktree rules, or null for the default profile
        const char* link;     // the link the first run plants, and its target
        const char* target;
        const char* written;  // what the host writes through it after
        const char* pattern;  // the pattern the refusal names
    };
    const Case cases[] = {
        {nullptr, ".github", "gh", ".github/workflows/ci.yml", ".github/workflows"},
        {R"({"hide": [".env", "/repo/config/master.key"]})", "config", "conf1g",
         "config/master.key", "/repo/config/master.key"},
        {R"({"hide": [".env", ".vscode/sftp.json"], "read_only": [".vscode"]})", ".vscode", "vsx",
         ".vscode/sftp.json", ".vscode/sftp.json"},
    };
    const Case& c = cases[kind];
    INFO(c.pattern);
    Sandbox sandbox(mode);
    if (c.profile) {
        const std::string profile = sandbox.scratch().writeFile(
            "dirs.json", std::string(R"({"schema": "stockade.profile/v1",
            "filesystem": {"system_dirs": ["/usr", "/bin", "/lib", "/lib64"],
                           "worktree": )") +
                             c.profile + "}}");
        sandbox.option("--profile", profile);
    }
    const std::string planted =
        std::string("mkdir /repo/") + c.target + " && ln -s " + c.target + " /repo/" + c.link;
    const Completed plant = sandbox.run({"/bin/sh", "-c", planted});
    INFO(plant.describe());
    REQUIRE(plant.exitCode == 0);
    // The operator's write after it, through the link as mkdir -p and an
    // editor go.
    const std::string token = randomToken("written-through");
    const std::string written = c.written;
    REQUIRE(system(("mkdir -p '" + sandbox.worktree() + "/" +
                    written.substr(0, written.rfind('/')) + "'")
                       .c_str()) == 0);
    {
        std::ofstream out(sandbox.worktree() + "/" + written);
        out << token;
    }
    struct stat before {};
    REQUIRE(stat((sandbox.worktree() + "/" + written).c_str(), &before) == 0);
    const ProbeRun next = sandbox.probe({"read-file", "/repo/" + written});
    INFO(next.describe());
    CHECK(next.exitCode() == 125);
    CHECK(next.completed.err.find(std::string("/repo/") + c.link +
                                  " is a symbolic link where the pattern \"" + c.pattern +
                                  "\" names a directory") != std::string::npos);
    CHECK(next.completed.out.find(token) == std::string::npos);
    CHECK(recordText(sandbox).find(token) == std::string::npos);
    // The host's side: the file as the operator wrote it, not rewritten.
    struct stat after {};
    REQUIRE(stat((sandbox.worktree() + "/" + written).c_str(), &after) == 0);
    CHECK(readFileOrEmpty(sandbox.worktree() + "/" + written) == token);
    CHECK(after.st_mtim.tv_sec == before.st_mtim.tv_sec);
    CHECK(after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
}
