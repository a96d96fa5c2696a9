#!/usr/bin/env python3
"""Rootless podman as a user with subordinate ids (/etc/subuid, /etc/subgid),
the way rootless podman runs on a usual host: podman's user namespace maps
the user's own id at 0 and the subordinate block at 1..65536, and runs the
runtime as its uid 0 there. stockade, beside runc 1.1 in the same run, must
give the container those ids (before 2026-12-07 every container failed:
podman's devpts `gid=5` was a gid stockade's own namespace did not map).

usage: podman_subuid.py STOCKADE

As root, the script makes a throwaway user with a subordinate block of its
own, runs podman as that user (storage, runtime dir and config in a
temporary directory, vfs, cgroupfs, --network none: /dev/net/tun is 0600
here), and removes the user, its block, its processes and its files at the
end. Exit 77 (a skip) when podman or runc is missing or not root; CI (env
CI=true) turns that into a failure.
"""
import os
import pwd
import shutil
import subprocess
import sys
import tempfile

from oci_common import BUSYBOX, check, finish, skip

APPLETS = ["sh", "id", "cat", "head", "sleep", "ls", "stat", "echo", "touch"]
ULIMITS = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]


def subordinate_base(name, path):
    with open(path) as f:
        for line in f:
            fields = line.strip().split(":")
            if len(fields) == 3 and fields[0] == name:
                return int(fields[1]), int(fields[2])
    return None


def owner_of(path):
    """(uid, gid) of the file as the host sees it, or why it cannot be read."""
    try:
        st = os.stat(path)
        return (st.st_uid, st.st_gid)
    except OSError as e:
        return str(e)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    stockade = sys.argv[1]
    if os.geteuid() != 0:
        skip("needs root to make a throwaway user")
    for tool in ("podman", "useradd", "userdel", "usermod"):
        if not shutil.which(tool):
            skip(f"{tool} is not installed")
    runc = shutil.which("runc") or "/usr/sbin/runc"
    if not os.path.exists(runc):
        skip("runc is not installed")
    user = f"stksub{os.getpid() % 100000}"
    work = tempfile.mkdtemp(prefix="stockade-subuid-", dir="/var/tmp")
    os.chmod(work, 0o755)
    made_user = False
    try:
        r = subprocess.run(["useradd", "-M", "-d", f"{work}/home", "-s", "/usr/sbin/nologin",
                            user], capture_output=True, text=True)
        if r.returncode != 0:
            check("a throwaway user is made", False, r.stderr)
            return
        made_user = True
        if not subordinate_base(user, "/etc/subuid") or not subordinate_base(user, "/etc/subgid"):
            # useradd gives a block where login.defs asks for one; else this one.
            subprocess.run(["usermod", "--add-subuids", "300000-365535", "--add-subgids",
                            "300000-365535", user], check=True)
        base, count = subordinate_base(user, "/etc/subuid")
        gbase, _ = subordinate_base(user, "/etc/subgid")
        uid = pwd.getpwnam(user).pw_uid
        gid = pwd.getpwnam(user).pw_gid
        for d in ("home", "xdg", "rootfs/bin", "rootfs/proc", "rootfs/sys", "rootfs/dev",
                  "rootfs/etc", "rootfs/tmp", "rootfs/run"):
            os.makedirs(f"{work}/{d}", exist_ok=True)
        shutil.copy(BUSYBOX, f"{work}/rootfs/bin/busybox")
        for a in APPLETS:
            os.symlink("busybox", f"{work}/rootfs/bin/{a}")
        runtimes = {"runc": runc, "stockade": f"{work}/stockade"}
        shutil.copy(stockade, runtimes["stockade"])
        for top, dirs, files in os.walk(work):
            for name in dirs + files + ["."]:
                os.lchown(os.path.join(top, name), uid, gid)
        os.chmod(f"{work}/xdg", 0o700)
        # A volume for container uid 1000: the host id it is, base + 999.
        volume = f"{work}/vol"
        os.makedirs(volume)
        os.chown(volume, base + 999, gbase + 999)

        def podman(runtime, *args, timeout=120):
            argv = ["setpriv", "--reuid", str(uid), "--regid", str(gid), "--init-groups", "env",
                    f"HOME={work}/home", f"XDG_RUNTIME_DIR={work}/xdg",
                    f"XDG_CONFIG_HOME={work}/config", "podman", "--root", f"{work}/storage",
                    "--runroot", f"{work}/run", "--storage-driver", "vfs", "--tmpdir",
                    f"{work}/tmp-podman", "--cgroup-manager", "cgroupfs", "--events-backend",
                    "file", "--runtime", runtimes[runtime], *args]
            return subprocess.run(argv, capture_output=True, text=True, cwd="/",
                                  stdin=subprocess.DEVNULL, timeout=timeout)

        def run(runtime, *args, opts=()):
            return podman(runtime, "run", "--rm", "--network", "none", *ULIMITS, *opts,
                          "--rootfs", f"{work}/rootfs", *args)

        seen = {}
        for name in runtimes:
            plain = run(name, "sh", "-c", "id; cat /proc/self/uid_map /proc/self/gid_map; "
                        "ls -d /dev/pts/ptmx")
            user1000 = run(name, "sh", "-c", "id; echo from-1000 > /vol/f-" + name,
                           opts=("--user", "1000:1000", "--group-add", "2000", "-v",
                                 f"{volume}:/vol"))
            podman(name, "rm", "-f", "-t", "0", "held")
            detached = podman(name, "run", "-d", "--name", "held", "--network", "none",
                              *ULIMITS, "--rootfs", f"{work}/rootfs", "sleep", "1000")
            execd = podman(name, "exec", "--user", "1000:1000", "held", "sh", "-c",
                           "id; echo out > /dev/stdout")
            podman(name, "rm", "-f", "-t", "0", "held")
            # gid 0 of podman's namespace is the user's own group, not
            # host root's (alpine's /etc/group lists root in it): taken.
            group0 = run(name, "id", opts=("--user", "1000:1000", "--group-add", "0"))
            # --userns=keep-id: the user's own id at its uid inside, the
            # subordinate ids around it (linux.uidMappings of three ranges).
            keep_id = run(name, "sh", "-c", "id; cat /proc/self/uid_map /proc/self/gid_map; "
                          "echo kept > /home-vol/f-" + name,
                          opts=("--userns=keep-id", "-v", f"{work}/home:/home-vol"))
            # ...and exec into such a container (toolbox's and distrobox's way).
            podman(name, "rm", "-f", "-t", "0", "kept")
            podman(name, "run", "-d", "--name", "kept", "--network", "none",
                             "--userns=keep-id", *ULIMITS, "--rootfs", f"{work}/rootfs",
                             "sleep", "1000")
            kept_exec = podman(name, "exec", "kept", "sh", "-c", "id; echo out > /dev/stdout")
            # As container root, which keep-id maps to a subordinate id: the
            # stdio pipes given to it, as create gives them.
            kept_root = podman(name, "exec", "--user", "0:0", "kept", "sh", "-c",
                               "id; echo out > /dev/stdout")
            podman(name, "rm", "-f", "-t", "0", "kept")
            setgroups = run(name, "cat", "/proc/self/setgroups")
            kept_groups = run(name, "cat", "/proc/self/setgroups",
                              opts=("--group-add", "keep-groups"))
            seen[name] = (plain, user1000, detached, execd, group0, keep_id, kept_exec, kept_root,
                          setgroups, kept_groups)
        (plain, user1000, detached, execd, group0, keep_id, kept_exec, kept_root, setgroups,
         kept_groups) = seen["stockade"]
        check("setgroups allowed in the container, as under runc (apt, su, gosu need it)",
              setgroups.returncode == 0 and setgroups.stdout == "allow\n" ==
              seen["runc"][8].stdout, (setgroups.stdout, setgroups.stderr, seen["runc"][8].stdout))
        check("...but denied under --group-add keep-groups, whose groups are the user's own, "
              "unmapped (dropping one would pass a negative permission of the user's)",
              kept_groups.returncode == 0 and kept_groups.stdout == "deny\n",
              (kept_groups.returncode, kept_groups.stdout, kept_groups.stderr))
        lines = plain.stdout.splitlines()
        check("rootless podman with subordinate ids runs a container (devpts and all)",
              plain.returncode == 0 and "/dev/pts/ptmx" in lines,
              (plain.returncode, plain.stdout, plain.stderr))
        maps = [" ".join(line.split()) for line in lines[1:5]]
        check("...which has podman's namespace's ids one for one (0 0 1, 1 1 65536)",
              maps == ["0 0 1", f"1 1 {count}", "0 0 1", f"1 1 {count}"], lines)
        check("...and the same ids, groups included, as under runc",
              lines[:1] == seen["runc"][0].stdout.splitlines()[:1], (lines, seen["runc"][0].stdout))
        check("--user 1000:1000 --group-add 2000: runs as under runc",
              user1000.returncode == 0 and
              user1000.stdout == seen["runc"][1].stdout and
              user1000.stdout.startswith("uid=1000 gid=1000 groups=1000,2000"),
              (user1000.returncode, user1000.stdout, user1000.stderr, seen["runc"][1].stdout))
        written = {name: owner_of(f"{volume}/f-{name}") for name in runtimes}
        check("...a file it writes is the host's subordinate id base + 999, as runc's",
              written["stockade"] == (base + 999, gbase + 999) and
              written["stockade"] == written["runc"], written)
        check("exec --user 1000:1000 into a running container: as under runc",
              detached.returncode == 0 and execd.returncode == 0 and
              execd.stdout == seen["runc"][3].stdout and "out" in execd.stdout,
              (detached.stderr, execd.returncode, execd.stdout, execd.stderr,
               seen["runc"][3].stdout))
        check("--group-add 0: podman's namespace's gid 0 is given, as under runc",
              group0.returncode == 0 and group0.stdout == seen["runc"][4].stdout and
              "groups=0" in group0.stdout.replace(" ", ""),
              (group0.returncode, group0.stdout, group0.stderr, seen["runc"][4].stdout))
        owners = {name: owner_of(f"{work}/home/f-{name}") for name in runtimes}
        check("--userns=keep-id (three id ranges): the user's uid inside, its maps and a "
              "file it writes as under runc, the file the user's own on the host",
              keep_id.returncode == 0 and keep_id.stdout == seen["runc"][5].stdout and
              keep_id.stdout.startswith(f"uid={uid}({user}) gid={gid}({user})") and
              owners["stockade"] == (uid, gid) == owners["runc"],
              (keep_id.returncode, keep_id.stdout, keep_id.stderr, seen["runc"][5].stdout,
               owners))
        check("exec into a --userns=keep-id container, as its user and as its root: as under runc",
              kept_exec.returncode == 0 and kept_exec.stdout == seen["runc"][6].stdout and
              "out" in kept_exec.stdout and kept_root.returncode == 0 and
              kept_root.stdout == seen["runc"][7].stdout and
              kept_root.stdout.startswith("uid=0") and "out" in kept_root.stdout,
              (kept_exec.returncode, kept_exec.stdout, kept_exec.stderr, seen["runc"][6].stdout,
               kept_root.returncode, kept_root.stdout, kept_root.stderr, seen["runc"][7].stdout))
    finally:
        if made_user:
            subprocess.run(["pkill", "-KILL", "-u", user], capture_output=True)
            subprocess.run(["userdel", user], capture_output=True)
            for path in ("/etc/subuid", "/etc/subgid"):
                with open(path) as f:
                    kept = [line for line in f if not line.startswith(user + ":")]
                with open(path, "w") as f:
                    f.writelines(kept)
        shutil.rmtree(work, ignore_errors=True)
    left = os.path.exists(work)
    check("nothing left: the user, its block, its files",
          not left and subordinate_base(user, "/etc/subuid") is None, work)
    finish()


if __name__ == "__main__":
    main()
