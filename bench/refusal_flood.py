#!/usr/bin/env python3
"""What a flood of refused system calls costs stockade, measured from the host.

Usage: bench/refusal_flood.py STOCKADE PROBE_DIR [--procs N] [--seconds S] [--mode root|user|both]

Runs `stockade-refusal-flood N S` (tests/probe/refusal_flood.cpp: N processes
calling keyctl in a loop for S seconds) in a sandbox, and samples stockade's
own CPU time (utime + stime of its process, not of its children: the
sandbox's CPU is not in it) from /proc/PID/stat every 20 ms until it exits.
Prints, per mode:

  host_cpu_ms     stockade's CPU by the last sample, as the host sees it
  core_fraction   host_cpu_ms over the run's wall time
  record_cpu_ms   the record's supervisor_cpu_ms
  calls, refused  the flood's own tally, and the record's keyctl count,
                  with stockade's CPU per refusal
  budget ran out  how often the supervisor's refusal budget was empty
                  (--log-level debug's count)

then a second run that floods until killed under --timeout 3, and prints the
status the record gives it and how long stockade took to end it (the
timeout holds if that is near 3 s; a second past it is init's grace).

`user` runs stockade as uid 65534 when this script is root (PROBE_DIR and
STOCKADE must be readable by it). Not a test: nothing here asserts a time.

Example:
  bench/refusal_flood.py build/stockade build/tests --mode both
"""
import argparse
import json
import os
import sys
import tempfile
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


def own_cpu_ms(pid):
    """utime + stime of `pid` (fields 14 and 15 of /proc/PID/stat), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: split after the last ')'.
    fields = text[text.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) * 1000 // CLK_TCK


def run(argv, as_user, log):
    def drop():
        if as_user:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)

    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            drop()
            os.dup2(os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666), 2)
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    last = 0
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        sample = own_cpu_ms(pid)
        if sample is not None:
            last = sample
        time.sleep(0.02)
    with open(log, errors="replace") as f:
        text = f.read()
    os.unlink(log)
    tag = "the refusal budget ran out "
    exhausted = text[text.index(tag) + len(tag):].split()[0] if tag in text else "?"
    return last, time.monotonic() - start, os.waitstatus_to_exitcode(status), exhausted


def flood(stockade, probe_dir, procs, seconds, as_user, scratch, timeout):
    result = os.path.join(scratch, f"flood-{os.getpid()}-{time.monotonic_ns()}.json")
    argv = [os.path.abspath(stockade), "run", "--quiet", "--log-level", "debug", "--result",
            result, "--mount",
            f"{os.path.abspath(probe_dir)}:/probe", "--timeout", timeout, "--",
            "/probe/stockade-refusal-flood", str(procs), f"{seconds:g}"]
    # The flood prints its tally: read it back from the record's stdout tail.
    host_ms, wall, code, exhausted = run(argv, as_user, result + ".log")
    with open(result) as f:
        record = json.load(f)
    os.unlink(result)
    tally = dict(kv.split("=") for kv in record["stdout"]["tail"].split())
    refused = sum(d["count"] for d in record.get("denials", []) if d["syscall"] == "keyctl")
    return host_ms, wall, code, record, tally, refused, exhausted


def main():
    parser = argparse.ArgumentParser(usage=__doc__)
    parser.add_argument("stockade")
    parser.add_argument("probe_dir")
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--mode", choices=["root", "user", "both"], default="root")
    args = parser.parse_args()
    modes = ["root", "user"] if args.mode == "both" else [args.mode]
    with tempfile.TemporaryDirectory(prefix="refusal-flood-") as scratch:
        os.chmod(scratch, 0o1777)
        for mode in modes:
            as_user = mode == "user" and os.geteuid() == 0
            host_ms, wall, code, record, tally, refused, exhausted = flood(
                args.stockade, args.probe_dir, args.procs, args.seconds, as_user, scratch,
                str(int(args.seconds) + 30))
            print(f"{mode}: flood of {args.procs} x {args.seconds:g} s: status {record['status']}, "
                  f"wall {wall:.2f} s, host_cpu_ms {host_ms}, core_fraction {host_ms / 1000 / wall:.3f}, "
                  f"record_cpu_ms {record.get('supervisor_cpu_ms')}, "
                  f"calls {tally.get('calls')}, eperm {tally.get('eperm')}, record keyctl {refused} "
                  f"({host_ms * 1000 / max(refused, 1):.1f} us of stockade's CPU each), "
                  f"budget ran out {exhausted} times")
            argv_timeout = "3"
            result = os.path.join(scratch, f"timeout-{mode}.json")
            argv = [os.path.abspath(args.stockade), "run", "--quiet", "--log-level", "debug",
                    "--result", result,
                    "--mount", f"{os.path.abspath(args.probe_dir)}:/probe", "--timeout",
                    argv_timeout, "--", "/probe/stockade-refusal-flood", str(args.procs), "0"]
            host_ms, wall, code, exhausted = run(argv, as_user, result + ".log")
            with open(result) as f:
                record = json.load(f)
            refused = sum(d["count"] for d in record.get("denials", []) if d["syscall"] == "keyctl")
            print(f"{mode}: endless flood under --timeout {argv_timeout}: status {record['status']} "
                  f"({record['reason']}), exit {code}, wall {wall:.2f} s, host_cpu_ms {host_ms}, "
                  f"core_fraction {host_ms / 1000 / wall:.3f}, "
                  f"record_cpu_ms {record.get('supervisor_cpu_ms')}, record keyctl {refused}, "
                  f"budget ran out {exhausted} times")
    return 0


if __name__ == "__main__":
    sys.exit(main())
