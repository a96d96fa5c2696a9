#!/usr/bin/env python3
"""Kubernetes' path, driven for real (issue 19): containerd's CRI plugin
(io.containerd.grpc.v1.cri, Debian's containerd 1.6) with stockade as the
runc shim's binary, called as a kubelet calls it, through the CRI's gRPC
API (tests/oci/cri_client.py: python3-grpcio, the messages encoded by hand).
No kubelet, no crictl, no image registry: the pause and app images are OCI
image tarballs of a busybox-static rootfs made here, imported with `ctr -n
k8s.io images import`; the plugin's sandbox_image names the pause image.
Most pods use the node's network (NamespaceMode NODE); one the pod network,
CNI's bridge plugin (containernetworking-plugins) with its bridge in the
network namespace the test runs containerd in, never the host's.

usage: cri.py STOCKADE

Checked: RunPodSandbox; CreateContainer, StartContainer and ContainerStatus
until exited with its exit code (0 and 3); the container's log file in the
CRI format holding its stdout and stderr lines; ExecSync into a running
container (output and exit code); the streaming calls over the plugin's
stream server (tests/oci/cri_stream.py): Exec with stdin, stdout and stderr
and with a terminal and its size, Attach to a container made with stdin,
PortForward into the network pod; StopContainer of a command that traps
SIGTERM and of one that ignores it (SIGKILL at the timeout: 137);
an ExecSync past its timeout; a container OOMKilled past its memory limit;
a tty: true container; ContainerStats; RemoveContainer, StopPodSandbox,
RemovePodSandbox; the same one-shot containers under runc (handler "runc")
seen alike by the client.
From the host: each container's init is stockade's (its state under the
shim's --root names the pid) and its command runs with Seccomp 2,
NoNewPrivs 1 and a user namespace that is not the host's, host uids not 0;
the app's command is in the pause container's ipc and uts namespaces (by
inode) and its init in the cgroup the plugin named under the pod's
cgroup_parent (cgroupfs and systemd drivers); a pod sharing its pid
namespace; a kubelet-shaped container (runAsUser, volumes, limits,
supplementalGroups); a hostPID pod (the node's pid namespace), hostIPC; a pod on the pod network,
reached at its address and its hostPort, its sysctls; stockade's profile
asked by a pod annotation, its refusal counted by name. After the
removals nothing is left under the runtime's --root, no process of the
pods, no mount of theirs, no network namespace.

As containerd.py: a mount namespace of its own with a tmpfs over /run (the
shims' sockets under /run/containerd), the host's /run/stockade bound back;
and a network namespace of its own (the node's, for these pods).

Root only (rootless containerd is not in scope). Exit 77 (a skip) when a
tool is missing or this is not root; CI (env CI=true) turns that into a
failure.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

from cri_pods import (POD_CGROUP_PARENT, SYSTEMD_POD_DIR, Pod, host_namespaces, kubelet_shaped,
                      network_pod, profile_pod, shared_pid_pod, supplemental_groups, systemd_pod)
from cri_stream import attach_stream, exec_streams
from cri_setup import (APP_IMAGE, CNI_BIN, PAUSE_IMAGE, cgroup_of, children_of, ctr, ns_of,
                       pod_pids_running, prepare_node, read_cri_log, shims_of, status_of,
                       stockade_state, task_pid)
from oci_common import BUSYBOX, check, failures, finish, skip, wait_for

TOOLS = ["containerd", "ctr", "containerd-shim-runc-v2", "unshare", "mount", "ip", "iptables",
         "iptables-save"]


def one_shots(pod):
    """What a client sees of one-shot containers and an exec, compared
    between stockade and runc: exit codes, logs, ExecSync, a missing
    executable's failed start."""
    import grpc
    from cri_client import CONTAINER_EXITED, CONTAINER_RUNNING
    seen = {}
    hello = pod.container("hello", ["/bin/sh", "-c", "echo out-line; echo err-line >&2; exit 0"])
    st = pod.run_to_exit(hello)
    seen["hello"] = (st["state"], st["exit_code"], st["reason"], sorted(pod.log("hello")))
    three = pod.container("three", ["/bin/sh", "-c", "echo three; exit 3"])
    st = pod.run_to_exit(three)
    seen["three"] = (st["state"], st["exit_code"], st["reason"], pod.log("three"))
    # Past its memory limit (32 MiB; dd's 64 MiB buffer, no swap here): the
    # kernel's OOM kill, which the shim hears from the container's cgroup.
    # The shim listens only once its Start has returned (containerd 1.6
    # adds the cgroup to its OOM poller after the runtime's start), so dd
    # waits for a file made after StartContainer returns: an OOM before
    # that is never reported, under runc as under stockade (CI saw reason
    # Error once, under ASan's slower exit of `stockade start`).
    go = tempfile.mkdtemp(prefix="go-", dir=pod.log_dir)
    os.chmod(go, 0o755)
    oom = pod.container("oom", ["/bin/sh", "-c", "while [ ! -e /go/now ]; do sleep 0.05; done; "
                                "exec /bin/dd if=/dev/zero of=/dev/null bs=64M count=1"],
                        resources={"memory_limit_in_bytes": 32 << 20},
                        mounts=[{"container_path": "/go", "host_path": go, "readonly": True}])
    pod.cri.StartContainer(container_id=oom)
    open(os.path.join(go, "now"), "w").close()
    wait_for(lambda: pod.status(oom)["state"] == CONTAINER_EXITED, 60)
    st = pod.status(oom)
    seen["oom"] = (st["state"], st["exit_code"], st["reason"])
    # tty: true (kubectl run -t): the shim hands the runtime a console
    # socket and logs the pty's output.
    tty = pod.container("tty", ["/bin/sh", "-c", "tty; test -t 1 && echo stdout-is-a-tty"],
                        tty=True)
    st = pod.run_to_exit(tty)
    seen["tty"] = (st["state"], st["exit_code"], pod.log("tty"))
    missing = pod.container("missing", ["/bin/no-such-program"])
    try:
        pod.cri.StartContainer(container_id=missing)
        seen["missing"] = ("started",)
    except grpc.RpcError as e:
        st = pod.status(missing)
        seen["missing"] = (e.code(), 'exec: "/bin/no-such-program": stat /bin/no-such-program: '
                           "no such file or directory" in e.details(),
                           st["state"], st["exit_code"], st["reason"])
    running = pod.container("running", ["/bin/sh", "-c", "trap 'echo bye; exit 7' TERM; "
                                        "echo up; while :; do sleep 1; done"])
    pod.cri.StartContainer(container_id=running)
    wait_for(lambda: pod.status(running)["state"] == CONTAINER_RUNNING)
    r = pod.cri.ExecSync(container_id=running,
                         cmd=["/bin/sh", "-c", "echo from-exec; echo to-err >&2; exit 4"],
                         timeout=30)
    seen["exec"] = (r["stdout"], r["stderr"], r["exit_code"])
    # kubectl exec -i and -it: the streaming Exec, over the plugin's stream
    # server; then kubectl attach -i to a container made with stdin.
    seen.update(exec_streams(pod.cri, running))
    seen["attach"] = attach_stream(pod)
    pod.cri.StopContainer(container_id=running, timeout=30)
    st = pod.status(running)
    seen["stopped"] = (st["state"], st["exit_code"], st["reason"], pod.log("running"))
    # A command with no handler of its own: under runc it is PID 1 of its
    # pid namespace, so the kernel drops SIGTERM and SIGKILL ends it after
    # the timeout (137); stockade's init passes on only what the command
    # catches, so the same.
    plain = pod.container("plain", ["/bin/sh", "-c", "exec sleep 1000"])
    pod.cri.StartContainer(container_id=plain)
    wait_for(lambda: pod.status(plain)["state"] == CONTAINER_RUNNING)
    pod.cri.StopContainer(container_id=plain, timeout=2)
    st = pod.status(plain)
    seen["plain"] = (st["state"], st["exit_code"])
    return seen


def basic_pod(cri, work, stockade, runtime_root):
    """A pod, its containers seen from the host; returns what one_shots saw."""
    import grpc
    from cri_client import CONTAINER, CONTAINER_EXITED, CONTAINER_RUNNING
    pod = Pod(cri, work, "pod-a", CONTAINER)
    check("RunPodSandbox", bool(pod.id), pod.id)
    status = cri.PodSandboxStatus(pod_sandbox_id=pod.id)["status"]
    check("PodSandboxStatus: SANDBOX_READY", status["state"] == 0, status)
    pause_pid = task_pid(work, pod.id)
    check("the pause container's task runs", pause_pid > 0, ctr(work, "task", "ls").stdout)
    pause_state = stockade_state(stockade, runtime_root, pod.id)
    check("...its init is stockade's (stockade state names the task's pid)",
          pause_state.get("pid") == pause_pid, pause_state)

    seen = one_shots(pod)
    check("ContainerStatus: EXITED, exit code 0, reason Completed",
          seen["hello"][:3] == (CONTAINER_EXITED, 0, "Completed"), seen["hello"])
    check("the container's log (CRI format) holds its stdout and stderr lines, each full (F)",
          seen["hello"][3] == [("stderr", "F", "err-line"), ("stdout", "F", "out-line")],
          seen["hello"])
    logged = read_cri_log(os.path.join(pod.log_dir, "hello", "0.log"))
    check("...each line stamped with an RFC 3339 time",
          isinstance(logged, list) and logged and all(
              re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)", t)
              for t, *_ in logged), logged)
    check("a container past its memory limit: OOMKilled, exit code 137 (the shim's OOM event "
          "from the container's cgroup)", seen["oom"] == (CONTAINER_EXITED, 137, "OOMKilled"),
          seen["oom"])
    check("tty: true: the command's stdout is a pty (/dev/pts/0), its output logged",
          seen["tty"] == (CONTAINER_EXITED, 0, [("stdout", "F", "/dev/pts/0"),
                                                ("stdout", "F", "stdout-is-a-tty")]),
          seen["tty"])
    check("ContainerStatus: exit code 3 passed through, reason Error",
          seen["three"] == (CONTAINER_EXITED, 3, "Error", [("stdout", "F", "three")]),
          seen["three"])
    check("StartContainer of a missing executable fails naming it (create fails, as runc's); "
          "the container EXITED 128, StartError",
          seen["missing"] == (grpc_unknown(), True, CONTAINER_EXITED, 128, "StartError"),
          seen["missing"])
    check("ExecSync: stdout, stderr and exit code 4",
          seen["exec"] == (b"from-exec\n", b"to-err\n", 4), seen["exec"])
    check("Exec (streaming, kubectl exec -i): stdin reaches the command, stdout and stderr "
          "come back on their channels, the status says exit code 5",
          seen["exec-stream"] == (b"got:hello\n", b"err-line\n", 5), seen["exec-stream"])
    check("Exec with a terminal (kubectl exec -it): stdin, stdout and stderr are a pty of the "
          "container's, its size the one the client sent (40 rows, 100 columns), the line "
          "typed echoed, exit code 2",
          seen["exec-tty"] == (["go", "/dev/pts/0", "size:40 100", "in-tty"], False, 2),
          seen["exec-tty"])
    check("Attach (kubectl attach -i) to a container made with stdin: the line sent reaches "
          "its command, its stdout and stderr come back, it exits 6 (ContainerStatus and the "
          "stream's status), its output logged",
          seen["attach"] == (b"attached:hi\n", b"attach-err\n", 0, CONTAINER_EXITED, 6,
                             [("stderr", "F", "attach-err"), ("stdout", "F", "attached:hi")]),
          seen["attach"])
    check("StopContainer (timeout 30 s) of a container whose command traps SIGTERM: its "
          "handler ran (exit code 7, its last line logged)",
          seen["stopped"] == (CONTAINER_EXITED, 7, "Error",
                              [("stdout", "F", "up"), ("stdout", "F", "bye")]), seen["stopped"])

    # A running container: host-side view, ExecSync, StopContainer.
    # It takes SIGTERM (says so) and goes on: StopContainer must end it
    # with SIGKILL once the timeout has passed.
    stubborn = pod.container("stubborn", ["/bin/sh", "-c", "trap 'echo got-term' TERM; "
                                          "echo ready; while :; do sleep 1; done"])
    cri.StartContainer(container_id=stubborn)
    check("ContainerStatus: RUNNING",
          wait_for(lambda: pod.status(stubborn)["state"] == CONTAINER_RUNNING),
          pod.status(stubborn))
    app_init = task_pid(work, stubborn)
    app_state = stockade_state(stockade, runtime_root, stubborn)
    check("the app container's init is stockade's (its state names the task's pid)",
          app_init > 0 and app_state.get("pid") == app_init, (app_init, app_state))
    wait_for(lambda: children_of(app_init))
    shell = (children_of(app_init) or [0])[0]
    pause_cmd = (children_of(pause_pid) or [0])[0]
    for who, pid in (("pause", pause_cmd), ("app", shell)):
        st = status_of(pid)
        uids = st.get("Uid", "0").split()
        check(f"the {who} container's command: Seccomp 2, NoNewPrivs 1, host uids not 0, "
              "a user namespace not the host's",
              st.get("Seccomp") == "2" and st.get("NoNewPrivs") == "1" and
              "0" not in uids and ns_of(pid, "user") != ns_of(1, "user"),
              (pid, {k: st.get(k) for k in ("Seccomp", "NoNewPrivs", "Uid")}, ns_of(pid, "user")))
    for name in ("ipc", "uts"):
        check(f"the app's command shares the pause container's {name} namespace (inode)",
              ns_of(shell, name) == ns_of(pause_cmd, name) and
              ns_of(shell, name).startswith(name + ":"),
              (ns_of(shell, name), ns_of(pause_cmd, name)))
    check("...the ipc namespace is the pod's own, not the host's",
          ns_of(shell, "ipc") != ns_of(1, "ipc"), ns_of(shell, "ipc"))
    # With the node's network the plugin lists no uts namespace either (a
    # pod's hostname is the node's then), so both are the caller's.
    check("...the uts namespace the node's (NamespaceMode NODE: none listed)",
          ns_of(shell, "uts") == ns_of(os.getpid(), "uts"), ns_of(shell, "uts"))
    check("...its pid namespace its own (NamespaceMode CONTAINER)",
          ns_of(shell, "pid") != ns_of(pause_cmd, "pid"))
    check("the app's init sits in its cgroup under the pod's cgroup_parent",
          cgroup_of(app_init) == f"{POD_CGROUP_PARENT}-pod-a/{stubborn}", cgroup_of(app_init))
    stats = cri.ContainerStats(container_id=stubborn)["stats"]
    check("ContainerStats: the plugin reads the container's cgroup through the shim (memory "
          "and cpu used)", stats["attributes"]["id"] == stubborn and
          stats["memory"]["usage_bytes"]["value"] > 0 and
          stats["cpu"]["usage_core_nano_seconds"]["value"] > 0, stats)
    r = cri.ExecSync(container_id=stubborn, cmd=["/bin/grep", "^Seccomp:", "/proc/self/status"],
                     timeout=30)
    check("ExecSync: the exec'd process is under seccomp too",
          r["exit_code"] == 0 and r["stdout"].split() == [b"Seccomp:", b"2"], r)
    # A probe that outlives its timeout (a kubelet's exec probe): the plugin
    # kills what the shim started; nothing of it may stay in the container.
    probe = []

    def overrun():
        try:
            probe.append(("answered", cri.ExecSync(container_id=stubborn,
                                                   cmd=["/bin/sleep", "1234"], timeout=3)))
        except grpc.RpcError as e:
            probe.append((e.code(), e.details()))
    runner = threading.Thread(target=overrun)
    runner.start()
    check("ExecSync of a command that outlives its timeout (3 s): its process seen in the "
          "container's cgroup while it runs",
          wait_for(lambda: pod_pids_running(["/bin/sleep", "1234"]), 10))
    runner.join(60)
    check("...the call ends in an error saying timeout",
          probe and probe[0][0] != "answered" and "timeout" in str(probe[0][1]).lower(), probe)
    check("...and its process is gone from the container",
          wait_for(lambda: not pod_pids_running(["/bin/sleep", "1234"]), 10),
          pod_pids_running(["/bin/sleep", "1234"]))
    cri.StopContainer(container_id=stubborn, timeout=2)
    wait_for(lambda: pod.status(stubborn)["state"] == CONTAINER_EXITED, 60)
    st = pod.status(stubborn)
    check("StopContainer (timeout 2 s) of a container ignoring SIGTERM: SIGTERM reached its "
          "command (logged), SIGKILL ended it (exit code 137)",
          st["state"] == CONTAINER_EXITED and st["exit_code"] == 137 and
          ("stdout", "F", "got-term") in pod.log("stubborn"), (st, pod.log("stubborn")))
    check("...no process of it is left", wait_for(
        lambda: not os.path.exists(f"/proc/{app_init}") and not os.path.exists(f"/proc/{shell}")))
    check("...its log holds its output", ("stdout", "F", "ready") in pod.log("stubborn"),
          pod.log("stubborn"))

    ids = list(pod.containers)
    for cid in ids:
        cri.RemoveContainer(container_id=cid)
    pod.containers = []
    check("RemoveContainer: stockade's state of each is gone",
          all("error" in stockade_state(stockade, runtime_root, c) for c in ids))
    cri.StopPodSandbox(pod_sandbox_id=pod.id)
    check("StopPodSandbox: the pause container's processes end",
          wait_for(lambda: not os.path.exists(f"/proc/{pause_pid}") and
                   not os.path.exists(f"/proc/{pause_cmd}")))
    cri.RemovePodSandbox(pod_sandbox_id=pod.id)
    try:
        cri.PodSandboxStatus(pod_sandbox_id=pod.id)
        check("RemovePodSandbox: the pod is gone", False)
    except Exception as e:  # noqa: BLE001 (grpc.RpcError; its code checked)
        check("RemovePodSandbox: the pod is gone (NOT_FOUND)", "NOT_FOUND" in str(e), e)
    return seen


def grpc_unknown():
    import grpc
    return grpc.StatusCode.UNKNOWN


def inside(stockade, work):
    """The test proper, in the private mount namespace."""
    import grpc
    from cri_client import Cri

    runtime_root = os.path.join(work, "runtime-root")
    runc = shutil.which("runc")
    address = os.path.join(work, "containerd.sock")
    config = prepare_node(work, stockade, runtime_root, runc or "/usr/sbin/runc")

    log = open(os.path.join(work, "containerd.log"), "w")
    daemon = subprocess.Popen(["containerd", "--config", config], stdin=subprocess.DEVNULL,
                              stdout=log, stderr=log, start_new_session=True)
    cri = None
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
        check("Status: RuntimeReady and NetworkReady (the CNI bridge configuration loaded)",
              conditions.get("RuntimeReady", {}).get("status") is True and
              conditions.get("NetworkReady", {}).get("status") is True, conditions)
        image = cri.ImageStatus(image={"image": APP_IMAGE})["image"]
        check("ImageStatus: the CRI plugin sees the imported app image",
              APP_IMAGE in image["repo_tags"] and image["id"].startswith("sha256:"), image)

        seen = basic_pod(cri, work, stockade, runtime_root)
        # The same one-shot containers under runc, the reference, in the
        # same daemon and run (runtime_handler "runc"): what the client sees
        # must not differ.
        if runc is None:
            check("runc is installed (the reference; scripts/install-deps.sh)",
                  os.environ.get("CI") != "true")
        else:
            ref = Pod(cri, work, "pod-runc", 1, handler="runc")
            ref_seen = one_shots(ref)
            ref.remove()
            for key in seen:
                check(f"{key}: what the CRI client sees is as under runc",
                      seen[key] == ref_seen[key], (seen[key], ref_seen[key]))
            check("plain: StopContainer of a command with no handler: not taken as PID 1's, "
                  "killed at the timeout (137), as under runc",
                  seen["plain"] == (2, 137), (seen["plain"], ref_seen["plain"]))
        kubelet_shaped(cri, work)
        host_namespaces(cri, work, stockade, runtime_root)
        supplemental_groups(cri, work)
        shared_pid_pod(cri, work)
        systemd_pod(cri, work)
        network_pod(cri, work)
        profile_pod(cri, work, stockade, runtime_root)

        left = [os.path.join(top, n) for top, dirs, files in os.walk(runtime_root)
                for n in dirs + files]
        check("nothing left under the runtime's --root (at most its empty namespace directory)",
              all(os.path.isdir(p) and not os.listdir(p) for p in left), left)
        leftover = {" ".join(argv): pod_pids_running(argv) for argv in
                    (["/bin/sleep", "2147483647"], ["sleep", "1000"],
                     ["httpd", "-f", "-p", "8080", "-h", "/tmp/www"])}
        check("no process of any pod is left (pause, app, server)",
              not any(leftover.values()), leftover)
        r = ctr(work, "task", "ls", "-q")
        check("containerd lists no task", r.returncode == 0 and r.stdout.strip() == "", r.stdout)
        check("no shim of this containerd is left once the pods are removed",
              wait_for(lambda: not shims_of(address)), shims_of(address))
        with open("/proc/self/mountinfo") as f:
            mounts = [line.split()[4] for line in f]
        held = [m for m in mounts if m.startswith(os.path.join(work, "root")) or
                m.startswith(os.path.join(work, "state"))]
        check("no mount of the pods' is left (rootfs, /dev/shm)", not held, held)
    except grpc.RpcError as e:
        check("every CRI call succeeds", False, f"{e.code()}: {e.details()}")
    finally:
        if cri:
            # Whatever pod a failure left: stopped and removed as a kubelet would.
            try:
                for cid in ctr(work, "container", "ls", "-q").stdout.split():
                    try:
                        cri.StopPodSandbox(pod_sandbox_id=cid, deadline=60)
                        cri.RemovePodSandbox(pod_sandbox_id=cid, deadline=60)
                    except grpc.RpcError:
                        pass
            finally:
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
        # Each pod's cgroup_parent: the kubelet's to make and remove, so this
        # test's (innermost first); the runtime removed each container's leaf.
        for h in [""] + ["/" + h for h in os.listdir("/sys/fs/cgroup")]:
            base = f"/sys/fs/cgroup{h}{os.path.dirname(POD_CGROUP_PARENT)}"
            if os.path.isdir(base):
                for pod_dir in os.listdir(base):
                    try:
                        os.rmdir(os.path.join(base, pod_dir))
                    except OSError:
                        pass
            for top in [os.path.dirname(POD_CGROUP_PARENT), "/kubepods", SYSTEMD_POD_DIR,
                        os.path.dirname(SYSTEMD_POD_DIR), "/kubepods.slice"]:
                try:
                    os.rmdir(f"/sys/fs/cgroup{h}{top}")
                except OSError:
                    pass
        # containerd's mounts live in this namespace and end with it; the
        # work directory is removed by the caller once they are gone.
        if failures:
            print(open(log.name).read()[-4000:])


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--inside":
        inside(sys.argv[2], sys.argv[3])
        finish()
        sys.exit(0)
    stockade = os.path.abspath(sys.argv[1])
    if os.geteuid() != 0:
        skip("the CRI test runs as root (rootless containerd is not in scope)")
    missing = [t for t in TOOLS if not shutil.which(t)]
    if missing:
        skip(f"not installed: {', '.join(missing)} (scripts/install-deps.sh test)")
    if not os.path.exists(os.path.join(CNI_BIN, "bridge")):
        skip("containernetworking-plugins is not installed (scripts/install-deps.sh test)")
    if not os.path.exists(BUSYBOX):
        skip("busybox-static is not installed (scripts/install-deps.sh test)")
    import importlib.util
    if importlib.util.find_spec("grpc") is None:
        skip("python3-grpcio is not installed (scripts/install-deps.sh test)")
    if importlib.util.find_spec("websocket") is None:
        skip("python3-websocket is not installed (scripts/install-deps.sh test)")
    host_run_containerd = os.path.lexists("/run/containerd")

    def cni_state():
        return sorted(os.path.join(top, n) for top, dirs, files in os.walk("/var/lib/cni")
                      for n in dirs + files)
    host_cni = cni_state()

    def host_nat():
        """The host's NAT rules (counters and comments dropped)."""
        r = subprocess.run(["iptables-save", "-t", "nat"], capture_output=True, text=True)
        return sorted(re.sub(r"\[\d+:\d+\]", "", line) for line in r.stdout.splitlines()
                      if not line.startswith("#")) if r.returncode == 0 else r.stderr
    nat = host_nat()
    work = tempfile.mkdtemp(prefix="stockade-cri-", dir="/var/tmp")
    try:
        r = subprocess.run(["unshare", "--mount", "--net", "--propagation", "private",
                            sys.executable,
                            os.path.abspath(__file__), "--inside", stockade, work], timeout=900)
        check("the host's /run/containerd is as it was",
              os.path.lexists("/run/containerd") == host_run_containerd)
        check("the host's /var/lib/cni is as it was", cni_state() == host_cni)
        link = subprocess.run(["ip", "link", "show", "stk-cni0"], capture_output=True)
        check("no CNI bridge on the host's network", link.returncode != 0, link.stdout)
        check("the host's NAT rules as they were (portmap's are the test namespace's)",
              host_nat() == nat)
        if r.returncode != 0:
            failures.append("the test inside its mount namespace")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
