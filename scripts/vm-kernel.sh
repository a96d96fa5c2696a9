#!/bin/sh
# The kernel for the cgroup v2 VM test (tests/vm/cgroup2_vm.sh): Debian 12's
# cloud kernel, whose cgroup v2 has the memory and pids controllers this
# host's hybrid layout keeps on v1. Fetched once, as root, with apt from the
# mirror apt already uses, unpacked (not installed: the host's boot is not
# touched) into STOCKADE_VM_KERNEL (default /var/cache/stockade-test/vmlinuz).
# An install step, like apt-get: the test itself talks to no network.
set -eu
KERNEL=${STOCKADE_VM_KERNEL:-/var/cache/stockade-test/vmlinuz}
# Its loop module, from the same package (a module loads only into the
# kernel it was built with): the VM mounts an ext4 image with case-folding
# directories (issue 21), which this host's kernel, built without Unicode,
# cannot.
LOOP=${STOCKADE_VM_LOOP:-$(dirname "$KERNEL")/vm-loop.ko}
[ -r "$KERNEL" ] && [ -r "$LOOP" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "stockade: the cgroup v2 VM test needs a kernel; as root run: sh scripts/vm-kernel.sh" >&2
    exit 0
fi
# The versioned package the metapackage points at today.
package=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null |
    sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-cloud-amd64\)$/\1/p' | head -n 1)
if [ -z "$package" ]; then
    apt-get update -qq
    package=$(apt-cache depends linux-image-cloud-amd64 |
        sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-cloud-amd64\)$/\1/p' | head -n 1)
fi
[ -n "$package" ] || { echo "stockade: no linux-image-cloud-amd64 in apt's lists" >&2; exit 1; }
echo "stockade: fetching $package for the cgroup v2 VM test into $KERNEL" >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 0755 "$work"  # apt's _apt user downloads into it
(cd "$work" && apt-get download -q "$package" >/dev/null 2>&1)
dpkg-deb -x "$work"/*.deb "$work/x"
mkdir -p "$(dirname "$KERNEL")"
cp "$work"/x/boot/vmlinuz-* "$KERNEL.tmp"
loop=$(find "$work/x/lib/modules" -name loop.ko | head -n 1)
[ -n "$loop" ] || { echo "stockade: $package holds no loop.ko" >&2; exit 1; }
cp "$loop" "$LOOP.tmp"
mv "$KERNEL.tmp" "$KERNEL"
mv "$LOOP.tmp" "$LOOP"
