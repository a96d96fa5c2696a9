// The hook's child where its pipes sit on fds 0-2 in another order (a
// runtime started with its standard fds closed gets its pipes there): each
// must still land where the hook looks for it, none overwritten by placing
// another.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "base/unique_fd.h"
#include "oci/hook_exec_in_child.h"

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
