#!/usr/bin/env python3
"""A container joining another's pid namespace by path (issue 19: Kubernetes'
shareProcessNamespace, linux.namespaces[{type: "pid", path}]), driven with
stockade's own commands (create, start, kill, state, ps, delete) on a
busybox-static rootfs made here, as root or as uid 65534.

usage: pid_join.py STOCKADE root|rootless

As root: the second container sees the first's processes (its `ps` and
/proc, asserted from inside against the pids the host reads in NSpid) and
cannot signal them (another leased uid); its init is not PID 1 there, so
what replaces PID 1's guarantees is checked from the host: an orphan comes
back to init (its subreaper), the command's end kills it (a straggler
counted), init SIGKILLed leaves no process of the container behind (its
cgroup is killed by the monitor, before any delete), the first container's
processes survive each of these, and after both deletes nothing is left
(processes, --root entries, the joined container's cgroup). The checks on
the path: not a pid namespace refused, the caller's own joined;
mount/user/cgroup joins refused by name. A config listing no pid namespace
(the caller's, `--pid host`): its init born there, not PID 1, its
processes ended through its cgroup. Rootless: the join is refused, naming why (no cgroup of
its own to end its processes by), and nothing is left under --root.
Exit 77 (a skip) when the host cannot run a mode; CI=true makes it a failure.
"""
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

from lifecycle import (become_subreaper, make_test_tree, check, make_bundle, reap, state_of,
                       root_tag, wait_for)
from oci_common import BUSYBOX, finish, host_pids_running, parent_of, skip, status_field

APPLETS = ["sh", "sleep", "ps", "ls", "readlink", "kill", "echo", "cat", "true"]


def cgroup_dirs(rt, cid):
    """The container's default cgroup directories (/stockade-oci/ID-TAG,
    TAG naming this --root) in every hierarchy, v1's and v2's."""
    leaf = f"stockade-oci/{cid}-{root_tag(os.path.realpath(rt.root))}"
    return [d for d in glob.glob(f"/sys/fs/cgroup/*/{leaf}") + glob.glob(f"/sys/fs/cgroup/{leaf}")
            if os.path.isdir(d)]


def joining(scratch, name, args, owner, base, path, ns_type="pid"):
    b = make_bundle(scratch, name, args, owner, base)
    with open(os.path.join(b, "config.json")) as f:
        config = json.load(f)
    config["linux"]["namespaces"] = [n for n in config["linux"]["namespaces"]
                                     if n["type"] != ns_type] + [{"type": ns_type, "path": path}]
    with open(os.path.join(b, "config.json"), "w") as f:
        json.dump(config, f)
    return b


def refused(rt, bundle, cid, words, what):
    r = rt("create", "--bundle", bundle, cid)
    check(what, r.returncode != 0 and all(w in r.stderr for w in words) and
          not os.path.exists(os.path.join(rt.root, cid)), (r.returncode, r.stderr))


def in_callers_pid_namespace(scratch, name, args, owner, base):
    """A bundle listing no pid namespace: the caller's (`--pid host`, a
    Kubernetes hostPID pod)."""
    b = make_bundle(scratch, name, args, owner, base)
    with open(os.path.join(b, "config.json")) as f:
        config = json.load(f)
    config["linux"]["namespaces"] = [n for n in config["linux"]["namespaces"]
                                     if n["type"] != "pid"]
    with open(os.path.join(b, "config.json"), "w") as f:
        json.dump(config, f)
    return b


def callers_pid_namespace(rt, scratch, owner, base, mode):
    """No pid namespace listed: as root the container's init and command
    are born in the caller's, init a subreaper and not PID 1, its end and
    its SIGKILL ending every process of the container through its cgroup;
    rootless refused, naming why."""
    out = os.path.join(scratch, "out")
    if mode != "root":
        b = in_callers_pid_namespace(scratch, "rootless-host-pid", ["true"], owner, base)
        refused(rt, b, "rlh", ["linux.namespaces (pid)", "the caller's pid namespace",
                               "rootless is not supported yet", "cgroup of its own"],
                "rootless: a container in the caller's pid namespace is refused, naming why; "
                "nothing under --root")
        return
    probe = (f"readlink /proc/self/ns/pid > /out/hp-ns; ps -o pid,args > /out/hp-ps; "
             f"kill -0 {os.getpid()} 2> /dev/null; echo $? > /out/hp-killrc; "
             "(sleep 4747 &); exec sleep 3600")
    b = in_callers_pid_namespace(scratch, "host-pid-ns", ["sh", "-c", probe], owner, base)
    r = rt("create", "--bundle", b, "hostpid")
    check("create of a container listing no pid namespace (the caller's, as --pid host asks)",
          r.returncode == 0, r.stderr)
    init = (state_of(rt, "hostpid") or {}).get("pid", 0)
    made = cgroup_dirs(rt, "hostpid")
    rt("start", "hostpid")
    wait_for(lambda: host_pids_running(["sleep", "4747"]) and host_pids_running(["sleep", "3600"])
             and os.path.exists(os.path.join(out, "hp-killrc")))
    seen = {}
    for name in ("ns", "ps", "killrc"):
        try:
            with open(os.path.join(out, f"hp-{name}")) as f:
                seen[name] = f.read()
        except OSError as e:
            seen[name] = str(e)
    own_ns = os.readlink("/proc/self/ns/pid")
    listed = [line.split(None, 1)[0] for line in seen["ps"].splitlines()[1:] if line.strip()]
    check("inside: its pid namespace is the caller's (readlink /proc/self/ns/pid)",
          seen["ns"].strip() == own_ns, (seen["ns"], own_ns))
    check("inside: ps lists the host's processes, this test's own at its host pid",
          str(os.getpid()) in listed and str(init) in listed, (os.getpid(), seen["ps"][:2000]))
    check("inside: a host process cannot be signalled from it (another leased uid)",
          seen["killrc"].strip() not in ("", "0"), seen["killrc"])
    orphan = host_pids_running(["sleep", "4747"])
    command = host_pids_running(["sleep", "3600"])
    check("its init is not PID 1 (NSpid one level: the host's) and an orphan comes back to it "
          "(a subreaper)", status_field(init, "NSpid") == [str(init)] and len(orphan) == 1 and
          parent_of(orphan[0]) == init, (status_field(init, "NSpid"), orphan, init))
    enforced = (state_of(rt, "hostpid") or {}).get("stockade", {}).get("enforced", {})
    check("state's record says the pid namespace is the caller's, the limits a cgroup's",
          enforced.get("pid") == "the caller's" and made and
          enforced.get("limits", "").startswith("cgroup"), (enforced, made))
    r = rt("exec", "hostpid", "sh", "-c", "readlink /proc/self/ns/pid")
    check("exec in it: the caller's pid namespace too",
          r.returncode == 0 and r.stdout.strip() == own_ns, (r.returncode, r.stdout, r.stderr))
    os.kill(init, signal.SIGKILL)
    check("init SIGKILLed from the host: its orphan and command end too, before any delete "
          "(the container's cgroup killed by the monitor)",
          wait_for(lambda: not host_pids_running(["sleep", "4747"]) and
                   not host_pids_running(["sleep", "3600"])),
          (host_pids_running(["sleep", "4747"]), host_pids_running(["sleep", "3600"]), command))
    wait_for(lambda: (state_of(rt, "hostpid") or {}).get("status") == "stopped")
    reap()
    r = rt("delete", "hostpid")
    check("...delete of it: its cgroup and directory go",
          r.returncode == 0 and not cgroup_dirs(rt, "hostpid") and
          not os.path.exists(os.path.join(rt.root, "hostpid")), (r.returncode, r.stderr))
    b = in_callers_pid_namespace(scratch, "host-pid-hook", ["true"], owner, base)
    with open(os.path.join(b, "config.json")) as f:
        config = json.load(f)
    config["hooks"] = {"createContainer": [{"path": BUSYBOX, "args": ["true"]}]}
    with open(os.path.join(b, "config.json"), "w") as f:
        json.dump(config, f)
    refused(rt, b, "hph", ["hooks.createContainer", "the caller's pid namespace"],
            "a createContainer hook in the caller's pid namespace is refused, naming it")


def cases(rt, scratch, owner, base, mode):
    out = os.path.join(scratch, "out")
    first = make_bundle(scratch, "first", ["sh", "-c", "sleep 4242 & wait"], owner, base)
    r = rt("create", "--bundle", first, "first")
    rt("start", "first")
    check("the first container runs (a pid namespace of its own)", r.returncode == 0, r.stderr)
    wait_for(lambda: host_pids_running(["sleep", "4242"]))
    first_init = (state_of(rt, "first") or {}).get("pid", 0)
    sleeper = host_pids_running(["sleep", "4242"])
    check("...its sleep 4242 is seen from the host", len(sleeper) == 1, sleeper)
    sleeper = sleeper[0] if sleeper else 0
    ns_path = f"/proc/{first_init}/ns/pid"

    if mode != "root":
        # uid 65534 cannot even open the first's /proc/N/ns (a non-dumpable
        # init); the refusal comes first, from the config.
        b = joining(scratch, "rootless-join", ["true"], owner, base, ns_path)
        refused(rt, b, "rl1", ["linux.namespaces (pid)", "rootless is not supported yet",
                               "cgroup of its own"],
                "rootless: joining a pid namespace is refused, naming why; nothing under --root")
    else:
        # The second container: what it sees, from inside.
        probe = ("readlink /proc/self/ns/pid > /out/pj-ns; ps -o pid,args > /out/pj-ps; "
                 "ls /proc > /out/pj-proc; "
                 "kill -0 $(cat /out/pj-target) 2> /out/pj-kill; echo $? > /out/pj-killrc")
        host_first_ns = os.readlink(f"/proc/{sleeper}/ns/pid")
        inner = status_field(sleeper, "NSpid")
        inner = inner[-1] if inner else "?"
        with open(os.path.join(out, "pj-target"), "w") as f:
            f.write(inner)
        b = joining(scratch, "second", ["sh", "-c", probe], owner, base, ns_path)
        r = rt("create", "--bundle", b, "second")
        check("create of a container joining the first's pid namespace by path",
              r.returncode == 0, r.stderr)
        second_init = (state_of(rt, "second") or {}).get("pid", 0)
        rt("start", "second")
        wait_for(lambda: (state_of(rt, "second") or {}).get("status") == "stopped")
        seen = {}
        for name in ("ns", "ps", "proc", "kill", "killrc"):
            try:
                with open(os.path.join(out, f"pj-{name}")) as f:
                    seen[name] = f.read()
            except OSError as e:
                seen[name] = str(e)
        ps_lines = [line.split(None, 1) for line in seen["ps"].splitlines()[1:]]
        check("inside: its pid namespace is the first's (readlink /proc/self/ns/pid)",
              seen["ns"].strip() == host_first_ns, (seen["ns"], host_first_ns))
        check("inside: ps shows the first's sleep 4242 at the pid the host reads in NSpid",
              [inner, "sleep 4242"] in [[x[0], x[1].strip()] for x in ps_lines if len(x) == 2], (inner, seen["ps"]))
        check("inside: /proc lists it", inner in seen["proc"].split(), seen["proc"])
        check("inside: the first's process cannot be signalled from it (another leased uid)",
              seen["killrc"].strip() != "0", seen)
        st = state_of(rt, "second") or {}
        enforced = st.get("stockade", {}).get("enforced", {})
        check("state's record says the pid namespace was joined",
              enforced.get("pid") == "joined" and enforced.get("limits", "").startswith("cgroup"),
              st)
        check("the second container's ending left the first's init and process running",
              os.path.exists(f"/proc/{sleeper}") and os.path.exists(f"/proc/{first_init}") and
              second_init != 0, (sleeper, first_init, second_init))
        made = cgroup_dirs(rt, "second")
        r = rt("delete", "second")
        check("delete of the joined container: its cgroup and directory go",
              r.returncode == 0 and made and not cgroup_dirs(rt, "second") and
              not os.path.exists(os.path.join(rt.root, "second")), (r.stderr, cgroup_dirs(rt, "second")))
        check("...and the first's process still runs", host_pids_running(["sleep", "4242"]) ==
              [sleeper])

        # An orphan comes back to init (its subreaper), not to the first's
        # PID 1; the command's end kills it, a straggler counted.
        b = joining(scratch, "orphan", ["sh", "-c", "(sleep 4343 &); sleep 3600 & wait"],
                    owner, base, ns_path)
        r = rt("create", "--bundle", b, "orphan")
        orphan_init = (state_of(rt, "orphan") or {}).get("pid", 0)
        rt("start", "orphan")
        wait_for(lambda: host_pids_running(["sleep", "4343"]))
        orphan = host_pids_running(["sleep", "4343"])
        check("an orphan of the joined container is its init's child (init is a subreaper), "
              "not the namespace's PID 1's",
              r.returncode == 0 and len(orphan) == 1 and parent_of(orphan[0]) == orphan_init,
              (r.stderr, orphan, orphan and parent_of(orphan[0]), orphan_init, first_init))
        # Joined at the first's command's namespace, beneath the first's
        # init's, where that command is PID 1 as runc's pause would be (the
        # path names the first's init, as the CRI plugin names the pod's).
        nspid = status_field(orphan_init, "NSpid")
        first_command = host_pids_running(["sh", "-c", "sleep 4242 & wait"])
        first_nspid = status_field(first_command[0], "NSpid") if first_command else []
        check("its init is not PID 1 of the namespace it joined, the first's command's, where "
              "that command is (the host reads their NSpid)",
              len(first_nspid) == 3 and first_nspid[-1] == "1" and len(nspid) == 3 and
              nspid[-1] != "1", (nspid, first_nspid, first_init))
        r = rt("exec", "orphan", "sh", "-c", "readlink /proc/self/ns/pid; ps -o args")
        check("exec in the joined container: in the first's pid namespace, sees its process",
              r.returncode == 0 and r.stdout.splitlines()[:1] == [host_first_ns] and
              "sleep 4242" in r.stdout.splitlines(), (r.returncode, r.stdout, r.stderr))
        r = rt("ps", "--format", "json", "orphan")
        listed = json.loads(r.stdout) if r.returncode == 0 else []
        check("ps lists init, the orphan and the command (from the container's cgroup)",
              orphan_init in listed and set(orphan) <= set(listed), (listed, orphan))
        # The command ends (its sleep 3600 killed from the host): init kills
        # the orphan, and says so.
        for pid in host_pids_running(["sleep", "3600"]):
            os.kill(pid, signal.SIGKILL)
        wait_for(lambda: (state_of(rt, "orphan") or {}).get("status") == "stopped")
        ending = (state_of(rt, "orphan") or {}).get("stockade", {}).get("ending", {})
        check("the command's end: init kills the orphan (one straggler in the record)",
              not host_pids_running(["sleep", "4343"]) and ending.get("stragglersKilled") == 1,
              ending)
        rt("delete", "orphan")
        check("...the first's process still runs", host_pids_running(["sleep", "4242"]) ==
              [sleeper])

        # init SIGKILLed: what it leaves is reparented to the first's PID 1;
        # the monitor kills the container's cgroup, before any delete.
        b = joining(scratch, "killed", ["sh", "-c", "(sleep 4444 &); exec sleep 3600"],
                    owner, base, ns_path)
        rt("create", "--bundle", b, "killed")
        killed_init = (state_of(rt, "killed") or {}).get("pid", 0)
        rt("start", "killed")
        wait_for(lambda: host_pids_running(["sleep", "4444"]))
        left = host_pids_running(["sleep", "4444"]) + host_pids_running(["sleep", "3600"])
        check("the third container's orphan and command run", len(left) == 2, left)
        os.kill(killed_init, signal.SIGKILL)
        check("init SIGKILLed from the host: its orphan and command end too, before any delete "
              "(the container's cgroup killed by the monitor)",
              wait_for(lambda: not any(host_pids_running(["sleep", s]) for s in ("4444", "3600"))),
              [host_pids_running(["sleep", s]) for s in ("4444", "3600")])
        check("...the first's process still runs", host_pids_running(["sleep", "4242"]) ==
              [sleeper])
        wait_for(lambda: (state_of(rt, "killed") or {}).get("status") == "stopped")
        r = rt("delete", "killed")
        check("...delete of it", r.returncode == 0 and not cgroup_dirs(rt, "killed"), r.stderr)

        # The same through kill and delete --force of a running one, whose
        # init is asked by the shim's kill.
        b = joining(scratch, "forced", ["sh", "-c", "(sleep 4545 &); exec sleep 3600"],
                    owner, base, ns_path)
        rt("create", "--bundle", b, "forced")
        rt("start", "forced")
        wait_for(lambda: host_pids_running(["sleep", "4545"]))
        r = rt("delete", "--force", "forced")
        check("delete --force of a running joined container: none of its processes left, its "
              "cgroup gone, the first's process alive",
              r.returncode == 0 and not host_pids_running(["sleep", "4545"]) and
              not host_pids_running(["sleep", "3600"]) and not cgroup_dirs(rt, "forced") and
              host_pids_running(["sleep", "4242"]) == [sleeper], r.stderr)

        # Killed whole at its end, so the cgroup must be the container's
        # own: one that exists (a scratch one the test makes, standing for a
        # service's or another container's) or the root is refused, and the
        # first's process runs on.
        existing = f"stockade-pidjoin-existing-{os.getpid()}"
        made = [f"/sys/fs/cgroup/{h}/{existing}" for h in ("pids", "unified")
                if os.path.isdir(f"/sys/fs/cgroup/{h}")] or [f"/sys/fs/cgroup/{existing}"]
        for d in made:
            os.mkdir(d)
        for name, cgroups_path, words in (
                ("shared-cg", "/" + existing, ["exists already"]),
                ("root-cg", "/", ["names the root cgroup"])):
            b = joining(scratch, name, ["true"], owner, base, f"/proc/{first_init}/ns/pid")
            with open(os.path.join(b, "config.json")) as f:
                config = json.load(f)
            config["linux"]["cgroupsPath"] = cgroups_path
            with open(os.path.join(b, "config.json"), "w") as f:
                json.dump(config, f)
            refused(rt, b, name, words,
                    f"a joining container's cgroupsPath {cgroups_path!r} is refused")
        check("...the first's process still runs after both",
              host_pids_running(["sleep", "4242"]) == [sleeper])
        for d in made:
            os.rmdir(d)

        # The path is judged on the fd opened once.
        b = joining(scratch, "not-pid", ["true"], owner, base, f"/proc/{first_init}/ns/net")
        refused(rt, b, "np", ["linux.namespaces (pid)", "is not a pid namespace"],
                "a path that is a network namespace is refused as the pid one")
        os.symlink(f"/proc/{first_init}/ns/ipc", os.path.join(scratch, "swapped"))
        b = joining(scratch, "via-link", ["true"], owner, base, os.path.join(scratch, "swapped"))
        refused(rt, b, "vl", ["is not a pid namespace"],
                "a link to an ipc namespace is judged by what was opened")
        # The caller's own, named by path (a hostPID pod's containers name
        # the pause's, which is the node's): built as a config listing
        # none, below; here create takes it (this test runs in the host's,
        # so /proc/1/ns/pid is the same one, or root may not open it: no
        # CAP_SYS_PTRACE on these machines).
        own_ns = os.readlink("/proc/self/ns/pid")
        for name, path in (("self-pid", "/proc/self/ns/pid"), ("host-pid", "/proc/1/ns/pid")):
            b = joining(scratch, name, ["sh", "-c", f"readlink /proc/self/ns/pid > /out/{name}"],
                        owner, base, path)
            r = rt("create", "--bundle", b, name)
            if r.returncode == 0:
                rt("start", name)
                wait_for(lambda: (state_of(rt, name) or {}).get("status") == "stopped")
                try:
                    with open(os.path.join(out, name)) as f:
                        inside = f.read().strip()
                except OSError as e:
                    inside = str(e)
                reap()
                d = rt("delete", name)
                check(f"the caller's own pid namespace joined by path ({path}): the container's "
                      "command in it, deleted after",
                      inside == own_ns and d.returncode == 0 and
                      not os.path.exists(os.path.join(rt.root, name)), (inside, d.stderr))
            else:
                check(f"the caller's own pid namespace joined by path ({path}): only an open "
                      "root may not make is refused", path == "/proc/1/ns/pid" and
                      'open("/proc/1/ns/pid"): EACCES' in r.stderr and
                      not os.path.exists(os.path.join(rt.root, name)), r.stderr)

        # A pid namespace whose init has ended (kept by a bind of its nsfs
        # file, in a mount namespace of this case's own): no process can be
        # born in it, which create names.
        holder = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", "sleep", "4646"])
        wait_for(lambda: host_pids_running(["sleep", "4646"]))
        dead = os.path.join(scratch, "dead-pidns")
        open(dead, "w").close()
        b = joining(scratch, "dead", ["true"], owner, base, dead)
        script = (f"mount --bind /proc/{holder.pid}/ns/pid_for_children {dead} && "
                  f"kill -9 {holder.pid} && while [ -n \"$(pgrep -x -f 'sleep 4646')\" ]; do "
                  f"sleep 0.05; done && {rt.binary} --root {rt.root} create --bundle {b} dead")
        r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                           capture_output=True, text=True, timeout=60)
        holder.wait()
        check("a pid namespace whose init has ended is refused, naming that; nothing left",
              r.returncode != 0 and "its init has ended" in r.stderr and
              not os.path.exists(os.path.join(rt.root, "dead")), (r.returncode, r.stderr))

    # mount, user and cgroup joins: refused by name, both modes.
    for ns_type, why in (("mount", "mount namespace of its own"),
                         ("user", "never host root"),
                         ("cgroup", "cgroup namespace of its own")):
        b = joining(scratch, f"join-{ns_type}", ["true"], owner, base, f"/proc/{first_init}/ns/"
                    + {"mount": "mnt"}.get(ns_type, ns_type), ns_type)
        refused(rt, b, f"j{ns_type}", [f"joining a {ns_type} namespace is not supported yet", why],
                f"joining a {ns_type} namespace by path is refused, naming why")

    # The first's init, PID 1 of the namespace, ends only once every
    # process of it is reaped (zap_pid_ns_processes): the joined ones'
    # inits are this script's children, reaped here as a shim reaps them.
    reap()
    r = rt("delete", "--force", "first")
    check("the first container deleted", r.returncode == 0, r.stderr)
    check("nothing of either container runs", wait_for(
        lambda: not any(host_pids_running(["sleep", s])
                        for s in ("4242", "4343", "4444", "4545", "3600"))))
    check("nothing left under --root", os.listdir(rt.root) == [], os.listdir(rt.root))


def main():
    binary, mode = sys.argv[1], sys.argv[2]
    if os.geteuid() != 0:
        skip("the suite runs as root (rootless cases demote to uid 65534)")
    if not os.path.exists(BUSYBOX):
        skip("busybox-static is not installed (scripts/install-deps.sh test)")
    become_subreaper()
    scratch = tempfile.mkdtemp(prefix="stockade-pidjoin-", dir="/var/tmp")
    os.chmod(scratch, 0o755)
    owner = 0 if mode == "root" else 65534
    rt = None
    try:
        rt, _, base = make_test_tree(scratch, owner, binary, mode, APPLETS)
        if base is not None:
            cases(rt, scratch, owner, base, mode)
            callers_pid_namespace(rt, scratch, owner, base, mode)
    finally:
        if rt is not None:
            for cid in os.listdir(rt.root) if os.path.isdir(rt.root) else []:
                rt("delete", "--force", cid)
        reap()
        shutil.rmtree(scratch, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
