// stockade-refusal-flood: a flood of refused system calls, to measure and
// test what refusals cost the supervisor (docs/seccomp.md, "Refusals bounded
// in cost"; bench/refusal_flood.py).
//
//   stockade-refusal-flood PROCS SECONDS
//
// Forks PROCS processes, each calling keyctl(2) in a loop for SECONDS (0: until
// killed), then prints one line:
//
//   calls=N eperm=N other=N
//
// calls: every keyctl made; eperm: those answered EPERM (refused by the
// filter); other: any other answer (the call reached the kernel, which says
// EOPNOTSUPP for the undefined operation used here, so a broken sandbox still
// changes nothing). Exit status 0, or 1 when a process could not be started.
// Uses only libc and raw syscall(2), nothing of stockade.

#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

struct Tally {
    unsigned long long calls = 0;
    unsigned long long eperm = 0;
};

double now() {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

Tally flood(double seconds) {
    Tally tally;
    const double end = now() + seconds;
    while (seconds == 0 || now() < end) {
        // An undefined operation: EOPNOTSUPP should it ever reach the kernel.
        if (syscall(SYS_keyctl, 0x7fffffffL, 0L, 0L, 0L, 0L) < 0 && errno == EPERM) ++tally.eperm;
        ++tally.calls;
    }
    return tally;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s PROCS SECONDS\n", argv[0]);
        return 2;
    }
    const int procs = atoi(argv[1]);
    const double seconds = atof(argv[2]);
    if (procs < 1 || procs > 64 || seconds < 0) {
        fprintf(stderr, "%s: PROCS is 1..64, SECONDS 0 or more\n", argv[0]);
        return 2;
    }
    int tallies[2];
    if (pipe(tallies) != 0) return 1;
    int started = 0;
    for (int i = 0; i < procs; ++i) {
        const pid_t pid = fork();
        if (pid < 0) break;
        if (pid == 0) {
            close(tallies[0]);
            const Tally tally = flood(seconds);
            // One write of a few bytes: atomic on a pipe, whatever the others do.
            (void)!write(tallies[1], &tally, sizeof tally);
            _exit(0);
        }
        ++started;
    }
    close(tallies[1]);
    Tally total;
    Tally one;
    while (read(tallies[0], &one, sizeof one) == static_cast<ssize_t>(sizeof one)) {
        total.calls += one.calls;
        total.eperm += one.eperm;
    }
    while (wait(nullptr) > 0) {
    }
    printf("calls=%llu eperm=%llu other=%llu\n", total.calls, total.eperm,
           total.calls - total.eperm);
    return started == procs ? 0 : 1;
}
