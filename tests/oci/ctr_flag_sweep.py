#!/usr/bin/env python3
"""A manual comparison, not a ctest case: `ctr run` with each of ~30 flag
sets, under stockade and under runc (/usr/sbin/runc) in one private
containerd (its own root, state and socket; /run a tmpfs of a private mount
namespace, as containerd.py does), the same probe inside each (ids, caps,
NoNewPrivs, seccomp, rlimit, cwd, env, /dev, a write to /, the root's and
/proc's mount options); prints SAME or DIFF and both outputs for a DIFF.
Session 14 found HOME, /dev/core and the unwritable root with it; what is
left differs by design (mount options nosuid, nodev, idmapped; NoNewPrivs).

usage (root): python3 tests/oci/ctr_flag_sweep.py STOCKADE
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import containerd as C

PROBE = ("id; hostname; cat /proc/self/status | grep -E '^(Cap|NoNewPrivs|Seccomp|Groups)'; "
         "ulimit -n; pwd; env | sort | grep -v -E '^(HOSTNAME|SHLVL|PWD|_)='; ls /dev | tr '\\n' ' '; echo; "
         "cat /proc/self/cgroup | head -3 >/dev/null; touch /x 2>&1 | head -1; mount | grep -E ' / | /proc ' | cut -d' ' -f1-6")

def by_design_options(text):
    """The probe's output with the root's mount options stockade always
    adds taken out."""
    return re.sub(r"\((rw|ro),(nosuid,)?(nodev,)?relatime(,idmapped)?", r"(\1,relatime", text)


def inside(stockade, work):
    hold = os.path.join(work, "hold-stockade"); os.makedirs(hold)
    os.makedirs("/run/stockade", exist_ok=True)
    subprocess.run(["mount", "--bind", "/run/stockade", hold], check=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=755,size=16m", "tmpfs", "/run"], check=True)
    os.makedirs("/run/stockade")
    subprocess.run(["mount", "--move", hold, "/run/stockade"], check=True)
    rootfs = os.path.join(work, "rootfs"); C.make_rootfs(rootfs)
    for a in ["id", "env", "sort", "grep", "tr", "head", "cut", "mount", "touch", "cat", "pwd", "ls", "ps", "uname", "sleep", "ulimit"]:
        p = os.path.join(rootfs, "bin", a)
        if not os.path.lexists(p): os.symlink("busybox", p)
    with open(os.path.join(rootfs, "etc/passwd"), "w") as f: f.write("root:x:0:0::/:/bin/sh\nnobody:x:65534:65534::/:/bin/sh\nu1:x:1000:1000::/:/bin/sh\n")
    with open(os.path.join(rootfs, "etc/group"), "w") as f: f.write("root:x:0:\nnobody:x:65534:\nu1:x:1000:\nextra:x:2000:u1\n")
    address = os.path.join(work, "containerd.sock"); config = os.path.join(work, "config.toml")
    open(config, "w").write(f'version = 2\nroot = "{work}/root"\nstate = "{work}/state"\ndisabled_plugins = ["io.containerd.grpc.v1.cri"]\n[grpc]\n  address = "{address}"\n')
    log = open(os.path.join(work, "containerd.log"), "w")
    d = subprocess.Popen(["containerd", "--config", config], stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    try:
        rt = {"stockade": C.Ctr(address, stockade, work + "/rs"), "runc": C.Ctr(address, "/usr/sbin/runc", work + "/rr")}
        C.wait_for(lambda: rt["runc"]("version").returncode == 0, 60)
        cases = [
            [],
            ["--env", "HOME=/given"],
            ["--user", "65534"],
            ["--user", "1000:1000"],
            ["--user", "1000"],
            ["--cwd", "/tmp"],
            ["--env", "A=b"],
            ["--label", "x=y"],
            ["--read-only"],
            ["--privileged"],
            ["--net-host"],
            ["--cap-add", "CAP_SYS_ADMIN"],
            ["--cap-drop", "CAP_CHOWN"],
            ["--seccomp"],
            ["--allow-new-privs"],
            ["--memory-limit", "67108864"],
            ["--cpus", "0.5"],
            ["--cpu-shares", "512"],
            ["--cpu-quota", "50000", "--cpu-period", "100000"],
            ["--mount", f"type=bind,src={work},dst=/mnt,options=rbind:ro"],
            ["--mount", "type=tmpfs,src=tmpfs,dst=/scratch"],
            ["--device", "/dev/null"],
            ["--tty"],
            ["--null-io"],
            ["--uidmap", "0:100000:65536", "--gidmap", "0:100000:65536"],
            ["--rootfs-propagation", "rslave"],
            ["--annotation", "a=b"],
            ["--no-pivot"],
            ["--cgroup", ""],
            ["--cgroup", "/sweep/c1"],
            ["--env-file", "/dev/null"],
            ["--seccomp", "--privileged"],
        ]
        for i, flags in enumerate(cases):
            out = {}
            for name, ctr in rt.items():
                r = ctr.run("--rm", *flags, "--rootfs", rootfs, f"c{i}{name[0]}", "/bin/sh", "-c", PROBE, timeout=60)
                out[name] = (r.returncode, r.stdout.replace(f"c{i}{name[0]}", "ID"), r.stderr[-300:])
            same = out["stockade"][:2] == out["runc"][:2]
            # stockade's own choices (nosuid, nodev, idmapped root): SAME*.
            by_design = (out["stockade"][0], by_design_options(out["stockade"][1])) == \
                (out["runc"][0], by_design_options(out["runc"][1]))
            print(("SAME " if same else "SAME* " if by_design else "DIFF ") + " ".join(flags),
                  flush=True)
            if not same:
                for name in rt:
                    print(f"  --{name} rc={out[name][0]}\n" + "\n".join("    " + l for l in out[name][1].splitlines()) + f"\n    stderr: {out[name][2]}")
    finally:
        os.killpg(d.pid, 9); d.wait()

if len(sys.argv) == 4 and sys.argv[1] == "--inside":
    inside(sys.argv[2], sys.argv[3]); sys.exit(0)
work = tempfile.mkdtemp(prefix="sweep-", dir="/var/tmp")
try:
    subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable, __file__, "--inside", sys.argv[1], work])
finally:
    subprocess.run(["sh", "-c", f"umount -R {work}/root 2>/dev/null; true"])
    shutil.rmtree(work, ignore_errors=True)
