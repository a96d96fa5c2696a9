// runtime/plan/worktree_masks.h: the pattern syntax, the workdir check, and the
// host-side walk (what it matches, what it never follows, its bounds).
#include "runtime/plan/worktree_masks.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>

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
    // out/.env is outside: the link `out` is not followed. .aws is a link,
    // covered as a file, not a directory.
    CHECK(names(s->hidden) == std::vector<std::string>{".aws", "real/.npmrc"});
    for (const MaskedName& m : s->hidden)
        if (m.relative == ".aws") CHECK_FALSE(m.is_dir);
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
