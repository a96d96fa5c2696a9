#!/usr/bin/python3
"""A few hundred runs of every kind of ending, as root and as uid 65534; then
nothing may be left on the host: no process, no cgroup leaf, no mount, no
temporary file, and stockade's own fd count flat."""
import glob
import os
import subprocess
import sys
import tempfile
import time

STOCKADE = sys.argv[1]
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 240
TOKEN = "stockade-soak-%d" % os.getpid()

ENDINGS = [
    ["--", "true"],
    ["--", "sh", "-c", "exit 7"],
    ["--timeout", "0.2", "--", "sh", "-c", "trap '' TERM; sleep 30 & sleep 30 # " + TOKEN],
    ["--output-limit", "16k", "--", "yes", TOKEN],
    ["--", "sh", "-c", "(setsid sh -c 'sleep 60 # %s' &) ; exit 0" % TOKEN],
    ["--memory", "32m", "--", "python3", "-c", "b = bytearray(128 << 20)"],
    ["--pids", "8", "--", "sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10; do sleep 5 & done; wait"],
    ["--", "/no/such/program"],
]


def demote():
    os.setgroups([])
    os.setresgid(65534, 65534, 65534)
    os.setresuid(65534, 65534, 65534)


def host_state():
    mounts = open("/proc/self/mountinfo").read().count("\n")
    # A leaf is named after the stockade that made it; one whose stockade is
    # gone is a leak (a live one belongs to a run still going elsewhere).
    leaves = []
    for pattern in ("/sys/fs/cgroup/*/stockade/*-*", "/sys/fs/cgroup/*/*/stockade/*-*",
                    "/sys/fs/cgroup/*/*/*/stockade/*-*", "/sys/fs/cgroup/stockade/*-*"):
        for p in glob.glob(pattern):
            owner = os.path.basename(p).split("-")[0]
            if os.path.isdir(p) and owner.isdigit() and not os.path.exists("/proc/" + owner):
                leaves.append(p)
    # Where stockade had to leave its own cgroup v2 to enable controllers.
    for pattern in ("/sys/fs/cgroup/**/stockade-supervisor-*",):
        for p in glob.glob(pattern, recursive=True):
            owner = os.path.basename(p).rsplit("-", 1)[-1]
            if owner.isdigit() and not os.path.exists("/proc/" + owner):
                leaves.append(p)
    procs = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if TOKEN.encode() in open("/proc/%s/cmdline" % pid, "rb").read():
                procs.append(pid)
        except OSError:
            pass
    temps = glob.glob("/tmp/*.tmp.*")
    return mounts, sorted(leaves), procs, temps


before = host_state()
workdir = tempfile.mkdtemp()
os.chmod(workdir, 0o777)
fd_counts = set()
for i in range(RUNS):
    args = ENDINGS[i % len(ENDINGS)]
    rootless = (i // len(ENDINGS)) % 2 == 1
    if rootless and "--memory" in args:
        continue
    result = os.path.join(workdir, "r%d.json" % i)
    subprocess.run([STOCKADE, "run", "--quiet", "--result", result, *args],
                   preexec_fn=demote if rootless else None,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    if not os.path.exists(result):
        print("FAIL run %d (%s): no result" % (i, args))
        sys.exit(1)
    os.unlink(result)

# stockade's own fds while a sandbox runs: the same on the first and the
# hundredth run (nothing accumulates within a supervisor either).
# Counted once the payload itself runs (its own unique argument is seen in
# /proc), never after a fixed wait: a slow start (the sanitized build under
# load) would otherwise count the supervisor before it has opened anything.
def payload_running(argument):
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if open("/proc/%s/cmdline" % pid, "rb").read() == b"sleep\0" + argument.encode() + b"\0":
                return True
        except OSError:
            pass
    return False


for n in range(3):
    argument = "3.%d%d" % (os.getpid(), n)
    p = subprocess.Popen([STOCKADE, "run", "--quiet", "--", "sleep", argument])
    deadline = time.monotonic() + 60
    while not payload_running(argument):
        if p.poll() is not None or time.monotonic() > deadline:
            print("FAIL the fd-count run ended or never started its payload (exit %s)" % p.poll())
            p.kill()
            sys.exit(1)
        time.sleep(0.02)
    fd_counts.add(len(os.listdir("/proc/%d/fd" % p.pid)))
    p.wait()

after = host_state()
os.rmdir(workdir)
problems = []
if after[0] != before[0]:
    problems.append("host mounts: %d before, %d after" % (before[0], after[0]))
# Leaves that were there before the soak began belong to another stockade
# (another session's run that was killed, whose next run removes them).
if set(after[1]) - set(before[1]):
    problems.append("cgroup leaves left: %s" % sorted(set(after[1]) - set(before[1])))
if after[2]:
    problems.append("processes left: %s" % after[2])
if set(after[3]) - set(before[3]):
    problems.append("temporary files left: %s" % (set(after[3]) - set(before[3])))
if len(fd_counts) != 1:
    problems.append("supervisor fd counts differ between runs: %s" % sorted(fd_counts))
for p in problems:
    print("FAIL " + p)
print("%d runs; supervisor holds %s fds while running; %d passed, %d failed"
      % (RUNS, sorted(fd_counts), 0 if problems else 1, len(problems)))
sys.exit(1 if problems else 0)
