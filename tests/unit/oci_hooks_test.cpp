// The hook's child where its pipes sit on fds 0-2 in another order (a
// runtime started with its standard fds closed gets its pipes there): each
// must still land where the hook looks for it, none overwritten by placing
// another.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/unique_fd.h"
#include "oci/hook_exec_in_child.h"
#include "oci/hooks.h"
#include "runtime/child/hooks_in_child.h"

using namespace stockade;

namespace {

std::string readAllFrom(int fd) {
    std::string text;
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
    return text;
}

struct Pipe {
    UniqueFd read, write;
    Pipe() {
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) == 0) {
            read = UniqueFd(fds[0]);
            write = UniqueFd(fds[1]);
        }
    }
};

}  // namespace

TEST_CASE(
    "oci hooks: pipes on fds 0-2 in a crossed order still reach the hook's stdin, stdout, stderr",
    "[oci]") {
    Pipe in, out, err, report;
    REQUIRE(in.read);
    REQUIRE(out.read);
    REQUIRE(err.read);
    REQUIRE(report.read);
    const std::string state = R"({"ociVersion":"1.2.0","id":"c1","status":"creating"})";
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        // stdin's pipe on 2, stdout's on 0, stderr's on 1: placing any one
        // first overwrites the source of another.
        if (dup2(out.write.get(), 0) < 0 || dup2(err.write.get(), 1) < 0 ||
            dup2(in.read.get(), 2) < 0)
            _exit(120);
        char sh[] = "sh", c[] = "-c";
        char script[] = "cat; echo out-text; echo err-text >&2; exit 3";
        char* argv[] = {sh, c, script, nullptr};
        char path_env[] = "PATH=/usr/bin:/bin";
        char* envp[] = {path_env, nullptr};
        oci::execHookInChild("/bin/sh", argv, envp, {2, 0, 1, report.write.get()}, nullptr, 0);
    }
    in.read.reset();
    out.write.reset();
    err.write.reset();
    report.write.reset();
    REQUIRE(write(in.write.get(), state.data(), state.size()) ==
            static_cast<ssize_t>(state.size()));
    in.write.reset();
    const std::string got_out = readAllFrom(out.read.get());
    const std::string got_err = readAllFrom(err.read.get());
    const std::string got_report = readAllFrom(report.read.get());
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    CHECK(got_report.empty());
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 3);
    CHECK(got_out == state + "out-text\n");
    CHECK(got_err == "err-text\n");
}

// createContainer and startContainer (runtime/child/hooks_in_child.h): the
// child side's runner, here in the test's own process (no namespace: the
// startContainer shape), with create's copy of the hooks.
namespace {

std::string readAll(const std::string& path) {
    std::string out;
    UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    char buf[4096];
    ssize_t n;
    while (fd && (n = read(fd.get(), buf, sizeof(buf))) > 0) out.append(buf, n);
    return out;
}

oci::Hook shHook(const std::string& script, std::optional<int> timeout = {}) {
    oci::Hook h;
    h.path = "/bin/sh";
    h.args = {"sh", "-c", script};
    h.env = {"PATH=/usr/bin:/bin"};
    h.timeout = timeout;
    return h;
}

}  // namespace

TEST_CASE(
    "oci hooks: the child side runs the container's hooks in order with the state, "
    "and names the first that fails",
    "[oci]") {
    char dir_template[] = "/tmp/stockade-hooks-unit-XXXXXX";
    REQUIRE(mkdtemp(dir_template));
    const std::string dir = dir_template;
    // An annotation that reads like the pid field must not be taken for it.
    nlohmann::json state = {{"ociVersion", "1.2.0"},
                            {"id", "c1"},
                            {"status", "created"},
                            {"annotations", {{"pid", "\"pid\":9999999999"}}}};
    std::vector<UniqueFd> held;
    std::vector<oci::Hook> list = {shHook("cat > " + dir + "/state; echo ran > " + dir + "/first"),
                                   shHook("printf 'bo\\001om' >&2; echo out; exit 3"),
                                   shHook("echo never > " + dir + "/third")};
    auto made = oci::childHookList("startContainer", list, state, false, held);
    REQUIRE(made);
    CHECK(held.empty());
    CHECK(made->state.substr(made->pid_offset, kHookPidSlot) == "9999999999");
    char note[160];
    int err = runHooksInChild(*made, 4242, note, sizeof(note), -1);
    CHECK(err == ECANCELED);
    CHECK(std::string(note) ==
          "error running startContainer hook #1 (/bin/sh): exit status 3, stdout: out?, "
          "stderr: bo?om");
    auto seen = nlohmann::json::parse(readAll(dir + "/state"), nullptr, false);
    REQUIRE_FALSE(seen.is_discarded());
    CHECK(seen["pid"] == 4242);
    CHECK(seen["id"] == "c1");
    CHECK(seen["annotations"]["pid"] == "\"pid\":9999999999");
    CHECK(readAll(dir + "/first") == "ran\n");
    CHECK(readAll(dir + "/third").empty());

    // Past its timeout: killed with what it started, named by its timeout.
    std::vector<oci::Hook> slow = {
        shHook("sleep 300 & echo $! > " + dir + "/bg; exec sleep 300", 1)};
    made = oci::childHookList("startContainer", slow, state, false, held);
    REQUIRE(made);
    CHECK(runHooksInChild(*made, 7, note, sizeof(note), -1) == ETIMEDOUT);
    CHECK(std::string(note) ==
          "error running startContainer hook #0 (/bin/sh): hook ran past "
          "specified timeout of 1.0s (killed)");
    const std::string bg = readAll(dir + "/bg");
    REQUIRE_FALSE(bg.empty());
    const pid_t bg_pid = std::stoi(bg);
    // Reaped by init in a container; here the test is its reaper, if it
    // reparented to us, else it is gone.
    for (int i = 0; i < 200 && kill(bg_pid, 0) == 0; ++i) {
        waitpid(bg_pid, nullptr, WNOHANG);
        usleep(10000);
    }
    CHECK(kill(bg_pid, 0) != 0);

    // A path that does not exist, and one opened by create beforehand.
    oci::Hook missing;
    missing.path = "/no/such/hook";
    made = oci::childHookList("startContainer", {missing}, state, false, held);
    REQUIRE(made);
    CHECK(runHooksInChild(*made, 7, note, sizeof(note), -1) == ENOENT);
    CHECK(std::string(note) == "error running startContainer hook #0 (/no/such/hook): exec failed");
    CHECK_FALSE(oci::childHookList("createContainer", {missing}, state, true, held));
    made = oci::childHookList("createContainer", {shHook("echo by-fd > " + dir + "/fd")}, state,
                              true, held);
    REQUIRE(made);
    REQUIRE(held.size() == 1);
    CHECK(made->hooks[0].exec_fd == held[0].get());
    CHECK(runHooksInChild(*made, 1, note, sizeof(note), -1) == 0);
    CHECK(readAll(dir + "/fd") == "by-fd\n");

    // The watched socket's peer gone (create killed while init runs its
    // createContainer hooks): the hook is killed, no note, the runner says so.
    int pair[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) == 0);
    UniqueFd ours(pair[0]), peer(pair[1]);
    char byte = 1;
    REQUIRE(send(peer.get(), &byte, 1, 0) == 1);  // a message queued is not a hang-up
    made = oci::childHookList("createContainer",
                              {shHook("echo $$ > " + dir + "/held; exec sleep 300")}, state, false,
                              held);
    REQUIRE(made);
    std::thread closer([&] {
        for (int i = 0; i < 3000 && readAll(dir + "/held").empty(); ++i) usleep(1000);
        peer.reset();
    });
    err = runHooksInChild(*made, 1, note, sizeof(note), ours.get());
    closer.join();
    CHECK(err == kHooksWatchHungUp);
    const std::string held_pid = readAll(dir + "/held");
    REQUIRE_FALSE(held_pid.empty());
    CHECK(kill(std::stoi(held_pid), 0) != 0);
    std::filesystem::remove_all(dir);
}
