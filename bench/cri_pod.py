#!/usr/bin/env python3
"""A Kubernetes pod's life through containerd's CRI plugin, stockade and runc
as the runc shim's binary in the same rounds.

usage: bench/cri_pod.py [--rounds N] STOCKADE   (root)

One cycle is what a kubelet asks for a pod of one one-shot container, on
the node's network: RunPodSandbox (the pause container), CreateContainer
and StartContainer of busybox's `true`, ContainerStatus polled until
EXITED, then RemoveContainer, StopPodSandbox and RemovePodSandbox. The
daemon, images and setup are tests/oci/cri.py's (a private containerd in
mount and network namespaces of its own, images made from busybox-static);
the handlers `stockade` and `runc` differ only in BinaryName. Each round
runs both once, in a fresh random order, after three warm-up rounds.
Prints the median and p95 of the cycle and of its parts (the pod; the
container until EXITED; the removals), and runc's median over stockade's.
Not a test: nothing here asserts a time.
"""
import argparse
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "oci"))
from cri_setup import APP_IMAGE, ctr, prepare_node, shims_of, wait_for  # noqa: E402

WARMUP = 3
HANDLERS = ["stockade", "runc"]


def cycle(cri, n, handler):
    from cri_client import CONTAINER_EXITED, NODE, POD
    ns = {"network": NODE, "pid": 1, "ipc": POD}
    config = {"metadata": {"name": f"bench-{n}", "uid": f"bench-{n}", "namespace": "bench",
                           "attempt": 0},
              "linux": {"cgroup_parent": f"/kubepods/besteffort/podstockadecri-bench-{n}",
                        "security_context": {"namespace_options": ns}}}
    t0 = time.monotonic()
    pod = cri.RunPodSandbox(config=config, runtime_handler=handler)["pod_sandbox_id"]
    t1 = time.monotonic()
    cid = cri.CreateContainer(pod_sandbox_id=pod, sandbox_config=config, config={
        "metadata": {"name": "true", "attempt": 0}, "image": {"image": APP_IMAGE},
        "command": ["/bin/true"],
        "linux": {"security_context": {"namespace_options": ns}}})["container_id"]
    cri.StartContainer(container_id=cid)
    while cri.ContainerStatus(container_id=cid)["status"]["state"] != CONTAINER_EXITED:
        time.sleep(0.002)
    t2 = time.monotonic()
    status = cri.ContainerStatus(container_id=cid)["status"]
    if status["exit_code"] != 0:
        sys.exit(f"cri_pod: {handler}: the container ended {status}")
    cri.RemoveContainer(container_id=cid)
    cri.StopPodSandbox(pod_sandbox_id=pod)
    cri.RemovePodSandbox(pod_sandbox_id=pod)
    t3 = time.monotonic()
    return {"pod": t1 - t0, "container": t2 - t1, "removals": t3 - t2, "cycle": t3 - t0}


def inside(stockade, work, rounds):
    from cri_client import Cri
    runc = shutil.which("runc")
    if not runc:
        sys.exit("cri_pod: runc is not installed (the reference)")
    config = prepare_node(work, stockade, os.path.join(work, "runtime-root"), runc)
    log = open(os.path.join(work, "containerd.log"), "w")
    daemon = subprocess.Popen(["containerd", "--config", config], stdin=subprocess.DEVNULL,
                              stdout=log, stderr=log, start_new_session=True)
    try:
        if not wait_for(lambda: ctr(work, "version").returncode == 0, 60):
            sys.exit("cri_pod: containerd did not answer")
        for tarball in ("pause.tar", "app.tar"):
            if ctr(work, "images", "import", os.path.join(work, tarball)).returncode != 0:
                sys.exit(f"cri_pod: ctr images import {tarball} failed")
        cri = Cri(os.path.join(work, "containerd.sock"))
        cri.negotiate()
        times = {h: [] for h in HANDLERS}
        n = 0
        for r in range(WARMUP + rounds):
            for handler in random.sample(HANDLERS, len(HANDLERS)):
                n += 1
                t = cycle(cri, n, handler)
                if r >= WARMUP:
                    times[handler].append(t)
        cri.close()
        print(f"{rounds} rounds after {WARMUP} warm-up, both handlers each round in random "
              "order (ms)")
        print(f"{'':10}{'part':>11}{'median':>10}{'p95':>10}{'/stockade':>11}")
        for part in ("cycle", "pod", "container", "removals"):
            base = statistics.median(t[part] for t in times["stockade"])
            for handler in HANDLERS:
                values = sorted(t[part] for t in times[handler])
                median = statistics.median(values)
                p95 = values[min(len(values) - 1, int(0.95 * len(values)))]
                print(f"{handler:10}{part:>11}{median * 1000:10.1f}{p95 * 1000:10.1f}"
                      f"{median / base:10.2f}x")
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        log.close()
        for pid in shims_of(os.path.join(work, "containerd.sock")):
            os.kill(pid, signal.SIGKILL)
        for h in [""] + ["/" + h for h in os.listdir("/sys/fs/cgroup")]:
            base = f"/sys/fs/cgroup{h}/kubepods/besteffort"
            for d in (os.listdir(base) if os.path.isdir(base) else []):
                if d.startswith("podstockadecri-bench-"):
                    try:
                        os.rmdir(os.path.join(base, d))
                    except OSError:
                        pass
            for top in ("/kubepods/besteffort", "/kubepods"):
                try:
                    os.rmdir(f"/sys/fs/cgroup{h}{top}")
                except OSError:
                    pass


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--inside":
        inside(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("stockade")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("cri_pod: runs as root (containerd's CRI plugin)")
    if not os.access(args.stockade, os.X_OK):
        sys.exit(f"cri_pod: {args.stockade} is not an executable")
    work = tempfile.mkdtemp(prefix="stockade-cri-bench-", dir="/var/tmp")
    try:
        r = subprocess.run(["unshare", "--mount", "--net", "--propagation", "private",
                            sys.executable, os.path.abspath(__file__), "--inside",
                            os.path.abspath(args.stockade), work, str(args.rounds)])
        sys.exit(r.returncode)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
