#!/usr/bin/python3
"""A standing compatibility check: a real project's own test suite passes
inside the sandbox as it does outside.

Runs a chosen set of CPython's regression tests (Debian's
libpython3.11-testsuite, the modules that exercise the operating system)
bare and inside `stockade run` with the default profile, on the same
machine and the same interpreter, and compares the JUnit records case by
case. Bare, the suite runs as uid 65534, the uid it has inside in both
modes (a root-owned worktree as root, the caller rootless): a bare run as
root would pass and skip other cases for being root, not for the sandbox.
Inside, stockade runs once as root and once as 65534. It fails when a case that passed
bare fails, is skipped or is missing inside, unless tests/compat/known-differences.txt
lists that case, for that mode, with its reason. A difference must show
twice: each one is re-run once, bare and inside, so that a timing test that
lost a race once is reported as a flake, not a difference.

    cpython_compat.py STOCKADE [--modes root,rootless] [--modules a,b]

Exit 0: no unexplained difference; 1: some; 77: cannot run here (the
test suite is not installed), which ctest reports as skipped.
"""

import argparse
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
KNOWN = os.path.join(HERE, "known-differences.txt")
PYTHON = "/usr/bin/python3.11"
SUITE = "/usr/lib/python3.11/test/regrtest.py"

# The longest first: regrtest -j2 hands modules out in this order, and
# test_multiprocessing_fork (its cases run one after another, over a minute)
# then overlaps the rest instead of ending the run alone.
MODULES = [
    "test_multiprocessing_fork", "test_pty", "test_os", "test_posix", "test_subprocess", "test_signal",
    "test_select", "test_selectors", "test_epoll", "test_poll", "test_shutil",
    "test_tempfile", "test_fcntl", "test_mmap", "test_pwd", "test_grp",
    "test_time", "test_threading", "test_resource", "test_getpass", "test_ioctl",
    # Without -u, regrtest enables no resource: test_socket runs without
    # the network (loopback, unix and socketpair cases only).
    "test_socket", "test_asyncio.test_events", "test_asyncio.test_subprocess",
]

# Cases left out (regrtest --ignorefile), to keep the whole check within a
# few minutes: multiprocessing's same API over threads and over a manager
# process (the process variants exercise the OS), and its timing-heavy
# cases: a 60 s condition-wait race, barriers, wait() timeouts, 100
# processes started one by one.
IGNORED = [
    "test.test_multiprocessing_fork.WithThreads*",
    "test.test_multiprocessing_fork.WithManager*",
    "test.test_multiprocessing_fork.TestSyncManagerTypes.*",
    "test.test_multiprocessing_fork.WithProcessesTestCondition.*",
    "test.test_multiprocessing_fork.WithProcessesTestBarrier.*",
    "test.test_multiprocessing_fork.WithProcessesTestProcess.test_many_processes",
    "test.test_multiprocessing_fork.TestWait.*",
]

NOBODY = 65534
# The same environment on both sides: what the default profile gives the
# command (PATH, HOME=/tmp, LANG), so that a difference is the sandbox's.
ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
}
# The whole run's wall-clock budget inside (the profile's 900 s is ample;
# said explicitly so the run cannot outlive ctest's own timeout).
TIMEOUT_SECONDS = "1200"


def drop_to(uid):
    """A preexec_fn that makes the child uid/gid `uid`, no groups."""
    def switch():
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    return switch


def suite_command(junit, modules, ignore_file, match_file=None):
    # -j2: one worker per CPU; each module runs in a fresh interpreter.
    # --timeout: a hung case fails alone instead of ending the run.
    cmd = [PYTHON, "-X", "faulthandler", SUITE, "-j2", "--timeout", "300",
           "--junit-xml", junit, "--ignorefile", ignore_file]
    if match_file:
        cmd += ["--matchfile", match_file]
    return cmd + modules


def run_side(inside, stockade, mode, work, modules, tag, match_file=None):
    """Runs the suite bare or inside; returns (junit path, seconds)."""
    side = "inside" if inside else "bare"
    if not inside:
        mode = "any"
    out_dir = os.path.join(work, "%s-%s-%s" % (mode, side, tag))
    os.makedirs(out_dir)
    # Bare: always 65534 (see above). Inside: stockade as root or as 65534.
    uid = 0 if (inside and mode == "root") else NOBODY
    os.chown(out_dir, uid, uid)
    home = os.path.join(out_dir, "home")
    os.makedirs(home)
    os.chown(home, uid, uid)
    ignore = os.path.join(out_dir, "ignore.txt")
    with open(ignore, "w") as f:
        f.write("\n".join(IGNORED) + "\n")
    os.chmod(ignore, 0o644)
    log = os.path.join(work, "%s-%s-%s.log" % (mode, side, tag))
    if inside:
        # The record goes where the sandbox cannot write, and the rootless
        # stockade can: a directory of its own beside the worktree.
        records = os.path.join(work, "%s-records-%s" % (mode, tag))
        os.makedirs(records)
        os.chown(records, uid, uid)
        junit_inside = "/repo/junit.xml"
        mf = None
        if match_file:
            shutil.copy(match_file, os.path.join(out_dir, "match.txt"))
            os.chown(os.path.join(out_dir, "match.txt"), uid, uid)
            mf = "/repo/match.txt"
        cmd = [stockade, "run", "--worktree", out_dir, "--workdir", "/tmp",
               "--timeout", TIMEOUT_SECONDS, "--result", os.path.join(records, "result.json"),
               "--"] + suite_command(junit_inside, modules, "/repo/ignore.txt", mf)
        env = dict(ENV)
        env["HOME"] = home
    else:
        cmd = suite_command(os.path.join(out_dir, "junit.xml"), modules, ignore, match_file)
        env = dict(ENV)
        env["HOME"] = home
        env["TMPDIR"] = home  # a private /tmp of its own, as the sandbox has
    started = time.monotonic()
    with open(log, "wb") as out:
        subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                       cwd=home if not inside else "/",
                       preexec_fn=drop_to(uid) if uid else None, check=False)
    elapsed = time.monotonic() - started
    return os.path.join(out_dir, "junit.xml"), elapsed, log


def read_junit(path):
    """case id -> 'pass' | 'fail' | 'skip' (an unreadable file: empty)."""
    cases = {}
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return cases
    for case in root.iter("testcase"):
        name = "%s.%s" % (case.get("classname", ""), case.get("name", ""))
        # regrtest names a case "test.test_os.FileTests.test_access" in
        # `name` already in some versions; keep the longest form only once.
        cid = case.get("name", "") if case.get("name", "").startswith("test.") else name
        if case.find("failure") is not None or case.find("error") is not None:
            state = "fail"
        elif case.find("skipped") is not None:
            state = "skip"
        else:
            state = "pass"
        cases[cid] = state
    return cases


def read_known(path):
    """(mode, case id) -> reason. Each line: MODE CASE_ID REASON..."""
    known = {}
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 2)
            if len(parts) < 3 or parts[0] not in ("root", "rootless", "both"):
                sys.exit("%s:%d: expected 'root|rootless|both CASE_ID REASON', got: %s"
                         % (path, n, line))
            modes = ("root", "rootless") if parts[0] == "both" else (parts[0],)
            for m in modes:
                known[(m, parts[1])] = parts[2]
    return known


def differences(bare, inside):
    """Cases that passed bare and did not pass inside: failed, missing, or
    skipped (a sandbox that hid a device or a file would make cases skip, so a
    skip inside is a difference too, unless the file of known ones lists it)."""
    worse = []
    for cid, state in sorted(bare.items()):
        if state != "pass":
            continue
        there = inside.get(cid)
        if there != "pass":
            worse.append((cid, there or "missing"))
    return worse


def match_pattern(cid):
    # --matchfile patterns are matched against the whole test id or one of
    # its dotted parts: the whole id selects exactly this case.
    return cid


def module_of(cid):
    """test.test_os.FileTests.test_access -> test_os; a package's module
    keeps its package: test.test_asyncio.test_events.X.test_y ->
    test_asyncio.test_events (the name regrtest was given)."""
    parts = cid.split(".")
    if len(parts) < 2 or parts[0] != "test" or not parts[1].startswith("test_"):
        return None
    names = [parts[1]]
    for p in parts[2:-1]:
        if not p.startswith("test_"):
            break
        names.append(p)
    return ".".join(names)


def check_mode(stockade, mode, modules, work, known, bare_run):
    bare_junit, bare_s, bare_log = bare_run
    in_junit, in_s, in_log = run_side(True, stockade, mode, work, modules, "first")
    bare, inside = read_junit(bare_junit), read_junit(in_junit)
    print("%s: bare %d cases in %.0f s, inside %d cases in %.0f s"
          % (mode, len(bare), bare_s, len(inside), in_s))
    if not bare or not inside:
        print("  no JUnit record from the %s run: see %s"
              % ("bare" if not bare else "inside", bare_log if not bare else in_log))
        return False
    worse = differences(bare, inside)
    explained = [(c, s) for c, s in worse if (mode, c) in known]
    unexplained = [(c, s) for c, s in worse if (mode, c) not in known]
    for cid, state in explained:
        print("  known: %s (%s inside): %s" % (cid, state, known[(mode, cid)]))
    stale = [c for (m, c) in known if m == mode and c in inside and inside[c] == "pass"]
    for cid in stale:
        print("  note: listed as a known difference but passes inside now: %s" % cid)

    if unexplained:
        # Each once more, on both sides: a difference must reproduce.
        match = os.path.join(work, "%s-match.txt" % mode)
        with open(match, "w") as f:
            for cid, _ in unexplained:
                f.write(match_pattern(cid) + "\n")
        os.chmod(match, 0o644)
        mods = sorted({module_of(c) for c, _ in unexplained if module_of(c)})
        rb, _, _ = run_side(False, stockade, mode, work, mods, "again-" + mode, match)
        ri, _, rlog = run_side(True, stockade, mode, work, mods, "again", match)
        again_bare, again_inside = read_junit(rb), read_junit(ri)
        confirmed = []
        for cid, state in unexplained:
            # A flake is a case that passes inside the second time; one the
            # re-run did not reach at all still counts as a difference.
            if again_inside.get(cid) == "pass":
                print("  flake (passed inside on a re-run; bare again: %s): %s"
                      % (again_bare.get(cid, "not run"), cid))
            else:
                confirmed.append((cid, state))
        unexplained = confirmed
    for cid, state in unexplained:
        print("  DIFFERENCE: %s passed bare, %s inside" % (cid, state))
    if unexplained:
        print("  logs: %s, %s" % (bare_log, in_log))
    return not unexplained


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("stockade")
    ap.add_argument("--modes", default="root,rootless")
    ap.add_argument("--modules", default=",".join(MODULES))
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--known", default=KNOWN,
                    help="the file of known differences (another one shows that the check fails)")
    args = ap.parse_args()
    if not os.path.exists(SUITE) or not os.path.exists("/usr/lib/python3.11/test/test_pty.py"):
        print("SKIP: CPython's test suite is not installed (libpython3.11-testsuite; "
              "scripts/install-deps.sh)")
        return 1 if os.environ.get("CI") == "true" else 77
    if os.geteuid() != 0:
        print("SKIP: runs as root, to drive both modes")
        return 1 if os.environ.get("CI") == "true" else 77
    known = read_known(args.known)
    modules = [m for m in args.modules.split(",") if m]
    # Beside the build, not in /tmp: the rootless side must traverse it.
    work = tempfile.mkdtemp(prefix="cpython-compat-", dir=os.environ.get("STOCKADE_COMPAT_DIR", "/var/tmp"))
    os.chmod(work, 0o755)
    started = time.monotonic()
    ok = True
    try:
        stockade = os.path.abspath(args.stockade)
        bare_run = run_side(False, stockade, "any", work, modules, "first")
        for mode in [m for m in args.modes.split(",") if m]:
            ok = check_mode(stockade, mode, modules, work, known, bare_run) and ok
    finally:
        print("total: %.0f s" % (time.monotonic() - started))
        if args.keep or not ok:
            print("work directory kept: %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
