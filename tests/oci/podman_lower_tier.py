#!/usr/bin/env python3
"""stockade inside a real podman container whose seccomp profile refuses user
namespaces (issue 18): the default profile refuses, naming the cause and the
container's fix; --min-tier landlock runs, records tier landlock and what it
lost, and a few attacks of the lower tier's suite still hold there.

usage: podman_lower_tier.py STOCKADE PROBE [root|rootless]

STOCKADE and PROBE are static binaries, copied into a busybox-static rootfs
made here (--rootfs: no image registry). podman runs with its usual OCI
runtime (runc: crun refuses this host's hybrid cgroup layout), storage of
its own under a temporary directory, cgroupfs and `--network none`.

The seccomp profile: podman's own default here (containers-common's
/usr/share/containers/seccomp.json) allows clone, clone3 and unshare
unconditionally, so an unprivileged podman container can make user
namespaces (the script checks and prints that). Docker's default, and
Kubernetes' RuntimeDefault on containerd, cannot: so the script derives a
profile from podman's, with those three calls taken out of its allow list
and Docker's rules put in their place (clone without namespace flags
allowed, clone with CLONE_NEWUSER EPERM, unshare EPERM, clone3 ENOSYS), and
passes it with --security-opt seccomp=FILE.

Rootless, podman runs as uid 65534 with a block of subordinate ids: this
script moves itself into a mount namespace of its own and binds files of its
own over /etc/subuid and /etc/subgid (the host's are never written), so
newuidmap gives podman's user namespace 0 -> 65534 and 1..65536 -> a block
clear of stockade's lease range. stockade then runs as the container's root
(host 65534) and the lower tier as the worktree's owner, the container's
65534. Without subordinate ids (one id in the namespace) stockade cannot
drop its supplementary groups there, and refuses.

Exit 77 (a skip) when podman or runc is missing, the binaries are not
static, or not root; CI (env CI=true) turns that into a failure.
"""
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile

from oci_common import BUSYBOX, check, failures, skip

APPLETS = ["sh", "id", "cat", "ls", "sleep", "setsid", "unshare", "kill", "true", "grep"]
ULIMITS = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]
# The subordinate block of the rootless run: clear of stockade's lease range
# (0x78000000 upward, runtime/plan/identity.cpp) and of subids_test.cpp's
# (0x74000000).
SUBID_BASE = 0x72000000
SUBID_COUNT = 65536
CLONE_NEWUSER = 0x10000000
PROBE_INSIDE = "/usr/local/bin/stockade-probe"
# Docker's mask of clone's namespace flags (its default.json): a clone with
# none of them is an ordinary fork or thread.
CLONE_NAMESPACE_FLAGS = 0x7E020000


def is_static(path):
    """No PT_INTERP program header: the binary runs in a rootfs without a libc."""
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2:
            return False
        phoff = int.from_bytes(head[32:40], "little")
        phentsize = int.from_bytes(head[54:56], "little")
        phnum = int.from_bytes(head[56:58], "little")
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    return all(int.from_bytes(table[i * phentsize:i * phentsize + 4], "little") != 3
               for i in range(phnum))


def docker_like_profile(path):
    """podman's default profile with Docker's answers to namespace creation."""
    with open("/usr/share/containers/seccomp.json") as f:
        profile = json.load(f)
    for rule in profile["syscalls"]:
        if rule["action"] == "SCMP_ACT_ALLOW" and not rule.get("args") and \
                not rule.get("includes"):
            rule["names"] = [n for n in rule["names"] if n not in ("clone", "clone3", "unshare")]
    profile["syscalls"] += [
        {"names": ["clone"], "action": "SCMP_ACT_ALLOW",
         "args": [{"index": 0, "value": CLONE_NAMESPACE_FLAGS, "valueTwo": 0,
                   "op": "SCMP_CMP_MASKED_EQ"}]},
        {"names": ["clone"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1,
         "args": [{"index": 0, "value": CLONE_NEWUSER, "valueTwo": CLONE_NEWUSER,
                   "op": "SCMP_CMP_MASKED_EQ"}]},
        {"names": ["unshare"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1},
        # Docker answers every clone3 ENOSYS, so that glibc falls back to clone.
        {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38},
    ]
    with open(path, "w") as f:
        json.dump(profile, f)


def make_rootfs(root, stockade, probe, token, rootless):
    """busybox, stockade and the probe; a worktree of the container's 65534;
    a canary of the container's root outside it, readable by everyone."""
    for d in ["bin", "opt", "usr/local/bin", "proc", "sys", "dev", "etc", "tmp", "run", "var/tmp", "secret", "out"]:
        os.makedirs(os.path.join(root, d), exist_ok=True)
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    shutil.copy(BUSYBOX, os.path.join(root, "bin/busybox"))
    for a in APPLETS:
        os.symlink("busybox", os.path.join(root, "bin", a))
    shutil.copy(stockade, os.path.join(root, "opt/stockade"))
    # The probe where the lower tier's view reaches: /usr is in it, /opt not.
    shutil.copy(probe, os.path.join(root, "usr/local/bin/stockade-probe"))
    with open(os.path.join(root, "secret/canary"), "w") as f:
        f.write(f"canary-{token}\n")
    os.chmod(os.path.join(root, "secret/canary"), 0o644)
    os.makedirs(os.path.join(root, "repo"))
    # Host ids of the container's root and of its 65534.
    container_root = 65534 if rootless else 0
    container_nobody = SUBID_BASE + 65533 if rootless else 65534
    for top, dirs, files in os.walk(root):
        for name in [top] + [os.path.join(top, n) for n in dirs + files]:
            os.lchown(name, container_root, container_root)
    os.chown(os.path.join(root, "repo"), container_nobody, container_nobody)
    # Records of runs as the container's 65534 too.
    os.chmod(os.path.join(root, "out"), 0o1777)


class Podman:
    def __init__(self, work, rootless):
        prefix = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "env",
                  f"HOME={work}/home", f"XDG_RUNTIME_DIR={work}/xdg",
                  f"XDG_CONFIG_HOME={work}/config", f"XDG_DATA_HOME={work}/data"] if rootless else []
        self.base = prefix + ["podman", "--root", f"{work}/storage", "--runroot", f"{work}/run",
                              "--storage-driver", "vfs", "--tmpdir", f"{work}/tmp-podman",
                              "--cgroup-manager", "cgroupfs", "--events-backend", "file",
                              "--runtime", "runc"]

    def run(self, rootfs, *command, opts=(), timeout=120):
        return subprocess.run(self.base + ["run", "--rm", "--network", "none", *ULIMITS, *opts,
                                           "--rootfs", rootfs, *command],
                              capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              timeout=timeout)


def private_subids(work):
    """Binds files of this script's own over /etc/subuid and /etc/subgid; the
    caller is already in a private mount namespace."""
    grant = f"{work}/subids"
    with open(grant, "w") as f:
        f.write(f"65534:{SUBID_BASE}:{SUBID_COUNT}\n")
    os.chmod(grant, 0o644)
    for target in ("/etc/subuid", "/etc/subgid"):
        if not os.path.exists(target):
            skip(f"{target} does not exist, and this test does not create it on the host")
        subprocess.run(["mount", "--bind", grant, target], check=True)


def end_pause_process(work):
    """Rootless podman leaves a pause process holding its user namespace,
    its pid in a file under its --tmpdir: this run's own one."""
    for top, _, files in os.walk(work):
        if "pause.pid" not in files:
            continue
        try:
            with open(os.path.join(top, "pause.pid")) as f:
                pid = int(f.read().strip())
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().split(b"\0")[0] == b"podman":
                    os.kill(pid, 9)
        except (OSError, ValueError):
            pass


def main():
    if len(sys.argv) != 4 or sys.argv[3] not in ("root", "rootless"):
        print(__doc__)
        sys.exit(2)
    stockade, probe = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    rootless = sys.argv[3] == "rootless"
    if os.geteuid() != 0:
        skip("the test runs as root (rootless: it runs podman as uid 65534 itself)")
    for tool in ("podman", "conmon", "runc", "setpriv", "unshare") + \
            (("newuidmap", "newgidmap") if rootless else ()):
        if not shutil.which(tool):
            skip(f"{tool} is not installed (scripts/install-deps.sh installs podman)")
    if not os.path.exists(BUSYBOX):
        skip("busybox-static is not installed")
    for binary in (stockade, probe):
        if not is_static(binary):
            skip(f"{binary} is not static; it must run in a busybox rootfs")
    if rootless and os.environ.get("STOCKADE_PODMAN_PRIVATE_MOUNTS") != "1":
        # Into a mount namespace of its own before anything is bound.
        os.environ["STOCKADE_PODMAN_PRIVATE_MOUNTS"] = "1"
        os.execvp("unshare", ["unshare", "--mount", "--propagation", "private",
                              sys.executable] + sys.argv)

    with open("/proc/sys/user/max_user_namespaces") as f:
        host_limit = f.read()
    token = secrets.token_hex(8)
    work = tempfile.mkdtemp(prefix="stockade-podman-tier-")
    os.chmod(work, 0o755)
    pm = None
    try:
        if rootless:
            # podman as 65534 makes its storage and run directories here.
            os.chown(work, 65534, 65534)
            for d in ("home", "xdg", "config", "data"):
                os.makedirs(f"{work}/{d}", mode=0o700)
                os.chown(f"{work}/{d}", 65534, 65534)
            private_subids(work)
        rootfs = f"{work}/rootfs"
        make_rootfs(rootfs, stockade, probe, token, rootless)
        profile = f"{work}/docker-userns.json"
        docker_like_profile(profile)
        os.chmod(profile, 0o644)
        # podman and conmon start in their caller's directory, which uid
        # 65534 may not be able to enter (a 0700 checkout).
        os.chdir(work)
        pm = Podman(work, rootless)
        blocked = ["--security-opt", f"seccomp={profile}"]
        if rootless:
            # The container's 65534 owns the worktree: the lower tier runs
            # as it (its host id is in the subordinate block).
            p = pm.run(rootfs, "sh", "-c", "cat /proc/self/uid_map; ls -nd /repo")
            check("rootless: podman's user namespace holds the subordinate block, the worktree "
                  "is the container's 65534's",
                  p.returncode == 0 and str(SUBID_BASE) in p.stdout and " 65534 " in p.stdout,
                  f"{p.returncode} {p.stdout!r} {p.stderr[-600:]!r}")

        # What podman's own default answers: printed, not required.
        p = pm.run(rootfs, "unshare", "-U", "true")
        answer = "allows" if p.returncode == 0 else \
            "refuses" if "unshare" in p.stderr else f"could not tell ({p.stderr[-300:]!r})"
        print(f"(podman's default seccomp profile here {answer} an unprivileged user namespace; "
              "the cases below use Docker's rule)")
        p = pm.run(rootfs, "unshare", "-U", "true", opts=blocked)
        check("the derived profile refuses a user namespace in the container (unshare -U)",
              p.returncode != 0 and "Operation not permitted" in p.stderr,
              f"{p.returncode} {p.stderr[-600:]!r}")

        # The default profile: refused, nothing run, the cause and the fix named.
        p = pm.run(rootfs, "/opt/stockade", "run", "--worktree", "/repo", "--result",
                   "/out/refused.json", "--", PROBE_INSIDE, "exit", "0", opts=blocked)
        err = p.stderr
        check("the default profile refuses with exit 125", p.returncode == 125,
              f"{p.returncode} {p.stdout!r} {err[-1200:]!r}")
        check("...naming the cause: no user namespace, the container's seccomp profile",
              "no user namespace can be had here" in err and "seccomp profile" in err,
              err[-1200:])
        check("...and the container's fix: --security-opt seccomp=PROFILE or seccomp=unconfined",
              "--security-opt seccomp=PROFILE" in err and "seccomp=unconfined" in err,
              err[-1200:])
        check("...and the lower tier: --min-tier landlock", "--min-tier landlock" in err,
              err[-1200:])
        check("...and nothing ran", "result=" not in p.stdout, p.stdout)
        with open(f"{rootfs}/out/refused.json") as f:
            refused = json.load(f)
        check("...its record: tier full, status error, reason sandbox_unavailable",
              refused["tier"] == "full" and refused["status"] == "error" and
              refused["reason"] == "sandbox_unavailable", json.dumps(refused)[:600])

        # --min-tier landlock: runs, records the tier and what it lost.
        p = pm.run(rootfs, "/opt/stockade", "run", "--min-tier", "landlock", "--worktree", "/repo",
                   "--result", "/out/lower.json", "--", PROBE_INSIDE, "ids", opts=blocked)
        check("--min-tier landlock runs (exit 0) and says it runs the lower tier",
              p.returncode == 0 and "running the lower tier" in p.stderr,
              f"{p.returncode} {p.stdout[-600:]!r} {p.stderr[-1200:]!r}")
        with open(f"{rootfs}/out/lower.json") as f:
            lower = json.load(f)
        degraded = lower.get("degraded", [])
        check("...its record: tier landlock, status passed",
              lower["tier"] == "landlock" and lower["status"] == "passed",
              json.dumps(lower)[:800])
        check("...no namespace enforced, landlock and the default filter are",
              all(lower["enforced"][ns] is False for ns in
                  ("user_ns", "mount_ns", "pid_ns", "net_ns", "ipc_ns", "uts_ns")) and
              isinstance(lower["enforced"]["landlock"], str) and
              lower["enforced"]["seccomp"] == "default" and
              lower["enforced"]["no_new_privs"] is True, json.dumps(lower["enforced"]))
        check("...degraded names each namespace lost, and signals",
              all(any(d.startswith(lost) for d in degraded)
                  for lost in ("user_ns:", "mount_ns:", "pid_ns:", "net_ns:", "signals:")),
              json.dumps(degraded)[:1200])

        # Attacks that still apply, each in one container: the container's
        # root's canary outside the view, a TCP socket, a double-forked daemon.
        def lower_run(*command):
            return pm.run(rootfs, "/opt/stockade", "run", "--min-tier", "landlock",
                          "--worktree", "/repo", "--", *command, opts=blocked)

        p = lower_run(PROBE_INSIDE, "read-file", "/secret/canary")
        check("a file outside the view (0644, the container root's) is refused: EACCES",
              "result=EACCES" in p.stdout and token not in p.stdout,
              f"{p.returncode} {p.stdout[-600:]!r} {p.stderr[-600:]!r}")
        p = lower_run(PROBE_INSIDE, "connect-tcp", "127.0.0.1", "9")
        check("no TCP socket: socket() EPERM",
              "stage=socket" in p.stdout and "result=EPERM" in p.stdout,
              f"{p.returncode} {p.stdout[-600:]!r} {p.stderr[-600:]!r}")
        p = lower_run(PROBE_INSIDE, "create-in", "/repo")
        check("the worktree is writable", "result=ok" in p.stdout,
              f"{p.returncode} {p.stdout[-600:]!r} {p.stderr[-600:]!r}")
        # The daemon is looked for inside the same container, after stockade
        # returned: once the container ends, its PID namespace would kill an
        # escaped daemon and hide the escape.
        script = (
            "/opt/stockade run --min-tier landlock --worktree /repo --result /out/daemon.json -- "
            "/bin/sh -c '( setsid /usr/local/bin/stockade-probe sleep-with-token " + token + " 300 "
            "</dev/null >/dev/null 2>&1 & echo $! > /repo/daemon.pid ); sleep 1; "
            "grep -q " + token + " /proc/$(cat /repo/daemon.pid)/cmdline && echo > /repo/started; "
            "exit 0'; "
            "echo stockade=$?; pid=$(cat /repo/daemon.pid); echo pid=$pid; "
            "if cat /proc/$pid/cmdline 2>/dev/null | grep -q " + token + "; "
            "then echo daemon=alive; else echo daemon=gone; fi")
        p = pm.run(rootfs, "sh", "-c", script, opts=blocked)
        check("a double-forked setsid daemon is gone when stockade returns",
              os.path.exists(f"{rootfs}/repo/started") and "stockade=0" in p.stdout and
              "daemon=gone" in p.stdout,
              f"{p.returncode} {p.stdout!r} {p.stderr[-600:]!r}")
        with open(f"{rootfs}/out/daemon.json") as f:
            check("...and counted in stragglers_killed", json.load(f)["stragglers_killed"] >= 1)

        # stockade check inside: the cause, the fix, the tier.
        p = pm.run(rootfs, "/opt/stockade", "check", opts=blocked)
        tier_lines = [l for l in p.stdout.splitlines() if l.startswith("Tier: ")]
        check("stockade check names tier landlock", tier_lines != [] and
              tier_lines[0].startswith("Tier: landlock: no full sandbox (user_ns: "),
              f"{p.returncode} {p.stdout[-1500:]!r}")
        check("...and the container's seccomp fix", "seccomp=unconfined" in p.stdout,
              p.stdout[-1500:])
        p = pm.run(rootfs, "/opt/stockade", "check", "--json", opts=blocked)
        try:
            doc = json.loads(p.stdout)
            check("stockade check --json: tier landlock", doc["tier"]["tier"] == "landlock",
                  json.dumps(doc["tier"]))
        except (ValueError, KeyError) as e:
            check("stockade check --json: tier landlock", False, f"{e}: {p.stdout[-600:]!r}")

        # A stock container: podman's own seccomp profile (which here allows
        # user namespaces) and its masked /proc, whose /proc/sys is
        # read-only. The full tier cannot fill its namespaces there; check
        # says landlock, and so must run: refused without --min-tier, naming
        # the step the host refused and the fix; the lower tier with it.
        p = pm.run(rootfs, "/opt/stockade", "run", "--worktree", "/repo", "--", PROBE_INSIDE,
                   "exit", "0")
        err = p.stderr
        check("a stock container: the default profile refuses with exit 125, naming the host's "
              "refusal, its fix and --min-tier landlock",
              p.returncode == 125 and ("the full sandbox cannot be built here" in err or
                                       "no user namespace can be had here" in err) and
              "Fix:" in err and "--min-tier landlock" in err,
              f"{p.returncode} {err[-1200:]!r}")
        p = pm.run(rootfs, "/opt/stockade", "run", "--min-tier", "landlock", "--worktree", "/repo",
                   "--result", "/out/stock.json", "--", PROBE_INSIDE, "exit", "0")
        stock = {}
        if os.path.exists(f"{rootfs}/out/stock.json"):
            with open(f"{rootfs}/out/stock.json") as f:
                stock = json.load(f)
        check("a stock container: --min-tier landlock runs the lower tier, as check promises",
              p.returncode == 0 and "running the lower tier" in p.stderr and
              stock.get("tier") == "landlock" and stock.get("status") == "passed",
              f"{p.returncode} {p.stderr[-1200:]!r} {json.dumps(stock)[:400]}")
        p = pm.run(rootfs, "/opt/stockade", "check")
        tier_lines = [l for l in p.stdout.splitlines() if l.startswith("Tier: ")]
        check("a stock container: stockade check names tier landlock",
              tier_lines != [] and tier_lines[0].startswith("Tier: landlock"),
              f"{p.returncode} {p.stdout[-1500:]!r}")

        # The fix the refusal names, as docs/ci-runners.md gives it: a profile
        # that allows user namespaces, and /proc without podman's masks (with
        # them, /proc/sys is read-only and the full tier's proc mount is
        # refused). As a user that is not root: as root the idmapped mount
        # of the worktree needs CAP_SYS_ADMIN.
        p = pm.run(rootfs, "/opt/stockade", "run", "--worktree", "/repo", "--result",
                   "/out/full.json", "--", PROBE_INSIDE, "exit", "0",
                   opts=["--security-opt", "seccomp=unconfined", "--security-opt", "unmask=ALL",
                         "--user", "65534:65534"])
        full = {}
        if os.path.exists(f"{rootfs}/out/full.json"):
            with open(f"{rootfs}/out/full.json") as f:
                full = json.load(f)
        check("the fix: seccomp=unconfined and unmask=ALL, as uid 65534: the full tier runs",
              p.returncode == 0 and full.get("tier") == "full" and full.get("status") == "passed",
              f"{p.returncode} {p.stderr[-800:]!r} {json.dumps(full)[:400]}")

        with open("/proc/sys/user/max_user_namespaces") as f:
            check("the host's user.max_user_namespaces is unchanged", f.read() == host_limit)
    finally:
        if pm:
            subprocess.run(pm.base + ["rm", "-af"], capture_output=True)
        subprocess.run(["umount", "-R", f"{work}/storage"], capture_output=True)
        if rootless:
            end_pause_process(work)
        os.chdir("/")
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print(f"{len(failures)} failed: {failures}")
        sys.exit(1)
    print("all passed")


if __name__ == "__main__":
    main()
