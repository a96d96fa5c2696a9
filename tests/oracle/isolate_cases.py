#!/usr/bin/python3
"""The oracle's runner against the candidate it starts (issue 25), as root and
as uid 65534. A held runner.py runs the candidate as a child, keeps its own
verdict in memory and writes the JUnit report itself. The candidate prints the
wrong answer and then attacks the runner: rewrites its memory through
/proc/PPID/mem, kills it, writes into the report directory, uses the runner's
open files, from itself or from a grandchild. A runner that makes itself
dumpable again (undoing the oracle's preload) lets the memory forgery work,
so the test is real; a plain runner is non-dumpable through the oracle's
preload (oracle/nodump_preload.c), as one that calls prctl itself is, which
keeps its memory and fds out of the candidate's reach, and nothing more;
through STOCKADE_ISOLATE every attack must fail and the verdict must be
`fail`."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

STOCKADE = os.path.abspath(sys.argv[1])

RUNNER = r'''
import os, subprocess, sys
attack, isolate = sys.argv[1], sys.argv[2] == "isolate"
if sys.argv[2] in ("nondumpable", "dumpable"):
    import ctypes
    # PR_SET_DUMPABLE = 4. Before anything is started: a child forked before
    # it would keep a dumpable copy of the runner's memory. "dumpable" undoes
    # the oracle's preload, to show the forgery is real where nothing stops it.
    if ctypes.CDLL(None, use_errno=True).prctl(4, 1 if sys.argv[2] == "dumpable" else 0,
                                               0, 0, 0) != 0:
        sys.exit("prctl(PR_SET_DUMPABLE) failed")
state = bytearray(b"VERDICT=" + b"FAIL" + b":runner-state")
report = open("/report/report.xml", "w")
os.set_inheritable(report.fileno(), True)
cmd = ["python3", "/repo/candidate.py", attack, str(report.fileno())]
if attack == "sigpipe":
    # Not Python, which ignores SIGPIPE itself: the signals a plain program
    # starts with, as isolate passes them on.
    # Only SIGPIPE's bit (13): the caller's environment may ignore others.
    cmd = ["sh", "-c", "m=$(sed -n 's/^SigIgn:\t//p' /proc/self/status); "
           "if [ $(( 0x$m & 0x1000 )) -eq 0 ]; then echo attack.sigpipe=default >&2; "
           "else echo attack.sigpipe=ignored >&2; fi"]
if isolate:
    cmd = [os.environ["STOCKADE_ISOLATE"], "--"] + cmd
# A runner may give its candidate a clean environment: /report must stay
# hidden without STOCKADE_REPORT_DIR.
env = {"PATH": os.environ["PATH"]} if attack == "report-scrubbed" else None
r = subprocess.run(cmd, stdout=subprocess.PIPE, pass_fds=[report.fileno()], env=env)
sys.stderr.write("candidate-exit=%d\n" % r.returncode)
ok = r.stdout.strip() == b"5" or bytes(state).startswith(b"VERDICT=PASS")
report.seek(0)
report.truncate()
failure = "" if ok else '<failure message="add(2, 3) is not 5"/>'
report.write('<testsuites tests="1" failures="%d"><testsuite name="s" tests="1" failures="%d">'
             '<testcase name="adds">%s</testcase></testsuite></testsuites>'
             % (0 if ok else 1, 0 if ok else 1, failure))
report.close()
sys.exit(0 if ok else 1)
'''

CANDIDATE = r'''
import os, signal, sys
attack, runner_fd = sys.argv[1], int(sys.argv[2])
print(4, flush=True)  # add(2, 3), wrongly

def say(what, value):
    sys.stderr.write("attack.%s=%s\n" % (what, value))
    sys.stderr.flush()

def forge(pid):
    # Every writable mapping of the runner, searched for its verdict.
    try:
        maps = open("/proc/%d/maps" % pid).read().splitlines()
        mem = open("/proc/%d/mem" % pid, "r+b", buffering=0)
    except OSError as e:
        return "open:" + (os.strerror(e.errno) if e.errno else str(e))
    needle = b"VERDICT=" + b"FAIL"
    hits = 0
    for line in maps:
        fields = line.split()
        if len(fields) < 2 or not fields[1].startswith("rw"):
            continue
        start, end = (int(x, 16) for x in fields[0].split("-"))
        if end - start > 256 << 20:
            continue
        try:
            mem.seek(start)
            data = mem.read(end - start)
        except OSError:
            continue
        at = data.find(needle)
        while at >= 0:
            mem.seek(start + at)
            mem.write(b"VERDICT=PASS")
            hits += 1
            at = data.find(needle, at + 1)
    return "forged:%d" % hits if hits else "not-found"

def attempt(fn):
    try:
        return fn()
    except OSError as e:
        return "errno:%d" % e.errno

ppid = os.getppid()
# Through the helper the parent is stockade isolate's exec, i.e. the runner.
if attack == "memory":
    say("memory", forge(ppid))
elif attack == "grandchild":
    pid = os.fork()
    if pid == 0:
        say("grandchild", forge(ppid))
        os._exit(0)
    os.waitpid(pid, 0)
elif attack == "signal":
    say("signal", attempt(lambda: os.kill(ppid, signal.SIGKILL) or "sent"))
elif attack == "report":
    def write_report():
        open("/report/forged.xml", "w").write("<testsuites/>")
        return "written"
    say("report", attempt(write_report))
elif attack == "prlimit":
    import resource
    say("prlimit", attempt(lambda: resource.prlimit(ppid, resource.RLIMIT_NOFILE, (3, 3))
                           and "lowered"))
    say("setpriority", attempt(lambda: os.setpriority(os.PRIO_PROCESS, ppid, 19) or "reniced"))
    say("affinity", attempt(lambda: os.sched_setaffinity(ppid, {0}) or "pinned"))
    # One step nicer than it runs (a suite started under `nice` may already
    # be past 1, and lowering it would need CAP_SYS_NICE).
    nicer = min(19, os.getpriority(os.PRIO_PROCESS, 0) + 1)
    say("own-priority", attempt(lambda: os.setpriority(os.PRIO_PROCESS, 0, nicer) or "ok"))
elif attack == "report-scrubbed":
    def write_report():
        open("/report/forged.xml", "w").write("<testsuites/>")
        return "written"
    say("report-scrubbed", attempt(write_report))
elif attack == "fds":
    say("fd", attempt(lambda: os.write(runner_fd, b"<testsuites/>") and "written"))
    def through_proc():
        open("/proc/%d/fd/%d" % (ppid, runner_fd), "w").write("x")
        return "written"
    say("proc-fd", attempt(through_proc))
'''

def demote():
    os.setgroups([])
    os.setresgid(65534, 65534, 65534)
    os.setresuid(65534, 65534, 65534)

# attack, through the helper?, expected verdict, a line stockade's stderr must hold
CASES = [
    # A runner that makes itself dumpable again: the forgery works, so the
    # attack is real.
    ("memory", "dumpable", "pass", "attack.memory=forged:"),
    # A plain runner: the oracle preloads an object that makes the held
    # command non-dumpable before its own code runs (oracle/nodump_preload.c),
    # so its memory, maps and fds are out of the candidate's reach, without
    # the runner doing anything; not its life (kill it: error).
    ("memory", False, "fail", "attack.memory=open:Permission denied"),
    ("grandchild", False, "fail", "attack.grandchild=open:Permission denied"),
    ("fds", False, "fail", "attack.proc-fd=errno:13"),
    ("memory", True, "fail", "attack.memory=open:"),
    ("grandchild", True, "fail", "attack.grandchild=open:"),
    # The runner's own prctl: its memory, maps and fds are out of reach (the
    # kernel's ptrace check fails on a non-dumpable target), but not its life.
    ("memory", "nondumpable", "fail", "attack.memory=open:Permission denied"),
    ("grandchild", "nondumpable", "fail", "attack.grandchild=open:Permission denied"),
    ("fds", "nondumpable", "fail", "attack.proc-fd=errno:13"),
    ("signal", "nondumpable", "error", None),
    ("signal", False, "error", None),
    ("signal", True, "fail", "attack.signal=errno:1"),
    ("report", True, "fail", "attack.report=errno:13"),
    ("fds", True, "fail", "attack.fd=errno:9"),
    ("prlimit", True, "fail", "attack.prlimit=errno:1"),
    ("prlimit", True, "fail", "attack.setpriority=errno:1"),
    ("prlimit", True, "fail", "attack.affinity=errno:1"),
    ("prlimit", True, "fail", "attack.own-priority=ok"),
    ("report-scrubbed", True, "fail", "attack.report-scrubbed=errno:13"),
    # The command under isolate starts with SIGPIPE at its default: the
    # disposition stockade's supervising commands set never reaches it.
    ("sigpipe", True, "fail", "attack.sigpipe=default"),
]

failures = 0
passed = 0
for mode in ("root", "rootless"):
    owner = 0 if mode == "root" else 65534
    for attack, isolate, want, line in CASES:
        root = tempfile.mkdtemp(dir="/var/tmp")
        try:
            wt = os.path.join(root, "wt")
            held = os.path.join(root, "held")
            os.makedirs(wt)
            os.makedirs(held)
            open(os.path.join(wt, "candidate.py"), "w").write(CANDIDATE)
            open(os.path.join(held, "runner.py"), "w").write(RUNNER)
            for dirpath, dirnames, filenames in os.walk(root):
                for n in dirnames + filenames:
                    os.lchown(os.path.join(dirpath, n), owner, owner)
            os.chown(root, owner, owner)
            verdict_path = os.path.join(root, "verdict.json")
            proc = subprocess.run(
                [STOCKADE, "oracle", "--worktree", wt, "--held", held, "--verdict", verdict_path,
                 "--timeout", "60", "--", "python3", "/held/runner.py", attack,
                 isolate if isinstance(isolate, str) else "isolate" if isolate else "direct"],
                preexec_fn=demote if mode == "rootless" else None,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
            err = proc.stderr.decode(errors="replace")
            problems = []
            try:
                v = json.load(open(verdict_path))
            except (OSError, ValueError) as e:
                v = {}
                problems.append("no verdict (%s)" % e)
            if v and v.get("verdict") != want:
                problems.append("verdict %r, expected %r" % (v.get("verdict"), want))
            if line and line not in err:
                problems.append("%r not in stderr" % line)
            if isolate != "dumpable" and "forged:" in err:
                problems.append("a forgery went through the helper or a non-dumpable runner")
            how = ("a non-dumpable runner" if isolate == "nondumpable" else
                   "a runner dumpable again" if isolate == "dumpable" else
                   "through STOCKADE_ISOLATE" if isolate else "direct")
            label = "%s/%s %s" % (mode, attack, how)
            if problems:
                failures += 1
                print("FAIL %s: %s\n  stderr: %s" % (label, "; ".join(problems), err[-600:]))
            else:
                passed += 1
                print("ok   %s" % label)
        finally:
            shutil.rmtree(root, ignore_errors=True)

# The documented example runners (docs/examples/oracle-runners), each with an
# honest candidate (pass) and one that answers wrongly after trying to kill
# the process that started it (fail, not error: the kill is refused).
EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                        "examples", "oracle-runners")
RUNNERS = [
    ("node", "add-cli.js",
     "console.log(Number(process.argv[2]) + Number(process.argv[3]));\n",
     "try { process.kill(process.ppid, 'SIGKILL'); } catch (e) {}\nconsole.log(4);\n",
     ["--", "sh", "-c", "node --test --test-reporter=junit "
      "--test-reporter-destination=$STOCKADE_REPORT_DIR/report.xml /held/"]),
    ("pytest", "add_cli.py", "import sys\nprint(int(sys.argv[1]) + int(sys.argv[2]))\n",
     "import os, signal\ntry:\n    os.kill(os.getppid(), signal.SIGKILL)\n"
     "except OSError:\n    pass\nprint(4)\n",
     ["--", "sh", "-c", "cd /held && python3 -m pytest -q -p no:cacheprovider "
      "--junitxml=$STOCKADE_REPORT_DIR/report.xml"]),
    ("shell", "add.sh", "echo $(($1 + $2))\n", "kill -9 $PPID; echo 4\n",
     ["--report", "tap", "--", "sh", "/held/runner.sh"]),
]
for mode in ("root", "rootless"):
    owner = 0 if mode == "root" else 65534
    for runner, name, honest, hostile, command in RUNNERS:
        for label, source, want, code in (("honest", honest, "pass", 0),
                                         ("hostile", hostile, "fail", 1)):
            root = tempfile.mkdtemp(dir="/var/tmp")
            try:
                wt = os.path.join(root, "wt")
                os.makedirs(wt)
                open(os.path.join(wt, name), "w").write(source)
                held = os.path.join(root, "held")
                shutil.copytree(os.path.join(EXAMPLES, runner), held)
                for dirpath, dirnames, filenames in os.walk(root):
                    for n in dirnames + filenames:
                        os.lchown(os.path.join(dirpath, n), owner, owner)
                os.chown(root, owner, owner)
                verdict_path = os.path.join(root, "verdict.json")
                # The shell runner's cases name the host paths relative to the
                # caller's directory, which the oracle leaves before its run.
                relative = runner == "shell"
                proc = subprocess.run(
                    [STOCKADE, "oracle", "--worktree", "wt" if relative else wt,
                     "--held", "held" if relative else held, "--verdict",
                     "verdict.json" if relative else verdict_path, "--timeout", "120", *command],
                    preexec_fn=demote if mode == "rootless" else None, cwd=root,
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=200)
                problems = []
                try:
                    v = json.load(open(verdict_path))
                except (OSError, ValueError) as e:
                    v = {}
                    problems.append("no verdict (%s)" % e)
                if v and v.get("verdict") != want:
                    problems.append("verdict %r, expected %r (%s)" %
                                    (v.get("verdict"), want, v.get("contradictions")))
                if proc.returncode != code:
                    problems.append("exit %d, expected %d" % (proc.returncode, code))
                tag = "%s/example %s runner, %s candidate" % (mode, runner, label)
                if problems:
                    failures += 1
                    print("FAIL %s: %s\n  stderr: %s" % (tag, "; ".join(problems),
                                                        proc.stderr.decode(errors="replace")[-600:]))
                else:
                    passed += 1
                    print("ok   %s" % tag)
            finally:
                shutil.rmtree(root, ignore_errors=True)

print("%d passed, %d failed" % (passed, failures))
sys.exit(1 if failures else 0)
