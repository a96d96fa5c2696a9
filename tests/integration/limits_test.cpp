// G8 and SPEC §4 through the real binary, in both modes: each bound stops
// what it should, the result names the cause (read from the kernel's own
// accounting), and nothing is left behind.
#include <signal.h>

#include "tests/integration/harness.h"

namespace stockade::itest {

TEST_CASE("G8: a CPU spin that ignores SIGXCPU and SIGTERM ends at its CPU bound", "[G8][limits]") {
    STOCKADE_EACH_MODE(mode);
    TokenReaper reaper(randomToken("spin"));
    Sandbox sandbox(mode);
    sandbox.option("--cpu-time", "1");
    const Completed run =
        sandbox.run({"sh", "-c", "trap '' XCPU TERM; while :; do :; done # " + reaper.token()});
    INFO(run.describe());
    CHECK(run.exitCode == 128 + SIGKILL);
    const nlohmann::json result = sandbox.result();
    INFO(result.dump(2));
    CHECK(result["status"] == "blocked");
    CHECK(result["reason"] == "cpu_time");
    CHECK(result["enforced"]["cpu_time"] == "rlimit");
    CHECK(findProcessesWithToken(reaper.token(), false).empty());
}

TEST_CASE("G8: a command that stops itself still ends at the wall-clock timeout", "[G8][limits]") {
    STOCKADE_EACH_MODE(mode);
    TokenReaper reaper(randomToken("stopped"));
    Sandbox sandbox(mode);
    sandbox.option("--timeout", "1");
    const Completed run =
        sandbox.run({"sh", "-c", "sleep 60 & # " + reaper.token() + "\nkill -STOP $$; sleep 60"});
    INFO(run.describe());
    CHECK(run.exitCode == 124);
    const nlohmann::json result = sandbox.result();
    INFO(result.dump(2));
    CHECK(result["status"] == "timed_out");
    CHECK(result["reason"] == "timeout");
    CHECK(result["stragglers_killed"] >= 1);
    CHECK(findProcessesWithToken(reaper.token(), false).empty());
}

TEST_CASE("G8: an output flood on stderr is cut at the output limit", "[G8][output]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.option("--output-limit", "256k").option("--quiet");
    const Completed run = sandbox.run({"sh", "-c", "yes flood >&2"});
    INFO(run.describe());
    CHECK(run.exitCode == 128 + SIGKILL);
    const nlohmann::json result = sandbox.result();
    INFO(result.dump(2));
    CHECK(result["status"] == "blocked");
    CHECK(result["reason"] == "output_limit");
    CHECK(result["stderr"]["bytes"] == 256 * 1024);
    CHECK(result["stderr"]["truncated"] == true);
    CHECK(result["stderr"]["tail"].get<std::string>().size() == 4096);
    CHECK(result["stdout"]["truncated"] == false);
    // --quiet: captured, counted and hashed, but not echoed.
    CHECK(run.err.find("flood") == std::string::npos);
}

TEST_CASE("G8: a full /tmp answers ENOSPC inside and touches nothing outside", "[G8][tmpfs]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.option("--tmp-size", "1m");
    const Completed run =
        sandbox.run({"sh", "-c", "dd if=/dev/zero of=/tmp/fill bs=64k count=64 2>&1; echo dd=$?"});
    INFO(run.describe());
    CHECK(run.out.find("No space left on device") != std::string::npos);
    CHECK(run.out.find("dd=1") != std::string::npos);
    CHECK(run.exitCode == 0);
}

TEST_CASE("G8: a file beyond RLIMIT_FSIZE stops the writer with SIGXFSZ", "[G8][limits]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.option("--profile",
                   heldTestProfileWith(sandbox, "\"file_size\": \"1g\"", "\"file_size\": \"1m\""));
    const Completed run = sandbox.run({"dd", "if=/dev/zero", "of=/tmp/big", "bs=64k", "count=64"});
    INFO(run.describe());
    CHECK(run.exitCode == 128 + SIGXFSZ);
    const nlohmann::json result = sandbox.result();
    INFO(result.dump(2));
    CHECK(result["signal"] == SIGXFSZ);
}

TEST_CASE("G8: hard limits cannot be raised from inside", "[G8][limits]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const Completed run =
        sandbox.run({"python3", "-c",
                     "import resource\n"
                     "for name in ('RLIMIT_NOFILE', 'RLIMIT_CORE', 'RLIMIT_FSIZE', 'RLIMIT_CPU'):\n"
                     "    r = getattr(resource, name)\n"
                     "    soft, hard = resource.getrlimit(r)\n"
                     "    try:\n"
                     "        resource.setrlimit(r, (hard + 1, hard + 1))\n"
                     "        print(name, 'raised')\n"
                     "    except (ValueError, OSError) as e:\n"
                     "        print(name, 'refused', hard)\n"});
    INFO(run.describe());
    for (const char* name : {"RLIMIT_NOFILE", "RLIMIT_CORE", "RLIMIT_FSIZE", "RLIMIT_CPU"}) {
        INFO(name);
        CHECK(run.out.find(std::string(name) + " refused") != std::string::npos);
    }
    CHECK(run.out.find("RLIMIT_CORE refused 0") != std::string::npos);
}

TEST_CASE("G8: a memory bomb is stopped, named from the cgroup's own events where there is one",
          "[G8][limits]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.option("--memory", "64m");
    const Completed run = sandbox.run({"python3", "-c", "b = bytearray(512 << 20)"});
    INFO(run.describe());
    const nlohmann::json result = sandbox.result();
    INFO(result.dump(2));
    CHECK(result["status"] != "passed");
    if (result["enforced"]["memory"] == "rlimit") {
        // No writable cgroup (rootless on this host): the bound is
        // RLIMIT_DATA, the allocation fails, and the result says degraded.
        CHECK(result["degraded"].dump().find("memory") != std::string::npos);
        CHECK(run.err.find("MemoryError") != std::string::npos);
    } else {
        CHECK(result["reason"] == "memory_limit");
        CHECK(run.exitCode == 128 + SIGKILL);
        CHECK(result["peak_memory_bytes"] <= 64 << 20);
    }
    if (mode == Mode::Root) CHECK(result["enforced"]["memory"] != "rlimit");
}

// What the bound counts: memory used, not address space reserved. A
// WebAssembly instance reserves about 10 GiB of guard space it never
// touches; Vite's dev server instantiates one per module it transforms.
// Without a cgroup (rootless here) the bound is RLIMIT_DATA, which counts
// private writable memory only: the documented gap, shared anonymous memory,
// is asserted too, so the docs cannot outlive it.
TEST_CASE("G8: the memory bound counts memory used, not address space reserved", "[G8][limits]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.option("--memory", "1g");
    const Completed run = sandbox.run(
        {"node", "-e",
         "WebAssembly.instantiate(new Uint8Array([0,97,115,109,1,0,0,0,5,3,1,0,1]))"
         ".then(() => console.log('wasm instantiated'), e => console.log('wasm: ' + e.message))"});
    INFO(run.describe());
    CHECK(run.exitCode == 0);
    CHECK(run.out.find("wasm instantiated") != std::string::npos);
    const nlohmann::json result = sandbox.result();
    if (result["enforced"]["memory"] != "rlimit") return;

    Sandbox shared(mode);
    shared.option("--memory", "64m");
    const Completed wrote = shared.run({"python3", "-c",
                                        "import mmap\n"
                                        "m = mmap.mmap(-1, 512 << 20)\n"
                                        "chunk = b'x' * (1 << 20)\n"
                                        "for i in range(512): m[i << 20:(i + 1) << 20] = chunk\n"
                                        "print('wrote', len(m))\n"});
    INFO(wrote.describe());
    CHECK(wrote.out.find("wrote 536870912") != std::string::npos);
    CHECK(shared.result()["degraded"].dump().find("memory") != std::string::npos);
}

TEST_CASE("G8: a fork bomb is stopped at the pids bound", "[G8][limits]") {
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
    if (result["enforced"]["pids"] != "rlimit") CHECK(result["reason"] == "pids_limit");
    if (mode == Mode::Root) CHECK(result["enforced"]["pids"] != "rlimit");
    CHECK(findProcessesWithToken(reaper.token(), false).empty());
}

TEST_CASE("G8: --require refuses a host that cannot hold the bound, before anything runs",
          "[G8][require]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    sandbox.option("--require", "memory,pids");
    const Completed run = sandbox.run({"sh", "-c", "echo ran"});
    INFO(run.describe());
    const nlohmann::json result = sandbox.result();
    INFO(result.dump(2));
    if (mode == Mode::Root) {
        // This host gives root the v1 memory and pids hierarchies.
        CHECK(run.exitCode == 0);
        CHECK(result["status"] == "passed");
    } else {
        CHECK(run.exitCode == 125);
        CHECK(run.out.find("ran") == std::string::npos);
        CHECK(result["status"] == "blocked");
        CHECK(result["reason"] == "sandbox_unavailable");
        CHECK(run.err.find("memory") != std::string::npos);
    }
}

TEST_CASE("G8: bounds that make no sense are refused with invalid_bounds", "[G8][bounds]") {
    STOCKADE_EACH_MODE(mode);
    const auto [flag, value] =
        GENERATE(std::pair<std::string, std::string>{"--memory", "-1"},
                 std::pair<std::string, std::string>{"--memory", "0"},
                 std::pair<std::string, std::string>{"--memory", "100t"},
                 std::pair<std::string, std::string>{"--pids", "0"},
                 std::pair<std::string, std::string>{"--pids", "99999999"},
                 std::pair<std::string, std::string>{"--timeout", "abc"},
                 std::pair<std::string, std::string>{"--cpu-time", "-3"},
                 std::pair<std::string, std::string>{"--output-limit", "1x"});
    INFO(flag << " " << value);
    Sandbox sandbox(mode);
    sandbox.option(flag, value);
    const Completed run = sandbox.run({"sh", "-c", "echo ran"});
    INFO(run.describe());
    CHECK(run.exitCode == 125);
    CHECK(run.out.find("ran") == std::string::npos);
    CHECK(run.err.find(flag) != std::string::npos);
    const nlohmann::json result = sandbox.result();
    CHECK(result["status"] == "blocked");
    CHECK(result["reason"] == "invalid_bounds");
}

// A profile names a host-wide or per-user counter's bound and gets it
// (issue 15, docs/threat-model.md): read from inside, as the kernel answers,
// and the inotify bound tried for real (the eighth instance is refused).
TEST_CASE("G8: a profile loosens a host-wide counter by name", "[G8][limits]") {
    STOCKADE_EACH_MODE(mode);
    const bool named = GENERATE(false, true);
    INFO((named ? "named in the profile" : "the defaults"));
    Sandbox sandbox(mode);
    if (named)
        sandbox.option("--profile", heldTestProfileWith(
                                        sandbox, "\"open_files\": 4096",
                                        "\"open_files\": 4096, \"pending_signals\": 1000, "
                                        "\"message_queues\": \"100k\", \"inotify_instances\": 7, "
                                        "\"inotify_watches\": 1234"));
    const Completed run =
        sandbox.run({"python3", "-c",
                     "import ctypes, resource\n"
                     "print('sigpending', resource.getrlimit(resource.RLIMIT_SIGPENDING)[1])\n"
                     "print('msgqueue', resource.getrlimit(resource.RLIMIT_MSGQUEUE)[1])\n"
                     "for n in ('max_inotify_instances', 'max_inotify_watches'):\n"
                     "    print(n, open('/proc/sys/user/' + n).read().strip())\n"
                     "libc = ctypes.CDLL(None, use_errno=True)\n"
                     "got = 0\n"
                     "while got < 64 and libc.inotify_init1(0) >= 0:\n"
                     "    got += 1\n"
                     "print('instances', got)\n"});
    INFO(run.describe());
    REQUIRE(run.exitCode == 0);
    if (named) {
        CHECK(run.out.find("sigpending 1000\n") != std::string::npos);
        CHECK(run.out.find("msgqueue 102400\n") != std::string::npos);
        CHECK(run.out.find("max_inotify_instances 7\n") != std::string::npos);
        CHECK(run.out.find("max_inotify_watches 1234\n") != std::string::npos);
        CHECK(run.out.find("instances 7\n") != std::string::npos);
    } else {
        CHECK(run.out.find("sigpending 8192\n") != std::string::npos);
        CHECK(run.out.find("msgqueue 204800\n") != std::string::npos);
        CHECK(run.out.find("max_inotify_instances 32\n") != std::string::npos);
    }
}

}  // namespace stockade::itest
