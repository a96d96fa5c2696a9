// runtime/plan/git_link.h: a `.git` file is honoured only as a genuine `git
// worktree add` link, judged from what the sandbox cannot have written; and
// base/host_path.h: host paths are held by fd, symlinks refused.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "base/host_path.h"
#include "runtime/plan/git_link.h"
#include "tests/unit/oracle_test_support.h"

using namespace stockade;
using oracle_test::git;
using oracle_test::TempDir;
using oracle_test::writeFile;

namespace {

#define REQUIRE_GIT_FOR_LINK()                                                \
    if (!oracle_test::haveGit()) {                                            \
        oracle_test::skipLoudly("git is not installed; git links unchecked"); \
        return;                                                               \
    }

std::string canonical(const std::string& path) {
    return std::filesystem::canonical(path).string();
}

Result<GitLink> judge(const std::string& worktree, std::vector<std::string> writable = {}) {
    std::string wt = canonical(worktree);
    UniqueFd fd(open(wt.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(fd);
    writable.push_back(wt);
    return judgeGitLink(fd.get(), wt, writable);
}

// The layout `git worktree add` leaves, written by hand: C/worktrees/NAME
// with its back-pointer and commondir, and the worktree's .git file.
void forgeLinkedLayout(const std::string& common, const std::string& worktree) {
    writeFile(common + "/HEAD", "ref: refs/heads/main\n");
    std::filesystem::create_directories(common + "/objects");
    std::filesystem::create_directories(common + "/refs/heads");
    writeFile(common + "/worktrees/wt/HEAD", "ref: refs/heads/wt\n");
    writeFile(common + "/worktrees/wt/commondir", "../..\n");
    writeFile(common + "/worktrees/wt/gitdir", worktree + "/.git\n");
    writeFile(worktree + "/.git", "gitdir: " + common + "/worktrees/wt\n");
}

}  // namespace

TEST_CASE("git_link: a real `git worktree add` link is honoured, its common dir exposed",
          "[git_link]") {
    REQUIRE_GIT_FOR_LINK();
    TempDir dir;
    std::string repo = dir / "repo";
    writeFile(repo + "/file", "one\n");
    git(repo, "init -q -b main");
    git(repo, "add -A");
    git(repo, "commit -q -m one");
    std::string linked = dir / "linked";
    git(repo, "worktree add -q -b feature '" + linked + "'");
    Result<GitLink> link = judge(linked);
    INFO((link.ok() ? std::string() : link.error().describe()));
    REQUIRE(link.ok());
    CHECK(link->kind == GitLink::Kind::Linked);
    CHECK(link->common_dir.path == canonical(repo + "/.git"));
    CHECK(link->git_dir.path == canonical(repo + "/.git/worktrees/linked"));
    // The same layout inside a tree the sandbox can write proves nothing.
    Result<GitLink> writable = judge(linked, {canonical(repo)});
    REQUIRE_FALSE(writable.ok());
    CHECK_THAT(writable.error().describe(), Catch::Contains("which the sandbox can write"));
}

TEST_CASE("git_link: planted .git files expose nothing", "[git_link]") {
    TempDir dir;
    std::string secret = dir / "secret";
    writeFile(secret + "/canary", "canary\n");
    std::string wt = dir / "wt";
    std::filesystem::create_directories(wt);

    SECTION("an absolute gitdir") {
        writeFile(wt + "/.git", "gitdir: " + secret + "\n");
        Result<GitLink> link = judge(wt);
        REQUIRE_FALSE(link.ok());
        CHECK_THAT(link.error().describe(), Catch::Contains("worktrees"));
    }
    SECTION("a relative gitdir") {
        writeFile(wt + "/.git", "gitdir: ../secret\n");
        REQUIRE_FALSE(judge(wt).ok());
    }
    SECTION("a complete layout, but no back-pointer to this worktree") {
        std::string other = dir / "other";
        std::filesystem::create_directories(other);
        forgeLinkedLayout(dir / "repo/.git", other);
        writeFile(wt + "/.git", "gitdir: " + (dir / "repo/.git/worktrees/wt") + "\n");
        Result<GitLink> link = judge(wt);
        REQUIRE_FALSE(link.ok());
        CHECK_THAT(link.error().describe(), Catch::Contains("does not name"));
    }
    SECTION("a hard link of another worktree's genuine .git") {
        std::string other = dir / "other";
        std::filesystem::create_directories(other);
        forgeLinkedLayout(dir / "repo/.git", canonical(other));
        REQUIRE(link((other + "/.git").c_str(), (wt + "/.git").c_str()) == 0);
        REQUIRE(judge(other).ok());
        Result<GitLink> linked = judge(wt);
        REQUIRE_FALSE(linked.ok());
        CHECK_THAT(linked.error().describe(), Catch::Contains("does not name"));
    }
    SECTION("a complete forged layout in a writable --mount") {
        std::string data = dir / "data";
        forgeLinkedLayout(data + "/.git", canonical(wt));
        Result<GitLink> link = judge(wt, {canonical(data)});
        REQUIRE_FALSE(link.ok());
        CHECK_THAT(link.error().describe(), Catch::Contains("which the sandbox can write"));
    }
    SECTION("a commondir that leads elsewhere") {
        forgeLinkedLayout(dir / "repo/.git", canonical(wt));
        writeFile(dir / "repo/.git/worktrees/wt/commondir", secret + "\n");
        Result<GitLink> link = judge(wt);
        REQUIRE_FALSE(link.ok());
        CHECK_THAT(link.error().describe(), Catch::Contains("not"));
    }
    SECTION("a gitdir reached through a symlink") {
        forgeLinkedLayout(dir / "repo/.git", canonical(wt));
        REQUIRE(symlink((dir / "repo").c_str(), (dir / "via").c_str()) == 0);
        writeFile(wt + "/.git", "gitdir: " + (dir / "via/.git/worktrees/wt") + "\n");
        Result<GitLink> link = judge(wt);
        REQUIRE_FALSE(link.ok());
        CHECK_THAT(link.error().describe(), Catch::Contains("symlink"));
    }
    SECTION("a .git that is no regular file, or too large") {
        writeFile(wt + "/.git", "gitdir: " + std::string(8192, 'a') + "\n");
        REQUIRE_FALSE(judge(wt).ok());
        std::filesystem::remove(wt + "/.git");
        REQUIRE(mkfifo((wt + "/.git").c_str(), 0600) == 0);
        REQUIRE_FALSE(judge(wt).ok());  // and did not block
    }
    SECTION("a repository laid out at an earlier run's worktree, not a .git directory") {
        // An earlier run on `earlier` wrote HEAD, objects/, refs/ and
        // worktrees/wt there (its worktree, writable then), and .git in
        // this run's worktree naming it: a bare-looking repository whose
        // exposure would hand this run the earlier worktree's own files.
        std::string earlier = dir / "earlier";
        std::filesystem::create_directories(earlier);
        writeFile(earlier + "/.env", "secret\n");
        forgeLinkedLayout(earlier, canonical(wt));
        Result<GitLink> link = judge(wt);
        REQUIRE_FALSE(link.ok());
        CHECK_THAT(link.error().describe(), Catch::Contains("not a checkout's .git directory"));
    }
    SECTION("the same layout, forged by hand outside the worktree, is honoured") {
        // The judgement is of facts, not of who wrote them: this is what
        // git itself leaves, outside every writable tree.
        forgeLinkedLayout(dir / "repo/.git", canonical(wt));
        Result<GitLink> link = judge(wt);
        INFO((link.ok() ? std::string() : link.error().describe()));
        REQUIRE(link.ok());
        CHECK(link->common_dir.path == canonical(dir / "repo/.git"));
    }
}

TEST_CASE("git_link: a gitdir inside the worktree only narrows", "[git_link]") {
    TempDir dir;
    std::string wt = dir / "wt";
    std::filesystem::create_directories(wt + "/sub/gitdir");
    writeFile(wt + "/.git", "gitdir: sub/gitdir\n");
    Result<GitLink> link = judge(wt);
    REQUIRE(link.ok());
    CHECK(link->kind == GitLink::Kind::InsideWorktree);
    CHECK(link->git_dir_relative == "sub/gitdir");
    CHECK(link->common_dir_relative.empty());
}

TEST_CASE("git_link: a gitdir inside the worktree names its commondir, when that is inside too",
          "[git_link]") {
    TempDir dir;
    std::string wt = dir / "wt";
    std::filesystem::create_directories(wt + "/repos/main/worktrees/x");
    std::filesystem::create_directories(dir / "outside");
    writeFile(wt + "/.git", "gitdir: repos/main/worktrees/x\n");
    // Relative to the gitdir, as git reads it.
    writeFile(wt + "/repos/main/worktrees/x/commondir", "../..\n");
    Result<GitLink> link = judge(wt);
    REQUIRE(link.ok());
    CHECK(link->kind == GitLink::Kind::InsideWorktree);
    CHECK(link->git_dir_relative == "repos/main/worktrees/x");
    CHECK(link->common_dir_relative == "repos/main");
    // One outside the worktree is nothing the sandbox reaches through it.
    writeFile(wt + "/repos/main/worktrees/x/commondir", dir / "outside");
    link = judge(wt);
    REQUIRE(link.ok());
    CHECK(link->common_dir_relative.empty());
}

TEST_CASE("host_path: a symlink in a host path is refused, named, unless followed", "[host_path]") {
    TempDir dir;
    std::string real = dir / "real";
    std::filesystem::create_directories(real + "/inner");
    REQUIRE(symlink(real.c_str(), (dir / "link").c_str()) == 0);

    Result<HeldPath> refused = holdHostPath("--worktree", dir / "link/inner", false);
    REQUIRE_FALSE(refused.ok());
    CHECK_THAT(refused.error().describe(), Catch::Contains(canonical(dir.path()) + "/link"));
    CHECK_THAT(refused.error().describe(), Catch::Contains("symlink"));

    Result<HeldPath> followed = holdHostPath("--worktree", dir / "link/inner", true);
    REQUIRE(followed.ok());
    CHECK(followed->path == canonical(real + "/inner"));

    Result<HeldPath> held = holdHostPath("--worktree", real + "/inner", false);
    REQUIRE(held.ok());
    // Swapped after it was held: the fd is still the directory first opened.
    REQUIRE(rename((real + "/inner").c_str(), (real + "/moved").c_str()) == 0);
    REQUIRE(symlink("/", (real + "/inner").c_str()) == 0);
    struct stat st;
    REQUIRE(fstat(held->get(), &st) == 0);
    CHECK(held->sameFileAs(st));
    struct stat moved;
    REQUIRE(stat((real + "/moved").c_str(), &moved) == 0);
    CHECK(held->sameFileAs(moved));
}
