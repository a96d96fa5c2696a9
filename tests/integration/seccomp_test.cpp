// G5 through the real binary: every denied group tried from inside the
// sandbox with stockade-try-syscall (tests/probe/try_syscall.cpp), in both
// modes; refusals reported in the result by name; SIGSYS named as the cause;
// a policy brought as an OCI/Docker seccomp file.
#include <signal.h>

#include <fstream>
#include <set>
#include <sstream>

#include "tests/integration/harness.h"

namespace stockade::itest {
namespace {

const std::string kTrySyscall = "/probe/stockade-try-syscall";

// Calls that must reach the kernel (their bad arguments make it answer
// EBADF/EFAULT/EINVAL, or they succeed harmlessly).
const std::set<std::string> kReachesKernel = {
    "getpid",      "personality-query", "ioctl-tcgets",   "socket-unix",
    "socket-inet", "socket-inet6",      "socket-netlink", "clone"};
// Answered ENOSYS so that libraries fall back (glibc's clone3 -> clone).
const std::set<std::string> kAnsweredEnosys = {"clone3"};
// Answered as a kernel with client TCP Fast Open off answers.
const std::set<std::string> kAnsweredEopnotsupp = {"sendto-fastopen", "sendmsg-fastopen",
                                                   "sendmmsg-fastopen"};

std::map<std::string, std::string> parseLines(const std::string& out) {
    std::map<std::string, std::string> answers;
    std::istringstream lines(out);
    std::string name, answer;
    while (lines >> name >> answer) answers[name] = answer;
    return answers;
}

std::vector<std::string> allProbes() {
    // `stockade-try-syscall` with no argument prints its list; running it on
    // the host is harmless by design (bad arguments throughout).
    Completed listed = runStockade(
        {.mode = Mode::Root,
         .args = {"run", "--mount", std::string(STOCKADE_PROBE_DIR) + ":/probe", "--", kTrySyscall},
         .leakFds = false});
    std::vector<std::string> names;
    auto at = listed.err.find("probes:");
    REQUIRE(at != std::string::npos);
    std::istringstream words(listed.err.substr(at + 7));
    std::string word;
    while (words >> word)
        if (word != "x32") names.push_back(word);
    return names;
}

}  // namespace

TEST_CASE("G5: every dangerous group is refused from inside, and each refusal is reported",
          "[G5][seccomp]") {
    STOCKADE_EACH_MODE(mode);
    const std::vector<std::string> probes = allProbes();
    REQUIRE(probes.size() > 60);
    Sandbox sandbox(mode);
    std::vector<std::string> command = {kTrySyscall};
    command.insert(command.end(), probes.begin(), probes.end());
    const Completed run = sandbox.run(command);
    INFO(run.describe());
    REQUIRE(run.exitCode == 0);
    const auto answers = parseLines(run.out);
    std::set<std::string> expected_denials;
    for (const std::string& probe : probes) {
        INFO("probe " << probe);
        REQUIRE(answers.count(probe) == 1);
        const std::string& answer = answers.at(probe);
        if (kReachesKernel.count(probe)) {
            CHECK(answer != "errno=EPERM");
            CHECK(answer != "errno=ENOSYS");
        } else if (kAnsweredEnosys.count(probe)) {
            CHECK(answer == "errno=ENOSYS");
        } else if (kAnsweredEopnotsupp.count(probe)) {
            CHECK(answer == "errno=EOPNOTSUPP");
        } else {
            CHECK(answer == "errno=EPERM");
        }
    }
    const nlohmann::json result = sandbox.result();
    INFO(result.dump(2));
    REQUIRE(result.contains("denials"));
    std::map<std::string, uint64_t> denied;
    for (const auto& d : result["denials"]) denied[d["syscall"]] = d["count"];
    // A sample by name: one refusal each, counted by the supervisor.
    for (const char* name : {"keyctl", "add_key", "bpf", "ptrace", "unshare", "mount", "kexec_load",
                             "init_module", "userfaultfd", "io_uring_setup", "perf_event_open"})
        CHECK(denied[name] == 1);
    // ENOSYS answers stay in the kernel and are not reported.
    CHECK(denied.count("clone3") == 0);
    CHECK(result["status"] == "passed");
}

TEST_CASE("G5: an x32 system call kills the process, and the result names seccomp",
          "[G5][seccomp]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    const Completed run = sandbox.run({kTrySyscall, "x32"});
    INFO(run.describe());
    CHECK(run.exitCode == 128 + SIGSYS);
    const nlohmann::json result = sandbox.result();
    INFO(result.dump(2));
    CHECK(result["status"] == "failed");
    CHECK(result["reason"] == "seccomp");
    CHECK(result["signal"] == SIGSYS);
}

TEST_CASE("G5: a profile brings its own policy in Docker's seccomp format", "[G5][seccomp]") {
    STOCKADE_EACH_MODE(mode);
    Sandbox sandbox(mode);
    // Default allow, with one call refused by a custom errno: the refusal
    // must come from this file, not from stockade's own default.
    const std::string policy = sandbox.scratch().writeFile("docker-seccomp.json", R"({
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": ["SCMP_ARCH_X86_64"],
        "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13}]
    })");
    std::ifstream in(std::string(STOCKADE_SOURCE_DIR) + "/profiles/held-test.json");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string from = "\"seccomp\": \"default\"";
    REQUIRE(text.find(from) != std::string::npos);
    text.replace(text.find(from), from.size(), "\"seccomp\": \"" + policy + "\"");
    const std::string profile = sandbox.scratch().writeFile("custom.json", text);
    sandbox.option("--profile", profile);
    const Completed run = sandbox.run(
        {"sh", "-c", "mkdir /tmp/d; echo code=$?; cat /proc/self/status | grep Seccomp:"});
    INFO(run.describe());
    CHECK(run.out.find("code=1") != std::string::npos);
    CHECK(run.err.find("Permission denied") != std::string::npos);
    const nlohmann::json result = sandbox.result();
    INFO(result.dump(2));
    CHECK(result["enforced"]["seccomp"] == "custom");
    REQUIRE(result.contains("denials"));
    bool saw_mkdir = false;
    for (const auto& d : result["denials"])
        if (d["syscall"] == "mkdir" || d["syscall"] == "mkdirat") saw_mkdir = true;
    CHECK(saw_mkdir);
}

}  // namespace stockade::itest
