// G2, issue 21's cost point: the worktree walk kept between runs in the
// caller's state directory (runtime/plan/walk_cache.h). A kept walk never
// hides a stale view: a name a sandbox creates is hidden in the next run,
// however warm the cache; and a kept walk the test (playing the caller's own
// uid outside any sandbox) swaps for a symlink, gives to another user,
// truncates or scribbles on is passed over: the walk is whole and the masks
// hold. What the sandbox reads is the kernel's answer through the probe.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "harness.h"
#include "worktree_mask_names.h"

using namespace stockade::itest;

namespace {

// The caller's state directory as stockade chooses it with no
// XDG_RUNTIME_DIR (the harness sets none), and the kept walk's file there.
std::string cacheFileFor(Mode mode, const std::string& worktree) {
    struct stat st;
    REQUIRE(::stat(worktree.c_str(), &st) == 0);
    char name[64];
    std::snprintf(name, sizeof name, "wt-%llx-%llx", static_cast<unsigned long long>(st.st_dev),
                  static_cast<unsigned long long>(st.st_ino));
    const std::string state =
        mode == Mode::Root ? "/run/stockade" : "/tmp/stockade-" + std::to_string(kNobody);
    return state + "/walk-cache/" + name;
}

// The kept walk of a scratch worktree goes with it.
struct RemoveAtEnd {
    std::string path;
    ~RemoveAtEnd() { ::unlink(path.c_str()); }
};

// Directories whose ctime is not older than the walk by 2 s are never kept.
void letSettle() {
    std::this_thread::sleep_for(std::chrono::milliseconds(3100));
}

// 40 packages of a few files, and a deep directory the sandbox may write.
void makeTree(Sandbox& sandbox) {
    for (int p = 0; p < 40; ++p) {
        const std::string pkg = "worktree/node_modules/pkg" + std::to_string(p) + "/lib/";
        for (int f = 0; f < 3; ++f) sandbox.scratch().writeFile(pkg + "f" + std::to_string(f), "x");
    }
    sandbox.scratch().writeFile("worktree/a/b/c/d/file", "x");
    sandbox.scratch().writeFile("worktree/e/f/g/file", "x");
}

uint64_t reused(const Sandbox& sandbox) {
    const nlohmann::json masks = sandbox.result()["worktree_masks"];
    INFO(masks.dump());
    REQUIRE(masks["directories_reused"].is_number_unsigned());
    return masks["directories_reused"].get<uint64_t>();
}

void expectHidden(Sandbox& sandbox, const std::string& path, const std::string& token) {
    const ProbeRun read = sandbox.probe({"read-file", path});
    INFO(read.describe());
    CHECK(read.result() == "ok");
    CHECK(read.report.get("bytes") == "0");  // the empty cover
    CHECK(read.completed.out.find(token) == std::string::npos);
    CHECK(recordText(sandbox).find(token) == std::string::npos);
}

// A command of the host's (mkfs, losetup, debugfs), its output; nullopt
// when it fails. Paths are the test's own scratch, quoted.
std::optional<std::string> host(const std::string& command) {
    FILE* p = ::popen((command + " 2>&1").c_str(), "r");
    if (!p) return std::nullopt;
    std::string out;
    char buf[512];
    while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    if (::pclose(p) != 0) {
        WARN(command << ": " << out);
        return std::nullopt;
    }
    return out;
}

std::string shellQuoted(const std::string& path) {
    std::string out = "'";
    for (char c : path) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

// An ext4 image on a loop device of the test's own, mounted and unmounted at
// will: the same device (so the same st_dev) for its whole life, detached at
// the end. Root's: only the runs under test are uid 65534's.
struct LoopFilesystem {
    std::string device;
    std::string mounted_at;
    // 256-byte inodes: ext4 keeps a birth time and nanoseconds in them;
    // 128-byte ones (mke2fs's "small") stamp whole seconds.
    explicit LoopFilesystem(const std::string& image, uid_t owner, gid_t group,
                            int inode_size = 256) {
        if (!host("truncate -s 32M " + shellQuoted(image)) ||
            !host("mkfs.ext4 -q -F -I " + std::to_string(inode_size) + " -E root_owner=" +
                  std::to_string(owner) + ":" + std::to_string(group) + " " + shellQuoted(image)))
            return;
        auto dev = host("losetup -f --show " + shellQuoted(image));
        if (!dev || dev->empty() || dev->back() != '\n') return;
        device = dev->substr(0, dev->size() - 1);
    }
    ~LoopFilesystem() {
        unmount();
        if (!device.empty()) host("losetup -d " + shellQuoted(device));
    }
    // Tried again for a bounded while: the device can still be settling
    // from the last unmount (see unmount below); the last errno stands.
    bool mount(const std::string& at) {
        for (int tries = 0; ::mount(device.c_str(), at.c_str(), "ext4", 0, nullptr) != 0; ++tries) {
            if (tries == 100) return false;
            const int err = errno;
            ::usleep(100000);
            errno = err;
        }
        mounted_at = at;
        return true;
    }
    // The mount gone, and the filesystem with it: a run's mount namespace
    // (the rootless sandbox's rbind of the worktree) is torn down after its
    // last process, so the superblock can outlive this umount a while (the
    // sanitized build's slower end showed it): written under a live one by
    // debugfs, the device is then mounted over a superblock still shutting
    // down. ext4 lists a live one under /sys/fs/ext4/DEVICE.
    bool unmount() {
        if (mounted_at.empty()) return true;
        if (::umount(mounted_at.c_str()) != 0) return false;
        mounted_at.clear();
        const std::string live = "/sys/fs/ext4/" + device.substr(device.rfind('/') + 1);
        for (int waited = 0; waited < 3000 && ::access(live.c_str(), F_OK) == 0; ++waited)
            ::usleep(10000);
        return ::access(live.c_str(), F_OK) != 0;
    }
};

// Mounts `fs` at `at`; false (a skip, a failure under CI=true) where this
// host has no loop device with an ext4 filesystem to give.
bool mountedOrSkipped(LoopFilesystem& fs, const std::string& at) {
    if (!fs.device.empty() && fs.mount(at)) return true;
    const std::string why = "no loop device with an ext4 filesystem to mount here";
    if (const char* ci = std::getenv("CI"); ci && std::string_view(ci) == "true")
        FAIL(why << " (CI=true turns this skip into a failure)");
    WARN("SKIPPED, NOT TESTED: " << why);
    return false;
}

struct statx statxOf(const std::string& path) {
    struct statx x {};
    REQUIRE(::statx(AT_FDCWD, path.c_str(), AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS | STATX_BTIME,
                    &x) == 0);
    return x;
}

}  // namespace

TEST_CASE(
    "G2: a name a sandbox creates deep in a worktree whose walk is kept is hidden in the "
    "next run",
    "[G2][filesystem][masks]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    makeTree(sandbox);
    const RemoveAtEnd cache{cacheFileFor(mode, sandbox.worktree())};
    ::unlink(cache.path.c_str());
    letSettle();

    // The first run walks whole and keeps the walk, the caller's, 0600.
    Completed first = sandbox.run({"/bin/true"});
    INFO(first.describe());
    REQUIRE(first.exitCode == 0);
    CHECK(reused(sandbox) == 0);
    struct stat st;
    REQUIRE(::lstat(cache.path.c_str(), &st) == 0);
    CHECK(S_ISREG(st.st_mode));
    CHECK((st.st_mode & 0777) == 0600);
    CHECK(st.st_uid == invokingUid(mode));
    Completed warm = sandbox.run({"/bin/true"});
    REQUIRE(warm.exitCode == 0);
    CHECK(reused(sandbox) > 80);

    // The sandbox creates a .env four directories down and ends at once:
    // its directory's ctime moved, so the kept listing of it is not used.
    const std::string token = randomToken("created");
    Completed create = sandbox.run({"/bin/sh", "-c", "printf " + token + " > /repo/a/b/c/d/.env"});
    INFO(create.describe());
    REQUIRE(create.exitCode == 0);
    CHECK(sandbox.result()["worktree_masks"]["created"]["count"] == 1);
    expectHidden(sandbox, "/repo/a/b/c/d/.env", token);
    CHECK(reused(sandbox) > 80);

    // Created, then the run lasts past the settling margin: the walk after
    // it keeps the directory with the new name, and every later run, from
    // the kept walk alone, still covers it.
    const std::string later = randomToken("settled");
    Completed settle = sandbox.run(
        {"/bin/sh", "-c", "printf " + later + " > /repo/e/f/g/.env.local && sleep 3.2"});
    INFO(settle.describe());
    REQUIRE(settle.exitCode == 0);
    expectHidden(sandbox, "/repo/e/f/g/.env.local", later);
    expectHidden(sandbox, "/repo/a/b/c/d/.env", token);
    const nlohmann::json masks = sandbox.result()["worktree_masks"];
    INFO(masks.dump());
    CHECK(masks["hidden"]["count"] == 2);
    CHECK(reused(sandbox) > 80);
    CHECK(readFileOrEmpty(sandbox.worktree() + "/a/b/c/d/.env") == token);
}

TEST_CASE(
    "G2: a kept walk swapped for a symlink, another user's file, truncated or garbage is "
    "passed over and the masks hold",
    "[G2][filesystem][masks]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    makeTree(sandbox);
    const std::string token = randomToken("deep");
    sandbox.scratch().writeFile("worktree/node_modules/pkg39/lib/.env", token);
    const RemoveAtEnd cache{cacheFileFor(mode, sandbox.worktree())};
    ::unlink(cache.path.c_str());
    // Where the symlink leads: a file of the caller's the run must not write.
    const std::string decoy = sandbox.scratch().writeFile("decoy", "decoy\n", 0600);
    letSettle();
    const uid_t uid = invokingUid(mode);
    const gid_t gid = invokingGid(mode);
    const uid_t other = mode == Mode::Root ? kNobody : 1;

    struct Damage {
        const char* what;
        std::function<void(const std::string&)> apply;
    };
    const std::vector<Damage> damages = {
        {"a symlink to the caller's file",
         [&](const std::string& file) {
             REQUIRE(::unlink(file.c_str()) == 0);
             REQUIRE(::symlink(decoy.c_str(), file.c_str()) == 0);
             REQUIRE(::lchown(file.c_str(), uid, gid) == 0);
         }},
        {"another user's file",
         [&](const std::string& file) { REQUIRE(::chown(file.c_str(), other, other) == 0); }},
        {"truncated",
         [&](const std::string& file) {
             struct stat st;
             REQUIRE(::stat(file.c_str(), &st) == 0);
             REQUIRE(::truncate(file.c_str(), st.st_size / 2) == 0);
         }},
        {"garbage",
         [&](const std::string& file) {
             struct stat st;
             REQUIRE(::stat(file.c_str(), &st) == 0);
             std::string junk(static_cast<size_t>(st.st_size), '\0');
             for (size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<char>(i * 131 + 7);
             std::ofstream(file, std::ios::binary | std::ios::trunc) << junk;
         }},
    };
    for (const Damage& damage : damages) {
        INFO(damage.what);
        // A good kept walk first (made or remade by the run before), used.
        Completed good = sandbox.run({"/bin/true"});
        INFO(good.describe());
        REQUIRE(good.exitCode == 0);
        struct stat st;
        REQUIRE(::lstat(cache.path.c_str(), &st) == 0);
        REQUIRE(S_ISREG(st.st_mode));
        damage.apply(cache.path);
        // The walk is whole (nothing reused), the .env covered, and the kept
        // walk written anew as the caller's own file, never through the link.
        expectHidden(sandbox, "/repo/node_modules/pkg39/lib/.env", token);
        CHECK(reused(sandbox) == 0);
        REQUIRE(::lstat(cache.path.c_str(), &st) == 0);
        CHECK(S_ISREG(st.st_mode));
        CHECK(st.st_uid == uid);
        CHECK((st.st_mode & 0777) == 0600);
        CHECK(readFileOrEmpty(decoy) == "decoy\n");
    }
    Completed last = sandbox.run({"/bin/true"});
    REQUIRE(last.exitCode == 0);
    CHECK(reused(sandbox) > 80);
}

// The walk after a run whose every directory kept its inode and settled
// ctime is one fstatat a directory (allUnchanged): a sandbox that adds a
// name and sets the directory's times back (touch -d: mtime and atime are
// its to set, ctime is not), or moves a directory holding a secret into the
// tree and leaves a symlink where it was, is still seen, reported and hidden
// in the next run.
TEST_CASE(
    "G2: names a sandbox creates behind set-back times or moved directories are reported "
    "though the walk after the run is one fstatat a directory",
    "[G2][filesystem][masks]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    makeTree(sandbox);
    sandbox.scratch().writeFile("worktree/e/f/g/h/file", "x");
    const RemoveAtEnd cache{cacheFileFor(mode, sandbox.worktree())};
    ::unlink(cache.path.c_str());
    letSettle();
    REQUIRE(sandbox.run({"/bin/true"}).exitCode == 0);
    // Warm: nothing changed, nothing created, nothing said of it.
    Completed warm = sandbox.run({"/bin/true"});
    REQUIRE(warm.exitCode == 0);
    CHECK(reused(sandbox) > 80);
    CHECK(sandbox.result()["worktree_masks"]["created"]["count"] == 0);
    CHECK(warm.err.find("created") == std::string::npos);

    const std::string token = randomToken("backdated");
    const std::string moved = randomToken("moved");
    const std::string script =
        "printf " + token +
        " > /repo/a/b/c/d/.env.fast && touch -d '2001-01-01 00:00:00' /repo/a/b/c/d /repo/a/b/c "
        "&& mkdir /tmp/x && printf " +
        moved +
        " > /tmp/x/credentials.json && mv /repo/e/f/g/h /repo/e/f/g/h2 && "
        "ln -s h2 /repo/e/f/g/h && touch -h -d '2001-01-01 00:00:00' /repo/e/f/g && "
        "mv /repo/e/f/g/h2 /repo/node_modules/pkg7/lib/h2 && cp -r /tmp/x "
        "/repo/node_modules/pkg7/lib/h2/x";
    Completed create = sandbox.run({"/bin/sh", "-c", script});
    INFO(create.describe());
    REQUIRE(create.exitCode == 0);
    const nlohmann::json masks = sandbox.result()["worktree_masks"];
    INFO(masks.dump());
    CHECK(masks["created"]["count"] == 2);
    CHECK(masks["created"]["first"] ==
          nlohmann::json::array(
              {"/repo/a/b/c/d/.env.fast", "/repo/node_modules/pkg7/lib/h2/x/credentials.json"}));
    CHECK(create.err.find("stopped short") == std::string::npos);
    expectHidden(sandbox, "/repo/a/b/c/d/.env.fast", token);
    expectHidden(sandbox, "/repo/node_modules/pkg7/lib/h2/x/credentials.json", moved);
}

// The kept walk holds for the filesystem the local kernel stamped all along.
// One unmounted can be written by anything with its device (another machine,
// debugfs) without a ctime moving, and mounted again at the same path on the
// same device: every number the kept walk checked (device, the worktree's
// inode, each directory's inode, ctime and birth time, the volume's UUID)
// is the same. The mount is not (statx STATX_MNT_ID_UNIQUE): the kept walk
// is passed over, the walk is whole and the planted .env hidden. With the
// earlier key the kept listing of its directory was taken and the .env read.
TEST_CASE(
    "G2: a worktree filesystem written while unmounted and mounted again is walked whole, "
    "not taken from the kept walk",
    "[G2][filesystem][masks]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    LoopFilesystem fs(sandbox.scratch().at("ext4.img"), invokingUid(mode), invokingGid(mode));
    const std::string wt = sandbox.scratch().makeDir("ext4-worktree");
    if (!mountedOrSkipped(fs, wt)) return;
    sandbox.worktreeAt(wt);
    for (int p = 0; p < 40; ++p) {
        const std::string lib = "ext4-worktree/node_modules/pkg" + std::to_string(p) + "/lib/";
        for (int f = 0; f < 3; ++f) sandbox.scratch().writeFile(lib + "f" + std::to_string(f), "x");
    }
    sandbox.scratch().writeFile("ext4-worktree/a/b/c/d/file", "x");
    const RemoveAtEnd cache{cacheFileFor(mode, wt)};
    ::unlink(cache.path.c_str());
    letSettle();
    REQUIRE(sandbox.run({"/bin/true"}).exitCode == 0);
    Completed warm = sandbox.run({"/bin/true"});
    INFO(warm.describe());
    REQUIRE(warm.exitCode == 0);
    REQUIRE(reused(sandbox) > 80);

    const std::string dir = wt + "/a/b/c/d";
    struct stat top_before;
    REQUIRE(::stat(wt.c_str(), &top_before) == 0);
    const struct statx before = statxOf(dir);
    REQUIRE((before.stx_mask & STATX_BTIME));
    REQUIRE(fs.unmount());
    // Written while unmounted: a .env in a/b/c/d. debugfs leaves the
    // directory's ctime as it was (checked below), as any writer that is not
    // this kernel may.
    const std::string token = randomToken("offline");
    const std::string source = sandbox.scratch().writeFile("offline-env", token, 0644);
    const std::string script = sandbox.scratch().writeFile(
        "debugfs-script", "cd a/b/c/d\nwrite " + source + " .env\n", 0644);
    REQUIRE(host("debugfs -w -f " + shellQuoted(script) + " " + shellQuoted(fs.device)));
    {
        const bool mounted = fs.mount(wt);
        INFO("mount(" << fs.device << "): " << (mounted ? "ok" : std::strerror(errno)));
        REQUIRE(mounted);
    }

    // Every number the kept walk checked is the same; only the mount is new.
    struct stat top_after;
    REQUIRE(::stat(wt.c_str(), &top_after) == 0);
    REQUIRE(top_after.st_dev == top_before.st_dev);
    REQUIRE(top_after.st_ino == top_before.st_ino);
    const struct statx after = statxOf(dir);
    REQUIRE(after.stx_ino == before.stx_ino);
    REQUIRE(after.stx_ctime.tv_sec == before.stx_ctime.tv_sec);
    REQUIRE(after.stx_ctime.tv_nsec == before.stx_ctime.tv_nsec);
    REQUIRE((after.stx_mask & STATX_BTIME));
    REQUIRE(after.stx_btime.tv_sec == before.stx_btime.tv_sec);
    REQUIRE(after.stx_btime.tv_nsec == before.stx_btime.tv_nsec);
    REQUIRE(readFileOrEmpty(dir + "/.env") == token);

    expectHidden(sandbox, "/repo/a/b/c/d/.env", token);
    CHECK(reused(sandbox) == 0);
    // Written anew for this mount: the next run reuses it, the .env still
    // covered.
    expectHidden(sandbox, "/repo/a/b/c/d/.env", token);
    CHECK(reused(sandbox) > 80);
}

// On an ext4 of 128-byte inodes a ctime is whole seconds, and a change a
// moment after the walk read it keeps it: a hidden name moved into a
// directory the walk had read, in the same second, left that directory's
// ctime as the walk saw it, and the check took it as unchanged (a red
// team's, 2026-12-07, racing a second sandbox). Such a ctime is trusted only
// when it lies in an earlier second than the walk's start.
TEST_CASE(
    "G2: on a filesystem stamping whole seconds a name moved in while it is walked is covered",
    "[G2][filesystem][masks][race]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    LoopFilesystem fs(sandbox.scratch().at("ext4-128.img"), invokingUid(mode), invokingGid(mode),
                      128);
    const std::string wt = sandbox.scratch().makeDir("ext4-seconds");
    if (!mountedOrSkipped(fs, wt)) return;
    sandbox.worktreeAt(wt);
    sandbox.scratch().writeFile("ext4-seconds/lib/file", "x\n");
    REQUIRE((statxOf(wt).stx_mask & STATX_BTIME) == 0);  // the small inode's: seconds only
    sandbox.callerEnv("STOCKADE_TEST_PAUSE_BEFORE_WALK_CHECK=200");
    // The case this test is for: the change keeps lib's ctime (the same
    // second). Had the walk begun in the next second, the ctime would change
    // and only the ordinary check be met: tried again, at most five times.
    bool same_second = false;
    for (int attempt = 1; attempt <= 5 && !same_second; ++attempt) {
        INFO("attempt " << attempt);
        const std::string token = randomToken("second");
        const std::string pkg = "pkg" + std::to_string(attempt);
        // Early in a second: lib's ctime, the walk and the change all in it.
        for (timespec now{};
             ::clock_gettime(CLOCK_REALTIME, &now) == 0 && now.tv_nsec > 50'000'000;)
            ::usleep(5000);
        sandbox.scratch().writeFile("ext4-seconds/lib/touched" + std::to_string(attempt), "x\n");
        StockadeProcess process(sandbox.launch(
            {"/bin/sh", "-c",
             "cat /repo/lib/" + pkg + "/.env; echo ran-$(stat -c %s /repo/lib/" + pkg + "/.env)"}));
        REQUIRE(waitUntilPausedInHook(process.pid(), std::chrono::seconds(15)));
        // Made in lib, one directory entry added, as a racing sandbox's
        // rename would add it (a rename across filesystems is refused).
        const struct statx lib_before = statxOf(wt + "/lib");
        REQUIRE(::mkdir((wt + "/lib/" + pkg).c_str(), 0755) == 0);
        const struct statx lib_after = statxOf(wt + "/lib");
        sandbox.scratch().writeFile("ext4-seconds/lib/" + pkg + "/.env", token + "\n");
        const Completed done = process.finish(std::chrono::seconds(60));
        INFO(done.describe());
        same_second = lib_before.stx_ctime.tv_sec == lib_after.stx_ctime.tv_sec;
        CHECK(lib_before.stx_ctime.tv_nsec == 0);
        CHECK(done.exitCode == 0);
        CHECK(done.out.find("ran-0") != std::string::npos);
        CHECK(done.out.find(token) == std::string::npos);
        CHECK(recordText(sandbox).find(token) == std::string::npos);
        CHECK(readFileOrEmpty(wt + "/lib/" + pkg + "/.env") == token + "\n");
    }
    // Under a loaded suite (-j2 beside the oracle's runners) a rootless
    // start can take the rest of the second five times over: said, not
    // failed, since every run above was still checked for the canary.
    if (!same_second)
        WARN(
            "NOT TESTED THIS TIME: each walk began a second late, so the same-second case "
            "was not met (the ordinary check was)");
}
