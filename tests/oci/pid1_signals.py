#!/usr/bin/env python3
"""Signals to an OCI container reach its command as they would reach runc's
PID 1 (issue 19; runtime/child/command_signals_in_child.h), driven with
stockade's own create, start, kill, state and delete on a busybox-static
rootfs made here, as root or as uid 65534.

usage: pid1_signals.py STOCKADE root|rootless

runc's command is PID 1 of the container's pid namespace, where the kernel
drops every signal it has no handler for (but SIGKILL and SIGSTOP from the
host); stockade's init is PID 1 and passes a signal on only when the command
catches it. So, as under runc: a SIGTERM the command does not catch leaves
it running (podman stop then ends it with SIGKILL at its timeout: 137, not
143), while SIGALRM, SIGWINCH, SIGPWR, SIGUSR1 and real-time signals
(SIGRTMIN too, once the supervisor's "end it now" in a run) reach a command
that traps them; SIGKILL ends the container (the subreaper reaps init dead
of it). In a pid namespace joined by path (root only: rootless joins are
refused) the command is not PID 1 under runc either, and an untrapped
SIGTERM ends it. tini, which waits in sigtimedwait with nothing caught or
blocked, gets its SIGTERM. As root, a command that becomes uid 1000 (as
gosu leaves an entrypoint) without CAP_KILL in its sets still gets SIGTERM,
and a straggler of that uid is killed at the end (init keeps CAP_KILL). Each check is ordered by what the container writes, not by
time: a signal sent after the one judged, with a higher number (sigwaitinfo
takes the lowest pending first), is trapped and written only once the first
has been dropped or passed on.
Exit 77 (a skip) when the host cannot run a mode; CI=true makes it a failure.
"""
import json
import os

from lifecycle import (check, make_bundle, probes_dir, reap, reaped, run_oci_script, state_of,
                       wait_for)
from oci_common import host_pids_running

APPLETS = ["sh", "sleep", "echo", "cat", "touch", "true"]
TINI = "/usr/bin/tini-static"
# Trapped by the command: SIGUSR1, SIGALRM, SIGWINCH, SIGPWR, SIGRTMIN
# (34), SIGRTMIN+16 (50). SIGTERM is not.
TRAPPED = ["USR1", "ALRM", "WINCH", "PWR", "34", "50"]


def lines(path):
    try:
        with open(path) as f:
            return f.read().split()
    except OSError:
        return []


def own_namespace(rt, scratch, owner, base):
    out = os.path.join(scratch, "out")
    sigs = os.path.join(out, "sigs")
    traps = "; ".join(f"trap 'echo {s} >> /out/sigs' {s}" for s in TRAPPED)
    b = make_bundle(scratch, "trapping", ["sh", "-c", f"{traps}; touch /out/ready; "
                                          "while :; do sleep 0.2; done"], owner, base)
    r = rt("create", "--bundle", b, "t1")
    check("create of a command that traps six signals but SIGTERM", r.returncode == 0, r.stderr)
    init = (state_of(rt, "t1") or {}).get("pid", 0)
    rt("start", "t1")
    check("it runs, its traps set", wait_for(lambda: os.path.exists(os.path.join(out, "ready"))))

    # SIGTERM (15) first, then SIGPWR (30): if both wait in init, SIGTERM
    # is taken first; a SIGTERM passed on would end the shell at once
    # (its default action), and "PWR" would never be written.
    rt("kill", "t1", "TERM")
    rt("kill", "t1", "PWR")
    check("a SIGTERM the command does not trap is dropped, as PID 1 drops it: a later "
          "trapped SIGPWR is written and the container runs on",
          wait_for(lambda: "PWR" in lines(sigs)) and
          (state_of(rt, "t1") or {}).get("status") == "running", (lines(sigs), state_of(rt, "t1")))

    for sig in TRAPPED:
        if sig != "PWR":
            rt("kill", "t1", sig)
    check("SIGUSR1, SIGALRM, SIGWINCH, SIGRTMIN and SIGRTMIN+16 reach the command's traps "
          "(before, SIGALRM, SIGWINCH and SIGPWR were dropped and SIGRTMIN ended the container)",
          wait_for(lambda: sorted(lines(sigs)) == sorted(TRAPPED)) and
          (state_of(rt, "t1") or {}).get("status") == "running", (lines(sigs), state_of(rt, "t1")))

    r = rt("kill", "t1", "KILL")
    check("SIGKILL ends it: the subreaper reaps init dead of SIGKILL (137 to conmon), as "
          "runc's PID 1", r.returncode == 0 and wait_for(lambda: init in reaped) and
          os.WIFSIGNALED(reaped[init]) and os.WTERMSIG(reaped[init]) == 9,
          (r.stderr, reaped.get(init)))
    wait_for(lambda: (state_of(rt, "t1") or {}).get("status") == "stopped")
    kills = [k.get("signal") for k in (state_of(rt, "t1") or {}).get("stockade", {})
             .get("ending", {}).get("kills", [])]
    check("the record keeps every kill asked, in order", kills == [15, 30, 10, 14, 28, 34, 50, 9],
          kills)
    r = rt("delete", "t1")
    check("delete", r.returncode == 0, r.stderr)

    # A shell loop with no SIGTERM trap: what podman's stop meets most.
    # SIGTERM then SIGKILL, as podman stop -t N sends them.
    b = make_bundle(scratch, "plain", ["sh", "-c", "touch /out/plain; trap 'echo HUP > "
                                       "/out/plain-hup' HUP; while :; do sleep 0.2; done"],
                    owner, base)
    rt("create", "--bundle", b, "t2")
    init = (state_of(rt, "t2") or {}).get("pid", 0)
    rt("start", "t2")
    wait_for(lambda: os.path.exists(os.path.join(out, "plain")))
    rt("kill", "t2", "15")
    rt("kill", "t2", "1")
    check("stop's SIGTERM to a shell without a trap for it: dropped (a later trapped SIGHUP "
          "is written), the container running",
          wait_for(lambda: os.path.exists(os.path.join(out, "plain-hup"))) and
          (state_of(rt, "t2") or {}).get("status") == "running", state_of(rt, "t2"))
    rt("kill", "t2", "9")
    check("...and its SIGKILL ends it", wait_for(lambda: init in reaped) and
          os.WIFSIGNALED(reaped[init]) and os.WTERMSIG(reaped[init]) == 9, reaped.get(init))
    rt("delete", "t2")


def waiting_init(rt, scratch, owner, base):
    """tini as the command, as `docker run --init` and many images' ENTRYPOINT
    have it: it blocks every signal and waits for them in sigtimedwait, so
    while it waits neither SigCgt nor SigBlk names SIGTERM. runc's kernel
    queues the signal for it (real_blocked): it must get SIGTERM here too,
    and pass it on to its child, whose trap ends the container with 0."""
    out = os.path.join(scratch, "out")
    b = make_bundle(scratch, "tini", ["/bin/tini-static", "-s", "--", "sh", "-c",
                                      "trap 'echo TERM > /out/tini-term; exit 0' TERM; "
                                      "touch /out/tini-ready; while :; do sleep 0.1; done"],
                    owner, base)
    r = rt("create", "--bundle", b, "tini")
    init = (state_of(rt, "tini") or {}).get("pid", 0)
    rt("start", "tini")
    wait_for(lambda: os.path.exists(os.path.join(out, "tini-ready")))
    rt("kill", "tini", "TERM")
    check("tini waiting in sigtimedwait, nothing caught or blocked, gets SIGTERM and passes it "
          "on: its child's trap runs and the container ends with 0",
          r.returncode == 0 and wait_for(lambda: os.path.exists(os.path.join(out, "tini-term")))
          and wait_for(lambda: init in reaped) and os.WIFEXITED(reaped[init]) and
          os.WEXITSTATUS(reaped[init]) == 0, (r.stderr, reaped.get(init)))
    rt("delete", "--force", "tini")


def uid_changing_command(rt, scratch, owner, base):
    """As root: a command that becomes another uid, as gosu or su-exec leave
    an image's entrypoint, its sets holding CAP_SETUID and CAP_SETGID but
    not CAP_KILL. init keeps CAP_KILL all the same: a SIGTERM the command
    catches reaches it (without CAP_KILL init's kill failed with EPERM), and
    a straggler of that uid is gone at the command's end, its ending
    recorded: the command is PID 1 of its own pid namespace, which ends with
    it as runc's does (before, init's kill(-1) missed it without CAP_KILL,
    and its waitpid never returned)."""
    caps = ["CAP_SETUID", "CAP_SETGID", "CAP_AUDIT_WRITE"]

    def bundle(name, args):
        b = make_bundle(scratch, name, args, owner, base)
        with open(os.path.join(b, "config.json")) as f:
            config = json.load(f)
        config["process"]["capabilities"] = {k: caps for k in ("bounding", "effective",
                                                               "permitted")}
        with open(os.path.join(b, "config.json"), "w") as f:
            json.dump(config, f)
        return b

    ending = lambda cid: (state_of(rt, cid) or {}).get("stockade", {}).get("ending", {})
    b = bundle("as-1000", ["/bin/stockade-probe", "trap-as", "1000", "1000"])
    r = rt("create", "--bundle", b, "u1")
    rt("start", "u1")
    running = wait_for(lambda: host_pids_running(["/bin/stockade-probe", "trap-as", "1000",
                                                  "1000"]) != [])
    rt("kill", "u1", "TERM")
    check("a command that became uid 1000 (its sets without CAP_KILL) gets the SIGTERM it "
          "catches from init (its handler exits 43)",
          r.returncode == 0 and running and
          wait_for(lambda: (state_of(rt, "u1") or {}).get("status") == "stopped" and
                   "reported" in ending("u1")) and
          ending("u1").get("command") == {"exitStatus": 43},
          (r.stderr, running, ending("u1")))
    rt("delete", "--force", "u1")

    b = bundle("left-1000", ["sh", "-c", "/bin/stockade-probe sleep-as 1000 1001 & "
                             "while ! grep -q '^Uid:.*1000' /proc/$!/status; do sleep 0.05; done; "
                             "exit 0"])
    r = rt("create", "--bundle", b, "u2")
    rt("start", "u2")
    check("...and a straggler of uid 1000 left by a command that exits 0 ends with the "
          "command's pid namespace (as under runc: init kills none), the ending recorded",
          r.returncode == 0 and
          wait_for(lambda: (state_of(rt, "u2") or {}).get("status") == "stopped" and
                   "reported" in ending("u2")) and
          ending("u2").get("command") == {"exitStatus": 0} and
          ending("u2").get("stragglersKilled") == 0 and
          not host_pids_running(["/bin/stockade-probe", "sleep-as", "1000", "1001"]),
          (r.stderr, ending("u2")))
    rt("delete", "--force", "u2")


def joined_namespace(rt, scratch, owner, base):
    """Root only (rootless joins are refused): the command is not PID 1."""
    first = make_bundle(scratch, "first", ["sleep", "5151"], owner, base)
    r = rt("create", "--bundle", first, "first")
    rt("start", "first")
    first_init = (state_of(rt, "first") or {}).get("pid", 0)
    check("a first container, its own pid namespace", r.returncode == 0 and first_init > 0,
          r.stderr)
    b = make_bundle(scratch, "joined", ["sleep", "5252"], owner, base)
    with open(os.path.join(b, "config.json")) as f:
        config = json.load(f)
    config["linux"]["namespaces"] = [n for n in config["linux"]["namespaces"]
                                     if n["type"] != "pid"] + [
        {"type": "pid", "path": f"/proc/{first_init}/ns/pid"}]
    with open(os.path.join(b, "config.json"), "w") as f:
        json.dump(config, f)
    r = rt("create", "--bundle", b, "joined")
    rt("start", "joined")
    wait_for(lambda: host_pids_running(["sleep", "5252"]))
    rt("kill", "joined", "TERM")
    ending = lambda: (state_of(rt, "joined") or {}).get("stockade", {}).get("ending", {})
    check("in a joined pid namespace the command is not PID 1 (under runc neither): an "
          "untrapped SIGTERM ends it", r.returncode == 0 and
          wait_for(lambda: (state_of(rt, "joined") or {}).get("status") == "stopped" and
                   "reported" in ending()) and ending().get("command") == {
              "signal": 15, "coreDumped": False}, (r.stderr, ending()))
    check("...and the first container's command, PID 1's child, runs on",
          len(host_pids_running(["sleep", "5151"])) == 1)
    rt("delete", "joined")
    reap()
    rt("delete", "--force", "first")


def command_is_pid1(rt, scratch, owner, base, mode):
    """The command is PID 1 of a pid namespace of its own, as runc's: $$ and
    /proc/self say 1, /proc/1 is the command (init, a level up, is not
    listed), `kill -9 $$` and `kill -9 1` from inside leave it running (the
    kernel ignores them for a namespace's init), and its own /proc keeps
    the spec's masks and read-only paths (timer_list reads empty, /proc/sys
    refuses a write). As root, `exec` lands beside it: its $$ is its
    /proc/self, and /proc/1 is the command."""
    out = os.path.join(scratch, "out")
    # /proc/self/stat read by the shell itself (a redirection), not a child.
    script = ("echo $$ > /out/p1-pid; read -r st < /proc/self/stat; echo ${st%% *} > /out/p1-self; "
              "cat /proc/1/cmdline > /out/p1-cmd1; "
              "for p in /proc/[0-9]*; do echo ${p#/proc/}; done > /out/p1-procs; "
              "kill -9 $$; kill -9 1; echo alive > /out/p1-alive; "
              "read -r line < /proc/timer_list; echo \"[$line]\" > /out/p1-timers; "
              "(echo stockade > /proc/sys/kernel/hostname) 2> /out/p1-sysctl; "
              "touch /out/p1-ready; while :; do sleep 0.2; done")
    b = make_bundle(scratch, "pid1", ["sh", "-c", script], owner, base)
    r = rt("create", "--bundle", b, "p1")
    rt("start", "p1")
    ready = wait_for(lambda: os.path.exists(os.path.join(out, "p1-ready")))
    read = lambda name: open(os.path.join(out, "p1-" + name)).read() if ready else ""
    check("the command is PID 1 of its own pid namespace: $$ and /proc/self are 1",
          r.returncode == 0 and ready and read("pid").split() == ["1"] and
          read("self").split() == ["1"], (r.stderr, read("pid"), read("self")))
    check("...its /proc lists it as 1, and nothing of init's",
          read("cmd1").startswith("sh\0") and "1" in read("procs").split(),
          (read("cmd1"), read("procs")))
    check("...kill -9 $$ and kill -9 1 from inside leave it running, as for runc's PID 1",
          read("alive").strip() == "alive" and
          (state_of(rt, "p1") or {}).get("status") == "running")
    check("...and its own /proc keeps the spec's masks (timer_list empty) and read-only paths "
          "(/proc/sys)", read("timers").strip() == "[]" and
          "Read-only file system" in read("sysctl"), (read("timers"), read("sysctl")))
    if mode == "root":
        e = rt("exec", "p1", "sh", "-c",
               "echo $$; read -r st < /proc/self/stat; echo ${st%% *}; cat /proc/1/cmdline")
        said = e.stdout.split("\n") if e.returncode == 0 else []
        check("exec joins the command's pid namespace: its $$ is its /proc/self, and /proc/1 "
              "is the command", len(said) >= 3 and said[0] == said[1] and said[0] not in
              ("", "1") and said[2].startswith("sh\0"), (e.returncode, e.stdout, e.stderr))
    rt("delete", "--force", "p1")


def procs_elsewhere(rt, scratch, owner, base, mode):
    """The spec's masks hold on the command's own /proc however the spec
    spells or places it: proc at "/proc/" (a trailing slash), and proc at
    /proc2 only, with the image's /proc holding a `self` link and a fake
    fd directory that would lead a mount named by /proc/self/fd/N to
    /elsewhere (the command's mounts are made on fds, never through the
    container's /proc): timer_list reads empty, /proc2/sys refuses a
    write, /elsewhere stays an empty directory."""
    out = os.path.join(scratch, "out")
    rootfs = os.path.join(scratch, "rootfs")
    for d in ("evil/fd", "elsewhere", "proc2"):
        os.makedirs(os.path.join(rootfs, d), exist_ok=True)
    if not os.path.lexists(os.path.join(rootfs, "proc", "self")):
        os.symlink("/evil", os.path.join(rootfs, "proc", "self"))
    for fd in range(3, 64):
        link = os.path.join(rootfs, "evil", "fd", str(fd))
        if not os.path.lexists(link):
            os.symlink("/elsewhere", link)
    for name, where in (("slash", "/proc/"), ("proc2", "/proc2")):
        config = json.loads(json.dumps(base))
        for m in config["mounts"]:
            if m.get("type") == "proc":
                m["destination"] = where
        config["linux"]["maskedPaths"] = [p.replace("/proc/", where.rstrip("/") + "/")
                                          for p in config["linux"].get("maskedPaths", [])]
        config["linux"]["readonlyPaths"] = [p.replace("/proc/", where.rstrip("/") + "/")
                                            for p in config["linux"].get("readonlyPaths", [])]
        at = where.rstrip("/")
        script = (f"read -r line < {at}/timer_list; echo \"[$line]\" > /out/pe-{name}-timers; "
                  f"(echo stockade > {at}/sys/kernel/hostname) 2> /out/pe-{name}-sysctl; "
                  f"ls -A /elsewhere > /out/pe-{name}-elsewhere; echo done > /out/pe-{name}-done")
        b = make_bundle(scratch, "pe-" + name, ["sh", "-c", script], owner, config)
        r = rt("run", "--bundle", b, "pe-" + name)
        read = lambda what: (open(os.path.join(out, f"pe-{name}-{what}")).read()
                             if os.path.exists(os.path.join(out, f"pe-{name}-{what}")) else None)
        check(f"proc at {where!r}: the spec's masks and read-only paths hold on the command's "
              "view, and nothing lands on /elsewhere",
              r.returncode == 0 and read("done") is not None and
              (read("timers") or "").strip() == "[]" and
              "Read-only file system" in (read("sysctl") or "") and read("elsewhere") == "",
              (r.returncode, r.stderr, read("timers"), read("sysctl"), read("elsewhere")))


def procs_odd(rt, scratch, owner, base, mode):
    """A proc whose destination is an image's link is refused at create,
    naming the mount and the link, and leaves nothing (the command's proc
    would stack wherever the link led, not on init's)."""
    rootfs = os.path.join(scratch, "rootfs")
    os.makedirs(os.path.join(rootfs, "proc3"), exist_ok=True)
    if not os.path.lexists(os.path.join(rootfs, "proclink")):
        os.symlink("/proc3", os.path.join(rootfs, "proclink"))
    config = json.loads(json.dumps(base))
    for m in config["mounts"]:
        if m.get("type") == "proc":
            m["destination"] = "/proclink"
    config["linux"]["maskedPaths"] = [p.replace("/proc/", "/proclink/")
                                      for p in config["linux"].get("maskedPaths", [])]
    config["linux"]["readonlyPaths"] = [p.replace("/proc/", "/proclink/")
                                        for p in config["linux"].get("readonlyPaths", [])]
    b = make_bundle(scratch, "po-link", ["true"], owner, config)
    r = rt("create", "--bundle", b, "po-link")
    check("proc at an image's link: create refused, naming the mount and the link, nothing left",
          r.returncode != 0 and "mount proc at /proclink" in r.stderr and
          "RESOLVE_NO_SYMLINKS): ELOOP" in r.stderr and
          "po-link" not in os.listdir(rt.root), (r.returncode, r.stderr))


def command_stays_pid2(rt, scratch, owner, base, mode):
    """A host file bound over /proc/cpuinfo (as lxcfs binds its files)
    cannot be made again on a proc of the command's own: the command is
    PID 2 there, `state` says so, its view keeps the bind, and init stands
    in for PID 1, passing on a SIGTERM the command traps."""
    out = os.path.join(scratch, "out")
    fake = os.path.join(scratch, "fake-cpuinfo")
    with open(fake, "w") as f:
        f.write("fake cpuinfo\n")
    os.chmod(fake, 0o644)
    config = json.loads(json.dumps(base))
    config["mounts"].append({"destination": "/proc/cpuinfo", "type": "bind", "source": fake,
                             "options": ["bind", "ro"]})
    script = ("echo $$ > /out/p2-pid; read -r line < /proc/cpuinfo; echo \"$line\" > /out/p2-cpu; "
              "trap 'echo TERM > /out/p2-term; exit 0' TERM; touch /out/p2-ready; "
              "while :; do sleep 0.1; done")
    b = make_bundle(scratch, "pid2", ["sh", "-c", script], owner, config)
    r = rt("create", "--bundle", b, "p2")
    enforced = (state_of(rt, "p2") or {}).get("stockade", {}).get("enforced", {})
    rt("start", "p2")
    ready = wait_for(lambda: os.path.exists(os.path.join(out, "p2-ready")))
    read = lambda name: open(os.path.join(out, "p2-" + name)).read().strip() if ready else ""
    check("a host bind over /proc/cpuinfo: the command is PID 2, state says so, the bind holds",
          r.returncode == 0 and ready and read("pid") == "2" and
          read("cpu") == "fake cpuinfo" and enforced.get("command pid") == "2",
          (r.stderr, read("pid"), read("cpu"), enforced))
    rt("kill", "p2", "TERM")
    check("...and init passes on the SIGTERM it traps", wait_for(
        lambda: os.path.exists(os.path.join(out, "p2-term"))))
    rt("delete", "--force", "p2")


def cases(rt, scratch, owner, base, mode):
    command_is_pid1(rt, scratch, owner, base, mode)
    procs_elsewhere(rt, scratch, owner, base, mode)
    procs_odd(rt, scratch, owner, base, mode)
    command_stays_pid2(rt, scratch, owner, base, mode)
    own_namespace(rt, scratch, owner, base)
    waiting_init(rt, scratch, owner, base)
    if mode == "root":
        uid_changing_command(rt, scratch, owner, base)
        joined_namespace(rt, scratch, owner, base)


if __name__ == "__main__":
    run_oci_script("stockade-pid1sig-", APPLETS + ["grep", "ls"], cases,
                   extra_bins=lambda binary: [TINI, os.path.join(probes_dir(binary),
                                                                 "stockade-probe")],
                   needs=[(TINI, "tini is not installed (scripts/install-deps.sh test)")])
