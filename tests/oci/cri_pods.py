"""The pod of tests/oci/cri.py as a kubelet makes one, and the pods of its
shapes beyond the first: a shared pid namespace, the systemd cgroup driver,
the pod network through CNI, stockade's profile asked by an annotation."""
import errno
import os
import socket

from cri_stream import port_forward
from cri_setup import (APP_IMAGE, POD_SUBNET, cgroup_of, children_of, ns_of, pod_pids_running,
                       read_cri_log, status_of, stockade_state, task_pid)
from oci_common import check, wait_for

# The network pod's hostPort, on the node's (the test namespace's) loopback.
HOST_PORT = 18080
# The kubelet's cgroupfs driver names a pod's cgroup so (QoS class, pod UID).
POD_CGROUP_PARENT = "/kubepods/besteffort/podstockadecri"
# ...and so with its systemd driver, and the directory systemd gives it.
SYSTEMD_POD_SLICE = "kubepods-besteffort-podstockadecri.slice"
SYSTEMD_POD_DIR = ("/kubepods.slice/kubepods-besteffort.slice/"
                   "kubepods-besteffort-podstockadecri.slice")


class Pod:
    """A pod as a kubelet makes one: RunPodSandbox (the node's network, or
    the pod network given network=POD), its containers created from the app
    image, logs under its directory."""

    def __init__(self, cri, work, name, pid_mode, handler="", cgroup_parent=None, network=None,
                 sysctls=None, ipc=None, ports=None):
        from cri_client import NODE, POD
        self.cri, self.handler = cri, handler
        self.log_dir = os.path.join(work, "logs", name)
        os.makedirs(self.log_dir)
        self.ns = {"network": NODE if network is None else network, "pid": pid_mode,
                   "ipc": POD if ipc is None else ipc}
        # seccomp RuntimeDefault (0, an empty message present): under
        # containerd's default profile, as a kubelet with seccompDefault
        # asks; unset, containerd 1.6 runs the pause container unconfined.
        self.config = {
            "metadata": {"name": name, "uid": "uid-" + name, "namespace": "default",
                         "attempt": 0},
            "log_directory": self.log_dir,
            "linux": {"cgroup_parent": cgroup_parent or f"{POD_CGROUP_PARENT}-{name}",
                      "security_context": {"namespace_options": self.ns, "seccomp": {}}},
        }
        if ports:
            self.config["port_mappings"] = [
                {"container_port": c, "host_port": h, "host_ip": "127.0.0.1"}
                for c, h in ports.items()]
        if sysctls:
            self.config["linux"]["sysctls"] = [{"key": k, "value": v} for k, v in sysctls.items()]
        self.id = cri.RunPodSandbox(config=self.config, runtime_handler=handler)["pod_sandbox_id"]
        self.containers = []

    def container(self, name, argv, seccomp=None, annotations=None, drop=None, security=None,
                  **config):
        """CreateContainer; security adds to the security context, config
        to the ContainerConfig (envs, mounts, working_dir, resources)."""
        resources = config.pop("resources", None)
        security = {"namespace_options": self.ns, "seccomp": seccomp or {}, **(security or {})}
        if drop:
            security["capabilities"] = {"drop_capabilities": drop}
        cfg = {"metadata": {"name": name, "attempt": 0}, "image": {"image": APP_IMAGE},
               "command": argv, "log_path": f"{name}/0.log",
               "linux": {"security_context": security}, **config}
        if resources:
            cfg["linux"]["resources"] = resources
        if annotations:
            cfg["annotations"] = [{"key": k, "value": v} for k, v in annotations.items()]
        cid = self.cri.CreateContainer(pod_sandbox_id=self.id, config=cfg,
                                       sandbox_config=self.config)["container_id"]
        self.containers.append(cid)
        return cid

    def status(self, cid):
        return self.cri.ContainerStatus(container_id=cid)["status"]

    def run_to_exit(self, cid):
        """StartContainer, then ContainerStatus until EXITED: (started, status)."""
        from cri_client import CONTAINER_EXITED
        self.cri.StartContainer(container_id=cid)
        wait_for(lambda: self.status(cid)["state"] == CONTAINER_EXITED, 60)
        return self.status(cid)

    def log(self, name):
        """(stream, tag, text) of each line of the container's CRI log."""
        logged = read_cri_log(os.path.join(self.log_dir, name, "0.log"))
        return [tuple(x[1:]) for x in logged] if isinstance(logged, list) else logged

    def remove(self):
        for cid in self.containers:
            self.cri.RemoveContainer(container_id=cid)
        self.containers = []
        self.cri.StopPodSandbox(pod_sandbox_id=self.id)
        self.cri.RemovePodSandbox(pod_sandbox_id=self.id)


def shared_pid_pod(cri, work):
    """shareProcessNamespace: the app joins the pause container's pid
    namespace by path (/proc/PID/ns/pid, as the plugin passes it)."""
    from cri_client import CONTAINER_RUNNING, POD
    pod = Pod(cri, work, "pod-pid", POD)
    pause_cmd = (children_of(task_pid(work, pod.id)) or [0])[0]
    app = pod.container("app", ["/bin/sh", "-c", "exec sleep 1000"])
    cri.StartContainer(container_id=app)
    wait_for(lambda: pod.status(app)["state"] == CONTAINER_RUNNING)
    r = cri.ExecSync(container_id=app, cmd=["/bin/sh", "-c",
                                            "readlink /proc/self/ns/pid; ps -o pid,args"],
                     timeout=30)
    lines = r["stdout"].decode().splitlines()
    inner = (status_of(pause_cmd).get("NSpid", "?").split() or ["?"])[-1]
    listed = [line.split(None, 1) for line in lines[2:]]
    check("shared pid pod: the app is in the pause container's pid namespace and its ps shows "
          "the pause's sleep at the pid the host reads in NSpid",
          r["exit_code"] == 0 and lines[:1] == [ns_of(pause_cmd, "pid")] and
          [inner, "/bin/sleep 2147483647"] in [[x[0], x[1].strip()] for x in listed
                                               if len(x) == 2], (r, inner))
    app_init = task_pid(work, app)
    pod.remove()
    check("shared pid pod: after the removals none of its processes is left",
          wait_for(lambda: not any(os.path.exists(f"/proc/{p}")
                                   for p in (pause_cmd, app_init))))


def systemd_pod(cri, work):
    """The kubelet's systemd cgroup driver: a slice as cgroup_parent, the
    handler whose shim passes --systemd-cgroup; no systemd runs here, so
    stockade makes the directory systemd's scope would have."""
    from cri_client import CONTAINER, CONTAINER_RUNNING
    pod = Pod(cri, work, "pod-systemd", CONTAINER, handler="stockade-systemd",
              cgroup_parent=SYSTEMD_POD_SLICE)
    app = pod.container("app", ["/bin/sh", "-c", "exec sleep 1000"])
    cri.StartContainer(container_id=app)
    wait_for(lambda: pod.status(app)["state"] == CONTAINER_RUNNING)
    for who, cid in (("pause", pod.id), ("app", app)):
        got = cgroup_of(task_pid(work, cid))
        check(f"systemd pod: the {who}'s init sits in the scope systemd's unit would have",
              got == f"{SYSTEMD_POD_DIR}/cri-containerd-{cid}.scope", got)
    stats = cri.ContainerStats(container_id=app)["stats"]
    check("systemd pod: ContainerStats reads the app's scope",
          stats["memory"]["usage_bytes"]["value"] > 0, stats)
    pod.remove()
    slice_dir = f"/sys/fs/cgroup/memory{SYSTEMD_POD_DIR}"
    scopes = [d for d in os.listdir(slice_dir) if d.endswith(".scope")] \
        if os.path.isdir(slice_dir) else ["no slice"]
    check("systemd pod: each scope removed with its container, the pod's slice left (the "
          "kubelet's to remove, as under runc)", not scopes, scopes)


def network_pod(cri, work):
    """A pod on the pod network (CNI's bridge in the test's namespace): the
    plugin makes the pod's network namespace, and the pause and app
    containers join it by path, as on a Kubernetes node."""
    import urllib.request
    from cri_client import CONTAINER, CONTAINER_RUNNING, POD
    # Two of Kubernetes' safe sysctls, the pod's: one of its network
    # namespace (joined by path, so written by create), one of its ipc.
    pod = Pod(cri, work, "pod-net", CONTAINER, network=POD,
              sysctls={"net.ipv4.ip_unprivileged_port_start": "80",
                       "kernel.shm_rmid_forced": "1"},
              ports={8080: HOST_PORT})
    ip = cri.PodSandboxStatus(pod_sandbox_id=pod.id)["status"]["network"]["ip"]
    prefix = POD_SUBNET.rsplit(".", 1)[0] + "."
    check("network pod: CNI gave the pod an address of the bridge's subnet", ip.startswith(prefix),
          ip)
    server = pod.container("server", ["/bin/sh", "-c",
                                      "mkdir -p /tmp/www && echo from-the-pod > /tmp/www/index.html"
                                      " && exec httpd -f -p 8080 -h /tmp/www"])
    cri.StartContainer(container_id=server)
    wait_for(lambda: pod.status(server)["state"] == CONTAINER_RUNNING)
    pause_cmd = (children_of(task_pid(work, pod.id)) or [0])[0]
    httpd = (children_of(task_pid(work, server)) or [0])[0]
    # The final check that no pod process is left looks for these command
    # lines: seen here while they run.
    check("network pod: the pause's and the server's commands found on the host by their "
          "command lines", pod_pids_running(["/bin/sleep", "2147483647"]).count(pause_cmd) == 1
          and pod_pids_running(["httpd", "-f", "-p", "8080", "-h", "/tmp/www"]) == [httpd],
          (pause_cmd, httpd))
    check("network pod: the app's command is in the pause container's network namespace "
          "(inode), not the node's",
          ns_of(httpd, "net") == ns_of(pause_cmd, "net") and
          ns_of(httpd, "net") != ns_of(os.getpid(), "net"),
          (ns_of(httpd, "net"), ns_of(pause_cmd, "net"), pod.status(server), pod.log("server")))

    def fetch():
        try:
            with urllib.request.urlopen(f"http://{ip}:8080/index.html", timeout=5) as r:
                return r.read()
        except OSError as e:
            return str(e)
    wait_for(lambda: fetch() == b"from-the-pod\n")
    check("network pod: the node reaches the pod's server at the pod's address", fetch() ==
          b"from-the-pod\n", fetch())
    def fetch_host_port():
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{HOST_PORT}/index.html",
                                        timeout=5) as r:
                return r.read()
        except OSError as e:
            return str(e)
    check("network pod: the node reaches it through its hostPort on 127.0.0.1 (CNI's portmap)",
          wait_for(lambda: fetch_host_port() == b"from-the-pod\n", 10), fetch_host_port())
    r = cri.ExecSync(container_id=server, cmd=["/bin/wget", "-q", "-O", "-",
                                               "http://127.0.0.1:8080/index.html"], timeout=30)
    check("network pod: ExecSync in the pod fetches it on 127.0.0.1",
          r["exit_code"] == 0 and r["stdout"] == b"from-the-pod\n", r)
    r = cri.ExecSync(container_id=server, cmd=["/bin/cat",
                                               "/proc/sys/net/ipv4/ip_unprivileged_port_start",
                                               "/proc/sys/kernel/shm_rmid_forced"], timeout=30)
    try:
        with open("/proc/sys/net/ipv4/ip_unprivileged_port_start") as f:
            node_value = f.read().strip()
    except OSError as e:
        node_value = str(e)
    check("network pod: the pod's sysctls in its network and ipc namespaces, seen by the app "
          "(80, 1), the node's own not that (1024, the kernel's default)",
          r["stdout"].split() == [b"80", b"1"] and node_value == "1024", (r, node_value))
    # kubectl port-forward: the plugin dials localhost:8080 inside the
    # pod's network namespace (the pause's, joined by path), where the
    # server listens; nothing listens on the node's 127.0.0.1:8080.
    opened, answer, errors = port_forward(cri, pod.id, 8080,
                                          b"GET /index.html HTTP/1.0\r\n\r\n")
    check("network pod: PortForward (kubectl port-forward) to the pod's 8080 reaches its "
          "server: both channels open with the port, the page comes back, no error",
          opened == (8080, 8080) and answer.startswith(b"HTTP/1.") and
          answer.endswith(b"\r\n\r\nfrom-the-pod\n") and errors == b"",
          (opened, answer, errors))
    node = socket.socket()
    node.settimeout(5)
    try:
        node_answer = node.connect_ex(("127.0.0.1", 8080))
    finally:
        node.close()
    check("...and the node's own 127.0.0.1:8080 refuses (the forward went into the pod's "
          "namespace)", node_answer == errno.ECONNREFUSED, node_answer)
    netns = os.listdir("/run/netns") if os.path.isdir("/run/netns") else []
    check("network pod: the plugin's namespace is the one mounted under /run/netns",
          len(netns) == 1, netns)
    pod.remove()
    left = os.listdir("/run/netns") if os.path.isdir("/run/netns") else []
    check("network pod: its network namespace removed with the pod", not left, left)


def profile_pod(cri, work, stockade, runtime_root):
    """stockade's profile asked by a pod's annotation (passed on by the
    runtime's container_annotations), its record read back by name."""
    from cri_client import CONTAINER, CONTAINER_RUNNING
    pod = Pod(cri, work, "pod-profile", CONTAINER)
    # Unconfined (1): stockade's default filter alone, so its refusals are
    # counted by name; every capability dropped, as the profile requires.
    cid = pod.container("guarded", ["/bin/sh", "-c",
                                    "unshare -U true; echo unshare=$?; exec sleep 1000"],
                        seccomp={"profile_type": 1},
                        annotations={"run.oci.stockade.profile": "default"}, drop=["ALL"])
    cri.StartContainer(container_id=cid)
    wait_for(lambda: pod.status(cid)["state"] == CONTAINER_RUNNING)
    check("profile pod: inside, unshare refused (busybox's exit 1)",
          wait_for(lambda: ("stdout", "F", "unshare=1") in pod.log("guarded")),
          pod.log("guarded"))

    def record():
        return stockade_state(stockade, runtime_root, cid).get("stockade", {})
    check("profile pod: stockade's state says the profile (the annotation reached it)",
          record().get("profile") == "default", record())
    check("profile pod: stockade's record counts the refusal by name (unshare)",
          wait_for(lambda: record().get("denials", {}).get("syscalls", {}).get("unshare") == 1),
          record())
    pod.remove()


def kubelet_shaped(cri, work):
    """What a pod spec commonly asks of a container: runAsUser and
    runAsGroup, env, workingDir, a hostPath volume rw and one read-only,
    readOnlyRootFilesystem, memory and cpu limits; seen from inside (its
    log) and from the host (its cgroup)."""
    from cri_client import CONTAINER, CONTAINER_EXITED, CONTAINER_RUNNING
    pod = Pod(cri, work, "pod-shaped", CONTAINER)
    rw = os.path.join(work, "volume-rw")
    ro = os.path.join(work, "volume-ro")
    for d in (rw, ro):
        os.makedirs(d)
        os.chmod(d, 0o777)
    with open(os.path.join(ro, "config"), "w") as f:
        f.write("from-the-node\n")
    script = ("id -u; id -g; echo $GREETING; pwd; cat /config/config; "
              "echo written > /data/out && echo data-written; "
              "touch /config/x 2>/dev/null || echo config-read-only; "
              "touch /rootfs-file 2>/dev/null || echo root-read-only; exec sleep 1000")
    cid = pod.container(
        "shaped", ["/bin/sh", "-c", script],
        security={"run_as_user": {"value": 1000}, "run_as_group": {"value": 3000},
                  "readonly_rootfs": True},
        envs=[{"key": "GREETING", "value": "hello-env"}], working_dir="/data",
        mounts=[{"container_path": "/data", "host_path": rw},
                {"container_path": "/config", "host_path": ro, "readonly": True}],
        resources={"memory_limit_in_bytes": 64 << 20, "cpu_period": 100000,
                   "cpu_quota": 50000, "cpu_shares": 512})
    cri.StartContainer(container_id=cid)
    wait_for(lambda: pod.status(cid)["state"] in (CONTAINER_RUNNING, CONTAINER_EXITED))
    want = ["1000", "3000", "hello-env", "/data", "from-the-node", "data-written",
            "config-read-only", "root-read-only"]
    wait_for(lambda: len(pod.log("shaped")) >= len(want))
    check("kubelet-shaped: runAsUser/Group, env, workingDir, the volumes (rw, ro) and the "
          "read-only root as asked, inside",
          [text for _, _, text in pod.log("shaped")] == want, (pod.status(cid), pod.log("shaped")))
    try:
        with open(os.path.join(rw, "out")) as f:
            written = f.read()
    except OSError as e:
        written = str(e)
    check("kubelet-shaped: the rw volume's file is on the node", written == "written\n", written)
    init = task_pid(work, cid)
    got = {}
    for controller, name in (("memory", "memory.limit_in_bytes"), ("cpu", "cpu.cfs_quota_us"),
                             ("cpu", "cpu.shares")):
        try:
            with open(f"/sys/fs/cgroup/{controller}{cgroup_of(init)}/{name}") as f:
                got[name] = f.read().strip()
        except OSError as e:
            got[name] = str(e)
    check("kubelet-shaped: the memory and cpu limits in the container's cgroup",
          got == {"memory.limit_in_bytes": str(64 << 20), "cpu.cfs_quota_us": "50000",
                  "cpu.shares": "512"}, got)
    pod.remove()


def supplemental_groups(cri, work):
    """supplementalGroups: the plugin lists them in additionalGids, with
    runAsGroup; the command's groups are exactly those."""
    import grpc
    from cri_client import CONTAINER, CONTAINER_EXITED
    pod = Pod(cri, work, "pod-groups", CONTAINER)
    cid = pod.container("groups", ["/bin/sh", "-c", "id -G"],
                        security={"run_as_user": {"value": 1000}, "run_as_group": {"value": 3000},
                                  "supplemental_groups": [4000]})
    try:
        cri.StartContainer(container_id=cid)
        wait_for(lambda: pod.status(cid)["state"] == CONTAINER_EXITED)
        groups = [text for _, _, text in pod.log("groups")]
    except grpc.RpcError as e:
        groups = e.details()
    check("supplementalGroups: id -G lists 3000 and 4000",
          isinstance(groups, list) and groups and sorted(groups[0].split()) == ["3000", "4000"],
          groups)
    pod.remove()


def host_namespaces(cri, work, stockade, runtime_root):
    """hostPID runs: the pause's and the app's commands in the node's pid
    namespace (the plugin lists none), the app's ps showing the node's
    processes, nothing of the pod left after its removal; hostIPC runs, in
    the node's ipc namespace, as the spec asks."""
    from cri_client import CONTAINER, CONTAINER_RUNNING, NODE
    pod = Pod(cri, work, "pod-hostpid", NODE)
    pause_cmd = (children_of(task_pid(work, pod.id)) or [0])[0]
    cid = pod.container("app", ["/bin/sh", "-c", "exec sleep 1000"])
    cri.StartContainer(container_id=cid)
    wait_for(lambda: pod.status(cid)["state"] == CONTAINER_RUNNING)
    app_init = task_pid(work, cid)
    command = (children_of(app_init) or [0])[0]
    r = cri.ExecSync(container_id=cid, cmd=["/bin/sh", "-c", "readlink /proc/self/ns/pid; ps -o pid"],
                     timeout=30)
    lines = r["stdout"].decode().split()
    check("hostPID pod: the pause's and the app's commands in the node's pid namespace (inode), "
          "the app's init not PID 1 (NSpid one level)",
          pause_cmd and command and ns_of(pause_cmd, "pid") == ns_of(os.getpid(), "pid") and
          ns_of(command, "pid") == ns_of(os.getpid(), "pid") and
          status_of(app_init).get("NSpid", "").split() == [str(app_init)],
          (pause_cmd, command, ns_of(command, "pid"), status_of(app_init).get("NSpid")))
    check("hostPID pod: ExecSync in the app: the node's pid namespace, its ps listing this "
          "test's own process at its node pid",
          r["exit_code"] == 0 and lines[:1] == [ns_of(os.getpid(), "pid")] and
          str(os.getpid()) in lines[1:], (r, os.getpid()))
    pod.remove()
    check("hostPID pod: after the removals none of its processes is left",
          wait_for(lambda: not any(os.path.exists(f"/proc/{p}")
                                   for p in (pause_cmd, app_init, command) if p)))
    left = os.listdir(f"{runtime_root}/k8s.io") if os.path.isdir(f"{runtime_root}/k8s.io") \
        else []
    check("hostPID pod: nothing left under the runtime's --root", not left, left)
    pod = Pod(cri, work, "pod-hostipc", CONTAINER, ipc=NODE)
    cid = pod.container("app", ["/bin/sh", "-c", "exec sleep 1000"])
    cri.StartContainer(container_id=cid)
    wait_for(lambda: children_of(task_pid(work, cid)))
    command = (children_of(task_pid(work, cid)) or [0])[0]
    check("hostIPC pod: the app's command in the node's ipc namespace",
          ns_of(command, "ipc") == ns_of(os.getpid(), "ipc"), ns_of(command, "ipc"))
    pod.remove()
