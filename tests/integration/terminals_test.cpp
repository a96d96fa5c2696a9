// G2's /dev/pts and /dev/ptmx: a devpts instance of the sandbox's own, whose
// ptys work as on a host (openpty, forkpty, script, a controlling terminal),
// stay out of the host's sight and keep the host's out of the sandbox's;
// G5's TIOCSTI and TIOCLINUX refusals on them.
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <sstream>

#include "harness.h"

using namespace stockade::itest;
using namespace std::chrono_literals;

namespace {

constexpr const char* kTtyGid = "5";

// A pty of the host's own, held by the test for as long as it lives.
struct HostPty {
    HostPty() {
        master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (master >= 0 && ::grantpt(master) == 0 && ::unlockpt(master) == 0) {
            char buf[128];
            if (::ptsname_r(master, buf, sizeof buf) == 0) name = buf;
        }
    }
    ~HostPty() {
        if (master >= 0) ::close(master);
    }
    HostPty(const HostPty&) = delete;
    HostPty& operator=(const HostPty&) = delete;
    int master = -1;
    std::string name;
};

// The /proc/self/mountinfo line of the mount at `point`, or "".
std::string mountinfoLine(const std::string& mountinfo, const std::string& point) {
    std::istringstream lines(mountinfo);
    for (std::string line; std::getline(lines, line);) {
        std::istringstream in(line);
        std::string id, parent, dev, root, at;
        in >> id >> parent >> dev >> root >> at;
        if (at == point) return line;
    }
    return "";
}

// The probe's escaped content (\n for newlines) back as text.
std::string unescapeNewlines(std::string text) {
    for (size_t at; (at = text.find("\\n")) != std::string::npos;) text.replace(at, 2, "\n");
    return text;
}

std::set<std::string> numberedEntries(const ProbeReport& report) {
    std::set<std::string> out;
    for (const std::string& e : report.all("pts_entry"))
        if (e != "ptmx") out.insert(e);
    return out;
}

}  // namespace

TEST_CASE("G2: /dev/ptmx opens a pty of the sandbox's own devpts instance, and it carries data",
          "[G2][dev][pty]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const ProbeRun pty = sandbox.probe({"pty-open"});
    INFO(pty.describe());
    REQUIRE(pty.exitCode() == 0);
    REQUIRE(pty.result() == "ok");
    // A fresh instance numbers from 0, whatever the host holds.
    CHECK(pty.report.get("name") == "/dev/pts/0");
    CHECK(pty.report.get("ttyname") == "/dev/pts/0");
    CHECK(pty.report.get("isatty") == "1");
    CHECK(pty.report.get("slave_mode") == "620");
    // Group tty where the sandbox's ids hold it (root: a block of 65536);
    // rootless, one gid is mapped and the slave gets the opener's own.
    CHECK(pty.report.get("slave_gid") ==
          (mode == Mode::Root ? std::string(kTtyGid) : std::to_string(invokingGid(mode))));
    CHECK(pty.report.get("master_to_slave") == "ok");
    CHECK(pty.report.get("slave_to_master") == "ok");
    CHECK(pty.report.get("openpty") == "ok");
    CHECK(numberedEntries(pty.report) == std::set<std::string>{"0"});

    const ProbeRun link = sandbox.probe({"readlink", "/dev/ptmx"});
    INFO(link.describe());
    CHECK(link.result() == "ok");
    CHECK(link.report.get("target") == "pts/ptmx");
    const ProbeRun ptmx = sandbox.probe({"stat", "/dev/pts/ptmx"});
    INFO(ptmx.describe());
    CHECK(ptmx.report.get("type") == "char");
    CHECK(ptmx.report.get("rdev") == "5:2");
    CHECK(ptmx.report.get("mode") == "666");

    // What the kernel says of the mount: devpts, nosuid and noexec, with
    // the options asked for, and a superblock that is not the host's.
    const ProbeRun info = sandbox.probe({"read-file", "/proc/self/mountinfo"});
    REQUIRE(info.result() == "ok");
    const std::string line =
        mountinfoLine(unescapeNewlines(info.report.get("content")), "/dev/pts");
    INFO("mountinfo: " << line);
    REQUIRE_FALSE(line.empty());
    CHECK(line.find(" - devpts ") != std::string::npos);
    CHECK(line.find("nosuid") != std::string::npos);
    CHECK(line.find("noexec") != std::string::npos);
    CHECK(line.find("mode=620") != std::string::npos);
    CHECK(line.find("ptmxmode=666") != std::string::npos);
    CHECK(line.find("max=64") != std::string::npos);
    // The kernel shows gid= as the host's id (from_kgid in the initial
    // namespace): inside gid 5 of the block whose 65534 is the run's host gid.
    if (mode == Mode::Root) {
        const unsigned long host_gid = sandbox.result()["host_gid"].get<unsigned long>();
        CHECK(line.find(",gid=" + std::to_string(host_gid - kNobody + 5) + ",") !=
              std::string::npos);
    } else {
        CHECK(line.find("gid=") == std::string::npos);
    }
    struct stat host_pts {};
    REQUIRE(::stat("/dev/pts", &host_pts) == 0);
    const std::string host_dev =
        std::to_string(major(host_pts.st_dev)) + ":" + std::to_string(minor(host_pts.st_dev));
    CHECK(pty.report.get("slave_dev") != host_dev);

    // The synthesized group file names tty exactly when it is mapped.
    const ProbeRun group = sandbox.probe({"read-file", "/etc/group"});
    INFO(group.describe());
    CHECK((group.report.get("content").find("tty:x:5:") != std::string::npos) ==
          (mode == Mode::Root));
}

TEST_CASE("G2: a pty made inside can be a child's controlling terminal, reached through /dev/tty",
          "[G2][dev][pty][tty]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const ProbeRun run = sandbox.probe({"pty-controlling"});
    INFO(run.describe());
    REQUIRE(run.exitCode() == 0);
    REQUIRE(run.result() == "ok");
    CHECK(run.report.get("setsid") == "ok");
    CHECK(run.report.get("tiocsctty") == "ok");
    CHECK(run.report.get("open_dev_tty") == "ok");
    CHECK(run.report.get("foreground") == "ok");
    CHECK(run.report.get("dev_tty_reached_master") == "1");
    CHECK(run.report.get("forkpty") == "ok");
    CHECK(run.report.get("forkpty_child") == "ok");
    // The command itself still has no controlling terminal (G7).
    const ProbeRun tty = sandbox.probe({"open-tty"});
    INFO(tty.describe());
    CHECK(tty.result() == "ENXIO");
}

TEST_CASE("G2: script -qc runs its command on a pty inside the sandbox", "[G2][dev][pty]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const Completed done =
        sandbox.run({"/usr/bin/script", "-qc", "tty && echo on-a-pty-$((6*7))", "/dev/null"});
    INFO(done.describe());
    CHECK(done.exitCode == 0);
    CHECK(done.out.find("/dev/pts/0") != std::string::npos);
    CHECK(done.out.find("on-a-pty-42") != std::string::npos);
}

// All devpts instances but the host's share one count (kernel.pty.max less
// kernel.pty.reserve): one sandbox may take only its own instance's max.
TEST_CASE("G2: one sandbox holds at most 64 ptys", "[G2][dev][pty][host]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const ProbeRun fill = sandbox.probe({"pty-fill"});
    INFO(fill.describe());
    REQUIRE(fill.exitCode() == 0);
    REQUIRE(fill.result() == "ok");
    CHECK(fill.report.get("opened") == "64");
    CHECK(fill.report.get("errno") == "ENOSPC");
}

TEST_CASE("G5: TIOCSTI and TIOCLINUX are refused on a pty the sandbox made", "[G5][seccomp][pty]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const ProbeRun run = sandbox.probe({"pty-inject"});
    INFO(run.describe());
    REQUIRE(run.exitCode() == 0);
    REQUIRE(run.result() == "ok");
    CHECK(run.report.get("tiocsti_slave") == "EPERM");
    CHECK(run.report.get("tiocsti_master") == "EPERM");
    CHECK(run.report.get("tiocsti_high_slave") == "EPERM");
    CHECK(run.report.get("tioclinux_slave") == "EPERM");
    CHECK(run.report.get("tiocsetd_slave") == "EPERM");
    // Other ioctls on the same terminal reach the kernel.
    CHECK(run.report.get("tiocgwinsz_slave") == "ok");
}

TEST_CASE("G2: the sandbox's ptys and the host's are invisible to each other",
          "[G2][dev][pty][host]") {
    STOCKADE_EACH_MODE(mode);
    // Two ptys of the host's, so that an instance shared with the host would
    // list more than the sandbox's one.
    HostPty first, second;
    REQUIRE_FALSE(first.name.empty());
    REQUIRE_FALSE(second.name.empty());
    struct stat host_pts {};
    REQUIRE(::stat("/dev/pts", &host_pts) == 0);
    std::set<std::string> host_before;
    for (const auto& e : std::filesystem::directory_iterator("/dev/pts"))
        host_before.insert(e.path().filename());

    Sandbox sandbox(mode);
    TokenReaper reaper(randomToken("pty-hold"));
    StockadeProcess stockade(sandbox.launch(probeCommand({"pty-hold", reaper.token(), "60"})));
    REQUIRE(stockade.waitForStdout("ready=" + reaper.token(), 20s));
    const std::vector<pid_t> held = findProcessesWithToken(reaper.token(), true);
    REQUIRE(held.size() == 1);

    // The host's side, while the sandbox holds its pty: every pty fd of the
    // probe is on a superblock that is not the host's /dev/pts, and no entry
    // there is that inode.
    std::set<std::pair<dev_t, ino_t>> sandbox_ptys;
    const std::string fd_dir = "/proc/" + std::to_string(held.front()) + "/fd";
    for (const auto& e : std::filesystem::directory_iterator(fd_dir)) {
        struct stat st {};
        if (::stat(e.path().c_str(), &st) == 0 && S_ISCHR(st.st_mode) &&
            (major(st.st_rdev) == 136 || st.st_rdev == makedev(5, 2)))
            sandbox_ptys.insert({st.st_dev, st.st_ino});
    }
    REQUIRE(sandbox_ptys.size() == 2);  // the master and the slave
    std::set<std::string> host_new;
    for (const auto& e : std::filesystem::directory_iterator("/dev/pts")) {
        struct stat st {};
        if (::stat(e.path().c_str(), &st) != 0) continue;
        INFO("host /dev/pts/" << e.path().filename().string());
        CHECK(sandbox_ptys.count({st.st_dev, st.st_ino}) == 0);
        if (host_before.count(e.path().filename()) == 0) host_new.insert(e.path().filename());
        // As root the sandbox's host uid is its own (a lease): nothing on
        // the host's instance may belong to it.
        if (mode == Mode::Root) {
            const std::string uid = procStatusField(held.front(), "Uid").value_or("?");
            CHECK(std::to_string(st.st_uid) != uid.substr(0, uid.find('\t')));
        }
    }
    for (const auto& [dev, ino] : sandbox_ptys) CHECK(dev != host_pts.st_dev);
    INFO("host ptys that appeared meanwhile (other processes'): " << host_new.size());

    stockade.signal(SIGTERM);
    const Completed done = stockade.finish(20s);
    const ProbeReport inside(done.out);
    INFO(done.describe());
    REQUIRE(inside.result() == "ok");
    // The sandbox's side: its instance lists its own pty and ptmx, none of
    // the host's two (or more).
    CHECK(inside.get("name") == "/dev/pts/0");
    CHECK(inside.get("pts_list") == "ok");
    CHECK(numberedEntries(inside) == std::set<std::string>{"0"});
    CHECK(inside.get("pts_dev") !=
          std::to_string(major(host_pts.st_dev)) + ":" + std::to_string(minor(host_pts.st_dev)));
}
