// HEAD resolved from git's files, against what the real git says
// (`git rev-parse HEAD`, `git symbolic-ref HEAD`) in the layouts git makes.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>

#include "oracle/git_dir_digest.h"
#include "oracle/git_head.h"
#include "oracle/safe_read.h"
#include "tests/unit/oracle_test_support.h"

using namespace stockade;
using namespace stockade::oracle;
using oracle_test::git;
using oracle_test::TempDir;
using oracle_test::writeFile;

namespace {

#define REQUIRE_GIT()                                                    \
    if (!oracle_test::haveGit()) {                                       \
        oracle_test::skipLoudly("git is not installed; HEAD unchecked"); \
        return;                                                          \
    }

// A repository on branch `main` with one commit.
std::string makeRepo(const TempDir& dir, const std::string& name = "repo") {
    std::string repo = dir / name;
    writeFile(repo + "/file", "one\n");
    git(repo, "init -q -b main");
    git(repo, "add -A");
    git(repo, "commit -q -m one");
    return repo;
}

HeadState head(const std::string& worktree) {
    Result<HeadState> state = resolveHead(worktree);
    INFO((state.ok() ? std::string() : state.error().describe()));
    REQUIRE(state.ok());
    return *state;
}

}  // namespace

TEST_CASE("HEAD on a branch with a loose ref", "[oracle][git_head]") {
    REQUIRE_GIT();
    TempDir dir;
    std::string repo = makeRepo(dir);
    HeadState state = head(repo);
    CHECK(state.kind == HeadState::Kind::Branch);
    CHECK(state.refs == std::vector<std::string>{"refs/heads/main"});
    CHECK(state.commit == git(repo, "rev-parse HEAD"));
    CHECK(state.location.git_dir == repo + "/.git");
    CHECK(state.location.common_dir == repo + "/.git");
    CHECK_FALSE(state.location.gitdir_file);
    CHECK(std::string(headKindName(state.kind)) == "branch");
}

TEST_CASE("a detached HEAD holds the commit itself", "[oracle][git_head]") {
    REQUIRE_GIT();
    TempDir dir;
    std::string repo = makeRepo(dir);
    writeFile(repo + "/file", "two\n");
    git(repo, "commit -q -am two");
    git(repo, "checkout -q --detach HEAD~1");
    HeadState state = head(repo);
    CHECK(state.kind == HeadState::Kind::Detached);
    CHECK(state.refs.empty());
    CHECK(state.commit == git(repo, "rev-parse HEAD"));
    CHECK(state.commit != git(repo, "rev-parse main"));
}

TEST_CASE("packed refs, with peeled tag lines, are read", "[oracle][git_head]") {
    REQUIRE_GIT();
    TempDir dir;
    std::string repo = makeRepo(dir);
    git(repo, "tag -a -m annotated v1");
    git(repo, "branch other");
    git(repo, "pack-refs --all");
    REQUIRE_FALSE(std::filesystem::exists(repo + "/.git/refs/heads/main"));
    REQUIRE(oracle_test::readFile(repo + "/.git/packed-refs").find("\n^") != std::string::npos);
    HeadState state = head(repo);
    CHECK(state.kind == HeadState::Kind::Branch);
    CHECK(state.commit == git(repo, "rev-parse HEAD"));

    // A loose ref wins over its packed copy, as in git.
    writeFile(repo + "/file", "two\n");
    git(repo, "commit -q -am two");
    REQUIRE(std::filesystem::exists(repo + "/.git/refs/heads/main"));
    CHECK(head(repo).commit == git(repo, "rev-parse HEAD"));
}

TEST_CASE("a linked worktree has a gitdir file and a commondir", "[oracle][git_head]") {
    REQUIRE_GIT();
    TempDir dir;
    std::string repo = makeRepo(dir);
    std::string linked = dir / "linked";
    git(repo, "worktree add -q -b feature '" + linked + "'");
    writeFile(linked + "/file", "feature\n");
    git(linked, "commit -q -am feature");
    git(repo, "pack-refs --all");  // the branch is now only in the common dir's packed-refs
    REQUIRE(std::filesystem::is_regular_file(linked + "/.git"));

    HeadState state = head(linked);
    CHECK(state.kind == HeadState::Kind::Branch);
    CHECK(state.refs == std::vector<std::string>{"refs/heads/feature"});
    CHECK(state.commit == git(linked, "rev-parse HEAD"));
    CHECK(state.location.gitdir_file);
    // Judged (runtime/plan/git_link.h), so canonical.
    CHECK(state.location.git_dir ==
          std::filesystem::canonical(repo + "/.git/worktrees/linked").string());
    CHECK(state.location.common_dir == std::filesystem::canonical(repo + "/.git").string());
    // The main worktree still sees its own HEAD.
    CHECK(head(repo).commit == git(repo, "rev-parse HEAD"));
    CHECK(head(repo).commit != state.commit);
}

TEST_CASE("a submodule's gitdir file points into the superproject", "[oracle][git_head]") {
    REQUIRE_GIT();
    TempDir dir;
    std::string lib = makeRepo(dir, "lib");
    std::string super = makeRepo(dir, "super");
    git(super, "-c protocol.file.allow=always submodule --quiet add '" + lib + "' sub");
    std::string gitdir_file = oracle_test::readFile(super + "/sub/.git");
    REQUIRE(gitdir_file == "gitdir: ../.git/modules/sub\n");
    // The submodule's checkout as the worktree: its gitdir lies outside it
    // and git leaves no back-pointer there, so nothing tells it from a
    // planted file; it is not read (runtime/plan/git_link.h).
    Result<HeadState> alone = resolveHead(super + "/sub");
    REQUIRE_FALSE(alone.ok());
    CHECK_THAT(alone.error().describe(), Catch::Contains("not a genuine linked worktree"));

    // Confined to the superproject's worktree, it is read.
    Result<UniqueFd> root = openDirectory(super);
    REQUIRE(root.ok());
    Result<HeadState> nested = resolveNestedHead(root->get(), "sub");
    REQUIRE(nested.ok());
    CHECK(nested->commit == git(super + "/sub", "rev-parse HEAD"));
    CHECK(looksLikeNestedRepository(root->get(), "sub"));
}

TEST_CASE("an absolute gitdir from git init --separate-git-dir is not read", "[oracle][git_head]") {
    REQUIRE_GIT();
    TempDir dir;
    std::string repo = dir / "repo";
    writeFile(repo + "/file", "x\n");
    git(repo, "init -q -b main --separate-git-dir '" + (dir / "separate") + "'");
    git(repo, "add -A");
    git(repo, "commit -q -m one");
    // A .git file naming a directory outside the worktree, with no
    // back-pointer: indistinguishable from one the party under test
    // planted, so not read.
    Result<HeadState> state = resolveHead(repo);
    REQUIRE_FALSE(state.ok());
    CHECK_THAT(state.error().describe(), Catch::Contains("not a genuine linked worktree"));
}

TEST_CASE("an unborn branch is unborn, with its name", "[oracle][git_head]") {
    REQUIRE_GIT();
    TempDir dir;
    std::string repo = dir / "repo";
    std::filesystem::create_directories(repo);
    git(repo, "init -q -b trunk");
    HeadState state = head(repo);
    CHECK(state.kind == HeadState::Kind::Unborn);
    CHECK(state.refs == std::vector<std::string>{"refs/heads/trunk"});
    CHECK(state.commit.empty());
    CHECK(std::string(headKindName(state.kind)) == "unborn");
}

TEST_CASE("symbolic refs are followed, and their chains bounded", "[oracle][git_head]") {
    REQUIRE_GIT();
    TempDir dir;
    std::string repo = makeRepo(dir);
    git(repo, "symbolic-ref refs/heads/alias refs/heads/main");
    git(repo, "symbolic-ref HEAD refs/heads/alias");
    HeadState state = head(repo);
    CHECK(state.refs == std::vector<std::string>{"refs/heads/alias", "refs/heads/main"});
    CHECK(state.commit == git(repo, "rev-parse HEAD"));

    // A loop, which git would refuse too.
    writeFile(repo + "/.git/refs/heads/a", "ref: refs/heads/b\n");
    writeFile(repo + "/.git/refs/heads/b", "ref: refs/heads/a\n");
    writeFile(repo + "/.git/HEAD", "ref: refs/heads/a\n");
    Result<HeadState> loop = resolveHead(repo);
    REQUIRE_FALSE(loop.ok());
    CHECK(loop.error().describe() ==
          "more than 5 symbolic refs in a row from HEAD in " + repo + "/.git");
}

TEST_CASE("malformed HEADs and refs are Errors", "[oracle][git_head]") {
    TempDir dir;
    std::string repo = dir / "repo";
    std::filesystem::create_directories(repo + "/.git/refs/heads");
    writeFile(repo + "/.git/HEAD", "garbage\n");
    Result<HeadState> garbage = resolveHead(repo);
    REQUIRE_FALSE(garbage.ok());
    CHECK(garbage.error().describe() == "HEAD in " + repo +
                                            "/.git holds neither \"ref: NAME\" nor an object id: "
                                            "\"garbage\"");

    writeFile(repo + "/.git/HEAD", "ref: refs/heads/../../../../etc/passwd\n");
    Result<HeadState> escape = resolveHead(repo);
    REQUIRE_FALSE(escape.ok());
    CHECK(escape.error().describe().find("malformed ref name") != std::string::npos);

    // The reftable backend's placeholder.
    writeFile(repo + "/.git/HEAD", "ref: refs/heads/.invalid\n");
    Result<HeadState> reftable = resolveHead(repo);
    REQUIRE_FALSE(reftable.ok());
    CHECK(reftable.error().describe().find("reftable") != std::string::npos);

    writeFile(repo + "/.git/HEAD", "ref: refs/heads/main\n");
    writeFile(repo + "/.git/packed-refs", "# pack-refs with: peeled\nnot a line\n");
    Result<HeadState> packed = resolveHead(repo);
    REQUIRE_FALSE(packed.ok());
    CHECK(packed.error().describe().find("packed-refs line 2: expected \"OBJECT-ID REFNAME\"") !=
          std::string::npos);

    // A symlinked loose ref is not followed.
    std::filesystem::remove(repo + "/.git/packed-refs");
    REQUIRE(::symlink("/etc/hostname", (repo + "/.git/refs/heads/main").c_str()) == 0);
    Result<HeadState> link = resolveHead(repo);
    REQUIRE_FALSE(link.ok());
    CHECK(link.error().describe().find("is a symlink") != std::string::npos);

    Result<HeadState> none = resolveHead(dir / "nothing-here");
    CHECK_FALSE(none.ok());
}

TEST_CASE("a nested gitdir file may not name a place outside the worktree", "[oracle][git_head]") {
    TempDir dir;
    writeFile(dir / "worktree/sub/.git", "gitdir: /etc\n");
    Result<UniqueFd> root = openDirectory(dir / "worktree");
    REQUIRE(root.ok());
    Result<HeadState> absolute = resolveNestedHead(root->get(), "sub");
    REQUIRE_FALSE(absolute.ok());
    CHECK(absolute.error().describe().find("which would leave the worktree") != std::string::npos);
    writeFile(dir / "worktree/sub/.git", "gitdir: ../../\n");
    Result<HeadState> relative = resolveNestedHead(root->get(), "sub");
    REQUIRE_FALSE(relative.ok());
    CHECK(relative.error().errnum() == EXDEV);
}

TEST_CASE("the .git digest changes with any change in .git", "[oracle][git_head]") {
    REQUIRE_GIT();
    TempDir dir;
    std::string repo = makeRepo(dir);
    GitLocation location = head(repo).location;
    Result<GitDirDigest> first = digestGitDir(location);
    REQUIRE(first.ok());
    CHECK(first->status == GitDirDigest::Status::Complete);
    CHECK(first->sha256.size() == 64);
    CHECK(first->entries > 10);
    Result<GitDirDigest> again = digestGitDir(location);
    REQUIRE(again.ok());
    CHECK(again->sha256 == first->sha256);

    writeFile(repo + "/file", "two\n");
    git(repo, "commit -q -am two");
    Result<GitDirDigest> moved = digestGitDir(location);
    REQUIRE(moved.ok());
    CHECK(moved->sha256 != first->sha256);

    REQUIRE(::chmod((repo + "/.git/config").c_str(), 0600) == 0);
    Result<GitDirDigest> chmodded = digestGitDir(location);
    REQUIRE(chmodded.ok());
    CHECK(chmodded->sha256 != moved->sha256);

    writeFile(repo + "/.git/hooks/post-checkout", "#!/bin/sh\n", 0755);
    Result<GitDirDigest> hooked = digestGitDir(location);
    REQUIRE(hooked.ok());
    CHECK(hooked->sha256 != chmodded->sha256);
}

TEST_CASE("a .git past the bounds is too large to hash, not hashed in part", "[oracle][git_head]") {
    REQUIRE_GIT();
    TempDir dir;
    std::string repo = makeRepo(dir);
    GitLocation location = head(repo).location;
    GitDirDigestLimits small;
    small.max_total_bytes = 100;
    Result<GitDirDigest> bytes = digestGitDir(location, small);
    REQUIRE(bytes.ok());
    CHECK(bytes->status == GitDirDigest::Status::TooLarge);
    CHECK(bytes->sha256.empty());
    CHECK(bytes->too_large == "more than 100 bytes of content");
    GitDirDigestLimits few;
    few.max_entries = 3;
    Result<GitDirDigest> entries = digestGitDir(location, few);
    REQUIRE(entries.ok());
    CHECK(entries->status == GitDirDigest::Status::TooLarge);
    CHECK(entries->too_large == "more than 3 entries");
}

TEST_CASE("a linked worktree's digest covers its gitdir once, inside the common dir",
          "[oracle][git_head]") {
    REQUIRE_GIT();
    TempDir dir;
    std::string repo = makeRepo(dir);
    std::string linked = dir / "linked";
    git(repo, "worktree add -q -b feature '" + linked + "'");
    GitLocation main_location = head(repo).location;
    GitLocation linked_location = head(linked).location;
    Result<GitDirDigest> main_digest = digestGitDir(main_location);
    Result<GitDirDigest> linked_digest = digestGitDir(linked_location);
    REQUIRE(main_digest.ok());
    REQUIRE(linked_digest.ok());
    // The same common dir, and the linked gitdir lies inside it.
    CHECK(linked_digest->sha256 == main_digest->sha256);
    writeFile(linked + "/file", "changed\n");
    git(linked, "commit -q -am change");
    Result<GitDirDigest> after = digestGitDir(linked_location);
    REQUIRE(after.ok());
    CHECK(after->sha256 != linked_digest->sha256);
}

TEST_CASE("a .git file the candidate planted leads the oracle nowhere", "[oracle][git_head]") {
    TempDir dir;
    // A directory that looks like a git dir, holding a canary: neither its
    // HEAD nor its digest may be taken for the worktree's.
    writeFile(dir / "secret/HEAD", "ref: refs/heads/main\n");
    writeFile(dir / "secret/refs/heads/main", std::string(40, 'a') + "\n");
    std::filesystem::create_directories(dir / "secret/objects");
    writeFile(dir / "secret/canary", "canary\n");
    for (const std::string& named : {dir / "secret", std::string("../secret")}) {
        INFO(named);
        writeFile(dir / "wt/.git", "gitdir: " + named + "\n");
        Result<GitLocation> location = locateGitDir(dir / "wt");
        REQUIRE_FALSE(location.ok());
        CHECK_THAT(location.error().describe(), Catch::Contains("not a genuine linked worktree"));
        REQUIRE_FALSE(resolveHead(dir / "wt").ok());
    }
}
