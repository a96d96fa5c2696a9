#!/usr/bin/env python3
"""stockade as an OCI runtime, driven as runc's clients drive one (issue 19):
spec, create, state, start, kill, delete, run, pause, resume, update, on a busybox-static rootfs
made here, as root or as uid 65534.

usage: lifecycle.py STOCKADE root|rootless

Each case asserts what a client relies on: create returns with the process
parked (its marker not yet written) and the pid file decimal with no
newline; start releases it; state says created, running, stopped; kill and
delete; nothing left under --root; runc's error texts. Exit 77 (a skip) when
the host cannot run a mode, which CI (env CI=true) turns into a failure.
"""
import hashlib
import json
import os
import re
import select
import shutil
import signal
import stat
import socket
import subprocess
import sys
import tempfile
import time

from oci_common import wait_for as poll_until
from oci_common import BUSYBOX, V1_CONTROLLERS, check, finish, host_pids_running, skip
APPLETS = ["sh", "echo", "cat", "sleep", "touch", "id", "hostname", "ls", "true", "stty",
           "unshare", "mkdir", "mkfifo", "mount", "grep", "chmod", "cp"]


def demote():
    os.setgroups([])
    os.setresgid(65534, 65534, 65534)
    os.setresuid(65534, 65534, 65534)


class Runtime:
    def __init__(self, binary, root, mode):
        self.binary, self.root, self.mode = binary, root, mode

    def __call__(self, *args, stdin=subprocess.DEVNULL, input_text=None, log=None, pre=()):
        argv = [self.binary, "--root", self.root, *pre]
        if log:
            argv += ["--log-format", "json", "--log", log]
        argv += list(args)
        preexec = demote if self.mode == "rootless" else None
        if args[0] == "create" or "--detach" in args:
            # The container keeps create's stdio as its own (as conmon's
            # pipes): files, not pipes this script would wait on for EOF.
            with tempfile.TemporaryFile("w+") as err:
                p = subprocess.run(argv, stdin=stdin, stdout=subprocess.DEVNULL, stderr=err,
                                   text=True, timeout=120, preexec_fn=preexec)
                err.seek(0)
                return subprocess.CompletedProcess(argv, p.returncode, "", err.read())
        return subprocess.run(argv, stdin=None if input_text is not None else stdin,
                              input=input_text, capture_output=True, text=True, timeout=120,
                              preexec_fn=preexec)


# As conmon and containerd's shim are: the subreaper that a container's
# init is reparented to once create exits, and that reaps it.
PR_SET_CHILD_SUBREAPER = 36
reaped = {}


def become_subreaper():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        skip("prctl(PR_SET_CHILD_SUBREAPER) failed")


def reap():
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        reaped[pid] = status


def wait_for(predicate, bound_s=30.0):
    """oci_common's wait_for, reaping as it polls (this process is the
    subreaper the containers' inits end under)."""
    return poll_until(predicate, bound_s, each=reap, interval_s=0.02)


def read_console(fds):
    """Everything the pty master (the first fd a console socket received)
    gives until its end (EIO once the container's side is closed); closes
    every fd received."""
    output = b""
    while fds:
        try:
            chunk = os.read(fds[0], 4096)
        except OSError:
            break
        if not chunk:
            break
        output += chunk
    for fd in fds:
        os.close(fd)
    return output


def state_of(rt, cid):
    r = rt("state", cid)
    return json.loads(r.stdout) if r.returncode == 0 else None


def probes_dir(binary):
    """Where the suite's probes are beside `binary`: the stage's probe/
    directory, or the build tree's tests/."""
    probes = os.path.join(os.path.dirname(os.path.dirname(binary)), "probe")
    if not os.path.exists(os.path.join(probes, "stockade-try-syscall")):
        probes = os.path.join(os.path.dirname(binary), "tests")
    return probes


def make_busybox_rootfs(rootfs, applets):
    """A rootfs of busybox-static and its applets' links, with the mount
    points a bundle's default config uses."""
    for d in ["bin", "proc", "dev", "sys", "tmp", "out"]:
        os.makedirs(os.path.join(rootfs, d))
    shutil.copy(BUSYBOX, os.path.join(rootfs, "bin", "busybox"))
    for applet in set(applets):
        os.symlink("busybox", os.path.join(rootfs, "bin", applet))


def make_test_tree(scratch, owner, binary, mode, applets, extra_bins=()):
    """What every OCI script's main() sets up in its scratch directory: a
    busybox rootfs with `applets` (and `extra_bins` copied into its /bin),
    `out` (1777, the containers' to write), the state root (the owner's,
    0700), the runtime over it, and `spec`'s default config.json read back.
    Returns (rt, out, base); base is None when spec failed (checked)."""
    rootfs = os.path.join(scratch, "rootfs")
    make_busybox_rootfs(rootfs, applets)
    for path in extra_bins:
        shutil.copy(path, os.path.join(rootfs, "bin", os.path.basename(path)))
    out = os.path.join(scratch, "out")
    os.makedirs(out)
    os.chmod(out, 0o1777)
    state_root = os.path.join(scratch, "state")
    os.makedirs(state_root)
    os.chown(state_root, owner, owner)
    os.chmod(state_root, 0o700)
    rt = Runtime(binary, state_root, mode)
    spec_dir = os.path.join(scratch, "spec")
    os.makedirs(spec_dir)
    os.chown(spec_dir, owner, owner)
    r = rt("spec", "--bundle", spec_dir)
    check("spec writes a config.json", r.returncode == 0, r.stderr)
    if r.returncode != 0:
        return rt, out, None
    with open(os.path.join(spec_dir, "config.json")) as f:
        return rt, out, json.load(f)


def run_oci_script(prefix, applets, cases, extra_bins=lambda binary: (), needs=()):
    """The main() of an OCI script run as `SCRIPT STOCKADE root|rootless`:
    root required and busybox-static and each (path, why) of `needs` there
    (else a skip, a failure under CI=true); this process the subreaper; a
    scratch tree (make_test_tree, with extra_bins(binary) in its /bin);
    cases(rt, scratch, owner, base, mode); nothing left under --root; then
    every container deleted, every child reaped, the scratch removed; exit
    1 when a check failed."""
    binary, mode = sys.argv[1], sys.argv[2]
    if os.geteuid() != 0:
        skip("the suite runs as root (rootless cases demote to uid 65534)")
    for path, why in ((BUSYBOX, "busybox-static is not installed (scripts/install-deps.sh test)"),
                      *needs):
        if not os.path.exists(path):
            skip(why)
    become_subreaper()
    scratch = tempfile.mkdtemp(prefix=prefix, dir="/var/tmp")
    os.chmod(scratch, 0o755)
    owner = 0 if mode == "root" else 65534
    rt = None
    try:
        rt, _, base = make_test_tree(scratch, owner, binary, mode, applets, extra_bins(binary))
        if base is not None:
            cases(rt, scratch, owner, base, mode)
            check("nothing left under --root", os.listdir(rt.root) == [], os.listdir(rt.root))
    finally:
        if rt is not None:
            for cid in os.listdir(rt.root) if os.path.isdir(rt.root) else []:
                rt("delete", "--force", cid)
        reap()
        shutil.rmtree(scratch, ignore_errors=True)
    finish()


def make_bundle(scratch, name, args, owner, base_config):
    bundle = os.path.join(scratch, name)
    os.makedirs(bundle)
    os.symlink("../rootfs", os.path.join(bundle, "rootfs"))
    config = json.loads(json.dumps(base_config))
    config["process"]["args"] = args
    config["mounts"].append({"destination": "/out", "type": "bind",
                             "source": os.path.join(scratch, "out"), "options": ["rbind", "rw"]})
    with open(os.path.join(bundle, "config.json"), "w") as f:
        json.dump(config, f)
    return bundle


def bad_input_beside_runc(binary, scratch, base):
    """The issue's bad input, each given to stockade and to runc (the
    reference, in the same run, each with a --root of its own): the same
    exit status, the words clients match, nothing left under either --root
    and no process of either container left."""
    runc = shutil.which("runc")
    if runc is None:
        check("runc is installed (the reference; scripts/install-deps.sh)",
              os.environ.get("CI") != "true")
        print("SKIP: the comparison with runc (runc is not installed)")
        return
    ref_dir = os.path.join(scratch, "ref")
    os.makedirs(ref_dir)
    # runc refuses a rootfs reached through a symlink: a real path for both.
    config = json.loads(json.dumps(base))
    config["root"]["path"] = os.path.join(scratch, "rootfs")
    config["process"]["args"] = ["sleep", "1000"]
    # runc wants uid mappings with a user namespace; stockade makes one anyway.
    config["linux"]["namespaces"] = [n for n in config["linux"]["namespaces"]
                                     if n["type"] != "user"]
    good = os.path.join(ref_dir, "good")
    tty = os.path.join(ref_dir, "tty")
    for path, terminal in ((good, False), (tty, True)):
        os.makedirs(path)
        config["process"]["terminal"] = terminal
        with open(os.path.join(path, "config.json"), "w") as f:
            json.dump(config, f)
    no_config = os.path.join(ref_dir, "no-config")
    os.makedirs(no_config)
    malformed = os.path.join(ref_dir, "malformed")
    os.makedirs(malformed)
    with open(os.path.join(malformed, "config.json"), "w") as f:
        f.write('{"ociVersion": "1.0.2", "process": ')
    not_socket = os.path.join(ref_dir, "not-a-socket")
    open(not_socket, "w").close()
    unbound = os.path.join(ref_dir, "unbound.sock")
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.bind(os.path.join(ref_dir, "silent.sock"))  # bound, never listening: refuses
    cases = [  # (what, argv, the words both must say or None, stockade's own words or None)
        ("create: a missing bundle", ["create", "--bundle", os.path.join(ref_dir, "none"), "b1"],
         None, "bundle"),
        ("create: no config.json", ["create", "--bundle", no_config, "b2"], None, "config.json"),
        ("create: a malformed config.json", ["create", "--bundle", malformed, "b3"], None,
         "config.json"),
        ("state of an unknown id", ["state", "nope"], "does not exist", None),
        ("start of an unknown id", ["start", "nope"], "does not exist", None),
        ("kill of an unknown id", ["kill", "nope", "9"], "does not exist", None),
        ("delete of an unknown id", ["delete", "nope"], "does not exist", None),
        ("pause of an unknown id", ["pause", "nope"], "does not exist", None),
        ("delete --force of an unknown id", ["delete", "--force", "nope"], None, None),
        ("create c1", ["create", "--bundle", good, "c1"], None, None),
        ("a second create of c1", ["create", "--bundle", good, "c1"], "exists", None),
        ("start c1", ["start", "c1"], None, None),
        ("start of a running container", ["start", "c1"], None, "cannot start"),
        ("kill with signal 99", ["kill", "c1", "99"], None, "signal"),
        ("kill with signal -1", ["kill", "c1", "-1"], None, None),
        ("kill with signal 0 (is it there)", ["kill", "c1", "0"], None, None),
        ("kill with signal FOO", ["kill", "c1", "FOO"], "unknown signal", None),
        ("kill with signal SIGFOO", ["kill", "c1", "SIGFOO"], "unknown signal", None),
        ("create: a console socket that does not exist",
         ["create", "--bundle", tty, "--console-socket", unbound, "t1"], None, "console"),
        ("create: a console socket that is a file",
         ["create", "--bundle", tty, "--console-socket", not_socket, "t2"], None, "console"),
        ("create: a console socket that refuses",
         ["create", "--bundle", tty, "--console-socket", os.path.join(ref_dir, "silent.sock"),
          "t3"], None, "console"),
        ("create: a terminal with no console socket", ["create", "--bundle", tty, "t4"],
         "console socket", None),
    ]
    roots = {}
    for name in ("stockade", "runc"):
        roots[name] = os.path.join(ref_dir, f"root-{name}")
        os.makedirs(roots[name], mode=0o700)
    pids = {}
    try:
        for what, argv, both_say, stockade_says in cases:
            seen = {}
            for name, exe in (("stockade", binary), ("runc", runc)):
                with tempfile.TemporaryFile("w+") as err:
                    p = subprocess.run([exe, "--root", roots[name]] + argv,
                                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                       stderr=err, text=True, timeout=120)
                    err.seek(0)
                    seen[name] = (p.returncode, err.read().strip())
            ok = seen["stockade"][0] == seen["runc"][0]
            if both_say:
                ok = ok and all(both_say in seen[n][1] for n in seen)
            if stockade_says:
                ok = ok and stockade_says in seen["stockade"][1]
            check(f"bad input as runc: {what} (exit {seen['runc'][0]})", ok, seen)
        for name in ("stockade", "runc"):
            st = subprocess.run([binary if name == "stockade" else runc, "--root", roots[name],
                                 "state", "c1"], capture_output=True, text=True)
            pids[name] = json.loads(st.stdout)["pid"] if st.returncode == 0 else 0
        check("...c1 runs on under both after the refused calls",
              all(pids.values()) and all(os.path.exists(f"/proc/{p}") for p in pids.values()),
              pids)
    finally:
        silent.close()
        for name, exe in (("stockade", binary), ("runc", runc)):
            subprocess.run([exe, "--root", roots[name], "delete", "--force", "c1"],
                           capture_output=True, timeout=120)
    wait_for(lambda: not any(os.path.exists(f"/proc/{p}/stat") and
                             open(f"/proc/{p}/stat").read().rsplit(") ", 1)[1][0] not in "ZX"
                             for p in pids.values() if p))
    reap()
    check("bad input: no process of either left",
          not any(os.path.exists(f"/proc/{p}") for p in pids.values() if p), pids)
    left = {name: os.listdir(root) for name, root in roots.items()}
    check("bad input: nothing left under either --root", not any(left.values()), left)


def stockade_profile(rt, scratch, owner, base):
    """The stockade profile (docs/oci.md): only under the annotation or the
    runtime's own config does a container get stockade's default filter (on
    top of the spec's), no capabilities and no_new_privs. unshare(2) is what
    the default filter refuses and a spec without seccomp lets through."""
    probe = ["sh", "-c", "unshare -U true && echo unshared; mkdir -p /out/d && echo made; "
             "grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status"]
    plain = json.loads(json.dumps(base))
    plain["process"].pop("capabilities", None)

    def bundle(name, config):
        b = make_bundle(scratch, name, probe, owner, config)
        return b

    def annotated(config):
        config = json.loads(json.dumps(config))
        config.setdefault("annotations", {})["run.oci.stockade.profile"] = "default"
        return config

    def status_of(out):
        return dict(line.split(":\t") for line in out.splitlines() if ":\t" in line)

    r = rt("run", "--bundle", bundle("prof-none", plain), "p1")
    st = status_of(r.stdout)
    check("profile: a spec without seccomp runs without a filter (unshare succeeds), as runc",
          r.returncode == 0 and "unshared" in r.stdout and "made" in r.stdout and
          st.get("Seccomp") == "0", (r.returncode, r.stdout, r.stderr))
    r = rt("run", "--bundle", bundle("prof-ann", annotated(plain)), "p2")
    st = status_of(r.stdout)
    check("profile: under the annotation the default filter refuses unshare (EPERM), "
          "no capabilities, no_new_privs",
          "unshared" not in r.stdout and "Operation not permitted" in r.stderr and
          "made" in r.stdout and st.get("Seccomp") == "2" and
          st.get("CapEff") == "0000000000000000" and st.get("CapBnd") == "0000000000000000" and
          st.get("NoNewPrivs") == "1", (r.returncode, r.stdout, r.stderr))
    r = rt("create", "--bundle", bundle("prof-caps", annotated(base)), "p3")
    check("profile: a spec asking for capabilities under it is refused, naming them",
          r.returncode == 1 and "process.capabilities" in r.stderr and
          "CAP_KILL" in r.stderr and "p3" not in os.listdir(rt.root), (r.returncode, r.stderr))
    bad = annotated(plain)
    bad["annotations"]["run.oci.stockade.profile"] = "none"
    r = rt("create", "--bundle", bundle("prof-bad", bad), "p4")
    check("profile: the annotation takes only \"default\" (it cannot lift a runtime default)",
          r.returncode == 1 and "run.oci.stockade.profile" in r.stderr, (r.returncode, r.stderr))
    # The spec's own filter and the default, chained: mkdir refused by the
    # spec with its errno, unshare by the default.
    spec_filter = json.loads(json.dumps(plain))
    spec_filter["linux"]["seccomp"] = {
        "defaultAction": "SCMP_ACT_ALLOW",
        "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 122}]}
    r = rt("run", "--bundle", bundle("prof-spec", spec_filter), "p5")
    check("profile: without it, the spec's filter alone (mkdir refused, unshare allowed)",
          "unshared" in r.stdout and "made" not in r.stdout and "quota" in r.stderr.lower(),
          (r.returncode, r.stdout, r.stderr))
    r = rt("run", "--bundle", bundle("prof-both", annotated(spec_filter)), "p6")
    check("profile: under it, both filters hold (mkdir refused with the spec's errno, "
          "unshare by the default)",
          "unshared" not in r.stdout and "made" not in r.stdout and
          "quota" in r.stderr.lower() and "Operation not permitted" in r.stderr,
          (r.returncode, r.stdout, r.stderr))
    # The runtime's own config: the global flag, and the config file.
    none = bundle("prof-flag", plain)
    r = rt("run", "--bundle", none, "p7", pre=("--default-profile", "default"))
    check("profile: --default-profile default applies it to a spec without the annotation",
          "unshared" not in r.stdout and "Operation not permitted" in r.stderr,
          (r.returncode, r.stdout, r.stderr))
    conf = os.path.join(scratch, "oci.json")
    with open(conf, "w") as f:
        json.dump({"defaultProfile": "default"}, f)
    os.chmod(conf, 0o644)
    os.environ["STOCKADE_OCI_CONFIG"] = conf
    try:
        r = rt("create", "--bundle", none, "p8")
        st = state_of(rt, "p8") or {}
        check("profile: the runtime's config file applies it, and state says so",
              r.returncode == 0 and st.get("stockade", {}).get("profile") == "default",
              (r.returncode, r.stderr, st))
        rt("delete", "--force", "p8")
        r = rt("run", "--bundle", none, "p9", pre=("--default-profile", "none"))
        check("profile: --default-profile none overrides the config file",
              "unshared" in r.stdout, (r.returncode, r.stdout, r.stderr))
        os.chmod(conf, 0o666)
        r = rt("create", "--bundle", none, "p10")
        check("profile: a config file others may write is refused",
              r.returncode == 1 and "writable by no one else" in r.stderr, (r.returncode, r.stderr))
    finally:
        del os.environ["STOCKADE_OCI_CONFIG"]
    if rt.mode == "root":
        sleeper = make_bundle(scratch, "prof-exec", ["sleep", "1000"], owner, plain)
        r = rt("run", "--detach", "--bundle", sleeper, "p12", pre=("--default-profile", "default"))
        e = rt("exec", "p12", "unshare", "-U", "true")
        ok = rt("exec", "p12", "true")
        check("profile: exec without the flag still gets the container's filter (unshare refused)",
              r.returncode == 0 and e.returncode != 0 and "Operation not permitted" in e.stderr and
              ok.returncode == 0, (r.stderr, e.returncode, e.stderr, ok.returncode, ok.stderr))
        rt("delete", "--force", "p12")
    r = rt("create", "--bundle", none, "p11")
    st = state_of(rt, "p11") or {}
    check("profile: without annotation, flag or file, state says none",
          r.returncode == 0 and st.get("stockade", {}).get("profile") == "none", st)
    rt("delete", "--force", "p11")
    check("profile: nothing left under --root", os.listdir(rt.root) == [], os.listdir(rt.root))


def image_device_nodes(rt, scratch, owner, base):
    """A device node the image carries never opens, writable root or not: no
    device cgroup holds in a user namespace, so the image root is nodev. The
    node here is a harmless one (1:3, the null device, mode 0666); before
    the fix a writable root let the container write through it, and a node
    of the host's disk would have opened the same way."""
    node = os.path.join(scratch, "rootfs", "imagenode")
    if not os.path.lexists(node):
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        os.chmod(node, 0o666)
    for cid, readonly in (("n1", False), ("n2", True)):
        config = json.loads(json.dumps(base))
        config["root"]["readonly"] = readonly
        bundle = make_bundle(scratch, "node-" + cid, ["sh", "-c",
                             "echo x > /imagenode && echo OPENED; "
                             "read line < /proc/self/mountinfo; echo \"$line\""],
                             owner, config)
        r = rt("run", "--bundle", bundle, cid)
        root_line = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
        check(f"an image's device node does not open (root {'read-only' if readonly else 'writable'})",
              "OPENED" not in r.stdout and "Permission denied" in r.stderr and
              "nodev" in root_line.split(" - ")[0], (r.returncode, r.stdout, r.stderr))


def sys_admin_remount(rt, scratch, owner, base):
    """A container granted CAP_SYS_ADMIN (and no filter refusing mount) can
    remount its mounts: they are its own user namespace's, which the kernel
    does not lock. stockade's filter keeps a read-only one read-only: a
    remount without `ro` is refused (EPERM), mount_setattr answers ENOSYS,
    and a bind of it is read-only too, so a 0666 host canary under a
    read-only bind keeps its mtime (the binary before wrote it). A remount
    that keeps `ro` works, and clears nodev on the root: as root a device
    cgroup stands behind nodev, so a node the image carries still does not
    open. The node is the FUSE device (10:229): opening one only makes a
    FUSE connection that closes with it, so the binary before the fix did
    no harm here (it printed OPENED). Checked from the host too: the
    container's devices directory holds the rules while it runs and is gone
    after delete. Rootless no device cgroup can be made, and create says
    so."""
    node = os.path.join(scratch, "rootfs", "imagefuse")
    if not os.path.lexists(node):
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(10, 229))
        os.chmod(node, 0o666)
    for d in ("rodata", "rocopy"):
        os.makedirs(os.path.join(scratch, "rootfs", d), exist_ok=True)
    shutil.copy(os.path.join(probes_dir(rt.binary), "stockade-try-syscall"),
                os.path.join(scratch, "rootfs", "bin", "stockade-try-syscall"))
    ro_dir = os.path.join(scratch, "sysadmin-ro")
    os.makedirs(ro_dir, exist_ok=True)
    os.chmod(ro_dir, 0o777)
    canary = os.path.join(ro_dir, "canary")
    with open(canary, "w") as f:
        f.write("canary\n")
    os.chmod(canary, 0o666)
    canary_before = os.stat(canary).st_mtime_ns
    config = json.loads(json.dumps(base))
    caps = config["process"]["capabilities"]
    for kind in ("bounding", "effective", "permitted"):
        caps[kind] = sorted(set(caps.get(kind, [])) | {"CAP_SYS_ADMIN"})
    config["root"]["readonly"] = False
    config["mounts"].append({"destination": "/rodata", "type": "bind", "source": ro_dir,
                             "options": ["rbind", "ro"]})
    probe = ("exec > /out/sysadmin.log 2>&1; "
             "mount -o remount,bind,rw /rodata && echo RW-REMOUNTED; "
             "echo canary > /rodata/canary && echo WROTE; "
             "mount --bind /rodata /rocopy && echo BOUND; "
             "echo canary > /rocopy/canary && echo WROTE-COPY; "
             "stockade-try-syscall mount_setattr open_tree_attr; "
             "mount -o remount,bind,ro,dev,suid / && echo REMOUNTED; "
             "read line < /proc/self/mountinfo; echo \"ROOT $line\"; "
             "(: < /imagefuse) && echo OPENED; (: < /dev/null) && echo NULL-OK; "
             "grep devices /proc/self/cgroup; echo END")
    bundle = make_bundle(scratch, "sysadmin", ["sh", "-c", probe], owner, config)
    log = os.path.join(scratch, "out", "sysadmin.log")
    said_log = os.path.join(scratch, "out", "sysadmin-create.log")
    r = rt("create", "--bundle", bundle, "sa1", log=said_log)
    said = open(said_log).read() if os.path.exists(said_log) else ""
    sa1_state = state_of(rt, "sa1") or {}
    host_cgroup = host_cgroup_of(sa1_state.get("pid", 0))
    devices_dir = "/sys/fs/cgroup/devices" + host_cgroup.get("devices", "/none")
    listed = ""
    if rt.mode == "root" and os.path.isdir(devices_dir):
        with open(os.path.join(devices_dir, "devices.list")) as f:
            listed = f.read()
    rt("start", "sa1")
    wait_for(lambda: os.path.exists(log) and "END" in open(log).read(), 10)
    out = open(log).read() if os.path.exists(log) else ""
    root_line = next((line for line in out.splitlines() if line.startswith("ROOT ")), "")
    rt("delete", "--force", "sa1")
    remounted = "REMOUNTED" in out and "nodev" not in root_line.split(" - ")[0]
    check(f"CAP_SYS_ADMIN ({rt.mode}): a read-only bind stays read-only: remounting it rw is "
          "refused, mount_setattr and open_tree_attr answer ENOSYS, a bind of it is read-only, and the host's "
          "0666 canary under it keeps its mtime; a remount keeping ro works",
          r.returncode == 0 and "END" in out and "RW-REMOUNTED" not in out and
          "WROTE" not in out and "BOUND" in out and "mount_setattr errno=ENOSYS" in out and
          # open_tree_attr clones a mount and clears its read-only flag in
          # one call (Linux 6.15; the second review wrote through it)
          "open_tree_attr errno=ENOSYS" in out and
          # EPERM, in busybox's words as root or as not (rootless)
          ("Operation not permitted" in out or "permission denied" in out) and
          "Read-only file system" in out and
          "REMOUNTED" in out and os.stat(canary).st_mtime_ns == canary_before and
          # the record says a filter is there, though the spec asked none
          sa1_state.get("stockade", {}).get("enforced", {}).get("seccomp") == "stockade-mount",
          (r.returncode, out, r.stderr, sa1_state.get("stockade", {}).get("enforced")))
    if rt.mode == "root":
        # Inside, the cgroup namespace's root is the container's cgroup (as
        # under runc: init joins it before unsharing); the host sees where.
        inside = [line.split(":", 2)[2] for line in out.splitlines() if ":devices:" in line]
        check("CAP_SYS_ADMIN: the container remounts its root dev, yet an image's device node "
              "does not open (the device cgroup); /dev/null does",
              r.returncode == 0 and remounted and "OPENED" not in out and "NULL-OK" in out and
              inside == ["/"] and
              re.fullmatch(r"/stockade-oci/sa1-[0-9a-f]{16}", host_cgroup.get("devices", "")),
              (r.returncode, out, r.stderr, host_cgroup))
        check("CAP_SYS_ADMIN: the host's devices directory holds the rules (deny all, the "
              "default nodes), and is gone after delete",
              "c 1:3 rwm" in listed and "c 10:229" not in listed and "a *:* rwm" not in listed and
              not os.path.exists(devices_dir), (listed, os.path.exists(devices_dir)))
    else:
        check("CAP_SYS_ADMIN rootless: create says the mounts can be remounted with no device "
              "cgroup behind them", r.returncode == 0 and "no device cgroup" in said,
              (r.returncode, said))
        return
    sys_admin_elsewhere(rt, scratch, owner, base, config)


def host_cgroup_of(pid):
    """{controller (v1's name, "" for v2): path} of /proc/PID/cgroup, read
    from the host; empty where the process is gone."""
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return {}
    out = {}
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            out[controller.removeprefix("name=")] = path
    return out


def root_tag(root):
    """oci/cgroups.h rootTag: FNV-1a (64 bits) of the canonical --root, hex."""
    h = 0xcbf29ce484222325
    for b in root.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    return f"{h:016x}"


def default_cgroup(rt, scratch, owner, base, binary):
    """As root every container has a cgroup of its own, as under runc, with
    no cgroupsPath, limits or CAP_SYS_ADMIN asked: /stockade-oci/ID-TAG,
    TAG naming the --root, so one id under two roots is two cgroups. Seen
    from the host: init in it (every v1 hierarchy mounted, cpuacct and
    blkio too; the one directory on v2), the device rules deny all but the defaults
    (v1's devices.list), pause freezes it, delete removes every directory."""
    bundle = make_bundle(scratch, "plain-cg", ["sleep", "1000"], owner, base)
    other_root = tempfile.mkdtemp(prefix="root2-", dir=scratch)
    other = Runtime(binary, other_root, rt.mode)
    v1 = not os.path.exists("/sys/fs/cgroup/cgroup.controllers")
    created = [rt("create", "--bundle", bundle, "pc1"), other("create", "--bundle", bundle, "pc1")]
    paths = [host_cgroup_of((state_of(r, "pc1") or {}).get("pid", 0)) for r in (rt, other)]
    key = "memory" if v1 else ""
    # Every v1 hierarchy mounted (cpuacct and blkio too: a shim's and
    # podman's stats read the usage there), devices third.
    mounted = ([c for c in ("memory", "pids", "devices", "freezer", "cpuset", "cpu", "cpuacct",
                            "blkio") if os.path.isdir(f"/sys/fs/cgroup/{c}")] if v1 else [""])
    dirs = [f"/sys/fs/cgroup/{c}{paths[0].get(c, '/none')}" for c in mounted]
    check("as root a container without cgroupsPath has a cgroup of its own, /stockade-oci/ID-TAG, "
          "another under a second --root (init in it, seen from the host)",
          all(r.returncode == 0 for r in created) and
          re.fullmatch(r"/stockade-oci/pc1-[0-9a-f]{16}", paths[0].get(key, "")) and
          re.fullmatch(r"/stockade-oci/pc1-[0-9a-f]{16}", paths[1].get(key, "")) and
          paths[0][key] != paths[1][key] and
          (not v1 or len({paths[0].get(c) for c in mounted}) == 1)
          and all(os.path.isdir(d) for d in dirs),
          ([r.stderr for r in created], paths))
    if v1:
        with open(os.path.join(dirs[2], "devices.list")) as f:
            listed = f.read()
        check("...its device rules deny all but the defaults (devices.list)",
              "c 1:3 rwm" in listed and "a *:* rwm" not in listed, listed)
    rt("start", "pc1")
    r = rt("pause", "pc1")
    check("...it can be paused (the freezer)", r.returncode == 0 and
          (state_of(rt, "pc1") or {}).get("status") == "paused", r.stderr)
    # The review's findings: a default leaf that exists already (a
    # squatter's, or one left over) is refused, not joined; a cgroupsPath
    # naming another's default leaf is refused; a frozen cgroup is refused
    # rather than stopping create; an id beginning ".." is a name.
    tag = root_tag(os.path.realpath(rt.root))
    check("...its name is the id and the FNV-1a of the canonical --root",
          paths[0].get(key) == f"/stockade-oci/pc1-{tag}", (paths[0], tag))
    v1_dirs = ("memory", "pids", "devices", "freezer")
    squatted = [f"/sys/fs/cgroup/{c}/stockade-oci/pc2-{tag}" for c in v1_dirs] if v1 else \
        [f"/sys/fs/cgroup/stockade-oci/pc2-{tag}"]
    os.makedirs(squatted[-1])
    squat = rt("create", "--bundle", bundle, "pc2")
    squat_left = os.path.exists(os.path.join(rt.root, "pc2")) or \
        any(os.path.exists(d) for d in squatted[:-1])
    kept = os.path.isdir(squatted[-1])
    os.rmdir(squatted[-1])
    check("a default cgroup that exists already is refused, naming it, not joined; nothing "
          "made is left, the directory that was there is",
          squat.returncode == 1 and "exists already" in squat.stderr and not squat_left and kept,
          (squat.returncode, squat.stderr, squat_left, kept))
    named = json.loads(json.dumps(base))
    named["linux"]["cgroupsPath"] = paths[0].get(key, "/x")
    r = rt("create", "--bundle", make_bundle(scratch, "named-cg", ["true"], owner, named), "pc3")
    check("a cgroupsPath naming another container's default cgroup is refused",
          r.returncode == 1 and "stockade's default cgroups" in r.stderr, (r.returncode, r.stderr))
    if v1:
        cold = f"/stockade-oci-frozen-{os.getpid()}"
        os.makedirs(f"/sys/fs/cgroup/freezer{cold}")
        with open(f"/sys/fs/cgroup/freezer{cold}/freezer.state", "w") as f:
            f.write("FROZEN")
        frozen_config = json.loads(json.dumps(base))
        frozen_config["linux"]["cgroupsPath"] = cold
        r = rt("create", "--bundle", make_bundle(scratch, "frozen-cg", ["true"], owner,
                                                   frozen_config), "pc4")
        with open(f"/sys/fs/cgroup/freezer{cold}/freezer.state", "w") as f:
            f.write("THAWED")
        made_beside = [c for c in V1_CONTROLLERS if c != "freezer"
                       if os.path.exists(f"/sys/fs/cgroup/{c}{cold}")]
        os.rmdir(f"/sys/fs/cgroup/freezer{cold}")
        check("a frozen cgroup is refused (create does not stop in it), nothing made beside it",
              r.returncode == 1 and "is frozen" in r.stderr and not made_beside and
              not os.path.exists(os.path.join(rt.root, "pc4")),
              (r.returncode, r.stderr, made_beside))
    r = rt("create", "--bundle", bundle, "..x")
    dots = host_cgroup_of((state_of(rt, "..x") or {}).get("pid", 0)).get(key, "")
    rt("delete", "--force", "..x")
    check("an id beginning with \"..\" gets its cgroup",
          r.returncode == 0 and dots == f"/stockade-oci/..x-{tag}", (r.stderr, dots))
    rt("delete", "--force", "pc1")
    other("delete", "--force", "pc1")
    check("...delete removes its directories (both roots')",
          not any(os.path.exists(d) for d in dirs) and
          not os.path.exists(f"/sys/fs/cgroup/{'memory' if v1 else ''}{paths[1].get(key, '/x')}"),
          [d for d in dirs if os.path.exists(d)])


def kill_all_after_the_end(rt, scratch, owner, base):
    """As root: `kill --all` of a stopped container signals what is left in
    its cgroup and exits 0, as runc's does (ctr's `task kill -a` after the
    end); `kill` without --all says `container not running`. The leftover is
    a process of this test's, moved into the stopped container's cgroups
    from the host (as an exec'd process in a pod's shared pid namespace can
    outlive init); it is killed here whatever the runtime does."""
    if rt.mode != "root":
        return
    bundle = make_bundle(scratch, "kill-all-end", ["true"], owner, base)
    rt("create", "--bundle", bundle, "ka1")
    init = (state_of(rt, "ka1") or {}).get("pid", 0)
    cgroups = {c: p for c, p in host_cgroup_of(init).items()
               if p.startswith("/stockade-oci/ka1-")}
    rt("start", "ka1")
    stopped = wait_for(lambda: (state_of(rt, "ka1") or {}).get("status") == "stopped")
    sleeper = subprocess.Popen(["sleep", "4747"])
    try:
        for controller, path in cgroups.items():
            with open(f"/sys/fs/cgroup/{controller}{path}/cgroup.procs", "w") as f:
                f.write(str(sleeper.pid))
        plain = rt("kill", "ka1", "KILL")
        alive_after_plain = sleeper.poll() is None
        every = rt("kill", "--all", "ka1", "KILL")
        try:
            ended = sleeper.wait(timeout=10)
        except subprocess.TimeoutExpired:
            ended = None
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
            sleeper.wait()
    gone = rt("delete", "ka1")
    check("kill --all of a stopped container: what is left in its cgroup is signalled, exit 0; "
          "kill without --all: container not running, nothing signalled",
          stopped and cgroups and plain.returncode == 1 and
          "container not running" in plain.stderr and alive_after_plain and
          every.returncode == 0 and ended == -signal.SIGKILL and gone.returncode == 0,
          (stopped, cgroups, plain.returncode, plain.stderr, alive_after_plain, every.returncode,
           every.stderr, ended, gone.stderr))


def sys_admin_elsewhere(rt, scratch, owner, base, admin_config):
    """As root, the other ways to CAP_SYS_ADMIN without device rules of the
    container's own are refused (the review's F3, F4): an exec'd process
    asking for it in a container that has no device cgroup; a container
    asking for it in a cgroup another container already holds, whose rules
    its own would replace; and one without it there leaves the holder's
    rules as they are (the binary before replaced them: 'a *:* rwm')."""
    # A container with no device rules of its own, as root: its cgroupsPath
    # was there before create (made here), so the rules are not written
    # into it, nor joined, for they could be another's.
    premade = f"/stockade-oci-premade-{os.getpid()}"
    v1 = not os.path.exists("/sys/fs/cgroup/cgroup.controllers")
    # Only the devices leaf made by the test (v1); the others are create's.
    premade_dirs = ([f"/sys/fs/cgroup/{c}{premade}" for c in V1_CONTROLLERS
                     if os.path.isdir(f"/sys/fs/cgroup/{c}")] if v1
                    else [f"/sys/fs/cgroup{premade}"])
    os.makedirs(f"/sys/fs/cgroup/devices{premade}" if v1 else premade_dirs[0])
    noadmin = json.loads(json.dumps(base))
    noadmin["linux"]["cgroupsPath"] = premade
    sleeper = make_bundle(scratch, "noadmin", ["sleep", "1000"], owner, noadmin)
    r = rt("run", "--detach", "--bundle", sleeper, "sa2")
    process = os.path.join(scratch, "admin-process.json")
    caps = admin_config["process"]["capabilities"]
    with open(process, "w") as f:
        json.dump({"args": ["true"], "cwd": "/", "env": ["PATH=/bin"],
                   "user": {"uid": 0, "gid": 0},
                   "capabilities": {k: caps[k] for k in ("bounding", "effective", "permitted")}},
                  f)
    e = rt("exec", "--process", process, "sa2")
    enforced = (state_of(rt, "sa2") or {}).get("stockade", {}).get("enforced", {})
    rt("delete", "--force", "sa2")
    for d in premade_dirs:
        if os.path.isdir(d):
            os.rmdir(d)
    check("CAP_SYS_ADMIN by exec into a container with no device cgroup is refused, saying why",
          r.returncode == 0 and e.returncode != 0 and "no device cgroup" in e.stderr and
          enforced.get("devices", "").startswith("none"), (r.stderr, e.returncode, e.stderr,
                                                           enforced))

    shared = f"/stockade-oci-shared-{os.getpid()}"
    holder = json.loads(json.dumps(admin_config))
    holder["linux"]["cgroupsPath"] = shared
    holder["process"]["args"] = ["sleep", "1000"]
    a = make_bundle(scratch, "shared-a", ["sleep", "1000"], owner, holder)
    ra = rt("run", "--detach", "--bundle", a, "sa3")
    held_state = (state_of(rt, "sa3") or {}).get("stockade", {}).get("enforced", {})
    rb = rt("create", "--bundle", make_bundle(scratch, "shared-b", ["true"], owner, holder), "sa4")
    opener = json.loads(json.dumps(base))
    opener["linux"]["cgroupsPath"] = shared
    opener["linux"].setdefault("resources", {})["devices"] = [{"allow": True, "access": "rwm"}]
    rc = rt("create", "--bundle", make_bundle(scratch, "shared-c", ["true"], owner, opener), "sa5")
    with open(f"/sys/fs/cgroup/devices{shared}/devices.list") as f:
        listed = f.read()
    # Both end before either is deleted: delete removes the cgroup, which
    # the other would still hold.
    for cid in ("sa5", "sa3"):
        rt("kill", cid, "9")
    wait_for(lambda: all((state_of(rt, cid) or {}).get("status") in (None, "stopped")
                         for cid in ("sa5", "sa3")))
    for cid in ("sa5", "sa4", "sa3"):
        rt("delete", "--force", cid)
    subprocess.run(["rmdir"] + [f"/sys/fs/cgroup/{c}{shared}" for c in
                                V1_CONTROLLERS],
                   stderr=subprocess.DEVNULL)
    check("CAP_SYS_ADMIN in a cgroup another container holds is refused; one without it "
          "there leaves the holder's device rules",
          ra.returncode == 0 and held_state.get("devices") == "cgroup v1 devices" and
          rb.returncode != 0 and "exists already" in rb.stderr and rc.returncode == 0 and
          "a *:* rwm" not in listed and "c 1:3 rwm" in listed,
          (ra.stderr, held_state, rb.returncode, rb.stderr, rc.returncode, rc.stderr, listed))


def idmapped_root(rt, scratch, owner, base):
    """As root, the leased block's root owns the image through an idmapped
    root, where no other host user can reach the image (a 0700 directory of
    root's on the way): it writes root's files of the image, on disk as
    root's, and a file of disk id 1000 shows as its 1000. Where the image is
    reachable (this script's scratch is 0755), it is bound as before: root's
    files show as nobody's and cannot be written. Rootless the image is the
    caller's, unchanged."""
    if rt.mode != "root":
        return
    closed = tempfile.mkdtemp(prefix="stockade-idmap-", dir="/var/tmp")
    try:
        image = os.path.join(closed, "rootfs")
        for d in ["bin", "proc", "dev", "sys", "tmp", "out", "etc"]:
            os.makedirs(os.path.join(image, d))
        shutil.copy(BUSYBOX, os.path.join(image, "bin", "busybox"))
        for applet in set(APPLETS):
            os.symlink("busybox", os.path.join(image, "bin", applet))
        service = os.path.join(image, "etc", "service-file")
        with open(service, "w") as f:
            f.write("x\n")
        os.chown(service, 1000, 1000)
        probe = ("touch /made-inside && echo TOUCHED; ls -ln /bin/busybox /etc/service-file; "
                 "read line < /proc/self/mountinfo; echo \"$line\"")
        config = json.loads(json.dumps(base))
        config["root"] = {"path": image, "readonly": False}
        bundle = make_bundle(scratch, "idmap-closed", ["sh", "-c", probe], owner, config)
        r = rt("run", "--bundle", bundle, "im1")
        made = os.path.join(image, "made-inside")
        st = os.lstat(made) if os.path.lexists(made) else None
        owners = [line.split()[2:4] for line in r.stdout.splitlines() if line.startswith("-")]
        root_line = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
        check("idmapped root (image closed to others): the container's root writes it, "
              "on disk as root's; the image's ids show as the container's",
              "TOUCHED" in r.stdout and st is not None and (st.st_uid, st.st_gid) == (0, 0) and
              owners == [["0", "0"], ["1000", "1000"]] and
              all(w in root_line.split(" - ")[0] for w in ("idmapped", "nosuid", "nodev")),
              (r.returncode, r.stdout, r.stderr, st and (st.st_uid, st.st_gid)))
        config = json.loads(json.dumps(base))
        config["root"]["readonly"] = False
        reachable = make_bundle(scratch, "idmap-open", ["sh", "-c", probe], owner, config)
        r = rt("run", "--bundle", reachable, "im2")
        owners = [line.split()[2:4] for line in r.stdout.splitlines() if line.startswith("-")]
        check("no idmapped root where other users reach the image: root's files nobody's, "
              "unwritable",
              "TOUCHED" not in r.stdout and "Permission denied" in r.stderr and
              owners[:1] == [["65534", "65534"]] and
              not os.path.lexists(os.path.join(scratch, "rootfs", "made-inside")),
              (r.returncode, r.stdout, r.stderr))
        # What the container's root makes in an idmapped root is disk
        # root's, so nothing it does may leave a privileged file there, even
        # with CAP_SETFCAP asked and no filter: CAP_SETFCAP is left out (a
        # file capability it set would name disk root), a user namespace of
        # its own (whose root would hold CAP_SETFCAP) and a setuid mode are
        # refused, for its command and for an exec'd process alike.
        guard = ("grep -E '^Cap(Eff|Bnd):' /proc/self/status; "
                 "unshare -U true && echo UNSHARED; "
                 "cp /bin/busybox /tmp/sx-$1 && chmod 4755 /tmp/sx-$1 && echo CHMODDED")
        config = json.loads(json.dumps(base))
        config["root"] = {"path": image, "readonly": False}
        config["process"]["capabilities"] = {
            k: ["CAP_SETFCAP", "CAP_SETUID", "CAP_FOWNER", "CAP_DAC_OVERRIDE"]
            for k in ("bounding", "effective", "permitted")}
        config["linux"].pop("seccomp", None)
        bundle = make_bundle(scratch, "idmap-guard", [
            "sh", "-c", "(" + guard + ") > /tmp/guard-cmd.txt 2>&1; sleep 1000", "sh", "cmd"],
            owner, config)
        log = os.path.join(scratch, "im5.log")
        r = rt("run", "--detach", "--bundle", bundle, "im5", log=log)
        wait_for(lambda: os.path.exists(os.path.join(image, "tmp", "guard-cmd.txt")) and
                 "sx-cmd" in open(os.path.join(image, "tmp", "guard-cmd.txt")).read())
        e = rt("exec", "im5", "sh", "-c", guard, "sh", "exec")
        enforced = (state_of(rt, "im5") or {}).get("stockade", {}).get("enforced", {})
        rt("delete", "--force", "im5")
        said = open(log).read() if os.path.exists(log) else ""
        cmd_text = open(os.path.join(image, "tmp", "guard-cmd.txt")).read() \
            if os.path.exists(os.path.join(image, "tmp", "guard-cmd.txt")) else ""

        def caps_of(text):
            return {line.split(":")[0]: int(line.split()[1], 16)
                    for line in text.splitlines() if line.startswith("Cap")}
        setfcap, setuid_cap = 1 << 31, 1 << 7
        made = [os.lstat(os.path.join(image, "tmp", "sx-" + w))
                if os.path.lexists(os.path.join(image, "tmp", "sx-" + w)) else None
                for w in ("cmd", "exec")]
        check("idmapped root: no CAP_SETFCAP (create says so), no user namespace of its own, "
              "no setuid mode, for the command and an exec'd process; on disk the copies are "
              "root's and not setuid",
              r.returncode == 0 and e.returncode != 0 and
              all(caps_of(t).get("CapBnd", setfcap) & setfcap == 0 and
                  caps_of(t).get("CapEff", 0) & setuid_cap and
                  "UNSHARED" not in t and "CHMODDED" not in t and
                  "Operation not permitted" in t for t in (cmd_text, e.stdout + e.stderr)) and
              all(m is not None and m.st_uid == 0 and not m.st_mode & 0o6000 for m in made) and
              "CAP_SETFCAP left out" in said and enforced.get("root") == "idmapped" and
              enforced.get("seccomp") == "stockade-guard",
              (r.returncode, r.stderr, cmd_text, e.returncode, e.stdout, e.stderr, said, enforced,
               [m and (m.st_uid, oct(m.st_mode)) for m in made]))
        # An overlay (podman's and containerd's usual root): Linux 6.18
        # cannot idmap an overlayfs mount (mount_setattr: EINVAL), so create
        # mounts an overlay of the container's own over idmapped clones of
        # the engine's layers, with a work directory of its own beside the
        # upper one. Its writes land in the engine's upper directory as
        # disk ids (a new file root's, a lower file copied up with its
        # owner, the lower unchanged), and the work directory is gone once
        # the container is. Where the upper directory is reachable by other
        # users it is bound as before, and create's log says why.
        root_file = os.path.join(image, "etc", "root-file")
        with open(root_file, "w") as f:
            f.write("x\n")
        # Two lower layers, the topmost first as mountinfo lists them: the
        # container's overlay keeps their order.
        top = os.path.join(closed, "top-layer")
        os.makedirs(os.path.join(top, "etc"))
        for where, said in ((top, "top"), (image, "bottom")):
            with open(os.path.join(where, "etc", "order"), "w") as f:
                f.write(said + "\n")
        with open(os.path.join(image, "etc", "doomed"), "w") as f:
            f.write("x\n")
        probe_ovl = probe + ("; echo more >> /etc/root-file && echo APPENDED; "
                             "rm -f /etc/doomed; cat /etc/order")
        for cid, upper_parent in (("im3", closed), ("im4", scratch)):
            layer = tempfile.mkdtemp(prefix="ovl-", dir=upper_parent)
            os.chmod(layer, 0o755)
            upper, work = os.path.join(layer, "upper"), os.path.join(layer, "work")
            merged = os.path.join(closed, "merged-" + cid)
            for d in (upper, work, merged):
                os.makedirs(d)
            subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                            f"lowerdir={top}:{image},upperdir={upper},workdir={work}", merged],
                           check=True)
            log = os.path.join(closed, cid + ".log")
            try:
                config = json.loads(json.dumps(base))
                config["root"] = {"path": merged, "readonly": False}
                bundle = make_bundle(scratch, "idmap-" + cid, ["sh", "-c", probe_ovl], owner,
                                     config)
                r = rt("run", "--bundle", bundle, cid, log=log)
                left = sorted(os.listdir(layer))
                # The engine's own overlay sees what the container wrote.
                seen_by_engine = os.path.lexists(os.path.join(merged, "made-inside"))
                again = None
                if cid == "im3":
                    # The removed lower file is a whiteout in the upper
                    # directory, a link of one inode overlayfs keeps in its
                    # work directory. A work directory left by a create
                    # whose delete never came (a reboot empties /run) holds
                    # such a link: the container's next create still remakes
                    # the overlay (whiteouts are never written), and replaces it.
                    whiteout = os.path.join(upper, "etc", "doomed")
                    stale = os.path.join(layer, ".stockade-work-" + cid, "work")
                    os.makedirs(stale)
                    os.link(whiteout, os.path.join(stale, "#1"))
                    check_bundle = make_bundle(scratch, "idmap-again", ["sh", "-c",
                                               "touch /again && ls /etc/doomed"], owner, config)
                    again = rt("run", "--bundle", check_bundle, cid, log=log + "2")
                    again_said = open(log + "2").read() if os.path.exists(log + "2") else ""
                    again_left = sorted(os.listdir(layer))
                    again_made = os.lstat(os.path.join(upper, "again")) \
                        if os.path.lexists(os.path.join(upper, "again")) else None
            finally:
                subprocess.run(["umount", merged])
            said = open(log).read() if os.path.exists(log) else ""
            made = os.path.join(upper, "made-inside")
            st = os.lstat(made) if os.path.lexists(made) else None
            copied = os.path.join(upper, "etc", "root-file")
            cst = os.lstat(copied) if os.path.lexists(copied) else None
            lower_text = open(root_file).read()
            owners = [line.split()[2:4] for line in r.stdout.splitlines() if line.startswith("-")]
            if cid == "im3":
                check("an overlay root is made again over its idmapped layers: the container's "
                      "root writes it, in the upper directory as root's; a lower file is "
                      "copied up with its owner, the lower unchanged; no work directory left",
                      r.returncode == 0 and "TOUCHED" in r.stdout and "APPENDED" in r.stdout and
                      r.stdout.splitlines()[-1:] == ["top"] and
                      st is not None and (st.st_uid, st.st_gid) == (0, 0) and
                      cst is not None and (cst.st_uid, cst.st_gid) == (0, 0) and
                      open(copied).read() == "x\nmore\n" and lower_text == "x\n" and
                      owners == [["0", "0"], ["1000", "1000"]] and seen_by_engine and
                      left == ["upper", "work"] and "root.path: not idmapped" not in said,
                      (r.returncode, r.stdout, r.stderr, said, left, st and (st.st_uid, st.st_gid),
                       cst and (cst.st_uid, cst.st_gid), lower_text))
                check("an overlay root with a stale work directory linked to its whiteouts is "
                      "remade all the same; the removed file stays removed; nothing left",
                      again.returncode == 1 and "No such file" in again.stderr and
                      again_made is not None and (again_made.st_uid, again_made.st_gid) == (0, 0)
                      and "root.path: not idmapped" not in again_said and
                      again_left == ["upper", "work"],
                      (again.returncode, again.stdout, again.stderr, again_said, again_left))
            else:
                check("an overlay root whose upper directory others reach is not idmapped, "
                      "and create's log says why",
                      "TOUCHED" not in r.stdout and not os.path.lexists(made) and
                      "not idmapped" in said and "upper directory" in said and
                      left == ["upper", "work"], (r.returncode, r.stdout, r.stderr, said, left))
            shutil.rmtree(layer, ignore_errors=True)
    finally:
        shutil.rmtree(closed, ignore_errors=True)


def terminal_without_dev(rt, scratch, owner, base, mode):
    """A terminal with no /dev mount of the bundle's and no /dev/null in the
    image (its /dev holds only pts and a ptmx link): init's stdio is the
    host's null device, opened before pivot_root, so create no longer fails
    looking for the container's (ENOENT before 2026-12-05); the container's
    stdio is the pty."""
    dev = os.path.join(scratch, "rootfs", "dev")
    os.makedirs(os.path.join(dev, "pts"), exist_ok=True)
    if not os.path.lexists(os.path.join(dev, "ptmx")):
        os.symlink("pts/ptmx", os.path.join(dev, "ptmx"))
    config = json.loads(json.dumps(base))
    config["mounts"] = [m for m in config["mounts"]
                        if m["destination"] == "/dev/pts" or
                        not (m["destination"] + "/").startswith("/dev/")]
    config["process"]["terminal"] = True
    bundle = make_bundle(scratch, "tty-nodev", ["sh", "-c", "test -t 0 && echo tty-ok; "
                                                "ls /dev"], owner, config)
    sock_path = os.path.join(scratch, "console-nodev.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(sock_path)
    os.chmod(sock_path, 0o777)
    server.listen(1)
    r = rt("create", "--bundle", bundle, "--console-socket", sock_path, "tn1")
    output = b""
    if r.returncode == 0:
        conn, _ = server.accept()
        _, fds, _, _ = socket.recv_fds(conn, 1024, 4)
        rt("start", "tn1")
        output = read_console(fds)
        conn.close()
        wait_for(lambda: (state_of(rt, "tn1") or {}).get("status") == "stopped")
    server.close()
    rt("delete", "--force", "tn1")
    words = output.replace(b"\r", b"").split()
    check("a terminal without a /dev of the bundle's nor /dev/null in the image: create "
          "works, the stdio is the pty",
          r.returncode == 0 and words[:1] == [b"tty-ok"] and b"null" not in words,
          (r.returncode, r.stderr, output))


def drive_at_terminal(argv, rows, cols, prompt, keys, preexec=None):
    """Runs argv with a pty of this script's as its stdio, of rows x cols,
    as a person at a terminal would: once `prompt` is shown, types `keys`.
    Returns (exit code, everything shown, whether the pty was raw when the
    keys were typed, the pty's termios before and after)."""
    import fcntl
    import pty
    import struct
    import termios
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    before = termios.tcgetattr(slave)
    p = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, preexec_fn=preexec)
    output, raw_seen = b"", None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            output += chunk
            if raw_seen is None and prompt in output:
                # The relay's side is raw: no echo, no signals from keys,
                # byte by byte.
                lflag = termios.tcgetattr(slave)[3]
                raw_seen = not (lflag & (termios.ECHO | termios.ICANON | termios.ISIG))
                os.write(master, keys)
        elif p.poll() is not None:
            break
    if p.poll() is None:
        # Never answered (no prompt, so no keys): ended here, so that the
        # check shows what was seen instead of a timeout in wait(). The
        # command, hung up, is this subreaper's to reap: its pid namespace's
        # init cannot end (nor a delete return) before it is.
        p.kill()
        p.wait()
        for _ in range(50):
            reap()
            time.sleep(0.1)
    rc = p.wait(timeout=60)
    after = termios.tcgetattr(slave)
    os.close(master)
    os.close(slave)
    return rc, output, raw_seen, before, after


def run_with_terminal(rt, scratch, owner, base, mode):
    """`run` in the foreground with process.terminal and no --console-socket
    relays the container's pty to its own stdio, as `runc run` does (the
    config `runc spec` writes asks for a terminal): what is typed reaches
    the command, its output comes back, the exit code is the command's, the
    caller's terminal is raw while it runs and as it was afterwards, run's
    own size is the pty's, a signal to run reaches the container, and
    nothing is left under --root. Detached, a terminal still needs a console
    socket (runc's refusal). `exec -t` likewise."""
    preexec = demote if mode == "rootless" else None
    config = json.loads(json.dumps(base))
    config["process"]["terminal"] = True
    config["process"]["consoleSize"] = {"height": 24, "width": 100}
    asks = "test -t 0 && test -t 1 && echo tty-ok; stty size; read line; echo got-$line; exit "
    typed = make_bundle(scratch, "run-tty", ["sh", "-c", asks + "3"], owner, config)
    rc, output, raw_seen, before, after = drive_at_terminal(
        [rt.binary, "--root", rt.root, "run", "--bundle", typed, "rt1"], 30, 90, b"30 90",
        b"typed\r", preexec)
    lines = output.replace(b"\r", b"").split(b"\n")
    check("run with a terminal and no console socket: the pty relayed both ways, run's own "
          "size given to it, the command's exit code",
          rc == 3 and b"tty-ok" in lines and b"30 90" in lines and b"got-typed" in lines,
          (rc, output))
    check("run with a terminal: the caller's terminal raw while it relays, as it was after",
          raw_seen is True and after == before, (raw_seen, before, after))
    check("run with a terminal leaves nothing under --root", os.listdir(rt.root) == [],
          os.listdir(rt.root))

    # stdin not a terminal, stdout a pipe: the relay still runs; a SIGTERM
    # to run goes on to the container, whose trap answers through the pty.
    trapped = make_bundle(scratch, "run-tty-term",
                          ["sh", "-c", "trap 'echo got-term; exit 5' TERM; echo ready; "
                                       "while true; do sleep 0.2; done"], owner, config)
    p = subprocess.Popen([rt.binary, "--root", rt.root, "run", "--bundle", trapped, "rt2"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, preexec_fn=preexec)
    output, signalled = b"", False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([p.stdout], [], [], 0.2)
        if not ready:
            continue
        chunk = os.read(p.stdout.fileno(), 4096)
        if not chunk:
            break
        output += chunk
        if not signalled and b"ready" in output:
            p.send_signal(signal.SIGTERM)
            signalled = True
    rc = p.wait(timeout=60)
    p.stdout.close()
    check("run with a terminal: SIGTERM to run reaches the container, its answer relayed",
          rc == 5 and output.replace(b"\r", b"").split() == [b"ready", b"got-term"],
          (rc, output))

    if True:
        sleeper = make_bundle(scratch, "run-tty-sleeper", ["sleep", "1000"], owner, base)
        r = rt("run", "--detach", "--bundle", sleeper, "rt4")
        rc, output, raw_seen, before, after = drive_at_terminal(
            [rt.binary, "--root", rt.root, "exec", "-t", "rt4", "sh", "-c", asks + "6"],
            40, 120, b"40 120", b"keys\r", preexec)
        lines = output.replace(b"\r", b"").split(b"\n")
        check("exec -t with no console socket: the pty relayed both ways, the caller's size, "
              "the process's exit code, the caller's terminal raw, then as it was",
              r.returncode == 0 and rc == 6 and b"tty-ok" in lines and b"40 120" in lines and
              b"got-keys" in lines and raw_seen is True and after == before,
              (r.returncode, r.stderr, rc, output, raw_seen))
        # The pty is the exec'd process's own, as under runc: it was made by
        # exec as the host's root, so 65534's inside, and a process that
        # opened its terminal by name (script, tmux) could not.
        user = ["--user", "1000:1000"] if owner == 0 else []
        uid_seen = b"1000" if owner == 0 else b"0"
        by_name = ("echo by-name-$(stat -c %u $(tty)) > $(tty) && echo wrote; read line; "
                   "exit 7")
        rc, output, _, _, _ = drive_at_terminal(
            [rt.binary, "--root", rt.root, "exec", "-t", *user, "rt4", "sh", "-c", by_name],
            40, 120, b"wrote", b"x\r", preexec)
        check("exec -t: the pty is the process's own (uid " + uid_seen.decode() + "), and it "
              "writes to it by name", rc == 7 and b"by-name-" + uid_seen in output, (rc, output))
        r = rt("exec", "-t", "--detach", "rt4", "true")
        check("exec -t --detach with no console socket: refused as runc does",
              r.returncode != 0 and "console socket" in r.stderr, (r.returncode, r.stderr))
        rt("delete", "--force", "rt4")

    r = rt("run", "--detach", "--bundle", typed, "rt3")
    check("run --detach with a terminal and no console socket: refused as runc does, "
          "nothing left", r.returncode != 0 and "console socket" in r.stderr and
          os.listdir(rt.root) == [], (r.returncode, r.stderr, os.listdir(rt.root)))


def pids_limit_one(rt, scratch, owner, base):
    """pids.limit 1, as runc takes it: create works (init joins the cgroup
    before it forks the command, so the limit is written once both are
    in), the host's pids.max reads 1 before start, and the container's
    command cannot fork. Root: rootless has no cgroup."""
    if rt.mode != "root":
        return
    config = json.loads(json.dumps(base))
    config["linux"]["cgroupsPath"] = f"/stockade-oci-pids1-{os.getpid()}"
    config["linux"].setdefault("resources", {})["pids"] = {"limit": 1}
    bundle = make_bundle(scratch, "pids1", ["sh", "-c", "(true) && echo FORKED"], owner, config)
    r = rt("create", "--bundle", bundle, "pl1")
    pids_dir = f"/sys/fs/cgroup/pids/stockade-oci-pids1-{os.getpid()}"
    limit = open(f"{pids_dir}/pids.max").read().strip() if os.path.isdir(pids_dir) else ""
    rt("delete", "--force", "pl1")
    for c in V1_CONTROLLERS:
        try:
            os.rmdir(f"/sys/fs/cgroup/{c}/stockade-oci-pids1-{os.getpid()}")
        except OSError:
            pass
    check("pids.limit 1: create works and pids.max reads 1 before start",
          r.returncode == 0 and limit == "1", (r.returncode, r.stderr, limit))


def exec_without_process(rt, scratch, owner, base):
    """exec of a command without --process runs it as the container's own
    process, as runc's does: its env, cwd, user and groups from the config
    create read (the binary before gave a PATH alone, uid 0, no groups,
    cwd /); runc's --env (replacing a variable of that name), --cwd,
    --user and --additional-gids over them; bad values refused by name,
    and the flags refused beside --process. Root: rootless maps one id."""
    if rt.mode != "root":
        return
    config = json.loads(json.dumps(base))
    config["process"]["user"] = {"uid": 1000, "gid": 1000, "additionalGids": [3000]}
    config["process"]["env"] = ["PATH=/bin", "GREETING=from-config", "KEEP=kept"]
    config["process"]["cwd"] = "/bin"
    bundle = make_bundle(scratch, "exec-own", ["sleep", "1000"], owner, config)
    r = rt("run", "--detach", "--bundle", bundle, "ex1")
    show = ["sh", "-c", "id -u; id -g; id -G; pwd; echo \"$GREETING $KEEP $EXTRA\""]
    plain = rt("exec", "ex1", *show)
    flagged = rt("exec", "--env", "GREETING=from-flag", "-e", "EXTRA=added", "--cwd", "/",
                 "--user", "2000:2001", "--additional-gids", "4000", "-g", "4001", "ex1", *show)
    uid_only = rt("exec", "--user", "2000", "ex1", "id", "-G")
    bad = [rt("exec", *flags, "ex1", "true") for flags in
           (["--user", "root"], ["--user", "1:x"], ["--env", "NOEQUALS"], ["--cwd", "rel"],
            ["--additional-gids", "-1"], ["--cap", "CAP_SYS_ADMIN"])]
    process = os.path.join(scratch, "exec-own-process.json")
    with open(process, "w") as f:
        json.dump({"args": ["true"], "cwd": "/", "user": {"uid": 0, "gid": 0}}, f)
    beside = rt("exec", "--env", "A=b", "--process", process, "ex1")
    rt("delete", "--force", "ex1")
    check("exec without --process: the container's own env, cwd, user and groups",
          r.returncode == 0 and plain.returncode == 0 and
          plain.stdout.splitlines() == ["1000", "1000", "1000 3000", "/bin", "from-config kept "],
          (r.stderr, plain.returncode, plain.stdout, plain.stderr))
    check("exec's --env (replacing), --cwd, --user, --additional-gids (added) over them, as "
          "runc's; --user without a gid keeps the container's",
          flagged.returncode == 0 and
          flagged.stdout.splitlines() == ["2000", "2001", "2001 3000 4000 4001", "/",
                                          "from-flag kept added"] and
          uid_only.stdout.split() == ["1000", "3000"],
          (flagged.returncode, flagged.stdout, flagged.stderr, uid_only.stdout, uid_only.stderr))
    words = ["--user root", "--user 1:x", "--env NOEQUALS", "--cwd rel", "--additional-gids -1",
             "--cap"]
    # As runc: a value read for the process fails the exec (255, "exec
    # failed:"), a flag stockade does not take fails the command line (1).
    check("exec: a bad --user, --env, --cwd or --additional-gids refused by name (runc's 255), "
          "--cap as a flag (exit 1)",
          all(b.returncode == (1 if w == "--cap" else 255) and w in b.stderr and
              (w == "--cap" or "exec failed: " in b.stderr) for b, w in zip(bad, words)),
          [(b.returncode, b.stderr) for b in bad])
    check("exec: the flags beside --process are refused",
          beside.returncode == 1 and "without --process" in beside.stderr,
          (beside.returncode, beside.stderr))


def exec_through_command(rt, scratch, owner, base, mode):
    """Rootless, exec enters the container through its command's
    namespaces (init's are out of its owner's reach), and only where they
    are the container's: a command that moved into a user namespace of its
    own making (unshare -U, then exec) is not followed there, and exec
    says why. As root, exec joins init's namespaces, whatever the command
    did."""
    moved = make_bundle(scratch, "own-userns", ["unshare", "-U", "sleep", "1000"], owner, base)
    r = rt("run", "--detach", "--bundle", moved, "ou1")

    def moved_out():  # the command's user namespace is no longer init's
        pids = json.loads(rt("ps", "--format", "json", "ou1").stdout or "[]")
        try:
            return len(pids) >= 2 and (os.readlink(f"/proc/{pids[1]}/ns/user") !=
                                       os.readlink(f"/proc/{pids[0]}/ns/user"))
        except OSError:
            return False

    check("...the command moved into a user namespace of its own", wait_for(moved_out))
    e = rt("exec", "ou1", "sh", "-c", "cat /proc/self/uid_map")
    if mode == "root":
        check("exec as root of a container whose command made a user namespace of its own: "
              "init's namespaces, not the command's",
              r.returncode == 0 and e.returncode == 0 and e.stdout.split()[:1] == ["0"],
              (r.stderr, e.returncode, e.stdout, e.stderr))
    else:
        check("exec rootless of a container whose command made a user namespace of its own: "
              "refused, saying so, not entered",
              r.returncode == 0 and e.returncode == 255 and "exec failed: " in e.stderr and
              "user namespace" in e.stderr,
              (r.stderr, e.returncode, e.stdout, e.stderr))
    rt("delete", "--force", "ou1")


def exec_host_last_cap(rt, scratch, owner, base):
    """exec reads the host's highest capability number before it joins the
    container: a container granted CAP_SYS_ADMIN that binds a FIFO over its
    /proc/sys/kernel/cap_last_cap neither hangs exec (the binary before
    blocked on the FIFO) nor shrinks what exec drops from the bounding
    set: the exec'd process's CapBnd is the config's."""
    config = json.loads(json.dumps(base))
    caps = config["process"]["capabilities"]
    for kind in ("bounding", "effective", "permitted"):
        caps[kind] = sorted(set(caps.get(kind, [])) | {"CAP_SYS_ADMIN"})
    covered = make_bundle(scratch, "last-cap", ["sh", "-c",
                          "rm -f /out/lastcap-fifo; mkfifo /out/lastcap-fifo && "
                          "mount --bind /out/lastcap-fifo "
                          "/proc/sys/kernel/cap_last_cap && touch /out/lastcap-covered; "
                          "exec sleep 1000"], owner, config)
    marker = os.path.join(scratch, "out", "lastcap-covered")
    r = rt("run", "--detach", "--bundle", covered, "lc1")
    ok = r.returncode == 0 and wait_for(lambda: os.path.exists(marker))
    e = rt("exec", "lc1", "grep", "CapBnd", "/proc/self/status") if ok else None
    own = rt("exec", "lc1", "sh", "-c", "grep CapBnd /proc/1/status") if ok else None
    check("exec with the container's cap_last_cap covered by a FIFO: no hang, the bounding "
          "set the container's own",
          ok and e.returncode == 0 and own.returncode == 0 and
          e.stdout.split()[1:] == own.stdout.split()[1:] and
          e.stdout.split()[1:] != ["000001ffffffffff"],
          (r.stderr, ok, e and (e.returncode, e.stdout, e.stderr),
           own and (own.returncode, own.stdout)))
    rt("delete", "--force", "lc1")


def exec_kept_config(rt, scratch, owner, base):
    """exec takes the container's filter from the config create read, not
    from the bundle again: a container whose bundle is bound inside,
    writable, replaces config.json with one without its filter, and the
    exec'd process still runs under the filter (Seccomp: 2, mkdir refused
    with the spec's errno). The binary before gave it none (Seccomp: 0)."""
    config = json.loads(json.dumps(base))
    config["linux"]["seccomp"] = {
        "defaultAction": "SCMP_ACT_ALLOW",
        "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO",
                      "errnoRet": 122}]}
    bundle = make_bundle(scratch, "kept-config", ["sleep", "1000"], owner, config)
    unfiltered = json.loads(open(os.path.join(bundle, "config.json")).read())
    del unfiltered["linux"]["seccomp"]
    with open(os.path.join(bundle, "config.unfiltered"), "w") as f:
        json.dump(unfiltered, f)
    # The bundle bound into the container, writable by its leased ids.
    os.chmod(bundle, 0o777)
    with open(os.path.join(bundle, "config.json")) as f:
        bound = json.load(f)
    bound["mounts"].append({"destination": "/bundle", "type": "bind", "source": bundle,
                            "options": ["rbind", "rw"]})
    with open(os.path.join(bundle, "config.json"), "w") as f:
        json.dump(bound, f)
    unfiltered["mounts"] = bound["mounts"]
    with open(os.path.join(bundle, "config.unfiltered"), "w") as f:
        json.dump(unfiltered, f)
    # The mount target made beforehand: a rootless container's root may
    # not write the image (its root is 65534's only there).
    os.makedirs(os.path.join(scratch, "rootfs", "bundle"), exist_ok=True)
    r = rt("run", "--detach", "--bundle", bundle, "kc1")
    swap = rt("exec", "kc1", "busybox", "mv", "/bundle/config.unfiltered", "/bundle/config.json")
    swapped = "seccomp" not in open(os.path.join(bundle, "config.json")).read()
    e = rt("exec", "kc1", "sh", "-c", "grep Seccomp: /proc/self/status; mkdir /tmp/x")
    rt("delete", "--force", "kc1")
    check("exec: the filter is the config create read, not a config.json the container "
          "wrote into its bundle since",
          r.returncode == 0 and swap.returncode == 0 and swapped and
          "Seccomp:\t2" in e.stdout and "Disk quota exceeded" in e.stderr,
          (r.stderr, swap.returncode, swap.stderr, swapped, e.returncode, e.stdout, e.stderr))


def missing_cwd(rt, scratch, owner, base):
    """A process.cwd the root lacks is made, as runc makes it (0755, the
    container's root's), before the root is sealed: a Kubernetes workingDir
    need not be in the image (ctr --cwd /new/dir failed create with ENOENT
    before). One reached through a magic link is refused, never made. As
    root the image sits where no other user reaches it, so that its root is
    the container's (idmapped_root); rootless it is the caller's."""
    closed = tempfile.mkdtemp(prefix="stockade-cwd-", dir="/var/tmp")
    rootfs = os.path.join(closed, "rootfs")
    make_busybox_rootfs(rootfs, APPLETS)
    if owner:
        os.chmod(closed, 0o755)
        for top, dirs, files in os.walk(rootfs):
            for name in [top] + [os.path.join(top, n) for n in dirs + files]:
                os.lchown(name, owner, owner)
    made = os.path.join(rootfs, "cwd-made")
    config = json.loads(json.dumps(base))
    config["root"] = {"path": rootfs, "readonly": True}
    bundle = make_bundle(scratch, "cwd-missing", ["sh", "-c", "pwd; stat -c '%a %u' ."],
                         owner, config)
    config_path = os.path.join(bundle, "config.json")
    with open(config_path) as f:
        config = json.load(f)
    config["process"]["cwd"] = "/cwd-made/deeper/dir"
    with open(config_path, "w") as f:
        json.dump(config, f)
    r = rt("run", "--bundle", bundle, "cwd1")
    st = os.stat(os.path.join(made, "deeper", "dir")) if os.path.isdir(
        os.path.join(made, "deeper", "dir")) else None
    check("a process.cwd the image lacks is made (0755, the container's root's) under a "
          "read-only root, and the command starts in it",
          r.returncode == 0 and r.stdout.split()[:3] == ["/cwd-made/deeper/dir", "755", "0"] and
          st is not None and stat.S_IMODE(st.st_mode) == 0o755 and st.st_uid == owner,
          (r.returncode, r.stdout, r.stderr, st))
    shutil.rmtree(made, ignore_errors=True)
    link = os.path.join(rootfs, "cwd-magic")
    os.symlink("/proc/self/fd/3", link)
    config["process"]["cwd"] = "/cwd-magic/x"
    with open(config_path, "w") as f:
        json.dump(config, f)
    r = rt("run", "--bundle", bundle, "cwd2")
    if owner == 0:
        # A root not idmapped (the scratch's, root's, under a path any user
        # may search), whose files the container's leased ids do not own:
        # create makes the directory as host root, as runc's init does
        # (EACCES before 2026-12-07: the second compatibility hunt's).
        plain = json.loads(json.dumps(base))
        plain["process"]["cwd"] = "/cwd-plain/deeper"
        plain["process"]["user"] = {"uid": 1000, "gid": 1000}
        shared = os.path.join(scratch, "rootfs", "cwd-plain")
        plain_run = rt("run", "--bundle", make_bundle(scratch, "cwd-plain", ["sh", "-c", "pwd"], owner,
                                                     plain),
                       "cwd4")
        made_plain = os.path.join(shared, "deeper")
        st_plain = os.stat(made_plain) if os.path.isdir(made_plain) else None
        shutil.rmtree(shared, ignore_errors=True)
        check("as root, a process.cwd missing from a root not idmapped is made by create (root's, "
              "0755, as runc's), and uid 1000 starts in it",
              plain_run.returncode == 0 and plain_run.stdout.strip() == "/cwd-plain/deeper" and
              st_plain is not None and st_plain.st_uid == 0 and
              stat.S_IMODE(st_plain.st_mode) == 0o755,
              (plain_run.returncode, plain_run.stdout, plain_run.stderr, st_plain))
    config["process"]["cwd"] = "/proc/sys"
    config["process"]["args"] = ["sh", "-c", "pwd"]
    with open(config_path, "w") as f:
        json.dump(config, f)
    in_proc = rt("run", "--bundle", bundle, "cwd3")
    shutil.rmtree(closed, ignore_errors=True)
    check("a process.cwd through a magic link is refused at create, nothing made",
          r.returncode != 0 and "ELOOP" in r.stderr, (r.returncode, r.stdout, r.stderr))
    # Beneath the container's proc, which the command mounts again for its
    # own pid namespace: the directory is there, nothing is made again.
    check("a process.cwd in /proc runs there (the command's own proc)",
          in_proc.returncode == 0 and in_proc.stdout.strip() == "/proc/sys",
          (in_proc.returncode, in_proc.stdout, in_proc.stderr))


def missing_interpreter(rt, scratch, owner, base):
    """A script whose #! interpreter the image lacks: create finds the file,
    the execve at start fails, and the container says why on its own
    stderr, as runc's does, rather than end 127 in silence."""
    rootfs = os.path.join(scratch, "rootfs")
    script = os.path.join(rootfs, "bin", "badinterp")
    with open(script, "w") as f:
        f.write("#!/nonexistent/interpreter\necho never\n")
    os.chmod(script, 0o755)
    os.chown(script, owner, owner)
    bundle = make_bundle(scratch, "badinterp", ["/bin/badinterp"], owner, base)
    r = rt("run", "--bundle", bundle, "bi1")
    # exec of it says the same, not the "stat" of a file that is there.
    sleeper = make_bundle(scratch, "badinterp-sleeper", ["sleep", "1000"], owner, base)
    started = rt("run", "--detach", "--bundle", sleeper, "bi2")
    e = rt("exec", "bi2", "/bin/badinterp")
    rt("delete", "--force", "bi2")
    os.unlink(script)
    check("a missing #! interpreter: exit 127 and 'exec /bin/badinterp: no such file or "
          "directory' on the container's stderr",
          r.returncode == 127 and "exec /bin/badinterp: no such file or directory" in r.stderr and
          "never" not in r.stdout, (r.returncode, r.stdout, r.stderr))
    check("exec of a script whose #! interpreter is missing: 'exec /bin/badinterp: no such "
          "file or directory', not a stat of it",
          started.returncode == 0 and e.returncode != 0 and
          "exec /bin/badinterp: no such file or directory" in e.stderr and
          "stat" not in e.stderr, (started.returncode, started.stderr, e.returncode, e.stderr))


def null_stdio_reopened(rt, scratch, owner, base):
    """runc's reOpenDevNull: stdio that is the host's /dev/null opened
    read-only (conmon's fd 0 for a container without -i) is the container's
    own /dev/null opened read and write, so a write to fd 0 works as under
    runc (it answered EBADF before 2026-12-07); fd 0 as a pipe stays the
    pipe. The host's /dev/null is still the null device after."""
    probe = ["sh", "-c", "echo x >&0 && echo wrote; "
             "grep -m1 '^flags' /proc/self/fdinfo/0"]
    bundle = make_bundle(scratch, "null-stdio", probe, owner, base)
    with open("/dev/null", "rb") as read_only:
        r = rt("run", "--bundle", bundle, "nul1", stdin=read_only)
    lines = r.stdout.split("\n")
    flags = int(lines[1].split()[1], 8) if len(lines) > 1 and lines[1].startswith("flags") else -1
    check("stdio: the host's /dev/null read-only is reopened read and write inside, as runc",
          r.returncode == 0 and lines[0] == "wrote" and flags & 3 == os.O_RDWR and
          not flags & os.O_NONBLOCK, (r.returncode, r.stdout, r.stderr))
    piped = rt("run", "--bundle", make_bundle(scratch, "null-stdio-pipe",
                                              ["sh", "-c", "read line; echo \"$line\""],
                                              owner, base), "nul2", input_text="kept\n")
    host = os.stat("/dev/null")
    check("...a pipe at fd 0 stays the pipe; the host's /dev/null is the null device",
          piped.returncode == 0 and piped.stdout == "kept\n" and stat.S_ISCHR(host.st_mode) and
          host.st_rdev == os.makedev(1, 3), (piped.returncode, piped.stdout, piped.stderr))


def unprivileged_ports(rt, scratch, owner, base):
    """A container's own network namespace keeps the kernel's
    ip_unprivileged_port_start (1024), as runc leaves it: the spec asks for
    no sysctl, so a process without CAP_NET_BIND_SERVICE cannot bind port 80
    (stockade set 0 in every container before 2026-12-07, as its own `run`
    does). The spec's sysctl still sets it."""
    probe = ["cat", "/proc/sys/net/ipv4/ip_unprivileged_port_start"]
    plain = rt("run", "--bundle", make_bundle(scratch, "ports-plain", probe, owner, base), "up1")
    config = json.loads(json.dumps(base))
    config["linux"]["sysctl"] = {"net.ipv4.ip_unprivileged_port_start": "80"}
    asked = rt("run", "--bundle", make_bundle(scratch, "ports-asked", probe, owner, config), "up2")
    check("ip_unprivileged_port_start: the kernel's 1024 in a container's network namespace, "
          "as runc; the spec's sysctl sets it",
          plain.returncode == 0 and plain.stdout.strip() == "1024" and
          asked.returncode == 0 and asked.stdout.strip() == "80",
          (plain.returncode, plain.stdout, plain.stderr, asked.stdout, asked.stderr))


def recursive_bind_options(rt, scratch, owner, base):
    """The runtime-spec's recursive mount options (`rro`, `rnosuid`, ...,
    which containerd 2 sends for read-only mounts) and `nosymfollow` on a
    bind are taken, as runc takes them (each was refused by name before
    2026-12-07): the bind is read-only, a link in it is not followed
    (ELOOP), mountinfo says both, and the host's file is unchanged."""
    host = os.path.join(scratch, "rbind-src")
    os.makedirs(host, exist_ok=True)
    target = os.path.join(host, "file")
    with open(target, "w") as f:
        f.write("kept\n")
    os.symlink("file", os.path.join(host, "link"))
    if owner:
        for p in (host, target):
            os.chown(p, owner, owner)
        os.lchown(os.path.join(host, "link"), owner, owner)
    before = os.stat(target).st_mtime_ns
    # The target in the image (rootless, the child cannot make it under
    # the image's root-owned directory).
    point = os.path.join(scratch, "rootfs", "rb")
    os.makedirs(point, exist_ok=True)
    config = json.loads(json.dumps(base))
    config["mounts"].append({"destination": "/rb", "type": "bind", "source": host,
                             "options": ["rbind", "rro", "rnosuid", "rnodev", "nosymfollow"]})
    probe = ["sh", "-c", "cat /rb/file; cat /rb/link 2>&1 | grep -c 'symbolic links'; "
             "(echo x > /rb/file) 2>&1 | grep -c 'Read-only'; grep ' /rb ' /proc/self/mountinfo"]
    r = rt("run", "--bundle", make_bundle(scratch, "rbind-opts", probe, owner, config), "rb1")
    lines = r.stdout.splitlines()
    options = lines[3].split()[5].split(",") if len(lines) > 3 else []
    with open(target) as f:
        kept = f.read()
    check("rro, rnosuid, rnodev and nosymfollow on a bind: read-only, no link followed "
          "(ELOOP), both in mountinfo; the host's file as it was",
          r.returncode == 0 and lines[:3] == ["kept", "1", "1"] and "ro" in options and
          "nosymfollow" in options and kept == "kept\n" and
          os.stat(target).st_mtime_ns == before, (r.returncode, r.stdout, r.stderr))

    # readonlyPaths over such a bind, with another bound beneath it: both
    # read-only, and what each mount had is kept (nosymfollow, exec; our
    # remount, which set the flags afresh, dropped nosymfollow and added
    # noexec, and left the mount beneath writable).
    inner = os.path.join(scratch, "rbind-inner")
    os.makedirs(inner, exist_ok=True)
    script = os.path.join(host, "run.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\necho ran\n")
    os.chmod(script, 0o755)
    if owner:
        for p in (inner, script):
            os.chown(p, owner, owner)
    os.makedirs(os.path.join(host, "sub"), exist_ok=True)
    if owner:
        os.chown(os.path.join(host, "sub"), owner, owner)
    os.makedirs(os.path.join(scratch, "rootfs", "rp"), exist_ok=True)
    config = json.loads(json.dumps(base))
    config["mounts"].append({"destination": "/rp", "type": "bind", "source": host,
                             "options": ["rbind", "rw", "nosymfollow"]})
    config["mounts"].append({"destination": "/rp/sub", "type": "bind", "source": inner,
                             "options": ["rbind", "rw"]})
    config["linux"]["readonlyPaths"] = config["linux"].get("readonlyPaths", []) + ["/rp"]
    probe = ["sh", "-c", "/rp/run.sh; cat /rp/link 2>&1 | grep -c 'symbolic links'; "
             "(echo x > /rp/file) 2>&1 | grep -c 'Read-only'; "
             "(echo x > /rp/sub/new) 2>&1 | grep -c 'Read-only'; "
             "grep ' /rp ' /proc/self/mountinfo | tail -1"]
    r = rt("run", "--bundle", make_bundle(scratch, "ro-path-opts", probe, owner, config), "rb2")
    lines = r.stdout.splitlines()
    options = lines[4].split()[5].split(",") if len(lines) > 4 else []
    with open(target) as f:
        kept = f.read()
    check("readonlyPaths over a nosymfollow bind with a bind beneath: both read-only, "
          "nosymfollow and exec kept; the host's files as they were",
          r.returncode == 0 and lines[:4] == ["ran", "1", "1", "1"] and "ro" in options and
          "nosymfollow" in options and "noexec" not in options and kept == "kept\n" and
          not os.path.exists(os.path.join(inner, "new")), (r.returncode, r.stdout, r.stderr))


def domain_name(rt, scratch, owner, base):
    """The spec's domainname is the container's; without one, the new UTS
    namespace's as it came, as runc leaves it (it was cleared to "")."""
    probe = ["cat", "/proc/sys/kernel/hostname", "/proc/sys/kernel/domainname"]
    config = json.loads(json.dumps(base))
    config["hostname"] = "h1"
    config["domainname"] = "example.test"
    named = rt("run", "--bundle", make_bundle(scratch, "domain-named", probe, owner, config), "dn1")
    config.pop("domainname")
    inherited = rt("run", "--bundle", make_bundle(scratch, "domain-none", probe, owner, config),
                   "dn2")
    with open("/proc/sys/kernel/domainname") as f:
        host = f.read().split()
    check("domainname: the spec's in the container; none asked, the namespace's as it came",
          named.stdout.split() == ["h1", "example.test"] and
          inherited.stdout.split() == ["h1"] + host,
          (named.returncode, named.stdout, named.stderr, inherited.stdout, inherited.stderr, host))


def tmpfs_modes(rt, scratch, owner, base):
    """A tmpfs asked without mode= over a directory that is there takes that
    directory's mode, as runc (1.1.8) and crun (1.12) give it (podman's
    --tmpfs /run over an image's 0755 /run was 1777 here); mode= asked wins;
    a target made for it keeps tmpfs's own 1777. Beneath an earlier mount
    (a bind) the directory there at mount time is the one looked at."""
    rootfs = os.path.join(scratch, "rootfs")
    made = []
    for name, mode in (("tm-755", 0o755), ("tm-700", 0o700), ("tm-copyup", 0o750),
                       ("tm-bind", 0o755)):
        path = os.path.join(rootfs, name)
        os.mkdir(path)
        os.chmod(path, mode)
        os.chown(path, owner, owner)
        made.append(path)
    host = os.path.join(scratch, "tmpfs-bind-source")
    os.makedirs(os.path.join(host, "inner"))
    os.chmod(os.path.join(host, "inner"), 0o711)
    for path in (host, os.path.join(host, "inner")):
        os.chown(path, owner, owner)
    config = json.loads(json.dumps(base))
    config["mounts"] += [
        {"destination": "/tm-755", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid"]},
        {"destination": "/tm-700", "type": "tmpfs", "source": "tmpfs",
         "options": ["mode=1777"]},
        {"destination": "/tm-copyup", "type": "tmpfs", "source": "tmpfs",
         "options": ["tmpcopyup"]},
        {"destination": "/tm-bind", "type": "bind", "source": host, "options": ["rbind", "rw"]},
        {"destination": "/tm-bind/inner", "type": "tmpfs", "source": "tmpfs", "options": []},
    ]
    # Rootless the image's root directory is not the caller's to make a
    # target in.
    if not owner:
        config["mounts"].append({"destination": "/tm-new", "type": "tmpfs", "source": "tmpfs",
                                 "options": []})
    probe = ["sh", "-c", "stat -c '%n %a' /tm-755 /tm-700 /tm-copyup /tm-bind/inner" +
             ("" if owner else " /tm-new")]
    r = rt("run", "--bundle", make_bundle(scratch, "tmpfs-modes", probe, owner, config), "tm1")
    new_left = os.path.join(rootfs, "tm-new")
    if os.path.isdir(new_left):
        made.append(new_left)
    for path in made:
        shutil.rmtree(path, ignore_errors=True)
    check("a tmpfs without mode= takes the mode of the directory there (755, 750 copied up, "
          "711 beneath a bind), mode= asked wins (1777), one made for it (as root) is 1777",
          r.returncode == 0 and r.stdout.splitlines() == [
              "/tm-755 755", "/tm-700 1777", "/tm-copyup 750", "/tm-bind/inner 711"] +
          ([] if owner else ["/tm-new 1777"]), (r.returncode, r.stdout, r.stderr))


def nested_bind_targets(rt, scratch, owner, base):
    """As root, a mount target beneath an earlier bind of a host directory
    the container cannot write (podman's --secret file in its root-owned
    secrets directory, a volume inside a volume) is made by create in that
    directory, as runc makes it there, resolved inside it: a link there
    leads nowhere out of it (failed EACCES before 2026-12-07: the
    compatibility hunt's)."""
    outer = os.path.join(scratch, "nested-outer")
    inner = os.path.join(scratch, "nested-inner")
    canary = os.path.join(scratch, "nested-canary")
    for d in (outer, inner, canary):
        os.makedirs(d, exist_ok=True)
        os.chmod(d, 0o755)
    with open(os.path.join(inner, "in.txt"), "w") as f:
        f.write("inner\n")
    secret = os.path.join(scratch, "nested-secret")
    with open(secret, "w") as f:
        f.write("s3cret\n")
    # A link in the outer directory to a place outside it, as a container
    # that wrote there in an earlier run could leave: a target through it
    # is made (or refused) inside the outer directory, never in the canary.
    link = os.path.join(outer, "out")
    if not os.path.lexists(link):
        os.symlink(canary, link)
    config = json.loads(json.dumps(base))
    config["mounts"] += [
        {"destination": "/data", "type": "bind", "source": outer, "options": ["rbind", "rw"]},
        {"destination": "/data/sub/deeper", "type": "bind", "source": inner,
         "options": ["rbind", "ro"]},
        {"destination": "/data/secret", "type": "bind", "source": secret,
         "options": ["rbind", "ro"]},
    ]
    probe = ["sh", "-c", "cat /data/sub/deeper/in.txt /data/secret"]
    r = rt("run", "--bundle", make_bundle(scratch, "nested", probe, owner, config), "nb1")
    made_dir = os.path.join(outer, "sub", "deeper")
    made_file = os.path.join(outer, "secret")
    check("as root, targets beneath an earlier bind of a root-owned 0755 host directory: made "
          "there by create (a directory, an empty file), root's, as runc makes them",
          r.returncode == 0 and r.stdout == "inner\ns3cret\n" and os.path.isdir(made_dir) and
          os.path.isfile(made_file) and os.path.getsize(made_file) == 0 and
          os.stat(made_dir).st_uid == 0, (r.returncode, r.stdout, r.stderr))
    config["mounts"].append({"destination": "/data/out/x", "type": "bind", "source": inner,
                             "options": ["rbind", "ro"]})
    r = rt("run", "--bundle", make_bundle(scratch, "nested-link", ["true"], owner, config), "nb2")
    check("...a target through a link in that directory leading out of it: resolved inside it, "
          "nothing made where the link points",
          os.listdir(canary) == [] and os.listdir(rt.root) == [],
          (r.returncode, r.stderr, os.listdir(canary)))


def tmpcopyup_charged_to_the_container(rt, scratch, owner, base):
    """As root, a tmpcopyup copy is made in the container's cgroups: its
    pages count against the container's memory limit, not the caller's
    (runc copies in the container's init), so an image's directory bigger
    than the limit fails create; and a sparse file stays sparse in the
    tmpfs. A container could write both into its own root for its next
    start (the red team's 768 MiB, charged to conmon's cgroup)."""
    rootfs = os.path.join(scratch, "rootfs")
    tree = os.path.join(rootfs, "tc-data")
    os.mkdir(tree)
    data = os.urandom(24 << 20)
    with open(os.path.join(tree, "data"), "wb") as f:
        f.write(data)
    with open(os.path.join(tree, "sparse"), "wb") as f:
        f.truncate(128 << 20)
    cgroup = f"stockade-lifecycle-tc-{os.getpid()}"
    usage = f"/sys/fs/cgroup/memory/{cgroup}/memory.usage_in_bytes"

    def bundle(name, limit, probe, no_oom_kill=False):
        config = json.loads(json.dumps(base))
        config["linux"]["cgroupsPath"] = "/" + cgroup
        config["linux"].setdefault("resources", {})["memory"] = {"limit": limit}
        if no_oom_kill:
            config["linux"]["resources"]["memory"]["disableOOMKiller"] = True
        config["mounts"].append({"destination": "/tc-data", "type": "tmpfs", "source": "tmpfs",
                                 "options": ["tmpcopyup"]})
        return make_bundle(scratch, name, probe, owner, config)

    try:
        small = rt("create", "--bundle", bundle("tmpcopyup-16", 16 << 20, ["true"]), "tc1")
        small_left = os.listdir(rt.root)
        rt("delete", "--force", "tc1")
        # The OOM killer disabled: the copier stops at the limit instead of
        # dying, and create ends it (it waited forever before, the copier
        # orphaned when the client gave up: the review of 2026-12-07).
        stuck = rt("create", "--bundle",
                   bundle("tmpcopyup-16-no-oom-kill", 16 << 20, ["true"], no_oom_kill=True), "tc4")
        stuck_left = os.listdir(rt.root)
        rt("delete", "--force", "tc4")
        big = rt("create", "--bundle", bundle("tmpcopyup-96", 96 << 20, ["sleep", "1000"]),
                 "tc2")
        charged = 0
        if big.returncode == 0 and os.path.exists(usage):
            with open(usage) as f:
                charged = int(f.read())
        rt("delete", "--force", "tc2")
        probe = ["sh", "-c", "stat -c '%s %b' /tc-data/sparse; busybox md5sum /tc-data/data"]
        ran = rt("run", "--bundle", bundle("tmpcopyup-probe", 96 << 20, probe), "tc3")
    finally:
        shutil.rmtree(tree, ignore_errors=True)
        for ctl in V1_CONTROLLERS:
            if os.path.isdir(f"/sys/fs/cgroup/{ctl}/{cgroup}"):
                os.rmdir(f"/sys/fs/cgroup/{ctl}/{cgroup}")
    check("tmpcopyup as root: 24 MiB in the image's directory and a 16 MiB memory limit: create "
          "fails (the copy is made in the container's cgroup), naming tmpcopyup, nothing left",
          small.returncode != 0 and "tmpcopyup" in small.stderr and small_left == [],
          (small.returncode, small.stderr, small_left))
    # The copier either waits at the limit (under_oom), and create kills it,
    # or its write fails ENOMEM: create returns either way, saying which.
    check("...with the OOM killer disabled: create fails at the limit (not waiting for ever), "
          "saying so, nothing left",
          stuck.returncode != 0 and "tmpcopyup" in stuck.stderr and
          ("OOM killer is disabled" in stuck.stderr or "ENOMEM" in stuck.stderr) and
          stuck_left == [], (stuck.returncode, stuck.stderr, stuck_left))
    check("...a 96 MiB limit: the copy's 24 MiB charged to the container's own cgroup",
          big.returncode == 0 and (24 << 20) <= charged < (96 << 20),
          (big.returncode, big.stderr, charged))
    want = f"{128 << 20} 0\n{hashlib.md5(data).hexdigest()}  /tc-data/data\n"
    check("...a sparse file copied sparse (its length, no blocks), the data as the image's",
          ran.returncode == 0 and ran.stdout == want, (ran.returncode, ran.stdout, ran.stderr, want))


def ids_past_the_block(rt, scratch, owner, base):
    """As root a container's ids are 0-65535 of a leased block: a uid past
    it is refused at create in those words (it failed later, as a devpts
    mount's EINVAL), and exec of one the container's map lacks says so (it
    spoke of additionalGids). Root only: rootless maps the caller alone."""
    config = json.loads(json.dumps(base))
    config["process"]["user"] = {"uid": 100000, "gid": 0}
    r = rt("run", "--bundle", make_bundle(scratch, "uid-past", ["id"], owner, config), "up1")
    check("a uid past the leased block: create refused naming it, nothing left",
          r.returncode != 0 and "process.user.uid 100000" in r.stderr and
          "not supported yet" in r.stderr and os.listdir(rt.root) == [],
          (r.returncode, r.stderr, os.listdir(rt.root)))
    sleeper = make_bundle(scratch, "uid-past-sleeper", ["sleep", "1000"], owner, base)
    started = rt("run", "--detach", "--bundle", sleeper, "up2")
    r = rt("exec", "--user", "100000:0", "up2", "true")
    rt("delete", "--force", "up2")
    check("exec of a uid the container's map lacks: refused naming it and the map",
          started.returncode == 0 and r.returncode != 0 and
          "process.user.uid 100000 is not mapped" in r.stderr and "ids 0-65535" in r.stderr,
          (started.returncode, started.stderr, r.returncode, r.stderr))


def unknown_sysctl(rt, scratch, owner, base):
    """A sysctl this kernel lacks fails create in the words podman reads as
    runc's ("no such file or directory": its exit 127, not 126)."""
    config = json.loads(json.dumps(base))
    config.setdefault("linux", {})["sysctl"] = {"net.ipv4.no_such_knob": "1"}
    bundle = make_bundle(scratch, "sysctl-unknown", ["true"], owner, config)
    r = rt("run", "--bundle", bundle, "sy1")
    check("a sysctl the kernel lacks fails create, naming it, \"no such file or directory\"",
          r.returncode != 0 and "net.ipv4.no_such_knob" in r.stderr and
          "no such file or directory" in r.stderr, (r.returncode, r.stderr))


def create_pid_file_beside_a_fifo(rt, scratch, owner, base):
    """create's --pid-file in a directory whose owner planted a FIFO at the
    fixed name create once wrote through (PATH.stockade-tmp, opened
    O_TRUNC without O_EXCL, so create blocked on it): written through a
    name of create's own, the FIFO never opened (the red team of
    2026-12-07; exec's writer had been mended)."""
    foreign = os.path.join(scratch, "create-pid-foreign")
    os.makedirs(foreign, exist_ok=True)
    os.chown(foreign, 65534, 65534)
    os.chmod(foreign, 0o700 if owner == 0 else 0o755)
    planted = os.path.join(foreign, "p.stockade-tmp")
    if not os.path.exists(planted):
        os.mkfifo(planted)
        os.chown(planted, 65534, 65534)
    pid_path = os.path.join(foreign, "p")
    bundle = make_bundle(scratch, "pid-fifo", ["true"], owner, base)
    r = rt("create", "--pid-file", pid_path, "--bundle", bundle, "pf1")
    written = open(pid_path).read() if os.path.exists(pid_path) else ""
    pid = (state_of(rt, "pf1") or {}).get("pid", 0)
    leftovers = [n for n in os.listdir(foreign) if n not in ("p", "p.stockade-tmp")]
    rt("delete", "--force", "pf1")
    check("create --pid-file beside a FIFO planted at the name it once used: written, the "
          "init's pid, the FIFO never opened, nothing else left",
          r.returncode == 0 and written == str(pid) and pid > 0 and not leftovers and
          stat.S_ISFIFO(os.lstat(planted).st_mode),
          (r.returncode, r.stderr, written, pid, leftovers))


def exec_fds(rt, scratch, owner, base):
    """An exec'd process holds nothing of the runtime's: no host directory
    fd (the bundle's, the pid file's) a process.cwd or an image's
    /etc/passwd could reach through /proc/self/fd, so the container's root
    is the only way in."""
    rootfs = os.path.join(scratch, "rootfs")
    for n in range(3, 16):
        link = os.path.join(rootfs, f"fd{n}")
        if not os.path.lexists(link):
            os.symlink(f"/proc/self/fd/{n}", link)
    sleeper = make_bundle(scratch, "fds", ["sleep", "1000"], owner, base)
    r = rt("run", "--detach", "--bundle", sleeper, "fx1")
    pid_dir = os.path.join(scratch, "exec-pid")
    os.makedirs(pid_dir, exist_ok=True)
    os.chown(pid_dir, owner, owner)  # the caller's (rootless: uid 65534's)
    escaped = []
    for n in range(3, 16):
        process = os.path.join(scratch, f"fds-process-{n}.json")
        with open(process, "w") as f:
            json.dump({"args": ["sh", "-c", "pwd; ls"], "cwd": f"/fd{n}", "env": ["PATH=/bin"],
                       "user": {"uid": 0, "gid": 0}}, f)
        e = rt("exec", "--pid-file", os.path.join(pid_dir, "p"), "--process", process, "fx1")
        if e.returncode == 0:
            escaped.append((n, e.stdout))
    process = os.path.join(scratch, "fds-list.json")
    with open(process, "w") as f:
        json.dump({"args": ["sh", "-c", "for f in 3 4 5 6 7 8 9 10 11 12 13 14 15; do "
                            "[ -e /proc/$$/fd/$f ] && echo open-$f; done; echo end"], "cwd": "/",
                   "env": ["PATH=/bin"], "user": {"uid": 0, "gid": 0}}, f)
    listed = rt("exec", "--pid-file", os.path.join(pid_dir, "p"), "--process", process, "fx1")
    check("exec: a process.cwd through /proc/self/fd/N reaches nothing, and the process "
          "holds only its stdio",
          r.returncode == 0 and not escaped and listed.stdout.split() == ["end"],
          (r.stderr, escaped, listed.returncode, listed.stdout, listed.stderr))
    # Its own session, without a terminal too: in the caller's, the
    # caller's terminal would be its controlling one (TIOCSTI types into it).
    with open(process, "w") as f:
        json.dump({"args": ["sh", "-c", "read -r line < /proc/$$/stat; echo \"$line\""],
                   "cwd": "/", "env": ["PATH=/bin"], "user": {"uid": 0, "gid": 0}}, f)
    stat_line = rt("exec", "--process", process, "fx1")
    fields = stat_line.stdout.rsplit(")", 1)[-1].split()
    check("exec: the process leads a session of its own (no terminal of the caller's)",
          stat_line.returncode == 0 and len(fields) > 3 and
          fields[3] == stat_line.stdout.split()[0] and fields[3] != str(os.getsid(0)),
          (stat_line.returncode, stat_line.stdout, stat_line.stderr))
    # --pid-file in a directory root does not own (0700, uid 65534's): the
    # exec joins the container's user namespace, where root's override of
    # the directory's mode is gone; the file is written from the host.
    foreign = os.path.join(scratch, "exec-pid-foreign")
    os.makedirs(foreign, exist_ok=True)
    os.chown(foreign, 65534, 65534)
    os.chmod(foreign, 0o700)
    pid_path = os.path.join(foreign, "p")
    # The directory's owner plants a FIFO at the name the writer once used:
    # it is never opened (the writer makes a name of its own, O_EXCL).
    planted = os.path.join(foreign, "p.stockade-tmp")
    if not os.path.exists(planted):
        os.mkfifo(planted)
        os.chown(planted, 65534, 65534)
    d = rt("exec", "--detach", "--pid-file", pid_path, "fx1", "sleep", "1000")
    written = open(pid_path).read() if os.path.exists(pid_path) else ""
    alive_exec = written.isdigit() and alive(int(written))
    leftovers = [n for n in os.listdir(foreign) if n not in ("p", "p.stockade-tmp")]
    if alive_exec:
        # Detached, it is this script's child (the subreaper's): ended and
        # reaped here, or the container's init could not finish dying.
        os.kill(int(written), 9)
        os.waitpid(int(written), 0)
    check("exec --pid-file into a directory root does not own: written, decimal, the "
          "process's, nothing beside it",
          d.returncode == 0 and alive_exec and not leftovers,
          (d.returncode, d.stderr, written, leftovers))
    rt("delete", "--force", "fx1")


def home_default(rt, scratch, owner, base):
    """HOME when the spec's env names none: the home of the process's uid in
    the image's /etc/passwd, "/" without an entry (runc's and crun's rule;
    ctr and the CRI plugin leave it to the runtime), a HOME the spec names
    kept, and the same for an exec'd process."""
    etc = os.path.join(scratch, "rootfs", "etc")
    os.makedirs(etc, exist_ok=True)
    with open(os.path.join(etc, "passwd"), "w") as f:
        f.write("root:x:0:0:root:/root-home:/bin/sh\nu:x:1000:1000::/home/u:/bin/sh\n")
    config = json.loads(json.dumps(base))
    config["process"]["env"] = [e for e in config["process"]["env"] if not e.startswith("HOME=")]
    cases = [("h1", config, "/root-home")]
    given = json.loads(json.dumps(config))
    given["process"]["env"].append("HOME=/given")
    cases.append(("h2", given, "/given"))
    if rt.mode == "root":  # rootless maps one id: the container's uid is 0
        other = json.loads(json.dumps(config))
        other["process"]["user"] = {"uid": 1000, "gid": 1000}
        cases.append(("h3", other, "/home/u"))
        stranger = json.loads(json.dumps(config))
        stranger["process"]["user"] = {"uid": 4242, "gid": 4242}
        cases.append(("h4", stranger, "/"))
    for cid, conf, want in cases:
        bundle = make_bundle(scratch, "home-" + cid, ["sh", "-c", "echo \"[$HOME]\""], owner, conf)
        r = rt("run", "--bundle", bundle, cid)
        check(f"HOME without one in the spec: {want} ({cid})",
              r.returncode == 0 and r.stdout == f"[{want}]\n", (r.returncode, r.stdout, r.stderr))
    if True:
        sleeper = make_bundle(scratch, "home-exec", ["sleep", "1000"], owner, config)
        r = rt("run", "--detach", "--bundle", sleeper, "h5")
        e = rt("exec", "h5", "sh", "-c", "echo \"[$HOME]\"")
        process = os.path.join(scratch, "home-process.json")
        with open(process, "w") as f:
            json.dump({"args": ["sh", "-c", "echo \"[$HOME]\""], "cwd": "/",
                       "env": ["PATH=/bin", "HOME=/x"], "user": {"uid": 0, "gid": 0}}, f)
        e2 = rt("exec", "--process", process, "h5")
        check("HOME for an exec'd process without one: from the container's passwd",
              r.returncode == 0 and e.stdout == "[/root-home]\n" and e2.stdout == "[/x]\n",
              (r.returncode, r.stderr, e.stdout, e.stderr, e2.stdout, e2.stderr))
        rt("delete", "--force", "h5")


def record_cases(rt, scratch, owner, base, mode):
    """stockade's own record, read through state's "stockade" object until
    delete: what create enforced, the signals kill sent, and (as root, with
    a cgroup) the kernel's count of forks refused at pids.max."""
    b = make_bundle(scratch, "rec-plain", ["sleep", "1000"], owner, base)
    r = rt("create", "--bundle", b, "rec1")
    rt("start", "rec1")
    rt("kill", "rec1", "9")
    wait_for(lambda: (state_of(rt, "rec1") or {}).get("status") == "stopped")
    st = state_of(rt, "rec1") or {}
    own = st.get("stockade", {})
    enforced = own.get("enforced", {})
    kills = own.get("ending", {}).get("kills", [])
    check("record: state keeps runc's fields and adds what was enforced",
          r.returncode == 0 and st.get("status") == "stopped" and st.get("pid") == 0 and
          enforced.get("pid") == "new" and enforced.get("user") == "new" and
          enforced.get("network") == "new" and enforced.get("seccomp") == "none" and
          enforced.get("capabilities") == "0000000020000420" and
          enforced.get("noNewPrivileges") == "true" and
          # As root every container has a cgroup (none asked: the default
          # one); rootless none.
          (enforced.get("limits", "").startswith("cgroup v") if mode == "root" else
           enforced.get("limits") == "none (no cgroup)"), st)
    check("record: the signal kill sent is kept after the container stopped; the cgroup's "
          "counts where it has one",
          [k.get("signal") for k in kills] == [9] and
          (own.get("ending", {}).get("pidsLimitHits") == 0 if mode == "root" else
           "pidsLimitHits" not in own.get("ending", {})), own)
    rt("delete", "rec1")
    if mode != "root":
        return
    parent = f"stockade-oci-rec-{os.getpid()}"
    forks = make_bundle(scratch, "rec-pids", ["sh", "-c",
                        "trap '' TERM; (for i in 1 2 3 4 5 6 7 8; do sleep 1000 & done); exec sleep 1000"],
                        owner, base)
    with open(os.path.join(forks, "config.json")) as f:
        config = json.load(f)
    config["linux"]["cgroupsPath"] = f"/{parent}/rec2"
    config["linux"]["resources"] = {"pids": {"limit": 4}}
    with open(os.path.join(forks, "config.json"), "w") as f:
        json.dump(config, f)
    r = rt("create", "--bundle", forks, "rec2")
    rt("start", "rec2")
    hits = lambda: ((state_of(rt, "rec2") or {}).get("stockade", {}).get("ending", {})
                    .get("pidsLimitHits", 0))
    # A subshell forks until pids.max refuses it; the command runs on,
    # ignoring SIGTERM (kept across its exec) until kill --all 9.
    check("record: forks refused at pids.max are counted, as the cgroup saw them",
          r.returncode == 0 and wait_for(lambda: hits() > 0) and
          (state_of(rt, "rec2") or {}).get("status") == "running",
          (r.stderr, state_of(rt, "rec2")))
    rt("kill", "rec2", "15")
    rt("kill", "--all", "rec2", "9")
    wait_for(lambda: (state_of(rt, "rec2") or {}).get("status") == "stopped")
    st = state_of(rt, "rec2") or {}
    own = st.get("stockade", {})
    v1 = not os.path.exists("/sys/fs/cgroup/cgroup.controllers")
    check("record: after the stop, the kills in order and the cgroup's counts until delete",
          [(k.get("signal"), k.get("all")) for k in own.get("ending", {}).get("kills", [])] ==
          [(15, False), (9, True)] and own.get("ending", {}).get("pidsLimitHits", 0) > 0 and
          own.get("enforced", {}).get("limits") == ("cgroup v1" if v1 else "cgroup v2"), own)
    rt("delete", "rec2")
    for top in ([f"/sys/fs/cgroup/{c}/{parent}" for c in V1_CONTROLLERS]
                if v1 else [f"/sys/fs/cgroup/{parent}"]):
        try:
            os.rmdir(top)
        except OSError:
            pass
    check("record: nothing left under --root", os.listdir(rt.root) == [], os.listdir(rt.root))


def monitors_of_ours():
    """Live processes named stockade-mon whose parent is this script: the
    subreaper each detached monitor is reparented to, as init is."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        if name == "stockade-mon" and fields[0] not in "ZX" and int(fields[1]) == os.getpid():
            found.append(int(entry))
    return found


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[1][0] not in "ZX"
    except OSError:
        return False


def stat_fields(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(") ", 1)[1].split()


def monitor_cases(rt, scratch, owner, base, mode):
    """The detached monitor (oci/monitor.h): the command's end and the
    stragglers init killed reach the record through it; it is never
    init's parent, holds none of create's fds, ends with init, is gone
    after delete, and a create that dies or fails leaves no process."""
    state_root, out = rt.root, os.path.join(scratch, "out")
    log = os.path.join(out, "mon-log.json")

    def ending(cid):
        return (state_of(rt, cid) or {}).get("stockade", {}).get("ending", {})

    def ended(cid):
        return wait_for(lambda: (state_of(rt, cid) or {}).get("status") == "stopped" and
                        "reported" in ending(cid))

    # Exit 3. Before start: the monitor beside init, both children of the
    # subreaper, the monitor in a session of its own, its fds /dev/null,
    # one socket and the container's directory, nothing of create's.
    three = make_bundle(scratch, "mon-three", ["sh", "-c", "exit 3"], owner, base)
    # create's stdio are files here (conmon's are pipes): the monitor must
    # hold neither, nor the --log file.
    with open(os.path.join(out, "mon-create-out"), "w") as stdio:
        r = subprocess.run([rt.binary, "--root", state_root, "--log-format", "json", "--log", log,
                            "create", "--bundle", three, "--pid-file",
                            os.path.join(out, "mon.pid"), "mon1"],
                           stdin=subprocess.DEVNULL, stdout=stdio, stderr=stdio, timeout=120,
                           preexec_fn=demote if rt.mode == "rootless" else None)
    st = state_of(rt, "mon1") or {}
    init, mon = st.get("pid", 0), st.get("stockade", {}).get("monitorPid", 0)
    check("monitor: create returns, naming its monitor", r.returncode == 0 and mon > 1 and
          alive(mon) and monitors_of_ours() == [mon], (r.returncode, st, monitors_of_ours()))
    if not (r.returncode == 0 and mon > 1 and alive(mon)):
        rt("delete", "--force", "mon1")
        return
    mf, jf = stat_fields(mon), stat_fields(init)
    # stat after the name: state, ppid, pgrp, session. The session is the
    # middle process's (it called setsid and left): not the caller's, and
    # the monitor, no leader, can never take a controlling terminal.
    check("monitor: init's parent is the subreaper, not the monitor; the monitor is the "
          "subreaper's child too, in a session of its own that it does not lead",
          int(jf[1]) == os.getpid() and int(mf[1]) == os.getpid() and
          int(mf[3]) not in (os.getsid(0), int(jf[3]), mon), (jf[:4], mf[:4], os.getsid(0)))
    fds = {int(fd): os.readlink(f"/proc/{mon}/fd/{fd}") for fd in os.listdir(f"/proc/{mon}/fd")}
    kinds = sorted("null" if t == "/dev/null" else "socket" if t.startswith("socket:") else
                   "dir" if t == os.path.join(state_root, "mon1") else t for t in fds.values())
    check("monitor: its fds are /dev/null for stdio, one socket and the container's "
          "directory: not create's stdio, --log, pid file or exec.fifo",
          kinds == ["dir", "null", "null", "null", "socket"] and
          all(fds.get(i) == "/dev/null" for i in (0, 1, 2)), fds)
    with open(f"/proc/{mon}/status") as f:
        uids = [line.split()[1:] for line in f if line.startswith("Uid:")][0]
    check("monitor: it runs as the caller, not as the container",
          all(u == ("0" if mode == "root" else "65534") for u in uids), uids)
    rt("start", "mon1")
    check("monitor: exit 3 is in state once it stopped, no stragglers",
          ended("mon1") and ending("mon1").get("command") == {"exitStatus": 3} and
          ending("mon1").get("stragglersKilled") == 0 and ending("mon1").get("reported") is True,
          ending("mon1"))
    check("...as the subreaper saw init end (3)", wait_for(lambda: init in reaped) and
          os.WIFEXITED(reaped[init]) and os.WEXITSTATUS(reaped[init]) == 3, reaped.get(init))
    check("monitor: it ends when init's socket closes",
          wait_for(lambda: not alive(mon)), stat_fields(mon) if alive(mon) else "")
    r = rt("delete", "mon1")
    check("monitor: delete after the end leaves nothing", r.returncode == 0 and
          os.listdir(state_root) == [] and monitors_of_ours() == [], (r.stderr, os.listdir(state_root)))

    # A command killed by a signal. It is PID 1 of its own pid namespace,
    # as under runc, so a signal it sends itself is ignored: SIGKILL from
    # the host at the command itself, as the OOM killer sends it; `kill`
    # of the container reaches init, and a SIGTERM the command traps is
    # passed on to it.
    script = "trap 'echo TERM > /out/mon-term' TERM; touch /out/mon-sleep; " \
             "while :; do sleep 0.05; done"
    sleeper = make_bundle(scratch, "mon-sleep", ["sh", "-c", script], owner, base)
    rt("create", "--bundle", sleeper, "mon2")
    rt("start", "mon2")
    init = (state_of(rt, "mon2") or {}).get("pid", 0)
    wait_for(lambda: os.path.exists(os.path.join(out, "mon-sleep")))
    rt("kill", "mon2", "TERM")
    took = wait_for(lambda: os.path.exists(os.path.join(out, "mon-term")))
    command = host_pids_running(["sh", "-c", script])
    for pid in command:
        os.kill(pid, signal.SIGKILL)
    check("monitor: a command killed by a signal shows it (SIGKILL from the host at the "
          "command; the SIGTERM it traps reached it first through init)",
          took and len(command) == 1 and ended("mon2") and
          ending("mon2").get("command") == {"signal": 9, "coreDumped": False} and
          [k["signal"] for k in ending("mon2").get("kills", [])] == [15],
          (took, command, ending("mon2")))
    check("...and init ended with 128+9", wait_for(lambda: init in reaped) and
          os.WIFEXITED(reaped[init]) and os.WEXITSTATUS(reaped[init]) == 137, reaped.get(init))
    rt("delete", "mon2")

    # Stragglers: two sleeps left behind by a command that exits 0 end with
    # its pid namespace (the kernel's, as under runc: init finds none left
    # to kill). The command's fds hold no socket (the sync socket is
    # close-on-exec in it), and init is not in its /proc (/proc/1 is the
    # command itself).
    strays = make_bundle(scratch, "mon-strays", ["sh", "-c",
                         "ls -l /proc/$$/fd > /out/mon-fds 2>&1; "
                         "for p in /proc/[0-9]*; do cat $p/comm; done > /out/mon-comms; "
                         "sleep 1919 & sleep 1919 & exit 0"], owner, base)
    rt("create", "--bundle", strays, "mon3")
    rt("start", "mon3")
    check("monitor: two stragglers left by the command's exit 0 end with its pid namespace, "
          "the end recorded (none left for init: stragglersKilled 0)",
          ended("mon3") and ending("mon3").get("command") == {"exitStatus": 0} and
          ending("mon3").get("stragglersKilled") == 0 and
          host_pids_running(["sleep", "1919"]) == [], ending("mon3"))
    with open(os.path.join(out, "mon-fds")) as f:
        listing = f.read()
    with open(os.path.join(out, "mon-comms")) as f:
        comms = f.read().split()
    check("monitor: the command holds no socket (the sync socket stays stockade's), and "
          "init is not in its /proc",
          " 0 -> " in listing and "socket:" not in listing and "sh" in comms and
          "stockade" not in comms, (listing, comms))
    rt("delete", "mon3")

    # init itself killed: no report; the kept kill is the cause.
    rt("create", "--bundle", sleeper, "mon4")
    rt("start", "mon4")
    mon = (state_of(rt, "mon4") or {}).get("stockade", {}).get("monitorPid", 0)
    rt("kill", "mon4", "9")
    check("monitor: init killed by kill 9: no report, the kill named as the cause",
          ended("mon4") and ending("mon4").get("reported") is False and
          "command" not in ending("mon4") and
          "init killed by signal 9" in ending("mon4").get("cause", ""), ending("mon4"))
    rt("delete", "mon4")
    check("...and its monitor is gone", not alive(mon) and monitors_of_ours() == [])

    # delete --force of a running container, and delete of one never
    # started: no monitor left once delete returns.
    for cid, start in (("mon5", True), ("mon6", False)):
        rt("create", "--bundle", sleeper, cid)
        if start:
            rt("start", cid)
        st = state_of(rt, cid) or {}
        init, mon = st.get("pid", 0), st.get("stockade", {}).get("monitorPid", 0)
        r = rt("delete", "--force", cid)
        check(f"monitor: delete --force of a {'running' if start else 'created'} container "
              "leaves no monitor, no init, no file",
              r.returncode == 0 and mon > 1 and not alive(mon) and not alive(init) and
              monitors_of_ours() == [] and os.listdir(state_root) == [], (r.stderr, mon, init))

    # A create that fails after its monitor started (the pid file cannot
    # be written): create's error, no monitor, no init, nothing under --root.
    r = rt("create", "--bundle", sleeper, "--pid-file", os.path.join(out, "no-dir", "p"), "mon7")
    check("monitor: a create failing after the monitor started leaves no process",
          r.returncode != 0 and "no-dir" in r.stderr and monitors_of_ours() == [] and
          os.listdir(state_root) == [], (r.stderr, monitors_of_ours(), os.listdir(state_root)))

    # A create killed while its monitor waits for the commit: held at the
    # pid file's write (its exclusive open, after the record) by a seccomp
    # listener that never answers (tests/probe/hold_syscall.cpp; a FIFO at
    # the name create once wrote through held it before 2026-12-07, when
    # that name became one of its own). SIGKILL: the monitor ends, the
    # parked command sees the socket close and init ends; only the record
    # is left, for delete.
    holder = os.path.join(probes_dir(rt.binary), "stockade-hold-syscall")
    held_flags = os.O_CREAT | os.O_EXCL | os.O_NONBLOCK
    argv = [holder, hex(held_flags), "--", rt.binary, "--root", state_root, "create",
            "--bundle", sleeper, "--pid-file", os.path.join(out, "mon8.pid"), "mon8"]
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True,
                         preexec_fn=demote if rt.mode == "rootless" else None)
    started = p.stdout.readline().split()
    held = p.stdout.readline().split()
    create_pid = int(started[1]) if started[:1] == ["started"] else 0
    record_path = os.path.join(state_root, "mon8", "state.json")
    waited = held[:1] == ["held"] and \
        wait_for(lambda: len(monitors_of_ours()) == 1 and os.path.exists(record_path))
    mon = (monitors_of_ours() or [0])[0]
    record = {}
    try:
        with open(record_path) as f:
            record = json.load(f)
    except OSError:
        pass
    init = record.get("pid", 0)
    if create_pid > 0:
        os.kill(create_pid, signal.SIGKILL)
    p.wait()
    check("monitor: a create killed before the commit leaves no process "
          "(its monitor and the parked init end)",
          waited and mon > 1 and init > 1 and wait_for(lambda: not alive(mon)) and
          wait_for(lambda: not alive(init)) and monitors_of_ours() == [],
          (started, held, waited, mon, init, record))
    r = rt("delete", "mon8")
    check("...and delete removes the record it left", r.returncode == 0 and
          os.listdir(state_root) == [], (r.stderr, os.listdir(state_root)))


def main():
    binary, mode = sys.argv[1], sys.argv[2]
    if os.geteuid() != 0:
        skip("the suite runs as root (rootless cases demote to uid 65534)")
    if not os.path.exists(BUSYBOX):
        skip("busybox-static is not installed (scripts/install-deps.sh test)")
    become_subreaper()
    scratch = tempfile.mkdtemp(prefix="stockade-oci-", dir="/var/tmp")
    os.chmod(scratch, 0o755)
    owner = 0 if mode == "root" else 65534
    try:
        rootfs = os.path.join(scratch, "rootfs")
        make_busybox_rootfs(rootfs, APPLETS)
        out = os.path.join(scratch, "out")
        os.makedirs(out)
        os.chmod(out, 0o1777)
        state_root = os.path.join(scratch, "state")
        os.makedirs(state_root)
        os.chown(state_root, owner, owner)
        os.chmod(state_root, 0o700)
        rt = Runtime(binary, state_root, mode)

        # spec: a default config.json, refused over an existing one.
        spec_dir = os.path.join(scratch, "spec")
        os.makedirs(spec_dir)
        os.chown(spec_dir, owner, owner)
        r = rt("spec", "--bundle", spec_dir)
        check("spec writes a config.json", r.returncode == 0 and
              os.path.exists(os.path.join(spec_dir, "config.json")), r.stderr)
        r = rt("spec", "--bundle", spec_dir)
        check("spec refuses to overwrite one", r.returncode != 0 and "exists" in r.stderr, r.stderr)
        with open(os.path.join(spec_dir, "config.json")) as f:
            base = json.load(f)

        # create: parked before exec, pid file with no newline.
        parked = make_bundle(scratch, "parked", ["sh", "-c", "touch /out/started; exec sleep 1000"],
                             owner, base)
        pid_file = os.path.join(scratch, "out", "c1.pid")
        r = rt("create", "--bundle", parked, "--pid-file", pid_file, "c1")
        check("create returns 0", r.returncode == 0, r.stderr)
        st = state_of(rt, "c1")
        check("state after create says created", st is not None and st["status"] == "created", st)
        check("state is the runtime-spec's", st is not None and
              {"ociVersion", "id", "status", "pid", "bundle", "annotations"} <= set(st), st)
        with open(pid_file) as f:
            pid_text = f.read()
        check("the pid file is decimal with no trailing newline",
              pid_text.isdigit() and st is not None and int(pid_text) == st["pid"], repr(pid_text))
        check("the process has not run before start",
              not os.path.exists(os.path.join(out, "started")))
        check("the container's init is alive", os.path.exists(f"/proc/{pid_text}"))
        # stat's fields after the name: state ppid pgrp session...
        fields = stat_fields(int(pid_text))
        check("the container's init leads a session and a group of its own, as runc's does "
              "(conmon past --timeout kills -getpgid(pid), which must not be its own group)",
              fields[2] == pid_text and fields[3] == pid_text and
              int(fields[2]) not in (os.getpgrp(), os.getpid()), fields[:4])
        with open(f"/proc/{pid_text}/status") as f:
            host_uids = [line.split()[1:] for line in f if line.startswith("Uid:")][0]
        check("the container is never host root (as root: a leased id; rootless: the caller)",
              all(u != "0" for u in host_uids) and
              (mode == "root" or all(u == "65534" for u in host_uids)), host_uids)
        r = rt("create", "--bundle", parked, "c1")
        check("a second create of the same id is refused",
              r.returncode != 0 and "container with id exists: c1" in r.stderr, r.stderr)
        check("...and leaves the first as it was", (state_of(rt, "c1") or {}).get("status") == "created")

        # start: releases it and returns.
        r = rt("start", "c1")
        check("start returns 0", r.returncode == 0, r.stderr)
        check("the process runs after start",
              wait_for(lambda: os.path.exists(os.path.join(out, "started"))))
        check("state says running", (state_of(rt, "c1") or {}).get("status") == "running")
        r = rt("start", "c1")
        check("start of a running container is refused", r.returncode != 0, r.stderr)
        r = rt("ps", "--format", "json", "c1")
        pids = json.loads(r.stdout) if r.returncode == 0 else []
        check("ps --format json: init and the command, by host pid",
              len(pids) == 2 and pids[0] == int(pid_text), (r.stdout, r.stderr))
        # The table, as runc's: the host ps's header (default -ef) and its
        # lines whose PID column is one of the container's; options after
        # the id are ps's.
        r = rt("ps", "c1")
        lines = r.stdout.splitlines()
        column = lines[0].split().index("PID") if lines and "PID" in lines[0].split() else -1
        check("ps: the host's ps -ef header and a line for each of init and the command",
              r.returncode == 0 and column == 1 and
              sorted(int(line.split()[column]) for line in lines[1:]) == sorted(pids),
              (r.stdout, r.stderr))
        r = rt("ps", "c1", "-eo", "user,pid,args")
        lines = r.stdout.splitlines()
        check("ps ID -eo user,pid,args: ps's options, the PID column found where they put it",
              r.returncode == 0 and len(lines) == 3 and
              lines[0].split() == ["USER", "PID", "COMMAND"] and
              sorted(int(line.split()[1]) for line in lines[1:]) == sorted(pids),
              (r.stdout, r.stderr))
        r = rt("ps", "c1", "-o", "comm")
        check("ps with options that print no PID column: runc's words",
              r.returncode == 1 and "couldn't find PID field in ps output" in r.stderr,
              (r.returncode, r.stdout, r.stderr))
        r = rt("list", "--format", "json")
        listed = [c for c in json.loads(r.stdout) if c["id"] == "c1"] if r.returncode == 0 else []
        caller = "root" if mode == "root" else "nobody"
        check("list names it, and its owner as runc's list does (whose its directory is)",
              len(listed) == 1 and listed[0].get("owner") == caller, r.stdout + r.stderr)
        check("state's owner is empty, as runc's",
              (state_of(rt, "c1") or {}).get("owner") == "")
        # An exec'ed process is no descendant of init: as root it is found
        # in the container's cgroup (rootless there is none: not listed).
        if mode == "root":
            execed = os.path.join(scratch, "execed.pid")
            r = rt("exec", "--detach", "--pid-file", execed, "c1", "sleep", "1000")
            with open(execed) as f:
                execed_pid = int(f.read())
            r = rt("ps", "--format", "json", "c1")
            listed = json.loads(r.stdout) if r.returncode == 0 else []
            check("ps --format json: an exec'ed process too, and not the exec itself",
                  sorted(listed) == sorted(pids + [execed_pid]), (listed, pids, execed_pid))
            os.kill(execed_pid, signal.SIGKILL)
            check("...gone once killed",
                  wait_for(lambda: len(json.loads(rt("ps", "--format", "json", "c1").stdout)) == 2))
        # exec: flags, the id, then the command with flags of its own.
        # Rootless (a plain user's container), through the command's
        # namespaces: init's are out of its owner's reach.
        r = rt("exec", "c1", "sh", "-c", "echo in; exit 7")
        check("exec: its output and exit code", r.returncode == 7 and r.stdout == "in\n",
              (r.returncode, r.stdout, r.stderr))
        # events --stats: runc's stats object, read from the container's
        # cgroups (as root its default one); rootless it has none.
        r = rt("events", "--stats", "c1")
        if mode == "root":
            ev = json.loads(r.stdout) if r.returncode == 0 else {}
            pids = ev.get("data", {}).get("pids", {})
            # The cpu time is the container's own (v1: its cpuacct
            # directory), far below the host's whole.
            cpu = ev.get("data", {}).get("cpu", {}).get("usage", {}).get("total", 0)
            if os.path.exists("/sys/fs/cgroup/cpuacct/cpuacct.usage"):
                with open("/sys/fs/cgroup/cpuacct/cpuacct.usage") as f:
                    host_cpu = int(f.read())
            else:
                with open("/sys/fs/cgroup/cpu.stat") as f:
                    host_cpu = int(dict(line.split() for line in f)["usage_usec"]) * 1000
            check("events --stats: one stats object of the container's own cgroup (its init "
                  "and command counted, its cpu time its own)",
                  ev.get("type") == "stats" and ev.get("id") == "c1" and
                  pids.get("current", 0) >= 2 and
                  ev["data"].get("memory", {}).get("usage", {}).get("usage", 0) > 0 and
                  0 < cpu < host_cpu / 10,
                  (r.returncode, r.stdout, r.stderr, host_cpu))
        else:
            check("events rootless: refused, saying the container has no cgroup of its own",
                  r.returncode == 1 and "no cgroup" in r.stderr, (r.returncode, r.stderr))
        r = rt("events", "--interval", "5x", "c1")
        check("events --interval that is no duration: refused naming it",
              r.returncode == 1 and "--interval" in r.stderr, (r.returncode, r.stderr))
        r = rt("ps", "--format", "json", "c1")
        check("...and the exec'ed process is gone, the container as it was",
              r.returncode == 0 and len(json.loads(r.stdout)) == 2 and
              (state_of(rt, "c1") or {}).get("status") == "running", (r.stdout, r.stderr))
        r = rt("delete", "c1")
        check("delete of a running container without --force is refused",
              r.returncode != 0 and "not stopped" in r.stderr, r.stderr)

        # kill of a running container, then its state and the errors after.
        r = rt("kill", "c1", "9")
        check("kill 9 returns 0", r.returncode == 0, r.stderr)
        check("state says stopped once it is gone",
              wait_for(lambda: (state_of(rt, "c1") or {}).get("status") == "stopped"))
        r = rt("kill", "c1", "KILL")
        check("kill of a stopped container: container not running",
              r.returncode != 0 and "container not running" in r.stderr, r.stderr)
        r = rt("kill", "--all", "c1", "KILL")
        check("kill --all of a stopped container: 0, as runc's (ctr task kill -a after the end)",
              r.returncode == 0, (r.returncode, r.stderr))
        r = rt("exec", "c1", "true")
        check("exec into a stopped container: runc's words and its 255",
              r.returncode == 255 and "exec failed: cannot exec in a stopped container" in r.stderr,
              (r.returncode, r.stderr))
        c1_pid = int(pid_text)
        check("the subreaper reaps the container's init, killed by SIGKILL",
              wait_for(lambda: c1_pid in reaped) and os.WIFSIGNALED(reaped[c1_pid]) and
              os.WTERMSIG(reaped[c1_pid]) == 9, reaped.get(c1_pid))
        r = rt("delete", "c1")
        check("delete of a stopped container", r.returncode == 0, r.stderr)
        check("delete leaves nothing under --root", os.listdir(state_root) == [], os.listdir(state_root))

        # A created container can be deleted (killed) without --force.
        r = rt("create", "--bundle", parked, "c2")
        check("create c2", r.returncode == 0, r.stderr)
        pid2 = (state_of(rt, "c2") or {}).get("pid", 0)
        r = rt("delete", "c2")
        check("delete of a created container kills it", r.returncode == 0 and
              wait_for(lambda: not os.path.exists(f"/proc/{pid2}/stat") or
                       open(f"/proc/{pid2}/stat").read().split(") ")[1][0] in "ZX"), r.stderr)

        # kill with SIGTERM: the container's command exits through init.
        term = make_bundle(scratch, "term", ["sh", "-c", "trap 'exit 0' TERM; touch /out/t; "
                                             "while true; do sleep 0.05; done"], owner, base)
        r = rt("create", "--bundle", term, "c3")
        check("create c3", r.returncode == 0, r.stderr)
        rt("start", "c3")
        wait_for(lambda: os.path.exists(os.path.join(out, "t")))
        # Read while it runs: once stopped, state no longer names a pid.
        pid3 = (state_of(rt, "c3") or {}).get("pid", 0)
        r = rt("kill", "c3", "TERM")
        check("kill TERM (by name) returns 0", r.returncode == 0, r.stderr)
        check("a SIGTERM the command traps ends it",
              wait_for(lambda: (state_of(rt, "c3") or {}).get("status") == "stopped"))
        check("the container's exit status reaches the subreaper: 0",
              wait_for(lambda: pid3 in reaped) and os.WIFEXITED(reaped[pid3]) and
              os.WEXITSTATUS(reaped[pid3]) == 0, reaped.get(pid3))
        rt("delete", "c3")

        # kill --all reaches every process, not only the command: the shell
        # ignores SIGTERM and ends only once both its children have died of it.
        group = make_bundle(scratch, "group", ["sh", "-c", "trap '' TERM; "
                                               "(trap - TERM; exec sleep 1000) & "
                                               "(trap - TERM; exec sleep 1000) & "
                                               "touch /out/g; wait; wait"], owner, base)
        r = rt("create", "--bundle", group, "c4")
        check("create c4", r.returncode == 0, r.stderr)
        rt("start", "c4")
        wait_for(lambda: os.path.exists(os.path.join(out, "g")))
        check("ps lists the shell and its two children",
              wait_for(lambda: len(json.loads(rt("ps", "--format", "json", "c4").stdout or "[]")) == 4))
        r = rt("kill", "--all", "c4", "TERM")
        check("kill --all TERM returns 0", r.returncode == 0, r.stderr)
        check("kill --all reached the children: the container stops",
              wait_for(lambda: (state_of(rt, "c4") or {}).get("status") == "stopped"))
        rt("delete", "--force", "c4")

        # A terminal: the pty master arrives on the console socket, one
        # message with one fd, before create returns; the container's stdio
        # is the slave, its controlling terminal, of the size asked.
        tty = make_bundle(scratch, "tty", ["sh", "-c", "test -t 0 && test -t 1 && echo tty-ok; "
                                           "stty size"], owner, base)
        with open(os.path.join(tty, "config.json")) as f:
            config = json.load(f)
        config["process"]["terminal"] = True
        config["process"]["consoleSize"] = {"height": 24, "width": 100}
        with open(os.path.join(tty, "config.json"), "w") as f:
            json.dump(config, f)
        r = rt("create", "--bundle", tty, "t0")
        check("a terminal without --console-socket is refused",
              r.returncode != 0 and "console socket" in r.stderr, r.stderr)
        sock_path = os.path.join(scratch, "console.sock")
        r = rt("create", "--bundle", tty, "--console-socket", sock_path, "t0")
        check("a console socket that refuses fails create, leaving nothing",
              r.returncode != 0 and "console-socket" in r.stderr and os.listdir(state_root) == [],
              r.stderr)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(sock_path)
        os.chmod(sock_path, 0o777)
        server.listen(1)
        r = rt("create", "--bundle", tty, "--console-socket", sock_path, "t1")
        check("create with --console-socket", r.returncode == 0, r.stderr)
        conn, _ = server.accept()
        msg, fds, _, _ = socket.recv_fds(conn, 1024, 4)
        check("the console socket gets one message with exactly one fd", len(fds) == 1, fds)
        rt("start", "t1")
        output = read_console(fds)
        conn.close()
        server.close()
        check("the container's stdio is the pty, of the spec's size",
              output.replace(b"\r", b"").split() == [b"tty-ok", b"24", b"100"], output)
        wait_for(lambda: (state_of(rt, "t1") or {}).get("status") == "stopped")
        rt("delete", "t1")

        # create's own stdout and stderr a pipe, as containerd's shim gives
        # them with a terminal (it reads that pipe to its end before it
        # answers create, then sends start): once create has exited, nothing
        # of the container holds it; its init used to, until start, and the
        # shim waited forever (tests/oci/cri.py's tty container).
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(sock_path + "2")
        os.chmod(sock_path + "2", 0o777)
        server.listen(1)
        read_end, write_end = os.pipe()
        p = subprocess.run([rt.binary, "--root", rt.root, "create", "--bundle", tty,
                            "--console-socket", sock_path + "2", "t2"],
                           stdin=subprocess.DEVNULL, stdout=write_end, stderr=write_end,
                           timeout=120, preexec_fn=demote if mode == "rootless" else None)
        os.close(write_end)
        ready, _, _ = select.select([read_end], [], [], 10)
        said = os.read(read_end, 4096) if ready else None
        os.close(read_end)
        check("a terminal: create's output pipe reaches its end once create exits (nothing of "
              "the parked container holds it)", p.returncode == 0 and said == b"", (p, said))
        conn, _ = server.accept()
        msg, fds, _, _ = socket.recv_fds(conn, 1024, 4)
        rt("start", "t2")
        output = read_console(fds)
        conn.close()
        server.close()
        check("...and the container's stdio is still the pty",
              output.replace(b"\r", b"").split()[:1] == [b"tty-ok"], output)
        wait_for(lambda: (state_of(rt, "t2") or {}).get("status") == "stopped")
        rt("delete", "t2")

        # linux.cgroupsPath with memory and pids limits: as root the init and
        # its command sit in the cgroup named, with the limits written, and
        # delete removes it; rootless it is refused by name, leaving nothing.
        parent = f"stockade-oci-test-{os.getpid()}"
        limited = make_bundle(scratch, "limited", ["sleep", "1000"], owner, base)
        with open(os.path.join(limited, "config.json")) as f:
            config = json.load(f)
        config["linux"]["cgroupsPath"] = f"/{parent}/c5"
        config["linux"]["resources"] = {"memory": {"limit": 67108864}, "pids": {"limit": 20}}
        with open(os.path.join(limited, "config.json"), "w") as f:
            json.dump(config, f)
        r = rt("create", "--bundle", limited, "c5")
        v1 = not os.path.exists("/sys/fs/cgroup/cgroup.controllers")
        if mode == "root":
            check("create with cgroupsPath and limits", r.returncode == 0, r.stderr)
            pid5 = (state_of(rt, "c5") or {}).get("pid", 0)
            memory_dir = f"/sys/fs/cgroup/memory/{parent}/c5" if v1 else f"/sys/fs/cgroup/{parent}/c5"
            pids_dir = f"/sys/fs/cgroup/pids/{parent}/c5" if v1 else memory_dir

            def read(path):
                try:
                    with open(path) as f:
                        return f.read().split()
                except OSError as e:
                    return [str(e)]
            check("the limits are in the cgroup named",
                  read(f"{memory_dir}/{'memory.limit_in_bytes' if v1 else 'memory.max'}") ==
                  ["67108864"] and read(f"{pids_dir}/pids.max") == ["20"],
                  (read(f"{memory_dir}/memory.limit_in_bytes"), read(f"{pids_dir}/pids.max")))
            check("init and its command sit in it before start",
                  str(pid5) in read(f"{pids_dir}/cgroup.procs") and
                  len(read(f"{pids_dir}/cgroup.procs")) == 2 and
                  str(pid5) in read(f"{memory_dir}/cgroup.procs"),
                  read(f"{pids_dir}/cgroup.procs"))
            r = rt("delete", "--force", "c5")
            check("delete removes the container's cgroup", r.returncode == 0 and
                  not os.path.exists(memory_dir) and not os.path.exists(pids_dir), r.stderr)
            for top in ([f"/sys/fs/cgroup/{c}/{parent}" for c in V1_CONTROLLERS] if v1
                        else [f"/sys/fs/cgroup/{parent}"]):
                try:
                    os.rmdir(top)
                except OSError:
                    pass
        else:
            check("rootless, cgroupsPath and limits are refused by name, leaving nothing",
                  r.returncode != 0 and "linux.cgroupsPath" in r.stderr and
                  os.listdir(state_root) == [], r.stderr)

        # pause, resume, update: the container's cgroup frozen (v1's freezer,
        # v2's cgroup.freeze) and its limits changed while it runs; runc's
        # words and exit status 1 where the state does not allow it.
        ticker = make_bundle(scratch, "ticker", ["sh", "-c", "i=0; while true; do i=$((i+1)); "
                                                 "echo $i > /out/tick; sleep 0.02; done"],
                             owner, base)
        tick_path = os.path.join(out, "tick")

        def tick():
            try:
                with open(tick_path) as f:
                    return f.read().strip()
            except OSError:
                return ""

        def ticking():
            # Progress is waited for (a loaded machine may not schedule the
            # ticker within any fixed time); its absence is judged over 0.3 s.
            before = tick()
            return wait_for(lambda: tick() != before)

        def still():
            before = tick()
            time.sleep(0.3)
            return tick() == before
        if mode == "root":
            with open(os.path.join(ticker, "config.json")) as f:
                config = json.load(f)
            config["linux"]["cgroupsPath"] = f"/{parent}/c6"
            config["linux"]["resources"] = {"memory": {"limit": 67108864}, "pids": {"limit": 20}}
            with open(os.path.join(ticker, "config.json"), "w") as f:
                json.dump(config, f)
            r = rt("create", "--bundle", ticker, "c6")
            check("create c6 with a cgroup", r.returncode == 0, r.stderr)
            r = rt("pause", "c6")
            check("pause of a created container (as runc allows)", r.returncode == 0, r.stderr)
            check("...state says paused", (state_of(rt, "c6") or {}).get("status") == "paused")
            r = rt("start", "c6")
            check("start of a paused container is refused",
                  r.returncode == 1 and "paused" in r.stderr, (r.returncode, r.stderr))
            r = rt("resume", "c6")
            check("resume returns 0, state created again",
                  r.returncode == 0 and (state_of(rt, "c6") or {}).get("status") == "created",
                  r.stderr)
            rt("start", "c6")
            check("the ticker runs", wait_for(lambda: tick() != "") and ticking())
            r = rt("resume", "c6")
            check("resume of a running container: container not paused, exit 1",
                  r.returncode == 1 and "container not paused" in r.stderr, (r.returncode, r.stderr))
            r = rt("pause", "c6")
            check("pause of a running container returns 0", r.returncode == 0, r.stderr)
            check("state says paused", (state_of(rt, "c6") or {}).get("status") == "paused")
            freezer = (f"/sys/fs/cgroup/freezer/{parent}/c6/freezer.state" if v1
                       else f"/sys/fs/cgroup/{parent}/c6/cgroup.events")
            with open(freezer) as f:
                frozen_text = f.read()
            check("the kernel reports the cgroup frozen",
                  ("FROZEN" in frozen_text) if v1 else ("frozen 1" in frozen_text), frozen_text)
            check("a paused container makes no progress", still(), tick())
            r = rt("pause", "c6")
            check("pause of a paused container: runc's container not running, exit 1",
                  r.returncode == 1 and "container not running" in r.stderr,
                  (r.returncode, r.stderr))
            r = rt("delete", "c6")
            check("delete of a paused container without --force is refused",
                  r.returncode == 1 and "not stopped: paused" in r.stderr, r.stderr)
            r = rt("exec", "c6", "true")
            check("exec in a paused container is refused",
                  r.returncode != 0 and "paused" in r.stderr, (r.returncode, r.stderr))
            # kill --all freezes the cgroup while it lists and signals:
            # a paused container stays paused, a running one runs on.
            r = rt("kill", "--all", "c6", "CONT")
            with open(freezer) as f:
                frozen_text = f.read()
            check("kill --all CONT of a paused container: it stays paused (the cgroup frozen, "
                  "no progress)",
                  r.returncode == 0 and (state_of(rt, "c6") or {}).get("status") == "paused" and
                  (("FROZEN" in frozen_text) if v1 else ("frozen 1" in frozen_text)) and
                  still(), (r.returncode, r.stderr, frozen_text))
            r = rt("resume", "c6")
            check("resume returns 0, state running, the ticker goes on",
                  r.returncode == 0 and (state_of(rt, "c6") or {}).get("status") == "running" and
                  ticking(), r.stderr)
            r = rt("kill", "--all", "c6", "CONT")
            check("kill --all CONT of a running container: thawed after, it runs on",
                  r.returncode == 0 and (state_of(rt, "c6") or {}).get("status") == "running" and
                  ticking(), (r.returncode, r.stderr))

            memory_dir = f"/sys/fs/cgroup/memory/{parent}/c6" if v1 else f"/sys/fs/cgroup/{parent}/c6"
            pids_dir = f"/sys/fs/cgroup/pids/{parent}/c6" if v1 else memory_dir
            cpu_dir = f"/sys/fs/cgroup/cpu/{parent}/c6" if v1 else memory_dir

            def read1(path):
                try:
                    with open(path) as f:
                        return f.read().split()
                except OSError as e:
                    return [str(e)]
            memory_file = f"{memory_dir}/{'memory.limit_in_bytes' if v1 else 'memory.max'}"
            update = {"memory": {"limit": 134217728}, "pids": {"limit": 30}}
            has_cpu = os.path.exists(cpu_dir + ("/cpu.shares" if v1 else "/cpu.weight"))
            if has_cpu:
                update["cpu"] = {"shares": 512, "quota": 50000, "period": 100000}
            upd = os.path.join(scratch, "out", "update.json")
            with open(upd, "w") as f:
                json.dump(update, f)
            r = rt("update", "--resources", upd, "c6")
            check("update --resources FILE returns 0", r.returncode == 0, r.stderr)
            check("...memory and pids limits changed in the cgroup",
                  read1(memory_file) == ["134217728"] and read1(f"{pids_dir}/pids.max") == ["30"],
                  (read1(memory_file), read1(f"{pids_dir}/pids.max")))
            if has_cpu:
                want_cpu = ((read1(f"{cpu_dir}/cpu.shares"), read1(f"{cpu_dir}/cpu.cfs_quota_us"),
                             read1(f"{cpu_dir}/cpu.cfs_period_us")) if v1 else
                            (read1(f"{cpu_dir}/cpu.weight"), read1(f"{cpu_dir}/cpu.max")))
                check("...and the cpu shares and quota",
                      want_cpu == ((["512"], ["50000"], ["100000"]) if v1 else
                                   (["20"], ["50000", "100000"])), want_cpu)
            r = rt("update", "--resources", "-", "c6",
                   input_text=json.dumps({"pids": {"limit": 40}}))
            check("update --resources - reads stdin (containerd's shim)",
                  r.returncode == 0 and read1(f"{pids_dir}/pids.max") == ["40"], r.stderr)
            r = rt("update", "--resources", "-", "c6",
                   input_text=json.dumps({"pids": {"limit": 50},
                                          "memory": {"kernel": 1048576}}))
            check("update with a field it cannot apply fails naming it, changing nothing",
                  r.returncode == 1 and "linux.resources.memory.kernel" in r.stderr and
                  read1(f"{pids_dir}/pids.max") == ["40"], (r.returncode, r.stderr))
            r = rt("update", "--memory", "1000000", "c6")
            check("runc's per-field update flags are refused, not dropped",
                  r.returncode == 1 and "--memory" in r.stderr, r.stderr)

            pid6 = (state_of(rt, "c6") or {}).get("pid", 0)
            # events: the limits update wrote, as the cgroup reads them;
            # without --stats a line each interval until the container is
            # deleted, then exit 0.
            r = rt("events", "--stats", "c6")
            ev = json.loads(r.stdout) if r.returncode == 0 else {}
            usage = ev.get("data", {}).get("memory", {}).get("usage", {})
            pids = ev.get("data", {}).get("pids", {})
            check("events --stats: the memory and pids limits and counts of the cgroup",
                  usage.get("limit") == int(read1(memory_file)[0]) == 134217728 and
                  0 < usage.get("usage", 0) <= usage.get("limit", 0) and
                  pids.get("limit") == int(read1(f"{pids_dir}/pids.max")[0]) == 40 and
                  1 <= pids.get("current", 0) <= 40, (r.returncode, r.stdout, r.stderr))
            watcher = subprocess.Popen([rt.binary, "--root", rt.root, "events", "--interval",
                                        "100ms", "c6"], stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True)
            first_line = watcher.stdout.readline()
            r = rt("pause", "c6")
            check("pause again", r.returncode == 0, r.stderr)
            r = rt("delete", "--force", "c6")
            check("delete --force of a paused container kills it (thawed for SIGKILL) and "
                  "removes its cgroups",
                  r.returncode == 0 and wait_for(lambda: pid6 in reaped) and
                  not os.path.exists(memory_dir) and
                  not os.path.exists(f"/sys/fs/cgroup/freezer/{parent}/c6"), r.stderr)
            try:
                rest, err = watcher.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                watcher.kill()
                rest, err = watcher.communicate()
            check("events --interval: a stats line each interval while it runs (paused "
                  "included), then exit 0 once the container is deleted, not held by it",
                  json.loads(first_line or "{}").get("type") == "stats" and
                  watcher.returncode == 0, (first_line, rest[-300:], err, watcher.returncode))
            r = rt("create", "--bundle", ticker, "c7")
            check("create c7", r.returncode == 0, r.stderr)
            rt("start", "c7")
            pid7 = (state_of(rt, "c7") or {}).get("pid", 0)
            rt("pause", "c7")
            r = rt("kill", "c7", "KILL")
            check("kill KILL of a paused container: it dies",
                  r.returncode == 0 and wait_for(lambda: pid7 in reaped) and
                  (state_of(rt, "c7") or {}).get("status") == "stopped", r.stderr)
            r = rt("pause", "c7")
            check("pause of a stopped container: container not running, exit 1",
                  r.returncode == 1 and "container not running" in r.stderr, (r.returncode, r.stderr))
            r = rt("resume", "c7")
            check("resume of a stopped container: container not paused, exit 1",
                  r.returncode == 1 and "container not paused" in r.stderr, (r.returncode, r.stderr))
            r = rt("update", "--resources", upd, "c7")
            check("update of a stopped container: container not running",
                  r.returncode == 1 and "container not running" in r.stderr, r.stderr)
            rt("delete", "c7")
            # A watcher outlives neither its container nor a delete and
            # create of the same id between two of its samples: it exits
            # 0 rather than go on reporting the new container as the old.
            r = rt("create", "--bundle", ticker, "c8")
            rt("start", "c8")
            watcher = subprocess.Popen([rt.binary, "--root", rt.root, "events", "--interval",
                                        "2s", "c8"], stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True)
            first_line = watcher.stdout.readline()
            rt("delete", "--force", "c8")
            again = rt("create", "--bundle", ticker, "c8")
            rt("start", "c8")
            try:
                rest, err = watcher.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                watcher.kill()
                rest, err = watcher.communicate()
            running = (state_of(rt, "c8") or {}).get("status")
            rt("delete", "--force", "c8")
            check("events --interval ends (exit 0) when its container is deleted and one of "
                  "the same id made again between two samples",
                  r.returncode == 0 and again.returncode == 0 and running == "running" and
                  json.loads(first_line or "{}").get("type") == "stats" and
                  watcher.returncode == 0 and rest.count("\n") <= 1,
                  (r.stderr, again.stderr, running, first_line, rest[-300:], err,
                   watcher.returncode))
            for top in ([f"/sys/fs/cgroup/{c}/{parent}" for c in
                         V1_CONTROLLERS] if v1
                        else [f"/sys/fs/cgroup/{parent}"]):
                try:
                    os.rmdir(top)
                except OSError:
                    pass
        else:
            # Rootless containers here have no cgroup of their own: pause
            # and update fail saying so, and the container runs on.
            r = rt("create", "--bundle", ticker, "c6")
            check("create c6", r.returncode == 0, r.stderr)
            rt("start", "c6")
            check("the ticker runs", wait_for(lambda: tick() != "") and ticking())
            r = rt("pause", "c6")
            check("rootless pause fails, saying the container has no cgroup to freeze",
                  r.returncode == 1 and "no cgroup to freeze" in r.stderr, (r.returncode, r.stderr))
            check("...and the container runs on",
                  (state_of(rt, "c6") or {}).get("status") == "running" and ticking())
            r = rt("resume", "c6")
            check("resume of a running container: container not paused, exit 1",
                  r.returncode == 1 and "container not paused" in r.stderr, (r.returncode, r.stderr))
            r = rt("update", "--resources", "-", "c6",
                   input_text=json.dumps({"pids": {"limit": 40}}))
            check("rootless update fails, saying the container has no cgroup",
                  r.returncode == 1 and "no cgroup of its own" in r.stderr, (r.returncode, r.stderr))
            rt("delete", "--force", "c6")
        check("pause, resume and update leave nothing under --root", os.listdir(state_root) == [],
              os.listdir(state_root))

        # run: create + start + wait; the exit code and the inherited stdio.
        three = make_bundle(scratch, "three", ["sh", "-c", "echo hello; exit 3"], owner, base)
        r = rt("run", "--bundle", three, "r1")
        check("run passes the container's exit code", r.returncode == 3, (r.returncode, r.stderr))
        check("run: stdout is the inherited fd", r.stdout == "hello\n", repr(r.stdout))
        view = make_bundle(scratch, "view", ["sh", "-c",
                           "hostname; id -u; test -s /proc/kcore && echo kcore-visible; "
                           "ls /sys/firmware | wc -l; "
                           "(echo x > /proc/sys/kernel/hostname) 2>/dev/null && echo sys-writable; "
                           "touch /new 2>/dev/null && echo root-writable; ls /dev/null /dev/zero"],
                           owner, base)
        r = rt("run", "--bundle", view, "r3")
        check("the spec's view: hostname, uid 0 inside, maskedPaths, readonlyPaths, "
              "read-only root, default devices",
              r.returncode == 0 and r.stdout == "stockade\n0\n0\n/dev/null\n/dev/zero\n",
              (r.returncode, r.stdout, r.stderr))
        caps = make_bundle(scratch, "caps", ["sh", "-c", "grep -E '^(Cap|NoNewPrivs)' /proc/self/status"],
                           owner, base)
        r = rt("run", "--bundle", caps, "r4")
        seen = dict(line.split(":\t") for line in r.stdout.splitlines() if ":\t" in line)
        # spec's default: CAP_AUDIT_WRITE (29), CAP_KILL (5), CAP_NET_BIND_SERVICE (10).
        want = "0000000020000420"
        check("capabilities as the spec lists them, no_new_privs set",
              r.returncode == 0 and seen.get("CapBnd") == want and seen.get("CapPrm") == want and
              seen.get("CapEff") == want and seen.get("CapAmb") == "0000000000000000" and
              seen.get("CapInh") == "0000000000000000" and seen.get("NoNewPrivs") == "1",
              (r.returncode, r.stdout, r.stderr))
        sysctl = make_bundle(scratch, "sysctl", ["cat", "/proc/sys/net/ipv4/ping_group_range",
                                                 "/proc/sys/kernel/shmmni"], owner, base)
        with open(os.path.join(sysctl, "config.json")) as f:
            config = json.load(f)
        config["linux"]["sysctl"] = {"net.ipv4.ping_group_range": "0 0", "kernel.shmmni": "100"}
        with open(os.path.join(sysctl, "config.json"), "w") as f:
            json.dump(config, f)
        r = rt("run", "--bundle", sysctl, "r5")
        check("namespaced sysctls are set in the container's own namespaces",
              r.returncode == 0 and r.stdout.split() == ["0", "0", "100"],
              (r.returncode, r.stdout, r.stderr))
        r = rt("run", "--detach", "--bundle", parked, "d1")
        check("run --detach returns with the container running",
              r.returncode == 0 and (state_of(rt, "d1") or {}).get("status") == "running", r.stderr)
        rt("delete", "--force", "d1")
        cat = make_bundle(scratch, "cat", ["cat"], owner, base)
        r = rt("run", "--bundle", cat, "r2", input_text="piped\n")
        check("run: stdin is the inherited fd, its EOF reaches the container",
              r.returncode == 0 and r.stdout == "piped\n", (r.returncode, r.stdout, r.stderr))
        check("run leaves nothing under --root", os.listdir(state_root) == [], os.listdir(state_root))

        stockade_profile(rt, scratch, owner, base)
        home_default(rt, scratch, owner, base)
        exec_fds(rt, scratch, owner, base)
        create_pid_file_beside_a_fifo(rt, scratch, owner, base)
        missing_cwd(rt, scratch, owner, base)
        unknown_sysctl(rt, scratch, owner, base)
        domain_name(rt, scratch, owner, base)
        null_stdio_reopened(rt, scratch, owner, base)
        unprivileged_ports(rt, scratch, owner, base)
        recursive_bind_options(rt, scratch, owner, base)
        tmpfs_modes(rt, scratch, owner, base)
        if owner == 0:
            ids_past_the_block(rt, scratch, owner, base)
            tmpcopyup_charged_to_the_container(rt, scratch, owner, base)
            nested_bind_targets(rt, scratch, owner, base)
        missing_interpreter(rt, scratch, owner, base)
        image_device_nodes(rt, scratch, owner, base)
        terminal_without_dev(rt, scratch, owner, base, mode)
        run_with_terminal(rt, scratch, owner, base, mode)
        exec_kept_config(rt, scratch, owner, base)
        exec_through_command(rt, scratch, owner, base, mode)
        exec_host_last_cap(rt, scratch, owner, base)
        exec_without_process(rt, scratch, owner, base)
        pids_limit_one(rt, scratch, owner, base)
        sys_admin_remount(rt, scratch, owner, base)
        if mode == "root":
            default_cgroup(rt, scratch, owner, base, binary)
        kill_all_after_the_end(rt, scratch, owner, base)
        idmapped_root(rt, scratch, owner, base)
        record_cases(rt, scratch, owner, base, mode)
        monitor_cases(rt, scratch, owner, base, mode)

        # Unknown ids, runc's words.
        for command in (["state", "nope"], ["start", "nope"], ["kill", "nope", "9"], ["delete", "nope"]):
            r = rt(*command)
            check(f"{command[0]} of an unknown id: does not exist",
                  r.returncode != 0 and "does not exist" in r.stderr, r.stderr)
        r = rt("delete", "--force", "nope")
        check("delete --force of an unknown id exits 0", r.returncode == 0, r.stderr)
        for bad in ["../x", "a/b", ".."]:
            r = rt("create", "--bundle", parked, bad)
            check(f"create refuses the id {bad!r}", r.returncode != 0 and "invalid id" in r.stderr,
                  r.stderr)

        # A missing executable fails create (podman maps it to 127); nothing left.
        missing = make_bundle(scratch, "missing", ["no-such-program"], owner, base)
        log = os.path.join(scratch, "out", "log.json")
        r = rt("create", "--bundle", missing, "m1", log=log)
        check("create fails when the executable is missing",
              r.returncode != 0 and "executable file not found" in r.stderr, r.stderr)
        with open(log) as f:
            lines = [json.loads(line) for line in f if line.strip()]
        check("--log-format json: the error as {level, msg, time}",
              lines and lines[-1]["level"] == "error" and "executable file not found" in
              lines[-1]["msg"] and "time" in lines[-1], lines)
        # A path is stat'ed, not searched: runc's other words (podman maps
        # "no such file or directory" to 127 as well).
        by_path = make_bundle(scratch, "missing-path", ["/bin/no-such-program"], owner, base)
        r = rt("create", "--bundle", by_path, "m2")
        check("create of a missing executable by path: runc's stat words",
              r.returncode != 0 and 'exec: "/bin/no-such-program": stat /bin/no-such-program: '
              "no such file or directory" in r.stderr, r.stderr)
        check("a failed create leaves nothing under --root", os.listdir(state_root) == [],
              os.listdir(state_root))

        # A malformed config.json: a clear message, nothing left.
        broken = os.path.join(scratch, "broken")
        os.makedirs(broken)
        os.symlink("../rootfs", os.path.join(broken, "rootfs"))
        with open(os.path.join(broken, "config.json"), "w") as f:
            f.write('{"ociVersion": "1.0.2", "process": ')
        r = rt("create", "--bundle", broken, "b1")
        check("a malformed config.json fails create with a clear message",
              r.returncode != 0 and "config.json: not valid JSON" in r.stderr, r.stderr)
        unsupported = make_bundle(scratch, "unsupported", ["true"], owner, base)
        with open(os.path.join(unsupported, "config.json")) as f:
            config = json.load(f)
        config["linux"]["sysctl"] = {"vm.swappiness": "1"}
        with open(os.path.join(unsupported, "config.json"), "w") as f:
            json.dump(config, f)
        r = rt("create", "--bundle", unsupported, "u1")
        check("an unsupported field fails create naming it",
              r.returncode != 0 and "linux.sysctl.vm.swappiness" in r.stderr, r.stderr)
        check("neither leaves anything under --root", os.listdir(state_root) == [],
              os.listdir(state_root))

        # features (containerd 1.7+ reads it): what it says is what create
        # does. All six hooks listed; a notify action not listed, and
        # refused.
        r = rt("features")
        feats = json.loads(r.stdout) if r.returncode == 0 else {}
        linux = feats.get("linux", {})
        check("features: the runtime-spec's document",
              feats.get("ociVersionMin") == "1.0.0" and feats.get("ociVersionMax") == "1.2.0" and
              "pid" in linux.get("namespaces", []) and
              "CAP_SYS_ADMIN" in linux.get("capabilities", []) and
              linux.get("cgroup", {}).get("systemd") is True and
              "SCMP_ACT_ERRNO" in linux.get("seccomp", {}).get("actions", []) and
              "SCMP_CMP_MASKED_EQ" in linux.get("seccomp", {}).get("operators", []) and
              "SCMP_ARCH_X86_64" in linux.get("seccomp", {}).get("archs", []) and
              {"rro", "rnosuid", "nosymfollow"} <= set(feats.get("mountOptions", [])) and
              linux.get("apparmor") == {"enabled": False}, (r.stdout, r.stderr))
        check("features: the six hooks of the runtime-spec, each run by create, start or "
              "delete (tests/oci/hooks.py)",
              feats.get("hooks") == ["prestart", "createRuntime", "createContainer",
                                     "startContainer", "poststart", "poststop"], feats)
        refused = {
            "SCMP_ACT_NOTIFY": ({"linux": {"seccomp": {
                "defaultAction": "SCMP_ACT_ALLOW",
                "syscalls": [{"names": ["mkdir"], "action": "SCMP_ACT_NOTIFY"}]}}},
                "SCMP_ACT_NOTIFY" not in linux.get("seccomp", {}).get("actions", [])),
        }
        for word, (change, unlisted) in refused.items():
            bundle = make_bundle(scratch, f"feature-{word}", ["true"], owner, base)
            with open(os.path.join(bundle, "config.json")) as f:
                config = json.load(f)
            for key, value in change.items():
                config.setdefault(key, {}).update(value)
            with open(os.path.join(bundle, "config.json"), "w") as f:
                json.dump(config, f)
            r = rt("create", "--bundle", bundle, f"f-{word.lower().replace('_', '-')}")
            check(f"features leaves out {word}, and create refuses it",
                  unlisted and r.returncode != 0 and
                  ("hooks" in r.stderr or "NOTIFY" in r.stderr), (unlisted, r.stderr))
        check("...leaving nothing under --root", os.listdir(state_root) == [],
              os.listdir(state_root))
        if mode == "root":
            bad_input_beside_runc(binary, scratch, base)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
