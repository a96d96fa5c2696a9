// G3: identity (user namespace, uid mapping); G4: privileges; G5's namespace
// creation; G9's namespaces seen from the host.
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <sstream>

#include "harness.h"

using namespace stockade::itest;
using namespace std::chrono_literals;

namespace {

constexpr const char* kNoCaps = "0000000000000000";

// SECBIT_NOROOT, and the locks on NOROOT, NO_SETUID_FIXUP and KEEP_CAPS
// (linux/securebits.h): what "securebits locked" has to mean.
constexpr int kSecbitNoroot = 1 << 0;
constexpr int kSecbitNorootLocked = 1 << 1;
constexpr int kSecbitNoSetuidFixupLocked = 1 << 3;
constexpr int kSecbitKeepCapsLocked = 1 << 5;

void chownTree(const std::string& root, uid_t uid, gid_t gid) {
    ::lchown(root.c_str(), uid, gid);
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root))
        ::lchown(entry.path().c_str(), uid, gid);
}

std::vector<std::string> fields(const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> out;
    for (std::string f; in >> f;) out.push_back(f);
    return out;
}

// Whether any range of a uid_map/gid_map, read from the host's user
// namespace, covers host id 0.
bool mapCoversHostRoot(const std::string& map) {
    std::istringstream lines(map);
    for (std::string line; std::getline(lines, line);) {
        const std::vector<std::string> f = fields(line);
        if (f.size() != 3) continue;
        const unsigned long outside = std::stoul(f[1]);
        const unsigned long count = std::stoul(f[2]);
        if (outside == 0 && count > 0) return true;
    }
    return false;
}

// The default range of leased ids (runtime/plan/identity.cpp), 0x78000000 upward.
bool inDefaultRange(unsigned long id) {
    return id >= 0x78000000ul && id < 0x7C000000ul;
}

// A range of `count` leased ids of the test's own, outside the default one
// so that no other run beside the test holds its ids.
uint32_t privateRangeBase() {
    const std::string token = randomToken("r");
    const unsigned long random = std::stoul(token.substr(2, 8), nullptr, 16);
    return 0x70000000u + static_cast<uint32_t>(random % 0x07000000u);
}

std::string leasePath(unsigned long id) {
    return "/run/stockade/ids/" + std::to_string(id);
}

// The lease of a default-range sandbox whose uid inside is `inside` and on
// the host `host`: its block of 65536 ids starts at host - inside.
unsigned long blockOf(unsigned long host, unsigned long inside) {
    return host - inside;
}

// Whether a live process holds the lease file of `id` (a missing file is a
// free lease): the harness tries the lock itself, and lets go at once.
bool leaseHeld(unsigned long id) {
    stockade::UniqueFd fd(::open(leasePath(id).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd) return false;
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) return false;
    return errno == EWOULDBLOCK;
}

// Host-side: a process of `uid`/`gid` asks the kernel whether it may signal
// `target` (kill(target, 0), which sends nothing). Its errno, 0 if allowed.
int signalAs(uid_t uid, gid_t gid, pid_t target) {
    const pid_t child = ::fork();
    if (child < 0) return -1;
    if (child == 0) {
        if (::setgroups(0, nullptr) < 0 || ::setresgid(gid, gid, gid) < 0 ||
            ::setresuid(uid, uid, uid) < 0)
            ::_exit(255);
        ::_exit(::kill(target, 0) == 0 ? 0 : (errno & 0x7f));
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The four ids of a /proc/PID/status "Uid:" or "Gid:" line, when all equal.
std::optional<unsigned long> soleHostId(pid_t pid, const char* key) {
    const std::vector<std::string> all = fields(procStatusField(pid, key).value_or(""));
    if (all.size() != 4) return std::nullopt;
    for (const std::string& id : all)
        if (id != all.front()) return std::nullopt;
    return std::stoul(all.front());
}

std::string nsLink(const std::string& proc, const std::string& ns) {
    std::error_code ec;
    const auto target = std::filesystem::read_symlink(proc + "/ns/" + ns, ec);
    return ec ? "<" + ec.message() + ">" : target.string();
}

}  // namespace

TEST_CASE("G4: every capability set is empty, no_new_privs is set, securebits are locked",
          "[G4][caps]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const ProbeRun run = sandbox.probe({"caps"});
    INFO(run.describe());
    REQUIRE(run.exitCode() == 0);
    for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}) {
        INFO(set);
        CHECK(run.report.get(set) == kNoCaps);
    }
    CHECK(run.report.get("NoNewPrivs") == "1");
    const int bits = std::stoi(run.report.get("securebits"));
    const int wanted =
        kSecbitNoroot | kSecbitNorootLocked | kSecbitNoSetuidFixupLocked | kSecbitKeepCapsLocked;
    CHECK((bits & wanted) == wanted);
}

TEST_CASE("G4: privileges cannot be regained", "[G4][caps]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    // Each one changes only the probe itself if the kernel lets it through,
    // or creates and removes its own scratch (mount-tmpfs, mknod).
    const std::vector<std::pair<std::string, std::vector<std::string>>> attempts = {
        {"setuid0", {"EPERM", "EINVAL"}},  // EINVAL: 0 is not mapped at all
        {"setgid0", {"EPERM", "EINVAL"}},
        {"capset-raise", {"EPERM"}},
        {"securebits-clear", {"EPERM"}},
        {"ambient-raise", {"EPERM"}},
        {"setgroups", {"EPERM"}},  // G3: setgroups denied
        {"mount-tmpfs", {"EPERM"}},
        {"fsopen", {"EPERM"}},
        {"mknod", {"EPERM", "EACCES"}},  // EACCES: Landlock refuses first
        {"chroot", {"EPERM"}},
    };
    for (const auto& [action, refusals] : attempts) {
        const ProbeRun run = sandbox.probe({action});
        INFO(action << "\n" << run.describe());
        REQUIRE(run.exitCode() == 0);
        CHECK_THAT(run.result(), IsOneOf(refusals));
    }
    const ProbeRun ids = sandbox.probe({"setuid0"});
    CHECK(ids.report.get("uid") != "0");
}

TEST_CASE("G5: creating namespaces is refused", "[G5][seccomp]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    for (const std::string ns : {"user", "mount", "net", "pid"}) {
        const ProbeRun run = sandbox.probe({"unshare", ns});
        INFO(ns << "\n" << run.describe());
        CHECK(run.result() == "EPERM");
    }
}

TEST_CASE("G3: the uid inside is the caller's, or 65534 for a root-owned worktree", "[G3][uid]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    // Rootless: the caller is 65534. Root on a root-owned worktree: 65534,
    // never 0, and the worktree still writable (through an idmapped mount).
    const ProbeRun ids = sandbox.probe({"ids"});
    INFO(ids.describe());
    REQUIRE(ids.exitCode() == 0);
    CHECK(ids.report.get("uid") == std::to_string(kNobody));
    CHECK(ids.report.get("euid") == std::to_string(kNobody));
    CHECK(ids.report.get("suid") == std::to_string(kNobody));
    CHECK(ids.report.get("egid") != "0");

    const std::string name = randomToken("as-nobody");
    const ProbeRun write = sandbox.probe({"create-file", "/repo/" + name, "x"});
    INFO(write.describe());
    CHECK(write.result() == "ok");
    CHECK(pathExists(sandbox.worktree() + "/" + name));
}

TEST_CASE("G3: run by root, the sandbox is the worktree's owner inside, its own uid outside",
          "[G3][uid]") {
    if (!modeUsable(Mode::Root)) return;
    constexpr uid_t kOwner = 1234;
    Sandbox sandbox(Mode::Root);
    chownTree(sandbox.worktree(), kOwner, kOwner);
    const ProbeRun ids = sandbox.probe({"ids"});
    INFO(ids.describe());
    CHECK(ids.report.get("uid") == std::to_string(kOwner));
    CHECK(ids.report.get("gid") == std::to_string(kOwner));

    const std::string name = randomToken("as-owner");
    const ProbeRun write = sandbox.probe({"create-file", "/repo/" + name, "x"});
    INFO(write.describe());
    REQUIRE(write.result() == "ok");
    struct stat st {};
    REQUIRE(::stat((sandbox.worktree() + "/" + name).c_str(), &st) == 0);
    CHECK(st.st_uid == kOwner);
    CHECK(st.st_gid == kOwner);
    // The host id it ran as is a leased one, not the owner's: the owner's
    // other processes and files are not the sandbox's.
    const nlohmann::json result = sandbox.result();
    INFO(result.dump());
    REQUIRE(result["host_uid"].is_number());
    CHECK(result["host_uid"] != kOwner);
    CHECK(inDefaultRange(result["host_uid"].get<unsigned long>()));
}

TEST_CASE("G3: seen from the host, the sandboxed process is never root", "[G3][G9][host]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    TokenReaper reaper(randomToken("identity"));
    StockadeProcess stockade(
        sandbox.launch(probeCommand({"sleep-with-token", reaper.token(), "60"})));
    REQUIRE(stockade.waitForStdout("ready=" + reaper.token(), 20s));
    const std::vector<pid_t> found = findProcessesWithToken(reaper.token(), true);
    REQUIRE(found.size() == 1);
    const pid_t pid = found.front();
    const std::string proc = "/proc/" + std::to_string(pid);

    for (const char* key : {"Uid", "Gid"}) {
        const std::optional<std::string> ids = procStatusField(pid, key);
        INFO(key << ": " << ids.value_or("<missing>"));
        REQUIRE(ids);
        const std::vector<std::string> all = fields(*ids);
        CHECK(all.size() == 4);
        for (const std::string& id : all) CHECK(id != "0");
        if (mode == Mode::Rootless) {
            CHECK(all.front() == std::to_string(kNobody));  // the caller's own uid
        } else {
            // Root: a leased id of the default range, never nobody's.
            CHECK(all.front() != std::to_string(kNobody));
            CHECK(inDefaultRange(std::stoul(all.front())));
        }
    }
    CHECK(procStatusField(pid, "CapEff") == std::optional<std::string>(kNoCaps));
    CHECK(procStatusField(pid, "CapBnd") == std::optional<std::string>(kNoCaps));
    CHECK(procStatusField(pid, "NoNewPrivs") == std::optional<std::string>("1"));
    // Two pids: the host's and the sandbox's.
    CHECK(fields(procStatusField(pid, "NSpid").value_or("")).size() == 2);

    const std::string uidMap = readFileOrEmpty(proc + "/uid_map");
    const std::string gidMap = readFileOrEmpty(proc + "/gid_map");
    INFO("uid_map:\n" << uidMap << "gid_map:\n" << gidMap);
    CHECK_FALSE(uidMap.empty());
    CHECK_FALSE(mapCoversHostRoot(uidMap));
    CHECK_FALSE(mapCoversHostRoot(gidMap));
    CHECK(readFileOrEmpty(proc + "/setgroups") == "deny\n");

    for (const std::string ns : {"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"}) {
        INFO("namespace " << ns);
        CHECK(nsLink(proc, ns) != nsLink("/proc/self", ns));
    }
    stockade.signal(SIGKILL);
}

TEST_CASE("G3: as root, each sandbox has a host uid of its own, which no one else can signal",
          "[G3][uid][lease]") {
    if (!modeUsable(Mode::Root)) return;
    Sandbox first(Mode::Root), second(Mode::Root);
    TokenReaper firstToken(randomToken("lease-a")), secondToken(randomToken("lease-b"));
    StockadeProcess a(first.launch(probeCommand({"sleep-with-token", firstToken.token(), "60"})));
    StockadeProcess b(second.launch(probeCommand({"sleep-with-token", secondToken.token(), "60"})));
    REQUIRE(a.waitForStdout("ready=" + firstToken.token(), 20s));
    REQUIRE(b.waitForStdout("ready=" + secondToken.token(), 20s));
    const std::vector<pid_t> inA = findProcessesWithToken(firstToken.token(), true);
    const std::vector<pid_t> inB = findProcessesWithToken(secondToken.token(), true);
    REQUIRE(inA.size() == 1);
    REQUIRE(inB.size() == 1);

    // From the host: real, effective, saved and fs ids all the leased one,
    // as uid and as gid; a different one for each sandbox.
    const std::optional<unsigned long> uidA = soleHostId(inA.front(), "Uid");
    const std::optional<unsigned long> uidB = soleHostId(inB.front(), "Uid");
    INFO("Uid a: " << procStatusField(inA.front(), "Uid").value_or("?")
                   << ", b: " << procStatusField(inB.front(), "Uid").value_or("?"));
    REQUIRE(uidA);
    REQUIRE(uidB);
    CHECK(*uidA != *uidB);
    CHECK(soleHostId(inA.front(), "Gid") == uidA);
    CHECK(soleHostId(inB.front(), "Gid") == uidB);
    for (unsigned long id : {*uidA, *uidB}) {
        CHECK(id != kNobody);
        CHECK(inDefaultRange(id));
        // 65534 inside (root's worktree), in a block of its own.
        CHECK((blockOf(id, kNobody) - 0x78000000ul) % 65536 == 0);
        CHECK(leaseHeld(blockOf(id, kNobody)));
    }

    // Nobody on the host, and the other sandbox's uid, may not signal it;
    // its own uid may (so the refusal is the uid's, not something else's).
    CHECK(signalAs(kNobody, kNobody, inA.front()) == EPERM);
    CHECK(signalAs(static_cast<uid_t>(*uidB), static_cast<gid_t>(*uidB), inA.front()) == EPERM);
    CHECK(signalAs(static_cast<uid_t>(*uidA), static_cast<gid_t>(*uidA), inB.front()) == EPERM);
    CHECK(signalAs(static_cast<uid_t>(*uidA), static_cast<gid_t>(*uidA), inA.front()) == 0);

    // The record says so; the lease ends with the run.
    a.signal(SIGTERM);
    const Completed done = a.finish(20s);
    INFO(done.describe());
    const nlohmann::json result = first.result();
    CHECK(result["host_uid"] == *uidA);
    CHECK(result["host_gid"] == *uidA);
    CHECK_FALSE(leaseHeld(blockOf(*uidA, kNobody)));
    CHECK_FALSE(pathExists(leasePath(blockOf(*uidA, kNobody))));
    CHECK(leaseHeld(blockOf(*uidB, kNobody)));
    b.signal(SIGKILL);
}

TEST_CASE("G3: a lease ends with its run, and a killed run's lease is taken over",
          "[G3][uid][lease]") {
    if (!modeUsable(Mode::Root)) return;
    const uint32_t base = privateRangeBase();
    const std::string range = "STOCKADE_UID_RANGE=" + std::to_string(base) + ":1";
    INFO(range);

    Sandbox once(Mode::Root);
    once.callerEnv(range);
    const ProbeRun ids = once.probe({"ids"});
    INFO(ids.describe());
    REQUIRE(ids.exitCode() == 0);
    CHECK(once.result()["host_uid"] == base);
    CHECK(ids.report.get("uid") == std::to_string(kNobody));  // inside: root's worktree
    CHECK_FALSE(pathExists(leasePath(base)));  // released: the file goes with the lock

    // Held by a live run, the one id of the range is not leased twice.
    Sandbox holder(Mode::Root);
    holder.callerEnv(range);
    TokenReaper token(randomToken("lease-holder"));
    StockadeProcess held(holder.launch(probeCommand({"sleep-with-token", token.token(), "60"})));
    REQUIRE(held.waitForStdout("ready=" + token.token(), 20s));
    CHECK(leaseHeld(base));
    Sandbox refused(Mode::Root);
    refused.callerEnv(range);
    const Completed full = refused.run(probeCommand({"exit", "0"}));
    INFO(full.describe());
    CHECK(full.exitCode == 125);
    CHECK(refused.result()["host_uid"].is_null());

    // SIGKILL: no destructor runs, the file stays, but the lock died with
    // its holder, and the next run takes the id over.
    held.signal(SIGKILL);
    held.finish(20s);
    REQUIRE(waitUntilNoProcessHas(token.token(), 10s));
    CHECK(pathExists(leasePath(base)));
    CHECK_FALSE(leaseHeld(base));
    const ProbeRun after = refused.probe({"ids"});
    INFO(after.describe());
    CHECK(after.exitCode() == 0);
    CHECK(refused.result()["host_uid"] == base);
    CHECK_FALSE(pathExists(leasePath(base)));
}

TEST_CASE("G3: an exhausted or malformed id range is refused with one line, nothing held",
          "[G3][uid][lease][refusal]") {
    if (!modeUsable(Mode::Root)) return;
    const uint32_t base = privateRangeBase();
    // Held by the test itself, as a live run would hold it.
    REQUIRE((::mkdir("/run/stockade", 0700) == 0 || errno == EEXIST));
    REQUIRE((::mkdir("/run/stockade/ids", 0700) == 0 || errno == EEXIST));
    stockade::UniqueFd lock(
        ::open(leasePath(base).c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    REQUIRE(lock);
    REQUIRE(::flock(lock.get(), LOCK_EX | LOCK_NB) == 0);
    struct Case {
        std::string range;
        std::string named;
    };
    const std::string exhausted = std::to_string(base) + "-" + std::to_string(base);
    for (const Case& c :
         {Case{std::to_string(base) + ":1", exhausted}, Case{"0:100", "root"},
          Case{"lots", "STOCKADE_UID_RANGE"}, Case{"4294967295:1", "STOCKADE_UID_RANGE"}}) {
        INFO("STOCKADE_UID_RANGE=" << c.range);
        Sandbox sandbox(Mode::Root);
        sandbox.callerEnv("STOCKADE_UID_RANGE=" + c.range);
        TokenReaper token(randomToken("no-lease"));
        const HostSnapshot before = HostSnapshot::take();
        const Completed done = sandbox.run(probeCommand({"sleep-with-token", token.token(), "5"}));
        INFO(done.describe());
        CHECK(done.exitCode == 125);
        CHECK(done.err.rfind("stockade: ", 0) == 0);
        CHECK(std::count(done.err.begin(), done.err.end(), '\n') == 1);
        CHECK(done.err.find(c.named) != std::string::npos);
        CHECK(findProcessesWithToken(token.token(), false).empty());
        CHECK(sandbox.result()["host_uid"].is_null());
        const HostSnapshot after = HostSnapshot::take();
        CHECK(after.mounts == before.mounts);
        CHECK_FALSE(pathExists(leasePath(base + 1)));
    }
    CHECK(pathExists(leasePath(base)));  // still the test's, untouched
    ::unlink(leasePath(base).c_str());
}

TEST_CASE("G3: the worktree stays its owner's on disk, and a writable --mount gets the run's id",
          "[G3][uid][idmap]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const std::string shared = sandbox.scratch().makeDir("shared", 0777);
    ::chmod(shared.c_str(), 0777);
    sandbox.option("--mount", shared + ":/tmp/shared:rw");
    const std::string name = randomToken("owned");
    const ProbeRun write = sandbox.probe({"create-file", "/repo/" + name, "x"});
    INFO(write.describe());
    REQUIRE(write.result() == "ok");
    const nlohmann::json result = sandbox.result();
    INFO(result.dump());
    REQUIRE(result["host_uid"].is_number());
    const unsigned long hostUid = result["host_uid"];
    if (mode == Mode::Rootless) {
        CHECK(hostUid == invokingUid(mode));
        CHECK(result["host_gid"] == invokingGid(mode));
    } else {
        CHECK(inDefaultRange(hostUid));
        CHECK(result["host_gid"] == hostUid);
    }

    // Through the idmap (root) or as the caller itself (rootless), what the
    // sandbox wrote in the worktree is the worktree owner's.
    struct stat wt {
    }, st{};
    REQUIRE(::stat(sandbox.worktree().c_str(), &wt) == 0);
    REQUIRE(::stat((sandbox.worktree() + "/" + name).c_str(), &st) == 0);
    CHECK(st.st_uid == wt.st_uid);
    CHECK(st.st_gid == wt.st_gid);
    // Inside, it is the sandbox's own.
    const ProbeRun inside = sandbox.probe({"stat", "/repo/" + name});
    INFO(inside.describe());
    CHECK(inside.report.get("uid") == std::to_string(kNobody));

    // A writable --mount has no idmap: files land as the run's host id.
    const ProbeRun other = sandbox.probe({"create-file", "/tmp/shared/" + name, "x"});
    INFO(other.describe());
    REQUIRE(other.result() == "ok");
    const nlohmann::json second = sandbox.result();
    REQUIRE(::stat((shared + "/" + name).c_str(), &st) == 0);
    CHECK(st.st_uid == second["host_uid"]);
    CHECK(st.st_gid == second["host_gid"]);
}

TEST_CASE("G3: other ids behave as on a host: as root they are mapped and refused with EPERM",
          "[G3][uid][block]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    // Root: the sandbox's block maps inside 0..65535, so another id is a
    // real id it may not take (EPERM). Rootless: only the caller is mapped,
    // and the kernel calls any other id invalid (EINVAL, documented).
    const std::string refusal = mode == Mode::Root ? "EPERM" : "EINVAL";
    const std::vector<std::vector<std::string>> attempts = {
        {"chown-scratch", "0", "-1"},     {"chown-scratch", "-1", "0"},
        {"chown-scratch", "65533", "-1"}, {"setuid-to", "65533"},
        {"setgid-to", "65533"},           {"setuid-to", "0"},
    };
    for (const std::vector<std::string>& attempt : attempts) {
        const ProbeRun run = sandbox.probe(attempt);
        INFO(attempt.front() << " " << attempt[1] << "\n" << run.describe());
        REQUIRE(run.exitCode() == 0);
        CHECK(run.result() == refusal);
    }
    const ProbeRun map = sandbox.probe({"read-file", "/proc/self/uid_map"});
    INFO(map.describe());
    REQUIRE(map.result() == "ok");
    const std::vector<std::string> extent =
        fields(map.report.get("content").substr(0, map.report.get("content").find("\\n")));
    REQUIRE(extent.size() == 3);
    if (mode == Mode::Root) {
        CHECK(extent[0] == "0");
        CHECK(inDefaultRange(std::stoul(extent[1])));
        CHECK(extent[2] == "65536");
    } else {
        CHECK(extent[0] == std::to_string(kNobody));
        CHECK(extent[2] == "1");
    }
}
