// runtime/plan/walk_cache.h: a walk helped by the kept one gives what a whole
// walk gives, on trees changed in every way a directory's entries can
// change; a kept walk that is not the caller's, not whole or not for these
// rules is passed over.
#include "runtime/plan/walk_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/unit/oracle_test_support.h"

using namespace stockade;
using oracle_test::TempDir;
using oracle_test::writeFile;

namespace {

// What the masks are built from, in walk order.
std::string describe(const WorktreeScan& s) {
    std::string out = "entries=" + std::to_string(s.entries) +
                      " unlistable=" + std::to_string(s.unlistable) + " cut=" + s.truncated_by +
                      " linked=" + std::to_string(s.linked_count) + "\n";
    for (const auto* list : {&s.hidden, &s.read_only}) {
        for (const MaskedName& m : *list)
            out += m.relative + (m.is_dir ? "/ " : " ") + std::to_string(m.dev) + ":" +
                   std::to_string(m.ino) + "\n";
        out += "--\n";
    }
    return out;
}

struct Fixture {
    TempDir state, wt;
    WorktreeMaskRules rules;
    UniqueFd wt_fd, state_fd;

    Fixture() {
        rules.hide = {".env", ".env.*", ".ssh", "credentials.*"};
        rules.read_only = {"AGENTS.md", ".github/workflows"};
        REQUIRE(chmod(state.path().c_str(), 0700) == 0);
        wt_fd = UniqueFd(open(wt.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
        state_fd = UniqueFd(open(state.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        REQUIRE(wt_fd);
        REQUIRE(state_fd);
    }
    WalkCacheKey key() const { return {state_fd.get(), wt_fd.get(), &rules, true}; }
    std::string cacheFile() const {
        for (const auto& e : std::filesystem::directory_iterator(state / "walk-cache"))
            if (e.path().filename().string().starts_with("wt-")) return e.path();
        return "";
    }
    // A whole walk, kept (its settled directories) for the next.
    WorktreeScan walkAndKeep() {
        WalkedDirs walked;
        const int64_t offset = walkClockOffsetNs();
        auto s = scanWorktree(wt_fd.get(), rules, true, nullptr, &walked);
        REQUIRE(s);
        saveWalkCache(key(), walked, offset);
        return *s;
    }
    // The walk helped by the kept one, checked against a whole walk.
    WorktreeScan compare() {
        auto kept = loadWalkCache(key());
        INFO(lastWalkCacheMiss());
        REQUIRE(kept);
        auto cached = scanWorktree(wt_fd.get(), rules, true, kept.get());
        auto whole = scanWorktree(wt_fd.get(), rules);
        REQUIRE(cached);
        REQUIRE(whole);
        CHECK(describe(*cached) == describe(*whole));
        CHECK(whole->reused == 0);
        return *cached;
    }
};

// The kept walk takes only directories whose ctime is older than the walk by
// more than kSettledSeconds (2 s, in whole seconds): wait that out once.
void letSettle() {
    std::this_thread::sleep_for(std::chrono::milliseconds(3100));
}

void makeTree(const std::string& root) {
    writeFile(root + "/.env", "top");
    writeFile(root + "/AGENTS.md", "agents");
    writeFile(root + "/.github/workflows/ci.yml", "ci");
    for (int i = 0; i < 6; ++i) {
        const std::string pkg = root + "/node_modules/p" + std::to_string(i);
        writeFile(pkg + "/lib/index.js", "x");
        writeFile(pkg + "/package.json", "{}");
    }
    writeFile(root + "/node_modules/p1/lib/deep/.env", "deep");
    writeFile(root + "/node_modules/p2/lib/deep/er/credentials.json", "cred");
    writeFile(root + "/other/keep/file", "x");
    writeFile(root + "/moved/inner/.env.local", "m");
}

}  // namespace

TEST_CASE("walk cache: a kept walk gives a whole walk's result on every kind of change") {
    Fixture f;
    makeTree(f.wt.path());
    letSettle();
    const WorktreeScan first = f.walkAndKeep();
    REQUIRE(first.truncated_by.empty());
    REQUIRE(first.hidden.size() == 4);

    // Unchanged: nothing is read but the directories' inodes.
    WorktreeScan same = f.compare();
    CHECK(same.listed_settled == 0);
    CHECK(same.reused > 20);

    const std::string& w = f.wt.path();
    namespace fs = std::filesystem;
    // A directory renamed: the kept path is gone, the new one is new.
    fs::rename(w + "/moved", w + "/renamed");
    // A directory replaced by another of the same name, holding a new secret.
    fs::remove_all(w + "/node_modules/p3/lib");
    writeFile(w + "/node_modules/p3/lib/.ssh/id_rsa", "k");
    // A new hidden name deep in a directory kept unchanged until now.
    writeFile(w + "/node_modules/p4/lib/.env.production", "p");
    // A directory deleted (with the secret it held).
    fs::remove_all(w + "/node_modules/p2/lib/deep");
    // A directory swapped for a symlink to one holding a secret (never
    // followed: judged as itself).
    writeFile(w + "/other/target/.env", "t");
    fs::remove_all(w + "/other/keep");
    fs::create_directory_symlink("target", w + "/other/keep");
    // Two directories exchanged by renames: each path now names the other's
    // inode.
    fs::rename(w + "/node_modules/p0", w + "/node_modules/tmp");
    fs::rename(w + "/node_modules/p5", w + "/node_modules/p0");
    fs::rename(w + "/node_modules/tmp", w + "/node_modules/p5");
    writeFile(w + "/node_modules/p5/lib/.env", "swapped");

    WorktreeScan changed = f.compare();
    CHECK(changed.reused > 0);
    std::vector<std::string> hidden;
    for (const MaskedName& m : changed.hidden) hidden.push_back(m.relative);
    std::sort(hidden.begin(), hidden.end());
    CHECK(hidden == std::vector<std::string>{
                        ".env", "node_modules/p1/lib/deep/.env", "node_modules/p3/lib/.ssh",
                        "node_modules/p4/lib/.env.production", "node_modules/p5/lib/.env",
                        "other/target/.env", "renamed/inner/.env.local"});

    // A hidden file replaced in a directory kept unchanged: impossible without
    // the directory's ctime moving, so it is read again and the new inode is
    // the one covered.
    const std::string deep = w + "/node_modules/p1/lib/deep/.env";
    fs::remove(deep);
    writeFile(deep, "new");
    f.compare();
}

TEST_CASE("walk cache: directories changed within the settling margin are never kept") {
    Fixture f;
    makeTree(f.wt.path());
    f.walkAndKeep();  // everything was made just now: nothing settled
    auto kept = loadWalkCache(f.key());
    REQUIRE(kept);
    CHECK(kept->empty());
}

TEST_CASE("walk cache: a kept walk that is not trusted is passed over") {
    Fixture f;
    makeTree(f.wt.path());
    letSettle();
    f.walkAndKeep();
    const std::string file = f.cacheFile();
    REQUIRE(!file.empty());
    struct stat st;
    REQUIRE(stat(file.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    CHECK(st.st_uid == geteuid());
    struct stat dir;
    REQUIRE(stat((f.state / "walk-cache").c_str(), &dir) == 0);
    CHECK((dir.st_mode & 0777) == 0700);
    std::string good;
    {
        std::ifstream in(file, std::ios::binary);
        good.assign(std::istreambuf_iterator<char>(in), {});
    }
    REQUIRE(loadWalkCache(f.key()));

    auto missFor = [&](auto&& damage) -> std::string {
        std::filesystem::remove(file);
        writeFile(file, good, 0600);
        damage();
        auto kept = loadWalkCache(f.key());
        return kept ? "" : lastWalkCacheMiss();
    };
    CHECK(missFor([&] { truncate(file.c_str(), static_cast<off_t>(good.size() - 3)); }) == "parse");
    CHECK(missFor([&] { truncate(file.c_str(), static_cast<off_t>(good.size() / 2)); }) == "parse");
    CHECK(missFor([&] {
              std::string bad = good;
              bad[bad.size() / 2] ^= 0x5a;
              writeFile(file, bad, 0600);
          }) == "parse");
    CHECK(missFor([&] { writeFile(file, "garbage", 0600); }) == "parse");
    CHECK(missFor([&] { writeFile(file, "", 0600); }) == "size");
    CHECK(missFor([&] { chmod(file.c_str(), 0644); }) == "owner");
    CHECK(missFor([&] {
              std::filesystem::remove(file);
              writeFile(f.state / "elsewhere", good, 0600);
              symlink((f.state / "elsewhere").c_str(), file.c_str());
          }) == "link");
    CHECK(missFor([&] {
              std::filesystem::remove(file);
              mkfifo(file.c_str(), 0600);
          }) == "type");
    CHECK(missFor([&] {
              std::filesystem::remove(file);
              writeFile(f.state / "other", good, 0600);
              link((f.state / "other").c_str(), file.c_str());
          }) == "owner");
    if (geteuid() == 0) CHECK(missFor([&] { chown(file.c_str(), 65534, 65534); }) == "owner");
    // Another profile's walk: the same worktree under other rules.
    CHECK(missFor([&] { f.rules.hide.push_back("*.pem"); }) == "rules");
    f.rules.hide.pop_back();
    CHECK(missFor([&] { f.rules.max_depth = 3; }) == "rules");
    f.rules.max_depth = 64;
    CHECK(missFor([] {}) == "");
    // The cache directory itself opened to others: not used.
    CHECK(missFor([&] { chmod((f.state / "walk-cache").c_str(), 0755); }) == "directory");
    chmod((f.state / "walk-cache").c_str(), 0700);
    // Whatever is passed over, the walk is whole and its result the same.
    std::filesystem::remove(file);
    auto whole = scanWorktree(f.wt_fd.get(), f.rules);
    REQUIRE(whole);
    CHECK(whole->hidden.size() == 4);
}

// The clock a kept walk's `settled` was judged by is the one read before the
// walk, passed to the save: a walk judged while the wall clock stood 1 s
// further from the boot than it does now (stepped back since, as during a
// long run) is not trusted; one judged at this clock is.
TEST_CASE("walk cache: the clock kept is the one before the walk, and a step back drops it") {
    Fixture f;
    makeTree(f.wt.path());
    letSettle();
    const int64_t before = walkClockOffsetNs();
    WalkedDirs walked;
    REQUIRE(scanWorktree(f.wt_fd.get(), f.rules, true, nullptr, &walked));
    saveWalkCache(f.key(), walked, before + 1'000'000'000);
    CHECK_FALSE(loadWalkCache(f.key()));
    CHECK(std::string(lastWalkCacheMiss()) == "clock");
    saveWalkCache(f.key(), walked, before);
    CHECK(loadWalkCache(f.key()));
}

TEST_CASE("walk cache: the number of worktrees kept is bounded") {
    TempDir state;
    REQUIRE(chmod(state.path().c_str(), 0700) == 0);
    UniqueFd state_fd(open(state.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    WorktreeMaskRules rules;
    rules.hide = {".env"};
    std::vector<std::unique_ptr<TempDir>> trees;
    for (size_t i = 0; i < kMaxCacheFiles + 4; ++i) {
        trees.push_back(std::make_unique<TempDir>());
        UniqueFd fd(open(trees.back()->path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
        WalkedDirs walked;
        walked[""] = WalkedDir{1, 2, {1, 0}, true, 0, {}};
        struct stat st;
        REQUIRE(fstat(fd.get(), &st) == 0);
        walked[""].dev = st.st_dev;
        saveWalkCache({state_fd.get(), fd.get(), &rules, true}, walked, walkClockOffsetNs());
    }
    size_t files = 0;
    for (const auto& e : std::filesystem::directory_iterator(state / "walk-cache")) {
        (void)e;
        ++files;
    }
    CHECK(files == kMaxCacheFiles);
}
