#!/usr/bin/env python3
"""Denials by name in an OCI container's record (docs/oci.md, "Denials by
name"): the detached monitor holds the filter's seccomp listener, answers
each refused call with the policy's errno and counts it by name in the
record, which `state` shows until delete. As root or as uid 65534.

usage: denials.py STOCKADE root|rootless

Each case asserts the kernel's answer seen inside the container (the
stockade-try-syscall and stockade-refusal-flood probes, copied into the
rootfs) and the host's side (`state`, the record's size, the monitor).
Exit 77 (a skip) when the host cannot run a mode, which CI turns into a
failure.
"""
import json
import os
import shutil
import signal
import sys
import tempfile

from oci_common import BUSYBOX, finish, skip
from lifecycle import (Runtime, become_subreaper, make_test_tree, check, make_bundle, reap,
                       probes_dir, state_of, wait_for)


def annotated(config):
    config = json.loads(json.dumps(config))
    config.setdefault("annotations", {})["run.oci.stockade.profile"] = "default"
    return config


def denials_of(rt, cid):
    st = state_of(rt, cid)
    return (st or {}).get("stockade", {}).get("denials"), st


def run_to_end(rt, scratch, owner, config, cid, args):
    """create, start, and wait until the monitor's last count is in."""
    bundle = make_bundle(scratch, cid, args, owner, config)
    r = rt("create", "--bundle", bundle, cid)
    check(f"{cid}: create returns 0", r.returncode == 0, r.stderr)
    before, _ = denials_of(rt, cid)
    r = rt("start", cid)
    check(f"{cid}: start returns 0", r.returncode == 0, r.stderr)
    def settled():
        d, st = denials_of(rt, cid)
        if not st or st["status"] != "stopped" or d is None:
            return False
        return d.get("counted") is False or d.get("monitor", "").startswith(("final", "ended"))

    wait_for(settled)
    after, st = denials_of(rt, cid)
    return before, after, st


def read_out(scratch, name):
    try:
        with open(os.path.join(scratch, "out", name)) as f:
            return f.read()
    except OSError as e:
        return f"unreadable: {e}"


def cases(rt, scratch, owner, base, state_root):
    plain = json.loads(json.dumps(base))
    plain["process"].pop("capabilities", None)
    out = os.path.join(scratch, "out")

    # stockade's default filter (the profile): keyctl refused twice, EPERM
    # inside, {"keyctl": 2} in the record until delete.
    before, after, st = run_to_end(
        rt, scratch, owner, annotated(plain), "d1",
        ["sh", "-c", "stockade-try-syscall keyctl keyctl getpid > /out/d1"])
    inside = read_out(scratch, "d1")
    check("default filter: inside, keyctl refused EPERM twice, getpid allowed",
          inside == "keyctl errno=EPERM\nkeyctl errno=EPERM\ngetpid ok\n", inside)
    check("default filter: before start, counted and waiting for the listener",
          before is not None and before.get("counted") is True and before.get("total") == 0 and
          before.get("syscalls") == {} and "waiting" in before.get("monitor", ""), before)
    check("default filter: state names keyctl, counted twice, final",
          after is not None and after.get("counted") is True and
          after.get("syscalls") == {"keyctl": 2} and after.get("total") == 2 and
          after.get("others") == 0 and after.get("monitor", "").startswith("final") and
          "ENOSYS" in after.get("ifTheMonitorEnds", ""), (after, st))
    check("default filter: the command's end beside it",
          (st or {}).get("stockade", {}).get("ending", {}).get("command") == {"exitStatus": 0},
          st)
    check("default filter: kept while stopped, the monitor gone",
          (st or {}).get("status") == "stopped" and
          wait_for(lambda: not os.path.exists(f"/proc/{st['stockade']['monitorPid']}")), st)
    r = rt("delete", "d1")
    check("default filter: delete removes the record",
          r.returncode == 0 and state_of(rt, "d1") is None and "d1" not in os.listdir(state_root),
          r.stderr)

    # The spec's own filter alone: keyctl refused with the spec's errno
    # (EXDEV), answered by the monitor from the spec's policy.
    spec = json.loads(json.dumps(plain))
    spec["linux"]["seccomp"] = {
        "defaultAction": "SCMP_ACT_ALLOW",
        "syscalls": [{"names": ["keyctl"], "action": "SCMP_ACT_ERRNO", "errnoRet": 18}]}
    _, after, st = run_to_end(rt, scratch, owner, spec, "d2",
                              ["sh", "-c", "stockade-try-syscall keyctl getpid > /out/d2"])
    inside = read_out(scratch, "d2")
    check("spec filter: inside, keyctl refused with the spec's errno (EXDEV)",
          inside == "keyctl errno=EXDEV\ngetpid ok\n", inside)
    check("spec filter: state names keyctl once",
          after is not None and after.get("counted") is True and
          after.get("syscalls") == {"keyctl": 1} and after.get("total") == 1, (after, st))
    rt("delete", "d2")

    # Both chained (the spec's, then the default): the kernel answers,
    # uncounted, and state says why; the answers inside are unchanged.
    _, after, st = run_to_end(
        rt, scratch, owner, annotated(spec), "d3",
        ["sh", "-c", "stockade-try-syscall keyctl getpid > /out/d3"])
    inside = read_out(scratch, "d3")
    check("chained filters: inside, keyctl refused with the spec's errno (EXDEV)",
          inside == "keyctl errno=EXDEV\ngetpid ok\n", inside)
    check("chained filters: not counted, saying why",
          after is not None and after.get("counted") is False and
          "chained" in after.get("why", ""), (after, st))
    rt("delete", "d3")

    # No filter at all: nothing to count, and said so.
    _, after, st = run_to_end(rt, scratch, owner, plain, "d4", ["true"])
    check("no filter: not counted, no seccomp filter",
          after == {"counted": False, "why": "no seccomp filter"}, (after, st))
    rt("delete", "d4")

    # A flood: every refused call answered EPERM and counted, exactly, past
    # the answer budget's burst; the record stays small.
    _, after, st = run_to_end(rt, scratch, owner, annotated(plain), "d5",
                              ["sh", "-c", "stockade-refusal-flood 2 2 > /out/d5"])
    line = read_out(scratch, "d5").split()
    tally = dict(word.split("=") for word in line if "=" in word)
    calls = int(tally.get("calls", -1))
    eperm = int(tally.get("eperm", -2))
    check("flood: inside, every keyctl refused EPERM, more than the budget's burst (2000)",
          calls == eperm and eperm > 2000 and tally.get("other") == "0", line)
    check("flood: state counts each, by name",
          after is not None and after.get("syscalls") == {"keyctl": eperm} and
          after.get("total") == eperm, (after, line))
    record_size = os.path.getsize(os.path.join(state_root, "d5", "state.json"))
    check("flood: the record stays small", record_size < 4096, record_size)
    rt("delete", "d5")

    # The monitor killed while the container runs: the filter still holds,
    # the kernel answering ENOSYS (keyctl never ran: it would say EINVAL or
    # EOPNOTSUPP), and state says the count stopped.
    bundle = make_bundle(scratch, "d6", [
        "sh", "-c", "while [ ! -e /out/go ]; do sleep 0.05; done; "
        "stockade-try-syscall keyctl > /out/d6"], owner, annotated(plain))
    r = rt("create", "--bundle", bundle, "d6")
    check("monitor killed: create", r.returncode == 0, r.stderr)
    r = rt("start", "d6")
    denials, st = denials_of(rt, "d6")
    monitor = (st or {}).get("stockade", {}).get("monitorPid")
    check("monitor killed: answering while it runs",
          wait_for(lambda: (denials_of(rt, "d6")[0] or {}).get("monitor") == "answering"),
          denials_of(rt, "d6")[0])
    if monitor:
        os.kill(monitor, signal.SIGKILL)
        wait_for(lambda: not os.path.exists(f"/proc/{monitor}") or
                 open(f"/proc/{monitor}/stat").read().rsplit(") ", 1)[1][0] in "ZX")
        reap()
    denials, st = denials_of(rt, "d6")
    check("monitor killed: state says it ended, the kernel answering ENOSYS, uncounted",
          (st or {}).get("status") == "running" and denials is not None and
          denials.get("monitor", "").startswith("ended while the container runs"), (denials, st))
    open(os.path.join(out, "go"), "w").close()
    check("monitor killed: the container goes on and ends",
          wait_for(lambda: (state_of(rt, "d6") or {}).get("status") == "stopped"))
    inside = read_out(scratch, "d6")
    check("monitor killed: inside, keyctl still refused (ENOSYS), never run",
          inside == "keyctl errno=ENOSYS\n", inside)
    r = rt("delete", "d6")
    check("monitor killed: delete leaves nothing",
          r.returncode == 0 and os.listdir(state_root) == [], (r.stderr, os.listdir(state_root)))


def main():
    binary, mode = sys.argv[1], sys.argv[2]
    if os.geteuid() != 0:
        skip("the suite runs as root (rootless cases demote to uid 65534)")
    if not os.path.exists(BUSYBOX):
        skip("busybox-static is not installed (scripts/install-deps.sh test)")
    probes = probes_dir(binary)
    become_subreaper()
    scratch = tempfile.mkdtemp(prefix="stockade-oci-denials-", dir="/var/tmp")
    os.chmod(scratch, 0o755)
    owner = 0 if mode == "root" else 65534
    try:
        rt, _, base = make_test_tree(
            scratch, owner, binary, mode, ["sh", "sleep", "true"],
            [os.path.join(probes, p) for p in ["stockade-try-syscall", "stockade-refusal-flood"]])
        if base is None:
            sys.exit(1)
        cases(rt, scratch, owner, base, rt.root)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
