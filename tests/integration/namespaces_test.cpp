// G9: the IPC and cgroup namespaces (UTS is with G1's tests in network_test).
#include <sys/ipc.h>
#include <sys/shm.h>

#include <random>

#include "harness.h"

using namespace stockade::itest;

TEST_CASE("G9: the host's System V shared memory is out of sight", "[G9][ipc]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const key_t key = static_cast<key_t>(std::random_device{}() & 0x3fffffff) + 1;
    // World-readable, so that only the IPC namespace hides it.
    const int id = ::shmget(key, 4096, IPC_CREAT | IPC_EXCL | 0666);
    REQUIRE(id >= 0);
    const ProbeRun run = sandbox.probe({"shmget", std::to_string(key)});
    ::shmctl(id, IPC_RMID, nullptr);
    INFO(run.describe());
    REQUIRE(run.exitCode() == 0);
    CHECK(run.result() == "ENOENT");
}

TEST_CASE("G9: the sandbox sees its own cgroup as the root", "[G9][cgroup]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const ProbeRun run = sandbox.probe({"read-file", "/proc/self/cgroup"});
    INFO(run.describe());
    REQUIRE(run.result() == "ok");
    // "ID:CONTROLLERS:PATH" per hierarchy (one on a pure cgroup v2 host):
    // in its own cgroup namespace every path reads as the root.
    const std::string content = run.report.get("content");
    size_t start = 0;
    int lines = 0;
    while (start < content.size()) {
        size_t end = content.find("\\n", start);
        if (end == std::string::npos) end = content.size();
        const std::string line = content.substr(start, end - start);
        INFO("cgroup line " << line);
        CHECK(line.substr(line.rfind(':') + 1) == "/");
        ++lines;
        start = end + 2;
    }
    CHECK(lines >= 1);
}
