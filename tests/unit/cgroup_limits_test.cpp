#include <catch2/catch.hpp>

#include "runtime/cgroup_limits.h"

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
