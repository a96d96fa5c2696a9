"""What the OCI tests (lifecycle.py, podman.py and the rest) share: the
checks and their summary, skips, and what they read of the host."""
import os
import sys
import time

BUSYBOX = "/bin/busybox"
# The cgroup v1 hierarchies a root container may get a directory in (where
# mounted; oci/cgroups.cpp), for tests that look for what is left.
V1_CONTROLLERS = ("memory", "pids", "freezer", "cpu", "cpuacct", "blkio", "cpuset", "devices",
                  "hugetlb")


# Every failed check of this run, by what it checked (finish() names them).
failures = []


def check(what, ok, detail=""):
    """One verdict: `ok` or `FAIL` and what was checked, with what was seen
    when it failed."""
    print(("ok   " if ok else "FAIL ") + what + ("" if ok else f"\n     {detail}"))
    if not ok:
        failures.append(what)


def finish():
    """A script's last word: each failed check named and exit 1, else "all
    passed"."""
    if failures:
        print(f"{len(failures)} failed: " + "; ".join(failures))
        sys.exit(1)
    print("all passed")


def wait_for(predicate, bound_s=30.0, each=None, interval_s=0.05):
    """Polls until the predicate holds (calling `each` before every try); the
    bound is a hang guard, not an assertion on time."""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        if each:
            each()
        if predicate():
            return True
        time.sleep(interval_s)
    return predicate()


def skip(why):
    """Exit 77 (ctest's skip), or fail under CI=true: a test that cannot run
    there must not pass quietly."""
    print(f"SKIP: {why}")
    if os.environ.get("CI") == "true":
        print("FAIL: CI=true turns this skip into a failure")
        sys.exit(1)
    sys.exit(77)


def host_pids_running(argv):
    """Host pids of live (not zombie) processes whose command line is argv."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")[:-1]
            with open(f"/proc/{entry}/stat") as f:
                state = f.read().rsplit(") ", 1)[1][0]
        except (OSError, IndexError):
            continue
        if cmd == [a.encode() for a in argv] and state not in "ZX":
            out.append(int(entry))
    return out


def status_field(pid, name):
    """A field of /proc/PID/status as its words ("NSpid": host pid first)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(name + ":"):
                    return line.split()[1:]
    except OSError:
        pass
    return []


def parent_of(pid):
    """The parent pid /proc/PID/stat gives (after the last ") ", which ends
    the command's name whatever it holds); 0 where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(") ", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0
