// The record's `detail` through the real binary, both modes: a bound the
// supervisor saw reached is named with the kernel's evidence; a failure the
// output pins on the sandbox's layout (a read-only mount, an absent node)
// is named with the output as evidence and the layout fact from stockade's
// own plan; text alone never makes a bound, nor a layout fact that is false
// (docs/contract.md, "detail").
#include <signal.h>
#include <sys/stat.h>

#include "tests/integration/harness.h"

namespace stockade::itest {
namespace {

std::vector<nlohmann::json> entriesOf(const nlohmann::json& result, const std::string& kind) {
    std::vector<nlohmann::json> out;
    if (!result.contains("detail")) return out;
    for (const nlohmann::json& e : result["detail"])
        if (e["kind"] == kind) out.push_back(e);
    return out;
}

}  // namespace

TEST_CASE("detail: a write past the file size bound names RLIMIT_FSIZE, from the signal",
          "[G8][limits][detail]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.option("--profile",
                   heldTestProfileWith(sandbox, "\"file_size\": \"1g\"", "\"file_size\": \"1m\""));
    const Completed run = sandbox.run({"dd", "if=/dev/zero", "of=/tmp/big", "bs=64k", "count=64"});
    INFO(run.describe());
    CHECK(run.exitCode == 128 + SIGXFSZ);
    const nlohmann::json result = sandbox.result();
    INFO(result.dump(2));
    CHECK(result["reason"] == "signal");  // reason stays
    const auto bounds = entriesOf(result, "bound");
    REQUIRE(bounds.size() == 1);
    CHECK(bounds[0]["limit"] == "file_size");
    CHECK(bounds[0]["mechanism"] == "RLIMIT_FSIZE");
    CHECK(bounds[0]["value"] == 1 << 20);
    CHECK(bounds[0]["unit"] == "bytes");
    CHECK(bounds[0]["evidence"] == "signal");
}

TEST_CASE("detail: Python, which ignores SIGXFSZ, gets EFBIG: the bound named, from its output",
          "[G8][limits][detail]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.option("--profile",
                   heldTestProfileWith(sandbox, "\"file_size\": \"1g\"", "\"file_size\": \"1m\""));
    const Completed run =
        sandbox.run({"python3", "-c", "open('/tmp/big', 'wb').write(b'x' * (2 << 20))"});
    INFO(run.describe());
    CHECK(run.exitCode == 1);
    CHECK(run.err.find("File too large") != std::string::npos);  // the kernel's EFBIG
    const nlohmann::json result = sandbox.result();
    INFO(result.dump(2));
    CHECK(result["reason"] == "nonzero_exit");
    CHECK_FALSE(result.contains("bound"));  // no signal: `bound` is the signal's alone
    const auto bounds = entriesOf(result, "bound");
    REQUIRE(bounds.size() == 1);
    CHECK(bounds[0]["limit"] == "file_size");
    CHECK(bounds[0]["value"] == 1 << 20);
    CHECK(bounds[0]["evidence"] == "stderr");
}

TEST_CASE("detail: a CPU spin past its bound names RLIMIT_CPU, from the CPU accounted",
          "[G8][limits][detail]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.option("--cpu-time", "1");
    const Completed run = sandbox.run({"sh", "-c", "while :; do :; done"});
    INFO(run.describe());
    const nlohmann::json result = sandbox.result();
    INFO(result.dump(2));
    CHECK(result["reason"] == "cpu_time");
    const auto bounds = entriesOf(result, "bound");
    REQUIRE(bounds.size() == 1);
    CHECK(bounds[0]["limit"] == "cpu_time");
    CHECK(bounds[0]["mechanism"] == "RLIMIT_CPU");
    CHECK(bounds[0]["value"] == 1);
    CHECK(bounds[0]["unit"] == "seconds");
    CHECK(bounds[0]["evidence"] == "cpu_accounting");
}

TEST_CASE("detail: a memory bomb names the memory cgroup's bound where a cgroup holds it",
          "[G8][limits][detail]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.option("--memory", "64m");
    const Completed run = sandbox.run({"python3", "-c", "b = bytearray(512 << 20)"});
    INFO(run.describe());
    const nlohmann::json result = sandbox.result();
    INFO(result.dump(2));
    CHECK(result["status"] != "passed");
    const auto bounds = entriesOf(result, "bound");
    const std::string mechanism = result["enforced"]["memory"].get<std::string>();
    if (mechanism == "rlimit") {
        // RLIMIT_DATA: the allocation fails and no counter records it.
        CHECK(bounds.empty());
    } else {
        REQUIRE(bounds.size() == 1);
        CHECK(bounds[0]["limit"] == "memory");
        CHECK(bounds[0]["mechanism"] == mechanism);
        CHECK(bounds[0]["value"] == 64 << 20);
        CHECK(bounds[0]["evidence"] == "cgroup_events");
    }
}

TEST_CASE("detail: a fork bomb names the pids cgroup's bound where a cgroup holds it",
          "[G8][limits][detail]") {
    STOCKADE_EACH_MODE(mode);
    TokenReaper reaper(randomToken("forkbomb"));
    Sandbox sandbox(mode);
    sandbox.option("--pids", "32");
    const Completed run = sandbox.run(
        {"sh", "-c", "for i in $(seq 100); do sleep 30 & done; wait # " + reaper.token()});
    INFO(run.describe());
    const nlohmann::json result = sandbox.result();
    INFO(result.dump(2));
    CHECK(result["status"] != "passed");
    const auto bounds = entriesOf(result, "bound");
    const std::string mechanism = result["enforced"]["pids"].get<std::string>();
    if (mechanism == "rlimit") {
        CHECK(bounds.empty());  // RLIMIT_NPROC's EAGAIN is counted nowhere
    } else {
        REQUIRE(bounds.size() == 1);
        CHECK(bounds[0]["limit"] == "pids");
        CHECK(bounds[0]["mechanism"] == mechanism);
        CHECK(bounds[0]["value"] == 32);
        CHECK(bounds[0]["unit"] == "processes");
        CHECK(bounds[0]["evidence"] == "cgroup_events");
    }
    CHECK(findProcessesWithToken(reaper.token(), false).empty());
}

TEST_CASE("detail: a write under /usr fails with EROFS, and the record names the read-only mount",
          "[G2][detail]") {
    STOCKADE_EACH_MODE(mode);
    const std::string name = "/usr/stockade-detail-" + randomToken("w");
    Sandbox sandbox(mode);
    const Completed run = sandbox.run({"touch", name});
    INFO(run.describe());
    CHECK(run.exitCode == 1);
    CHECK(run.err.find("Read-only file system") != std::string::npos);  // the kernel's EROFS
    struct stat st {};
    CHECK(::lstat(name.c_str(), &st) != 0);  // nothing on the host
    const nlohmann::json result = sandbox.result();
    INFO(result.dump(2));
    CHECK(result["reason"] == "nonzero_exit");
    CHECK(entriesOf(result, "bound").empty());
    const auto layout = entriesOf(result, "layout");
    REQUIRE(layout.size() == 1);
    CHECK(layout[0]["fact"] == "read_only");
    CHECK(layout[0]["error"] == "EROFS");
    CHECK(layout[0]["path"] == name);
    CHECK(layout[0]["layout_path"] == "/usr");
    CHECK(layout[0]["layout_kind"] == "read_only_mount");
    CHECK(layout[0]["evidence"] == "stderr");
}

TEST_CASE("detail: an absent device node and a missing /home are named as the layout's",
          "[G2][dev][detail]") {
    STOCKADE_EACH_MODE(mode);
    SECTION("/dev/sda") {
        Sandbox sandbox(mode);
        const Completed run = sandbox.run({"cat", "/dev/sda"});
        INFO(run.describe());
        CHECK(run.exitCode == 1);
        CHECK(run.err.find("No such file or directory") != std::string::npos);
        const nlohmann::json result = sandbox.result();
        INFO(result.dump(2));
        const auto layout = entriesOf(result, "layout");
        REQUIRE(layout.size() == 1);
        CHECK(layout[0]["fact"] == "absent");
        CHECK(layout[0]["error"] == "ENOENT");
        CHECK(layout[0]["path"] == "/dev/sda");
        CHECK(layout[0]["layout_path"] == "/dev");
        CHECK(layout[0]["layout_kind"] == "devices");
        CHECK(layout[0]["evidence"] == "stderr");
    }
    SECTION("/home, from Python on stdout") {
        Sandbox sandbox(mode);
        const Completed run =
            sandbox.run({"python3", "-c",
                         "import sys\ntry:\n    open('/home/user/.config/app.toml')\n"
                         "except OSError as e:\n    print(e)\n    sys.exit(2)\n"});
        INFO(run.describe());
        CHECK(run.exitCode == 2);
        const nlohmann::json result = sandbox.result();
        INFO(result.dump(2));
        const auto layout = entriesOf(result, "layout");
        REQUIRE(layout.size() == 1);
        CHECK(layout[0]["fact"] == "absent");
        CHECK(layout[0]["path"] == "/home/user/.config/app.toml");
        CHECK(layout[0]["layout_path"] == "/");
        CHECK(layout[0]["evidence"] == "stdout");
    }
}

TEST_CASE("detail: text the command prints makes no bound and no false layout fact",
          "[G2][detail]") {
    STOCKADE_EACH_MODE(mode);
    SECTION("printed errors for a read-only path: marked as the output's, and true of the layout") {
        Sandbox sandbox(mode);
        const Completed run = sandbox.run(
            {"sh", "-c",
             "echo \"touch: cannot touch '/usr/fake': Read-only file system\" >&2; "
             "echo 'File size limit exceeded'; echo 'CPU time limit exceeded' >&2; exit 1"});
        INFO(run.describe());
        const nlohmann::json result = sandbox.result();
        INFO(result.dump(2));
        CHECK(result.contains("bound") == false);
        CHECK(entriesOf(result, "bound").empty());
        const auto layout = entriesOf(result, "layout");
        REQUIRE(layout.size() == 1);
        CHECK(layout[0]["evidence"] == "stderr");  // never a kernel's evidence
        CHECK(layout[0]["layout_path"] == "/usr");
    }
    SECTION("printed errors for paths the layout makes writable or does not decide: nothing") {
        Sandbox sandbox(mode);
        const Completed run = sandbox.run(
            {"sh", "-c",
             "echo \"touch: cannot touch '/repo/x': Read-only file system\" >&2; "
             "echo \"cannot create /tmp/y: Read-only file system\"; "
             "echo 'cat: /usr/bin/nothing-here: No such file or directory' >&2; "
             "echo 'cat: /dev/null: No such file or directory' >&2; "
             "echo 'cat: /repo/../dev/sda: No such file or directory' >&2; kill -XCPU $$"});
        INFO(run.describe());
        const nlohmann::json result = sandbox.result();
        INFO(result.dump(2));
        CHECK(result["signal"] == SIGXCPU);
        CHECK(result["reason"] == "signal");  // a self-sent SIGXCPU is not the CPU bound
        CHECK_FALSE(result.contains("detail"));
        CHECK_FALSE(result.contains("bound"));
    }
    SECTION("a command that passed has no detail, whatever it printed") {
        Sandbox sandbox(mode);
        const Completed run = sandbox.run({"sh", "-c", "touch /usr/x; cat /dev/sda; echo done"});
        INFO(run.describe());
        CHECK(run.exitCode == 0);
        const nlohmann::json result = sandbox.result();
        INFO(result.dump(2));
        CHECK_FALSE(result.contains("detail"));
    }
}

}  // namespace stockade::itest
