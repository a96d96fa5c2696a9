#!/usr/bin/env python3
"""linux.personality and linux.resources.cpu.cpus/mems under stockade
(issue 19), on a busybox-static rootfs, as root or uid 65534.

usage: persona_cpuset.py STOCKADE root|rootless

The persona: the container's command runs with the domain asked (`uname
-m` inside says i686 under LINUX32, x86_64 under LINUX; the host reads the
command's /proc/PID/personality: the domain and no flag), under the
stockade profile's filter too, and as root an `exec` process has it;
flags and unknown domains are refused naming the field, leaving nothing.
The cpuset (root): the list asked is the command's affinity inside
(Cpus_allowed_list), the leaf's cpuset.cpus and cpuset.mems on the host,
changed by `update`, removed by `delete`; a leaf asked only mems gets its
parent's CPUs; bad lists refused before anything is made. Rootless, where
no cgroup of its own holds a limit, a cpuset is refused by name. Exit 77
(a skip) when the host cannot run a mode, which CI (env CI=true) turns
into a failure.
"""
import json
import os
import shutil
import sys
import tempfile

from lifecycle import (become_subreaper, check, make_bundle, make_test_tree, state_of,
                       wait_for)
from oci_common import BUSYBOX, V1_CONTROLLERS, finish, host_pids_running, skip, status_field

CGROUP = "/sys/fs/cgroup"


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError as e:
        return f"<{e.strerror}>"


def children(pid):
    text = read(f"/proc/{pid}/task/{pid}/children")
    return [int(c) for c in text.split()] if not text.startswith("<") else []


def with_linux(base, **fields):
    config = json.loads(json.dumps(base))
    config["linux"].update(fields)
    return config


def started(rt, scratch, owner, config, cid, args, pid_file):
    """create and start; the init's pid, or 0 (checked)."""
    bundle = make_bundle(scratch, cid, args, owner, config)
    r = rt("create", "--bundle", bundle, "--pid-file", pid_file, cid)
    check(f"{cid}: create", r.returncode == 0, r.stderr)
    if r.returncode != 0:
        return 0
    r = rt("start", cid)
    check(f"{cid}: start", r.returncode == 0, r.stderr)
    return int(read(pid_file)) if read(pid_file).isdigit() else 0


def refused(rt, scratch, owner, config, cid, field, mode):
    """create fails with runc's exit status, naming `field`, and leaves
    nothing: no directory under --root, no process of the command."""
    argv = ["sleep", str(4000 + len(cid))]
    bundle = make_bundle(scratch, cid, argv, owner, config)
    r = rt("create", "--bundle", bundle, cid)
    check(f"{cid}: refused naming {field} ({mode}), exit 1 as runc's errors",
          r.returncode == 1 and field in r.stderr and r.stderr.count("\n") <= 2, r.stderr)
    check(f"{cid}: nothing left under --root, no process",
          os.listdir(rt.root) == [] and host_pids_running(argv) == [],
          (os.listdir(rt.root), host_pids_running(argv)))


def persona_cases(rt, scratch, owner, base, out, mode):
    # A spec filter that refuses personality(2) outright.
    deny = {"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_X86_64"],
            "syscalls": [{"names": ["personality"], "action": "SCMP_ACT_ERRNO"}]}
    for cid, domain, machine, persona, filtered in [
            ("p32", "LINUX32", "i686", "00000008", None),
            ("p64", "LINUX", "x86_64", "00000000", None),
            ("p32prof", "LINUX32", "i686", "00000008", "the stockade profile"),
            ("p32deny", "LINUX32", "i686", "00000008", "a spec filter refusing personality")]:
        config = with_linux(base, personality={"domain": domain, "flags": []})
        # Under a filter the persona is taken before it is installed, so
        # the filter need not allow personality(2).
        if filtered == "the stockade profile":
            config.setdefault("annotations", {})["run.oci.stockade.profile"] = "default"
            config["process"].pop("capabilities", None)  # the profile gives none
        elif filtered:
            config["linux"]["seccomp"] = deny
        mark = os.path.join(out, cid)
        init = started(rt, scratch, owner, config, cid,
                       ["sh", "-c", f"uname -m > /out/{cid}.tmp; mv /out/{cid}.tmp /out/{cid}; "
                        "exec sleep 1000"], os.path.join(out, cid + ".pid"))
        if not init:
            continue
        wait_for(lambda: os.path.exists(mark))
        check(f"{cid}: {domain}{' under ' + filtered if filtered else ''}: uname -m "
              f"inside says {machine} ({mode})", read(mark) == machine, read(mark))
        command = children(init)
        if filtered:
            check(f"{cid}: the command runs under the filter (Seccomp: 2)",
                  len(command) == 1 and status_field(command[0], "Seccomp") == ["2"],
                  [status_field(c, "Seccomp") for c in command])
        check(f"{cid}: the host reads the command's persona {persona}: the domain, no flag "
              "(ASLR and the rest as the host's)",
              len(command) == 1 and read(f"/proc/{command[0]}/personality") == persona,
              (command, [read(f"/proc/{c}/personality") for c in command]))
        check(f"{cid}: init (stockade's, not the bundle's program) keeps the runtime's",
              read(f"/proc/{init}/personality") == "00000000", read(f"/proc/{init}/personality"))
        if mode == "root" and filtered != "the stockade profile":
            r = rt("exec", cid, "uname", "-m")
            check(f"{cid}: an exec process takes the container's domain: {machine}",
                  r.returncode == 0 and r.stdout.strip() == machine, (r.returncode, r.stdout,
                                                                      r.stderr))
        r = rt("delete", "--force", cid)
        check(f"{cid}: delete --force", r.returncode == 0, r.stderr)
    for cid, persona, field in [
            ("pflag", {"domain": "LINUX32", "flags": ["ADDR_NO_RANDOMIZE"]},
             "linux.personality.flags"),
            ("pflag2", {"domain": "LINUX", "flags": ["READ_IMPLIES_EXEC"]},
             "linux.personality.flags"),
            ("pflag3", {"domain": "LINUX32", "flags": ["ADDR_COMPAT_LAYOUT"]},
             "linux.personality.flags"),
            ("pdom", {"domain": "LINUX64"}, "linux.personality.domain"),
            ("pnodom", {"flags": []}, "linux.personality.domain")]:
        refused(rt, scratch, owner, with_linux(base, personality=persona), cid, field, mode)


def online_cpus():
    text = read("/sys/devices/system/cpu/online")
    cpus = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        cpus += list(range(int(a), int(b or a) + 1))
    return cpus


def cpuset_cases(rt, scratch, owner, base, out, mode):
    cpus = online_cpus()
    one = str(cpus[-1])  # the last online CPU: not the whole set on a host of two or more
    parent = f"stockade-oci-cpuset-{os.getpid()}"
    resources = {"cpu": {"cpus": one, "mems": "0"}}
    if mode == "rootless":
        refused(rt, scratch, owner, with_linux(base, resources=resources), "crootless",
                "linux.resources.cpu.cpus", mode)
        return
    v1 = not os.path.exists(f"{CGROUP}/cgroup.controllers")
    if v1 and not os.path.isdir(f"{CGROUP}/cpuset"):
        check("a cpuset hierarchy is mounted (cgroup v1)", False, os.listdir(CGROUP))
        return
    leaf = f"{CGROUP}/cpuset/{parent}/cs1" if v1 else f"{CGROUP}/{parent}/cs1"
    config = with_linux(base, cgroupsPath=f"/{parent}/cs1", resources=resources)
    mark = os.path.join(out, "cs1")
    init = started(rt, scratch, owner, config, "cs1",
                   ["sh", "-c", "grep Cpus_allowed_list /proc/self/status > /out/cs1.tmp; "
                    "mv /out/cs1.tmp /out/cs1; exec sleep 1000"], os.path.join(out, "cs1.pid"))
    if init:
        wait_for(lambda: os.path.exists(mark))
        check(f"cs1: cpus {one}: the command's Cpus_allowed_list inside is {one}",
              read(mark).split() == ["Cpus_allowed_list:", one], read(mark))
        check(f"cs1: the host's leaf {leaf} holds cpuset.cpus {one} and cpuset.mems 0",
              read(f"{leaf}/cpuset.cpus") == one and read(f"{leaf}/cpuset.mems") == "0",
              (read(f"{leaf}/cpuset.cpus"), read(f"{leaf}/cpuset.mems")))
        procs = read(f"{leaf}/cgroup.procs").split()
        check("cs1: init and its command sit in the leaf", str(init) in procs and len(procs) == 2,
              procs)
        check("cs1: the host reads init's affinity as the list",
              status_field(init, "Cpus_allowed_list") == [one],
              status_field(init, "Cpus_allowed_list"))
        other = str(cpus[0])
        r = rt("update", "--resources", "-", "cs1", input_text=json.dumps({"cpu": {"cpus": other}}))
        check(f"cs1: update --resources cpus {other}: the leaf's file and the command's affinity",
              r.returncode == 0 and read(f"{leaf}/cpuset.cpus") == other and
              [status_field(p, "Cpus_allowed_list") for p in children(init)] == [[other]],
              (r.stderr, read(f"{leaf}/cpuset.cpus"),
               [status_field(p, "Cpus_allowed_list") for p in children(init)]))
        r = rt("update", "--resources", "-", "cs1", input_text=json.dumps({"cpu": {"cpus": "0-"}}))
        check("cs1: update with a malformed list refused naming the field, the leaf unchanged",
              r.returncode != 0 and "linux.resources.cpu.cpus" in r.stderr and
              read(f"{leaf}/cpuset.cpus") == other, (r.stderr, read(f"{leaf}/cpuset.cpus")))
        r = rt("delete", "--force", "cs1")
        check("cs1: delete removes the cpuset leaf", r.returncode == 0 and
              not os.path.exists(leaf), (r.stderr, os.path.exists(leaf)))
    # mems alone: a v1 leaf gets its parent's CPUs, or no task could join.
    config = with_linux(base, cgroupsPath=f"/{parent}/cs2", resources={"cpu": {"mems": "0"}})
    leaf2 = leaf[:-1] + "2"
    init = started(rt, scratch, owner, config, "cs2", ["sleep", "1000"],
                   os.path.join(out, "cs2.pid"))
    if init:
        want = read(f"{CGROUP}/cpuset/{parent}/cpuset.cpus") if v1 else \
            read(f"{CGROUP}/{parent}/cpuset.cpus.effective")
        check("cs2: mems only: the leaf's CPUs are its parent's, init in it",
              read(f"{leaf2}/cpuset.cpus" if v1 else f"{leaf2}/cpuset.cpus.effective") == want and
              want not in ("", None) and str(init) in read(f"{leaf2}/cgroup.procs").split(),
              (want, read(f"{leaf2}/cpuset.cpus"), read(f"{leaf2}/cgroup.procs")))
        rt("delete", "--force", "cs2")
        check("cs2: delete removes the leaf", not os.path.exists(leaf2), leaf2)
    # A container made without a cpuset asked: update gives it one, as
    # under runc (v1: create made its cpuset directory anyway, the parent's
    # CPUs; v2: the controller is enabled down to it then). The binary
    # before refused it. From the host: the leaf's cpuset.cpus and the
    # command's affinity.
    config = with_linux(base, cgroupsPath=f"/{parent}/cs3", resources={"pids": {"limit": 20}})
    pids3 = f"{CGROUP}/pids/{parent}/cs3" if v1 else f"{CGROUP}/{parent}/cs3"
    cpuset3 = f"{CGROUP}/cpuset/{parent}/cs3" if v1 else f"{CGROUP}/{parent}/cs3"
    if started(rt, scratch, owner, config, "cs3", ["sleep", "1000"], os.path.join(out, "cs3.pid")):
        init3 = (state_of(rt, "cs3") or {}).get("pid", 0)
        r = rt("update", "--resources", "-", "cs3",
               input_text=json.dumps({"pids": {"limit": 30}, "cpu": {"cpus": one}}))
        kids3 = read(f"/proc/{init3}/task/{init3}/children").split()
        affinity = [" ".join(status_field(p, "Cpus_allowed_list") or []) for p in
                    (init3, *kids3)]
        check("cs3: update gives cpus to a container made without a cpuset (the leaf's "
              "cpuset.cpus, init's and the command's affinity), and pids.max",
              r.returncode == 0 and read(f"{cpuset3}/cpuset.cpus") == one and
              read(f"{pids3}/pids.max") == "30" and len(affinity) == 2 and
              set(affinity) == {one},
              (r.stderr, read(f"{cpuset3}/cpuset.cpus"), read(f"{pids3}/pids.max"), affinity))
        rt("delete", "--force", "cs3")
        check("cs3: delete removes the cpuset leaf", not os.path.exists(cpuset3), cpuset3)
    for cid, bad in [("cbad1", "0-"), ("cbad2", "a"), ("cbad3", str(max(cpus) + 1)),
                     ("cbad4", "8191")]:
        leaf_bad = leaf[: -len("cs1")] + cid
        refused(rt, scratch, owner,
                with_linux(base, cgroupsPath=f"/{parent}/{cid}",
                           resources={"cpu": {"cpus": bad}}), cid, "linux.resources.cpu.cpus",
                mode)
        made = [p for p in (leaf_bad, f"{CGROUP}/memory/{parent}/{cid}",
                            f"{CGROUP}/pids/{parent}/{cid}") if os.path.exists(p)]
        check(f"{cid}: cpus \"{bad}\": no cgroup made", made == [], made)
    refused(rt, scratch, owner, with_linux(base, cgroupsPath=f"/{parent}/cbad5",
                                           resources={"cpu": {"mems": "4000"}}),
            "cbad5", "linux.resources.cpu.mems", mode)
    for c in V1_CONTROLLERS if v1 else ("",):
        try:
            os.rmdir(f"{CGROUP}/{c}/{parent}".replace("//", "/"))
        except OSError:
            pass


def main():
    binary, mode = sys.argv[1], sys.argv[2]
    if os.geteuid() != 0:
        skip("the suite runs as root (rootless cases demote to uid 65534)")
    if not os.path.exists(BUSYBOX):
        skip("busybox-static is not installed (scripts/install-deps.sh test)")
    if os.uname().machine != "x86_64":
        skip("the persona cases expect x86_64 (LINUX32 is i686)")
    become_subreaper()
    scratch = tempfile.mkdtemp(prefix="stockade-oci-persona-", dir="/var/tmp")
    os.chmod(scratch, 0o755)
    owner = 0 if mode == "root" else 65534
    try:
        rt, out, base = make_test_tree(scratch, owner, binary, mode,
                                       ["sh", "sleep", "uname", "grep", "mv"])
        if base is None:
            sys.exit(1)
        persona_cases(rt, scratch, owner, base, out, mode)
        cpuset_cases(rt, scratch, owner, base, out, mode)
        check("nothing left under --root", os.listdir(rt.root) == [], os.listdir(rt.root))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
