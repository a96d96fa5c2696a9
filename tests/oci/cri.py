#!/usr/bin/env python3
"""Kubernetes' path, driven for real (issue 19): containerd's CRI plugin
(io.containerd.grpc.v1.cri, Debian's containerd 1.6) with stockade as the
runc shim's binary, called as a kubelet calls it, through the CRI's gRPC
API (tests/oci/cri_client.py: python3-grpcio, the messages encoded by hand).
No kubelet, no crictl, no image registry: the pause and app images are OCI
image tarballs of a busybox-static rootfs made here, imported with `ctr -n
k8s.io images import`; the plugin's sandbox_image names the pause image.
Pods use the node's network (NamespaceMode NODE), so no CNI is needed.

usage: cri.py STOCKADE

Checked: RunPodSandbox; CreateContainer, StartContainer and ContainerStatus
until exited with its exit code (0 and 3); the container's log file in the
CRI format holding its stdout and stderr lines; ExecSync into a running
container (output and exit code); a container ignoring SIGTERM stopped by
StopContainer with a timeout (ended by SIGKILL: 137); RemoveContainer,
StopPodSandbox, RemovePodSandbox. From the host: each container's init is
stockade's (its state under the shim's --root names the pid) and its
command runs with Seccomp 2, NoNewPrivs 1 and a user namespace that is not
the host's, host uids not 0; the app's command is in the pause container's
ipc and uts namespaces (by inode) and its init in the cgroup the plugin
named under the pod's cgroup_parent; after the removals nothing is left
under the runtime's --root, no process of the pods, no mount of theirs.

As containerd.py: a mount namespace of its own with a tmpfs over /run (the
shims' sockets under /run/containerd), the host's /run/stockade bound back.

Root only (rootless containerd is not in scope). Exit 77 (a skip) when a
tool is missing or this is not root; CI (env CI=true) turns that into a
failure.
"""
import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time

from oci_common import BUSYBOX, skip

TOOLS = ["containerd", "ctr", "containerd-shim-runc-v2", "unshare", "mount"]
APPLETS = ["sh", "echo", "cat", "sleep", "true", "readlink", "grep", "hostname", "id"]
K8S = "k8s.io"
PAUSE_IMAGE = "stockade.test/pause:1"
APP_IMAGE = "stockade.test/busybox:1"
# The kubelet's cgroupfs driver names a pod's cgroup so (QoS class, pod UID).
POD_CGROUP_PARENT = "/kubepods/besteffort/podstockadecri"

failures = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else f"\n     {detail}"))
    if not ok:
        failures.append(name)


def wait_for(predicate, bound_s=30.0):
    """Polls until the predicate holds; the bound is a hang guard, not an assertion on time."""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def sha256(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def layer_tar():
    """An uncompressed tar of a busybox-static rootfs (the layer's diff)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        def add_dir(name):
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for d in ["bin", "dev", "etc", "proc", "sys", "tmp", "var"]:
            add_dir(d)
        with open(BUSYBOX, "rb") as f:
            data = f.read()
        info = tarfile.TarInfo("bin/busybox")
        info.mode, info.size = 0o755, len(data)
        tar.addfile(info, io.BytesIO(data))
        for applet in APPLETS:
            info = tarfile.TarInfo("bin/" + applet)
            info.type, info.linkname = tarfile.SYMTYPE, "busybox"
            tar.addfile(info)
    return buf.getvalue()


def make_image(path, name, entrypoint):
    """An OCI image layout tarball holding one image called name, for `ctr
    images import` (which takes the name from io.containerd.image.name)."""
    blobs = {}

    def blob(data):
        digest = sha256(data)
        blobs[digest] = data
        return {"digest": digest, "size": len(data)}
    layer = layer_tar()
    config = json.dumps({
        "architecture": "amd64", "os": "linux",
        "config": {"Entrypoint": entrypoint,
                   "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
                   "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [sha256(layer)]},
    }).encode()
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **blob(config)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", **blob(layer)}],
    }).encode()
    index = json.dumps({
        "schemaVersion": 2,
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                       **blob(manifest),
                       "platform": {"architecture": "amd64", "os": "linux"},
                       "annotations": {"io.containerd.image.name": name,
                                       "org.opencontainers.image.ref.name": name.split(":")[-1]}}],
    }).encode()
    with tarfile.open(path, "w") as tar:
        def add(member, data):
            info = tarfile.TarInfo(member)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
        add("oci-layout", b'{"imageLayoutVersion": "1.0.0"}')
        add("index.json", index)
        for digest, data in blobs.items():
            add("blobs/sha256/" + digest.split(":")[1], data)


def containerd_config(work, stockade, runtime_root):
    """The private containerd, its CRI plugin enabled. What the plugin needs
    to start with no kubelet and no CNI (docs/oci.md records each)."""
    return f"""version = 2
root = "{work}/root"
state = "{work}/state"

[grpc]
  address = "{work}/containerd.sock"

[debug]
  level = "info"

[plugins."io.containerd.internal.v1.opt"]
  path = "{work}/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  # The exec/attach streaming server: loopback, a port of the kernel's choosing.
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  disable_apparmor = true
  systemd_cgroup = false
  # The pause container's oomScoreAdj is -998: lowering one's own needs
  # CAP_SYS_RESOURCE, which root lacks on these machines (runc fails alike);
  # this clamps it to containerd's own, as for a rootless containerd.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{work}/cni-bin"
    conf_dir = "{work}/cni-conf"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "stockade"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.stockade]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.stockade.options]
        BinaryName = "{stockade}"
        Root = "{runtime_root}"
        SystemdCgroup = false
"""


def ctr(work, *args, timeout=120):
    return subprocess.run(["ctr", "--address", f"{work}/containerd.sock", "--namespace", K8S,
                           *args], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout)


def task_pid(work, cid):
    r = ctr(work, "task", "ls")
    for line in r.stdout.splitlines()[1:]:
        words = line.split()
        if len(words) >= 3 and words[0] == cid:
            return int(words[1])
    return 0


def status_of(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            return {k: v.strip() for k, v in (line.split(":", 1) for line in f if ":" in line)}
    except OSError:
        return {}


def children_of(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def ns_of(pid, name):
    try:
        return os.readlink(f"/proc/{pid}/ns/{name}")
    except OSError as e:
        return str(e)


def cgroup_of(pid):
    """A process's cgroup in the memory hierarchy (v1), or the v2 one."""
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            lines = [line.strip().split(":", 2) for line in f]
    except OSError as e:
        return str(e)
    memory = [p for _, c, p in lines if c == "memory"]
    return memory[0] if memory else [p for _, c, p in lines if c == ""][0]


def stockade_state(stockade, runtime_root, cid):
    r = subprocess.run([stockade, "--root", f"{runtime_root}/{K8S}", "state", cid],
                       capture_output=True, text=True, timeout=60)
    return json.loads(r.stdout) if r.returncode == 0 else {"error": r.stderr}


def shims_of(address):
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


def read_cri_log(path):
    """The CRI log format: `TIME STREAM P|F TEXT` a line (F a full line)."""
    lines = []
    try:
        with open(path) as f:
            for line in f:
                parts = line.rstrip("\n").split(" ", 3)
                if len(parts) == 4:
                    lines.append(parts)
    except OSError as e:
        return str(e)
    return lines


def inside(stockade, work):
    """The test proper, in the private mount namespace."""
    import grpc
    from cri_client import (CONTAINER, CONTAINER_EXITED, CONTAINER_RUNNING, NODE, POD, Cri)

    hold = os.path.join(work, "hold-stockade")
    os.makedirs(hold)
    os.makedirs("/run/stockade", exist_ok=True)
    subprocess.run(["mount", "--bind", "/run/stockade", hold], check=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=755,size=16m", "tmpfs", "/run"], check=True)
    os.makedirs("/run/stockade")
    subprocess.run(["mount", "--move", hold, "/run/stockade"], check=True)
    for d in ["cni-bin", "cni-conf", "opt", "logs"]:
        os.makedirs(os.path.join(work, d))

    runtime_root = os.path.join(work, "runtime-root")
    address = os.path.join(work, "containerd.sock")
    config = os.path.join(work, "config.toml")
    with open(config, "w") as f:
        f.write(containerd_config(work, stockade, runtime_root))
    # The pause container as a pause image's: sleeps until killed.
    make_image(os.path.join(work, "pause.tar"), PAUSE_IMAGE, ["/bin/sleep", "2147483647"])
    make_image(os.path.join(work, "app.tar"), APP_IMAGE, ["/bin/sh"])

    log = open(os.path.join(work, "containerd.log"), "w")
    daemon = subprocess.Popen(["containerd", "--config", config], stdin=subprocess.DEVNULL,
                              stdout=log, stderr=log, start_new_session=True)
    cri = None
    pods = []
    try:
        if not wait_for(lambda: ctr(work, "version").returncode == 0, 60):
            check("the private containerd answers", False, open(log.name).read()[-3000:])
            return
        check("the private containerd answers", True)
        for tarball in ("pause.tar", "app.tar"):
            r = ctr(work, "images", "import", os.path.join(work, tarball))
            check(f"ctr -n k8s.io images import {tarball}", r.returncode == 0, (r.stdout, r.stderr))
        r = ctr(work, "images", "ls", "-q")
        check("both images are in the k8s.io namespace",
              {PAUSE_IMAGE, APP_IMAGE} <= set(r.stdout.split()), r.stdout)

        cri = Cri(address)
        try:
            version, answer = cri.negotiate()
        except grpc.RpcError as e:
            check("the CRI plugin answers Version", False, e)
            return
        print(f"     CRI API {version}: {answer}")
        check("the CRI plugin serves runtime.v1 (containerd 1.6)", version == "v1", version)
        conditions = {c["type"]: c for c in cri.Status()["status"]["conditions"]}
        check("Status: RuntimeReady (NetworkReady is false with no CNI config: the pods use "
              "the node's network)", conditions.get("RuntimeReady", {}).get("status") is True,
              conditions)
        image = cri.ImageStatus(image={"image": APP_IMAGE})["image"]
        check("ImageStatus: the CRI plugin sees the imported app image",
              APP_IMAGE in image["repo_tags"] or ("docker.io/" + APP_IMAGE) in image["repo_tags"]
              or image["id"].startswith("sha256:"), image)

        ns_node = {"network": NODE, "pid": CONTAINER, "ipc": POD}
        log_dir = os.path.join(work, "logs", "pod-a")
        os.makedirs(log_dir)
        pod_config = {
            "metadata": {"name": "pod-a", "uid": "stockadecri", "namespace": "default",
                         "attempt": 0},
            "log_directory": log_dir,
            # seccomp RuntimeDefault (0, an empty message present): the pause
            # container under containerd's default profile, as a kubelet
            # with seccompDefault asks; unset, containerd 1.6 runs it unconfined.
            "linux": {"cgroup_parent": POD_CGROUP_PARENT,
                      "security_context": {"namespace_options": ns_node, "seccomp": {}}},
        }
        pod = cri.RunPodSandbox(config=pod_config)["pod_sandbox_id"]
        pods.append(pod)
        check("RunPodSandbox", bool(pod), pod)
        status = cri.PodSandboxStatus(pod_sandbox_id=pod)["status"]
        check("PodSandboxStatus: SANDBOX_READY", status["state"] == 0, status)
        pause_pid = task_pid(work, pod)
        check("the pause container's task runs", pause_pid > 0, ctr(work, "task", "ls").stdout)
        pause_state = stockade_state(stockade, runtime_root, pod)
        check("...its init is stockade's (stockade state names the task's pid)",
              pause_state.get("pid") == pause_pid, pause_state)

        def container(name, argv, **extra):
            cfg = {"metadata": {"name": name, "attempt": 0}, "image": {"image": APP_IMAGE},
                   "command": argv, "log_path": f"{name}/0.log",
                   "linux": {"security_context": {"namespace_options": ns_node,
                                                  # RuntimeDefault (0): containerd's profile.
                                                  "seccomp": {}}}}
            cfg.update(extra)
            return cri.CreateContainer(pod_sandbox_id=pod, config=cfg,
                                       sandbox_config=pod_config)["container_id"]

        def exited(cid):
            ok = wait_for(lambda: cri.ContainerStatus(container_id=cid)["status"]["state"]
                          == CONTAINER_EXITED, 60)
            return ok, cri.ContainerStatus(container_id=cid)["status"]

        # One-shot containers: exit codes 0 and 3, stdout and stderr logged.
        hello = container("hello", ["/bin/sh", "-c", "echo out-line; echo err-line >&2; exit 0"])
        check("CreateContainer", bool(hello), hello)
        cri.StartContainer(container_id=hello)
        ok, st = exited(hello)
        check("ContainerStatus: EXITED, exit code 0", ok and st["exit_code"] == 0, st)
        logged = read_cri_log(os.path.join(log_dir, "hello", "0.log"))
        streams = [(s, tag, text) for _, s, tag, text in logged] if isinstance(logged, list) \
            else logged
        check("the container's log (CRI format) holds its stdout and stderr lines",
              isinstance(streams, list) and ("stdout", "F", "out-line") in streams and
              ("stderr", "F", "err-line") in streams and st["log_path"].endswith("hello/0.log"),
              (logged, st["log_path"]))
        check("...each line stamped with an RFC 3339 time",
              isinstance(logged, list) and logged and all(
                  re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)", t)
                  for t, *_ in logged),
              logged)
        three = container("three", ["/bin/sh", "-c", "echo three; exit 3"])
        cri.StartContainer(container_id=three)
        ok, st = exited(three)
        check("ContainerStatus: exit code 3 passed through", ok and st["exit_code"] == 3, st)

        # A running container: host-side view, ExecSync, StopContainer.
        stubborn = container("stubborn", ["/bin/sh", "-c",
                                          "trap '' TERM; echo ready; while :; do sleep 1; done"])
        cri.StartContainer(container_id=stubborn)
        check("ContainerStatus: RUNNING", wait_for(
            lambda: cri.ContainerStatus(container_id=stubborn)["status"]["state"]
            == CONTAINER_RUNNING), cri.ContainerStatus(container_id=stubborn))
        app_init = task_pid(work, stubborn)
        app_state = stockade_state(stockade, runtime_root, stubborn)
        check("the app container's init is stockade's (its state names the task's pid)",
              app_init > 0 and app_state.get("pid") == app_init, (app_init, app_state))
        wait_for(lambda: children_of(app_init))
        shell = (children_of(app_init) or [0])[0]
        for who, pid in (("pause", (children_of(pause_pid) or [0])[0]), ("app", shell)):
            st = status_of(pid)
            uids = st.get("Uid", "0").split()
            check(f"the {who} container's command: Seccomp 2, NoNewPrivs 1, host uids not 0, "
                  "a user namespace not the host's",
                  st.get("Seccomp") == "2" and st.get("NoNewPrivs") == "1" and
                  "0" not in uids and ns_of(pid, "user") != ns_of(1, "user"),
                  (pid, {k: st.get(k) for k in ("Seccomp", "NoNewPrivs", "Uid")},
                   ns_of(pid, "user")))
        pause_cmd = (children_of(pause_pid) or [0])[0]
        for name in ("ipc", "uts"):
            check(f"the app's command shares the pause container's {name} namespace (inode)",
                  ns_of(shell, name) == ns_of(pause_cmd, name) and
                  ns_of(shell, name).startswith(name + ":"),
                  (ns_of(shell, name), ns_of(pause_cmd, name)))
        check("...the ipc namespace is the pod's own, not the host's",
              ns_of(shell, "ipc") != ns_of(1, "ipc"), ns_of(shell, "ipc"))
        # With the node's network the plugin lists no uts namespace either
        # (a pod's hostname is the node's then), so both are the caller's.
        check("...the uts namespace the node's (NamespaceMode NODE: none listed)",
              ns_of(shell, "uts") == ns_of(os.getpid(), "uts"), ns_of(shell, "uts"))
        check("...its pid namespace its own (NamespaceMode CONTAINER)",
              ns_of(shell, "pid") != ns_of(pause_cmd, "pid"))
        check("the app's init sits in its cgroup under the pod's cgroup_parent",
              cgroup_of(app_init) == f"{POD_CGROUP_PARENT}/{stubborn}", cgroup_of(app_init))

        r = cri.ExecSync(container_id=stubborn, cmd=["/bin/sh", "-c",
                                                     "echo from-exec; echo to-err >&2; exit 4"],
                         timeout=30)
        check("ExecSync: stdout, stderr and exit code 4",
              r["stdout"] == b"from-exec\n" and r["stderr"] == b"to-err\n" and
              r["exit_code"] == 4, r)
        r = cri.ExecSync(container_id=stubborn, cmd=["/bin/grep", "^Seccomp:", "/proc/self/status"],
                         timeout=30)
        check("ExecSync: the exec'd process is under seccomp too",
              r["exit_code"] == 0 and r["stdout"].split() == [b"Seccomp:", b"2"], r)
        cri.StopContainer(container_id=stubborn, timeout=2)
        ok, st = exited(stubborn)
        check("StopContainer (timeout 2 s) of a container ignoring SIGTERM: ended by SIGKILL "
              "(exit code 137)", ok and st["exit_code"] == 137, st)
        check("...no process of it is left", wait_for(
            lambda: not os.path.exists(f"/proc/{app_init}") and
            not os.path.exists(f"/proc/{shell}")))
        logged = read_cri_log(os.path.join(log_dir, "stubborn", "0.log"))
        check("...its log holds its output", isinstance(logged, list) and
              ["stdout", "F", "ready"] in [x[1:] for x in logged], logged)

        for cid in (hello, three, stubborn):
            cri.RemoveContainer(container_id=cid)
        check("RemoveContainer: stockade's state of each is gone",
              all("error" in stockade_state(stockade, runtime_root, c)
                  for c in (hello, three, stubborn)))
        cri.StopPodSandbox(pod_sandbox_id=pod)
        check("StopPodSandbox: the pause container's processes end",
              wait_for(lambda: not os.path.exists(f"/proc/{pause_pid}")))
        cri.RemovePodSandbox(pod_sandbox_id=pod)
        pods.remove(pod)
        try:
            cri.PodSandboxStatus(pod_sandbox_id=pod)
            check("RemovePodSandbox: the pod is gone", False)
        except grpc.RpcError as e:
            check("RemovePodSandbox: the pod is gone", e.code() == grpc.StatusCode.NOT_FOUND,
                  e)

        left = [os.path.join(top, n) for top, dirs, files in os.walk(runtime_root)
                for n in dirs + files]
        check("nothing left under the runtime's --root (at most its empty namespace directory)",
              all(os.path.isdir(p) and not os.listdir(p) for p in left), left)
        r = ctr(work, "task", "ls", "-q")
        check("containerd lists no task", r.returncode == 0 and r.stdout.strip() == "", r.stdout)
        check("no shim of this containerd is left once the pod is removed",
              wait_for(lambda: not shims_of(address)), shims_of(address))
        with open("/proc/self/mountinfo") as f:
            mounts = [line.split()[4] for line in f]
        held = [m for m in mounts if m.startswith(os.path.join(work, "root")) or
                m.startswith(os.path.join(work, "state"))]
        check("no mount of the pod's is left (rootfs, /dev/shm)", not held, held)
    except grpc.RpcError as e:
        check("every CRI call succeeds", False, f"{e.code()}: {e.details()}")
    finally:
        for pod in pods:
            try:
                cri.StopPodSandbox(pod_sandbox_id=pod, timeout=60)
                cri.RemovePodSandbox(pod_sandbox_id=pod, timeout=60)
            except Exception as e:  # noqa: BLE001 (a cleanup: the checks above said it)
                print(f"     cleanup of pod {pod}: {e}")
        if cri:
            cri.close()
        for cid in ctr(work, "container", "ls", "-q").stdout.split():
            ctr(work, "task", "kill", "-s", "SIGKILL", cid, timeout=30)
            ctr(work, "task", "delete", "--force", cid, timeout=30)
            ctr(work, "container", "delete", cid, timeout=30)
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        log.close()
        for pid in shims_of(address):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        # The pod's cgroup_parent: the kubelet's to make and remove, so this
        # test's (innermost first); the runtime removed each container's leaf.
        parents = [POD_CGROUP_PARENT, os.path.dirname(POD_CGROUP_PARENT), "/kubepods"]
        for h in [""] + ["/" + h for h in os.listdir("/sys/fs/cgroup")]:
            for top in parents:
                try:
                    os.rmdir(f"/sys/fs/cgroup{h}{top}")
                except OSError:
                    pass
        # Unmount whatever containerd left in this namespace (it dies with
        # the namespace anyway), so that the work directory can be removed.
        subprocess.run(["umount", "-R", "-l", os.path.join(work, "root")],
                       capture_output=True)
        subprocess.run(["umount", "-R", "-l", os.path.join(work, "state")],
                       capture_output=True)
        if failures:
            print(open(log.name).read()[-4000:])


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--inside":
        inside(sys.argv[2], sys.argv[3])
        if failures:
            print(f"{len(failures)} failed: " + "; ".join(failures))
            sys.exit(1)
        sys.exit(0)
    stockade = os.path.abspath(sys.argv[1])
    if os.geteuid() != 0:
        skip("the CRI test runs as root (rootless containerd is not in scope)")
    missing = [t for t in TOOLS if not shutil.which(t)]
    if missing:
        skip(f"not installed: {', '.join(missing)} (scripts/install-deps.sh test)")
    if not os.path.exists(BUSYBOX):
        skip("busybox-static is not installed (scripts/install-deps.sh test)")
    try:
        import grpc  # noqa: F401
    except ImportError:
        skip("python3-grpcio is not installed (scripts/install-deps.sh test)")
    host_run_containerd = os.path.lexists("/run/containerd")
    work = tempfile.mkdtemp(prefix="stockade-cri-", dir="/var/tmp")
    try:
        r = subprocess.run(["unshare", "--mount", "--propagation", "private", sys.executable,
                            os.path.abspath(__file__), "--inside", stockade, work], timeout=900)
        check("the host's /run/containerd is as it was",
              os.path.lexists("/run/containerd") == host_run_containerd)
        if r.returncode != 0:
            failures.append("the test inside its mount namespace")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print(f"{len(failures)} failed: " + "; ".join(failures))
        sys.exit(1)
    print("all passed")


if __name__ == "__main__":
    main()
