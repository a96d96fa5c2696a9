#!/usr/bin/env python3
"""podman drives stockade as its OCI runtime (issue 19): `podman --runtime
STOCKADE run --rootfs ROOT ...` with conmon, as root, on a busybox-static
rootfs made here, and on an overlay of the suite's debootstrap root
(scripts/clean-root.sh), which stays untouched. No image registry:
--rootfs only.

usage: podman.py STOCKADE [root|rootless]

Rootless, the script (as root) runs podman as uid 65534; this host has no
/etc/subuid ranges, so podman makes a user namespace of that one id, and
stockade runs inside it as its uid 0. The cases that need root's own
namespaces or cgroups (limits, a joined or the host's network namespace,
the Debian root) run only as root.

podman runs with storage of its own under a temporary directory (vfs
driver, its own --root and --runroot), cgroupfs (no systemd as PID 1 here),
and `--network none` or a network namespace this script makes, so nothing
of the host's podman state or network is touched. podman's default rlimits
(RLIMIT_NOFILE 1048576) are above this host's hard limit, which root cannot
raise without CAP_SYS_RESOURCE, so each run lowers them with --ulimit.

Exit 77 (a skip) when podman is missing or not root; CI (env CI=true) turns
that into a failure.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import socket
import stat
import tempfile
import time
import urllib.request

from oci_common import BUSYBOX, V1_CONTROLLERS, check, failures, skip
APPLETS = ["sh", "echo", "cat", "sleep", "touch", "ls", "true", "unshare", "ip", "tty", "grep",
           "httpd", "id", "hostname", "stat", "head", "od", "uname"]
CLEAN_ROOT = os.environ.get("STOCKADE_CLEAN_ROOT", "/var/cache/stockade-test/bookworm")
ULIMITS = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]


def own(path, rootless):
    """Rootless, podman (uid 65534) owns what it runs: its rootfs."""
    if not rootless:
        return
    for top, dirs, files in os.walk(path):
        for name in [top] + [os.path.join(top, n) for n in dirs + files]:
            os.lchown(name, 65534, 65534)


def make_rootfs(path, rootless=False):
    for d in ["bin", "proc", "sys", "dev", "etc", "tmp", "run", "var/tmp"]:
        os.makedirs(os.path.join(path, d), exist_ok=True)
    shutil.copy(BUSYBOX, os.path.join(path, "bin/busybox"))
    for a in APPLETS:
        os.symlink("busybox", os.path.join(path, "bin", a))
    own(path, rootless)


class Podman:
    def __init__(self, stockade, work, rootless, driver="vfs", storage="storage"):
        # Rootless: podman as uid 65534, its storage, runtime dir and config
        # in the work directory (65534 has no home).
        prefix = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "env",
                  f"HOME={work}/home", f"XDG_RUNTIME_DIR={work}/xdg",
                  f"XDG_CONFIG_HOME={work}/config", f"XDG_DATA_HOME={work}/data"] if rootless else []
        self.base = prefix + ["podman", "--root", f"{work}/{storage}", "--runroot",
                              f"{work}/run-{storage}", "--storage-driver", driver,
                              "--tmpdir", f"{work}/tmp-podman",
                              "--cgroup-manager", "cgroupfs",
                              "--events-backend", "file", "--runtime", stockade]
        self.state_dir = f"{work}/xdg/stockade-oci" if rootless else "/run/stockade-oci"

    def __call__(self, *args, timeout=120):
        return subprocess.run(self.base + list(args), capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=timeout)

    def run(self, rootfs, *args, opts=(), timeout=120):
        return self("run", "--rm", *ULIMITS, *opts, "--rootfs", rootfs, *args, timeout=timeout)

    def detached(self, rootfs, *args, opts=()):
        p = self("run", "-d", *ULIMITS, *opts, "--rootfs", rootfs, *args)
        if p.returncode != 0:
            raise RuntimeError(f"podman run -d: {p.returncode} {p.stderr}")
        return p.stdout.strip()

    def inspect(self, cid, fmt):
        return self("inspect", cid, "--format", fmt).stdout.strip()


def left_behind(cid, state_dir):
    """What of the container stockade could leave: its state directory,
    its cgroups, a mount naming it."""
    left = []
    if os.path.exists(f"{state_dir}/{cid}"):
        left.append(f"{state_dir}/{cid}")
    for ctl in V1_CONTROLLERS:
        d = f"/sys/fs/cgroup/{ctl}/libpod_parent/libpod-{cid}"
        if os.path.exists(d):
            left.append(d)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            if cid in line and "/userdata/shm" not in line:
                left.append(line.strip())
    return left


def overlay_image(stockade, work, none):
    """podman's usual storage as root: an image (imported from a tar) on the
    overlay driver. Linux 6.18 cannot idmap the overlay podman mounts, so
    create mounts one of the container's own over idmapped clones of its
    layers: the container's root writes its image, on disk in the
    container's upper directory as root's (a new file, and an image file
    copied up with its owner, the image layer unchanged), a second start of
    the same container finds what the first wrote, the work directory
    create made beside the upper one is gone once the container stopped,
    and `podman cp` writes into a running one."""
    pm = Podman(stockade, work, False, driver="overlay", storage="ovl-storage")
    image = f"{work}/ovl-image"
    make_rootfs(image)
    with open(f"{image}/etc/greeting", "w") as f:
        f.write("hello\n")
    subprocess.run(["tar", "-C", image, "-cf", f"{work}/ovl-image.tar", "."], check=True)
    p = pm("import", f"{work}/ovl-image.tar", "localhost/stockade-ovl")
    if p.returncode != 0:
        check("overlay storage: podman imports the image", False, p.stderr)
        return
    write = ("echo run >> /runs && echo more >> /etc/greeting && cat /runs /etc/greeting && "
             "ls -ln /runs /etc/greeting")
    p = pm("run", "--name", "ovl-first", *ULIMITS, *none, "localhost/stockade-ovl",
           "sh", "-c", write)
    upper = pm.inspect("ovl-first", "{{.GraphDriver.Data.UpperDir}}")
    lower = pm.inspect("ovl-first", "{{.GraphDriver.Data.LowerDir}}").split(":")[0]

    def owner(path):
        st = os.lstat(path) if os.path.lexists(path) else None
        return st and (st.st_uid, st.st_gid)

    def text(path):
        return open(path).read() if os.path.exists(path) else None

    left = [n for n in os.listdir(os.path.dirname(upper)) if n.startswith(".stockade-work")] \
        if upper else ["?"]
    check("overlay storage: the container's root writes its image, in its upper directory "
          "as root's; an image file copied up with its owner, the layer unchanged; no work "
          "directory left",
          p.returncode == 0 and p.stdout.split()[:4] == ["run", "hello", "more", "-rw-r--r--"] and
          owner(f"{upper}/runs") == (0, 0) and owner(f"{upper}/etc/greeting") == (0, 0) and
          text(f"{upper}/etc/greeting") == "hello\nmore\n" and
          text(f"{lower}/etc/greeting") == "hello\n" and left == [],
          (p.returncode, p.stdout, p.stderr, upper, owner(f"{upper}/runs"), left))
    p = pm("start", "-a", "ovl-first")
    check("overlay storage: a second start finds what the first wrote",
          p.returncode == 0 and p.stdout.split()[:2] == ["run", "run"],
          (p.returncode, p.stdout, p.stderr))
    pm("rm", "-f", "ovl-first")
    # podman cp into a running container joins its mount namespace alone
    # and writes as host root through the container's overlay: the file
    # lands, on disk as the first id past the container's block (65536),
    # nobody's inside as host root is; before, EOVERFLOW.
    p = pm("run", "-d", "--name", "ovl-cp", *ULIMITS, *none, "localhost/stockade-ovl",
           "sleep", "1000")
    with open(f"{work}/cp-source", "w") as f:
        f.write("copied in\n")
    cp_in = pm("cp", f"{work}/cp-source", "ovl-cp:/copied")
    inside = pm("exec", "ovl-cp", "sh", "-c", "cat /copied && ls -ln /copied")
    upper = pm.inspect("ovl-cp", "{{.GraphDriver.Data.UpperDir}}")
    cp_out = pm("cp", "ovl-cp:/copied", f"{work}/cp-back")
    check("overlay storage: podman cp into the running container, read inside, on disk as "
          "65536 (nobody's inside), copied out again",
          p.returncode == 0 and cp_in.returncode == 0 and
          inside.stdout.split()[:3] == ["copied", "in", "-rw-r--r--"] and
          inside.stdout.split()[4:6] == ["65534", "65534"] and
          owner(f"{upper}/copied") == (65536, 65536) and
          text(f"{upper}/copied") == "copied in\n" and
          text(f"{work}/cp-back") == "copied in\n",
          (p.stderr, cp_in.returncode, cp_in.stderr, inside.stdout, inside.stderr,
           owner(f"{upper}/copied"), cp_out.stderr))
    pm("rm", "-f", "ovl-cp")
    pm("rmi", "-f", "localhost/stockade-ovl")


def main():
    if len(sys.argv) not in (2, 3) or sys.argv[2:] not in ([], ["root"], ["rootless"]):
        print(__doc__)
        sys.exit(2)
    stockade = os.path.abspath(sys.argv[1])
    rootless = sys.argv[2:] == ["rootless"]
    if os.geteuid() != 0:
        skip("the test runs as root (rootless: it runs podman as uid 65534 itself)")
    if not shutil.which("podman") or not shutil.which("conmon"):
        skip("podman or conmon is not installed (scripts/install-deps.sh installs them)")
    if not os.path.exists(BUSYBOX):
        skip("busybox-static is not installed")
    work = tempfile.mkdtemp(prefix="stockade-podman-")
    netns = f"stockade-podman-{os.getpid()}"
    hostnet = f"/run/netns/stockade-podman-host-{os.getpid()}"
    mounted = []
    pm = None
    try:
        if rootless:
            for d in ("home", "xdg", "config", "data"):
                os.makedirs(f"{work}/{d}", mode=0o700)
            own(work, rootless)
        rootfs, ro_rootfs = f"{work}/rootfs", f"{work}/ro-rootfs"
        make_rootfs(rootfs, rootless)
        make_rootfs(ro_rootfs, rootless)
        # podman (and conmon) start in their caller's directory: the build
        # tree's may be one uid 65534 cannot enter (a checkout under a 0700
        # home), so every command runs from the work directory.
        os.chdir(work)
        pm = Podman(stockade, work, rootless)
        root = not rootless
        none = ["--network", "none"]
        ids = []

        # One-shot runs: output, stderr, exit codes through conmon.
        p = pm.run(rootfs, "/bin/sh", "-c", "echo hi", opts=none)
        check("run: output reaches podman", p.returncode == 0 and p.stdout == "hi\n",
              f"{p.returncode} {p.stdout!r} {p.stderr!r}")
        # podman's systemd mode (--systemd always, or a command of
        # /sbin/init): on this v1 host it binds /sys/fs/cgroup/systemd into
        # the cgroup tmpfs it also asks read-only; the tmpfs was sealed
        # before that bind's target could be made in it (EROFS, exit 126).
        p = pm.run(rootfs, "sh", "-c", "ls /sys/fs/cgroup; touch /sys/fs/cgroup/x",
                   opts=none + ["--systemd", "always"])
        check("run --systemd always: the container starts, its cgroup tmpfs read-only",
              p.returncode != 0 and "touch:" in p.stderr and "Read-only file system" in p.stderr and
              ("systemd" in p.stdout.split() or not os.path.isdir("/sys/fs/cgroup/systemd")),
              f"{p.returncode} {p.stdout!r} {p.stderr!r}")
        p = pm.run(rootfs, "sh", "-c", "echo out; echo err >&2; exit 3", opts=none)
        check("run: exit 3 gives 3, stdout and stderr apart",
              p.returncode == 3 and p.stdout == "out\n" and "err\n" in p.stderr,
              f"{p.returncode} {p.stdout!r} {p.stderr!r}")
        # The container's root writes its image (podman's own storage, or a
        # --rootfs in this 0700 work directory): idmapped as root, the
        # caller's own rootless. On disk as root's (the caller's rootless).
        p = pm.run(rootfs, "sh", "-c", "echo w > /written-by-root && ls -ln /bin/busybox",
                   opts=none)
        made = f"{rootfs}/written-by-root"
        st = os.lstat(made) if os.path.lexists(made) else None
        want = (0, 0) if root else (65534, 65534)
        check("run: the container's root writes its image, on disk as its owner's",
              p.returncode == 0 and st is not None and (st.st_uid, st.st_gid) == want and
              p.stdout.split()[2:4] == ["0", "0"], f"{p.returncode} {p.stdout!r} {p.stderr!r} {st}")
        if st is not None:
            os.unlink(made)
        if root:
            # podman cp into a running container of an idmapped --rootfs:
            # written as host root, on disk as 65536, nobody's inside.
            cid = pm.detached(rootfs, "sleep", "1000", opts=none)
            with open(f"{work}/cp-plain", "w") as f:
                f.write("plain\n")
            cp_in = pm("cp", f"{work}/cp-plain", f"{cid}:/cp-plain")
            inside = pm("exec", cid, "sh", "-c", "cat /cp-plain && ls -ln /cp-plain")
            st = os.lstat(f"{rootfs}/cp-plain") if os.path.lexists(f"{rootfs}/cp-plain") else None
            check("podman cp into a running container of an idmapped --rootfs: read inside as "
                  "nobody's, on disk as 65536",
                  cp_in.returncode == 0 and inside.stdout.split()[:2] == ["plain", "-rw-r--r--"] and
                  inside.stdout.split()[3:5] == ["65534", "65534"] and st is not None and
                  (st.st_uid, st.st_gid) == (65536, 65536),
                  (cp_in.stderr, inside.stdout, inside.stderr, st))
            pm("rm", "-f", cid)
            if st is not None:
                os.unlink(f"{rootfs}/cp-plain")
            overlay_image(stockade, work, none)
        p = pm.run(rootfs, "/bin/missing", opts=none)
        check("run: a missing executable gives 127", p.returncode == 127,
              f"{p.returncode} {p.stderr!r}")
        # --personality: linux.personality's domain, the command's uname.
        p = pm.run(rootfs, "uname", "-m", opts=none + ["--personality", "LINUX32"])
        check("run --personality LINUX32: uname -m says i686 inside",
              p.returncode == 0 and p.stdout == "i686\n",
              f"{p.returncode} {p.stdout!r} {p.stderr!r}")

        p = subprocess.run(pm.base + ["run", "--rm", "-i", *ULIMITS, *none, "--rootfs", rootfs,
                                      "cat"], input="piped\n", capture_output=True, text=True,
                           timeout=120)
        check("run -i: stdin reaches the container, and its EOF",
              p.returncode == 0 and p.stdout == "piped\n", f"{p.returncode} {p.stdout!r} {p.stderr!r}")

        # A tty: the pty master sent to conmon's console socket.
        p = subprocess.run(["script", "-qec", " ".join(pm.base + ["run", "--rm", "-t"] + ULIMITS
                                                      + none + ["--rootfs", rootfs, "sh", "-c",
                                                                "'tty; exit 4'"]), "/dev/null"],
                           capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
        check("run -t: the command's stdio is a pty of the container's devpts",
              p.returncode == 4 and "/dev/pts/0" in p.stdout, f"{p.returncode} {p.stdout!r}")
        # ...and /dev/console is that terminal, as under runc: the same device
        # as stdin, and what is written there reaches podman's output.
        p = subprocess.run(["script", "-qec", " ".join(pm.base + ["run", "--rm", "-t"] + ULIMITS
                                                      + none + ["--rootfs", rootfs, "sh", "-c",
                                                                "'stat -L -c %t:%T /dev/console "
                                                                "/proc/self/fd/0; "
                                                                "echo via-console > /dev/console'"]),
                            "/dev/null"],
                           capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
        nums = p.stdout.split()
        check("run -t: /dev/console is the container's terminal (its stdin's device), and "
              "writes there reach podman",
              p.returncode == 0 and len(nums) >= 3 and nums[0] == nums[1] and
              "via-console" in nums[2:], f"{p.returncode} {p.stdout!r}")

        # The suite's debootstrap root (scripts/clean-root.sh), never
        # written: an overlay of it takes the mount targets create makes
        # (/etc/hosts is missing from a minbase root, /run/.containerenv
        # from every image).
        if rootless:
            print("(the Debian 12 root is root's: not in the rootless run)")
        elif os.path.isfile(f"{CLEAN_ROOT}/bin/sh"):
            merged = f"{work}/debian"
            for d in ("upper", "overlay-work", "debian"):
                os.makedirs(f"{work}/{d}")
            subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                            f"lowerdir={CLEAN_ROOT},upperdir={work}/upper,"
                            f"workdir={work}/overlay-work", merged], check=True)
            mounted.append(merged)
            p = pm.run(merged, "sh", "-c", "cat /etc/debian_version; id -u; test -f /etc/hosts",
                       opts=none)
            lines = p.stdout.split()
            check("a Debian 12 root (an overlay of the suite's): runs, uid 0 inside",
                  p.returncode == 0 and len(lines) == 2 and lines[0].startswith("12") and
                  lines[1] == "0", f"{p.returncode} {p.stdout!r} {p.stderr!r}")
            r = pm.run(merged, "sh", "-c", "ls /run; touch /run/lock/x && echo wrote",
                       opts=none + ["--read-only"])
            check("a Debian 12 root --read-only: /run's lock and mount copied up, writable",
                  r.returncode == 0 and r.stdout.split() == ["lock", "mount", "wrote"],
                  f"{r.returncode} {r.stdout!r} {r.stderr!r}")
            check("...the cached root untouched (the mount targets went to the overlay)",
                  not os.path.exists(f"{CLEAN_ROOT}/run/.containerenv") and
                  os.path.exists(f"{work}/upper/run/.containerenv"))
            # The container's root changes its groups, as apt's sandbox, su,
            # gosu and nginx's workers do: setgroups allowed, as under runc
            # (denied before 2026-12-07: "setpriv: setgroups failed").
            r = pm.run(merged, "setpriv", "--reuid", "1", "--regid", "1", "--clear-groups",
                       "id", opts=none)
            check("a Debian 12 root: setpriv --reuid 1 --regid 1 --clear-groups id runs (the "
                  "container may call setgroups, as under runc)",
                  r.returncode == 0 and r.stdout.strip() == "uid=1(daemon) gid=1(daemon) "
                  "groups=1(daemon)", f"{r.returncode} {r.stdout!r} {r.stderr!r}")
        elif os.environ.get("CI") == "true":
            check("the suite's Debian 12 root exists (scripts/clean-root.sh)", False, CLEAN_ROOT)
        else:
            print(f"SKIP the Debian 12 root case: no {CLEAN_ROOT} (scripts/clean-root.sh)")

        # --oom-score-adj (raised: lowering it needs CAP_SYS_RESOURCE, which
        # root lacks on some of these machines).
        p = pm.run(rootfs, "cat", "/proc/self/oom_score_adj", opts=none + ["--oom-score-adj",
                                                                             "100"])
        check("--oom-score-adj 100: the container's processes have it",
              p.returncode == 0 and p.stdout == "100\n", f"{p.returncode} {p.stdout!r} {p.stderr!r}")

        # --device: the host's node of that type and number bound in (in a
        # user namespace no node can be made), found by its numbers when the
        # container names it otherwise; the host's mode decides who opens it
        # (this host's /dev/fuse and /dev/net/tun are 0600, so two nodes any
        # uid may open stand in).
        p = pm.run(rootfs, "sh", "-c", "stat -c '%F %t:%T' /dev/myfull /dev/myzero; "
                   "head -c 4 /dev/myzero | od -An -tx1; echo x > /dev/myfull; echo $?",
                   opts=none + ["--device", "/dev/full:/dev/myfull", "--device",
                                "/dev/zero:/dev/myzero"])
        lines = [line.strip() for line in p.stdout.splitlines()]
        check("--device A:B: the host's node of that number at B, and it works",
              p.returncode == 0 and lines == ["character special file 1:7",
                                              "character special file 1:5", "00 00 00 00", "1"]
              and "No space left on device" in p.stderr,
              f"{p.returncode} {p.stdout!r} {p.stderr!r}")
        check("...nothing made in the image's /dev",
              not os.path.exists(f"{rootfs}/dev/myfull") and not os.path.exists(f"{rootfs}/dev/myzero"))
        if root:
            # Read-only by the device rules (`:r`): as root the container's
            # own device cgroup holds them, so the node is bound and the
            # kernel refuses opening it for writing (EPERM from the cgroup;
            # the node's mode, 0666, would allow it), while opening it for
            # reading passes the cgroup and reaches the kernel's own answer
            # for a number no driver holds (ENXIO). The node, made 0666 for
            # this test in a directory of its own under /dev (where stockade
            # finds a node by its numbers), has a local/experimental major
            # no driver on this host registered, so opening it does nothing
            # (the host's 0666 nodes are all default devices, which the
            # rules grant rwm after the spec's, as runc's). Seen from the
            # host too: the rule in the container's devices.list.
            with open("/proc/devices") as f:
                registered = f.read().split("Block devices:")[0].split()
            major = next(m for m in (60, 61, 62, 63, *range(120, 128)) if str(m) not in registered)
            node_dir = f"/dev/stockade-test-{os.getpid()}"
            os.mkdir(node_dir, 0o755)
            try:
                os.mknod(f"{node_dir}/unheld", 0o666 | stat.S_IFCHR, os.makedev(major, 77))
                os.chmod(f"{node_dir}/unheld", 0o666)
                cid = pm.detached(rootfs, "sh", "-c",
                                  "(exec 4< /dev/mydev) || echo read-refused; "
                                  "(exec 3> /dev/mydev) || echo write-refused; echo done; "
                                  "sleep 1000",
                                  opts=none + ["--device", f"{node_dir}/unheld:/dev/mydev:r"])
                ids.append(cid)
                init = pm.inspect(cid, "{{.State.Pid}}")
                try:
                    with open(f"/proc/{init}/cgroup") as f:
                        devices_path = next((line.split(":", 2)[2]
                                             for line in f.read().splitlines()
                                             if ":devices:" in line), "")
                    with open(f"/sys/fs/cgroup/devices{devices_path}/devices.list") as f:
                        listed = f.read().splitlines()
                except OSError as e:
                    listed = [str(e)]
                deadline = time.monotonic() + 60  # a hang guard, not a timing
                logs = pm("logs", cid)
                while "done" not in logs.stdout and time.monotonic() < deadline:
                    time.sleep(0.1)
                    logs = pm("logs", cid)
                pm("rm", "-f", cid)
            finally:
                shutil.rmtree(node_dir, ignore_errors=True)
            # The shell's own lines (a sanitized build's warnings may come
            # before them on the same stream).
            errors = [line for line in logs.stderr.splitlines() if "/dev/mydev" in line]
            check("--device A:B:r as root: bound; opened for reading it passes the device "
                  "cgroup (the kernel's ENXIO: no driver), for writing the cgroup refuses it "
                  f"(EPERM; c {major}:77 r in its devices.list on the host)",
                  logs.stdout.split() == ["read-refused", "write-refused", "done"] and
                  len(errors) == 2 and "No such device or address" in errors[0] and
                  "Operation not permitted" in errors[1] and f"c {major}:77 r" in listed,
                  f"{logs.stdout!r} {logs.stderr!r} {listed}")

        # --network none: a network namespace of its own with only lo.
        p = pm.run(rootfs, "sh", "-c", "ls /sys/class/net; ip -o link | grep -c .", opts=none)
        check("--network none: only lo", p.returncode == 0 and p.stdout.split() == ["lo", "1"],
              f"{p.returncode} {p.stdout!r} {p.stderr!r}")

        # Namespaces of root's: not in the rootless run.
        if root:
            # A network namespace joined by path (as podman's own networks are
            # passed): the sysfs shows its devices, and podman's
            # ping_group_range "0 0" holds the container's gid 0.
            subprocess.run(["ip", "netns", "add", netns], check=True)
            p = pm.run(rootfs, "sh", "-c", "ls /sys/class/net; cat /proc/sys/net/ipv4/ping_group_range",
                       opts=["--network", f"ns:/run/netns/{netns}"])
            check("joined network namespace: its sysfs, and ping_group_range for the container's gid 0",
                  p.returncode == 0 and p.stdout.split() == ["lo", "0", "0"],
                  f"{p.returncode} {p.stdout!r} {p.stderr!r}")

            # --network host: no network namespace of its own; the sysfs (made
            # by create, since the container's user namespace may not) is the
            # host's network namespace's.
            p = pm.run(rootfs, "ls", "/sys/class/net", opts=["--network", "host"])
            check("--network host: the sysfs shows the host's network devices",
                  p.returncode == 0 and p.stdout.split() == sorted(os.listdir("/sys/class/net")),
                  f"{p.returncode} {p.stdout!r} {p.stderr!r}")
            # The host's network namespace joined by path: a net.* sysctl would
            # be written in the host's, so create refuses it. The value asked is
            # the one already there, should the refusal ever fail.
            os.makedirs("/run/netns", exist_ok=True)
            open(hostnet, "w").close()
            subprocess.run(["mount", "--bind", "/proc/self/ns/net", hostnet], check=True)
            with open("/proc/sys/net/ipv4/ping_group_range") as f:
                current = " ".join(f.read().split())
            p = pm.run(rootfs, "true", opts=["--network", f"ns:{hostnet}", "--sysctl",
                                             f"net.ipv4.ping_group_range={current}"])
            check("a net.* sysctl in the host's network namespace joined by path: refused",
                  p.returncode != 0 and "the joined network namespace is the host's" in p.stderr,
                  f"{p.returncode} {p.stderr!r}")

        # --secret: a file bound beneath podman's bind of its secrets
        # directory (root's, 0755), its target made there by create, as runc
        # makes it (EACCES before 2026-12-07: the compatibility hunt's).
        with open(f"{work}/secret-src", "w") as f:
            f.write("s3cret-value\n")
        own(f"{work}/secret-src", rootless)
        pm("secret", "create", "stockade-test-secret", f"{work}/secret-src")
        p = pm.run(rootfs, "cat", "/run/secrets/stockade-test-secret",
                   opts=none + ["--secret", "stockade-test-secret"])
        pm("secret", "rm", "stockade-test-secret")
        check("--secret: the secret's file at /run/secrets/NAME, as under runc",
              p.returncode == 0 and p.stdout == "s3cret-value\n",
              f"{p.returncode} {p.stdout!r} {p.stderr!r}")

        # --read-only: the root is read-only, podman's /tmp tmpfs is not.
        p = pm.run(ro_rootfs, "sh", "-c", "touch /x 2>/dev/null && echo wrote; touch /tmp/y && "
                   "echo tmp", opts=none + ["--read-only"])
        check("--read-only: the root refuses writes, /tmp takes them",
              p.returncode == 0 and p.stdout == "tmp\n", f"{p.returncode} {p.stdout!r} {p.stderr!r}")

        # tmpcopyup of an image directory holding files (a Debian image's
        # /run has lock/ and mount/): the tmpfs starts with a copy of them,
        # the container's own to write, setuid bits dropped; the image
        # untouched.
        full = f"{work}/full-rootfs"
        make_rootfs(full, rootless)
        os.makedirs(f"{full}/run/lock")
        with open(f"{full}/run/lock/kept", "w") as f:
            f.write("image file\n")
        os.chmod(f"{full}/run/lock/kept", 0o4755)
        os.symlink("lock/kept", f"{full}/run/link")
        own(full, rootless)
        p = pm.run(full, "sh", "-c", "cat /run/link; ls -l /run/lock/kept; "
                   "echo new > /run/lock/new && echo wrote", opts=none + ["--read-only"])
        lines = p.stdout.split("\n")
        check("--read-only, tmpcopyup: the image's /run copied into the tmpfs, writable",
              p.returncode == 0 and lines[0] == "image file" and lines[2:3] == ["wrote"],
              f"{p.returncode} {p.stdout!r} {p.stderr!r}")
        check("...its setuid bit dropped, the image untouched",
              lines[1:2] and lines[1].startswith("-rwxr-xr-x") and
              not os.path.exists(f"{full}/run/lock/new"), lines)

        linked = f"{work}/linked-rootfs"
        make_rootfs(linked, rootless)
        with open(f"{work}/outside-secret", "w") as f:
            f.write("not the container's\n")
        os.link(f"{work}/outside-secret", f"{linked}/run/secret")
        p = pm.run(linked, "cat", "/run/secret", opts=none + ["--read-only"])
        check("tmpcopyup of a file with a second link: refused, not copied",
              p.returncode != 0 and "more than one link" in p.stderr and
              "not the container's" not in p.stdout, f"{p.returncode} {p.stdout!r} {p.stderr!r}")

        # --memory and --pids-limit as v1 cgroup limits, read on the host's
        # side while the container runs, and the container's init in them.
        # (Rootless: no cgroup of its own, so no limits asked.)
        last_cpu = str(max(os.sched_getaffinity(0)))
        limits = ["--memory", "64m", "--pids-limit", "50", "--cpus", "0.5",
                  "--cpuset-cpus", last_cpu, "--cpuset-mems", "0", "--memory-reservation", "32m",
                  "--memory-swappiness", "10", "--oom-kill-disable"] if root else []
        cid = pm.detached(rootfs, "sleep", "1000", opts=none + limits)
        ids.append(cid)
        base = f"libpod_parent/libpod-{cid}"
        pid = pm.inspect(cid, "{{.State.Pid}}")

        def read(path):
            try:
                with open(path) as f:
                    return f.read().strip()
            except OSError as e:
                return str(e)
        mem = read(f"/sys/fs/cgroup/memory/{base}/memory.limit_in_bytes")
        memsw = read(f"/sys/fs/cgroup/memory/{base}/memory.memsw.limit_in_bytes")
        pids = read(f"/sys/fs/cgroup/pids/{base}/pids.max")
        procs = read(f"/sys/fs/cgroup/pids/{base}/cgroup.procs").split()
        if root:
            check("--memory 64m: memory.limit_in_bytes (and podman's memory+swap) on the host",
                  mem == str(64 << 20) and memsw == str(128 << 20), f"{mem} {memsw}")
            check("--pids-limit 50: pids.max on the host, init in the cgroup",
                  pids == "50" and pid in procs, f"{pids} {pid} {procs}")
            tuning = (read(f"/sys/fs/cgroup/memory/{base}/memory.soft_limit_in_bytes"),
                      read(f"/sys/fs/cgroup/memory/{base}/memory.swappiness"),
                      read(f"/sys/fs/cgroup/memory/{base}/memory.oom_control").split("\n")[0])
            check("--memory-reservation 32m, --memory-swappiness 10, --oom-kill-disable: "
                  "memory.soft_limit_in_bytes, memory.swappiness, memory.oom_control on the host",
                  tuning == (str(32 << 20), "10", "oom_kill_disable 1"), tuning)
            quota = read(f"/sys/fs/cgroup/cpu/{base}/cpu.cfs_quota_us")
            check("--cpus 0.5: cpu.cfs_quota_us 50000 on the host", quota == "50000", quota)
            cpuset = (read(f"/sys/fs/cgroup/cpuset/{base}/cpuset.cpus"),
                      read(f"/sys/fs/cgroup/cpuset/{base}/cpuset.mems"),
                      pid in read(f"/sys/fs/cgroup/cpuset/{base}/cgroup.procs").split())
            inside = pm("exec", cid, "grep", "Cpus_allowed_list", "/proc/self/status")
            check(f"--cpuset-cpus {last_cpu} --cpuset-mems 0: the leaf's cpuset on the host, "
                  "init in it, the affinity inside",
                  cpuset == (last_cpu, "0", True) and
                  inside.stdout.split() == ["Cpus_allowed_list:", last_cpu],
                  f"{cpuset} {inside.stdout!r} {inside.stderr!r}")
            # podman stats reads the container's own cgroups (v1: each
            # hierarchy's directory, cpuacct's for the cpu time).
            p = pm("stats", "--no-stream", "--format", "json", cid)
            try:
                stats = json.loads(p.stdout)[0]
            except (ValueError, IndexError, KeyError):
                stats = {}
            check("podman stats: the container's own cgroup read (cpu time, memory, pids)",
                  p.returncode == 0 and stats.get("pids") in ("2", 2) and
                  stats.get("cpu_time", "") not in ("", "0s"), f"{p.returncode} {p.stdout!r} "
                  f"{p.stderr!r}")
            # podman update calls `update --resources FILE`; pause and
            # unpause call pause and resume.
            p = pm("update", "--memory", "128m", "--memory-swap", "256m", "--cpus", "0.25", cid)
            mem = read(f"/sys/fs/cgroup/memory/{base}/memory.limit_in_bytes")
            quota = read(f"/sys/fs/cgroup/cpu/{base}/cpu.cfs_quota_us")
            check("podman update --memory 128m --cpus 0.25: the cgroup changed",
                  p.returncode == 0 and mem == str(128 << 20) and quota == "25000",
                  f"{p.returncode} {mem} {quota} {p.stderr!r}")
            p = pm("pause", cid)
            check("podman pause: paused, the freezer FROZEN",
                  p.returncode == 0 and pm.inspect(cid, "{{.State.Status}}") == "paused" and
                  read(f"/sys/fs/cgroup/freezer/{base}/freezer.state") == "FROZEN",
                  f"{p.returncode} {p.stderr!r}")
            p = pm("unpause", cid)
            check("podman unpause: running, the freezer THAWED",
                  p.returncode == 0 and pm.inspect(cid, "{{.State.Status}}") == "running" and
                  read(f"/sys/fs/cgroup/freezer/{base}/freezer.state") == "THAWED",
                  f"{p.returncode} {p.stderr!r}")
        # exec: the container's namespaces, cgroups, ids, capabilities,
        # no_new_privs and seccomp filter; its exit code, stdin, a tty.
        p = pm("exec", cid, "sh", "-c", "echo in; cat /proc/self/uid_map; "
               "grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status; "
               "cat /proc/self/cgroup; ls /proc | grep -c '^[0-9]'; exit 5")
        lines = p.stdout.split("\n")
        uid_map = lines[1].split() if len(lines) > 1 else []
        status = dict(l.split(":\t", 1) for l in lines if ":\t" in l)
        check("exec: exit 5 gives 5, output reaches podman", p.returncode == 5 and
              lines[0] == "in", f"{p.returncode} {p.stdout!r} {p.stderr!r}")
        # A user the image's passwd lacks: podman sends "HOME=", which runc
        # takes as none and sets "/" (stockade kept it empty before
        # 2026-12-07: the compatibility hunt's). As root: rootless, one id
        # is mapped, and uid 1234 is none of the container's.
        if root:
            h = pm("exec", "--user", "1234", cid, "sh", "-c", "echo \"H=$HOME\"")
            check("exec --user 1234 (no passwd entry): HOME is /, as under runc",
                  h.returncode == 0 and h.stdout == "H=/\n",
                  f"{h.returncode} {h.stdout!r} {h.stderr!r}")
        # Rootless, the container's uid 0 is podman's uid 0 (one id), which
        # is uid 65534 on the host.
        check("exec: in the container's user namespace, never host root",
              len(uid_map) == 3 and uid_map[0] == "0" and
              (uid_map[1] != "0" if root else uid_map[1:] == ["0", "1"]), uid_map)
        check("exec: the container's capabilities, no_new_privs, a seccomp filter",
              # podman's eleven, but CAP_SETFCAP (bit 31) as root, whose image
              # root is idmapped (docs/oci.md "What an idmapped root's root may make").
              status.get("CapEff") == ("00000000000405fb" if root else "00000000800405fb") and
              status.get("NoNewPrivs") == "1"
              and status.get("Seccomp") == "2", status)
        if root:
            # The cgroup namespace's root is the container's cgroup (init
            # joins it before unsharing, as under runc): a process outside
            # that cgroup would show a "/.." path.
            inside = {line.split(":", 2)[1]: line.split(":", 2)[2]
                      for line in p.stdout.splitlines() if line.count(":") >= 2}
            check("exec: in the container's cgroups (its namespace's root)",
                  inside.get("memory") == "/" and inside.get("pids") == "/" and
                  read(f"/sys/fs/cgroup/pids/{base}/pids.current") != "0", p.stdout)
        p = pm("exec", cid, "/bin/missing")
        check("exec: a missing executable gives 127", p.returncode == 127,
              f"{p.returncode} {p.stderr!r}")
        p = subprocess.run(pm.base + ["exec", "-i", cid, "cat"], input="piped\n",
                           capture_output=True, text=True, timeout=120)
        check("exec -i: stdin reaches the process, and its EOF", p.returncode == 0 and
              p.stdout == "piped\n", f"{p.returncode} {p.stdout!r} {p.stderr!r}")
        # conmon's pipes reopened by path, by root and (as root: rootless
        # podman maps one id) by another user.
        for user in ([], ["-u", "1000:1000"]) if root else ([],):
            p = subprocess.run(pm.base + ["exec", "-i", *user, cid, "sh", "-c",
                                          "cat /dev/stdin; echo x > /dev/stdout; "
                                          "echo y > /dev/stderr"],
                               input="piped\n", capture_output=True, text=True, timeout=120)
            check(f"exec -i {' '.join(user)}: /dev/stdin, /dev/stdout and /dev/stderr reopen "
                  "conmon's pipes",
                  p.returncode == 0 and p.stdout == "piped\nx\n" and "y" in p.stderr.split(),
                  f"{p.returncode} {p.stdout!r} {p.stderr!r}")
        p = subprocess.run(["script", "-qec", " ".join(pm.base + ["exec", "-t", cid, "sh", "-c",
                                                                  "'tty; exit 6'"]), "/dev/null"],
                           capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
        check("exec -t: a pty of the container's devpts", p.returncode == 6 and
              "/dev/pts/" in p.stdout, f"{p.returncode} {p.stdout!r}")
        p = pm("exec", "-d", cid, "sleep", "1000")
        procs_now = read(f"/sys/fs/cgroup/pids/{base}/cgroup.procs").split()
        check("exec -d: the process runs on" + (" in the container's cgroup" if root else ""),
              p.returncode == 0 and (rootless or len(procs_now) == 3),
              f"{p.returncode} {procs_now} {p.stderr!r}")
        # sleep has no SIGTERM handler: as runc's PID 1 it does not take
        # the signal, and podman's SIGKILL at the timeout ends it.
        p = pm("stop", "-t", "1", cid)
        check("stop: sleep, PID 1 under runc, does not take SIGTERM; SIGKILL at the timeout (137)",
              p.returncode == 0 and pm.inspect(cid, "{{.State.ExitCode}}") == "137",
              f"{p.returncode} {pm.inspect(cid, '{{.State.ExitCode}}')} {p.stderr!r}")

        # stop of a command that ignores SIGTERM: SIGKILL after the timeout.
        cid = pm.detached(rootfs, "sh", "-c", "trap '' TERM; while true; do sleep 1; done",
                          opts=none)
        ids.append(cid)
        p = pm("stop", "-t", "1", cid)
        check("stop: SIGTERM ignored, then SIGKILL (137)",
              p.returncode == 0 and pm.inspect(cid, "{{.State.ExitCode}}") == "137",
              f"{p.returncode} {pm.inspect(cid, '{{.State.ExitCode}}')} {p.stderr!r}")

        # start again after stop, and restart: a new create of the same id.
        p = pm("start", cid)
        check("start after stop: running again",
              p.returncode == 0 and pm.inspect(cid, "{{.State.Status}}") == "running",
              f"{p.returncode} {p.stderr!r}")
        p = pm("restart", "-t", "1", cid)
        check("restart: running again",
              p.returncode == 0 and pm.inspect(cid, "{{.State.Status}}") == "running",
              f"{p.returncode} {p.stderr!r}")
        pm("kill", cid)
        pm("wait", cid)

        cid = pm.detached(rootfs, "sleep", "1000", opts=none)
        ids.append(cid)
        p = pm("kill", cid)
        w = pm("wait", cid)
        check("kill: SIGKILL, exit 137", p.returncode == 0 and w.stdout.strip() == "137",
              f"{p.returncode} {w.stdout!r} {p.stderr!r}")

        cid = pm.detached(rootfs, "sleep", "1000", opts=none)
        p = pm("rm", "-f", cid)
        check("rm -f of a running container", p.returncode == 0 and
              pm("inspect", cid).returncode != 0, f"{p.returncode} {p.stderr!r}")
        check("rm -f: nothing left behind", not left_behind(cid, pm.state_dir), left_behind(cid, pm.state_dir))

        # --timeout: conmon ends the container with kill(-getpgid(pid)). An
        # init left in conmon's group would take conmon with it, and the
        # container would stay up with nobody to record its exit.
        p = pm("run", "--name", "timed", "--timeout", "2", *ULIMITS, *none, "--rootfs", rootfs,
               "sleep", "1000")
        status = pm.inspect("timed", "{{.State.Status}}")
        cid = pm.inspect("timed", "{{.Id}}")
        check("run --timeout 2: the container is ended and podman says it exited",
              p.returncode != 0 and status == "exited", f"{p.returncode} {status!r} {p.stderr!r}")
        pm("rm", "-f", "timed")
        check("run --timeout: nothing left behind", cid != "" and not left_behind(cid, pm.state_dir),
              left_behind(cid, pm.state_dir))

        # A pod's way: a second container joins the first's network, IPC and
        # UTS namespaces by path. Rootless, create runs in the host's network
        # namespace, which it cannot return to once it has joined another.
        first = pm.detached(rootfs, "sleep", "1000", opts=none + ["--hostname", "pod-host"])
        ids.append(first)
        first_pid = pm.inspect(first, "{{.State.Pid}}")
        theirs = [os.readlink(f"/proc/{first_pid}/ns/{n}") for n in ("net", "ipc", "uts")]
        p = pm.run(rootfs, "sh", "-c", "for n in net ipc uts; do readlink /proc/self/ns/$n; "
                   "done; hostname",
                   opts=[f"--{n}=container:{first}" for n in ("network", "ipc", "uts")])
        check("--network, --ipc and --uts container:FIRST: the first's namespaces (as the host "
              "reads them of its init), its hostname",
              p.returncode == 0 and p.stdout.split() == theirs + ["pod-host"],
              f"{p.returncode} {p.stdout!r} {theirs} {p.stderr!r}")
        pm("rm", "-f", first)

        # --pid host: podman lists no pid namespace. As root the container's
        # command is in the host's (this test's) and its ps lists this
        # test's process; rootless stockade refuses it (no cgroup of its
        # own to end its processes by), naming why.
        p = pm.run(rootfs, "sh", "-c", "readlink /proc/self/ns/pid; ps -o pid", opts=none +
                   ["--pid", "host"])
        if root:
            check("--pid host: the command in the host's pid namespace, its ps listing this "
                  "test's own process",
                  p.returncode == 0 and p.stdout.split()[:1] == [os.readlink("/proc/self/ns/pid")]
                  and str(os.getpid()) in p.stdout.split()[1:],
                  f"{p.returncode} {p.stdout[:300]!r} {p.stderr!r}")
        else:
            check("--pid host rootless: refused, naming the caller's pid namespace",
                  p.returncode != 0 and "the caller's pid namespace" in p.stderr and
                  "rootless is not supported yet" in p.stderr, f"{p.returncode} {p.stderr!r}")

        # stdio reopened by path (/dev/stdout is /proc/self/fd/1): conmon's
        # pipes are root's, 0600; as root they are given to the container's
        # process, as runc gives them.
        p = pm.run(rootfs, "sh", "-c", "echo x > /dev/stdout; echo y > /dev/stderr", opts=none)
        check("/dev/stdout and /dev/stderr reopen conmon's pipes",
              p.returncode == 0 and p.stdout == "x\n" and "y" in p.stderr.split(),
              f"{p.returncode} {p.stdout!r} {p.stderr!r}")

        # --user 1000 with tmpfs mounts: they are the container root's, as
        # under runc (which mounts as that root), not the process user's, so
        # the user cannot replace /dev's entries. As root: rootless podman
        # maps uid 65534 alone, so no container has a uid 1000 (runc: EINVAL).
        if root:
            p = pm.run(rootfs, "sh", "-c", "ls -ldn /dev /tz | awk '{print $3 \":\" $4}'; "
                       "touch /dev/by-user 2>/dev/null && echo wrote; rm /dev/ptmx 2>/dev/null "
                       "&& echo removed; true",
                       opts=none + ["--user", "1000:1000", "--tmpfs", "/tz"])
            check("--user 1000:1000: /dev and a --tmpfs are uid 0's inside; the user cannot add to "
                  "/dev or remove /dev/ptmx",
                  p.returncode == 0 and p.stdout.split() == ["0:0", "0:0"],
                  f"{p.returncode} {p.stdout!r} {p.stderr!r}")

        # Seccomp from the spec: podman's default profile allows unshare;
        # the same profile without it denies it (ENOSYS, its default).
        with open("/usr/share/containers/seccomp.json") as f:
            profile = json.load(f)
        for rule in profile["syscalls"]:
            rule["names"] = [n for n in rule["names"] if n != "unshare"]
        profile["syscalls"] = [r for r in profile["syscalls"] if r["names"]]
        with open(f"{work}/no-unshare.json", "w") as f:
            json.dump(profile, f)
        # As root the image root is idmapped, and a user namespace of the
        # container's own is refused whatever the profile says: its root
        # would hold CAP_SETFCAP over files that are disk root's.
        p = pm.run(rootfs, "sh", "-c", "unshare -U true && echo allowed", opts=none)
        if root:
            check("seccomp: podman's default profile, unshare -U refused on an idmapped root",
                  p.returncode != 0 and "Operation not permitted" in p.stderr,
                  f"{p.returncode} {p.stdout!r} {p.stderr!r}")
        else:
            check("seccomp: podman's default profile, unshare allowed",
                  p.returncode == 0 and p.stdout == "allowed\n", f"{p.returncode} {p.stderr!r}")
        p = pm.run(rootfs, "sh", "-c", "unshare -U true && echo allowed",
                   opts=none + ["--security-opt", f"seccomp={work}/no-unshare.json"])
        check("seccomp: a profile without unshare denies it",
              p.returncode != 0 and "Function not implemented" in p.stderr,
              f"{p.returncode} {p.stdout!r} {p.stderr!r}")

        # The rest of the list, each run under stockade and under
        # runc (the reference, same podman, same storage, same run): the
        # same output from both, and the one expected.
        ref = Podman(shutil.which("runc"), work, rootless) if shutil.which("runc") else None
        if ref is None:
            check("runc is installed (the reference; scripts/install-deps.sh)",
                  os.environ.get("CI") != "true")
        for d in ("rw", "ro"):
            os.makedirs(f"{work}/bind-{d}")
            with open(f"{work}/bind-{d}/in", "w") as f:
                f.write(f"from-{d}\n")
            own(f"{work}/bind-{d}", rootless)
        # As root the container's uid 0 is a leased host id, never host root
        # (G3): a bind is writable where the host's permissions let that id
        # write, so the rw bind here is world-writable (runc's uid 0, host
        # root, writes anything; the difference is checked below).
        if not rootless:
            os.chmod(f"{work}/bind-rw", 0o1777)
        user = [] if rootless else ["--user", "1000:1000"]  # rootless maps one id
        scenarios = [
            # As root the idmapped image root keeps stockade's guard against
            # privileged files (one filter); rootless, none, as runc.
            ("seccomp=unconfined: no filter but stockade's guard on an idmapped root",
             ["--security-opt", "seccomp=unconfined"],
             ["sh", "-c", "grep ^Seccomp: /proc/self/status"],
             {"stockade": "Seccomp:\t2\n" if root else "Seccomp:\t0\n",
              "runc": "Seccomp:\t0\n"}),
            ("--user -e -w --hostname", user + ["-e", "FOO=bar", "-w", "/tmp",
                                                "--hostname", "boxy"],
             ["sh", "-c", "id -u; id -g; echo $FOO; pwd; hostname"],
             ("0\n0\n" if rootless else "1000\n1000\n") + "bar\n/tmp\nboxy\n"),
            ("rw and ro binds", ["-v", f"{work}/bind-rw:/rw", "-v", f"{work}/bind-ro:/ro:ro"],
             ["sh", "-c", "cat /rw/in /ro/in; echo w > /rw/RUNTIME && echo rw-ok; "
                          "echo w > /ro/x 2>/dev/null || echo ro-refused"],
             "from-rw\nfrom-ro\nrw-ok\nro-refused\n"),
        ]
        for what, opts, argv, want in scenarios:
            seen = {}
            for name, client in (("stockade", pm), ("runc", ref)):
                if client is None:
                    continue
                args = [a.replace("RUNTIME", name) for a in argv]
                p = client.run(rootfs, *args, opts=none + opts)
                seen[name] = (p.returncode, p.stdout, p.stderr[-300:])
            check(f"{what}: as expected, and as under runc",
                  all(v[0] == 0 and v[1] == (want[n] if isinstance(want, dict) else want)
                      for n, v in seen.items()), seen)
        check("...the rw bind took both runtimes' writes on the host",
              sorted(os.listdir(f"{work}/bind-rw")) ==
              sorted(["in", "stockade"] + (["runc"] if ref else [])) and
              os.listdir(f"{work}/bind-ro") == ["in"],
              (os.listdir(f"{work}/bind-rw"), os.listdir(f"{work}/bind-ro")))

        # --group-add: as root the groups are the container's, in its own
        # process and in an exec'ed one, as under runc (stockade takes them
        # as host gids before the clone; docs/oci.md "Supplementary groups");
        # rootless refused by name, since no unprivileged runtime can set them.
        groups_argv = ["sh", "-c", "id -G; grep ^Groups: /proc/self/status"]
        groups_opts = ["--group-add", "2000", "--group-add", "3000"]
        if not rootless:
            seen = {}
            for name, client in (("stockade", pm), ("runc", ref)):
                if client is None:
                    continue
                p = client.run(rootfs, *groups_argv,
                               opts=none + ["--user", "1000:1000"] + groups_opts)
                cid = client.detached(rootfs, "sleep", "1000",
                                      opts=none + ["--user", "1000:1000"] + groups_opts)
                e = client("exec", cid, *groups_argv)
                client("rm", "-f", cid)
                seen[name] = (p.returncode, p.stdout, e.returncode, e.stdout,
                              (p.stderr + e.stderr)[-300:])
            # podman lists the user's own gid among the container's groups,
            # and not in an exec's process.json: exactly what it asked, each.
            want = ("1000 2000 3000\nGroups:\t1000 2000 3000 \n",
                    "1000 2000 3000\nGroups:\t2000 3000 \n")
            check("--group-add 2000 --group-add 3000 --user 1000:1000: id -G and Groups: the "
                  "groups asked, in the container's process and an exec'ed one, as under runc",
                  all(v[0] == 0 and v[2] == 0 and (v[1], v[3]) == want
                      for v in seen.values()), seen)
        else:
            p = pm.run(rootfs, *groups_argv, opts=none + groups_opts)
            check("--group-add rootless: refused, naming the field and why",
                  p.returncode != 0 and "process.user.additionalGids" in p.stderr and
                  "rootless" in p.stderr, (p.returncode, p.stdout, p.stderr[-400:]))
        # --group-add keep-groups: podman's run.oci.keep_original_groups.
        # Rootless it is taken (the caller's groups, none here: setpriv
        # cleared them); as root refused, since they would be host root's.
        p = pm.run(rootfs, *groups_argv, opts=none + ["--group-add", "keep-groups"])
        if rootless:
            check("--group-add keep-groups rootless: taken, the caller's groups (none here)",
                  p.returncode == 0 and p.stdout == "0\nGroups:\t \n",
                  (p.returncode, p.stdout, p.stderr[-400:]))
        else:
            check("--group-add keep-groups as root: refused, naming the annotation",
                  p.returncode != 0 and "run.oci.keep_original_groups" in p.stderr,
                  (p.returncode, p.stdout, p.stderr[-400:]))

        # A published port on the host's loopback: podman's slirp4netns (a
        # user-space stack in the container's network namespace; no bridge
        # on the host) forwards 127.0.0.1:PORT to the container's server.
        # Root only: /dev/net/tun is 0600 here.
        if not rootless:
            os.makedirs(f"{rootfs}/www", exist_ok=True)
            with open(f"{rootfs}/www/index.html", "w") as f:
                f.write("from-the-container\n")
            for name, client in (("stockade", pm), ("runc", ref)):
                if client is None:
                    continue
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", 0))
                    port = probe.getsockname()[1]
                cid = client.detached(rootfs, "httpd", "-f", "-p", "8080", "-h", "/www",
                                      opts=["--network", "slirp4netns",
                                            "-p", f"127.0.0.1:{port}:8080"])
                body = ""
                for _ in range(100):
                    try:
                        with urllib.request.urlopen(f"http://127.0.0.1:{port}/index.html",
                                                    timeout=5) as r:
                            body = r.read().decode()
                            break
                    except OSError:
                        time.sleep(0.1)
                client("rm", "-f", cid)
                check(f"-p 127.0.0.1:PORT:8080 (slirp4netns): the host's loopback reaches "
                      f"the container's server ({name})", body == "from-the-container\n", body)
                if name == "stockade":
                    check("...nothing of it left", not left_behind(cid, pm.state_dir),
                          left_behind(cid, pm.state_dir))

        if not rootless and ref is not None:
            os.makedirs(f"{work}/bind-root", mode=0o755)
            seen = {}
            for name, client in (("stockade", pm), ("runc", ref)):
                p = client.run(rootfs, "sh", "-c", f"echo w > /b/{name} && echo wrote",
                               opts=none + ["-v", f"{work}/bind-root:/b"])
                seen[name] = (p.returncode, p.stdout, p.stderr[-200:])
            check("a root-owned 0755 rw bind: runc's uid 0 (host root) writes it, stockade's "
                  "(a leased id, G3) is refused by the host's permissions",
                  seen["runc"][1] == "wrote\n" and seen["stockade"][0] != 0 and
                  "Permission denied" in seen["stockade"][2] and
                  os.listdir(f"{work}/bind-root") == ["runc"], (seen, os.listdir(f"{work}/bind-root")))

            # `:idmap` is refused, naming the option, nothing written: a
            # bind seen through the container's map would hand its root the
            # host's root-owned files there (docs/oci.md "What remains").
            p = pm.run(rootfs, "sh", "-c", "echo w > /b/idmapped",
                       opts=none + ["-v", f"{work}/bind-root:/b:idmap"])
            check("a bind with :idmap: create refuses, naming the option, nothing written",
                  p.returncode != 0 and "idmap" in p.stderr and
                  os.listdir(f"{work}/bind-root") == ["runc"], (p.returncode, p.stderr[-300:]))

        for cid in ids:
            pm("rm", cid)
            left = left_behind(cid, pm.state_dir)
            check(f"rm: nothing left behind ({cid[:12]})", not left, left)
        left = os.listdir(pm.state_dir) if os.path.isdir(pm.state_dir) else []
        mine = [d for d in left if d in ids]
        check(f"nothing of these containers under {pm.state_dir}", not mine, mine)
    finally:
        subprocess.run(["ip", "netns", "delete", netns], capture_output=True)
        if os.path.exists(hostnet):
            subprocess.run(["umount", hostnet], capture_output=True)
            os.unlink(hostnet)
        if pm:
            subprocess.run(pm.base + ["rm", "-af"], capture_output=True)
        if rootless:
            # Rootless podman leaves a pause process holding its user
            # namespace; it is this run's (its pid file is in the run's own
            # directories), so it ends with the run.
            for pid_file in (f"{work}/tmp-podman/pause.pid", f"{work}/xdg/libpod/tmp/pause.pid"):
                try:
                    with open(pid_file) as f:
                        pause = int(f.read().strip())
                    with open(f"/proc/{pause}/comm") as f:
                        if f.read().strip() == "podman pause":
                            os.kill(pause, signal.SIGKILL)
                except (OSError, ValueError):
                    pass
        subprocess.run(["umount", "-R", f"{work}/storage"], capture_output=True)
        subprocess.run(["umount", "-R", f"{work}/ovl-storage"], capture_output=True)
        for m in mounted:
            subprocess.run(["umount", m], capture_output=True)
        os.chdir("/")
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print(f"{len(failures)} failed: {failures}")
        sys.exit(1)
    print("all passed")


if __name__ == "__main__":
    main()
