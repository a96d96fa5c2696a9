// G3: identity (user namespace, uid mapping); G4: privileges; G5's namespace
// creation; G9's namespaces seen from the host.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

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

TEST_CASE("G3: run by root, the sandbox runs as the worktree's owner", "[G3][uid]") {
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
        CHECK(all.front() == std::to_string(kNobody));  // rootless, or root on root's worktree
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
