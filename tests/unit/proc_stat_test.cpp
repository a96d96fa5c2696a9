// ProcStat: the fields after a command name the process chose itself.
#include "base/proc_stat.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>

using namespace stockade;

TEST_CASE("proc stat: a name holding ') Z 1 ' does not move the fields after it") {
    // The child names itself as if its state were Z and its parent pid 1,
    // then tells the parent it has; what is read must be the kernel's.
    int ready[2];
    REQUIRE(pipe(ready) == 0);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        prctl(PR_SET_NAME, "x) Z 1 1 1 1 (");
        (void)!write(ready[1], "r", 1);
        pause();
        _exit(0);
    }
    char byte;
    REQUIRE(read(ready[0], &byte, 1) == 1);
    auto stat = ProcStat::read(child);
    auto self = ProcStat::read(0);
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    close(ready[0]);
    close(ready[1]);

    REQUIRE(stat);
    CHECK(stat->parent() == getpid());
    CHECK(stat->state() != 'Z');
    REQUIRE(self);
    CHECK(self->parent() == getppid());
    // Started after this process, and both after the boot.
    CHECK(self->startTime() > 0);
    CHECK(stat->startTime() >= self->startTime());
    // proc(5)'s fields 48-51: this process's argument and environment ranges.
    CHECK(self->field(48) > 0);
    CHECK(self->field(49) > self->field(48));
    CHECK(self->field(51) > self->field(50));
    CHECK(self->field(400) == 0);
    CHECK(self->field(3) == 0);
}

TEST_CASE("proc stat: a process that is gone, or no process, reads as nothing") {
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) _exit(0);
    REQUIRE(waitpid(child, nullptr, 0) == child);
    CHECK_FALSE(ProcStat::read(child));
    CHECK_FALSE(ProcStat::read(-5));
}
