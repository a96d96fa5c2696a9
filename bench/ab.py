#!/usr/bin/env python3
"""Interleaved timing of whole commands, for A/B comparisons on a noisy machine.

Usage: bench/ab.py ROUNDS NAME=COMMAND [NAME=COMMAND ...]

Each round runs every command once, in a fresh random order, so drift and
other load hit all of them alike; ten warm-up rounds are not counted. A
command's stdout goes to /dev/null. Prints each command's median and p95
wall time, and its median over the first command's; then the median CPU time
(user + system, from wait4: the command and every descendant), which a
machine loaded by other work stretches far less than wall time. This script
is a child subreaper, so a descendant its parent left unreaped (bubblewrap's
pid 1 and the command under it: the outer bwrap exits on its status pipe
without waiting) is reparented here, waited for, and counted with the
command that started it; without that, bwrap's CPU left out all but its outer
process.
Not a test: nothing here asserts a time.

Example (root; the worktree owned by root, so stockade idmaps it):
  bench/ab.py 150 plain='build/stockade run --quiet -- /bin/true' \\
      worktree='build/stockade run --quiet --worktree /tmp/wt -- /bin/true'
"""
import ctypes
import os
import random
import shlex
import statistics
import sys
import time

WARMUP = 10
PR_SET_CHILD_SUBREAPER = 36


ORPHAN_WAIT = 10.0


def reap_orphans(name):
    """Waits for every descendant reparented here; returns their CPU in ms.

    One still alive ORPHAN_WAIT seconds after its command ended (a daemon)
    stops the bench rather than hang it."""
    total = 0.0
    deadline = time.monotonic() + ORPHAN_WAIT
    while True:
        try:
            pid, _, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return total
        if pid == 0:
            if time.monotonic() > deadline:
                sys.exit(f"{name}: a descendant outlived the command by {ORPHAN_WAIT:.0f} s")
            time.sleep(0.0005)
            continue
        total += (usage.ru_utime + usage.ru_stime) * 1000


def main(argv):
    if len(argv) < 3 or not argv[1].isdigit() or any("=" not in a for a in argv[2:]):
        sys.exit(__doc__)
    rounds = int(argv[1])
    commands = [(name, shlex.split(cmd)) for name, cmd in (a.split("=", 1) for a in argv[2:])]
    times = {name: [] for name, _ in commands}
    cpu = {name: [] for name, _ in commands}
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit(f"prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(ctypes.get_errno())}")
    devnull = os.open(os.devnull, os.O_WRONLY)
    for r in range(rounds + WARMUP):
        order = list(commands)
        random.shuffle(order)
        for name, argv_ in order:
            start = time.perf_counter()
            pid = os.posix_spawnp(argv_[0], argv_, os.environ,
                                  file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1)])
            _, status, usage = os.wait4(pid, 0)
            elapsed = (time.perf_counter() - start) * 1000
            orphans = reap_orphans(name)
            if r >= WARMUP:
                times[name].append(elapsed)
                cpu[name].append((usage.ru_utime + usage.ru_stime) * 1000 + orphans)
            if os.waitstatus_to_exitcode(status) != 0:
                sys.exit(f"{name}: {shlex.join(argv_)} failed ({status})")
    base = statistics.median(times[commands[0][0]])
    cpu_base = statistics.median(cpu[commands[0][0]]) or 1
    for name, _ in commands:
        median = statistics.median(times[name])
        p95 = statistics.quantiles(times[name], n=20)[18] if len(times[name]) > 1 else median
        cpu_median = statistics.median(cpu[name])
        print(f"{name:14s} median {median:7.3f} ms   p95 {p95:7.3f}   {median / base:5.2f}x the first"
              f"   cpu {cpu_median:6.3f} ms {cpu_median / cpu_base:5.2f}x")


if __name__ == "__main__":
    main(sys.argv)
