// `run` and `exec` relaying a terminal (oci/terminal_relay.h): what the
// console socket may carry, and a relay that ends with init even when a
// process it does not wait for still holds the pty.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "base/fd_passing.h"
#include "base/unique_fd.h"
#include "oci/terminal_relay.h"

using namespace stockade;

namespace {

UniqueFd openMaster() {
    UniqueFd master(posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
    REQUIRE(master);
    REQUIRE(grantpt(master.get()) == 0);
    REQUIRE(unlockpt(master.get()) == 0);
    return master;
}

// fd `which` pointed at `to` for as long as this lives.
struct Redirect {
    int which;
    int saved;
    Redirect(int which_fd, int to) : which(which_fd), saved(dup(which_fd)) {
        REQUIRE(saved >= 0);
        REQUIRE(dup2(to, which) == which);
    }
    ~Redirect() {
        dup2(saved, which);
        close(saved);
    }
};

}  // namespace

TEST_CASE("oci terminal relay: the console socket's message is the pty master alone", "[oci]") {
    int pair[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0);
    UniqueFd ours(pair[0]), theirs(pair[1]);

    // Nothing sent: an error at once, never a wait.
    auto none = oci::receivedPtyMaster(ours.get());
    REQUIRE_FALSE(none);

    UniqueFd master = openMaster();
    int two[2] = {master.get(), master.get()};
    REQUIRE(sendWithFds(theirs.get(), "console", 7, two, 2) == 0);
    auto doubled = oci::receivedPtyMaster(ours.get());
    REQUIRE_FALSE(doubled);
    CHECK(doubled.error().text().find("2 fds") != std::string::npos);

    int p[2];
    REQUIRE(pipe2(p, O_CLOEXEC) == 0);
    UniqueFd pipe_read(p[0]), pipe_write(p[1]);
    int one = pipe_read.get();
    REQUIRE(sendWithFds(theirs.get(), "console", 7, &one, 1) == 0);
    auto not_tty = oci::receivedPtyMaster(ours.get());
    REQUIRE_FALSE(not_tty);
    CHECK(not_tty.error().text().find("not a terminal") != std::string::npos);

    one = master.get();
    REQUIRE(sendWithFds(theirs.get(), "console", 7, &one, 1) == 0);
    auto got = oci::receivedPtyMaster(ours.get());
    REQUIRE(got);
    CHECK(isatty(got->get()));
}

namespace {

// init writes a line to the pty and exits 7, leaving a process it does not
// wait for holding the pty, silent or writing every 20 ms.
struct Relayed {
    Result<int> status = Error::message("not run");
    std::string output;
};

Relayed relayWithStray(bool noisy) {
    UniqueFd master = openMaster();
    const std::string slave_path = ptsname(master.get());
    int held[2];
    REQUIRE(pipe2(held, O_CLOEXEC) == 0);
    UniqueFd held_read(held[0]), held_write(held[1]);

    sigset_t forwarded, old;
    sigemptyset(&forwarded);
    sigaddset(&forwarded, SIGCHLD);
    sigaddset(&forwarded, SIGTERM);
    REQUIRE(sigprocmask(SIG_BLOCK, &forwarded, &old) == 0);
    pid_t init = fork();
    REQUIRE(init >= 0);
    if (init == 0) {
        setsid();
        int slave = open(slave_path.c_str(), O_RDWR);
        if (slave < 0) _exit(100);
        (void)!write(slave, "out-1\n", 6);
        signal(SIGHUP, SIG_IGN);
        pid_t stray = fork();
        if (stray == 0) {
            // The hangup init's end sends its session taken as a shell's
            // background job takes it (nohup). Without the relay's bounds
            // the relay would wait this out (an hour).
            for (int i = 0; i < 180000; ++i) {
                if (noisy) (void)!write(slave, "x", 1);
                usleep(20000);
            }
            _exit(0);
        }
        (void)!write(held[1], &stray, sizeof(stray));
        _exit(7);
    }
    held_write.reset();
    pid_t stray = 0;
    REQUIRE(read(held_read.get(), &stray, sizeof(stray)) == sizeof(stray));

    int out[2];
    REQUIRE(pipe2(out, O_CLOEXEC) == 0);
    UniqueFd out_read(out[0]), out_write(out[1]);
    REQUIRE(fcntl(out_read.get(), F_SETFL, O_NONBLOCK) == 0);
    UniqueFd null(open("/dev/null", O_RDONLY | O_CLOEXEC));
    Relayed relayed;
    {
        Redirect in(STDIN_FILENO, null.get()), to(STDOUT_FILENO, out_write.get());
        relayed.status = oci::relayTerminal(master.get(), init, forwarded);
    }
    kill(stray, SIGKILL);
    // The relay gave back the mask it found (SIGWINCH unblocked again).
    sigset_t now;
    sigprocmask(SIG_SETMASK, nullptr, &now);
    CHECK(sigismember(&now, SIGWINCH) == sigismember(&old, SIGWINCH));
    sigprocmask(SIG_SETMASK, &old, nullptr);
    out_write.reset();
    std::string chunk(65536, '\0');
    ssize_t n;
    while ((n = read(out_read.get(), chunk.data(), chunk.size())) > 0)
        relayed.output.append(chunk.data(), size_t(n));
    return relayed;
}

}  // namespace

TEST_CASE(
    "oci terminal relay: output relayed, init's status returned, a silent holder of "
    "the pty does not hold the relay",
    "[oci]") {
    Relayed relayed = relayWithStray(false);
    REQUIRE(relayed.status);
    CHECK(WIFEXITED(*relayed.status));
    CHECK(WEXITSTATUS(*relayed.status) == 7);
    CHECK(relayed.output == "out-1\r\n");
}

TEST_CASE(
    "oci terminal relay: a holder of the pty that keeps writing does not hold the relay "
    "either",
    "[oci]") {
    Relayed relayed = relayWithStray(true);
    REQUIRE(relayed.status);
    CHECK(WEXITSTATUS(*relayed.status) == 7);
    CHECK(relayed.output.starts_with("out-1\r\n"));
}

TEST_CASE("oci terminal relay: a signal reaches init while the reader of stdout is stalled",
          "[oci]") {
    UniqueFd master = openMaster();
    const std::string slave_path = ptsname(master.get());
    int out[2];
    REQUIRE(pipe2(out, O_CLOEXEC) == 0);
    UniqueFd out_read(out[0]), out_write(out[1]);
    sigset_t forwarded, old;
    sigemptyset(&forwarded);
    sigaddset(&forwarded, SIGCHLD);
    sigaddset(&forwarded, SIGTERM);
    REQUIRE(sigprocmask(SIG_BLOCK, &forwarded, &old) == 0);
    // init fills the pty far past what stdout's pipe holds, then waits for
    // the SIGTERM only the relay can pass on, and ends 9.
    pid_t init = fork();
    REQUIRE(init >= 0);
    if (init == 0) {
        setsid();
        signal(SIGTERM, [](int) { _exit(9); });
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);
        int slave = open(slave_path.c_str(), O_RDWR);
        if (slave < 0) _exit(100);
        std::string block(4096, 'x');
        for (int i = 0; i < 64; ++i) (void)!write(slave, block.data(), block.size());
        for (;;) pause();
    }
    // The reader: silent until it has sent the parent a SIGTERM and init has
    // ended of it, then it reads everything. A relay that takes no signal
    // while stdout is full never passes it on: after 10 s the reader kills
    // init instead (a 9 seen nowhere), so that the case fails, not hangs.
    const pid_t relay_pid = getpid();
    pid_t reader = fork();
    REQUIRE(reader >= 0);
    if (reader == 0) {
        out_write.reset();
        int init_fd = static_cast<int>(syscall(SYS_pidfd_open, init, 0));
        usleep(300000);
        kill(relay_pid, SIGTERM);
        pollfd ended{init_fd, POLLIN, 0};
        if (poll(&ended, 1, 10000) != 1) kill(init, SIGKILL);
        char buf[65536];
        while (read(out_read.get(), buf, sizeof(buf)) > 0) {
        }
        _exit(0);
    }
    out_read.reset();
    UniqueFd null(open("/dev/null", O_RDONLY | O_CLOEXEC));
    Result<int> status = Error::message("not run");
    {
        Redirect in(STDIN_FILENO, null.get()), to(STDOUT_FILENO, out_write.get());
        status = oci::relayTerminal(master.get(), init, forwarded);
    }
    out_write.reset();
    waitpid(reader, nullptr, 0);
    sigprocmask(SIG_SETMASK, &old, nullptr);
    REQUIRE(status);
    CHECK(WIFEXITED(*status));
    CHECK(WEXITSTATUS(*status) == 9);
}
