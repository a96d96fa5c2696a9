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

# name, held test file, command, extra args, expected exit, expected verdict, extra check
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
]


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
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
            problems = []
            try:
                v = json.load(open(verdict_path))
            except (OSError, ValueError) as e:
                v = {}
                problems.append("no verdict (%s): %s" % (e, proc.stderr.decode()[-300:]))
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

# An oracle killed with SIGKILL mid-run leaves its report directory behind;
# the next oracle of the same user removes it.
import glob
import signal
import time
stale_checks = 0
for mode in ("root", "rootless"):
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

# A --verdict where the code under test could write (the worktree, a
# writable --mount, or a path into either through a symlink) is refused
# before anything runs: there it could plant a pass of its own, or swap the
# directory for a symlink elsewhere on the host.
place_checks = 0
for mode in ("root", "rootless"):
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
        marker = os.path.join(wt, "ran")
        for label, verdict_path, extra in (
                ("in the worktree", os.path.join(wt, "out", "verdict.json"), []),
                ("through a symlink into it", os.path.join(root, "link", "verdict.json"), []),
                ("in a writable --mount", os.path.join(data, "verdict.json"),
                 ["--mount", data + ":/data:rw"])):
            proc = subprocess.run([STOCKADE, "oracle", "--worktree", wt, "--held", held,
                                   "--verdict", verdict_path, *extra, "--", "sh", "-c",
                                   "touch /repo/ran; " + JUNIT],
                                  preexec_fn=demote if mode == "rootless" else None,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
            problems = []
            if proc.returncode != 125:
                problems.append("exit %d, expected 125" % proc.returncode)
            if b"--verdict" not in proc.stderr:
                problems.append("the refusal does not name --verdict: %r" % proc.stderr[-200:])
            for path in (verdict_path, os.path.join(wt, "out", "verdict.json"), marker):
                if os.path.lexists(path):
                    problems.append("%s exists" % path)
            place_checks += 1
            if problems:
                failures += 1
                print("FAIL %s/--verdict %s: %s" % (mode, label, "; ".join(problems)))
            else:
                print("ok   %s/--verdict %s refused" % (mode, label))
    finally:
        shutil.rmtree(root, ignore_errors=True)

print("%d passed, %d failed" % (2 * len(CASES) + stale_checks + place_checks - failures, failures))
sys.exit(1 if failures else 0)
