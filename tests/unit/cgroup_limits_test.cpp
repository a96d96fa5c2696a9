#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>

#include "runtime/cgroups/cgroup_limits.h"
#include "runtime/cgroups/cgroup_v1.h"
#include "runtime/cgroups/cgroup_v2.h"

using namespace stockade;

TEST_CASE("the cgroup2 mount is found in mountinfo, hybrid or pure", "[cgroup]") {
    const std::string hybrid =
        "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
        "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
        "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
    CHECK(findCgroup2Mount(hybrid) == "/sys/fs/cgroup/unified");
    const std::string pure =
        "29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
        "rw,nsdelegate,memory_recursiveprot\n";
    CHECK(findCgroup2Mount(pure) == "/sys/fs/cgroup");
    CHECK(findCgroup2Mount("31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n").empty());
}

TEST_CASE("a controller's path is read from /proc/self/cgroup", "[cgroup]") {
    const std::string hybrid =
        "9:name=systemd:/\n8:pids:/ci/job\n4:memory:/process_api/abc\n2:cpu,cpuacct:/x\n0::/\n";
    CHECK(cgroupPathOf(hybrid, "memory") == std::optional<std::string>("/process_api/abc"));
    CHECK(cgroupPathOf(hybrid, "pids") == std::optional<std::string>("/ci/job"));
    CHECK(cgroupPathOf(hybrid, "cpuacct") == std::optional<std::string>("/x"));
    CHECK(cgroupPathOf(hybrid, "") == std::optional<std::string>("/"));
    CHECK_FALSE(cgroupPathOf(hybrid, "blkio").has_value());
    const std::string pure = "0::/user.slice/user-1000.slice/user@1000.service/app.slice/x.scope\n";
    CHECK(cgroupPathOf(pure, "") ==
          std::optional<std::string>(
              "/user.slice/user-1000.slice/user@1000.service/app.slice/x.scope"));
    CHECK_FALSE(cgroupPathOf(pure, "memory").has_value());
}

TEST_CASE("flat-keyed cgroup files are read by key", "[cgroup]") {
    CHECK(keyedValue("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n", "oom_kill") == 3);
    CHECK(keyedValue("low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n", "max") == 12);
    CHECK(keyedValue("max 0\n", "oom_kill") == 0);
}

TEST_CASE("no limits asked, no cgroup touched", "[cgroup]") {
    auto cgroups = SandboxCgroups::create({});
    REQUIRE(cgroups.ok());
    CHECK(cgroups->memory() == CgroupMechanism::None);
    CHECK(cgroups->pids() == CgroupMechanism::None);
    CHECK(cgroups->cloneIntoFd() < 0);
}

// --- a fake cgroupfs: plain files in a temporary directory --------------------------
//
// What a host without memory and pids on cgroup v2 cannot show for real:
// which files get which values, and how the kernel's accounting is read.
// The test plays the kernel where one is needed (it creates the files a
// mkdir would, and removes them where an rmdir would need them gone).

namespace {

class FakeCgroupTree {
  public:
    FakeCgroupTree() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "cgfake-XXXXXX").string();
        REQUIRE(mkdtemp(tmpl.data()) != nullptr);
        root_ = tmpl;
    }
    ~FakeCgroupTree() { std::filesystem::remove_all(root_); }
    const std::string& root() const { return root_; }
    // A "cgroup": a directory with these files, empty unless given.
    std::string cgroup(const std::string& relative,
                       std::map<std::string, std::string> files = {}) const {
        std::string dir = root_ + "/" + relative;
        std::filesystem::create_directories(dir);
        for (const char* name : {"cgroup.procs", "cgroup.subtree_control", "cgroup.controllers"})
            files.try_emplace(name, "");
        for (const auto& [name, text] : files) write(dir + "/" + name, text);
        return dir;
    }
    static void write(const std::string& path, const std::string& text) {
        std::ofstream(path, std::ios::trunc) << text;
    }
    static std::string read(const std::string& path) {
        std::ifstream in(path);
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }

  private:
    std::string root_;
};

}  // namespace

TEST_CASE("fake tree: v2 limits go to memory.max, memory.swap.max and pids.max", "[cgroup]") {
    FakeCgroupTree tree;
    std::string leaf =
        tree.cgroup("leaf", {{"memory.max", ""}, {"memory.swap.max", ""}, {"pids.max", ""}});
    REQUIRE(writeV2Limits(leaf, {uint64_t{256} << 20, 64}).ok());
    CHECK(tree.read(leaf + "/memory.max") == "268435456");
    CHECK(tree.read(leaf + "/memory.swap.max") == "0");
    CHECK(tree.read(leaf + "/pids.max") == "64");

    SECTION("without swap accounting there is no memory.swap.max, and that is no error") {
        std::string bare = tree.cgroup("bare", {{"memory.max", ""}});
        CHECK(writeV2Limits(bare, {uint64_t{1} << 20, std::nullopt}).ok());
        CHECK(tree.read(bare + "/memory.max") == "1048576");
    }
    SECTION("only what is asked is written") {
        std::string only_pids = tree.cgroup("only-pids", {{"memory.max", "max"}, {"pids.max", ""}});
        CHECK(writeV2Limits(only_pids, {std::nullopt, 9}).ok());
        CHECK(tree.read(only_pids + "/memory.max") == "max");
        CHECK(tree.read(only_pids + "/pids.max") == "9");
    }
    SECTION("a limit file that cannot be written is an error that names it") {
        std::string missing = tree.cgroup("missing");
        auto s = writeV2Limits(missing, {std::nullopt, 9});
        REQUIRE_FALSE(s.ok());
        CHECK(s.error().describe().find("pids.max") != std::string::npos);
        CHECK(s.error().errnum() == ENOENT);
    }
}

TEST_CASE("fake tree: v2 events say OOM kill, pids limit and peak as the kernel wrote them",
          "[cgroup]") {
    FakeCgroupTree tree;
    std::string leaf = tree.cgroup(
        "leaf", {{"memory.events", "low 0\nhigh 0\nmax 17\noom 1\noom_kill 1\noom_group_kill 0\n"},
                 {"pids.events", "max 3\n"},
                 {"memory.peak", "67104768\n"}});
    CgroupEvents e = readV2Events(leaf, true, true);
    CHECK(e.oom_killed);
    CHECK(e.pids_limit_hit);
    CHECK(e.peak_memory == 67104768);

    // "max" in memory.events counts reclaim at the limit, not a kill.
    tree.write(leaf + "/memory.events", "low 0\nhigh 0\nmax 17\noom 0\noom_kill 0\n");
    tree.write(leaf + "/pids.events", "max 0\n");
    e = readV2Events(leaf, true, true);
    CHECK_FALSE(e.oom_killed);
    CHECK_FALSE(e.pids_limit_hit);

    // Controllers not in use are not read; memory.peak before Linux 5.19 is absent.
    std::filesystem::remove(leaf + "/memory.peak");
    tree.write(leaf + "/pids.events", "max 5\n");
    e = readV2Events(leaf, true, false);
    CHECK(e.peak_memory == 0);
    CHECK_FALSE(e.pids_limit_hit);
}

TEST_CASE("fake tree: v1 limits and events", "[cgroup]") {
    FakeCgroupTree tree;
    std::string memory = tree.cgroup("memory/leaf", {{"memory.limit_in_bytes", ""},
                                                     {"memory.memsw.limit_in_bytes", ""},
                                                     {"memory.oom_control",
                                                      "oom_kill_disable 0\nunder_oom 0\n"
                                                      "oom_kill 2\n"},
                                                     {"memory.max_usage_in_bytes", "786432\n"}});
    std::string pids = tree.cgroup("pids/leaf", {{"pids.max", ""}, {"pids.events", "max 1\n"}});
    REQUIRE(writeV1MemoryLimit(memory, 1 << 30).ok());
    REQUIRE(writeV1PidsLimit(pids, 4096).ok());
    CHECK(tree.read(memory + "/memory.limit_in_bytes") == "1073741824");
    CHECK(tree.read(memory + "/memory.memsw.limit_in_bytes") == "1073741824");
    CHECK(tree.read(pids + "/pids.max") == "4096");
    CgroupEvents e = readV1Events(memory, pids);
    CHECK(e.oom_killed);
    CHECK(e.pids_limit_hit);
    CHECK(e.peak_memory == 786432);
    e = readV1Events("", "");
    CHECK_FALSE(e.oom_killed);
    CHECK_FALSE(e.pids_limit_hit);
    CHECK(e.peak_memory == 0);
}

TEST_CASE(
    "fake tree: a delegated cgroup holding stockade alone is left for a relocation dir, "
    "and restored on release",
    "[cgroup]") {
    FakeCgroupTree tree;
    std::string base = tree.cgroup("user.slice/stockade.scope",
                                   {{"cgroup.controllers", "cpu memory pids\n"},
                                    {"cgroup.procs", std::to_string(getpid()) + "\n"}});
    // What mkdir would make: the relocation dir's and the subtree's files.
    std::string relocation =
        tree.cgroup("user.slice/stockade.scope/" + supervisorDirName(getpid()));
    std::string subtree_dir = tree.cgroup("user.slice/stockade.scope/stockade");

    auto subtree = CgroupV2Subtree::prepare({base, true}, {"memory", "pids"});
    REQUIRE(subtree.ok());
    CHECK(subtree->dir() == subtree_dir);
    CHECK(subtree->relocation() == relocation);
    CHECK(tree.read(relocation + "/cgroup.procs") == "0");  // "0": the writer itself
    CHECK(tree.read(base + "/cgroup.subtree_control") == "+memory +pids");
    CHECK(tree.read(subtree_dir + "/cgroup.subtree_control") == "+memory +pids");

    // The kernel's view after those writes; and rmdir needs the files gone.
    tree.write(base + "/cgroup.subtree_control", "memory pids\n");
    tree.write(base + "/cgroup.procs", "");
    for (const std::string& dir : {relocation, subtree_dir})
        for (const auto& entry : std::filesystem::directory_iterator(dir))
            std::filesystem::remove(entry.path());
    subtree->release();
    CHECK_FALSE(std::filesystem::exists(subtree_dir));
    CHECK_FALSE(std::filesystem::exists(relocation));
    CHECK(tree.read(base + "/cgroup.subtree_control") == "-memory -pids");
    CHECK(tree.read(base + "/cgroup.procs") == "0");  // back home
}

TEST_CASE("fake tree: a cgroup that holds other processes too is refused, and nothing changes",
          "[cgroup]") {
    FakeCgroupTree tree;
    std::string base =
        tree.cgroup("session.scope", {{"cgroup.controllers", "memory pids\n"},
                                      {"cgroup.procs", "1\n" + std::to_string(getpid()) + "\n"}});
    auto subtree = CgroupV2Subtree::prepare({base, true}, {"memory"});
    REQUIRE_FALSE(subtree.ok());
    CHECK(subtree.error().describe().find("holds processes other than stockade (1)") !=
          std::string::npos);
    CHECK(tree.read(base + "/cgroup.subtree_control").empty());
    CHECK_FALSE(std::filesystem::exists(base + "/" + supervisorDirName(getpid())));
    CHECK_FALSE(std::filesystem::exists(base + "/stockade"));
}

TEST_CASE("fake tree: controllers already enabled below the root are not enabled again",
          "[cgroup]") {
    FakeCgroupTree tree;
    std::string base = tree.cgroup("", {{"cgroup.controllers", "cpu memory pids\n"},
                                        {"cgroup.subtree_control", "memory pids\n"},
                                        {"cgroup.procs", "1\n"}});
    std::string subtree_dir = tree.cgroup("stockade");
    auto subtree = CgroupV2Subtree::prepare({base, false}, {"memory", "pids"});
    REQUIRE(subtree.ok());
    CHECK(subtree->relocation().empty());
    CHECK(tree.read(base + "/cgroup.subtree_control") == "memory pids\n");
    CHECK(tree.read(subtree_dir + "/cgroup.subtree_control") == "+memory +pids");
    subtree->release();
    CHECK(std::filesystem::exists(subtree_dir));  // the root's subtree stays
}

TEST_CASE("cgroup names say which stockade made them", "[cgroup]") {
    CHECK(ownerOf("1234-0") == 1234);
    CHECK(ownerOf("1234-17") == 1234);
    CHECK(ownerOf("1234") == 1234);
    CHECK(ownerOf("stockade-supervisor-99", "stockade-supervisor-") == 99);
    CHECK(ownerOf("stockade-supervisor-99", "") == 0);
    CHECK(ownerOf("pool-0") == 0);
    CHECK(ownerOf("cgroup.procs") == 0);
    CHECK(ownerOf("12-x") == 0);
    CHECK(ownerOf("12-") == 0);
    CHECK(ownerOf("-1") == 0);
    CHECK(ownerOf("0-1") == 0);
    CHECK(numberIn("786432\n") == std::optional<uint64_t>(786432));
    CHECK_FALSE(numberIn("max\n").has_value());
    CHECK_FALSE(numberIn("").has_value());
    CHECK(pidsIn("1\n22\n333\n") == std::vector<pid_t>{1, 22, 333});
}
