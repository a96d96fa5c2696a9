// runtime/plan/worktree_masks.h: the pattern syntax, the workdir check, and the
// host-side walk (what it matches, what it never follows, its bounds).
#include "runtime/plan/worktree_masks.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <thread>

#include "runtime/plan/worktree_listing.h"
#include "tests/unit/oracle_test_support.h"

using namespace stockade;
using oracle_test::TempDir;
using oracle_test::writeFile;

namespace {

std::vector<std::string> names(const std::vector<MaskedName>& list) {
    std::vector<std::string> out;
    for (const MaskedName& m : list) out.push_back(m.relative);
    std::sort(out.begin(), out.end());
    return out;
}

Result<WorktreeScan> scan(const std::string& dir, const WorktreeMaskRules& rules) {
    UniqueFd fd(open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(fd);
    return scanWorktree(fd.get(), rules);
}

}  // namespace

TEST_CASE("worktree masks: pattern syntax") {
    for (const char* good : {".env", ".env.*", "auth.{json,toml,yaml,yml}", ".github/workflows",
                             "/repo/top.key", "[!a]*.pem", "a\\*b", "*"})
        CHECK(checkMaskPattern("--show", good));
    for (const char* bad : {"", "[abc", "a/**/b", "auth.{json", "a}", "{a,{b}}", "/repo", "/repo/",
                            "/", "/etc/passwd", "../x", "a/./b", "a//b", "dir/", "x\\"}) {
        INFO(bad);
        auto s = checkMaskPattern("--show", bad);
        REQUIRE_FALSE(s);
        CHECK(s.error().text().find("--show \"" + std::string(bad) + "\"") == 0);
    }
    CHECK(checkMaskPattern("--show", "/repo").error().text().find("/repo itself") !=
          std::string::npos);
}

TEST_CASE("worktree masks: a hide pattern may not hide the workdir or a directory above it") {
    WorktreeMaskRules rules;
    rules.hide = {".aws", "secrets/*"};
    CHECK(checkMaskRules(rules, "/repo"));
    CHECK(checkMaskRules(rules, "/tmp"));
    CHECK(checkMaskRules(rules, "/repo/pkg/src"));
    CHECK_FALSE(checkMaskRules(rules, "/repo/.aws"));
    CHECK_FALSE(checkMaskRules(rules, "/repo/a/.aws/b"));
    CHECK_FALSE(checkMaskRules(rules, "/repo/secrets/x"));
    rules.show = {".aws"};
    CHECK(checkMaskRules(rules, "/repo/a/.aws/b"));
}

TEST_CASE("worktree masks: the walk matches by component at any depth, anchored or not") {
    TempDir wt;
    for (const char* f : {".env", "pkg/.env.local", "a/b/c/credentials.json", "a/auth.yml",
                          "top.key", "sub/top.key", ".github/workflows/ci.yml", "x/.github/other",
                          "AGENTS.md", "node_modules/p/.npmrc", "keep/.env.example"})
        writeFile(wt.path() + "/" + f, "x");
    WorktreeMaskRules rules;
    rules.hide = {".env", ".env.*", "credentials.*", "auth.{json,yml}", "/repo/top.key", ".npmrc"};
    rules.read_only = {"AGENTS.md", ".github/workflows"};
    rules.show = {"keep/.env.example"};
    auto s = scan(wt.path(), rules);
    REQUIRE(s);
    CHECK(names(s->hidden) ==
          std::vector<std::string>{".env", "a/auth.yml", "a/b/c/credentials.json",
                                   "node_modules/p/.npmrc", "pkg/.env.local", "top.key"});
    CHECK(names(s->read_only) == std::vector<std::string>{".github/workflows", "AGENTS.md"});
    CHECK(s->truncated_by.empty());
}

TEST_CASE("worktree masks: a pattern names directories when anchored or of several components") {
    CHECK_FALSE(
        MaskPatternSet({".env", ".env.*", "credentials.*", "auth.{json,yml}"}).namesDirectories());
    CHECK(MaskPatternSet({".env", "config/master.key"}).namesDirectories());
    CHECK(MaskPatternSet({"/repo/top.key"}).namesDirectories());
    CHECK(MaskPatternSet({"{a,b}/.env"}).namesDirectories());
    CHECK_FALSE(MaskPatternSet({}).namesDirectories());
}

TEST_CASE("worktree masks: the names a pattern takes as directories on its way") {
    // The set points at its sources: they must outlive it.
    const std::vector<std::string> sources{".env", ".github/workflows", "/repo/config/master.key",
                                           "a/*/c/secret", "{x,y}/z"};
    const MaskPatternSet set(sources);
    using V = std::vector<std::string>;
    CHECK(*set.onTheWay({}, ".github") == ".github/workflows");
    CHECK(*set.onTheWay({"pkg", "sub"}, ".github") == ".github/workflows");
    CHECK(set.onTheWay({}, "workflows") == nullptr);  // the last is what it matches
    CHECK(set.onTheWay({}, ".env") == nullptr);       // one component names no directory
    CHECK(*set.onTheWay({}, "config") == "/repo/config/master.key");
    CHECK(set.onTheWay({"pkg"}, "config") == nullptr);  // anchored: from the top only
    CHECK(*set.onTheWay({"q"}, "a") == "a/*/c/secret");
    CHECK(*set.onTheWay({"a"}, "anything") == "a/*/c/secret");
    CHECK(*set.onTheWay(V{"a", "b"}, "c") == "a/*/c/secret");
    CHECK(set.onTheWay(V{"z", "b"}, "c") == nullptr);
    CHECK(*set.onTheWay({}, "y") == "{x,y}/z");
    CHECK(set.onTheWay({}, "w") == nullptr);
    const std::vector<std::string> bare{".env", "id_rsa"};
    CHECK(MaskPatternSet(bare).onTheWay({}, ".env") == nullptr);
    // An exemption as written passes a pattern over, not the others.
    const std::vector<std::string> github{".github/workflows", ".github/copilot-instructions.md"};
    const std::vector<std::string> writable{".github/workflows"};
    const MaskPatternSet kept(github), exempt(writable);
    CHECK(*kept.onTheWay({}, ".github", &exempt) == ".github/copilot-instructions.md");
    const std::vector<std::string> both{".github/workflows", ".github/copilot-instructions.md"};
    const MaskPatternSet all(both);
    CHECK(kept.onTheWay({}, ".github", &all) == nullptr);
}

TEST_CASE("worktree masks: links are judged as themselves and never followed") {
    TempDir wt, outside;
    writeFile(outside.path() + "/.env", "outside");
    writeFile(wt.path() + "/real/.npmrc", "x");
    REQUIRE(symlink(outside.path().c_str(), (wt.path() + "/out").c_str()) == 0);
    REQUIRE(symlink("real", (wt.path() + "/.aws").c_str()) == 0);
    REQUIRE(symlink("real", (wt.path() + "/loop").c_str()) == 0);
    WorktreeMaskRules rules;
    rules.hide = {".env", ".aws", ".npmrc"};
    auto s = scan(wt.path(), rules);
    REQUIRE(s);
    // out/.env is outside: the link `out` is not followed by the walk. .aws
    // is a link, covered as a file, not a directory; what it leads to in
    // the worktree is hidden with it (a host writer follows the link), and
    // real/.npmrc, beneath it, is covered with it.
    CHECK(names(s->hidden) == std::vector<std::string>{".aws", "real"});
    for (const MaskedName& m : s->hidden) CHECK(m.is_dir == (m.relative == "real"));
}

// Where a link leads is read from its text, never followed: "/repo/...",
// the worktree's own host path, and a relative path that climbs out of the
// worktree and back in all lead inside; links in a read-only directory
// are judged as read-only names are, and a chain is followed to its end.
TEST_CASE("worktree masks: what a hidden or read-only link leads to in the worktree is covered") {
    TempDir wt, outside;
    const std::string top = wt.path();
    const std::string base = top.substr(top.rfind('/') + 1);
    for (const char* f : {"docs/agents.md", "docs/claude.md", "ci/ci.yml", "hooks/pre-commit",
                          "notes.txt", "chain/b.md", "keep/x.md"})
        writeFile(top + "/" + f, "x");
    writeFile(outside.path() + "/elsewhere.md", "x");
    auto link = [&](const std::string& to, const std::string& at) {
        REQUIRE(symlink(to.c_str(), (top + "/" + at).c_str()) == 0);
    };
    link(top + "/docs/agents.md", "AGENTS.md");           // the host path
    link("../" + base + "/docs/claude.md", "CLAUDE.md");  // out and back in
    REQUIRE(mkdir((top + "/.github").c_str(), 0755) == 0);
    REQUIRE(mkdir((top + "/.github/workflows").c_str(), 0755) == 0);
    link("../../ci/ci.yml", ".github/workflows/ci.yml");  // in a read-only directory
    REQUIRE(mkdir((top + "/.git").c_str(), 0755) == 0);
    REQUIRE(mkdir((top + "/.git/hooks").c_str(), 0755) == 0);
    link("../../hooks/pre-commit", ".git/hooks/pre-commit");
    link(outside.path() + "/elsewhere.md", ".git/hooks/post-commit");  // out: not followed
    link("chain/a.md", "GEMINI.md");
    link("b.md", "chain/a.md");
    link("notes.txt", ".env");      // a hidden link: its target hidden too
    link("missing.txt", ".npmrc");  // dangling: nothing to hide
    WorktreeMaskRules rules;
    rules.hide = {".env", ".npmrc"};
    rules.read_only = {"AGENTS.md", "CLAUDE.md", "GEMINI.md", ".github/workflows", ".git"};
    auto s = scan(top, rules);
    REQUIRE(s);
    CHECK(names(s->hidden) == std::vector<std::string>{".env", ".npmrc", "notes.txt"});
    CHECK(names(s->read_only) ==
          std::vector<std::string>{".git", ".github/workflows", "AGENTS.md", "CLAUDE.md",
                                   "GEMINI.md", "chain/a.md", "chain/b.md", "ci/ci.yml",
                                   "docs/agents.md", "docs/claude.md", "hooks/pre-commit"});

    // A link in a read-only directory that leads nowhere: a write through
    // it would make the file, so the run is refused.
    link("../../ci/new.yml", ".github/workflows/new.yml");
    auto dangling = scan(top, rules);
    REQUIRE_FALSE(dangling);
    CHECK(dangling.error().describe().find("/repo/.github/workflows/new.yml is kept read-only "
                                           "but links to /repo/ci/new.yml, which does not "
                                           "exist") != std::string::npos);
}

// The red teams' spellings: each leads into the worktree for the
// sandbox or the host, or through a link that a sandbox could retarget, or
// somewhere that depends on who reads it.
TEST_CASE("worktree masks: a link's text is read as the sandbox and the host would read it") {
    TempDir parent;
    const std::string top = parent.path() + "/wt (deleted)";  // a name the kernel also gives
    for (const char* f : {"docs/a.md", "docs/b.md", "docs/c.md", "docs/d.md", "a/docs/e.md",
                          "scripts/pc.sh", "config/local.env"})
        writeFile(top + "/" + f, "x");
    REQUIRE(mkdir((top + "/a/b").c_str(), 0755) == 0);
    auto link = [&](const std::string& to, const std::string& at) {
        REQUIRE(symlink(to.c_str(), (top + "/" + at).c_str()) == 0);
    };
    link("//repo/docs/a.md", "A.md");
    link("../repo/docs/b.md", "B.md");  // above the sandbox's root, and back into /repo
    link("/./repo//docs/./c.md", "C.md");
    link(top + "/docs/d.md", "D.md");  // the worktree's own host path
    // A directory kept read-only because a link leads there: the links in
    // it keep their targets read-only as in .github/workflows.
    REQUIRE(mkdir((top + "/githooks").c_str(), 0755) == 0);
    link("../scripts/pc.sh", "githooks/pre-commit");
    REQUIRE(mkdir((top + "/.git").c_str(), 0755) == 0);
    link("../githooks", ".git/hooks");
    link("config/local.env", ".env");
    WorktreeMaskRules rules;
    rules.hide = {".env"};
    rules.read_only = {"*.md", ".git"};
    auto s = scan(top, rules);
    REQUIRE(s);
    CHECK(names(s->read_only) == std::vector<std::string>{".git", "A.md", "B.md", "C.md", "D.md",
                                                          "a/docs/e.md", "docs/a.md", "docs/b.md",
                                                          "docs/c.md", "docs/d.md", "githooks",
                                                          "scripts/pc.sh"});
    CHECK(names(s->hidden) == std::vector<std::string>{".env", "config/local.env"});
    // The hidden target's directories are held in place: a rename of
    // `config` would keep local.env out of every pattern.
    for (const MaskedName& m : s->hidden) CHECK(m.pin_above == (m.relative == "config/local.env"));

    // Refused: `..` after a link (the kernel's `lnk/..` is not the text's),
    // `..` after a name in a text that leaves the worktree (the third red
    // team's: `/dev/fd/../root/...` is /proc/self/root/...), and a path
    // through /proc or /dev/fd.
    for (const auto& [to, why] : std::vector<std::pair<std::string, std::string>>{
             {"lnk/../docs/a.md", "reached only through another link"},
             {"/proc/self/cwd/docs/a.md", "depends on the process that reads it"},
             {"../../../../../../dev/fd/3", "depends on the process that reads it"},
             {"/dev/fd/../root/tmp/x", "`..` after a name"},
             {"/dev/fd/../cwd/notes.txt", "`..` after a name"},
             {"../x/lnk/../docs/a.md", "`..` after a name"},
             {"/tmp/../tmp/x", "`..` after a name"},
             {"/repo/../repo/docs/a.md", "`..` after a name"}}) {
        TempDir other;
        writeFile(other.path() + "/docs/a.md", "x");
        REQUIRE(mkdir((other.path() + "/a").c_str(), 0755) == 0);
        REQUIRE(symlink("a", (other.path() + "/lnk").c_str()) == 0);
        REQUIRE(symlink(to.c_str(), (other.path() + "/AGENTS.md").c_str()) == 0);
        WorktreeMaskRules agents;
        agents.read_only = {"AGENTS.md"};
        auto refused = scan(other.path(), agents);
        INFO(to);
        REQUIRE_FALSE(refused);
        CHECK(refused.error().describe().find(why) != std::string::npos);
    }
}

// A hidden directory an earlier sandbox made holding links (`.aws/
// credentials -> ../notes/c`): a host tool writing the credentials follows
// them, so their targets are hidden too, in a hidden directory reached
// through a hidden link as well; nothing else below a hidden directory is
// judged. A target with another name is said, as a hidden file's is.
TEST_CASE("worktree masks: links below a hidden directory have their targets hidden") {
    TempDir wt;
    const std::string top = wt.path();
    for (const char* f : {"notes/c", "notes/k", "notes/other", "conf/plain"})
        writeFile(top + "/" + f, "x");
    REQUIRE(mkdir((top + "/.aws").c_str(), 0755) == 0);
    REQUIRE(symlink("../notes/c", (top + "/.aws/credentials").c_str()) == 0);
    REQUIRE(symlink("conf", (top + "/.ssh").c_str()) == 0);
    REQUIRE(symlink("../notes/k", (top + "/conf/id_ed25519.pub").c_str()) == 0);
    REQUIRE(symlink("notes/other", (top + "/.npmrc").c_str()) == 0);
    REQUIRE(link((top + "/notes/other").c_str(), (top + "/notes/other2").c_str()) == 0);
    WorktreeMaskRules rules;
    rules.hide = {".aws", ".ssh", ".npmrc"};
    auto s = scan(top, rules);
    REQUIRE(s);
    CHECK(names(s->hidden) == std::vector<std::string>{".aws", ".npmrc", ".ssh", "conf", "notes/c",
                                                       "notes/k", "notes/other"});
    CHECK(s->linked_count == 1);
    CHECK(s->linked == std::vector<std::string>{"/repo/notes/other"});
}

// A --mount is a second place the sandbox reaches: a hidden link that leads
// there (as the sandbox or the host reads it) would hand it what a host
// tool writes; a read-only one that leads into a writable mount would hand
// a host reader what the sandbox wrote. Both refuse the run.
TEST_CASE("worktree masks: a link into a place the sandbox mounts is refused") {
    TempDir wt, mounted;
    writeFile(mounted.path() + "/a.md", "x");
    const MountedPlace ro{"/data", mounted.path(), false};
    const MountedPlace rw{"/data", mounted.path(), true};
    struct Case {
        std::string name, to;
        MountedPlace place;
        bool refused;
    };
    for (const Case& c : std::vector<Case>{{".env", mounted.path() + "/leak", ro, true},
                                           {".env", "/data/leak", ro, true},
                                           {"AGENTS.md", mounted.path() + "/a.md", ro, false},
                                           {"AGENTS.md", mounted.path() + "/a.md", rw, true},
                                           {"AGENTS.md", "/data/a.md", rw, true},
                                           {"AGENTS.md", "/elsewhere/a.md", rw, false}}) {
        TempDir top;
        REQUIRE(symlink(c.to.c_str(), (top.path() + "/" + c.name).c_str()) == 0);
        WorktreeMaskRules rules;
        rules.hide = {".env"};
        rules.read_only = {"AGENTS.md"};
        rules.mounted = {c.place};
        auto s = scan(top.path(), rules);
        INFO(c.name << " -> " << c.to << (c.place.writable ? " (rw)" : " (ro)"));
        CHECK(!s == c.refused);
        if (!s)
            CHECK(s.error().describe().find("which the sandbox reaches by --mount") !=
                  std::string::npos);
    }
}

TEST_CASE("worktree masks: bounds on entries and depth, and no walk below a hidden directory") {
    TempDir wt;
    writeFile(wt.path() + "/.env", "x");
    writeFile(wt.path() + "/.ssh/deep/.env", "x");  // below a hidden directory
    std::string deep = wt.path();
    for (int i = 0; i < 6; ++i) deep += "/d";
    writeFile(deep + "/.env", "x");
    WorktreeMaskRules rules;
    rules.hide = {".env", ".ssh"};
    rules.max_depth = 3;
    auto s = scan(wt.path(), rules);
    REQUIRE(s);
    CHECK(names(s->hidden) == std::vector<std::string>{".env", ".ssh"});
    CHECK(s->truncated_by == "max_depth");
    rules.max_depth = 24;
    rules.max_entries = 3;
    s = scan(wt.path(), rules);
    REQUIRE(s);
    CHECK(s->entries == 3);
    CHECK(s->truncated_by == "max_entries");
}

TEST_CASE("worktree masks: more names than can be covered is an error, not a partial cover") {
    TempDir wt;
    for (size_t i = 0; i <= kMaxMaskedNames; ++i)
        writeFile(wt.path() + "/.env." + std::to_string(i), "x");
    WorktreeMaskRules rules;
    rules.hide = {".env.*"};
    auto s = scan(wt.path(), rules);
    REQUIRE_FALSE(s);
    CHECK(s.error().text().find("refusing") != std::string::npos);
}

// Directories of one depth are listed on several threads (where the process
// may run on more than one CPU) and judged in one order: the walk's result is
// the same, name for name and in the same order, every time.
TEST_CASE("worktree masks: a wide tree gives the same walk, in the same order, every time") {
    TempDir wt;
    for (int p = 0; p < 400; ++p) {
        const std::string pkg = wt.path() + "/node_modules/p" + std::to_string(p);
        for (int f = 0; f < 5; ++f) writeFile(pkg + "/lib/f" + std::to_string(f) + ".js", "x");
        if (p % 7 == 0) writeFile(pkg + "/lib/.env", "x");
        if (p % 50 == 0) writeFile(pkg + "/AGENTS.md", "x");
    }
    WorktreeMaskRules rules;
    rules.hide = {".env"};
    rules.read_only = {"AGENTS.md"};
    auto first = scan(wt.path(), rules);
    REQUIRE(first);
    CHECK(first->hidden.size() == 58);  // 0, 7, ... 399
    CHECK(first->read_only.size() == 8);
    CHECK(first->entries == 1 + 400 + 400 + 400 * 5 + 58 + 8);
    CHECK(first->truncated_by.empty());
    for (int i = 0; i < 5; ++i) {
        auto again = scan(wt.path(), rules);
        REQUIRE(again);
        std::vector<std::string> a, b;
        for (const MaskedName& m : first->hidden) a.push_back(m.relative);
        for (const MaskedName& m : again->hidden) b.push_back(m.relative);
        CHECK(a == b);
        CHECK(again->entries == first->entries);
    }
    // The bound holds across the threads: past it, cut, whatever the order.
    rules.max_entries = 1000;
    auto bounded = scan(wt.path(), rules);
    REQUIRE(bounded);
    CHECK(bounded->truncated_by == "max_entries");
    CHECK(bounded->entries == 1000);
}

// The walk after the run reads a directory again unless it is the same inode
// with the same ctime and that ctime was settled (older than the walk by more
// than a clock tick could blur). Planted here: a record that lost a name.
TEST_CASE("worktree masks: the walk after the run trusts only settled, unchanged directories") {
    TempDir wt;
    writeFile(wt.path() + "/pkg/.env", "x");
    writeFile(wt.path() + "/pkg/sub/file", "x");
    WorktreeMaskRules rules;
    rules.hide = {".env"};
    UniqueFd fd(open(wt.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(fd);
    WalkedDirs walked;
    auto before = scanWorktree(fd.get(), rules, nullptr, &walked);
    REQUIRE(before);
    REQUIRE(walked.count("pkg") == 1);
    // Made just now: not settled, so listed again, whatever was kept.
    CHECK_FALSE(walked["pkg"].settled);
    walked["pkg"].names.clear();
    auto after = scanWorktree(fd.get(), rules, &walked);
    REQUIRE(after);
    CHECK(names(after->hidden) == std::vector<std::string>{"pkg/.env"});
    // Settled and unchanged: trusted, so the record's (planted) word stands:
    // no subdirectory, and no name but those kept (none here).
    walked["pkg"].settled = true;
    WalkedDirs again;
    auto trusted = scanWorktree(fd.get(), rules, &walked, &again);
    REQUIRE(trusted);
    CHECK(again["pkg"].names.empty());
    CHECK(trusted->reused >= 1);
    CHECK(trusted->hidden.empty());
    // Changed since (a name added): its ctime moved, listed again.
    writeFile(wt.path() + "/pkg/.env.new", "x");
    rules.hide = {".env", ".env.*"};
    auto changed = scanWorktree(fd.get(), rules, &walked);
    REQUIRE(changed);
    CHECK(names(changed->hidden) == std::vector<std::string>{"pkg/.env", "pkg/.env.new"});
}

// A directory the walk cannot open for a reason that says nothing of what it
// holds (here EMFILE) cuts the walk, whoever owns it: only EACCES on someone
// else's directory (which the sandbox cannot open either) is counted and
// passed over.
TEST_CASE("worktree masks: a directory the walk cannot open for want of an fd cuts the walk") {
    TempDir wt;
    writeFile(wt.path() + "/.env", "x");
    // Someone else's, as a root run's worktree is: once passed over.
    REQUIRE(chown(wt.path().c_str(), 65534, 65534) == 0);
    UniqueFd fd(open(wt.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(fd);
    WorktreeMaskRules rules;
    rules.hide = {".env"};
    // The lowest free fd: the walk's fd on the worktree takes it, and the
    // limit leaves no other.
    const int lowest = dup(0);
    REQUIRE(lowest >= 0);
    close(lowest);
    rlimit saved{};
    REQUIRE(getrlimit(RLIMIT_NOFILE, &saved) == 0);
    // Room for the walk's own fd on the worktree, none for a directory.
    rlimit tight = saved;
    tight.rlim_cur = static_cast<rlim_t>(lowest + 1);
    REQUIRE(setrlimit(RLIMIT_NOFILE, &tight) == 0);
    auto s = scanWorktree(fd.get(), rules);
    setrlimit(RLIMIT_NOFILE, &saved);
    REQUIRE(s);
    CHECK(s->truncated_by == "unlistable");
    CHECK(s->incomplete.find("EMFILE") != std::string::npos);
    CHECK(s->unlistable == 0);
}

// The walk after a run is skipped when every directory the walk before it
// judged kept its inode and settled ctime (noteCreatedMaskedNames): times a
// process may set (mtime, atime) do not count, a name added, a directory
// renamed or swapped for a link, or a ctime not yet settled, each does.
TEST_CASE("worktree masks: directories unchanged since the walk are told by ctime alone") {
    TempDir wt;
    writeFile(wt.path() + "/a/b/file", "x");
    writeFile(wt.path() + "/c/d/file", "x");
    WorktreeMaskRules rules;
    rules.hide = {".env"};
    UniqueFd fd(open(wt.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(fd);
    struct stat top;
    REQUIRE(fstat(fd.get(), &top) == 0);
    const dev_t dev = top.st_dev;
    auto walk = [&](WalkedDirs& record) {
        auto s = scanWorktree(fd.get(), rules, nullptr, &record);
        REQUIRE(s);
        CHECK(s->visited_whole);
        CHECK(s->visited.size() == 5);  // the top, a, a/b, c, c/d
        return s->visited;
    };
    WalkedDirs fresh;
    // Made just now: not settled, so never told unchanged.
    CHECK_FALSE(allUnchanged(fd.get(), dev, walk(fresh)));
    std::this_thread::sleep_for(std::chrono::milliseconds(3100));
    WalkedDirs record;
    const std::vector<VisitedDir> visited = walk(record);
    CHECK(allUnchanged(fd.get(), dev, visited));
    // The same directories judged for another device (one mounted inside
    // the worktree, whose ctimes were not judged local): never unchanged.
    CHECK_FALSE(allUnchanged(fd.get(), dev + 1, visited));
    // Times set back by the owner: the ctime moves (to now), told apart.
    const timespec old[2] = {{1000000000, 0}, {1000000000, 0}};
    REQUIRE(utimensat(AT_FDCWD, (wt.path() + "/a/b").c_str(), old, 0) == 0);
    CHECK_FALSE(allUnchanged(fd.get(), dev, visited));
    WalkedDirs record2;
    std::this_thread::sleep_for(std::chrono::milliseconds(3100));
    const std::vector<VisitedDir> again = walk(record2);
    REQUIRE(allUnchanged(fd.get(), dev, again));
    // A name added deep, the times then set back.
    writeFile(wt.path() + "/c/d/.env", "x");
    REQUIRE(utimensat(AT_FDCWD, (wt.path() + "/c/d").c_str(), old, 0) == 0);
    CHECK_FALSE(allUnchanged(fd.get(), dev, again));
    // A directory swapped for a link to itself renamed: told by its parent
    // and by the link, which fstatat does not follow.
    WalkedDirs record3;
    std::this_thread::sleep_for(std::chrono::milliseconds(3100));
    const std::vector<VisitedDir> third = walk(record3);
    REQUIRE(allUnchanged(fd.get(), dev, third));
    REQUIRE(rename((wt.path() + "/a/b").c_str(), (wt.path() + "/a/b2").c_str()) == 0);
    REQUIRE(symlink("b2", (wt.path() + "/a/b").c_str()) == 0);
    CHECK_FALSE(allUnchanged(fd.get(), dev, third));
}

// A directory taken unchanged from an earlier walk is found by one fstatat,
// which may pass through a link a concurrent writer made above it; its
// matching names are then stated through no link at all, so the name behind
// that link is unexaminable (ELOOP, and the run refused), never another
// file's identity taken for it.
TEST_CASE("worktree masks: a matching name of an unchanged directory is stated through no link") {
    TempDir wt;
    writeFile(wt.path() + "/a/b/.env", "x");
    WorktreeMaskRules rules;
    rules.hide = {".env"};
    UniqueFd fd(open(wt.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(3100));
    WalkedDirs record;
    REQUIRE(scanWorktree(fd.get(), rules, nullptr, &record));
    REQUIRE(record.count("a/b") == 1);
    REQUIRE(record["a/b"].settled);
    // "a" moved aside and a link left in its place: a/b is still the same
    // inode with the same ctime, reached through the link.
    REQUIRE(rename((wt.path() + "/a").c_str(), (wt.path() + "/a2").c_str()) == 0);
    REQUIRE(symlink("a2", (wt.path() + "/a").c_str()) == 0);
    const MaskPatternSet hide(rules.hide), none(std::vector<std::string>{});
    const ListingRules listing{hide, none, none, none, &record, nullptr, 1000};
    std::vector<DirListing> dirs(1);
    dirs[0].relative = "a/b";
    dirs[0].depth = 3;
    std::atomic<uint64_t> seen{0};
    UniqueFd root(open(wt.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    listDirectories(root.get(), listing, dirs, seen);
    REQUIRE(dirs[0].outcome == DirListing::Outcome::Unchanged);
    REQUIRE(dirs[0].interesting.size() == 1);
    CHECK(dirs[0].interesting[0].name == ".env");
    CHECK(dirs[0].interesting[0].stat_errno == ELOOP);
}

// The rule the check after a walk judges each restated directory by
// (scanWorktreeHeldStill): its own device's, a ctime a later change would
// have replaced.
TEST_CASE("worktree masks: a restated directory is trusted by its own device's rule",
          "[masks][walk]") {
    SteadyRule rule;
    rule.coarse_start = {1000, 500'000'000};
    rule.devices = {{1, true, true}, {2, true, false}, {3, false, false}};
    auto dir = [](dev_t dev, timespec ctime, bool has_btime) {
        WalkedDir d;
        d.dev = dev;
        d.ctime = ctime;
        d.has_btime = has_btime;
        return d;
    };
    // Exact after a read, with a birth time: any ctime.
    CHECK(rule.trusts(dir(1, {1000, 900'000'000}, true)));
    // The same device without a birth time (whole seconds): an earlier second only.
    CHECK(rule.trusts(dir(1, {999, 0}, false)));
    CHECK_FALSE(rule.trusts(dir(1, {1000, 0}, false)));
    // By the clock, with nanoseconds: strictly older than the walk's start.
    CHECK(rule.trusts(dir(2, {1000, 499'999'999}, true)));
    CHECK_FALSE(rule.trusts(dir(2, {1000, 500'000'000}, true)));
    CHECK_FALSE(rule.trusts(dir(2, {1001, 0}, true)));
    CHECK(rule.trusts(dir(2, {999, 0}, false)));
    CHECK_FALSE(rule.trusts(dir(2, {1000, 0}, false)));
    // Not the local kernel's ctimes: not judged by them.
    CHECK(rule.trusts(dir(3, {5000, 0}, false)));
    // A device the rule does not know: never trusted.
    CHECK_FALSE(rule.trusts(dir(4, {1, 0}, true)));
}
