// runtime/child/command_signals_in_child.h: which signals an OCI
// container's init passes on, as a PID 1 command would take them. Read
// from what the kernel says of real processes: one that catches, one that
// blocks (as a signalfd reader does), one that waits in sigtimedwait (as
// tini does, with nothing blocked while it waits), one that sleeps.
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "runtime/child/command_signals_in_child.h"

using namespace stockade;

namespace {

void onSignal(int) {}

// A child that runs `body` after telling the parent it is ready; killed by
// the test.
pid_t childThat(const std::function<void()>& body) {
    int ready[2];
    REQUIRE(pipe(ready) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);
        body();
        (void)!write(ready[1], "r", 1);
        for (;;) pause();
    }
    close(ready[1]);
    char byte;
    REQUIRE(read(ready[0], &byte, 1) == 1);
    close(ready[0]);
    return pid;
}

// Until the child sleeps where its wchan names `word` (it wrote "ready"
// just before).
bool sleepsIn(pid_t pid, const char* word) {
    const std::string path = "/proc/" + std::to_string(pid) + "/wchan";
    for (int i = 0; i < 500; ++i) {
        char text[128] = {};
        int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
        ssize_t got = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
        if (fd >= 0) close(fd);
        if (got > 0 && strstr(text, word)) return true;
        usleep(10 * 1000);
    }
    return false;
}

void end(pid_t pid, const CommandProcFiles& files) {
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    close(files.status_fd);
    close(files.wchan_fd);
    close(files.stat_fd);
}

}  // namespace

TEST_CASE("signal masks are read from a status text", "[command_signals]") {
    const std::string text =
        "Name:\tsh\nSigPnd:\t0000000000000000\nSigBlk:\t0000000000010000\n"
        "SigIgn:\t0000000000000004\nSigCgt:\t0000000200010002\nCapInh:\t0\n";
    uint64_t mask = 0;
    REQUIRE(parseSignalMask(text.data(), text.size(), "SigCgt:", &mask));
    CHECK(mask == 0x0000000200010002ull);
    CHECK((mask >> (SIGINT - 1) & 1) == 1);
    CHECK((mask >> (SIGTERM - 1) & 1) == 0);
    CHECK((mask >> (SIGCHLD - 1) & 1) == 1);
    REQUIRE(parseSignalMask(text.data(), text.size(), "SigBlk:", &mask));
    CHECK(mask == 0x10000);

    SECTION("a missing or malformed field is no answer") {
        for (const char* bad :
             {"Name:\tsh\nSigIgn:\t0000000000000004\n", "SigCgt:\t00000000004002\n",
              "SigCgt:\t00000000000040020\n", "SigCgt:\t000000000000400g\n",
              "SigCgt:\t000000000000400A\n", "SigCgt:", ""}) {
            uint64_t out = 7;
            CHECK_FALSE(parseSignalMask(bad, strlen(bad), "SigCgt:", &out));
            CHECK(out == 7);
        }
    }
    SECTION("the last line needs no newline") {
        const char last[] = "SigIgn:\t0000000000000000\nSigCgt:\t0000000000000100";
        REQUIRE(parseSignalMask(last, sizeof(last) - 1, "SigCgt:", &mask));
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

TEST_CASE("a caught or blocked signal goes on, one at its default to a sleeper does not",
          "[command_signals]") {
    pid_t child = childThat([] {
        struct sigaction sa {};
        sa.sa_handler = onSignal;
        sigaction(SIGUSR2, &sa, nullptr);
        sigaction(SIGRTMIN + 3, &sa, nullptr);
        signal(SIGQUIT, SIG_IGN);
        sigset_t blocked;
        sigemptyset(&blocked);
        sigaddset(&blocked, SIGUSR1);  // as a signalfd reader holds it
        sigprocmask(SIG_BLOCK, &blocked, nullptr);
    });
    const bool paused = sleepsIn(child, "sys_pause");
    const CommandProcFiles files = openCommandProcFilesInChild(child);
    if (!paused || files.status_fd < 0 || files.wchan_fd < 0) end(child, files);
    REQUIRE(paused);
    REQUIRE(files.status_fd >= 0);
    REQUIRE(files.wchan_fd >= 0);
    CHECK(commandTakesSignalInChild(files, SIGUSR2));
    CHECK(commandTakesSignalInChild(files, SIGRTMIN + 3));
    CHECK(commandTakesSignalInChild(files, SIGUSR1));
    CHECK_FALSE(commandTakesSignalInChild(files, SIGTERM));
    CHECK_FALSE(commandTakesSignalInChild(files, SIGQUIT));  // ignored
    CHECK_FALSE(commandTakesSignalInChild(files, SIGRTMAX));
    CHECK(commandTakesSignalInChild(files, SIGCONT));
    end(child, files);
    // Reaped: nothing to read, so every signal goes on, as before.
    CHECK(commandTakesSignalInChild(files, SIGTERM));
}

TEST_CASE("a command waiting in sigtimedwait takes what it waits for, unblocked as it is",
          "[command_signals]") {
    // tini's way: everything blocked, then waited for; during the wait the
    // kernel unblocks the set, so SigBlk reads 0 and SigCgt 0.
    int ready[2];
    REQUIRE(pipe(ready) == 0);
    pid_t waiter = fork();
    REQUIRE(waiter >= 0);
    if (waiter == 0) {
        sigset_t all;
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, nullptr);
        (void)!write(ready[1], "r", 1);
        for (;;) {
            siginfo_t info;
            sigwaitinfo(&all, &info);
        }
    }
    close(ready[1]);
    char byte;
    REQUIRE(read(ready[0], &byte, 1) == 1);
    close(ready[0]);
    const bool waiting = sleepsIn(waiter, "sigtimedwait");
    const CommandProcFiles files = openCommandProcFilesInChild(waiter);
    if (!waiting || files.status_fd < 0) end(waiter, files);
    REQUIRE(waiting);
    uint64_t blocked = 1;
    char text[4096];
    ssize_t got = pread(files.status_fd, text, sizeof(text), 0);
    REQUIRE(got > 0);
    REQUIRE(parseSignalMask(text, static_cast<size_t>(got), "SigBlk:", &blocked));
    CHECK(blocked == 0);  // what SigBlk alone would get wrong
    CHECK(commandTakesSignalInChild(files, SIGTERM));
    CHECK(commandTakesSignalInChild(files, SIGRTMAX));
    end(waiter, files);
}

TEST_CASE("without a status file to read, every signal goes on", "[command_signals]") {
    // A pid no process has (past pid_max), so there is no /proc entry.
    const CommandProcFiles files = openCommandProcFilesInChild(4194305);
    CHECK(files.status_fd == -1);
    CHECK(files.wchan_fd == -1);
    CHECK(commandTakesSignalInChild(files, SIGTERM));
}
