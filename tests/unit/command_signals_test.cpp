// runtime/child/command_signals_in_child.h: which signals an OCI
// container's init passes on, as a PID 1 command would take them. Read
// from what the kernel says of a real process's dispositions.
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <string>

#include "runtime/child/command_signals_in_child.h"

using namespace stockade;

namespace {

void onSignal(int) {}

// A child that catches SIGUSR2 and SIGRTMIN+3, ignores SIGHUP and leaves
// SIGTERM at its default, then waits to be killed.
pid_t catchingChild() {
    int ready[2];
    REQUIRE(pipe(ready) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        struct sigaction sa {};
        sa.sa_handler = onSignal;
        sigaction(SIGUSR2, &sa, nullptr);
        sigaction(SIGRTMIN + 3, &sa, nullptr);
        signal(SIGHUP, SIG_IGN);
        signal(SIGTERM, SIG_DFL);
        (void)!write(ready[1], "r", 1);
        for (;;) pause();
    }
    close(ready[1]);
    char byte;
    REQUIRE(read(ready[0], &byte, 1) == 1);
    close(ready[0]);
    return pid;
}

}  // namespace

TEST_CASE("SigCgt is read from a status text", "[command_signals]") {
    const std::string text =
        "Name:\tsh\nSigPnd:\t0000000000000000\nSigBlk:\t0000000000010000\n"
        "SigIgn:\t0000000000000004\nSigCgt:\t0000000200010002\nCapInh:\t0\n";
    uint64_t mask = 0;
    REQUIRE(parseCaughtSignals(text.data(), text.size(), &mask));
    CHECK(mask == 0x0000000200010002ull);
    CHECK((mask >> (SIGINT - 1) & 1) == 1);
    CHECK((mask >> (SIGTERM - 1) & 1) == 0);
    CHECK((mask >> (SIGCHLD - 1) & 1) == 1);

    SECTION("a missing or malformed field is no answer") {
        for (const char* bad :
             {"Name:\tsh\nSigIgn:\t0000000000000004\n", "SigCgt:\t00000000004002\n",
              "SigCgt:\t00000000000040020\n", "SigCgt:\t000000000000400g\n",
              "SigCgt:\t000000000000400A\n", "SigCgt:", ""}) {
            uint64_t out = 7;
            CHECK_FALSE(parseCaughtSignals(bad, strlen(bad), &out));
            CHECK(out == 7);
        }
    }
    SECTION("the last line needs no newline") {
        const char last[] = "SigIgn:\t0000000000000000\nSigCgt:\t0000000000000100";
        REQUIRE(parseCaughtSignals(last, sizeof(last) - 1, &mask));
        CHECK(mask == 0x100);
    }
}

TEST_CASE("init takes every signal it may block but fault signals", "[command_signals]") {
    sigset_t set = containerInitSignals();
    for (int sig : {SIGKILL, SIGSTOP, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS})
        CHECK_FALSE(sigismember(&set, sig));
    for (int sig : {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM, SIGCHLD, SIGCONT,
                    SIGWINCH, SIGPWR, SIGTSTP, SIGIO, SIGPIPE, SIGRTMIN, SIGRTMAX})
        CHECK(sigismember(&set, sig));
}

TEST_CASE("a signal goes on only when the command catches it, or is SIGCONT", "[command_signals]") {
    pid_t child = catchingChild();
    int status_fd = -1;
    CHECK(commandTakesSignalInChild(child, SIGUSR2, &status_fd));
    CHECK(status_fd >= 0);  // kept for the next signal
    const int kept = status_fd;
    CHECK(commandTakesSignalInChild(child, SIGRTMIN + 3, &status_fd));
    CHECK_FALSE(commandTakesSignalInChild(child, SIGTERM, &status_fd));
    CHECK_FALSE(commandTakesSignalInChild(child, SIGHUP, &status_fd));  // ignored
    CHECK_FALSE(commandTakesSignalInChild(child, SIGUSR1, &status_fd));
    CHECK_FALSE(commandTakesSignalInChild(child, SIGRTMAX, &status_fd));
    CHECK(commandTakesSignalInChild(child, SIGCONT, &status_fd));
    CHECK(status_fd == kept);
    // The kept fd still names this process once its handlers change: a
    // SIGUSR2 sent now is caught (the child lives on), SIGTERM is not.
    REQUIRE(kill(child, SIGUSR2) == 0);
    CHECK(commandTakesSignalInChild(child, SIGUSR2, &status_fd));
    REQUIRE(kill(child, SIGTERM) == 0);
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM));
    // Reaped: nothing to read, so the signal goes on as before.
    CHECK(commandTakesSignalInChild(child, SIGTERM, &status_fd));
    close(status_fd);
}

TEST_CASE("without a status file to read, every signal goes on", "[command_signals]") {
    // A pid no process has (past pid_max), so there is no /proc entry.
    int status_fd = -1;
    CHECK(commandTakesSignalInChild(4194305, SIGTERM, &status_fd));
    CHECK(status_fd == -1);
}
