// G2: what the sandbox can see and write of the host's filesystem.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "harness.h"

using namespace stockade::itest;

namespace {

const std::vector<std::string> kRefusedWrite = {"EROFS", "EACCES"};

struct FileStamp {
    std::string content;
    timespec mtime{};
    bool operator==(const FileStamp& o) const {
        return content == o.content && mtime.tv_sec == o.mtime.tv_sec &&
               mtime.tv_nsec == o.mtime.tv_nsec;
    }
};

FileStamp stampOf(const std::string& path) {
    FileStamp stamp{readFileOrEmpty(path)};
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) stamp.mtime = st.st_mtim;
    return stamp;
}

// Files in the host's shared directories, removed however the test ends.
class HostFiles {
  public:
    explicit HostFiles(std::vector<std::string> paths) : paths_(std::move(paths)) {}
    ~HostFiles() {
        for (const std::string& path : paths_) ::unlink(path.c_str());
    }
    HostFiles(const HostFiles&) = delete;
    HostFiles& operator=(const HostFiles&) = delete;

  private:
    std::vector<std::string> paths_;
};

std::set<std::string> entriesOf(const std::string& dir) {
    std::set<std::string> names;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
        names.insert(e.path().filename().string());
    return names;
}

}  // namespace

TEST_CASE("G2: the invoking user's home and a canary planted in it are out of sight",
          "[G2][filesystem]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    // Root's home is the real one; the rootless user gets a home of its own
    // under /home, as a login user would.
    std::string parent = pathExists("/home") ? "/home" : scratchRoot();
    if (mode == Mode::Root) parent = std::getenv("HOME") != nullptr ? std::getenv("HOME") : "/root";
    ScratchDir home(parent, ".stockade-itest-home", invokingUid(mode), invokingGid(mode));
    const std::string canary = home.writeFile(".ssh/id_canary", sandbox.secretCanary(), 0600);
    if (mode == Mode::Rootless) sandbox.callerEnv("HOME=" + home.path());

    const ProbeRun read = sandbox.probe({"read-file", canary});
    INFO(read.describe());
    REQUIRE(read.exitCode() == 0);
    CHECK(read.result() == "ENOENT");
    CHECK(read.completed.out.find(sandbox.secretCanary()) == std::string::npos);

    const ProbeRun list = sandbox.probe({"list-dir", home.path()});
    INFO(list.describe());
    CHECK(list.result() == "ENOENT");
}

TEST_CASE("G2: /home, /root, /run, /sys and the docker socket are absent", "[G2][filesystem]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    for (const std::string path : {"/home", "/root", "/run", "/sys", "/var/run/docker.sock",
                                   "/run/docker.sock", "/var/run", "/boot", "/media", "/mnt"}) {
        // /var/run is a symlink to /run on most hosts: absent or dangling.
        const ProbeRun run = sandbox.probe({"stat", path});
        INFO(path << "\n" << run.describe());
        REQUIRE(run.exitCode() == 0);
        if (path == "/var/run" && run.result() == "ok") {
            CHECK(run.report.get("type") == "symlink");
            CHECK(sandbox.probe({"list-dir", "/var/run/"}).result() == "ENOENT");
        } else if (path == "/boot" || path == "/media" || path == "/mnt") {
            // Not required absent, but nothing of the host's may show there.
            const ProbeRun list = sandbox.probe({"list-dir", path});
            if (list.result() == "ok") CHECK(list.report.all("entry").empty());
        } else {
            CHECK(run.result() == "ENOENT");
        }
    }
    const ProbeRun root = sandbox.probe({"list-dir", "/"});
    INFO(root.describe());
    for (const std::string& entry : root.report.all("entry")) {
        CHECK(entry != "home");
        CHECK(entry != "root");
        CHECK(entry != "run");
        CHECK(entry != "sys");
    }
}

TEST_CASE("G2: the root, system directories and /etc are read-only", "[G2][filesystem]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    for (const std::string dir :
         {"/", "/usr", "/usr/bin", "/usr/lib", "/bin", "/sbin", "/lib", "/etc", "/var"}) {
        const ProbeRun stat = sandbox.probe({"stat", dir});
        if (stat.result() == "ENOENT") continue;  // e.g. no /lib64 on this host
        const ProbeRun create = sandbox.probe({"create-in", dir});
        INFO(dir << "\n" << create.describe() << "\n" << stat.describe());
        REQUIRE(create.exitCode() == 0);
        CHECK_THAT(create.result(), IsOneOf(kRefusedWrite));
        if (dir != "/var") CHECK(stat.report.get("readonly") == "1");
    }
    for (const std::string file : {"/etc/passwd", "/etc/hosts", "/bin/sh", "/usr/bin/env"}) {
        const ProbeRun run = sandbox.probe({"open-write", file});
        INFO(file << "\n" << run.describe());
        if (run.result() == "ENOENT") continue;
        CHECK_THAT(run.result(), IsOneOf(kRefusedWrite));
    }
}

TEST_CASE("G2: /tmp, /var/tmp and /dev/shm are fresh, not the host's", "[G2][filesystem]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    // Markers in the host's /tmp and /dev/shm the sandbox must not see, and
    // files the sandbox writes that the host must not get.
    const std::string token = randomToken("itest-host-marker");
    const HostFiles host({"/tmp/" + token, "/dev/shm/" + token, "/tmp/" + token + "-written",
                          "/var/tmp/" + token + "-written"});
    for (const std::string& path : {"/tmp/" + token, "/dev/shm/" + token})
        std::ofstream(path) << "host\n";

    for (const std::string dir : {"/tmp", "/var/tmp"}) {
        const ProbeRun stat = sandbox.probe({"stat", dir});
        INFO(dir << "\n" << stat.describe());
        REQUIRE(stat.result() == "ok");
        CHECK(stat.report.get("fsmagic") == "0x1021994");  // TMPFS_MAGIC
        CHECK(stat.report.get("readonly") == "0");
        const std::string written = dir + "/" + token + "-written";
        const ProbeRun create = sandbox.probe({"create-file", written, "x"});
        INFO(create.describe());
        CHECK(create.result() == "ok");
        CHECK_FALSE(pathExists(written));
    }
    for (const std::string& path : {"/tmp/" + token, "/dev/shm/" + token}) {
        const ProbeRun seen = sandbox.probe({"stat", path});
        INFO(path << "\n" << seen.describe());
        CHECK(seen.result() == "ENOENT");
    }
}

TEST_CASE("G2: a write into /repo lands in the host's worktree", "[G2][filesystem]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const std::string name = randomToken("written");
    const ProbeRun run = sandbox.probe({"create-file", "/repo/" + name, "from the sandbox\n"});
    INFO(run.describe());
    REQUIRE(run.exitCode() == 0);
    CHECK(run.result() == "ok");
    CHECK(readFileOrEmpty(sandbox.worktree() + "/" + name) == "from the sandbox\n");
    const ProbeRun stat = sandbox.probe({"stat", "/repo"});
    CHECK(stat.report.get("readonly") == "0");
}

TEST_CASE("G2: /repo/.git is read-only and the host's .git is left unchanged",
          "[G2][filesystem][git]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const std::string config = sandbox.worktree() + "/.git/config";
    const FileStamp before = stampOf(config);
    const std::set<std::string> gitBefore = entriesOf(sandbox.worktree() + "/.git");

    const ProbeRun stat = sandbox.probe({"stat", "/repo/.git"});
    INFO(stat.describe());
    REQUIRE(stat.result() == "ok");
    CHECK(stat.report.get("readonly") == "1");

    const ProbeRun rewrite = sandbox.probe({"rewrite-same", "/repo/.git/config"});
    INFO(rewrite.describe());
    CHECK(rewrite.report.get("stage") == "open");
    CHECK_THAT(rewrite.result(), IsOneOf(kRefusedWrite));
    for (const std::string dir : {"/repo/.git", "/repo/.git/hooks"}) {
        const ProbeRun create = sandbox.probe({"create-in", dir});
        INFO(dir << "\n" << create.describe());
        CHECK_THAT(create.result(), IsOneOf(kRefusedWrite));
    }
    // Around the read-only mount: a hard link from the writable worktree, and
    // moving .git aside to put a writable one in its place.
    const ProbeRun link = sandbox.probe({"link", "/repo/.git/config", "/repo/config-link"});
    INFO(link.describe());
    CHECK_THAT(link.result(), IsOneOf({"EXDEV", "EROFS", "EPERM"}));
    const ProbeRun rename = sandbox.probe({"rename", "/repo/.git", "/repo/moved-git"});
    INFO(rename.describe());
    CHECK_THAT(rename.result(), IsOneOf({"EBUSY", "EXDEV", "EROFS", "EPERM"}));

    CHECK(stampOf(config) == before);
    CHECK(entriesOf(sandbox.worktree() + "/.git") == gitBefore);
}

TEST_CASE("G2: the gitdir named by a .git file is read-only, at its own path",
          "[G2][filesystem][git]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    // `git worktree add` leaves a .git file pointing into the main repo's
    // worktrees/NAME, which points back (gitdir) and names the common dir
    // (commondir): the layout runtime/plan/git_link.h honours.
    const std::string gitdir = sandbox.scratch().makeDir("main-repo/.git/worktrees/wt");
    sandbox.scratch().writeFile("main-repo/.git/HEAD", "ref: refs/heads/main\n");
    sandbox.scratch().makeDir("main-repo/.git/objects");
    sandbox.scratch().makeDir("main-repo/.git/refs/heads");
    sandbox.scratch().writeFile("main-repo/.git/worktrees/wt/HEAD", "ref: refs/heads/wt\n");
    sandbox.scratch().writeFile("main-repo/.git/worktrees/wt/commondir", "../..\n");
    sandbox.scratch().writeFile("main-repo/.git/worktrees/wt/gitdir",
                                sandbox.worktree() + "/.git\n");
    const std::string config =
        sandbox.scratch().writeFile("main-repo/.git/worktrees/wt/config", "[core]\n", 0666);
    std::filesystem::remove_all(sandbox.worktree() + "/.git");
    sandbox.scratch().writeFile("worktree/.git", "gitdir: " + gitdir + "\n");
    const FileStamp before = stampOf(config);

    const ProbeRun stat = sandbox.probe({"stat", gitdir});
    INFO(stat.describe());
    REQUIRE(stat.result() == "ok");
    CHECK(stat.report.get("type") == "dir");
    CHECK(stat.report.get("readonly") == "1");

    // The file is world-writable: only a read-only mount can refuse this.
    const ProbeRun rewrite = sandbox.probe({"rewrite-same", gitdir + "/config"});
    INFO(rewrite.describe());
    CHECK(rewrite.report.get("stage") == "open");
    CHECK(rewrite.result() == "EROFS");
    const ProbeRun create = sandbox.probe({"create-in", gitdir});
    INFO(create.describe());
    CHECK_THAT(create.result(), IsOneOf(kRefusedWrite));
    const ProbeRun dotGit = sandbox.probe({"open-write", "/repo/.git"});
    INFO(dotGit.describe());
    CHECK_THAT(dotGit.result(), IsOneOf(kRefusedWrite));
    CHECK(stampOf(config) == before);
}

// A .git file naming a gitdir inside the worktree: the gitdir is read-only,
// and the directories above it cannot be moved aside for a writable gitdir
// (hooks, config with core.fsmonitor: run by the host's git) to be made at
// its path.
TEST_CASE("G2: a gitdir inside the worktree is read-only and the directories above it stay put",
          "[G2][filesystem][git]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.scratch().writeFile("worktree/store/repos/gd/HEAD", "ref: refs/heads/main\n");
    sandbox.scratch().makeDir("worktree/store/repos/gd/objects");
    sandbox.scratch().makeDir("worktree/store/repos/gd/refs/heads");
    const std::string config =
        sandbox.scratch().writeFile("worktree/store/repos/gd/config", "[core]\n", 0666);
    std::filesystem::remove_all(sandbox.worktree() + "/.git");
    sandbox.scratch().writeFile("worktree/.git", "gitdir: store/repos/gd\n");
    const FileStamp before = stampOf(config);

    const ProbeRun rewrite = sandbox.probe({"rewrite-same", "/repo/store/repos/gd/config"});
    INFO(rewrite.describe());
    CHECK(rewrite.result() == "EROFS");
    for (const auto& [from, to] :
         std::vector<std::pair<std::string, std::string>>{{"/repo/store", "/repo/store-old"},
                                                          {"/repo/store/repos", "/repo/store/old"},
                                                          {"/repo/store/repos", "/repo/moved"}}) {
        const ProbeRun rename = sandbox.probe({"rename", from, to});
        INFO(from << " -> " << to << "\n" << rename.describe());
        CHECK_THAT(rename.result(), IsOneOf({"EBUSY", "EXDEV"}));
    }
    CHECK(stampOf(config) == before);
    CHECK(std::filesystem::is_directory(sandbox.worktree() + "/store/repos/gd/objects"));
    CHECK(sandbox.result()["git"]["gitdir"] == "inside_worktree");

    // The gitdir names a commondir (a linked worktree's layout) inside the
    // worktree: git reads config there too, so it is read-only as well (the
    // review of 2026-12-07 pointed one at a writable directory).
    const std::string common_config =
        sandbox.scratch().writeFile("worktree/store/common/config", "[core]\n", 0666);
    sandbox.scratch().writeFile("worktree/store/repos/gd/commondir", "../../common\n");
    const FileStamp common_before = stampOf(common_config);
    const ProbeRun common = sandbox.probe({"rewrite-same", "/repo/store/common/config"});
    INFO(common.describe());
    CHECK(common.result() == "EROFS");
    const ProbeRun moved = sandbox.probe({"rename", "/repo/store", "/repo/store-old"});
    INFO(moved.describe());
    CHECK_THAT(moved.result(), IsOneOf({"EBUSY", "EXDEV"}));
    CHECK(stampOf(common_config) == common_before);
}

TEST_CASE("G2: a symlink in the worktree that leads out does not expose its target",
          "[G2][filesystem][symlink]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const std::string outside = sandbox.scratch().makeDir("outside");
    sandbox.scratch().writeFile("outside/secret", sandbox.secretCanary(), 0644);
    sandbox.scratch().makeSymlink("worktree/link", outside);

    const ProbeRun link = sandbox.probe({"readlink", "/repo/link"});
    INFO(link.describe());
    REQUIRE(link.result() == "ok");  // the worktree is there, link and all
    for (const std::string& path : {std::string("/repo/link/secret"), outside + "/secret"}) {
        const ProbeRun run = sandbox.probe({"read-file", path});
        INFO(path << "\n" << run.describe());
        REQUIRE(run.exitCode() == 0);
        CHECK(run.result() == "ENOENT");
        CHECK(run.completed.out.find(sandbox.secretCanary()) == std::string::npos);
    }
}

TEST_CASE("G2: a .git symlink that leads out of the worktree does not mount its target",
          "[G2][filesystem][symlink][git]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const std::string outside = sandbox.scratch().makeDir("outside");
    sandbox.scratch().writeFile("outside/secret", sandbox.secretCanary(), 0644);
    std::filesystem::remove_all(sandbox.worktree() + "/.git");
    sandbox.scratch().makeSymlink("worktree/.git", outside);
    const std::set<std::string> outsideBefore = entriesOf(outside);

    // Refusing the worktree is as good as resolving the link inside.
    for (const std::string& path : {std::string("/repo/.git/secret"), outside + "/secret"}) {
        const ProbeRun run = sandbox.probe({"read-file", path});
        INFO(path << "\n" << run.describe());
        if (run.exitCode() == 125) continue;
        REQUIRE(run.exitCode() == 0);
        CHECK(run.result() != "ok");
        CHECK(run.completed.out.find(sandbox.secretCanary()) == std::string::npos);
    }
    CHECK(entriesOf(outside) == outsideBefore);
}

TEST_CASE("G2: a --mount target reached through a symlink does not land outside",
          "[G2][filesystem][symlink][mount]") {
    STOCKADE_EACH_MODE(mode);
    // One through an absolute link that leads out of the worktree, one through
    // a relative link into .git (a way to get a mount inside /repo/.git).
    for (const std::string target : {"/repo/escape/inner", "/repo/gitlink/hooks/inner"}) {
        Sandbox sandbox(mode);
        const std::string payload = sandbox.scratch().makeDir("payload");
        sandbox.scratch().writeFile("payload/marker", "payload\n");
        const std::string outside = sandbox.scratch().makeDir("outside");
        sandbox.scratch().makeSymlink("worktree/escape", outside);
        sandbox.scratch().makeSymlink("worktree/gitlink", ".git");
        const std::string gitHooks = sandbox.worktree() + "/.git/hooks";
        const std::set<std::string> outsideBefore = entriesOf(outside);
        const std::set<std::string> hooksBefore = entriesOf(gitHooks);

        sandbox.option("--mount", payload + ":" + target);
        const ProbeRun run = sandbox.probe({"list-dir", "/repo/.git/hooks/inner"});
        INFO(target << "\n" << run.describe());
        // Either refused, or mounted where the link leads inside the sandbox;
        // never on the host's side of the link and never inside .git.
        CHECK_THAT(std::to_string(run.exitCode()), IsOneOf({"0", "125"}));
        if (run.exitCode() == 0) {
            CHECK(run.result() == "ENOENT");
            // And it did run in the sandbox, with the worktree at /repo.
            const ProbeRun repo = sandbox.probe({"readlink", "/repo/escape"});
            INFO(repo.describe());
            CHECK(repo.report.get("target") == outside);
        }
        CHECK(entriesOf(outside) == outsideBefore);
        CHECK(entriesOf(gitHooks) == hooksBefore);
    }
}

TEST_CASE("G2: a worktree given through a symlink is refused, or resolved once when asked",
          "[G2][filesystem]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const std::string link = sandbox.scratch().makeSymlink("worktree-link", sandbox.worktree());
    const std::string real = sandbox.worktree();
    sandbox.worktreeAt(link);
    const std::string name = randomToken("through-link");
    // A sandbox may have planted the link (issue 14): refused by default.
    const ProbeRun refused = sandbox.probe({"create-file", "/repo/" + name, "ok\n"});
    INFO(refused.describe());
    CHECK(refused.exitCode() == 125);
    CHECK(refused.completed.err.find(link + " is a symlink") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(real + "/" + name));

    sandbox.option("--follow-symlinks");
    const ProbeRun run = sandbox.probe({"create-file", "/repo/" + name, "ok\n"});
    INFO(run.describe());
    CHECK(run.result() == "ok");
    CHECK(readFileOrEmpty(real + "/" + name) == "ok\n");
    const ProbeRun git = sandbox.probe({"stat", "/repo/.git"});
    CHECK(git.report.get("readonly") == "1");
}
