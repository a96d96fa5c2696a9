// Blob and tree ids against the real git: `git hash-object`, and `git add -A
// && git write-tree` in a fresh repository over the same files.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <random>

#include "oracle/git_objects.h"
#include "oracle/git_tree.h"
#include "oracle/safe_read.h"
#include "tests/unit/oracle_test_support.h"

using namespace stockade;
using namespace stockade::oracle;
using oracle_test::git;
using oracle_test::TempDir;
using oracle_test::writeFile;

namespace {

#define REQUIRE_GIT()                                                   \
    if (!oracle_test::haveGit()) {                                      \
        oracle_test::skipLoudly("git is not installed; ids unchecked"); \
        return;                                                         \
    }

// What git records, from `git ls-files -s -z`: path -> "mode id".
std::map<std::string, std::string> gitIndex(const std::string& dir) {
    std::string out =
        oracle_test::shell(oracle_test::gitEnv() + "git -C '" + dir + "' ls-files -s -z");
    std::map<std::string, std::string> index;
    size_t start = 0;
    while (start < out.size()) {
        size_t end = out.find('\0', start);
        std::string record = out.substr(start, end - start);
        start = end + 1;
        // "MODE ID STAGE\tPATH"
        size_t tab = record.find('\t');
        index[record.substr(tab + 1)] = record.substr(0, 6) + " " + record.substr(7, 40);
    }
    return index;
}

std::map<std::string, std::string> ourIndex(const TreeHash& tree) {
    std::map<std::string, std::string> index;
    for (const auto& [path, file] : tree.files) {
        std::string mode = gitModeText(file.mode);
        index[path] = std::string(6 - mode.size(), '0') + mode + " " + file.id;
    }
    return index;
}

// `git add -A && git write-tree` over a copy of the worktree (so that the
// worktree itself gains no .git), with git's default config.
std::string gitWriteTree(const std::string& worktree, TempDir& scratch) {
    std::string copy = scratch / "copy";
    oracle_test::shell("rm -rf '" + copy + "' && cp -a '" + worktree + "' '" + copy + "'");
    if (!std::filesystem::exists(copy + "/.git")) git(copy, "init -q");
    git(copy, "add -A");
    return git(copy, "write-tree");
}

Result<TreeHash> hashWorktree(const std::string& path, const TreeOptions& options = {}) {
    Result<UniqueFd> fd = openDirectory(path);
    REQUIRE(fd.ok());
    return treeId(fd->get(), options);
}

// Names that sort differently as trees and as files, and a few other kinds.
void makeTrickyWorktree(const std::string& root) {
    writeFile(root + "/a.b", "dot\n");
    writeFile(root + "/a/inside", "in a/\n");
    writeFile(root + "/a-b", "dash\n");
    writeFile(root + "/a0", "zero\n");
    writeFile(root + "/a=b/x", "equals dir\n");
    writeFile(root + "/ab", "");
    writeFile(root + "/empty", "");
    writeFile(root + "/crlf.txt", "one\r\ntwo\r\n");
    writeFile(root + "/binary.bin", std::string("\0\x01\xff\xfe\0", 5));
    writeFile(root + "/run.sh", "#!/bin/sh\necho hi\n", 0755);
    writeFile(root + "/group-exec-only", "x\n", 0654);  // only the owner's x bit counts
    writeFile(root + "/nested/deeper/deepest/leaf.txt", "leaf\n");
    writeFile(root + "/nested/top.txt", "top\n");
    writeFile(root +
                  "/\xc3\xbcnic\xc3\xb6"
                  "de/\xe6\x97\xa5\xe6\x9c\xac.txt",
              "unicode\n");
    writeFile(root + "/with space", "space\n");
    std::filesystem::create_directories(root + "/empty-dir");
    std::filesystem::create_directories(root + "/only-empty/dirs/inside");
    REQUIRE(::symlink("a.b", (root + "/link-to-file").c_str()) == 0);
    REQUIRE(::symlink("/etc/passwd", (root + "/link-absolute").c_str()) == 0);
    REQUIRE(::symlink("nowhere", (root + "/link-dangling").c_str()) == 0);
    REQUIRE(::symlink("nested", (root + "/link-to-dir").c_str()) == 0);
}

}  // namespace

TEST_CASE("blob ids are git hash-object's", "[oracle][git]") {
    REQUIRE_GIT();
    TempDir dir;
    std::mt19937 random(42);
    std::string big(1 << 20, '\0');
    for (char& c : big) c = static_cast<char>(random());
    const std::vector<std::string> contents = {
        "", "hello\n", "no newline", "crlf\r\nlines\r\n", std::string("nul\0inside", 10), big};
    for (size_t i = 0; i < contents.size(); ++i) {
        std::string path = dir / ("f" + std::to_string(i));
        writeFile(path, contents[i]);
        std::string expected = git(dir.path(), "hash-object --no-filters '" + path + "'");
        CHECK(blobId(contents[i]) == expected);
        BlobHasher pieces(contents[i].size());
        for (size_t at = 0; at < contents[i].size(); at += 1000)
            pieces.update(std::string_view(contents[i]).substr(at, 1000));
        CHECK(pieces.hexId() == expected);
    }
    CHECK(blobId("") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
}

TEST_CASE("tree entries sort as git sorts them", "[oracle][git]") {
    // A tree compares as if its name ended in '/': "a.b" < "a/" < "a0".
    CHECK(gitTreeOrder("a.b", GitMode::Regular, "a", GitMode::Tree));
    CHECK(gitTreeOrder("a", GitMode::Tree, "a0", GitMode::Regular));
    CHECK(gitTreeOrder("a-b", GitMode::Regular, "a", GitMode::Tree));
    CHECK(gitTreeOrder("a", GitMode::Regular, "a-b", GitMode::Regular));
    // A gitlink is not a tree here.
    CHECK(gitTreeOrder("a", GitMode::Gitlink, "a.b", GitMode::Regular));
    CHECK(*treeObjectId({}) == "4b825dc642cb6eb9a060e54bf8d69288fbee4904");
    CHECK_FALSE(treeObjectId({{"x", GitMode::Regular, "not-an-id"}}).ok());
}

TEST_CASE("the worktree's tree id is git write-tree's", "[oracle][git]") {
    REQUIRE_GIT();
    TempDir dir;
    std::string worktree = dir / "worktree";
    makeTrickyWorktree(worktree);
    Result<TreeHash> tree = hashWorktree(worktree);
    REQUIRE(tree.ok());
    TempDir scratch;
    CHECK(tree->tree_id == gitWriteTree(worktree, scratch));
    CHECK(ourIndex(*tree) == gitIndex(scratch / "copy"));
    CHECK(tree->files.at("run.sh").mode == GitMode::Executable);
    CHECK(tree->files.at("group-exec-only").mode == GitMode::Regular);
    CHECK(tree->files.at("link-to-dir").mode == GitMode::Symlink);
    CHECK(tree->files.at("link-absolute").id == blobId("/etc/passwd"));
    CHECK(tree->files.count("empty-dir") == 0);
    CHECK_FALSE(tree->has_gitattributes);
}

TEST_CASE("an empty worktree, or one of empty directories, is git's empty tree", "[oracle][git]") {
    TempDir dir;
    std::filesystem::create_directories(dir / "a/b/c");
    std::filesystem::create_directories(dir / ".git/objects");
    Result<TreeHash> tree = hashWorktree(dir.path());
    REQUIRE(tree.ok());
    CHECK(tree->tree_id == "4b825dc642cb6eb9a060e54bf8d69288fbee4904");
    CHECK(tree->files.empty());
}

TEST_CASE(".git is left out at any depth, and the repository's own .git too", "[oracle][git]") {
    REQUIRE_GIT();
    TempDir dir;
    std::string worktree = dir / "worktree";
    writeFile(worktree + "/file", "x\n");
    git(worktree, "init -q");
    git(worktree, "add -A");
    git(worktree, "commit -q -m one");
    Result<TreeHash> tree = treeIdOfWorktree(worktree);
    REQUIRE(tree.ok());
    CHECK(tree->tree_id == git(worktree, "write-tree"));
    CHECK(tree->files.size() == 1);
}

TEST_CASE(".gitignore and info/exclude leave out what git add -A leaves out", "[oracle][git]") {
    REQUIRE_GIT();
    TempDir dir;
    std::string w = dir / "worktree";
    writeFile(w + "/.gitignore",
              "# comment\n"
              "*.log\n"
              "!keep.log\n"
              "/build/\n"
              "node_modules\n"
              "docs/**/*.tmp\n"
              "**/cache\n"
              "trailing-space   \n"
              "escaped\\ space\\ \n"
              "\\#hash\n"
              "\\!bang\n"
              "[abc]x.txt\n"
              "[!q]y.txt\n"
              "dir-only/\n"
              "deep/a/**\n"
              "crlf-pattern\r\n"
              "*.[oa]\n");
    for (const char* path : {"app.log",
                             "keep.log",
                             "sub/app.log",
                             "sub/keep.log",
                             "build/out",
                             "src/build/out",
                             "node_modules/x/index.js",
                             "pkg/node_modules/y",
                             "docs/a/b/c.tmp",
                             "docs/c.tmp",
                             "x/cache/entry",
                             "cache/entry",
                             "trailing-space",
                             "escaped space ",
                             "#hash",
                             "!bang",
                             "ax.txt",
                             "dx.txt",
                             "qy.txt",
                             "zy.txt",
                             "dir-only/file",
                             "sub/dir-only",
                             "deep/a/b/c",
                             "deep/b/c",
                             "crlf-pattern",
                             "main.o",
                             "lib.a",
                             "main.c",
                             "kept.txt"})
        writeFile(w + "/" + path, std::string(path) + "\n");
    // A deeper .gitignore overrides a shallower one, and re-includes.
    writeFile(w + "/sub/.gitignore", "!app.log\nlocal-only\n");
    writeFile(w + "/sub/local-only", "x\n");
    writeFile(w + "/local-only", "not ignored at the top\n");
    // A negation cannot bring back a file inside an excluded directory.
    writeFile(w + "/.gitignore2-test/.gitignore", "ignored-dir/\n!ignored-dir/back\n");
    writeFile(w + "/.gitignore2-test/ignored-dir/back", "x\n");
    // A symlinked .gitignore is not followed (git 2.32+).
    writeFile(w + "/linked/real-ignore", "*\n");
    writeFile(w + "/linked/file", "x\n");
    REQUIRE(::symlink("real-ignore", (w + "/linked/.gitignore").c_str()) == 0);

    git(w, "init -q");
    writeFile(w + "/.git/info/exclude", "excluded-by-info\n");
    writeFile(w + "/excluded-by-info", "x\n");

    Result<TreeHash> tree = treeIdOfWorktree(w);
    REQUIRE(tree.ok());
    git(w, "add -A");
    CHECK(ourIndex(*tree) == gitIndex(w));
    CHECK(tree->tree_id == git(w, "write-tree"));
    CHECK(std::find(tree->ignored.begin(), tree->ignored.end(), "build/") != tree->ignored.end());
    CHECK(std::find(tree->ignored.begin(), tree->ignored.end(), "excluded-by-info") !=
          tree->ignored.end());
}

TEST_CASE("a nested repository is a gitlink to its HEAD commit", "[oracle][git]") {
    REQUIRE_GIT();
    TempDir dir;
    std::string w = dir / "worktree";
    writeFile(w + "/top.txt", "top\n");
    writeFile(w + "/vendor/lib/lib.c", "int x;\n");
    git(w + "/vendor/lib", "init -q");
    git(w + "/vendor/lib", "add -A");
    git(w + "/vendor/lib", "commit -q -m lib");
    std::string lib_head = git(w + "/vendor/lib", "rev-parse HEAD");
    // A directory whose .git is not a repository is an ordinary directory.
    writeFile(w + "/fake/.git", "not a gitdir file\n");
    writeFile(w + "/fake/file", "x\n");

    Result<TreeHash> tree = treeIdOfWorktree(w);
    REQUIRE(tree.ok());
    CHECK(tree->files.at("vendor/lib").mode == GitMode::Gitlink);
    CHECK(tree->files.at("vendor/lib").id == lib_head);
    CHECK(tree->files.count("vendor/lib/lib.c") == 0);
    CHECK(tree->files.count("fake/file") == 1);
    git(w, "init -q");
    git(w, "add -A");
    CHECK(ourIndex(*tree) == gitIndex(w));
    CHECK(tree->tree_id == git(w, "write-tree"));
}

TEST_CASE("a submodule with a gitdir file is a gitlink too", "[oracle][git]") {
    REQUIRE_GIT();
    TempDir dir;
    std::string lib = dir / "lib";
    writeFile(lib + "/lib.c", "int x;\n");
    git(lib, "init -q");
    git(lib, "add -A");
    git(lib, "commit -q -m lib");
    std::string super = dir / "super";
    writeFile(super + "/main.c", "int main;\n");
    git(super, "init -q");
    git(super, "-c protocol.file.allow=always submodule --quiet add '" + lib + "' sub");
    git(super, "add -A");
    git(super, "commit -q -m super");
    REQUIRE(std::filesystem::is_regular_file(super + "/sub/.git"));

    Result<TreeHash> tree = treeIdOfWorktree(super);
    REQUIRE(tree.ok());
    CHECK(tree->files.at("sub").mode == GitMode::Gitlink);
    CHECK(tree->files.at("sub").id == git(lib, "rev-parse HEAD"));
    CHECK(tree->tree_id == git(super, "write-tree"));
    CHECK(ourIndex(*tree) == gitIndex(super));
}

TEST_CASE("a nested repository with no commit is refused, as git add refuses it", "[oracle][git]") {
    REQUIRE_GIT();
    TempDir dir;
    writeFile(dir / "inner/file", "x\n");
    git(dir / "inner", "init -q");
    Result<TreeHash> tree = hashWorktree(dir.path());
    REQUIRE_FALSE(tree.ok());
    CHECK(tree.error().describe() ==
          "\"inner\" holds a repository with no commit checked out, which git add refuses");
}

TEST_CASE("a nested gitdir may not lead out of the worktree", "[oracle][git]") {
    TempDir dir;
    writeFile(dir / "outside/HEAD", "ref: refs/heads/main\n");
    std::filesystem::create_directories(dir / "outside/objects");
    std::filesystem::create_directories(dir / "outside/refs");
    writeFile(dir / "worktree/nested/.git", "gitdir: " + (dir / "outside") + "\n");
    writeFile(dir / "worktree/nested/file", "x\n");
    writeFile(dir / "worktree/relative/.git", "gitdir: ../../outside\n");
    writeFile(dir / "worktree/relative/file", "y\n");
    Result<TreeHash> tree = hashWorktree(dir / "worktree");
    REQUIRE(tree.ok());
    // Neither is taken for a repository: both are ordinary directories.
    CHECK(tree->files.count("nested/file") == 1);
    CHECK(tree->files.count("relative/file") == 1);
}

TEST_CASE("FIFOs and sockets are left out of the tree and listed", "[oracle][git]") {
    REQUIRE_GIT();
    TempDir dir;
    std::string w = dir / "worktree";
    writeFile(w + "/file", "x\n");
    REQUIRE(::mkfifo((w + "/pipe").c_str(), 0644) == 0);
    Result<TreeHash> tree = hashWorktree(w);
    REQUIRE(tree.ok());
    CHECK(tree->special == std::vector<std::string>{"pipe (FIFO)"});
    git(w, "init -q");
    git(w, "add -A");
    CHECK(tree->tree_id == git(w, "write-tree"));
}

TEST_CASE("a path git refuses has no tree id", "[oracle][git]") {
    TempDir dir;
    writeFile(dir / ".GIT/config", "x\n");
    Result<TreeHash> tree = hashWorktree(dir.path());
    REQUIRE_FALSE(tree.ok());
    CHECK(tree.error().describe() == "\".GIT\": git refuses to add this path");
}

TEST_CASE("tree hashing is bounded", "[oracle][git]") {
    TempDir dir;
    writeFile(dir / "big", std::string(2000, 'x'));
    writeFile(dir / "small", "x");
    TreeOptions options;
    options.limits.max_file_bytes = 1000;
    Result<TreeHash> big = hashWorktree(dir.path(), options);
    REQUIRE_FALSE(big.ok());
    CHECK(big.error().describe() ==
          "hashing \"big\": \"big\" is 2000 bytes, more than the bound of 1000; not read");

    TreeOptions few;
    few.limits.max_entries = 1;
    Result<TreeHash> many = hashWorktree(dir.path(), few);
    REQUIRE_FALSE(many.ok());
    CHECK(many.error().describe() == "the worktree has more than 1 entries");

    TreeOptions total;
    total.limits.max_total_bytes = 1500;
    Result<TreeHash> all = hashWorktree(dir.path(), total);
    REQUIRE_FALSE(all.ok());
    CHECK(all.error().describe().find("the worktree passes 1500 bytes in all") !=
          std::string::npos);
}

TEST_CASE("ignore rules too costly to match give no tree id", "[oracle][git]") {
    TempDir dir;
    std::string pattern;
    for (int i = 0; i < 40; ++i) pattern += "**/";
    std::string deep = dir.path();
    for (int i = 0; i < 30; ++i) deep += "/d";
    writeFile(dir / ".gitignore", pattern + "x\n");
    writeFile(deep + "/y", "y\n");
    Result<TreeHash> tree = hashWorktree(dir.path());
    REQUIRE_FALSE(tree.ok());
    CHECK(tree.error().describe().find("against the ignore rules takes too long") !=
          std::string::npos);
}

TEST_CASE("a .gitattributes file is noticed", "[oracle][git]") {
    TempDir dir;
    writeFile(dir / "sub/.gitattributes", "* text=auto\n");
    Result<TreeHash> tree = hashWorktree(dir.path());
    REQUIRE(tree.ok());
    CHECK(tree->has_gitattributes);
}

TEST_CASE("the difference of two trees names created, changed and deleted files", "[oracle][git]") {
    TempDir dir;
    writeFile(dir / "same", "1\n");
    writeFile(dir / "edited", "1\n");
    writeFile(dir / "chmodded", "1\n");
    writeFile(dir / "removed", "1\n");
    Result<TreeHash> before = hashWorktree(dir.path());
    REQUIRE(before.ok());
    writeFile(dir / "edited", "2\n");
    REQUIRE(::chmod((dir / "chmodded").c_str(), 0755) == 0);
    std::filesystem::remove(dir / "removed");
    writeFile(dir / "new/file", "3\n");
    Result<TreeHash> after = hashWorktree(dir.path());
    REQUIRE(after.ok());
    TreeChanges changes = diffTrees(*before, *after);
    CHECK(changes.created == std::vector<std::string>{"new/file"});
    CHECK(changes.changed == std::vector<std::string>{"chmodded", "edited"});
    CHECK(changes.deleted == std::vector<std::string>{"removed"});
    CHECK(before->tree_id != after->tree_id);
    TreeChanges none = diffTrees(*after, *after);
    CHECK((none.created.empty() && none.changed.empty() && none.deleted.empty()));
}

TEST_CASE("random worktrees and ignore rules agree with git add -A", "[oracle][git]") {
    REQUIRE_GIT();
    // STOCKADE_ORACLE_FUZZ_ROUNDS raises the count for a longer search.
    int rounds = 12;
    if (const char* env = std::getenv("STOCKADE_ORACLE_FUZZ_ROUNDS")) rounds = std::atoi(env);
    const std::vector<std::string> names = {
        "a",   "b",     "a.b",   "a-b",  "a0", "x.log", "keep.log", "build", "cache",
        "sub", "deep",  ".hid",  "[ab]", "*",  "a b",   "#c",       "!d",    "\xc3\xa4",
        "ab",  "a.log", "x.tmp", "k",    "A",  "a\\",   "a.b.c"};
    const std::vector<std::string> patterns = {
        "*.log", "!keep.log", "/build",  "build/",        "**/cache", "sub/**",      "a*",
        "?",     "[ab]",      "\\[ab]",  "deep/**/x.log", "*/a",      "!a",          "a/",
        "!sub/", "*.tmp",     "!*.b",    ".hid",          "a\\ b",    "\\#c",        "\\!d",
        "sub/a", "/sub/a/",   "**/a/**", "a/**/b",        "[!a]*",    "*b",          "k/",
        "!k",    "deep/",     "**/k",    "a.*",           "A",        "[[:upper:]]", "*\\\\",
        "ab/",   "/*",        "!/a.b",   "cache/**",      "d*p/"};
    unsigned seed = 20241130;
    if (const char* env = std::getenv("STOCKADE_ORACLE_FUZZ_SEED"))
        seed = static_cast<unsigned>(std::atoi(env));
    std::mt19937 random(seed);
    for (int round = 0; round < rounds; ++round) {
        TempDir dir;
        std::string w = dir / "w";
        std::filesystem::create_directories(w);
        std::vector<std::string> dirs = {""};
        int files = 5 + static_cast<int>(random() % 30);
        for (int i = 0; i < files; ++i) {
            std::string parent = dirs[random() % dirs.size()];
            std::string path = parent + names[random() % names.size()];
            std::error_code ec;
            if (std::filesystem::symlink_status(w + "/" + path, ec).type() !=
                std::filesystem::file_type::not_found)
                continue;
            switch (random() % 6) {
                case 0:
                case 1:
                    if (parent.size() < 20) {
                        std::filesystem::create_directories(w + "/" + path);
                        dirs.push_back(path + "/");
                    }
                    break;
                case 2:
                    REQUIRE(::symlink(names[random() % names.size()].c_str(),
                                      (w + "/" + path).c_str()) == 0);
                    break;
                default:
                    writeFile(w + "/" + path, path + "\n", random() % 3 == 0 ? 0755 : 0644);
            }
        }
        for (const std::string& parent : dirs) {
            if (random() % 3 != 0) continue;
            std::string content;
            int lines = 1 + static_cast<int>(random() % 6);
            for (int i = 0; i < lines; ++i) content += patterns[random() % patterns.size()] + "\n";
            writeFile(w + "/" + parent + ".gitignore", content);
        }
        Result<TreeHash> tree = hashWorktree(w);
        REQUIRE(tree.ok());
        git(w, "init -q");
        git(w, "add -A");
        std::map<std::string, std::string> ours = ourIndex(*tree);
        std::map<std::string, std::string> theirs = gitIndex(w);
        if (ours != theirs) {
            std::string differences;
            for (const auto& [path, entry] : ours)
                if (theirs.count(path) == 0 || theirs[path] != entry)
                    differences += "ours only: " + path + "\n";
            for (const auto& [path, entry] : theirs)
                if (ours.count(path) == 0 || ours[path] != entry)
                    differences += "git only: " + path + "\n";
            std::string ignores =
                oracle_test::shell("cd '" + w +
                                   "' && find . -name .gitignore -type f | while read -r f; do "
                                   "echo \"== $f\"; cat \"$f\"; done");
            FAIL("round " << round << "\n" << differences << ignores);
        }
        CHECK(tree->tree_id == git(w, "write-tree"));
    }
}
