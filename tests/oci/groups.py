#!/usr/bin/env python3
"""Supplementary groups in an OCI container (process.user.additionalGids,
docs/oci.md "Supplementary groups"): as root the runtime takes them as the
host gids the container's map gives them before the clone; the container's
user namespace allows setgroups as under runc, or, under the annotation
run.oci.stockade.setgroups "deny", denies it, so that no process of it can
drop one; rootless they are refused by name. As root or as uid 65534.

usage: groups.py STOCKADE root|rootless

Inside, `id -G`, /proc/self/status and stockade-groups-probe (a file of mode
0604 whose group is one of the container's: it must stay unreadable, through
setgroups and through a user namespace made beneath) say what the kernel
answered; from the host, /proc/PID/status, /proc/PID/setgroups and the
file's owner and mode. Exit 77 (a skip) when the host cannot run a mode,
which CI turns into a failure.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from oci_common import BUSYBOX, finish, skip, status_field
from lifecycle import (Runtime, become_subreaper, make_test_tree, check, make_bundle,
                       state_of, wait_for)

# As root, an explicit block, so that the test can make the host's file of
# the container's group before create: container ids 0..65535 are host
# BASE.., well away from the lease range and from any real id.
BASE = 1_500_000_000


def read_out(scratch, name):
    try:
        with open(os.path.join(scratch, "out", name)) as f:
            return f.read()
    except OSError as e:
        return f"unreadable: {e}"


def command_pid(init_pid):
    """The container's command: init's one child."""
    try:
        with open(f"/proc/{init_pid}/task/{init_pid}/children") as f:
            kids = f.read().split()
        return int(kids[0]) if kids else None
    except OSError:
        return None


def with_user(base, uid, gid, groups, caps=()):
    config = json.loads(json.dumps(base))
    config["process"]["user"] = {"uid": uid, "gid": gid}
    if groups is not None:
        config["process"]["user"]["additionalGids"] = groups
    names = list(caps)
    config["process"]["capabilities"] = {s: names for s in
                                         ("bounding", "effective", "permitted", "inheritable",
                                          "ambient")}
    return config


PROBE_SCRIPT = ("id -G > /out/{n}.id; grep Groups /proc/self/status > /out/{n}.status; "
                "stockade-groups-probe /out/neg > /out/{n}.probe; touch /out/{n}.done; "
                "exec sleep 1000")


def root_cases(rt, scratch, base, state_root):
    out = os.path.join(scratch, "out")
    mapped = json.loads(json.dumps(base))
    mapped["linux"]["uidMappings"] = [{"containerID": 0, "hostID": BASE, "size": 65536}]
    mapped["linux"]["gidMappings"] = [{"containerID": 0, "hostID": BASE, "size": 65536}]
    # The negative permission: owned by the container's root, group 2000,
    # others may read, the group may not.
    neg = os.path.join(out, "neg")
    with open(neg, "w") as f:
        f.write("secret\n")
    os.chown(neg, BASE, BASE + 2000)
    os.chmod(neg, 0o604)

    # Control: without the group, the file is readable (others' bit).
    bundle = make_bundle(scratch, "g0", ["sh", "-c", PROBE_SCRIPT.format(n="g0")], 0,
                         with_user(mapped, 1000, 1000, None, ["CAP_SETGID"]))
    r = rt("create", "--bundle", bundle, "g0")
    check("control: create without additionalGids", r.returncode == 0, r.stderr)
    rt("start", "g0")
    check("control: the probe ran", wait_for(lambda: os.path.exists(os.path.join(out, "g0.done"))))
    probe = read_out(scratch, "g0.probe")
    check("control: with no group of the file's, it is readable (the 0604's others bit)",
          probe.splitlines()[:2] == ["groups", "read ok"], probe)
    rt("delete", "--force", "g0")

    # The groups asked, with CAP_SETGID in the container's namespace, under
    # the annotation asking setgroups denied: no way to drop one.
    g1 = with_user(mapped, 1000, 1000, [2000, 3000], ["CAP_SETGID"])
    g1["annotations"] = {"run.oci.stockade.setgroups": "deny"}
    # create's hooks run from the runtime after the clone: with its own
    # groups again (none: the script dropped its own), not the container's.
    g1["hooks"] = {"createRuntime": [{"path": "/bin/sh", "args": [
        "sh", "-c", f"grep Groups /proc/self/status > {out}/g1.hook"]}]}
    bundle = make_bundle(scratch, "g1", ["sh", "-c", PROBE_SCRIPT.format(n="g1")], 0, g1)
    r = rt("create", "--bundle", bundle, "g1")
    check("groups: create with additionalGids [2000, 3000]", r.returncode == 0, r.stderr)
    rt("start", "g1")
    check("groups: the probe ran", wait_for(lambda: os.path.exists(os.path.join(out, "g1.done"))))
    check("groups: inside, id -G is the gid and exactly the groups asked",
          read_out(scratch, "g1.id") == "1000 2000 3000\n", read_out(scratch, "g1.id"))
    check("groups: inside, /proc/self/status Groups: lists exactly them",
          read_out(scratch, "g1.status").split() == ["Groups:", "2000", "3000"],
          read_out(scratch, "g1.status"))
    probe = read_out(scratch, "g1.probe").splitlines()
    expected = ["groups 2000 3000",
                "read errno=EACCES",            # the group's bits: none
                "setgroups errno=EPERM",        # even with CAP_SETGID: the namespace denies it
                "read errno=EACCES",
                "nested unshare ok",            # a user namespace beneath is allowed...
                "nested setgroups-allow errno=EPERM",  # ...but inherits "deny"
                "nested gid_map ok",
                "nested uid_map ok",
                "nested setgroups errno=EPERM",  # root of its own namespace, still refused
                "nested read errno=EACCES"]
    check("groups: the 0604 file of group 2000 stays unreadable, setgroups refused (EPERM) "
          "directly and from a user namespace made beneath",
          sorted(probe) == sorted(expected) and probe[:4] == expected[:4], probe)
    st = state_of(rt, "g1") or {}
    cmd = command_pid(st.get("pid", 0))
    check("groups: from the host, the command's Groups are the host gids of 2000 and 3000",
          cmd is not None and status_field(cmd, "Groups") == [str(BASE + 2000), str(BASE + 3000)],
          (cmd, cmd and status_field(cmd, "Groups")))
    check("groups: from the host, init's too (it set them up and holds nothing more)",
          status_field(st.get("pid", 0), "Groups") == [str(BASE + 2000), str(BASE + 3000)],
          status_field(st.get("pid", 0), "Groups"))
    check("groups: create's hook ran with the runtime's own groups (none), not the container's",
          read_out(scratch, "g1.hook").split() == ["Groups:"], read_out(scratch, "g1.hook"))
    monitor = (st.get("stockade") or {}).get("monitorPid", 0)
    check("groups: the monitor, forked by create after the clone, holds none of them",
          monitor and os.path.exists(f"/proc/{monitor}") and status_field(monitor, "Groups") == [],
          (monitor, status_field(monitor, "Groups")))
    try:
        with open(f"/proc/{cmd}/setgroups") as f:
            denied = f.read()
    except (OSError, TypeError) as e:
        denied = str(e)
    check("groups: from the host, the container's user namespace denies setgroups, and the "
          "record says so",
          denied == "deny\n" and st.get("stockade", {}).get("enforced", {}).get("setgroups") ==
          "deny", (denied, st.get("stockade", {}).get("enforced")))
    s = os.stat(neg)
    check("groups: from the host, the file is as made (0604, its owner and group)",
          (s.st_mode & 0o7777, s.st_uid, s.st_gid) == (0o604, BASE, BASE + 2000),
          (oct(s.st_mode), s.st_uid, s.st_gid))

    # exec: a process with groups of its own, set the same way.
    proc = os.path.join(scratch, "g1-exec.json")
    process = json.loads(json.dumps(with_user(mapped, 1000, 1000, [3000], ["CAP_SETGID"])["process"]))
    process["args"] = ["sh", "-c", "id -G; grep Groups /proc/self/status; "
                       "stockade-groups-probe /out/neg"]
    with open(proc, "w") as f:
        json.dump(process, f)
    r = rt("exec", "--process", proc, "g1")
    lines = [line.rstrip() for line in r.stdout.splitlines()]
    check("exec: id -G and Groups: are exactly its own groups",
          r.returncode == 0 and lines[:2] == ["1000 3000", "Groups:\t3000"],
          (r.returncode, r.stdout, r.stderr))
    check("exec: not in group 2000, the file opens; setgroups still EPERM",
          "read ok" in lines and "setgroups errno=EPERM" in lines, lines)
    process["user"]["additionalGids"] = [2000]
    with open(proc, "w") as f:
        json.dump(process, f)
    r = rt("exec", "--process", proc, "g1")
    lines = r.stdout.splitlines()
    check("exec: with group 2000 the file stays closed, through both ways",
          r.returncode == 0 and lines.count("read errno=EACCES") == 2 and
          "nested read errno=EACCES" in lines and "setgroups errno=EPERM" in lines, lines)
    process["user"]["additionalGids"] = [70000]
    with open(proc, "w") as f:
        json.dump(process, f)
    r = rt("exec", "--process", proc, "g1")
    check("exec: a gid the container's map does not hold is refused by name (runc's 255 and "
          "'exec failed:')",
          r.returncode == 255 and
          "exec failed: process.json: process.user.additionalGids: gid 70000 is not mapped"
          in r.stderr and len(json.loads(rt("ps", "--format", "json", "g1").stdout)) == 2,
          (r.returncode, r.stderr))
    r = rt("delete", "--force", "g1")
    check("groups: delete", r.returncode == 0 and os.listdir(state_root) == [], r.stderr)

    # By default, as runc leaves it: the namespace allows setgroups, so a
    # process holding CAP_SETGID there may change its groups (apt's sandbox,
    # su, setpriv, gosu, nginx's initgroups need it), and dropping group 2000
    # passes the 0604 of a file of the container's own gid; one without the
    # capability may not. From the host: "allow", and the record says so.
    g3 = with_user(mapped, 1000, 1000, [2000, 3000], ["CAP_SETGID"])
    bundle = make_bundle(scratch, "g3", ["sh", "-c", PROBE_SCRIPT.format(n="g3")], 0, g3)
    r = rt("create", "--bundle", bundle, "g3")
    rt("start", "g3")
    ran = r.returncode == 0 and wait_for(lambda: os.path.exists(os.path.join(out, "g3.done")))
    probe = read_out(scratch, "g3.probe").splitlines()
    st = state_of(rt, "g3") or {}
    cmd = command_pid(st.get("pid", 0))
    try:
        with open(f"/proc/{cmd}/setgroups") as f:
            allowed = f.read()
    except (OSError, TypeError) as e:
        allowed = str(e)
    check("groups by default: setgroups allowed as under runc (CAP_SETGID drops group 2000, and "
          "the file of the container's own gid opens), \"allow\" from the host and in the record",
          ran and read_out(scratch, "g3.id") == "1000 2000 3000\n" and
          probe[:4] == ["groups 2000 3000", "read errno=EACCES", "setgroups ok", "read ok"] and
          allowed == "allow\n" and
          st.get("stockade", {}).get("enforced", {}).get("setgroups") == "allow",
          (r.returncode, r.stderr, probe, allowed, st.get("stockade", {}).get("enforced")))
    process = json.loads(json.dumps(with_user(mapped, 1000, 1000, [2000], [])["process"]))
    process["args"] = ["stockade-groups-probe", "/out/neg"]
    proc = os.path.join(scratch, "g3-exec.json")
    with open(proc, "w") as f:
        json.dump(process, f)
    r = rt("exec", "--process", proc, "g3")
    lines = r.stdout.splitlines()
    check("groups by default: a process without CAP_SETGID cannot drop one (EPERM)",
          r.returncode == 0 and lines[:4] == ["groups 2000", "read errno=EACCES",
                                              "setgroups errno=EPERM", "read errno=EACCES"],
          (r.returncode, lines, r.stderr))
    rt("delete", "--force", "g3")
    r = rt("create", "--bundle", make_bundle(
        scratch, "g4", ["true"], 0,
        dict(g3, annotations={"run.oci.stockade.setgroups": "sometimes"})), "g4")
    check("the setgroups annotation: a value but allow or deny refused by name, nothing left",
          r.returncode != 0 and "run.oci.stockade.setgroups" in r.stderr and
          os.listdir(state_root) == [], (r.returncode, r.stderr, os.listdir(state_root)))

    # The lease (no mappings): the groups are the lease's host gids.
    bundle = make_bundle(scratch, "g2", ["sh", "-c", "id -G > /out/g2.id; touch /out/g2.done; "
                                         "exec sleep 1000"], 0,
                         with_user(base, 1000, 1000, [1000, 4000], []))
    r = rt("create", "--bundle", bundle, "g2")
    check("lease: create with additionalGids [1000, 4000]", r.returncode == 0, r.stderr)
    rt("start", "g2")
    wait_for(lambda: os.path.exists(os.path.join(out, "g2.done")))
    st = state_of(rt, "g2") or {}
    gid = status_field(st.get("pid", 0), "Gid")
    groups = status_field(st.get("pid", 0), "Groups")
    first = int(gid[0]) - 1000 if gid else -1
    check("lease: inside, id -G is 1000 4000", read_out(scratch, "g2.id") == "1000 4000\n",
          read_out(scratch, "g2.id"))
    check("lease: from the host, Groups are the leased block's gids for 1000 and 4000",
          first > 0 and groups == [str(first + 1000), str(first + 4000)], (gid, groups))
    rt("delete", "--force", "g2")

    # Refusals: by name, nothing left under --root, no process.
    cases = [
        ("a gid past the block", with_user(mapped, 1000, 1000, [65536], []),
         "config.json: process.user.additionalGids: gid 65536 is not mapped"),
        ("a gid beside a one-id mapping",
         dict(with_user(base, 1000, 1000, [2000], []),
              linux=dict(base["linux"], uidMappings=[{"containerID": 1000, "hostID": BASE, "size": 1}],
                         gidMappings=[{"containerID": 1000, "hostID": BASE, "size": 1}])),
         "config.json: process.user.additionalGids: gid 2000 is not mapped"),
        ("crun's keep_original_groups as root",
         dict(with_user(mapped, 1000, 1000, [2000], []),
              annotations={"run.oci.keep_original_groups": "1"}),
         "config.json: annotations.run.oci.keep_original_groups: refused as root"),
    ]
    for i, (what, config, words) in enumerate(cases):
        bundle = make_bundle(scratch, f"bad{i}", ["true"], 0, config)
        r = rt("create", "--bundle", bundle, f"bad{i}")
        check(f"refused: {what}, by name, nothing left",
              r.returncode == 1 and words in r.stderr and os.listdir(state_root) == [],
              (r.returncode, r.stderr, os.listdir(state_root)))


def rootless_cases(rt, scratch, base, state_root, binary):
    out = os.path.join(scratch, "out")
    config = json.loads(json.dumps(base))
    config["process"]["user"]["additionalGids"] = [2000]
    bundle = make_bundle(scratch, "r1", ["true"], 65534, config)
    r = rt("create", "--bundle", bundle, "r1")
    check("rootless: additionalGids [2000] refused, naming the field and why",
          r.returncode == 1 and "process.user.additionalGids: gid 2000" in r.stderr and
          "rootless" in r.stderr and "setgroups" in r.stderr and os.listdir(state_root) == [],
          (r.returncode, r.stderr, os.listdir(state_root)))

    # Its own gid only: nothing to set, taken as before.
    config["process"]["user"]["additionalGids"] = [config["process"]["user"].get("gid", 0)]
    bundle = make_bundle(scratch, "r2", ["sh", "-c", "id -G > /out/r2.id"], 65534, config)
    r = rt("create", "--bundle", bundle, "r2")
    check("rootless: additionalGids holding only its own gid is taken", r.returncode == 0, r.stderr)
    rt("start", "r2")
    check("rootless: ...and runs, id -G its own gid",
          wait_for(lambda: read_out(scratch, "r2.id") == "0\n"), read_out(scratch, "r2.id"))
    wait_for(lambda: (state_of(rt, "r2") or {}).get("status") == "stopped")
    rt("delete", "--force", "r2")

    # crun's keep_original_groups: the caller's groups, which rootless
    # nothing can drop, are kept and said; additionalGids not set. The
    # runtime runs with a supplementary group of its own (65533).
    def demote_with_group():
        os.setgroups([65533])
        os.setresgid(65534, 65534, 65534)
        os.setresuid(65534, 65534, 65534)

    grouped = Runtime(binary, state_root, "rootless")
    config["process"]["user"]["additionalGids"] = [2000]
    config["annotations"] = {"run.oci.keep_original_groups": "1"}
    bundle = make_bundle(scratch, "r3", ["sh", "-c", "grep Groups /proc/self/status > /out/r3.status;"
                                         " touch /out/r3.done; exec sleep 1000"], 65534, config)
    argv = [binary, "--root", state_root, "create", "--bundle", bundle, "r3"]
    with tempfile.TemporaryFile("w+") as err:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                           timeout=120, preexec_fn=demote_with_group)
        err.seek(0)
        err_text = err.read()
    check("rootless keep_original_groups: create takes it", p.returncode == 0, err_text)
    grouped("start", "r3")
    check("rootless keep_original_groups: ran", wait_for(lambda: os.path.exists(
        os.path.join(out, "r3.done"))))
    st = state_of(grouped, "r3") or {}
    check("rootless keep_original_groups: inside, only the caller's group, unmapped (65534); "
          "2000 not set", read_out(scratch, "r3.status").split() == ["Groups:", "65534"],
          read_out(scratch, "r3.status"))
    check("rootless keep_original_groups: from the host, the caller's 65533",
          status_field(st.get("pid", 0), "Groups") == ["65533"],
          status_field(st.get("pid", 0), "Groups"))
    grouped("delete", "--force", "r3")
    check("rootless: nothing left", os.listdir(state_root) == [], os.listdir(state_root))


def main():
    binary, mode = sys.argv[1], sys.argv[2]
    if os.geteuid() != 0:
        skip("the suite runs as root (rootless cases demote to uid 65534)")
    if not os.path.exists(BUSYBOX):
        skip("busybox-static is not installed (scripts/install-deps.sh test)")
    probes = os.path.join(os.path.dirname(os.path.dirname(binary)), "probe")
    if not os.path.exists(os.path.join(probes, "stockade-groups-probe")):
        probes = os.path.join(os.path.dirname(binary), "tests")
    become_subreaper()
    scratch = tempfile.mkdtemp(prefix="stockade-oci-groups-", dir="/var/tmp")
    os.chmod(scratch, 0o755)
    owner = 0 if mode == "root" else 65534
    try:
        rt, _, base = make_test_tree(scratch, owner, binary, mode,
                                     ["sh", "sleep", "true", "id", "grep", "touch"],
                                     [os.path.join(probes, "stockade-groups-probe")])
        if base is None:
            sys.exit(1)
        base["process"].pop("capabilities", None)
        if mode == "root":
            # The runtime's own groups are then none: what it must come back
            # to after the clone (its hooks and monitor are checked).
            os.setgroups([])
            root_cases(rt, scratch, base, rt.root)
        else:
            rootless_cases(rt, scratch, base, rt.root, binary)
        for cid in os.listdir(rt.root):
            rt("delete", "--force", cid)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
