#!/usr/bin/python3
"""Runs stockade through endings of every kind, as root and as uid 65534, and
validates each real result record against docs/result.schema.json."""
import json
import os
import subprocess
import sys
import tempfile

import jsonschema

STOCKADE, SCHEMA = sys.argv[1], sys.argv[2]
schema = json.load(open(SCHEMA))
validator = jsonschema.Draft202012Validator(schema)

CASES = [
    # (name, args before --, command, expected status, expected reason, expected exit)
    ("passed", [], ["true"], "passed", None, 0),
    ("failed", [], ["sh", "-c", "exit 3"], "failed", "nonzero_exit", 3),
    ("signal", [], ["sh", "-c", "kill -TERM $$"], "failed", "signal", 143),
    ("timeout", ["--timeout", "0.3"], ["sleep", "30"], "timed_out", "timeout", 124),
    ("not_found", [], ["/no/such/program"], "error", "not_found", 127),
    ("output_limit", ["--output-limit", "64k"], ["yes"], "blocked", "output_limit", 137),
    ("memory", ["--memory", "48m"],
     ["python3", "-c", "b = bytearray(256 << 20)"], "blocked", "memory_limit", 137),
    ("refused", ["--memory", "-1"], ["true"], "blocked", "invalid_bounds", 125),
    ("binary_tail", [], ["sh", "-c", "printf '\\377\\376ok'"], "passed", None, 0),
    # Refused calls (keyctl, x86_64 250): "denials", answered by the supervisor,
    # whose own CPU the record carries ("supervisor_cpu_ms", required).
    ("denials", [], ["python3", "-c", "import ctypes\nfor _ in range(3): "
                     "ctypes.CDLL(None).syscall(250, 0x7fffffff, 0, 0, 0, 0)"],
     "passed", None, 0),
    # Ended by a bound's own signal: the record's "bound" names it.
    ("file_size", ["--profile", "{small_files}"],
     ["dd", "if=/dev/zero", "of=/tmp/big", "bs=64k", "count=64"], "failed", "signal", 128 + 25),
    ("cpu_time", ["--cpu-time", "1"], ["sh", "-c", "while :; do :; done"],
     "blocked", "cpu_time", 128 + 24),
    # The same signal raised by the command itself is no bound's: not named.
    ("self_sigxcpu", ["--cpu-time", "5"], ["sh", "-c", "kill -XCPU $$"],
     "failed", "signal", 128 + 24),
    # A failure the layout explains, from the output: "detail" (read-only
    # /usr, no /dev/sda), each entry marked as the output's.
    ("layout", [], ["sh", "-c", "touch /usr/x; cat /dev/sda"], "failed", "nonzero_exit", 1),
    # A worktree whose .git file names a gitdir that is not honoured: "git".
    ("git_refused", ["--worktree", "{wt}"], ["true"], "passed", None, 0),
    # A worktree with a hidden, a read-only and a created name: "worktree_masks".
    ("worktree_masks", ["--worktree", "{wt}"], ["sh", "-c", ": > /repo/pkg/.npmrc"],
     "passed", None, 0),
    # Where no user namespace can be had (issue 18; "{blocked}": started through
    # stockade-userns-blocker): refused, and the lower tier where allowed.
    ("tier_refused", ["{blocked}"], ["true"], "error", "sandbox_unavailable", 125),
    ("lower_tier", ["{blocked}", "--min-tier", "landlock", "--worktree", "{wt}"], ["true"],
     "passed", None, 0),
    # A user's own filter (enforced.seccomp "custom", stockade's privileged-
    # file guard with it) and none ("stockade-guard" as root: the guard
    # alone; rootless null), docs/seccomp.md.
    ("custom_filter", ["--profile", "{custom_filter}"], ["true"], "passed", None, 0),
    ("no_filter", ["--profile", "{no_filter}"], ["true"], "passed", None, 0),
]
# The filter each case's record must name, by mode.
FILTERS = {"custom_filter": {"root": "custom", "rootless": "custom"},
           "no_filter": {"root": "stockade-guard", "rootless": None}}
# The tier each case's record must name.
TIERS = {"tier_refused": "full", "lower_tier": "landlock"}
BLOCKER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(STOCKADE))), "probe",
                       "stockade-userns-blocker")


def demote():
    os.setgroups([])
    os.setresgid(65534, 65534, 65534)
    os.setresuid(65534, 65534, 65534)


# The bound each case must name; every other case has none.
BOUNDS = {
    "file_size": {"limit": "file_size", "rlimit": "RLIMIT_FSIZE", "value": 1 << 20, "unit": "bytes"},
    "cpu_time": {"limit": "cpu_time", "rlimit": "RLIMIT_CPU", "value": 1, "unit": "seconds"},
}


# The `detail` entries each case must have, as (kind, limit or fact, evidence);
# every other case has none.
DETAILS = {
    "file_size": [("bound", "file_size", "signal")],
    "cpu_time": [("bound", "cpu_time", "cpu_accounting")],
    "memory": [("bound", "memory", "cgroup_events")],
    "layout": [("layout", "read_only", "stderr"), ("layout", "absent", "stderr")],
}


def held_test_profile(directory, name, change):
    """The held-test profile, changed by `change(profile)`, as a file."""
    path = os.path.join(os.path.dirname(os.path.abspath(SCHEMA)), "..", "profiles", "held-test.json")
    profile = json.load(open(path))
    change(profile)
    out = os.path.join(directory, name + ".json")
    with open(out, "w") as f:
        json.dump(profile, f)
    os.chmod(out, 0o644)
    return out


def small_files_profile(directory):
    """The held-test profile with a 1 MiB file size bound."""
    return held_test_profile(directory, "small-files",
                             lambda p: p["limits"].__setitem__("file_size", "1m"))


def profile_with_seccomp(directory, name, seccomp):
    """The held-test profile with its "seccomp" replaced."""
    return held_test_profile(directory, name, lambda p: p.__setitem__("seccomp", seccomp))


def allow_all_filter(directory):
    out = os.path.join(directory, "allow-all.json")
    with open(out, "w") as f:
        json.dump({"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_X86_64"],
                   "syscalls": []}, f)
    os.chmod(out, 0o644)
    return out


failures = 0
for mode in ("root", "rootless"):
    for name, args, command, status, reason, code in CASES:
        if mode == "rootless" and name == "memory":
            continue  # rootless here has no writable cgroup: RLIMIT_DATA, a different ending
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o777)
            result = os.path.join(tmp, "result.json")
            wt = os.path.join(tmp, "wt")
            os.mkdir(wt)
            os.chmod(wt, 0o777)
            with open(os.path.join(wt, ".git"), "w") as f:
                f.write("gitdir: /nonexistent/.git/worktrees/x\n")
            if name == "worktree_masks":
                os.makedirs(os.path.join(wt, "pkg"))
                os.chmod(os.path.join(wt, "pkg"), 0o777)
                for rel in (".env", "AGENTS.md"):
                    with open(os.path.join(wt, rel), "w") as f:
                        f.write("canary\n")
            if name == "lower_tier" and mode == "root":
                os.chown(wt, 65534, 65534)  # the lower tier runs as the worktree's owner
            prefix = []
            if "{blocked}" in args:
                args = [a for a in args if a != "{blocked}"]
                prefix = [BLOCKER, "--"]
            args = [a.replace("{wt}", wt) for a in args]
            if "{small_files}" in args:
                args = [a.replace("{small_files}", small_files_profile(tmp)) for a in args]
            if "{custom_filter}" in args:
                custom = profile_with_seccomp(tmp, "custom", allow_all_filter(tmp))
                args = [a.replace("{custom_filter}", custom) for a in args]
            if "{no_filter}" in args:
                args = [a.replace("{no_filter}", profile_with_seccomp(tmp, "none", "none"))
                        for a in args]
            proc = subprocess.run([*prefix, STOCKADE, "run", "--quiet", "--result", result, *args, "--", *command],
                                  preexec_fn=demote if mode == "rootless" else None,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
            label = f"{mode}/{name}"
            try:
                record = json.load(open(result))
            except (OSError, ValueError) as e:
                print(f"FAIL {label}: no readable result ({e}); stderr={proc.stderr!r}")
                failures += 1
                continue
            errors = sorted(validator.iter_errors(record), key=lambda e: list(e.path))
            problems = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors]
            if name == "git_refused" and record.get("git", {}).get("gitdir") != "refused":
                problems.append(f"git {record.get('git')!r}, expected a refused gitdir")
            if name == "denials" and {"syscall": "keyctl", "count": 3} not in record.get("denials", []):
                problems.append(f"denials {record.get('denials')!r}, expected keyctl x3")
            if name == "worktree_masks":
                masks = record.get("worktree_masks", {})
                seen = {k: masks.get(k, {}).get("first") for k in ("hidden", "read_only", "created")}
                if seen != {"hidden": ["/repo/.env"], "read_only": ["/repo/AGENTS.md"],
                            "created": ["/repo/pkg/.npmrc"]}:
                    problems.append(f"worktree_masks {masks!r}")
            if name in FILTERS and \
                    record.get("enforced", {}).get("seccomp") != FILTERS[name][mode]:
                problems.append(f"enforced.seccomp {record.get('enforced', {}).get('seccomp')!r}, "
                                f"expected {FILTERS[name][mode]!r}")
            if name in TIERS and record.get("tier") != TIERS[name]:
                problems.append(f"tier {record.get('tier')!r}, expected {TIERS[name]!r}")
            if record.get("status") != status:
                problems.append(f"status {record.get('status')!r}, expected {status!r}")
            if record.get("reason") != reason:
                problems.append(f"reason {record.get('reason')!r}, expected {reason!r}")
            if record.get("bound") != BOUNDS.get(name):
                problems.append(f"bound {record.get('bound')!r}, expected {BOUNDS.get(name)!r}")
            detail = [(d.get("kind"), d.get("limit", d.get("fact")), d.get("evidence"))
                      for d in record.get("detail", [])]
            if detail != DETAILS.get(name, []):
                problems.append(f"detail {record.get('detail')!r}, expected {DETAILS.get(name, [])!r}")
            if proc.returncode != code:
                problems.append(f"exit {proc.returncode}, expected {code}")
            if problems:
                failures += 1
                print(f"FAIL {label}: " + "; ".join(problems))
            else:
                print(f"ok   {label}")
print(f"{failures} failed")
sys.exit(1 if failures else 0)
