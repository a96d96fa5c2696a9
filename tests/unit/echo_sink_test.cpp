// The echo on its own, against real pipes and sockets: it never waits for a
// reader, keeps at most its capacity, counts what it drops, delivers the rest
// in order, and leaves the caller's file description as it found it.
#include "runtime/supervisor/echo_sink.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

using namespace stockade;

namespace {

struct Pipe {
    UniqueFd read, write;
    Pipe() {
        int fds[2];
        REQUIRE(pipe2(fds, O_CLOEXEC) == 0);
        read.reset(fds[0]);
        write.reset(fds[1]);
    }
};

std::string pattern(size_t size, size_t offset) {
    std::string out(size, '\0');
    for (size_t i = 0; i < size; ++i) out[i] = static_cast<char>('a' + (offset + i) % 26);
    return out;
}

std::string drain(int fd) {
    std::string out;
    char buf[65536];
    pollfd pfd{fd, POLLIN, 0};
    while (poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLIN)) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) break;
        out.append(buf, static_cast<size_t>(n));
    }
    return out;
}

}  // namespace

TEST_CASE("echo: a reader that never reads costs a bounded buffer, never a wait") {
    Pipe pipe;  // a blocking pipe: a plain write of more than it holds would hang
    const int flags = fcntl(pipe.write.get(), F_GETFL);
    EchoSink echo(pipe.write.get());
    REQUIRE(echo.active());
    const std::string chunk = pattern(256 * 1024, 0);
    size_t offered = 0;
    for (int i = 0; i < 8; ++i) {  // 2 MiB into a 64 KiB pipe
        echo.accept(chunk.data(), chunk.size());
        offered += chunk.size();
    }
    CHECK(echo.pending());
    CHECK(echo.room() == 0);
    CHECK(echo.dropped() > 0);
    CHECK(echo.dropped() < offered);
    // The caller's description still blocks: the echo wrote through its own.
    CHECK(fcntl(pipe.write.get(), F_GETFL) == flags);
    CHECK((flags & O_NONBLOCK) == 0);
}

TEST_CASE("echo: what it kept arrives whole and in order once the reader reads") {
    Pipe pipe;
    EchoSink echo(pipe.write.get());
    const std::string data = pattern(EchoSink::kCapacity / 2, 3);
    echo.accept(data.data(), data.size());
    std::string got;
    for (int i = 0; i < 1000 && (echo.pending() || got.size() < data.size()); ++i) {
        got += drain(pipe.read.get());
        echo.flush();
    }
    got += drain(pipe.read.get());
    CHECK(echo.dropped() == 0);
    CHECK_FALSE(echo.pending());
    CHECK(got == data);
}

TEST_CASE("echo: a reader gone turns the echo off and counts the rest") {
    signal(SIGPIPE, SIG_IGN);  // as the supervisor has it: EPIPE, not death
    Pipe pipe;
    EchoSink echo(pipe.write.get());
    pipe.read.reset();
    const std::string data = pattern(1000, 0);
    echo.accept(data.data(), data.size());
    CHECK_FALSE(echo.active());
    echo.accept(data.data(), data.size());
    CHECK(echo.dropped() == 2000);
}

TEST_CASE("echo: abandon drops what is pending, counted") {
    Pipe pipe;
    EchoSink echo(pipe.write.get());
    const std::string data = pattern(200 * 1024, 0);
    echo.accept(data.data(), data.size());
    REQUIRE(echo.pending());
    echo.abandon();
    CHECK_FALSE(echo.pending());
    CHECK(echo.dropped() + drain(pipe.read.get()).size() == data.size());
}

TEST_CASE("echo: a socket is written with MSG_DONTWAIT, a regular file as is") {
    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    UniqueFd a(sv[0]), b(sv[1]);
    EchoSink to_socket(a.get());
    CHECK(std::string(to_socket.methodName()) == "send(MSG_DONTWAIT)");
    const std::string data = pattern(4 * 1024 * 1024, 0);
    to_socket.accept(data.data(), data.size());  // returns: more than a socket buffer holds
    CHECK(to_socket.pending());

    char path[] = "/tmp/echo-sink-test-XXXXXX";
    UniqueFd file(mkstemp(path));
    REQUIRE(file);
    unlink(path);
    EchoSink to_file(file.get());
    CHECK(std::string(to_file.methodName()) == "write");
    to_file.accept(data.data(), data.size());
    CHECK_FALSE(to_file.pending());
    CHECK(lseek(file.get(), 0, SEEK_CUR) == static_cast<off_t>(data.size()));
}

TEST_CASE("echo: --quiet echoes nothing and drops nothing") {
    EchoSink echo(-1);
    CHECK_FALSE(echo.active());
    echo.accept("abc", 3);
    CHECK(echo.dropped() == 0);
}
