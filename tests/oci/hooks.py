#!/usr/bin/env python3
"""OCI hooks under stockade (issue 19): prestart, createRuntime, poststart and
poststop, run on the host with the container's state on their stdin, as
runc's clients rely on, on a busybox-static rootfs, as root or uid 65534.

usage: hooks.py STOCKADE root|rootless

Each hook here is the host's busybox run as `sh` (args[0] is argv[0]: the
applet busybox runs), writing its stdin, argv and environment into a
scratch file; the cases compare what it read with what the runtime holds:
the id, the init's pid, the status the spec names for that hook. Failing,
timed-out and wedging hooks: what create, start and delete answer, what is
left (nothing under --root, no process). Exit 77 (a skip) when the host
cannot run a mode, which CI (env CI=true) turns into a failure.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

import lifecycle
from lifecycle import APPLETS, check, make_bundle, reap, state_of, wait_for
from oci_common import BUSYBOX, V1_CONTROLLERS, finish, parent_of, skip

# A hook: busybox as sh; $0 is the prefix of its record files.
RECORD = ('cat > "$0.state"; echo "$0 $1" > "$0.argv"; echo "$HOOK_ENV" > "$0.env"; '
          'echo hook-noise; echo hook-noise >&2')


def hook(script, prefix, timeout=None):
    h = {"path": BUSYBOX, "args": ["sh", "-c", script, prefix, "second-arg"],
         "env": ["HOOK_ENV=from-config", "PATH=/usr/bin:/bin"]}
    if timeout:
        h["timeout"] = timeout
    return h


def with_hooks(base, hooks, annotations=None):
    config = json.loads(json.dumps(base))
    config["hooks"] = hooks
    if annotations:
        config["annotations"] = annotations
    return config


def read(path):
    with open(path) as f:
        return f.read()


def gone(pid):
    reap()
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[1][0] in "ZX"
    except FileNotFoundError:
        return True


def lifecycle_with_hooks(rt, scratch, owner, base, out):
    rec = os.path.join(out, "rec")
    annotations = {"org.example.hooked": "yes"}
    config = with_hooks(base, {
        "prestart": [hook(RECORD, rec + "-prestart")],
        "createRuntime": [hook(RECORD, rec + "-createRuntime")],
        "poststart": [hook(RECORD, rec + "-poststart")],
        "poststop": [hook(RECORD, rec + "-poststop")],
    }, annotations)
    bundle = make_bundle(scratch, "hooked", ["sh", "-c", "touch /out/hooked-ran; exec sleep 1000"],
                         owner, config)
    pid_file = os.path.join(out, "hooked.pid")
    log = os.path.join(out, "hooked.log")
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        p = subprocess.run([rt.binary, "--root", rt.root, "--log-format", "json", "--log", log,
                            "create", "--bundle", bundle, "--pid-file", pid_file, "h1"],
                           stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, text=True,
                           timeout=120, preexec_fn=lifecycle.demote if rt.mode == "rootless"
                           else None)
        stdout.seek(0)
        stderr.seek(0)
        create_out, create_err = stdout.read(), stderr.read()
    check("hooks: create with prestart, createRuntime, poststart, poststop returns 0",
          p.returncode == 0, create_err)
    if p.returncode != 0:
        return
    pid = int(read(pid_file))
    st = state_of(rt, "h1") or {}
    for name in ("prestart", "createRuntime"):
        try:
            seen = json.loads(read(f"{rec}-{name}.state"))
        except (OSError, ValueError) as e:
            seen = {"unreadable": str(e)}
        check(f"hooks: {name} read the state on its stdin: id, status created, the init's pid, "
              "bundle, the config's annotations",
              seen.get("id") == "h1" and seen.get("status") == "created" and
              seen.get("pid") == pid == st.get("pid") and seen.get("bundle") == st.get("bundle")
              and seen.get("annotations") == annotations and seen.get("ociVersion"), seen)
        check(f"hooks: {name} got args[0] as argv[0] (busybox ran sh), its args, its env",
              read(f"{rec}-{name}.argv") == f"{rec}-{name} second-arg\n" and
              read(f"{rec}-{name}.env") == "from-config\n")
    check("hooks: they ran with the command parked (it had not run)",
          not os.path.exists(os.path.join(out, "hooked-ran")))
    check("hooks: poststart has not run before start", not os.path.exists(f"{rec}-poststart.state"))
    check("hooks: their stdout and stderr reach neither create's stdout nor its stderr",
          "hook-noise" not in create_out + create_err, (create_out, create_err))
    r = rt("start", "h1")
    check("hooks: start returns 0, nothing of the hook on its stdout or stderr",
          r.returncode == 0 and "hook-noise" not in r.stdout + r.stderr, (r.stdout, r.stderr))
    seen = json.loads(read(f"{rec}-poststart.state")) if os.path.exists(
        f"{rec}-poststart.state") else {}
    check("hooks: poststart ran before start returned, state running, the same pid",
          seen.get("status") == "running" and seen.get("pid") == pid and seen.get("id") == "h1",
          seen)
    check("hooks: the command runs after start",
          wait_for(lambda: os.path.exists(os.path.join(out, "hooked-ran"))))
    rt("kill", "h1", "9")
    wait_for(lambda: (state_of(rt, "h1") or {}).get("status") == "stopped")
    check("hooks: poststop has not run before delete", not os.path.exists(f"{rec}-poststop.state"))
    r = rt("delete", "h1")
    seen = json.loads(read(f"{rec}-poststop.state")) if os.path.exists(
        f"{rec}-poststop.state") else {}
    check("hooks: delete returns 0 and poststop ran after the container was gone: "
          "state stopped, its id",
          r.returncode == 0 and seen.get("status") == "stopped" and seen.get("id") == "h1" and
          os.listdir(rt.root) == [], (r.stderr, seen, os.listdir(rt.root)))
    check("hooks: the init is gone", wait_for(lambda: gone(pid)))


def failing_hooks(rt, scratch, owner, base, out):
    parked = ["sleep", "1000"]
    # A prestart that records the state, then fails: create fails naming it.
    rec = os.path.join(out, "fail")
    script = 'cat > "$0.state"; echo because-of-this >&2; exit 3'
    bundle = make_bundle(scratch, "fail-pre", parked, owner,
                         with_hooks(base, {"prestart": [hook(script, rec)]}))
    r = rt("create", "--bundle", bundle, "f1")
    seen = json.loads(read(rec + ".state")) if os.path.exists(rec + ".state") else {}
    check("hooks: a failing prestart fails create (exit 1), naming the hook, its exit status "
          "and its stderr",
          r.returncode == 1 and "error running prestart hook #0" in r.stderr and
          BUSYBOX in r.stderr and "exit status 3" in r.stderr and "because-of-this" in r.stderr,
          (r.returncode, r.stderr))
    check("hooks: ...nothing left under --root", os.listdir(rt.root) == [], os.listdir(rt.root))
    check("hooks: ...and the container's init (the pid the hook read) is gone",
          seen.get("pid", 0) > 1 and wait_for(lambda: gone(seen["pid"])), seen)

    # A createRuntime hook that dies of a signal.
    bundle = make_bundle(scratch, "fail-sig", parked, owner, with_hooks(
        base, {"createRuntime": [hook("kill -TERM $$", rec + "-sig")]}))
    r = rt("create", "--bundle", bundle, "f2")
    check("hooks: a createRuntime hook killed by a signal fails create, naming the signal",
          r.returncode == 1 and "createRuntime hook #0" in r.stderr and "SIGTERM" in r.stderr and
          os.listdir(rt.root) == [], (r.returncode, r.stderr, os.listdir(rt.root)))

    # A hook past its timeout: killed and named.
    rec_t = os.path.join(out, "slow")
    script = 'cat > "$0.state"; echo $$ > "$0.pid"; exec sleep 100'
    bundle = make_bundle(scratch, "fail-slow", parked, owner, with_hooks(
        base, {"prestart": [hook("true", rec_t + "-first"), hook(script, rec_t, timeout=1)]}))
    r = rt("create", "--bundle", bundle, "f3")
    hook_pid = int(read(rec_t + ".pid")) if os.path.exists(rec_t + ".pid") else 0
    seen = json.loads(read(rec_t + ".state")) if os.path.exists(rec_t + ".state") else {}
    check("hooks: a prestart past its timeout fails create, named (#1) with its timeout",
          r.returncode == 1 and "prestart hook #1" in r.stderr and
          "ran past specified timeout of 1.0s" in r.stderr, (r.returncode, r.stderr))
    check("hooks: ...the hook was killed, the init is gone, nothing under --root",
          hook_pid > 1 and gone(hook_pid) and seen.get("pid", 0) > 1 and
          wait_for(lambda: gone(seen["pid"])) and os.listdir(rt.root) == [],
          (hook_pid, seen, os.listdir(rt.root)))

    # Bad hooks in the config: refused before anything exists.
    for what, hooks, words in [
        ("a path that does not exist", {"poststop": [{"path": "/nonexistent/hook"}]},
         ["hooks.poststop[0].path", "/nonexistent/hook", "ENOENT"]),
        ("a relative path", {"prestart": [{"path": "bin/hook"}]},
         ["hooks.prestart[0].path", "absolute"]),
        ("a timeout of 0", {"prestart": [{"path": BUSYBOX, "timeout": 0}]},
         ["hooks.prestart[0].timeout", "greater than zero"]),
        ("a hook of a name the spec does not have", {"preStart": [{"path": BUSYBOX}]},
         ["hooks.preStart", "not a hook stockade knows"]),
    ]:
        bundle = make_bundle(scratch, "bad-" + what.replace(" ", "-"), parked, owner,
                             with_hooks(base, hooks))
        r = rt("create", "--bundle", bundle, "f4")
        check(f"hooks: {what} fails create with one line naming it, nothing left",
              r.returncode == 1 and all(w in r.stderr for w in words) and
              len(r.stderr.strip().splitlines()) == 1 and os.listdir(rt.root) == [],
              (r.returncode, r.stderr, os.listdir(rt.root)))

    # A container that could write --root (a writable bind of the directory
    # that holds it, of --root itself, or of its own directory beneath it,
    # made by create before the mount) could forge the record start and
    # delete read, the poststop hooks the host runs included: refused, with
    # hooks or without; bound read-only, it is not.
    own_dir = os.path.join(rt.root, "f6")
    for source, options, hooks, refused in [
            (scratch, ["rbind", "rw"], {"poststop": [hook(RECORD, rec + "-reach")]}, True),
            (rt.root, ["rbind", "rw"], {}, True),
            (own_dir, ["bind", "rw"], {"poststop": [hook(RECORD, rec + "-reach")]}, True),
            (scratch, ["rbind", "ro"], {"poststop": [hook(RECORD, rec + "-reach")]}, False)]:
        config = with_hooks(base, hooks)
        config["mounts"].append({"destination": "/tmp", "type": "bind", "source": source,
                                 "options": options})
        what = f"{source} {options[1]}{' with a poststop hook' if hooks else ''}"
        bundle = make_bundle(scratch, "reach-" + str(abs(hash(what))), parked, owner, config)
        r = rt("create", "--bundle", bundle, "f6")
        if refused:
            check(f"hooks: a container that could write --root ({what}) fails create, "
                  "naming it, nothing left",
                  r.returncode == 1 and "--root" in r.stderr and
                  len(r.stderr.strip().splitlines()) == 1 and os.listdir(rt.root) == [],
                  (r.returncode, r.stderr, os.listdir(rt.root)))
        else:
            check(f"hooks: ...the same directory bound read-only ({what}) is accepted",
                  r.returncode == 0, r.stderr)
            rt("delete", "--force", "f6")
            check("hooks: ...and its poststop ran at delete", wait_for(
                lambda: os.path.exists(rec + "-reach.state")), os.listdir(out))

    # A prestart hook runs with the runtime's umask, not the container's
    # (process.user.umask 0), and one past its timeout is killed with what
    # it started.
    config = with_hooks(base, {"prestart": [hook('umask > "$0.umask"', rec + "-mask")]})
    config["process"]["user"]["umask"] = 0
    bundle = make_bundle(scratch, "umask", parked, owner, config)
    r = rt("create", "--bundle", bundle, "f7")
    own = os.umask(0o022)
    os.umask(own)
    seen_mask = read(rec + "-mask.umask").strip() if os.path.exists(rec + "-mask.umask") else ""
    check("hooks: a prestart hook has the runtime's umask, not the container's",
          r.returncode == 0 and seen_mask != "" and int(seen_mask, 8) == own,
          (r.returncode, r.stderr, seen_mask, oct(own)))
    rt("delete", "--force", "f7")
    bundle = make_bundle(scratch, "timeout-group", parked, owner, with_hooks(base, {
        "prestart": [hook('sleep 300 & echo $! > "$0.child"; sleep 300', rec + "-grp",
                          timeout=1)]}))
    r = rt("create", "--bundle", bundle, "f8")
    child = read(rec + "-grp.child").strip() if os.path.exists(rec + "-grp.child") else ""
    check("hooks: a hook past its timeout is killed with the process it started",
          r.returncode == 1 and child != "" and wait_for(lambda: gone(int(child))) and
          os.listdir(rt.root) == [], (r.returncode, r.stderr, child))

    # poststart and poststop failures: warnings in the log, nothing else.
    log = os.path.join(out, "warn.log")
    bundle = make_bundle(scratch, "fail-post", parked, owner, with_hooks(base, {
        "poststart": [hook("exit 4", rec + "-ps")],
        "poststop": [hook("exit 5", rec + "-stop"), hook(RECORD, rec + "-stop2")]}))
    r = rt("create", "--bundle", bundle, "f5")
    check("hooks: create with failing poststart and poststop hooks", r.returncode == 0, r.stderr)
    r = rt("start", "f5", log=log)
    check("hooks: a failing poststart is a warning: start returns 0, the container runs",
          r.returncode == 0 and (state_of(rt, "f5") or {}).get("status") == "running",
          (r.returncode, r.stderr))
    r = rt("delete", "--force", "f5", log=log)
    lines = [json.loads(line) for line in read(log).splitlines()] if os.path.exists(log) else []
    warnings = [entry["msg"] for entry in lines if entry.get("level") == "warning"]
    check("hooks: a failing poststop still deletes (exit 0, nothing under --root), "
          "and the next poststop runs",
          r.returncode == 0 and os.listdir(rt.root) == [] and
          json.loads(read(rec + "-stop2.state")).get("status") == "stopped",
          (r.returncode, r.stderr, os.listdir(rt.root)))
    check("hooks: --log holds each failure as a JSON warning naming the hook and its status",
          any("poststart hook #0" in w and "exit status 4" in w for w in warnings) and
          any("poststop hook #0" in w and "exit status 5" in w for w in warnings) and
          not any(entry.get("level") == "error" for entry in lines), lines)

    # A hook that never reads its stdin (the state larger than a socket's
    # buffer) and one that leaves a child holding its stdout: the runtime
    # waits for neither once the hook has exited.
    rec_w = os.path.join(out, "wedge")
    big = {"org.example.big": "x" * (1 << 19)}
    bundle = make_bundle(scratch, "wedge", parked, owner, with_hooks(base, {
        "createRuntime": [hook("exit 0", rec_w + "-deaf")],
        "poststop": [hook('sleep 100 & echo $! > "$0.pid"', rec_w)]}, big))
    r = rt("create", "--bundle", bundle, "w1")
    check("hooks: a hook that exits without reading a 512 KiB state does not hold create",
          r.returncode == 0, r.stderr)
    r = rt("delete", "--force", "w1")
    child = int(read(rec_w + ".pid")) if os.path.exists(rec_w + ".pid") else 0
    check("hooks: delete returned while the hook's child still held its stdout "
          "(the runtime waits for the hook's exit, not its pipes' EOF)",
          r.returncode == 0 and child > 1 and not gone(child) and os.listdir(rt.root) == [],
          (r.returncode, r.stderr, child))
    if child > 1 and not gone(child):
        os.kill(child, 9)


def hooks_under_run(rt, scratch, owner, base, out):
    """`run` is create, start and (without --keep) delete: it runs every hook."""
    rec = os.path.join(out, "run")
    config = with_hooks(base, {name: [hook(RECORD, f"{rec}-{name}")] for name in
                               ("prestart", "createRuntime", "poststart", "poststop")})
    bundle = make_bundle(scratch, "run", ["sh", "-c", "echo from-command; exit 3"], owner, config)
    r = rt("run", "--bundle", bundle, "r1")
    seen = {}
    for name in ("prestart", "createRuntime", "poststart", "poststop"):
        path = f"{rec}-{name}.state"
        seen[name] = json.loads(read(path)).get("status") if os.path.exists(path) else None
    check("hooks: run runs all four (created, created, running or stopped, stopped), its "
          "output and exit status the command's alone",
          r.returncode == 3 and r.stdout == "from-command\n" and "hook-noise" not in r.stderr and
          seen["prestart"] == seen["createRuntime"] == "created" and
          seen["poststart"] in ("running", "stopped") and seen["poststop"] == "stopped" and
          os.listdir(rt.root) == [], (r.returncode, r.stdout, r.stderr, seen))


def hooks_with_closed_stdio(rt, scratch, owner, base, out):
    """A runtime started with fds 0, 1 and 2 closed: the hook's pipes take
    those numbers in it, and the hook still gets its state on 0 and its
    argv, its own output on 1 and 2. End to end only: the order create makes
    its pipes in spares them today; the unit case "oci hooks: pipes on fds
    0-2 in a crossed order ..." shows the hook child's own part."""
    rec = os.path.join(out, "closed")
    bundle = make_bundle(scratch, "closed", ["sleep", "1000"], owner, with_hooks(base, {
        "prestart": [hook(RECORD + '; echo to-stdout', rec)]}))

    def closed():
        if rt.mode == "rootless":
            lifecycle.demote()
        os.closerange(0, 3)

    p = subprocess.run([rt.binary, "--root", rt.root, "create", "--bundle", bundle, "s1"],
                       preexec_fn=closed, timeout=120)
    seen = json.loads(read(rec + ".state")) if os.path.exists(rec + ".state") else {}
    check("hooks: with the runtime's fds 0-2 closed, a hook still reads its state and argv",
          seen.get("id") == "s1" and seen.get("status") == "created" and
          os.path.exists(rec + ".argv") and read(rec + ".argv") == f"{rec} second-arg\n",
          (p.returncode, seen))
    rt("delete", "--force", "s1")


def host_processes_with(word):
    """Host pids whose command line has `word` as one of its arguments."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if word.encode() in args:
            found.append(int(entry))
    return found


def container_namespace_hooks(rt, scratch, owner, base, out):
    """createContainer and startContainer, run in the container's namespaces
    as runc's init runs them: createContainer by init with the root built
    and before pivot_root (its path the host's), startContainer by the
    command after start, under its filter, right before its execve (its
    path the container's). What each read and where it ran is compared with
    what the host sees of the container's init."""
    # A host directory under /tmp: create's staging mount covers /tmp in the
    # container's mount namespace, so the image plants a file at the same
    # path beneath its root; the hook must be the host's all the same.
    host_dir = tempfile.mkdtemp(prefix="stockade-cc-hook-", dir="/tmp")
    try:
        os.chmod(host_dir, 0o1777)  # the hook's ids (as root: the leased ones) write hook.log
        host_sh = os.path.join(host_dir, "sh")
        shutil.copy(BUSYBOX, host_sh)
        os.chmod(host_sh, 0o755)
        planted = os.path.join(scratch, "rootfs", os.path.basename(host_dir))
        os.makedirs(planted)
        with open(os.path.join(planted, "sh"), "w") as f:
            f.write("#!/bin/sh\necho image > /out/cc-which\n")
        os.chmod(os.path.join(planted, "sh"), 0o755)
        if owner:
            for p in (planted, os.path.join(planted, "sh")):
                os.chown(p, owner, owner)

        # A trusted hook that writes a fixed /tmp path, and an image that
        # plants a symlink at that path beneath its root, to a host canary.
        canary = os.path.join(scratch, "cc-canary")
        with open(canary, "w") as f:
            f.write("original\n")
        os.chmod(canary, 0o666)
        os.symlink(canary, os.path.join(planted, "hook.log"))
        # A directory of the image anyone may write (the image root is
        # root's): the hook writes there through root.path.
        os.makedirs(os.path.join(scratch, "rootfs", "cc-dir"))
        os.chmod(os.path.join(scratch, "rootfs", "cc-dir"), 0o1777)
        # An empty directory of the image the hook mounts a tmpfs on.
        os.makedirs(os.path.join(scratch, "rootfs", "cc-mnt"))
        rec = os.path.join(out, "cc")
        record = (f'echo hook-was-here >> {host_dir}/hook.log; '
                  'cat > "$0.state"; echo $$ > "$0.pid"; '
                  'for n in user mnt net ipc uts; do readlink /proc/self/ns/$n; done > "$0.ns"; '
                  'id -u > "$0.uid"; ls -l /proc/self/fd/ > "$0.fds"; echo host > "$0.which"; '
                  'b=$(sed -n \'s/.*"bundle":"\\([^"]*\\)".*/\\1/p\' "$0.state"); '
                  'test -e "$b/rootfs/out/cc.state" && echo yes > "$0.sees-mounts"; '
                  '{ echo made-by-hook > "$b/rootfs/cc-dir/cc-made"; } 2> "$0.made-err"; '
                  'mount -t tmpfs -o size=16k cc-hook-fs "$b/rootfs/cc-mnt" 2> "$0.mount-err" && '
                  '{ echo mounted-by-hook > "$b/rootfs/cc-mnt/marker"; } 2>> "$0.mount-err"; '
                  '(exec sleep 3131) & echo started')
        start_script = "/stockade-start-hook.sh"
        with open(os.path.join(scratch, "rootfs", start_script[1:]), "w") as f:
            f.write("#!/bin/sh\ncat > /out/sc.state\n"
                    "grep -E '^(Uid|CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status "
                    "> /out/sc.status\necho \"$1\" > /out/sc.arg\n")
        os.chmod(os.path.join(scratch, "rootfs", start_script[1:]), 0o755)
        annotations = {"org.example.cc": "yes"}
        config = with_hooks(base, {
            "createContainer": [{"path": host_sh, "args": ["sh", "-c", record, rec],
                                 "env": ["PATH=/usr/bin:/bin"]}],
            "startContainer": [{"path": start_script, "args": [start_script, "from-args"]}],
        }, annotations)
        command = ("grep -E '^(Uid|CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status "
                   "> /out/cmd.status; cat /cc-dir/cc-made > /out/cmd.ccmade; "
                   "cat /cc-mnt/marker > /out/cmd.ccmnt; "
                   "test -e /out/sc.state && echo after > /out/cmd.saw; "
                   "exec sleep 1000")
        bundle = make_bundle(scratch, "cc", ["sh", "-c", command], owner, config)
        r = rt("create", "--bundle", bundle, "cc1")
        check("container hooks: create with createContainer and startContainer returns 0",
              r.returncode == 0, r.stderr)
        if r.returncode != 0:
            return
        st = state_of(rt, "cc1") or {}
        init = st.get("pid", 0)
        try:
            seen = json.loads(read(rec + ".state"))
        except (OSError, ValueError) as e:
            seen = {"unreadable": str(e)}
        check("container hooks: createContainer read the state: id, status creating, pid 1 "
              "(init, as the container's pid namespace numbers it), bundle, annotations",
              seen.get("id") == "cc1" and seen.get("status") == "creating" and
              seen.get("pid") == 1 and seen.get("bundle") == st.get("bundle") and
              seen.get("annotations") == annotations and seen.get("ociVersion"), seen)
        theirs = [os.readlink(f"/proc/{init}/ns/{n}") for n in ("user", "mnt", "net", "ipc", "uts")]
        ours = [os.readlink(f"/proc/self/ns/{n}") for n in ("user", "mnt", "net", "ipc", "uts")]
        hook_ns = read(rec + ".ns").split() if os.path.exists(rec + ".ns") else []
        check("container hooks: createContainer ran in the container's user, network, IPC and "
              "UTS namespaces (as the host reads them of its init), none the host's, and in a "
              "copy of its mount namespace (the staging mount over /tmp taken off)",
              len(hook_ns) == 5 and
              [hook_ns[i] for i in (0, 2, 3, 4)] == [theirs[i] for i in (0, 2, 3, 4)] and
              hook_ns[1] not in (theirs[1], ours[1]) and
              all(a != b for a, b in zip(theirs, ours)), (hook_ns, theirs, ours))
        check("container hooks: ...as PID 1 of a pid namespace of its own, uid 0 of the "
              "container's user namespace",
              read(rec + ".pid").strip() == "1" and read(rec + ".uid").strip() == "0",
              (read(rec + ".pid"), read(rec + ".uid")))
        check("container hooks: ...the host's executable, not the image's file planted at the "
              "same path beneath its root (/tmp/...)",
              read(rec + ".which").strip() == "host" and
              not os.path.exists(os.path.join(out, "cc-which")), os.listdir(out))
        check("container hooks: ...a /tmp path it writes is the host's, not the image's symlink "
              "at that path to a host canary (canary unchanged)",
              read(canary) == "original\n" and
              read(os.path.join(host_dir, "hook.log")) == "hook-was-here\n",
              (read(canary), os.listdir(host_dir)))
        fds = read(rec + ".fds")
        links = {int(line.split(" -> ")[0].split()[-1]): line.split(" -> ", 1)[1]
                 for line in fds.splitlines() if " -> " in line}
        check("container hooks: ...holding no fd of the runtime's or init's (0-2, its own "
              "executable at 3, ls's own directory)",
              sorted(links)[:4] == [0, 1, 2, 3] and max(links) <= 4 and
              links[3] == host_sh and "socket:" not in fds and
              all(links[n].startswith("/proc/") for n in links if n > 3), fds)
        check("container hooks: ...root.path shows it the container's root with its mounts "
              "(the /out bind), as runc builds the root there",
              os.path.exists(rec + ".sees-mounts"), os.listdir(out))
        check("container hooks: what createContainer left running (sleep 3131) did not outlive it",
              host_processes_with("3131") == [], host_processes_with("3131"))
        check("container hooks: startContainer has not run at create",
              not os.path.exists(os.path.join(out, "sc.state")))
        r = rt("start", "cc1")
        check("container hooks: start returns 0", r.returncode == 0, r.stderr)
        check("container hooks: the command ran after startContainer",
              wait_for(lambda: os.path.exists(os.path.join(out, "cmd.saw"))), os.listdir(out))
        try:
            seen = json.loads(read(os.path.join(out, "sc.state")))
        except (OSError, ValueError) as e:
            seen = {"unreadable": str(e)}
        check("container hooks: startContainer (a path only the image has) read the state: "
              "status created, pid 1, its args",
              seen.get("id") == "cc1" and seen.get("status") == "created" and
              seen.get("pid") == 1 and seen.get("annotations") == annotations and
              read(os.path.join(out, "sc.arg")).strip() == "from-args", seen)
        for what, name, text, err in [
                ("reads the file createContainer wrote through root.path (as the container's "
                 "root, before the root is sealed)", "cmd.ccmade", "made-by-hook\n", ".made-err"),
                ("sees the tmpfs createContainer mounted beneath root.path (as under runc, whose "
                 "hooks run in the container's mount namespace)", "cmd.ccmnt",
                 "mounted-by-hook\n", ".mount-err")]:
            got = os.path.join(out, name)
            check(f"container hooks: the command {what}",
                  os.path.exists(got) and read(got) == text,
                  (read(got) if os.path.exists(got) else os.listdir(out),
                   read(rec + err) if os.path.exists(rec + err) else None))
        check("container hooks: ...and the host does not: its directory is empty, no such mount "
              "in its namespace",
              os.listdir(os.path.join(scratch, "rootfs", "cc-mnt")) == [] and
              "cc-hook-fs" not in read("/proc/self/mountinfo"),
              os.listdir(os.path.join(scratch, "rootfs", "cc-mnt")))
        check("container hooks: startContainer is held by what holds the command (ids, "
              "capabilities, no_new_privs, seccomp)",
              read(os.path.join(out, "sc.status")) == read(os.path.join(out, "cmd.status")),
              (read(os.path.join(out, "sc.status")), read(os.path.join(out, "cmd.status"))))
        rt("delete", "--force", "cc1")
        check("container hooks: deleted, nothing under --root", os.listdir(rt.root) == [],
              os.listdir(rt.root))

        # An image whose /dev is a symlink to its root: the config's /dev
        # tmpfs lands on the root itself, stacked on the staging mount over
        # /tmp. The hook takes mounts off until /tmp is the host's again, so
        # its write of a host /tmp path does not follow the image's symlink.
        stacked = os.path.join(scratch, "rootfs-stacked")
        shutil.copytree(os.path.join(scratch, "rootfs"), stacked, symlinks=True)
        shutil.rmtree(os.path.join(stacked, "dev"))
        os.symlink("/", os.path.join(stacked, "dev"))
        os.symlink(canary, os.path.join(stacked, os.path.basename(host_dir), "hook2.log"))
        config = with_hooks(base, {"createContainer": [{"path": host_sh, "args": [
            "sh", "-c", f"echo hook-was-here >> {host_dir}/hook2.log"]}]})
        config["root"]["path"] = stacked
        bundle = make_bundle(scratch, "cc-stacked", ["true"], owner, config)
        r = rt("create", "--bundle", bundle, "cc3")
        rt("delete", "--force", "cc3")
        check("container hooks: a bundle mount stacked on the image's root (/dev -> /) does not "
              "put the image back at the hook's /tmp: the host canary unchanged, the write the "
              "host's",
              read(canary) == "original\n" and
              os.path.exists(os.path.join(host_dir, "hook2.log")) and
              read(os.path.join(host_dir, "hook2.log")) == "hook-was-here\n",
              (r.returncode, r.stderr, read(canary), os.listdir(host_dir)))
        shutil.rmtree(stacked, ignore_errors=True)

        # A hook that mounts onto root.path itself (the root again, with its
        # mounts): stacked on the built root, which must still become
        # private whole for pivot_root, which takes what is on top, as runc.
        config = with_hooks(base, {"createContainer": [{"path": host_sh, "args": [
            "sh", "-c", 'b=$(sed -n \'s/.*"bundle":"\\([^"]*\\)".*/\\1/p\'); '
            'mount --rbind "$b/rootfs" "$b/rootfs"'], "env": ["PATH=/usr/bin:/bin"]}]})
        bundle = make_bundle(scratch, "cc-on-root", ["touch", "/out/on-root-ran"], owner, config)
        r = rt("create", "--bundle", bundle, "cc4")
        s = rt("start", "cc4") if r.returncode == 0 else r
        ran = wait_for(lambda: os.path.exists(os.path.join(out, "on-root-ran")))
        rt("delete", "--force", "cc4")
        check("container hooks: a createContainer hook that mounts onto root.path itself: the "
              "container runs on what is on top (as under runc)",
              r.returncode == 0 and s.returncode == 0 and ran, (r.returncode, r.stderr, s.stderr))

        # root.path that is /tmp, where create builds the root (or /, which
        # holds it): the hooks' taking the staging mount off would take the
        # root's clone with it. Refused with createContainer hooks.
        for root_path in ("/tmp", "/"):
            config = with_hooks(base, {"createContainer": [{"path": host_sh, "args": [
                "sh", "-c", "true"]}]})
            config["root"]["path"] = root_path
            bundle = make_bundle(scratch, "cc-root-" + (root_path.strip("/") or "slash"), ["true"],
                                 owner, config)
            r = rt("create", "--bundle", bundle, "cc5")
            check(f"container hooks: root.path {root_path} with a createContainer hook is "
                  "refused, named, nothing left under --root",
                  r.returncode == 1 and "root.path" in r.stderr and "is or holds" in r.stderr and
                  os.listdir(rt.root) == [], (r.returncode, r.stderr, os.listdir(rt.root)))
            rt("delete", "--force", "cc5")

        # Failures: createContainer fails create as prestart does; a
        # startContainer that fails ends the container before its command,
        # and its record says why.
        parked = ["sleep", "1000"]
        for what, hooks, words in [
                ("exits 3", [{"path": host_sh, "args": ["sh", "-c",
                                                        "echo cc-boom >&2; exit 3"]}],
                 ["error running createContainer hook #0", host_sh, "exit status 3",
                  "stderr: cc-boom"]),
                ("runs past its timeout", [{"path": host_sh, "args": ["sh", "-c", "sleep 3132"],
                                            "timeout": 1}],
                 ["createContainer hook #0", "ran past specified timeout of 1.0s"])]:
            bundle = make_bundle(scratch, "cc-fail-" + what.split()[0], parked, owner,
                                 with_hooks(base, {"createContainer": hooks}))
            r = rt("create", "--bundle", bundle, "cc2")
            check(f"container hooks: a createContainer hook that {what} fails create (exit 1), "
                  "named, nothing left under --root, no process left",
                  r.returncode == 1 and all(w in r.stderr for w in words) and
                  os.listdir(rt.root) == [] and
                  wait_for(lambda: host_processes_with("3132") == []),
                  (r.returncode, r.stderr, os.listdir(rt.root)))
        for what, hook_def, words in [
                ("exits 3", {"path": "/bin/sh", "args": ["sh", "-c", "echo sc-boom >&2; exit 3"]},
                 ["startContainer hook #0", "exit status 3", "sc-boom"]),
                ("is missing from the image", {"path": "/no/such/start-hook"},
                 ["startContainer hook #0", "/no/such/start-hook", "exec failed", "ENOENT"])]:
            marker = os.path.join(out, "sc-fail-ran")
            bundle = make_bundle(scratch, "sc-fail-" + what.split()[0], [
                "sh", "-c", "touch /out/sc-fail-ran"], owner,
                with_hooks(base, {"startContainer": [hook_def]}))
            r = rt("create", "--bundle", bundle, "sc2")
            ok = r.returncode == 0
            r = rt("start", "sc2")
            stopped = wait_for(lambda: (state_of(rt, "sc2") or {}).get("status") == "stopped")
            st = state_of(rt, "sc2") or {}
            failure = json.dumps(st.get("stockade", {}))
            check(f"container hooks: a startContainer hook that {what}: start returns 0 (as "
                  "runc), the container stops before its command, the record names the hook",
                  ok and r.returncode == 0 and stopped and not os.path.exists(marker) and
                  all(w in failure for w in words), (r.returncode, r.stderr, st))
            rt("delete", "--force", "sc2")
            check("container hooks: ...deleted, nothing under --root", os.listdir(rt.root) == [])
    finally:
        shutil.rmtree(host_dir, ignore_errors=True)
        if os.path.isdir(os.path.join(scratch, "rootfs", os.path.basename(host_dir))):
            shutil.rmtree(os.path.join(scratch, "rootfs", os.path.basename(host_dir)))
        shutil.rmtree(os.path.join(scratch, "rootfs", "cc-dir"), ignore_errors=True)
        if os.path.isdir(os.path.join(scratch, "rootfs", "cc-mnt")):
            os.rmdir(os.path.join(scratch, "rootfs", "cc-mnt"))  # empty, or the host was reached
        for left in ("stockade-start-hook.sh",):
            if os.path.lexists(os.path.join(scratch, "rootfs", left)):
                os.unlink(os.path.join(scratch, "rootfs", left))


def default_cgroups_of(rt, cid):
    """The container's default cgroup directories (/stockade-oci/ID-TAG) in
    every hierarchy: none rootless, where it has none."""
    import glob
    leaf = f"stockade-oci/{cid}-{lifecycle.root_tag(os.path.realpath(rt.root))}"
    return glob.glob(f"/sys/fs/cgroup/*/{leaf}") + glob.glob(f"/sys/fs/cgroup/{leaf}")


def create_ended_by_signal(rt, scratch, owner, base, out):
    """A create held by a hook with no timeout (none is invented, as under
    runc) is ended by the client's SIGTERM, as timeout(1) or a shim giving
    up sends it: create fails naming the signal, the hook, the init, its
    cgroups and everything under --root gone."""
    for name, script in [("prestart", "echo $$ > \"$0\"; exec sleep 3141"),
                         ("createContainer", "echo 1 > \"$0\"; exec sleep 3141")]:
        marker = os.path.join(out, f"held-{name}")
        hook_def = {"path": BUSYBOX, "args": ["sh", "-c", script, marker]}
        bundle = make_bundle(scratch, f"held-{name}", ["sleep", "1000"], owner,
                             with_hooks(base, {name: [hook_def]}))
        p = subprocess.Popen([rt.binary, "--root", rt.root, "create", "--bundle", bundle,
                              "held"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True,
                             preexec_fn=lifecycle.demote if rt.mode == "rootless" else None)
        try:
            running = wait_for(lambda: os.path.exists(marker) and
                               host_processes_with("3141") != [])
            p.send_signal(15)
            _, err = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        check(f"hooks: a create held by a {name} hook without a timeout is ended by SIGTERM: "
              "exit 1 naming the signal, the hook gone, nothing under --root, no cgroup left",
              running and p.returncode == 1 and "SIGTERM" in err and
              wait_for(lambda: host_processes_with("3141") == []) and
              os.listdir(rt.root) == [] and default_cgroups_of(rt, "held") == [],
              (running, p.returncode, err, os.listdir(rt.root), default_cgroups_of(rt, "held")))

    # SIGKILL cannot be read: create is gone at once, and its init, which
    # runs the createContainer hook, sees the sync socket hang up, kills the
    # hook and ends; delete --force then takes what create left under --root.
    marker = os.path.join(out, "held-kill")
    bundle = make_bundle(scratch, "held-kill", ["sleep", "1000"], owner, with_hooks(base, {
        "createContainer": [{"path": BUSYBOX, "args": ["sh", "-c", "echo 1 > \"$0\"; "
                                                       "exec sleep 3141", marker]}]}))
    p = subprocess.Popen([rt.binary, "--root", rt.root, "create", "--bundle", bundle, "held"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL,
                         preexec_fn=lifecycle.demote if rt.mode == "rootless" else None)
    running = wait_for(lambda: os.path.exists(marker) and host_processes_with("3141") != [])
    made = default_cgroups_of(rt, "held")
    p.kill()
    p.wait()
    ended = wait_for(lambda: host_processes_with("3141") == [] and
                     host_processes_with(bundle) == [])
    r = rt("delete", "--force", "held")
    check("hooks: create killed (SIGKILL) during a createContainer hook: the hook and the "
          "container's init end with it, and delete --force leaves nothing under --root and "
          "removes the cgroups create had made (as root)",
          running and ended and r.returncode == 0 and os.listdir(rt.root) == [] and
          (made != [] if rt.mode == "root" else made == []) and
          default_cgroups_of(rt, "held") == [],
          (running, ended, host_processes_with("3141"), r.returncode, r.stderr,
           os.listdir(rt.root), made, default_cgroups_of(rt, "held")))


def failed_create_in_shared_cgroup(rt, scratch, owner, base, out):
    """As root, a cgroupsPath that exists already and holds another's
    process (a scratch sleep standing for a service's): a create there that
    fails (its prestart exits 3) kills nothing of it, and the directory,
    not this create's, stays; what this create made beside it (the other
    hierarchies' directories) is removed."""
    shared = f"stockade-hooks-shared-{os.getpid()}"
    dirs = [f"/sys/fs/cgroup/{h}/{shared}" for h in ("memory", "pids", "freezer")
            if os.path.isdir(f"/sys/fs/cgroup/{h}")]
    made_by_create = [f"/sys/fs/cgroup/{h}/{shared}" for h in V1_CONTROLLERS
                      if h not in ("memory", "pids", "freezer")]
    for d in dirs:
        os.mkdir(d)
    other = subprocess.Popen(["sleep", "3232"])
    try:
        for d in dirs:
            with open(os.path.join(d, "cgroup.procs"), "w") as f:
                f.write(str(other.pid))
        config = with_hooks(base, {"prestart": [hook("exit 3", os.path.join(out, "shared"))]})
        config["linux"]["cgroupsPath"] = "/" + shared
        bundle = make_bundle(scratch, "shared-cg", ["sleep", "1000"], owner, config)
        r = rt("create", "--bundle", bundle, "sh1")
        left = [d for d in made_by_create if os.path.exists(d)]
        check("hooks: a create that fails in a cgroupsPath another's process is in kills "
              "nothing of it; the directory, not its own, stays, and none it made beside it",
              r.returncode == 1 and "exit status 3" in r.stderr and other.poll() is None and
              all(os.path.isdir(d) for d in dirs) and os.listdir(rt.root) == [] and not left,
              (r.returncode, r.stderr, other.poll(), os.listdir(rt.root), left))
    finally:
        other.kill()
        other.wait()
        for d in dirs:
            wait_for(lambda: not read(os.path.join(d, "cgroup.procs")).strip())
            os.rmdir(d)
        for d in made_by_create:  # a failing create's leftovers, not the host's
            if os.path.isdir(d):
                os.rmdir(d)


def joined_cgroup_dirs(name):
    """The directories a cgroupsPath /NAME names in this host's v1
    hierarchies (made by the cases' first create, joined by their second)."""
    return [f"/sys/fs/cgroup/{h}/{name}" for h in V1_CONTROLLERS
            if os.path.isdir(f"/sys/fs/cgroup/{h}")]


def remove_joined_cgroup_dirs(dirs):
    """Whatever a failing case left of them, once their processes are gone."""
    for x in dirs:
        if os.path.isdir(x):
            wait_for(lambda: not read(os.path.join(x, "cgroup.procs")).strip())
            os.rmdir(x)


def failed_create_beside_a_joiner(rt, scratch, owner, base, out):
    """As root, a cgroupsPath that a create makes and a second create joins
    while the first is still in its prestart hook (the hook runs the second
    `create` itself, so the order is certain): the first then fails (its
    hook exits 3) and ends its own init, nothing of the second's, whose
    container stays created in the directory; the directory, now holding
    the second's init, stays."""
    shared = f"stockade-hooks-joined-{os.getpid()}"
    dirs = joined_cgroup_dirs(shared)
    config = json.loads(json.dumps(base))
    config["linux"]["cgroupsPath"] = "/" + shared
    joiner = make_bundle(scratch, "joiner", ["sleep", "1000"], owner, config)
    second = (f"{rt.binary} --root {rt.root} create --bundle {joiner} joiner "
              "</dev/null >/dev/null 2>&1 || exit 9; exit 3")
    config = with_hooks(config, {"prestart": [hook(second, os.path.join(out, "joined"))]})
    bundle = make_bundle(scratch, "first-in", ["sleep", "1000"], owner, config)
    try:
        r = rt("create", "--bundle", bundle, "first")
        st = rt("state", "joiner")
        state = json.loads(st.stdout) if st.returncode == 0 else {}
        pid = state.get("pid", 0)
        alive = pid > 0 and not gone(pid)
        procs = read(f"/sys/fs/cgroup/pids/{shared}/cgroup.procs").split() \
            if os.path.isdir(f"/sys/fs/cgroup/pids/{shared}") else []
        check("hooks: a create that fails after another create joined the cgroupsPath it made "
              "ends only its own container: the other's init is alive and still in that "
              "directory, its state created, the first's gone from --root",
              r.returncode == 1 and "exit status 3" in r.stderr and alive and
              state.get("status") == "created" and str(pid) in procs and
              sorted(os.listdir(rt.root)) == ["joiner"],
              (r.returncode, r.stderr, st.stdout, st.stderr, alive, procs,
               os.listdir(rt.root)))
        d = rt("delete", "--force", "joiner")
        check("...and the second is then deleted as usual, its directories with it",
              d.returncode == 0 and not any(os.path.exists(x) for x in dirs),
              (d.returncode, d.stderr, [x for x in dirs if os.path.exists(x)]))
    finally:
        rt("delete", "--force", "joiner")
        remove_joined_cgroup_dirs(dirs)


def failed_shared_create_beside_a_joiner(rt, scratch, owner, base, out):
    """As root, the first create in the caller's pid namespace (no pid
    namespace listed: its init is not PID 1 and its parked command outlives
    it), the second an ordinary one joining the cgroupsPath the first made:
    the first fails and ends its init and its command, found by parent
    while the cgroup is frozen, and nothing of the second's."""
    shared = f"stockade-hooks-shared-pid-{os.getpid()}"
    dirs = joined_cgroup_dirs(shared)
    config = json.loads(json.dumps(base))
    config["linux"]["cgroupsPath"] = "/" + shared
    joiner = make_bundle(scratch, "joiner3", ["sleep", "1000"], owner, config)
    second = (f"{rt.binary} --root {rt.root} create --bundle {joiner} joiner3 "
              "</dev/null >/dev/null 2>&1 || exit 9; exit 3")
    config = with_hooks(config, {"prestart": [hook(second, os.path.join(out, "shared-pid"))]})
    config["linux"]["namespaces"] = [n for n in config["linux"]["namespaces"]
                                     if n["type"] != "pid"]
    bundle = make_bundle(scratch, "first-shared", ["sleep", "1000"], owner, config)
    try:
        r = rt("create", "--bundle", bundle, "first3")
        st = rt("state", "joiner3")
        state = json.loads(st.stdout) if st.returncode == 0 else {}
        pid = state.get("pid", 0)
        alive = pid > 0 and not gone(pid)
        procs = [int(p) for p in read(f"/sys/fs/cgroup/pids/{shared}/cgroup.procs").split()] \
            if os.path.isdir(f"/sys/fs/cgroup/pids/{shared}") else []
        check("hooks: a create in the caller's pid namespace that fails after another create "
              "joined the cgroupsPath it made ends its own init and parked command only: what "
              "is left in the directory is the other's init and its child",
              r.returncode == 1 and "exit status 3" in r.stderr and alive and pid in procs and
              all(p == pid or parent_of(p) == pid for p in procs) and
              state.get("status") == "created" and sorted(os.listdir(rt.root)) == ["joiner3"],
              (r.returncode, r.stderr, st.returncode, st.stdout, st.stderr, alive, pid, procs,
               [parent_of(p) for p in procs], os.listdir(rt.root)))
    finally:
        rt("delete", "--force", "joiner3")
        remove_joined_cgroup_dirs(dirs)


def killed_create_beside_a_joiner(rt, scratch, owner, base, out):
    """As root, the same order, but the first create is SIGKILLed while its
    prestart hook waits (after the second joined): `delete --force` of what
    it left, which has no record, removes it and ends nothing of the
    second's, whose init stays in the directory the first made."""
    shared = f"stockade-hooks-killed-{os.getpid()}"
    dirs = joined_cgroup_dirs(shared)
    config = json.loads(json.dumps(base))
    config["linux"]["cgroupsPath"] = "/" + shared
    joiner = make_bundle(scratch, "joiner2", ["sleep", "1000"], owner, config)
    hook_pid = os.path.join(out, "killed-hook-pid")
    second = (f"echo $$ > {hook_pid}; {rt.binary} --root {rt.root} create --bundle {joiner} "
              "joiner2 </dev/null >/dev/null 2>&1 || exit 9; exec sleep 3152")
    config = with_hooks(config, {"prestart": [hook(second, os.path.join(out, "killed"))]})
    bundle = make_bundle(scratch, "first-killed", ["sleep", "1000"], owner, config)
    p = subprocess.Popen([rt.binary, "--root", rt.root, "create", "--bundle", bundle, "first2"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        joined = wait_for(lambda: (state_of(rt, "joiner2") or {}).get("status") == "created")
        p.kill()
        p.wait()
        state = state_of(rt, "joiner2") or {}
        pid = state.get("pid", 0)
        r = rt("delete", "--force", "first2")
        alive = pid > 0 and not gone(pid)
        procs = read(f"/sys/fs/cgroup/pids/{shared}/cgroup.procs").split() \
            if os.path.isdir(f"/sys/fs/cgroup/pids/{shared}") else []
        check("hooks: delete --force of a create killed after another create joined the "
              "cgroupsPath it made ends nothing of the other's: its init alive and in that "
              "directory, the killed one gone from --root",
              joined and r.returncode == 0 and alive and str(pid) in procs and
              (state_of(rt, "joiner2") or {}).get("status") == "created" and
              sorted(os.listdir(rt.root)) == ["joiner2"],
              (joined, r.returncode, r.stderr, alive, procs, os.listdir(rt.root)))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        try:
            with open(hook_pid) as f:
                os.kill(int(f.read().strip()), signal.SIGKILL)  # the hook's own sleep
        except (OSError, ValueError):
            pass
        reap()
        rt("delete", "--force", "first2")
        rt("delete", "--force", "joiner2")
        remove_joined_cgroup_dirs(dirs)


def create_container_in_joined_pid_namespace(rt, scratch, owner, base, out):
    """As root, a createContainer hook with a pid namespace joined by path:
    the hook's own pid namespace cannot be made there, and what it left
    would outlive the container, so create refuses it by name."""
    def in_own_pid_namespace(pid):
        try:
            return (os.readlink(f"/proc/{pid}/ns/pid_for_children") !=
                    os.readlink("/proc/self/ns/pid"))
        except OSError:  # not yet, or gone (then started again below)
            return False

    # The holder is the test's, not stockade's: one that ended before its
    # namespace could be read (seen once in a run) is started again.
    for _ in range(3):
        holder = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", "sleep",
                                   "3151"])
        if wait_for(lambda: in_own_pid_namespace(holder.pid) or holder.poll() is not None,
                    bound_s=10) and holder.poll() is None:
            break
        print(f"note: the pid namespace's holder ended ({holder.poll()}); started again")
        holder.kill()
        holder.wait()
    try:
        config = with_hooks(base, {"createContainer": [{"path": BUSYBOX, "args": ["true"]}]})
        config["linux"]["namespaces"] = [n for n in config["linux"]["namespaces"]
                                         if n["type"] != "pid"]
        config["linux"]["namespaces"].append(
            {"type": "pid", "path": f"/proc/{holder.pid}/ns/pid_for_children"})
        bundle = make_bundle(scratch, "cc-joined-pid", ["true"], owner, config)
        r = rt("create", "--bundle", bundle, "cc4")
        check("container hooks: createContainer with a pid namespace joined by path is refused, "
              "named, nothing left under --root",
              r.returncode == 1 and "hooks.createContainer" in r.stderr and
              "joined" in r.stderr and os.listdir(rt.root) == [],
              (r.returncode, r.stderr, os.listdir(rt.root)))
    finally:
        holder.kill()
        holder.wait()


def hooks_in_runtime_namespaces(rt, scratch, owner, base, out):
    """As root, a container joining a network namespace by path (a pod's):
    create has joined it before its clone, yet its hooks run in the
    runtime's own, as the spec says, not in the one joined."""
    holder = subprocess.Popen(["unshare", "--net", "sleep", "1000"])
    try:
        ours = os.readlink("/proc/self/ns/net")
        held = f"/proc/{holder.pid}/ns/net"
        wait_for(lambda: os.readlink(held) != ours)
        theirs = os.readlink(held)
        config = with_hooks(base, {"prestart": [hook('readlink /proc/self/ns/net > "$0"',
                                                     os.path.join(out, "netns-prestart"))]})
        config["linux"]["namespaces"] = [n for n in config["linux"]["namespaces"]
                                         if n["type"] != "network"]
        config["linux"]["namespaces"].append({"type": "network", "path": held})
        bundle = make_bundle(scratch, "netns", ["sleep", "1000"], owner, config)
        r = rt("create", "--bundle", bundle, "n1")
        seen = read(os.path.join(out, "netns-prestart")).strip() if r.returncode == 0 else ""
        check("hooks: with a network namespace joined by path, prestart runs in the runtime's "
              "own (not the one joined)",
              r.returncode == 0 and theirs != ours and seen == ours, (r.stderr, seen, ours, theirs))
        rt("delete", "--force", "n1")
    finally:
        holder.kill()
        holder.wait()


def main():
    binary, mode = sys.argv[1], sys.argv[2]
    if os.geteuid() != 0:
        skip("the suite runs as root (rootless cases demote to uid 65534)")
    if not os.path.exists(BUSYBOX):
        skip("busybox-static is not installed (scripts/install-deps.sh test)")
    lifecycle.become_subreaper()
    scratch = tempfile.mkdtemp(prefix="stockade-oci-hooks-", dir="/var/tmp")
    os.chmod(scratch, 0o755)
    owner = 0 if mode == "root" else 65534
    try:
        rt, out, base = lifecycle.make_test_tree(scratch, owner, binary, mode, APPLETS)
        if base is None:
            sys.exit(1)
        lifecycle_with_hooks(rt, scratch, owner, base, out)
        failing_hooks(rt, scratch, owner, base, out)
        hooks_under_run(rt, scratch, owner, base, out)
        hooks_with_closed_stdio(rt, scratch, owner, base, out)
        container_namespace_hooks(rt, scratch, owner, base, out)
        create_ended_by_signal(rt, scratch, owner, base, out)
        if mode == "root":
            hooks_in_runtime_namespaces(rt, scratch, owner, base, out)
            create_container_in_joined_pid_namespace(rt, scratch, owner, base, out)
            failed_create_in_shared_cgroup(rt, scratch, owner, base, out)
            failed_create_beside_a_joiner(rt, scratch, owner, base, out)
            killed_create_beside_a_joiner(rt, scratch, owner, base, out)
            failed_shared_create_beside_a_joiner(rt, scratch, owner, base, out)
    finally:
        for cid in os.listdir(os.path.join(scratch, "state")):
            subprocess.run([binary, "--root", os.path.join(scratch, "state"), "delete", "--force",
                            cid], capture_output=True, timeout=120)
        shutil.rmtree(scratch, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
