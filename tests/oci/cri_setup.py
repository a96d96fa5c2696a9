"""What tests/oci/cri.py builds and reads besides the CRI calls: the images
(OCI image layout tarballs of a busybox-static rootfs, for `ctr images
import`), the private containerd's config with its CRI plugin, and the
host-side views of a container's processes (/proc)."""
import hashlib
import io
import json
import os
import re
import subprocess
import tarfile

from oci_common import BUSYBOX, host_pids_running

APPLETS = ["sh", "echo", "cat", "sleep", "true", "readlink", "grep", "hostname", "id", "ps",
           "unshare", "mkdir", "httpd", "wget", "ip", "dd"]
# The pods' network (CNI's bridge plugin): a bridge and addresses only in the
# network namespace the test runs containerd in, never the host's.
POD_SUBNET = "10.244.7.0/24"
CNI_BIN = "/usr/lib/cni"
K8S = "k8s.io"
PAUSE_IMAGE = "stockade.test/pause:1"
APP_IMAGE = "stockade.test/busybox:1"


def sha256(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def layer_tar():
    """An uncompressed tar of a busybox-static rootfs (the layer's diff)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        def add_dir(name, mode=0o755):
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, mode
            tar.addfile(info)
        for d in ["bin", "dev", "etc", "proc", "sys", "var"]:
            add_dir(d)
        # As in any image: the container's root is not the files' owner
        # (stockade maps it to a leased id), so /tmp is everyone's.
        add_dir("tmp", 0o1777)
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


def make_image(path, name, entrypoint, layer=None):
    """An OCI image layout tarball holding one image called name, for `ctr
    images import` (which takes the name from io.containerd.image.name):
    its one layer `layer` (an uncompressed tar), or layer_tar()'s."""
    blobs = {}

    def blob(data):
        digest = sha256(data)
        blobs[digest] = data
        return {"digest": digest, "size": len(data)}
    layer = layer if layer is not None else layer_tar()
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


def containerd_config(work, stockade, runtime_root, runc, runc_root):
    """The private containerd, its CRI plugin enabled, stockade the default
    runtime handler and runc (the reference) the handler "runc". What the
    plugin needs to start with no kubelet and no CNI (docs/oci.md)."""
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
    bin_dir = "{CNI_BIN}"
    conf_dir = "{work}/cni-conf"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "stockade"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.stockade]
      runtime_type = "io.containerd.runc.v2"
      # The pod's annotation that asks for stockade's profile, passed on to
      # config.json (the plugin passes none it is not told to).
      container_annotations = ["run.oci.stockade.profile"]
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.stockade.options]
        BinaryName = "{stockade}"
        Root = "{runtime_root}"
        SystemdCgroup = false
    # As a kubelet with the systemd cgroup driver: the shim passes
    # --systemd-cgroup and the plugin sends slice:cri-containerd:ID.
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.stockade-systemd]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.stockade-systemd.options]
        BinaryName = "{stockade}"
        Root = "{runtime_root}"
        SystemdCgroup = true
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "{runc}"
        Root = "{runc_root}"
        SystemdCgroup = false
"""


def cni_config(work):
    """A bridge network for pods whose namespace_options.network is POD;
    host-local keeps its leases in the work directory."""
    return json.dumps({
        "cniVersion": "1.0.0", "name": "stockade-test",
        "plugins": [{"type": "bridge", "bridge": "stk-cni0", "isGateway": True, "ipMasq": False,
                     "ipam": {"type": "host-local", "dataDir": f"{work}/cni-ipam",
                              "ranges": [[{"subnet": POD_SUBNET}]]}},
                    # hostPort: iptables DNAT rules, in the test's namespace.
                    {"type": "portmap", "capabilities": {"portMappings": True}}],
    })


def prepare_node(work, stockade, runtime_root, runc):
    """In the mount and network namespaces the caller made (unshare
    --mount --net): /run a tmpfs of its own (the host's /run/stockade bound
    back, so id leases stay host-wide), lo up, the CNI configuration, a
    tmpfs over libcni's cache, the images and containerd's config, whose
    path it returns. Nothing of it is seen from the host."""
    hold = os.path.join(work, "hold-stockade")
    os.makedirs(hold)
    os.makedirs("/run/stockade", exist_ok=True)
    subprocess.run(["mount", "--bind", "/run/stockade", hold], check=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=755,size=16m", "tmpfs", "/run"], check=True)
    os.makedirs("/run/stockade")
    subprocess.run(["mount", "--move", hold, "/run/stockade"], check=True)
    for d in ["cni-conf", "opt", "logs"]:
        os.makedirs(os.path.join(work, d))
    # This network namespace is the node's: the CNI bridge and the pods'
    # addresses live here, never on the host's.
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    with open(os.path.join(work, "cni-conf", "10-stockade-test.conflist"), "w") as f:
        f.write(cni_config(work))
    # libcni caches each attachment under /var/lib/cni: a tmpfs of this
    # namespace's over it (over /var/lib where it does not exist yet).
    cni_cache = "/var/lib/cni" if os.path.isdir("/var/lib/cni") else "/var/lib"
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=755,size=16m", "tmpfs", cni_cache],
                   check=True)
    config = os.path.join(work, "config.toml")
    with open(config, "w") as f:
        f.write(containerd_config(work, stockade, runtime_root, runc,
                                  os.path.join(work, "runc-root")))
    # The pause container as a pause image's: sleeps until killed.
    make_image(os.path.join(work, "pause.tar"), PAUSE_IMAGE, ["/bin/sleep", "2147483647"])
    make_image(os.path.join(work, "app.tar"), APP_IMAGE, ["/bin/sh"])
    return config


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


def pod_pids_running(argv):
    """host_pids_running, narrowed to this test's pods: processes in a
    cgroup under one of their cgroup_parents (podstockadecri...), so that
    another run's `sleep 1000` on the same host is not counted."""
    return [p for p in host_pids_running(argv) if "podstockadecri" in cgroup_of(p)]


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


# The sanitized build's own runtime (ASan), not the container, writes these
# on the stderr the container's init inherits (a stack switch at its clone);
# the product's build never does. Taken out so that the sanitized stage
# compares what the container wrote.
SANITIZER_REPORT = re.compile(r"^==\d+==WARNING: ASan is ignoring requested "
                              r"__asan_handle_no_return|^False positive error reports may follow$"
                              r"|^For details see https://github.com/google/sanitizers/issues/189$")


def read_cri_log(path):
    """The CRI log format: `TIME STREAM P|F TEXT` a line (F a full line)."""
    lines = []
    try:
        with open(path) as f:
            for line in f:
                parts = line.rstrip("\n").split(" ", 3)
                if len(parts) == 4 and not (parts[1] == "stderr" and
                                            SANITIZER_REPORT.search(parts[3])):
                    lines.append(parts)
    except OSError as e:
        return str(e)
    return lines

