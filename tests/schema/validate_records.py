#!/usr/bin/python3
"""The records stockade prints besides its result and verdict, each validated
against its published JSON Schema in docs/, as root and as uid 65534:
`check --json`, `profile secret-names --json`, `bench --json` (with and
without bubblewrap beside it), a dev server's ready event and `ps --json`
while it runs. The TypeScript client's types are generated from the same
schemas (clients/typescript/scripts/generate.mjs), so a record that drifts
from its schema fails here before a harness sees it."""
import json
import os
import socket
import subprocess
import sys
import tempfile

import jsonschema

STOCKADE, DOCS = sys.argv[1], sys.argv[2]


def validator(name):
    schema = json.load(open(os.path.join(DOCS, name + ".schema.json")))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


SCHEMAS = {n: validator(n) for n in ["check", "secret-names", "bench", "ready", "ps"]}
failures = []
checked = []


def demote():
    os.setgroups([])
    os.setresgid(65534, 65534, 65534)
    os.setresuid(65534, 65534, 65534)


def stockade(mode, args, cwd, timeout=120):
    return subprocess.run([STOCKADE] + args, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, preexec_fn=demote if mode == "rootless" else None)


def check(mode, what, schema, text):
    try:
        record = json.loads(text)
    except ValueError as e:
        failures.append(f"{mode} {what}: not JSON ({e}): {text[:300]!r}")
        return None
    errors = sorted(SCHEMAS[schema].iter_errors(record), key=lambda e: list(e.path))
    for e in errors[:5]:
        failures.append(f"{mode} {what}: {list(e.path)}: {e.message}")
    # Every machine output names its schema (issue 23): `schema` is
    # stockade.NAME/v1 for docs/NAME.schema.json, asserted here rather than
    # left to the schema file, which could drop the field and still validate.
    named = [("", record)]
    if schema == "ps" and isinstance(record, dict):
        named += [(f"servers[{i}]", e) for i, e in enumerate(record.get("servers", []))]
    for where, part in named:
        tag = part.get("schema") if isinstance(part, dict) else None
        if tag != f"stockade.{schema}/v1":
            failures.append(f"{mode} {what}{' ' + where if where else ''}: schema is {tag!r}, "
                            f"expected 'stockade.{schema}/v1' naming docs/{schema}.schema.json")
    checked.append(f"{mode} {what}")
    return record


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def records(mode, cwd):
    p = stockade(mode, ["check", "--json"], cwd)
    check(mode, "check --json", "check", p.stdout)

    # Where no user namespace can be had (issue 18): the tier object says the
    # lower tier. stockade-userns-blocker is staged beside the probe.
    blocker = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(STOCKADE))), "probe",
                           "stockade-userns-blocker")
    p = subprocess.run([blocker, "--", STOCKADE, "check", "--json"], cwd=cwd, capture_output=True,
                       text=True, timeout=120, preexec_fn=demote if mode == "rootless" else None)
    blocked = check(mode, "check --json where user namespaces are refused", "check", p.stdout)
    if blocked is not None and blocked.get("tier", {}).get("tier") != "landlock":
        failures.append(f"{mode} check --json, blocked: tier {blocked.get('tier')!r}, expected landlock")

    p = stockade(mode, ["profile", "secret-names", "--json"], cwd)
    check(mode, "profile secret-names --json", "secret-names", p.stdout)

    for extra in ([], ["--compare", "bwrap"]):
        p = stockade(mode, ["bench", "--runs", "2", "--warmup", "1", "--json"] + extra, cwd)
        if p.returncode != 0:
            failures.append(f"{mode} bench {extra}: exit {p.returncode}: {p.stderr[-500:]}")
            continue
        got = check(mode, "bench --json " + " ".join(extra), "bench", p.stdout)
        if got is not None and extra and got["comparison"] is None:
            failures.append(f"{mode} bench --compare bwrap: comparison is null")

    # A dev server: the ready event on stdout, then ps --json while it runs.
    name = f"schema-{mode}-{os.getpid()}"
    port = free_port()
    p = stockade(mode, ["serve", "--quiet", "--name", name, "--port", str(port), "--detach", "--",
                        "python3", "-m", "http.server", "--bind", "127.0.0.1", str(port)], cwd)
    try:
        if p.returncode != 0:
            failures.append(f"{mode} serve: exit {p.returncode}: {p.stderr[-500:]}")
            return
        lines = [line for line in p.stdout.splitlines() if line.strip()]
        if len(lines) != 1:
            failures.append(f"{mode} serve: expected one ready line, got {p.stdout!r}")
        else:
            check(mode, "serve's ready event", "ready", lines[0])
        p = stockade(mode, ["ps", "--json"], cwd)
        listed = check(mode, "ps --json", "ps", p.stdout)
        if listed is not None and name not in [e.get("name") for e in listed.get("servers", [])]:
            failures.append(f"{mode} ps --json: {name} not listed: {p.stdout[:500]}")
    finally:
        stockade(mode, ["stop", name], cwd)


for mode in ("root", "rootless"):
    with tempfile.TemporaryDirectory(prefix="stockade-records-") as cwd:
        os.chmod(cwd, 0o777)
        records(mode, cwd)

for line in checked:
    print("validated:", line)
if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
if len(checked) != 14:
    print(f"expected 14 records validated, got {len(checked)}", file=sys.stderr)
    sys.exit(1)
