#!/usr/bin/python3
"""stockade oracle end to end, as root and as uid 65534, with real test runners
(node --test with its JUnit and TAP reporters, pytest --junitxml, GoogleTest
--gtest_output=xml, Catch2 -r junit): honest and
adversarial held tests, each checked for its exit code and verdict."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import jsonschema

STOCKADE = sys.argv[1]
SCHEMA_DIR = sys.argv[2]
verdict_schema = jsonschema.Draft202012Validator(
    json.load(open(os.path.join(SCHEMA_DIR, "verdict.schema.json"))))
result_schema = jsonschema.Draft202012Validator(
    json.load(open(os.path.join(SCHEMA_DIR, "result.schema.json"))))
ADD_JS = "exports.add = (a, b) => a + b;\n"
NODE_TEST = """const test = require('node:test'); const assert = require('node:assert');
const { add } = require('/repo/add.js');
test('adds', () => assert.strictEqual(add(2, 3), 5));
test('adds negatives', () => assert.strictEqual(add(-1, 1), 0));
"""
NODE_FAILING = NODE_TEST + "test('is wrong', () => assert.strictEqual(add(1, 1), 3));\n"
PYTEST = """import sys
sys.path.insert(0, '/repo')
from calc import add
def test_add(): assert add(2, 3) == 5
def test_neg(): assert add(-1, 1) == 0
"""
GTEST = """#include <gtest/gtest.h>
extern "C" int add(int, int);
TEST(Add, Small) { EXPECT_EQ(add(2, 3), 5); }
TEST(Add, Negatives) { EXPECT_EQ(add(-1, 1), 0); }
"""
CATCH2 = """#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
extern "C" int add(int, int);
TEST_CASE("adds") { CHECK(add(2, 3) == 5); }
TEST_CASE("adds negatives") { CHECK(add(-1, 1) == 0); }
"""
GTEST_RUN = ("cc -c -o /tmp/add.o /repo/add.c && g++ -o /tmp/t /held/t.cpp /tmp/add.o -lgtest "
             "-lgtest_main -pthread && /tmp/t --gtest_output=xml:$STOCKADE_REPORT_DIR/report.xml")
CATCH2_RUN = ("cc -c -o /tmp/add.o /repo/add.c && g++ -O0 -o /tmp/t /held/t.cpp /tmp/add.o && "
              "/tmp/t -r junit -o $STOCKADE_REPORT_DIR/report.xml")
JUNIT = "node --test --test-reporter=junit --test-reporter-destination=$STOCKADE_REPORT_DIR/report.xml /held/"
TAP = "node --test --test-reporter=tap /held/ > $STOCKADE_REPORT_DIR/report.tap"
FORGED = ('<testsuites tests="2" failures="0"><testsuite name="s" tests="2" failures="0">'
          '<testcase name="adds"/><testcase name="adds negatives"/></testsuite></testsuites>')

# Names of the sandbox's choosing: bytes that are not UTF-8, and a file name
# that would repaint the oracle's last stderr line as a green pass.
REPAINT_ASCII = "$STOCKADE_REPORT_DIR/$(printf 'x\\r\\033[2K\\033[1Astockade oracle: pass.xml')"
REPAINT = "$STOCKADE_REPORT_DIR/$(printf 'x\\r\\033[2K\\033[1Astockade oracle: pass\\377.xml')"
BAD_NAMES = ('<testsuites tests="2" failures="1"><testsuite name="s" tests="2" failures="1">'
             '<testcase name="ok"/><testcase name="\\377\\376\\033[2K bad">'
             '<failure message="\\033]0;t\\007 m\\300\\200">x</failure></testcase>'
             '</testsuite></testsuites>')
BAD_SUITE = ('<testsuites tests="3" failures="0"><testsuite name="\\033[1A\\rs\\377" tests="3" '
             'failures="0"><testcase name="a"/><testcase name="b"/></testsuite></testsuites>')
BAD_TAP = "TAP version 13\\n1..2\\nok 1 - \\377\\033[2K\\rok\\n"

ENV_CANARY = "canary-%d-%s" % (os.getpid(), os.urandom(6).hex())
NODE_READS_ENV = NODE_TEST + """const fs = require('node:fs');
test('reads the candidate env', () => {
  for (const f of ['/repo/.env', '/repo/pkg/.env.local']) console.log(f, JSON.stringify(fs.readFileSync(f, 'utf8')));
  assert.strictEqual(fs.readFileSync('/repo/.env', 'utf8'), '');
});
"""

# name, held test file, command, extra args, expected exit, expected verdict, extra check
# (a check starting with "!" must appear nowhere: not in the verdict, not on stdout or stderr)
CASES = [
    ("node junit, all pass", NODE_TEST, JUNIT, [], 0, "pass", None),
    ("node junit, one fails", NODE_FAILING, JUNIT, [], 1, "fail", None),
    ("node tap, all pass", NODE_TEST, TAP, ["--report", "tap"], 0, "pass", None),
    ("pytest junit, all pass", None, "cd /held && python3 -m pytest -q -p no:cacheprovider "
     "--junitxml=$STOCKADE_REPORT_DIR/report.xml", [], 0, "pass", None),
    ("googletest xml, all pass", ("t.cpp", GTEST), GTEST_RUN, [], 0, "pass", "googletest"),
    ("catch2 junit, all pass", ("t.cpp", CATCH2), CATCH2_RUN, [], 0, "pass", "catch2"),
    ("runner crashes", NODE_TEST, "kill -SEGV $$", [], 2, "error", None),
    ("runner hangs", NODE_TEST, "sleep 60", ["--timeout", "2"], 124, "timeout", None),
    ("zero tests", "", JUNIT, [], 2, "error", "no executed test"),
    ("forged green report, nonzero exit", NODE_FAILING,
     "echo '%s' > $STOCKADE_REPORT_DIR/report.xml; exit 1" % FORGED, [], 2, "error",
     "all-green report"),
    ("report is a symlink to a host file", NODE_TEST,
     "ln -s /etc/passwd $STOCKADE_REPORT_DIR/report.xml", [], 2, "error", "report"),
    ("report is a FIFO", NODE_TEST, "mkfifo $STOCKADE_REPORT_DIR/report.xml", [], 2, "error",
     "report"),
    ("report of 300 MiB", NODE_TEST,
     "head -c 314572800 /dev/zero > $STOCKADE_REPORT_DIR/report.xml", [], 2, "error", "report"),
    ("expected test missing", NODE_TEST, JUNIT, ["--expect", "EXPECT"], 2, "error",
     "expected test missing"),
    ("held files and HEAD attacked", NODE_TEST,
     "echo x > /held/add.test.js; echo 0000 > /repo/.git/HEAD; rm -rf /repo/.git/refs; " + JUNIT,
     [], 0, "pass", "integrity"),
    ("worktree changed by the run", NODE_TEST, "echo new > /repo/created.txt; " + JUNIT, [], 0,
     "pass", "created.txt"),
    ("candidate creates a file name that is not UTF-8", NODE_TEST,
     "touch \"/repo/$(printf '\\377\\376-x')\"; " + JUNIT, [], 0, "pass",
     "\\ufffd\\ufffd-x"),
    ("unparsable report named to repaint the terminal", NODE_TEST,
     "echo garbage > \"%s\"" % REPAINT_ASCII, [], 2, "error", "does not parse"),
    ("failing JUnit test named with stray bytes and escapes", NODE_TEST,
     "printf '%s' > \"%s\"; exit 1" % (BAD_NAMES, REPAINT), [], 1, "fail",
     "\\ufffd\\ufffd\\u001b[2K bad"),
    ("JUnit suite named with escapes, counts disagree", NODE_TEST,
     "printf '%s' > $STOCKADE_REPORT_DIR/r.xml" % BAD_SUITE, [], 2, "error", "declares 3"),
    ("TAP test named with stray bytes, plan disagrees", NODE_TEST,
     "printf '%s' > $STOCKADE_REPORT_DIR/r.tap" % BAD_TAP, ["--report", "tap"], 2, "error",
     "\\ufffd"),
    ("the oracle fails inside after the run", NODE_TEST, JUNIT, [], 2, "error", "injected fault"),
    # The candidate brings its own .env (issue 21): the held test reads and
    # prints it, and its canary is in neither the verdict nor the output.
    ("candidate brings its own .env", NODE_READS_ENV, JUNIT, [], 0, "pass", "!" + ENV_CANARY),
]
# Files a case's candidate adds to its worktree.
CASE_FILES = {"candidate brings its own .env": {".env": "API_KEY=" + ENV_CANARY + "\n",
                                                "pkg/.env.local": ENV_CANARY + "\n"}}
# Cases run with more in the oracle's environment.
CASE_ENV = {"the oracle fails inside after the run": {"STOCKADE_TEST_ORACLE_FAULT": "after-run"}}
# STOCKADE_ORACLE_CASES=WORD runs only the cases whose name holds WORD.
ONLY = os.environ.get("STOCKADE_ORACLE_CASES")


def demote():
    os.setgroups([])
    os.setresgid(65534, 65534, 65534)
    os.setresuid(65534, 65534, 65534)


def make_worktree(root, owner):
    wt = os.path.join(root, "wt")
    os.makedirs(wt)
    open(os.path.join(wt, "add.js"), "w").write(ADD_JS)
    open(os.path.join(wt, "calc.py"), "w").write("def add(a, b):\n    return a + b\n")
    open(os.path.join(wt, "add.c"), "w").write("int add(int a, int b) { return a + b; }\n")
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t")
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "init"]):
        subprocess.run(cmd, cwd=wt, env=env, check=True, stdout=subprocess.DEVNULL)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            os.lchown(os.path.join(dirpath, name), owner, owner)
    os.chown(root, owner, owner)
    return wt


def make_held(root, owner, test):
    """A held directory with one node test file, owned by `owner`."""
    held = os.path.join(root, "held")
    os.makedirs(held)
    open(os.path.join(held, "add.test.js"), "w").write(test)
    os.chown(held, owner, owner)
    os.chown(os.path.join(held, "add.test.js"), owner, owner)
    return held


failures = 0
for mode in ("root", "rootless"):
    owner = 0 if mode == "root" else 65534
    for name, held_test, command, extra, code, verdict, check in CASES:
        if ONLY and ONLY not in name:
            continue
        root = tempfile.mkdtemp(dir="/var/tmp")
        try:
            wt = make_worktree(root, owner)
            held = os.path.join(root, "held")
            os.makedirs(held)
            if held_test is None:
                open(os.path.join(held, "test_calc.py"), "w").write(PYTEST)
            elif isinstance(held_test, tuple):
                open(os.path.join(held, held_test[0]), "w").write(held_test[1])
            elif held_test:
                open(os.path.join(held, "add.test.js"), "w").write(held_test)
            for rel, content in CASE_FILES.get(name, {}).items():
                os.makedirs(os.path.dirname(os.path.join(wt, rel)), exist_ok=True)
                open(os.path.join(wt, rel), "w").write(content)
            expect = os.path.join(root, "expect.txt")
            open(expect, "w").write("adds\nadds negatives\nmultiplies\n")
            for dirpath, dirnames, filenames in os.walk(root):
                for n in dirnames + filenames:
                    os.lchown(os.path.join(dirpath, n), owner, owner)
            args = [a if a != "EXPECT" else expect for a in extra]
            verdict_path = os.path.join(root, "verdict.json")
            proc = subprocess.run([STOCKADE, "oracle", "--worktree", wt, "--held", held,
                                   "--verdict", verdict_path, *args, "--", "sh", "-c", command],
                                  preexec_fn=demote if mode == "rootless" else None,
                                  env=dict(os.environ, **CASE_ENV.get(name, {})),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
            problems = []
            try:
                raw = open(verdict_path, "rb").read()
                # Strict: every string in it valid UTF-8, and nothing in it
                # that would drive a terminal the file is printed on.
                v = json.loads(raw.decode("utf-8"))
                if b"\x1b" in raw or b"\r" in raw:
                    problems.append("a raw ESC or CR in the verdict file")
            except (OSError, ValueError) as e:
                v = {}
                problems.append("no verdict (%s): %r" % (e, proc.stderr[-300:]))
            # The oracle's messages show what the sandbox named, never send it.
            if b"\x1b" in proc.stderr or b"\r" in proc.stderr:
                problems.append("a raw ESC or CR on stderr: %r" % proc.stderr[-300:])
            if proc.returncode != code:
                problems.append("exit %d, expected %d" % (proc.returncode, code))
            if v and v.get("verdict") != verdict:
                problems.append("verdict %r, expected %r (%s)" % (v.get("verdict"), verdict,
                                                                 v.get("contradictions")))
            if v:
                for err in verdict_schema.iter_errors(v):
                    problems.append("verdict schema: %s: %s" % ("/".join(map(str, err.path)), err.message))
                if v.get("result"):
                    for err in result_schema.iter_errors(v["result"]):
                        problems.append("result schema: %s: %s" % ("/".join(map(str, err.path)), err.message))
            text = json.dumps(v)
            if check == "integrity":
                if not (v["integrity"]["held_unchanged"] and v["integrity"]["head_unchanged"]
                        and v["integrity"]["git_unchanged"]):
                    problems.append("integrity: %s" % v["integrity"])
            elif check and check.startswith("!"):
                absent = check[1:]
                for where, blob in (("verdict", text), ("stdout", proc.stdout.decode("utf-8", "replace")),
                                    ("stderr", proc.stderr.decode("utf-8", "replace"))):
                    if absent in blob:
                        problems.append("the canary is in the %s" % where)
                hidden = (v.get("result") or {}).get("worktree_masks", {}).get("hidden", {})
                if sorted(hidden.get("first", [])) != ["/repo/.env", "/repo/pkg/.env.local"]:
                    problems.append("worktree_masks.hidden %r" % hidden)
            elif check and check not in text:
                problems.append("%r not in the verdict" % check)
            label = "%s/%s" % (mode, name)
            if problems:
                failures += 1
                print("FAIL %s: %s" % (label, "; ".join(problems)))
            else:
                print("ok   %s" % label)
        finally:
            shutil.rmtree(root, ignore_errors=True)

# Without --verdict the verdict is stdout's: an internal failure still puts
# an `error` verdict there, whole and valid.
fault_checks = 0
for mode in ("root", "rootless") if not ONLY or ONLY in "fault on stdout" else ():
    owner = 0 if mode == "root" else 65534
    root = tempfile.mkdtemp(dir="/var/tmp")
    try:
        wt = make_worktree(root, owner)
        held = make_held(root, owner, NODE_TEST)
        proc = subprocess.run([STOCKADE, "oracle", "--worktree", wt, "--held", held, "--", "sh",
                               "-c", JUNIT], preexec_fn=demote if mode == "rootless" else None,
                              env=dict(os.environ, STOCKADE_TEST_ORACLE_FAULT="after-run"),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        problems = []
        try:
            v = json.loads(proc.stdout.decode("utf-8"))
            for err in verdict_schema.iter_errors(v):
                problems.append("verdict schema: %s" % err.message)
            if v.get("verdict") != "error" or "injected fault" not in json.dumps(v):
                problems.append("verdict %r: %s" % (v.get("verdict"), v.get("contradictions")))
        except ValueError as e:
            problems.append("stdout is not one verdict (%s): %r" % (e, proc.stdout[-300:]))
        if proc.returncode != 2:
            problems.append("exit %d, expected 2" % proc.returncode)
        if b"injected fault" not in proc.stderr:
            problems.append("the cause is not on stderr: %r" % proc.stderr[-300:])
        fault_checks += 1
        if problems:
            failures += 1
            print("FAIL %s/fault on stdout: %s" % (mode, "; ".join(problems)))
        else:
            print("ok   %s/fault on stdout gives an error verdict" % mode)
    finally:
        shutil.rmtree(root, ignore_errors=True)

# An oracle killed with SIGKILL mid-run leaves its report directory behind;
# the next oracle of the same user removes it.
import glob
import signal
import time
stale_checks = 0
for mode in ("root", "rootless") if not ONLY else ():
    owner = 0 if mode == "root" else 65534
    root = tempfile.mkdtemp(dir="/var/tmp")
    try:
        wt = make_worktree(root, owner)
        held = make_held(root, owner, NODE_TEST)
        base = [STOCKADE, "oracle", "--worktree", wt, "--held", held,
                "--verdict", os.path.join(root, "v.json")]
        killed = subprocess.Popen(base + ["--", "sleep", "60"],
                                  preexec_fn=demote if mode == "rootless" else None,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        state = "/run/stockade" if mode == "root" else "/tmp/stockade-65534"
        pattern = "%s/report.%d.*" % (state, killed.pid)
        for _ in range(200):
            if glob.glob(pattern):
                break
            time.sleep(0.05)
        left = glob.glob(pattern)
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        problems = []
        if not left:
            problems.append("the killed oracle never made %s" % pattern)
        subprocess.run(base + ["--", "sh", "-c", JUNIT],
                       preexec_fn=demote if mode == "rootless" else None,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        if glob.glob(pattern):
            problems.append("the next oracle left %s" % glob.glob(pattern))
        stale_checks += 1
        if problems:
            failures += 1
            print("FAIL %s/stale report directory removed: %s" % (mode, "; ".join(problems)))
        else:
            print("ok   %s/stale report directory removed" % mode)
    finally:
        shutil.rmtree(root, ignore_errors=True)

def refused_before_running(mode, what, args, said, absent):
    """`stockade oracle ARGS -- touch /repo/ran; ...` as `mode`: exit 125,
    stderr saying `said`, none of `absent` made (the marker among them).
    Prints the check; returns whether it failed."""
    proc = subprocess.run([STOCKADE, "oracle", *args, "--", "sh", "-c",
                           "touch /repo/ran; cat /repo/held/* 2>/dev/null; " + JUNIT],
                          preexec_fn=demote if mode == "rootless" else None,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    problems = []
    if proc.returncode != 125:
        problems.append("exit %d, expected 125" % proc.returncode)
    if said.encode() not in proc.stderr:
        problems.append("the refusal does not say %r: %r" % (said, proc.stderr[-300:]))
    problems += ["%s exists" % path for path in absent if os.path.lexists(path)]
    if problems:
        print("FAIL %s/%s: %s" % (mode, what, "; ".join(problems)))
    else:
        print("ok   %s/%s refused" % (mode, what))
    return bool(problems)


# A --verdict where the code under test could write (the worktree, a
# writable --mount, or a path into either through a symlink) is refused
# before anything runs: there it could plant a pass of its own, or swap the
# directory for a symlink elsewhere on the host.
place_checks = 0
for mode in ("root", "rootless") if not ONLY else ():
    owner = 0 if mode == "root" else 65534
    root = tempfile.mkdtemp(dir="/var/tmp")
    try:
        wt = make_worktree(root, owner)
        held = make_held(root, owner, NODE_FAILING)
        data = os.path.join(root, "data")
        for d in (data, os.path.join(wt, "out")):
            os.makedirs(d)
            os.chown(d, owner, owner)
        os.symlink(os.path.join(wt, "out"), os.path.join(root, "link"))
        for label, verdict_path, extra in (
                ("in the worktree", os.path.join(wt, "out", "verdict.json"), []),
                ("through a symlink into it", os.path.join(root, "link", "verdict.json"), []),
                ("in a writable --mount", os.path.join(data, "verdict.json"),
                 ["--mount", data + ":/data:rw"])):
            place_checks += 1
            failures += refused_before_running(
                mode, "--verdict " + label,
                ["--worktree", wt, "--held", held, "--verdict", verdict_path, *extra], "--verdict",
                [verdict_path, os.path.join(wt, "out", "verdict.json"), os.path.join(wt, "ran")])
    finally:
        shutil.rmtree(root, ignore_errors=True)

# A held test the code under test could change while the runner read it
# (and put back before the snapshot after) is refused before anything runs:
# inside the worktree (where it also read it at /repo) or a writable
# --mount, holding one, or with a file that has another name. Until
# 2026-12-07 each ran, and a candidate printed the held test from /repo.
held_place_checks = 0
for mode in ("root", "rootless") if not ONLY else ():
    owner = 0 if mode == "root" else 65534
    root = tempfile.mkdtemp(dir="/var/tmp")
    try:
        wt = make_worktree(root, owner)
        inside = make_held(wt, owner, NODE_FAILING)
        data = os.path.join(root, "data")
        os.makedirs(os.path.join(data, "tests"))
        for d in (data, os.path.join(data, "tests")):
            os.chown(d, owner, owner)
        in_mount = make_held(os.path.join(data, "tests"), owner, NODE_FAILING)
        # A held file that is also a name in the worktree (ln, cp -al).
        linked = os.path.join(root, "linked")
        os.makedirs(linked)
        os.chown(linked, owner, owner)
        os.link(os.path.join(wt, "add.js"), os.path.join(linked, "add.test.js"))
        for label, held, extra, said in (
                ("inside the worktree", inside, [],
                 "--held %s lies inside --worktree %s" % (inside, wt)),
                ("holding the worktree", root, [],
                 "--worktree %s lies inside --held %s" % (wt, root)),
                ("inside a writable --mount", in_mount, ["--mount", data + ":/data:rw"],
                 "--held %s lies inside --mount %s" % (in_mount, data)),
                ("with a file hard-linked from the worktree", linked, [],
                 '"add.test.js" in the held directory has 2 names')):
            held_place_checks += 1
            failures += refused_before_running(mode, "--held " + label,
                                               ["--worktree", wt, "--held", held, *extra], said,
                                               [os.path.join(wt, "ran")])
    finally:
        shutil.rmtree(root, ignore_errors=True)

case_checks = 2 * sum(1 for c in CASES if not ONLY or ONLY in c[0])
print("%d passed, %d failed" % (case_checks + fault_checks + stale_checks + place_checks +
                                held_place_checks - failures, failures))
sys.exit(1 if failures else 0)
