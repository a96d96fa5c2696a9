#!/usr/bin/env python3
"""linux.resources.hugepageLimits and unified, which a kubelet sends every
container (a hugetlb limit of 0 for each huge page size the node has; on
cgroup v2 memory.oom.group 1), on this host (issue 19), driven with
stockade's own create and delete on a busybox-static rootfs made here, as
root or as uid 65534. Their enforcement is tested on a cgroup v2 kernel
(tests/vm/vm_cases.sh, oci-v2-hugetlb-unified).

usage: kubelet_resources.py STOCKADE root|rootless

This host's hugetlb controller is on its hybrid v2 tree, with the others on
v1: as root both are refused at create naming the field (no v1 hugetlb
hierarchy; unified on v1), as runc refuses both here in the same run, and
nothing is left (--root, cgroups); a unified key naming a cgroup.* file
that is no limit, and a page size the host lacks or spells otherwise, are
refused before anything is made. Rootless: refused, no cgroup of its own.
Exit 77 (a skip) when the host cannot run a mode; CI=true makes it a failure.
"""
import glob
import json
import os
import subprocess

from lifecycle import check, make_bundle, run_oci_script
from oci_common import skip

APPLETS = ["sh", "true"]
RUNC = "/usr/sbin/runc"


def bundle_with(scratch, name, owner, base, resources, cgroups_path=None, for_runc=False):
    b = make_bundle(scratch, name, ["true"], owner, base)
    with open(os.path.join(b, "config.json")) as f:
        config = json.load(f)
    config["linux"]["resources"] = resources
    if for_runc:  # runc as root runs without a user namespace (it needs mappings)
        config["linux"]["namespaces"] = [n for n in config["linux"]["namespaces"]
                                         if n["type"] != "user"]
        config["linux"].pop("uidMappings", None)
        config["linux"].pop("gidMappings", None)
        config["root"]["path"] = os.path.join(scratch, "rootfs")  # runc takes no link
    if cgroups_path:
        config["linux"]["cgroupsPath"] = cgroups_path
    with open(os.path.join(b, "config.json"), "w") as f:
        json.dump(config, f)
    return b


def cgroup_dirs(name):
    return glob.glob(f"/sys/fs/cgroup/*/{name}") + glob.glob(f"/sys/fs/cgroup/{name}")


def cases(rt, scratch, owner, base, mode):
    tag = f"stockade-kubeletres-{os.getpid()}"
    try:
        kubelet_hugepages = {"hugepageLimits": [{"pageSize": "2MB", "limit": 0}]}
        kubelet_unified = {"unified": {"memory.oom.group": "1"}}
        asks = [
            ("hugepageLimits, a v1 host without the hugetlb hierarchy", kubelet_hugepages,
             ["linux.resources.hugepageLimits", "no cgroup v1 hugetlb hierarchy",
              "/sys/fs/cgroup/hugetlb"] if mode == "root" else
             ["linux.resources.hugepageLimits", "rootless", "no cgroup of its own"]),
            ("unified on cgroup v1", kubelet_unified,
             ["linux.resources.unified", "cgroup v2 files", "cgroups are v1"]
             if mode == "root" else
             ["linux.resources.unified", "rootless", "no cgroup of its own"]),
            ("a unified cgroup.procs (it would move a process, not limit one)",
             {"unified": {"cgroup.procs": "1"}},
             ["linux.resources.unified", "cgroup.procs", "only cgroup.max.depth"]),
            ("a page size the host lacks", {"hugepageLimits": [{"pageSize": "4MB", "limit": 0}]},
             ["linux.resources.hugepageLimits[0].pageSize", "not a huge page size this host has"]),
            ("a page size spelt otherwise than the kernel's files",
             {"hugepageLimits": [{"pageSize": "2048KB", "limit": 0}]},
             ["linux.resources.hugepageLimits[0].pageSize", "spelt 2MB"]),
        ]
        for i, (what, resources, words) in enumerate(asks):
            path = f"/{tag}/c{i}" if mode == "root" else None
            b = bundle_with(scratch, f"c{i}", owner, base, resources, path)
            r = rt("create", "--bundle", b, f"c{i}")
            left = cgroup_dirs(f"{tag}/c{i}")
            check(f"{what}: create refused, naming it; nothing under --root, no cgroup left",
                  r.returncode == 1 and all(w in r.stderr for w in words) and
                  os.listdir(rt.root) == [] and left == [], (r.returncode, r.stderr, left))
        if mode == "root":
            # runc in the same run, the same two kubelet fields: it cannot
            # write them on this host either (its own words).
            check("runc is there to compare with (scripts/install-deps.sh test)",
                  os.path.exists(RUNC))
            runc_root = os.path.join(scratch, "runc-root")
            runc_words = ["cannot set hugetlb limit", "cannot use unified on cgroup v1"]
            for i, (what, resources, words) in enumerate(asks[:2]):
                b = bundle_with(scratch, f"r{i}", owner, base, resources, f"/{tag}/r{i}",
                                for_runc=True)
                r = subprocess.run([RUNC, "--root", runc_root, "run", "--bundle", b, f"r{i}"],
                                   capture_output=True, text=True, stdin=subprocess.DEVNULL,
                                   timeout=120)
                check(f"runc, the same run: {what} refused too",
                      r.returncode != 0 and runc_words[i] in r.stderr,
                      (r.returncode, r.stderr))
                subprocess.run([RUNC, "--root", runc_root, "delete", "--force", f"r{i}"],
                               capture_output=True)
    finally:
        for d in sorted(cgroup_dirs(f"{tag}/*"), reverse=True) + cgroup_dirs(tag):
            try:
                os.rmdir(d)
            except OSError:
                pass


if __name__ == "__main__":
    if not os.path.isdir("/sys/kernel/mm/hugepages/hugepages-2048kB"):
        skip("this kernel has no 2 MiB huge pages")
    if os.path.isdir("/sys/fs/cgroup/hugetlb") or not os.path.isdir("/sys/fs/cgroup/memory"):
        skip("the cases are this host's: cgroup v1 without a v1 hugetlb hierarchy")
    run_oci_script("stockade-kubeletres-", APPLETS, cases)
