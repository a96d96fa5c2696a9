#!/usr/bin/env python3
"""A container's whole life under stockade, crun and runc, in the same rounds.

usage: bench/oci_lifecycle.py [--rounds N] [--modes root,rootless] STOCKADE

One cycle is what an engine asks of its runtime for a one-shot container:
`create --bundle B --pid-file P ID` (stdio /dev/null), `start ID`, the
container's init reaped by this script (the subreaper, as conmon and
containerd's shim are), `delete ID`. The command is busybox's `true` on a
busybox-static rootfs made here; every runtime gets the same config.json
(`runc spec`, or `runc spec --rootless` for the rootless mode, run as uid
65534), and each round runs every runtime once, in a fresh random order,
after five warm-up rounds. Two configs: `plain` (no cgroupsPath: runc and
crun still make a cgroup, stockade makes none) and `limits` (cgroupsPath
and a memory and a pids limit, so each makes and removes a cgroup; root
only). Prints the median and p95 of the whole cycle and of its three parts
(create; start until the init is reaped; delete), and each runtime's median
over stockade's. Not a test: nothing here asserts a time.

crun 1.8 refuses a hybrid cgroup host (the v2 tree at /sys/fs/cgroup/unified
lists a controller), even with --cgroup-manager=disabled, so the script runs
in a mount namespace of its own with that v2 mount replaced by an empty
tmpfs: every runtime then sees the same v1-only layout (stockade and runc use
v1 there anyway).
"""
import argparse
import ctypes
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

WARMUP = 5
CLONE_NEWNS = 0x00020000
MS_REC, MS_PRIVATE, MNT_DETACH = 0x4000, 0x40000, 2
PR_SET_CHILD_SUBREAPER = 36
libc = ctypes.CDLL(None, use_errno=True)


def die(why):
    sys.exit(f"oci_lifecycle: {why}")


def libc_call(name, *args):
    if getattr(libc, name)(*args) != 0:
        die(f"{name}{args}: {os.strerror(ctypes.get_errno())}")


def private_cgroup_view():
    libc_call("unshare", CLONE_NEWNS)
    libc_call("mount", None, b"/", None, MS_REC | MS_PRIVATE, None)
    if os.path.ismount("/sys/fs/cgroup/unified"):
        # An empty tmpfs of this namespace's own over it: crun writes
        # cgroup.procs files into that directory as if it were a cgroup.
        libc_call("umount2", b"/sys/fs/cgroup/unified", MNT_DETACH)
        libc_call("mount", b"tmpfs", b"/sys/fs/cgroup/unified", b"tmpfs", 0, b"size=1m")


def make_rootfs(scratch):
    rootfs = os.path.join(scratch, "rootfs")
    for d in ["bin", "proc", "dev", "sys", "tmp"]:
        os.makedirs(os.path.join(rootfs, d))
    shutil.copy("/bin/busybox", os.path.join(rootfs, "bin", "busybox"))
    for applet in ["sh", "true"]:
        os.symlink("busybox", os.path.join(rootfs, "bin", applet))


def make_bundle(scratch, name, rootless, limits):
    bundle = os.path.join(scratch, name)
    os.makedirs(bundle)
    spec = ["runc", "spec", "--bundle", bundle] + (["--rootless"] if rootless else [])
    subprocess.run(spec, check=True)
    path = os.path.join(bundle, "config.json")
    with open(path) as f:
        config = json.load(f)
    # runc refuses a rootfs reached through a symlink: the shared one's path.
    config["root"]["path"] = os.path.join(scratch, "rootfs")
    config["process"]["terminal"] = False
    config["process"]["args"] = ["/bin/true"]
    if rootless:
        for m in config["linux"]["uidMappings"] + config["linux"]["gidMappings"]:
            m["hostID"] = 65534
    if limits:
        # The id is appended per cycle (set_cgroup) so that no two share one.
        config["linux"]["resources"]["memory"] = {"limit": 256 << 20}
        config["linux"]["resources"]["pids"] = {"limit": 128}
    with open(path, "w") as f:
        json.dump(config, f)
    if rootless:
        os.chown(bundle, 65534, 65534)
        os.chown(path, 65534, 65534)
    return bundle


def set_cgroup(bundle, cid):
    path = os.path.join(bundle, "config.json")
    with open(path) as f:
        config = json.load(f)
    config["linux"]["cgroupsPath"] = f"/oci-bench/{cid}"
    with open(path, "w") as f:
        json.dump(config, f)


def remove_cgroups(name):
    """The bench's parent cgroup in every hierarchy, with what a runtime left
    beneath it, innermost first (each runtime removes its own leaf)."""
    for hierarchy in os.listdir("/sys/fs/cgroup"):
        top = os.path.join("/sys/fs/cgroup", hierarchy, name)
        if not os.path.isdir(top):
            continue
        if hierarchy == "unified":
            continue  # this namespace's own tmpfs (private_cgroup_view)
        for dirpath, _, _ in sorted(os.walk(top), key=lambda w: -len(w[0])):
            try:
                os.rmdir(dirpath)
            except OSError as e:
                print(f"oci_lifecycle: left {dirpath}: {e}", file=sys.stderr)


def demote():
    os.setgroups([])
    os.setresgid(65534, 65534, 65534)
    os.setresuid(65534, 65534, 65534)


def run(argv, rootless):
    # stderr into a file: the container keeps create's stdio, and a pipe
    # would not see EOF until it ends.
    with tempfile.TemporaryFile() as err:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=err, preexec_fn=demote if rootless else None,
                           env=ENV_ROOTLESS if rootless else None, timeout=60)
        if p.returncode != 0:
            err.seek(0)
            die(f"{' '.join(argv)}: exit {p.returncode}: {err.read().decode().strip()}")


ENV_ROOTLESS = None


def cycle(binary, state_root, bundle, cid, pid_file, rootless):
    """The three parts' times in ms: create, start until init is reaped, delete."""
    rt = [binary, "--root", state_root]
    t0 = time.perf_counter()
    run(rt + ["create", "--bundle", bundle, "--pid-file", pid_file, cid], rootless)
    t1 = time.perf_counter()
    with open(pid_file) as f:
        pid = int(f.read())
    run(rt + ["start", cid], rootless)
    _, status = os.waitpid(pid, 0)
    t2 = time.perf_counter()
    if os.waitstatus_to_exitcode(status) != 0:
        die(f"{binary}: the container's init exited {status}")
    run(rt + ["delete", cid], rootless)
    t3 = time.perf_counter()
    os.unlink(pid_file)
    return [(t1 - t0) * 1000, (t2 - t1) * 1000, (t3 - t2) * 1000]


def measure(runtimes, scratch, mode, config_name, rounds):
    rootless = mode == "rootless"
    bundles = {}
    states = {}
    for name, _ in runtimes:
        bundles[name] = make_bundle(scratch, f"{mode}-{config_name}-{name}", rootless,
                                    config_name == "limits")
        states[name] = os.path.join(scratch, f"state-{mode}-{config_name}-{name}")
        os.makedirs(states[name], mode=0o700)
        if rootless:
            os.chown(states[name], 65534, 65534)
    pid_dir = os.path.join(scratch, f"pids-{mode}-{config_name}")
    os.makedirs(pid_dir, mode=0o1777)
    os.chmod(pid_dir, 0o1777)
    times = {name: [] for name, _ in runtimes}
    for r in range(rounds + WARMUP):
        order = list(runtimes)
        random.shuffle(order)
        for name, binary in order:
            cid = f"b{r}"
            if config_name == "limits":
                set_cgroup(bundles[name], f"{name}-{cid}")
            parts = cycle(binary, states[name], bundles[name], cid,
                          os.path.join(pid_dir, f"{name}.pid"), rootless)
            if r >= WARMUP:
                times[name].append(parts)
    if config_name == "limits":
        remove_cgroups("oci-bench")
    base = statistics.median(sum(p) for p in times[runtimes[0][0]])
    print(f"\n{mode}, {config_name}: {rounds} rounds (median / p95 ms)")
    print(f"  {'runtime':9s} {'cycle':>16s} {'create':>8s} {'start+exit':>10s} {'delete':>8s}"
          f"  cycle vs {runtimes[0][0]}")
    for name, _ in runtimes:
        totals = [sum(p) for p in times[name]]
        med = statistics.median(totals)
        p95 = statistics.quantiles(totals, n=20)[18]
        parts = [statistics.median(p[i] for p in times[name]) for i in range(3)]
        print(f"  {name:9s} {med:7.1f} / {p95:6.1f} {parts[0]:8.1f} {parts[1]:10.1f} {parts[2]:8.1f}"
              f"  {med / base:5.2f}x")


def main():
    global ENV_ROOTLESS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--modes", default="root,rootless")
    ap.add_argument("--configs", default="plain,limits")
    ap.add_argument("stockade")
    args = ap.parse_args()
    if os.geteuid() != 0:
        die("run as root (the rootless mode demotes to uid 65534)")
    runtimes = [("stockade", os.path.abspath(args.stockade))]
    for ref in ["crun", "runc"]:
        path = shutil.which(ref)
        if not path:
            die(f"{ref} is not installed (apt-get install {ref})")
        runtimes.append((ref, path))
    if not os.path.exists("/bin/busybox"):
        die("busybox-static is not installed")
    private_cgroup_view()
    libc_call("prctl", PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    scratch = tempfile.mkdtemp(prefix="oci-bench-", dir="/var/tmp")
    os.chmod(scratch, 0o755)
    xdg = os.path.join(scratch, "xdg")
    os.makedirs(xdg, mode=0o700)
    os.chown(xdg, 65534, 65534)
    ENV_ROOTLESS = dict(os.environ, XDG_RUNTIME_DIR=xdg, HOME=xdg)
    try:
        make_rootfs(scratch)
        print(f"stockade {args.stockade}; " + "; ".join(
            subprocess.run([p, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
            for _, p in runtimes[1:]))
        for mode in args.modes.split(","):
            for config_name in args.configs.split(","):
                if mode == "rootless" and config_name == "limits":
                    continue  # no runtime here has a delegated cgroup rootless
                measure(runtimes, scratch, mode, config_name, args.rounds)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
