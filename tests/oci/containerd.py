#!/usr/bin/env python3
"""containerd drives stockade as its OCI runtime (issue 19): a private
containerd (its own root, state and socket under a temporary directory), its
runc shim (containerd-shim-runc-v2) told to call stockade through the shim's
options (BinaryName, Root, SystemdCgroup = false), and `ctr` as the client,
on a busybox-static rootfs made here. No image registry: `ctr run --rootfs`.

usage: containerd.py STOCKADE

Checked: one-shot output and exit codes (0 and 3), `ctr task ps`, `ctr task
kill` and the exit status `ctr task delete` returns, `ctr run -d` then `ctr
task exec` (output and exit code), `ctr task pause` and `resume` (the shim
calls stockade's pause and resume), a pod: a second container joining the
first's network, ipc and uts namespaces by path (`--with-ns`, as the CRI
path joins a pause container's) and reaching a port the first listens on at
127.0.0.1, each container's cgroup given in systemd's slice:prefix:name form
with the shim told SystemdCgroup (--systemd-cgroup) and its init found in the
directory systemd's unit would have, the shim's metrics read from it; a pod
sharing one pid namespace (`--with-ns pid:/proc/PID/ns/pid`, as the CRI path
passes shareProcessNamespace): the second container's ps shows the first's
process, its ending and an app's SIGKILL leave none of their own processes
and the first's running; and nothing left under the runtime's --root
afterwards.

containerd 1.6's shims put their sockets under /run/containerd/s whatever
the daemon's state directory, and ctr its fifos under /run/containerd/fifo,
so the whole test runs in a mount namespace of its own with a tmpfs over
/run (stockade's id leases, /run/stockade, bound back in so that they stay
the host's): the host's /run/containerd is never touched, which the test
checks from outside. containerd is stopped at the end whatever happened.

Root only. Exit 77 (a skip) when containerd, ctr, the shim or busybox-static
is missing or this is not root; CI (env CI=true) turns that into a failure.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from oci_common import (BUSYBOX, check, failures, finish, host_pids_running, skip, status_field,
                        wait_for)
APPLETS = ["sh", "echo", "cat", "sleep", "true", "hostname", "httpd", "wget", "ls", "mkdir", "readlink",
           "ps"]
TOOLS = ["containerd", "ctr", "containerd-shim-runc-v2", "unshare", "mount"]
NAMESPACE = "stockade-test"
# A Kubernetes pod's slice as the kubelet's systemd driver names it, and the
# directory systemd gives it (runc's ExpandSlice).
POD_SLICE = "kubepods-besteffort-podstockadetest.slice"
POD_CGROUP_DIR = ("/kubepods.slice/kubepods-besteffort.slice/"
                  "kubepods-besteffort-podstockadetest.slice")


class Ctr:
    def __init__(self, address, stockade, runtime_root):
        self.base = ["ctr", "--address", address, "--namespace", NAMESPACE]
        # The runc shim's options (containerd's runc.v2 Options: BinaryName,
        # Root, SystemdCgroup), which ctr sets from these flags; Kubernetes'
        # CRI plugin reads the same fields from its runtimes.NAME.options
        # (docs/oci.md). ctr ignores --runtime-config-path for runc.v2.
        self.runtime = ["--runtime", "io.containerd.runc.v2", "--runc-binary", stockade,
                        "--runc-root", runtime_root]

    def __call__(self, *args, timeout=120):
        return subprocess.run(self.base + list(args), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout)

    def run(self, *args, timeout=120):
        # `ctr run [flags] ROOTFS ID CMD...`: the runtime's flags first.
        return self(*(["run"] + self.runtime + list(args)), timeout=timeout)


def make_rootfs(path):
    for d in ["bin", "proc", "sys", "dev", "etc", "tmp", "www"]:
        os.makedirs(os.path.join(path, d), exist_ok=True)
    shutil.copy(BUSYBOX, os.path.join(path, "bin/busybox"))
    for a in APPLETS:
        os.symlink("busybox", os.path.join(path, "bin", a))
    with open(os.path.join(path, "www", "index.html"), "w") as f:
        f.write("from-the-first\n")


def oci_archive(rootfs, path, name):
    """An OCI image archive of `rootfs` (one layer, no entrypoint), for `ctr
    image import`: no registry needed."""
    import io
    import tarfile

    from cri_setup import make_image
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as t:
        t.add(rootfs, arcname=".")
    make_image(path, name, [], layer.getvalue())


def init_cgroup(pid):
    """A process's cgroup in the memory hierarchy (v1), or the v2 one."""
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            lines = [line.strip().split(":", 2) for line in f]
    except OSError as e:
        return str(e)
    memory = [p for _, c, p in lines if c == "memory"]
    return memory[0] if memory else [p for _, c, p in lines if c == ""][0]


def task_status(ctr, cid):
    r = ctr("task", "ls")
    for line in r.stdout.splitlines()[1:]:
        words = line.split()
        if len(words) >= 3 and words[0] == cid:
            return words[2], int(words[1])
    return None, 0


def inside(stockade, work):
    """The test proper, in the private mount namespace."""
    # /run: a tmpfs of this namespace's own, the host's /run/stockade (id
    # leases) moved back in first so that leases stay unique host-wide.
    hold = os.path.join(work, "hold-stockade")
    os.makedirs(hold)
    os.makedirs("/run/stockade", exist_ok=True)
    subprocess.run(["mount", "--bind", "/run/stockade", hold], check=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=755,size=16m", "tmpfs", "/run"], check=True)
    os.makedirs("/run/stockade")
    subprocess.run(["mount", "--move", hold, "/run/stockade"], check=True)

    rootfs = os.path.join(work, "rootfs")
    make_rootfs(rootfs)
    runtime_root = os.path.join(work, "runtime-root")
    address = os.path.join(work, "containerd.sock")
    config = os.path.join(work, "config.toml")
    with open(config, "w") as f:
        f.write(f"""version = 2
root = "{work}/root"
state = "{work}/state"
# ctr needs none of the CRI plugin, which would serve on a port of its own.
disabled_plugins = ["io.containerd.grpc.v1.cri"]

[grpc]
  address = "{address}"

[debug]
  level = "info"
""")
    log = open(os.path.join(work, "containerd.log"), "w")
    daemon = subprocess.Popen(["containerd", "--config", config], stdin=subprocess.DEVNULL,
                              stdout=log, stderr=log, start_new_session=True)
    ctr = Ctr(address, stockade, runtime_root)
    try:
        if not wait_for(lambda: ctr("version").returncode == 0, 60):
            check("the private containerd answers", False, open(log.name).read()[-2000:])
            return
        check("the private containerd answers", True)

        # One-shot runs: output, exit codes 0 and 3.
        r = ctr.run("--rm", "--rootfs", rootfs, "one", "/bin/sh", "-c", "echo hello; exit 0")
        check("ctr run: the container's output, exit 0", r.returncode == 0 and
              r.stdout == "hello\n", (r.returncode, r.stdout, r.stderr))
        r = ctr.run("--rm", "--rootfs", rootfs, "three", "/bin/sh", "-c", "echo three; exit 3")
        check("ctr run: exit code 3 passed through", r.returncode == 3 and r.stdout == "three\n",
              (r.returncode, r.stdout, r.stderr))
        # An image on containerd's usual snapshotter, overlayfs: Linux 6.18
        # cannot idmap the overlay the shim mounts, so create mounts one of
        # the container's own over idmapped clones of its layers. The
        # container's root writes its image, landing in the snapshot's upper
        # directory as root's, an image file copied up with its owner and
        # the layer unchanged; the work directory create made beside it is
        # gone once the task is deleted.
        image_dir = os.path.join(work, "image-rootfs")
        make_rootfs(image_dir)
        with open(os.path.join(image_dir, "etc", "greeting"), "w") as f:
            f.write("hello\n")
        oci_archive(image_dir, os.path.join(work, "image.tar"), "localhost/stockade-ovl:1")
        r = ctr("image", "import", os.path.join(work, "image.tar"))
        write = "echo run > /runs && echo more >> /etc/greeting && cat /runs /etc/greeting"
        r2 = ctr.run("localhost/stockade-ovl:1", "ovl", "sh", "-c", write) \
            if r.returncode == 0 else r
        snapshots = os.path.join(work, "root", "io.containerd.snapshotter.v1.overlayfs",
                                 "snapshots")
        uppers = [os.path.join(snapshots, n, "fs") for n in os.listdir(snapshots)
                  if os.path.exists(os.path.join(snapshots, n, "fs", "runs"))] \
            if os.path.isdir(snapshots) else []
        layers = [os.path.join(snapshots, n, "fs") for n in os.listdir(snapshots)
                  if os.path.exists(os.path.join(snapshots, n, "fs", "www"))] \
            if os.path.isdir(snapshots) else []
        left = [n for d in os.listdir(snapshots) for n in os.listdir(os.path.join(snapshots, d))
                if n.startswith(".stockade-work")] if os.path.isdir(snapshots) else ["?"]

        def owner(path):
            st = os.lstat(path) if os.path.lexists(path) else None
            return st and (st.st_uid, st.st_gid)
        upper = uppers[0] if len(uppers) == 1 else "?"
        check("ctr run of an image on the overlayfs snapshotter: the container's root writes "
              "it, in the snapshot's upper directory as root's; an image file copied up with its "
              "owner, the layer unchanged; no work directory left",
              r2.returncode == 0 and r2.stdout.split() == ["run", "hello", "more"] and
              owner(os.path.join(upper, "runs")) == (0, 0) and
              owner(os.path.join(upper, "etc", "greeting")) == (0, 0) and len(layers) == 1 and
              open(os.path.join(layers[0], "etc", "greeting")).read() == "hello\n" and
              left == [], (r.stderr, r2.returncode, r2.stdout, r2.stderr, uppers, layers, left))
        ctr("container", "delete", "ovl")
        ctr("image", "remove", "localhost/stockade-ovl:1")

        r = ctr.run("--rm", "--rootfs", rootfs, "missing", "/bin/no-such-program")
        check("ctr run of a missing executable fails, naming it",
              r.returncode != 0 and 'exec: "/bin/no-such-program": stat /bin/no-such-program: '
              "no such file or directory" in r.stderr,
              (r.returncode, r.stderr))

        # The same one-shot runs with runc as the shim's binary (the
        # reference, same daemon, same run): what ctr shows must not differ.
        runc = shutil.which("runc")
        if runc is None:
            check("runc is installed (the reference; scripts/install-deps.sh)",
                  os.environ.get("CI") != "true")
        else:
            ref = Ctr(address, runc, os.path.join(work, "runc-root"))
            for cid, argv in (("ref-hello", ["/bin/sh", "-c", "echo hello; exit 0"]),
                              ("ref-three", ["/bin/sh", "-c", "echo three; exit 3"]),
                              ("ref-missing", ["/bin/no-such-program"])):
                seen = {}
                for name, client in (("stockade", ctr), ("runc", ref)):
                    r = client.run("--rm", "--rootfs", rootfs, f"{cid}-{name}", *argv)
                    seen[name] = (r.returncode, r.stdout,
                                  "stat /bin/no-such-program: no such file or directory"
                                  in r.stderr)
                check(f"ctr run {cid}: exit code, output and error as under runc",
                      seen["stockade"] == seen["runc"], seen)

        # Detached: ps, exec, pause and resume, kill, delete's exit status.
        r = ctr.run("-d", "--rootfs", rootfs, "long", "/bin/sh", "-c",
                    "sleep 1000 & sleep 1000 & wait")
        check("ctr run -d", r.returncode == 0, r.stderr)
        check("ctr task ls: RUNNING", wait_for(lambda: task_status(ctr, "long")[0] == "RUNNING"),
              ctr("task", "ls").stdout)
        init_pid = task_status(ctr, "long")[1]
        with open(f"/proc/{init_pid}/status") as f:
            host_uids = [line.split()[1:] for line in f if line.startswith("Uid:")][0]
        state = stockade_state(stockade, runtime_root, "long")
        check("the shim ran stockade: its state names the task's pid, never host root",
              state.get("pid") == init_pid and all(u != "0" for u in host_uids),
              (state, host_uids))
        r = ctr("task", "ps", "long")
        pids = [int(line.split()[0]) for line in r.stdout.splitlines()[1:] if line.split()]

        def comm(pid):
            try:
                with open(f"/proc/{pid}/comm") as f:
                    return f.read().strip()
            except OSError:
                return ""
        names = sorted(comm(p) for p in pids if p != init_pid)
        check("ctr task ps: init, the shell and its two sleeps, by host pid",
              r.returncode == 0 and init_pid in pids and names == ["sh", "sleep", "sleep"],
              (r.stdout, r.stderr, names))
        with open(f"/proc/{init_pid}/cgroup") as f:
            memory_cgroup = [line.strip().split(":", 2)[2] for line in f
                             if line.split(":")[1] in ("memory", "")][0]
        check("the init sits in the cgroup ctr named (/NAMESPACE/ID)",
              memory_cgroup == f"/{NAMESPACE}/long", memory_cgroup)
        # The shim reads the container's stats from that cgroup (as the CRI
        # plugin does for Kubernetes).
        r = ctr("task", "metrics", "long")
        metrics = dict(line.split()[:2] for line in r.stdout.splitlines() if len(line.split()) >= 2)
        check("ctr task metrics: the shim reads the container's cgroup (pids.current 4)",
              r.returncode == 0 and metrics.get("pids.current") == "4", (r.stdout, r.stderr))
        r = ctr("task", "exec", "--exec-id", "e1", "long", "/bin/sh", "-c",
                "echo from-exec; hostname; exit 4")
        check("ctr task exec: its output and exit code",
              r.returncode == 4 and r.stdout.split()[:1] == ["from-exec"],
              (r.returncode, r.stdout, r.stderr))
        r = ctr("task", "pause", "long")
        check("ctr task pause", r.returncode == 0, r.stderr)
        check("...ctr task ls: PAUSED", task_status(ctr, "long")[0] == "PAUSED",
              ctr("task", "ls").stdout)
        state = stockade_state(stockade, runtime_root, "long")
        check("...stockade's state says paused", state.get("status") == "paused", state)
        r = ctr("task", "resume", "long")
        check("ctr task resume: RUNNING again",
              r.returncode == 0 and task_status(ctr, "long")[0] == "RUNNING", r.stderr)
        r = ctr("task", "kill", "-s", "SIGKILL", "long")
        check("ctr task kill -s SIGKILL", r.returncode == 0, r.stderr)
        check("...ctr task ls: STOPPED",
              wait_for(lambda: task_status(ctr, "long")[0] == "STOPPED"), ctr("task", "ls").stdout)
        check("...every process of it gone", wait_for(lambda: not any(
            os.path.exists(f"/proc/{p}/stat") and
            open(f"/proc/{p}/stat").read().rsplit(") ", 1)[1][0] not in "ZX" for p in pids)))
        r = ctr("task", "delete", "long")
        check("ctr task delete reports the exit status (SIGKILL: 137)",
              r.returncode == 0 and "exit code 137" in r.stderr, (r.returncode, r.stdout, r.stderr))
        r = ctr("container", "delete", "long")
        check("ctr container delete", r.returncode == 0, r.stderr)

        # A pod: the second container joins the first's network, ipc and
        # uts namespaces by path, as Kubernetes' containers join the pause
        # container's, and reaches the first's server on 127.0.0.1. Each
        # in the cgroup Kubernetes' systemd driver names (the shim passes
        # --systemd-cgroup, as with SystemdCgroup = true): no systemd runs
        # here, so stockade makes the directory systemd's unit would have.
        def pod_cgroup(cid):
            return ["--runc-systemd-cgroup", "--cgroup", f"{POD_SLICE}:cri-containerd:{cid}"]
        r = ctr.run("-d", *pod_cgroup("pod-first"), "--rootfs", rootfs, "pod-first",
                    "/bin/httpd", "-f", "-p", "127.0.0.1:8080", "-h", "/www")
        check("pod: the first container runs a server on its 127.0.0.1:8080", r.returncode == 0,
              r.stderr)
        wait_for(lambda: task_status(ctr, "pod-first")[0] == "RUNNING")
        first_pid = task_status(ctr, "pod-first")[1]
        # The server itself (under stockade, init's child): the namespaces
        # the second container must end up in.
        server = [int(line.split()[0]) for line in
                  ctr("task", "ps", "pod-first").stdout.splitlines()[1:] if line.split()]
        server = [p for p in server if p != first_pid] or [first_pid]
        want_ns = []
        for name in ("net", "ipc", "uts"):
            try:
                want_ns.append(os.readlink(f"/proc/{server[0]}/ns/{name}"))
            except OSError as e:
                want_ns.append(str(e))
        joins = []
        for kind, name in [("network", "net"), ("ipc", "ipc"), ("uts", "uts")]:
            joins += ["--with-ns", f"{kind}:/proc/{first_pid}/ns/{name}"]
        fetched = None
        for attempt in range(50):
            fetched = ctr.run("--rm", *pod_cgroup(f"pod-second-{attempt}"), *joins,
                              "--rootfs", rootfs, f"pod-second-{attempt}",
                              "/bin/sh", "-c",
                              "for n in net ipc uts; do readlink /proc/self/ns/$n; done; "
                              "wget -q -O - http://127.0.0.1:8080/index.html")
            if fetched.returncode == 0 or "Connection refused" not in fetched.stderr + fetched.stdout:
                break
            time.sleep(0.1)
        check("pod: the second container is in the first's network, ipc and uts namespaces "
              "and reaches its server on 127.0.0.1",
              fetched.returncode == 0 and fetched.stdout.split() == want_ns + ["from-the-first"],
              (fetched.returncode, fetched.stdout, fetched.stderr, want_ns))
        check("pod: the first's init sits in the systemd form's cgroup, expanded",
              init_cgroup(first_pid) == POD_CGROUP_DIR + "/cri-containerd-pod-first.scope",
              init_cgroup(first_pid))
        # An app container left running: its init's namespaces and cgroup
        # seen from the host, and the shim's stats read from that cgroup.
        r = ctr.run("-d", *pod_cgroup("pod-app"), *joins, "--rootfs", rootfs, "pod-app",
                    "/bin/sh", "-c", "sleep 1000 & wait")
        check("pod: an app container joins by path, detached", r.returncode == 0, r.stderr)
        wait_for(lambda: task_status(ctr, "pod-app")[0] == "RUNNING")
        app_pid = task_status(ctr, "pod-app")[1]
        app_procs = [int(line.split()[0]) for line in
                     ctr("task", "ps", "pod-app").stdout.splitlines()[1:] if line.split()]
        app_shell = [p for p in app_procs if p != app_pid]
        app_ns = []
        for name in ("net", "ipc", "uts", "pid"):
            try:
                app_ns.append(os.readlink(f"/proc/{app_shell[0]}/ns/{name}"))
            except (OSError, IndexError) as e:
                app_ns.append(str(e))
        check("pod: the app's command is in the first's network, ipc and uts namespaces, "
              "its own pid namespace", app_ns[:3] == want_ns and
              app_ns[3] != os.readlink(f"/proc/{server[0]}/ns/pid"), (app_ns, want_ns))
        check("pod: the app's init sits in its own scope under the pod's slice",
              init_cgroup(app_pid) == POD_CGROUP_DIR + "/cri-containerd-pod-app.scope",
              init_cgroup(app_pid))
        r = ctr("task", "metrics", "pod-app")
        metrics = dict(line.split()[:2] for line in r.stdout.splitlines() if len(line.split()) >= 2)
        check("pod: ctr task metrics reads the app's cgroup (pids.current 3: init, sh, sleep)",
              r.returncode == 0 and metrics.get("pids.current") == "3", (r.stdout, r.stderr))
        ctr("task", "kill", "-s", "SIGKILL", "pod-app")
        wait_for(lambda: task_status(ctr, "pod-app")[0] == "STOPPED")
        ctr("task", "delete", "pod-app")
        ctr("container", "delete", "pod-app")
        check("pod: the app's scope is removed with it, the pod's slice left (as runc leaves "
              "a parent)", not os.path.exists(f"/sys/fs/cgroup/memory{POD_CGROUP_DIR}/"
                                               "cri-containerd-pod-app.scope") and
              os.path.isdir(f"/sys/fs/cgroup/memory{POD_CGROUP_DIR}"))
        alone = ctr.run("--rm", "--rootfs", rootfs, "pod-outsider", "/bin/sh", "-c",
                        "wget -q -T 2 -O - http://127.0.0.1:8080/index.html")
        check("...a container that joins nothing does not",
              alone.returncode != 0 and "from-the-first" not in alone.stdout,
              (alone.returncode, alone.stdout, alone.stderr))
        r = ctr("task", "kill", "-s", "SIGKILL", "pod-first")
        wait_for(lambda: task_status(ctr, "pod-first")[0] == "STOPPED")
        ctr("task", "delete", "pod-first")
        ctr("container", "delete", "pod-first")

        # A pod sharing one pid namespace (shareProcessNamespace): the
        # second container joins the first's by path, as the CRI plugin
        # passes the pause container's (--with-ns pid:/proc/PID/ns/pid).
        r = ctr.run("-d", "--rootfs", rootfs, "share-first", "/bin/sh", "-c", "sleep 4747 & wait")
        check("pid pod: the first container runs", r.returncode == 0, r.stderr)
        wait_for(lambda: host_pids_running(["sleep", "4747"]))
        share_init = task_status(ctr, "share-first")[1]
        sleeper = host_pids_running(["sleep", "4747"])
        sleeper = sleeper[0] if sleeper else 0
        inner = (status_field(sleeper, "NSpid") or ["?"])[-1]
        with_pid = ["--with-ns", f"pid:/proc/{share_init}/ns/pid"]
        seen = ctr.run("--rm", *with_pid, "--rootfs", rootfs, "share-second", "/bin/sh", "-c",
                       "readlink /proc/self/ns/pid; ps -o pid,args; (sleep 4848 &); true")
        lines = seen.stdout.splitlines()
        listed = [line.split(None, 1) for line in lines[2:]]
        check("pid pod: the second container (ctr --with-ns pid:PATH) is in the first's pid "
              "namespace and its ps shows the first's sleep at the pid the host reads in NSpid",
              seen.returncode == 0 and lines[:1] == [os.readlink(f"/proc/{sleeper}/ns/pid")] and
              [inner, "sleep 4747"] in [[x[0], x[1].strip()] for x in listed if len(x) == 2],
              (seen.returncode, seen.stdout, seen.stderr, inner))
        check("pid pod: the second's end killed its orphan, not the first's process",
              not host_pids_running(["sleep", "4848"]) and
              host_pids_running(["sleep", "4747"]) == [sleeper] and
              os.path.exists(f"/proc/{share_init}"))
        # Detached, then SIGKILLed through the shim with an orphan running.
        r = ctr.run("-d", *with_pid, "--rootfs", rootfs, "share-app", "/bin/sh", "-c",
                    "(sleep 4949 &); exec sleep 1000")
        check("pid pod: an app container joins it, detached", r.returncode == 0, r.stderr)
        wait_for(lambda: host_pids_running(["sleep", "4949"]))
        app = task_status(ctr, "share-app")[1]
        r = ctr("task", "ps", "share-app")
        app_pids = [int(line.split()[0]) for line in r.stdout.splitlines()[1:] if line.split()]
        check("pid pod: ctr task ps lists the app's init, command and orphan (its cgroup)",
              app in app_pids and set(host_pids_running(["sleep", "4949"])) <= set(app_pids) and
              sleeper not in app_pids, (r.stdout, r.stderr))
        ctr("task", "kill", "-s", "SIGKILL", "share-app")
        wait_for(lambda: task_status(ctr, "share-app")[0] == "STOPPED")
        check("pid pod: the app killed, none of its processes is left (its orphan included), "
              "the first's still runs",
              wait_for(lambda: not host_pids_running(["sleep", "4949"])) and
              host_pids_running(["sleep", "4747"]) == [sleeper])
        ctr("task", "delete", "share-app")
        ctr("container", "delete", "share-app")
        ctr("task", "kill", "-s", "SIGKILL", "share-first")
        wait_for(lambda: task_status(ctr, "share-first")[0] == "STOPPED")
        ctr("task", "delete", "share-first")
        ctr("container", "delete", "share-first")
        check("pid pod: after both deletes no process of the pod is left",
              wait_for(lambda: not any(host_pids_running(["sleep", s])
                                       for s in ("4747", "4848", "4949", "1000"))))

        left = [os.path.join(top, n) for top, dirs, files in os.walk(runtime_root)
                for n in dirs + files]
        check("nothing left under the runtime's --root (at most its empty namespace directory)",
              all(os.path.isdir(p) and not os.listdir(p) for p in left), left)
        r = ctr("task", "ls", "-q")
        check("containerd lists no task", r.returncode == 0 and r.stdout.strip() == "", r.stdout)
    finally:
        # Whatever is left, this run's own: tasks first (each shim then ends).
        for cid in ctr("container", "ls", "-q").stdout.split():
            ctr("task", "kill", "-s", "SIGKILL", cid, timeout=30)
            ctr("task", "delete", "--force", cid, timeout=30)
            ctr("container", "delete", cid, timeout=30)
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        log.close()
        shims = shims_of(address)
        check("no shim of this containerd is left", not shims, shims)
        for pid in shims:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        # ctr names each container's cgroup /NAMESPACE/ID; the runtime
        # removes the leaf, the parent is this test's to remove (when empty).
        # The pod's slices likewise (innermost first).
        pod_parents = [POD_CGROUP_DIR, os.path.dirname(POD_CGROUP_DIR), "/kubepods.slice"]
        for h in [""] + ["/" + h for h in os.listdir("/sys/fs/cgroup")]:
            for top in [f"/{NAMESPACE}"] + pod_parents:
                try:
                    os.rmdir(f"/sys/fs/cgroup{h}{top}")
                except OSError:
                    pass
        if failures:
            print(open(log.name).read()[-3000:])


def stockade_state(stockade, runtime_root, cid):
    """stockade's own state of a task, under the shim's --root (ROOT/NAMESPACE)."""
    r = subprocess.run([stockade, "--root", f"{runtime_root}/{NAMESPACE}", "state", cid],
                       capture_output=True, text=True, timeout=60)
    return json.loads(r.stdout) if r.returncode == 0 else {"error": r.stderr}


def shims_of(address):
    """The shims this containerd started: their command line names its socket."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"containerd-shim-runc-v2") and address.encode() in argv:
            out.append(int(entry))
    return out


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--inside":
        inside(sys.argv[2], sys.argv[3])
        finish()
        sys.exit(0)
    stockade = os.path.abspath(sys.argv[1])
    if os.geteuid() != 0:
        skip("containerd's test runs as root")
    missing = [t for t in TOOLS if not shutil.which(t)]
    if missing:
        skip(f"not installed: {', '.join(missing)} (scripts/install-deps.sh test)")
    if not os.path.exists(BUSYBOX):
        skip("busybox-static is not installed (scripts/install-deps.sh test)")
    host_run_containerd = os.path.lexists("/run/containerd")
    work = tempfile.mkdtemp(prefix="stockade-ctr-", dir="/var/tmp")
    try:
        r = subprocess.run(["unshare", "--mount", "--propagation", "private", sys.executable,
                            os.path.abspath(__file__), "--inside", stockade, work], timeout=900)
        check("the host's /run/containerd is as it was",
              os.path.lexists("/run/containerd") == host_run_containerd)
        if r.returncode != 0:
            failures.append("the test inside its mount namespace")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
