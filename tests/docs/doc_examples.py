#!/usr/bin/python3
"""Every shell example of the README, docs/cookbook.md and the man page's
EXAMPLES that runs stockade,
run as written, as root and as uid 65534 (issue 23: "every documented command
works as written").

Each fenced ```sh block that names stockade is run whole by /bin/sh in a
project made for it: `~/src/app` and `.` are a node project with a passing
`npm test`, Vite (from the suite's cached app, scripts/vite-app.sh), a
Makefile and `./scripts/test`; `./candidate` and `./held-tests` a held node
test with its EXPECTED names. `stockade` in the block is a shell function that
runs the binary under test and logs each call's exit status, which must be
the one the docs promise (0 unless the block's comment says otherwise).

The few changes from the text are listed in EDITS, each with its reason: a
free port for 5173 (the suite runs in parallel), fewer bench rounds, a bounded
`logs --follow`. A block this test does not know fails it: a new example must
be given its expectations here. Usage: doc_examples.py STOCKADE REPO_ROOT
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

STOCKADE, ROOT = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
VITE_APP = os.environ.get("STOCKADE_VITE_APP", "/var/cache/stockade-test/vite-app")
DOCS = ["README.md", "docs/cookbook.md"]
MAN = "docs/stockade.1"

# (file, the block's first stockade command, up to its first space after
# "stockade X"): the exit status of each stockade call in the block, in order.
EXPECTED = {
    ("README.md", "stockade run --min-tier landlock --worktree . -- npm test"): [0],
    ("README.md", "stockade run --worktree ~/src/app --result ~/app-result.json -- npm test"):
        # run; --env GITHUB_TOKEN refused (125); --allow-secret; profile show;
        # check; serve --detach; ps; logs; stop; bench; oracle (pass)
        [0, 125, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    ("docs/cookbook.md", "stockade run --worktree ~/src/app --timeout 600 --memory 2g --pids 512 \\"): [0],
    ("docs/cookbook.md", 'stockade run --profile build --worktree . --result "$result" -- make -j"$(nproc)"'): [0],
    ("docs/cookbook.md", 'stockade run --worktree . --quiet --result "$result" -- npx eslint --fix .'): [0],
    ("docs/cookbook.md", "stockade run --worktree . --env CI=1 --env NODE_ENV=test -- npm test"):
        [0, 125, 0],  # NPM_TOKEN is secret-shaped: refused until allowed
    ("docs/cookbook.md", "stockade serve --worktree ~/src/app --port 5173 --detach \\"):
        [0, 0, 0, 0],  # serve, ps, logs --follow (bounded, see EDITS), stop
    ("docs/cookbook.md", "stockade oracle --worktree ./candidate --held ./held-tests --report junit \\"): [0],
    ("docs/cookbook.md", "stockade check --profile held-test --require memory,pids >&2 || exit 1  # as the run requires"):
        [0, 0],
    ("docs/cookbook.md", "stockade run --log-level debug -- /bin/true           # each setup step, timed"): [0, 0],
    # run make test; run npm test; profile show; bench; serve; logs --follow; stop
    ("docs/stockade.1", "stockade run --worktree . --result ../result.json -- make test"):
        [0, 0, 0, 0, 0, 0, 0],
}
# What is run differs from the text only here, each for a reason.
EDITS = [
    # The suite runs tests in parallel: 5173 may be taken. Any free port.
    (re.compile(r"\b5173\b"), lambda ctx: str(ctx["port"])),
    # 300 rounds of every level take a minute; the command is the same.
    (re.compile(r"--runs 300"), lambda ctx: "--runs 3"),
    # "Ctrl-C to stop following": the test is the Ctrl-C, after 3 s.
    (re.compile(r"^stockade logs (\S+) --follow", re.M),
     lambda ctx: 'timeout -s INT 3 "$STOCKADE_BIN" logs \\1 --follow; rc=$?; '
                 '[ $rc -eq 124 ] && rc=0; printf "%s logs\\n" $rc >> "$CALLS"; true'),
]
# The rootless half needs what the host gives uid 65534: as root here cgroups
# hold --memory and --pids; rootless, `check --require memory,pids` refuses
# (the block's own `|| exit 1`), which is what the docs promise there.
ROOTLESS_EXPECTED = {
    ("docs/cookbook.md", "stockade check --profile held-test --require memory,pids >&2 || exit 1  # as the run requires"):
        None,  # decided from `stockade check` below
}

NODE_TEST = """import test from 'node:test';
import assert from 'node:assert';
test('adds', () => assert.strictEqual(1 + 1, 2));
"""
HELD_TEST = """const test = require('node:test'); const assert = require('node:assert');
const { add } = require('/repo/add.js');
test('adds', () => assert.strictEqual(add(2, 3), 5));
test('adds negatives', () => assert.strictEqual(add(-1, 1), 0));
"""
# A stand-in for eslint, which the registry would supply: it rewrites a file
# of the worktree, as `eslint --fix` does.
FAKE_ESLINT = "#!/bin/sh\nprintf 'export const x = 1;\\n' > src.js\n"


def blocks():
    for doc in DOCS:
        text = open(os.path.join(ROOT, doc)).read()
        for m in re.finditer(r"```sh\n(.*?)```", text, re.S):
            body = m.group(1)
            first = next((l for l in body.splitlines() if l.lstrip().startswith("stockade ")), None)
            if first is not None:
                yield doc, first.strip(), body
    # The man page's EXAMPLES (.nf to .fi), its escapes undone.
    man = open(os.path.join(ROOT, MAN)).read()
    m = re.search(r"^\.SH EXAMPLES\n\.nf\n(.*?)^\.fi$", man, re.S | re.M)
    if m:
        body = m.group(1).replace("\\-", "-")
        yield MAN, body.splitlines()[0].strip(), body


def write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def make_project(home, uid):
    app = os.path.join(home, "src", "app")
    os.makedirs(app)
    shutil.copytree(os.path.join(VITE_APP, "node_modules"), os.path.join(app, "node_modules"),
                    symlinks=True)
    write(os.path.join(app, "package.json"), json.dumps({
        "name": "app", "private": True, "type": "module",
        "scripts": {"test": "node --test test/"}}))
    write(os.path.join(app, "test", "app.test.js"), NODE_TEST)
    write(os.path.join(app, "index.html"), "<!doctype html><title>app</title><p>hello</p>\n")
    write(os.path.join(app, "Makefile"), "all:\n\t@echo built > built.txt\ntest: all\n\t@test -f built.txt\n")
    write(os.path.join(app, "node_modules", ".bin", "eslint"), FAKE_ESLINT, 0o755)
    write(os.path.join(app, "deploy-dry-run"), '#!/bin/sh\ntest -n "$GITHUB_TOKEN"\n', 0o755)
    write(os.path.join(app, "scripts", "test"), "#!/bin/sh\nexec npm test\n", 0o755)
    write(os.path.join(app, "candidate", "add.js"), "exports.add = (a, b) => a + b;\n")
    write(os.path.join(app, "held-tests", "add.test.js"), HELD_TEST)
    write(os.path.join(app, "held-tests", "EXPECTED"), "adds\nadds negatives\n")
    subprocess.run(["git", "init", "-q", app], check=True)
    subprocess.run(["chown", "-R", f"{uid}:{uid}", home], check=True)
    return app


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_block(mode, doc, body, expected, work):
    home = os.path.join(work, "home")
    uid = 0 if mode == "root" else 65534
    os.makedirs(home)
    app = make_project(home, uid)
    ctx = {"port": free_port()}
    script = body
    for pattern, replace in EDITS:
        script = pattern.sub(lambda m, r=replace: m.expand(r(ctx)), script)
    log = os.path.join(work, "calls.log")
    prelude = ('stockade() { "$STOCKADE_BIN" "$@"; rc=$?; printf "%s %s\\n" "$rc" "$1" >> "$CALLS"; '
               'return $rc; }\n')
    write(os.path.join(work, "block.sh"), prelude + script, 0o755)
    open(log, "w").close()
    os.chmod(log, 0o666)
    os.chmod(work, 0o755)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8",
           "STOCKADE_BIN": STOCKADE, "CALLS": log, "GITHUB_TOKEN": "ghp_doc-example",
           "NPM_TOKEN": "npm_doc-example", "CI_PROJECT_DIR": app,
           "TMPDIR": os.path.join(work, "tmp")}
    os.makedirs(env["TMPDIR"])
    os.chmod(env["TMPDIR"], 0o777)
    if mode == "rootless":
        env["XDG_RUNTIME_DIR"] = os.path.join(work, "run")
        os.makedirs(env["XDG_RUNTIME_DIR"])
        os.chown(env["XDG_RUNTIME_DIR"], uid, uid)
        os.chmod(env["XDG_RUNTIME_DIR"], 0o700)

    def demote():
        if uid:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)

    try:
        p = subprocess.run(["/bin/sh", os.path.join(work, "block.sh")], cwd=app, env=env,
                           capture_output=True, text=True, timeout=600, preexec_fn=demote)
    finally:
        # A server a failed block left: stopped by name, as the docs would.
        subprocess.run([STOCKADE, "stop", f"dev-{ctx['port']}"], env=env, capture_output=True,
                       preexec_fn=demote)
    calls = [line.split() for line in open(log).read().splitlines()]
    got = [int(c[0]) for c in calls]
    problems = []
    if got != expected:
        problems.append(f"stockade calls exited {got}, the docs promise {expected}")
    if "command not found" in p.stderr or "not found" in p.stderr.split("stockade:")[0]:
        problems.append("a command of the block was not found")
    if p.returncode != 0 and expected and expected[-1] == 0:
        problems.append(f"the block exited {p.returncode}")
    if problems:
        return (f"{mode} {doc}: " + "; ".join(problems) + f"\n--- stdout\n{p.stdout[-1500:]}"
                f"\n--- stderr\n{p.stderr[-3000:]}")
    return None


def main():
    if not os.path.isdir(os.path.join(VITE_APP, "node_modules", "vite")):
        print(f"doc examples: {VITE_APP} has no vite (scripts/vite-app.sh makes it)", file=sys.stderr)
        return 1
    failures, ran = [], 0
    seen = set()
    rootless_memory = None
    for mode in ("root", "rootless"):
        for doc, first, body in blocks():
            key = (doc, first)
            seen.add(key)
            if key not in EXPECTED:
                failures.append(f"{doc}: a block this test does not know (first call {first!r}): "
                                "give it its expected exit statuses in tests/docs/doc_examples.py")
                continue
            expected = EXPECTED[key]
            if mode == "rootless" and key in ROOTLESS_EXPECTED:
                if rootless_memory is None:
                    check = subprocess.run(
                        ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
                         STOCKADE, "check", "--json", "--require", "memory,pids"],
                        capture_output=True, text=True, cwd="/")
                    rootless_memory = check.returncode == 0
                # Without a cgroup for uid 65534, `check --require` says so
                # (exit 1) and the block's own guard ends it, as the docs say.
                expected = expected if rootless_memory else [1]
            with tempfile.TemporaryDirectory(prefix="stockade-doc-example-", dir="/var/tmp") as work:
                problem = run_block(mode, doc, body, expected, work)
            ran += 1
            print(f"{'FAIL' if problem else 'ok  '} {mode:8} {doc}: {first[:70]}")
            if problem:
                failures.append(problem)
    for key in EXPECTED:
        if key not in seen:
            failures.append(f"{key[0]}: no block starts with {key[1]!r} any more: update the test")
    if failures:
        print("\n\n".join(failures), file=sys.stderr)
        return 1
    print(f"doc examples: {ran} blocks ran as written, both modes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
