// oci/stdio_pipes.h: as root, create and exec give the caller's anonymous
// stdio pipes to the container process's host uid, and nothing else: a
// named FIFO or a file is the host's filesystem and keeps its owner.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <string>

#include "oci/stdio_pipes.h"

using namespace stockade::oci;

namespace {

constexpr uid_t kGiven = 2013266921;  // a leased-range id no file here has

uid_t ownerOf(int fd) {
    struct stat st {};
    REQUIRE(fstat(fd, &st) == 0);
    return st.st_uid;
}

// giveStdioPipes in a child whose 0, 1 and 2 are the fds given.
void giveInChild(int in, int out, int err) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) _exit(1);
        giveStdioPipes(kGiven);
        _exit(0);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
}

}  // namespace

TEST_CASE(
    "the caller's anonymous stdio pipes are given; a named FIFO and a file keep their owner") {
    if (geteuid() != 0) {
        WARN("not root: giveStdioPipes is called only as root (create, exec)");
        return;
    }
    char dir_template[] = "/tmp/stockade-stdio-pipes-XXXXXX";
    REQUIRE(mkdtemp(dir_template) != nullptr);
    const std::string dir = dir_template;
    const std::string fifo = dir + "/fifo", file = dir + "/file";
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    int fifo_fd = open(fifo.c_str(), O_RDWR | O_CLOEXEC);  // RDWR: no wait for a peer
    int file_fd = open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    int pipe_fds[2];
    REQUIRE(pipe2(pipe_fds, O_CLOEXEC) == 0);
    REQUIRE(fifo_fd >= 0);
    REQUIRE(file_fd >= 0);

    giveInChild(fifo_fd, pipe_fds[1], file_fd);

    CHECK(ownerOf(pipe_fds[1]) == kGiven);  // the pipe, whole: both ends are one inode
    CHECK(ownerOf(pipe_fds[0]) == kGiven);
    CHECK(ownerOf(fifo_fd) == 0);  // the filesystem's FIFO untouched
    CHECK(ownerOf(file_fd) == 0);
    struct stat st {};
    REQUIRE(stat(fifo.c_str(), &st) == 0);
    CHECK(st.st_uid == 0);

    for (int fd : {fifo_fd, file_fd, pipe_fds[0], pipe_fds[1]}) close(fd);
    unlink(fifo.c_str());
    unlink(file.c_str());
    rmdir(dir.c_str());
}

TEST_CASE("a pipe another user owns is not taken") {
    if (geteuid() != 0) {
        WARN("not root: giveStdioPipes is called only as root (create, exec)");
        return;
    }
    int theirs[2];
    REQUIRE(pipe2(theirs, O_CLOEXEC) == 0);
    REQUIRE(fchown(theirs[1], 4242, static_cast<gid_t>(-1)) == 0);
    giveInChild(theirs[0], theirs[1], theirs[1]);
    CHECK(ownerOf(theirs[1]) == 4242);
    close(theirs[0]);
    close(theirs[1]);
}
