#!/bin/sh
# Issue 4: stockade's cgroup v2 path against real memory and pids
# controllers. The host this project is built on binds both controllers to
# cgroup v1, so the test boots a throwaway VM (qemu, software emulation: no
# KVM needed) on Debian's kernel with cgroup v2 only, from an initramfs of
# busybox, this stockade binary and tests/vm/vm_cases.sh, which runs the
# cases as root and as uid 65534 in a delegated subtree and prints one line
# per case. Nothing touches the host's cgroups or network.
# Usage: cgroup2_vm.sh STOCKADE   (the kernel: scripts/vm-kernel.sh)
set -eu
STOCKADE=$1
KERNEL=${STOCKADE_VM_KERNEL:-/var/cache/stockade-test/vmlinuz}
LOOP=${STOCKADE_VM_LOOP:-$(dirname "$KERNEL")/vm-loop.ko}
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -r "$KERNEL" ] || fail "no VM kernel at $KERNEL (as root: sh scripts/vm-kernel.sh, or make check)"
[ -r "$LOOP" ] || fail "no loop module for the VM kernel at $LOOP (as root: sh scripts/vm-kernel.sh)"
command -v mkfs.ext4 >/dev/null || fail "mkfs.ext4 is missing (e2fsprogs)"
command -v qemu-system-x86_64 >/dev/null || fail "qemu-system-x86_64 is missing (make deps)"
busybox=$(command -v busybox) || fail "busybox is missing (make deps: busybox-static)"
static() { ldd "$1" 2>&1 | grep -qE "not a dynamic executable|statically linked"; }
static "$busybox" || fail "$busybox is not static (make deps: busybox-static)"
static "$STOCKADE" || fail "$STOCKADE is not a static binary (a sanitizer build cannot run in the VM)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
mkdir -p "$root/usr/bin" "$root/usr/sbin" "$root/usr/lib" "$root/etc" "$root/proc" "$root/newroot"
ln -s usr/bin "$root/bin"
ln -s usr/sbin "$root/sbin"
ln -s usr/lib "$root/lib"
cp "$busybox" "$root/usr/bin/busybox"
for applet in $("$busybox" --list); do
    [ -e "$root/usr/bin/$applet" ] || ln -s busybox "$root/usr/bin/$applet"
done
cp "$STOCKADE" "$root/usr/bin/stockade"
${CC:-cc} -static -O2 -o "$root/usr/bin/as-user" "$here/as_user.c"
# Issue 21: an ext4 image with the casefold feature, its loop module, and a
# chattr +F (the VM's busybox has none).
${CC:-cc} -static -O2 -o "$root/usr/bin/casefold" "$here/casefold.c"
cp "$LOOP" "$root/usr/lib/loop.ko"
mkfs.ext4 -q -F -O casefold -E encoding=utf8 "$root/usr/lib/casefold.img" 16M >/dev/null
cp "$here/vm_cases.sh" "$root/usr/bin/stockade-vm-cases"
chmod 0755 "$root/usr/bin/stockade-vm-cases"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
# The initramfs's rootfs cannot be pivot_root'ed away from (the sandbox's
# pivot_root needs a real mount as the old root): copy it into a tmpfs first.
cat >"$root/init" <<'INIT'
#!/bin/sh
mount -t proc proc /proc
mount -t tmpfs -o mode=0755 newroot /newroot
for d in usr etc bin sbin lib; do cp -a /$d /newroot/; done
mkdir -p /newroot/proc /newroot/sys /newroot/dev /newroot/tmp /newroot/run
umount /proc
exec switch_root /newroot /usr/bin/stockade-vm-cases
INIT
chmod 0755 "$root/init"
(cd "$root" && find . | "$busybox" cpio -o -H newc 2>/dev/null) | gzip -1 >"$tmp/initrd.gz"

# cgroup_no_v1=all: every controller on the v2 hierarchy, as on a host
# booted with systemd.unified_cgroup_hierarchy=1.
boot() {  # one run of the VM, its console in $tmp/console
    timeout 600 qemu-system-x86_64 -accel tcg -cpu max -m 1024 -smp 2 -nographic -no-reboot \
        -kernel "$KERNEL" -initrd "$tmp/initrd.gz" \
        -append "console=ttyS0 rdinit=/init panic=-1 quiet cgroup_no_v1=all" \
        </dev/null >"$tmp/console" 2>&1 &
    vm=$!
    # A guest kernel that locked up never recovers: stop waiting for it.
    while kill -0 "$vm" 2>/dev/null; do
        if grep -qE 'soft lockup|rcu_preempt detected stalls' "$tmp/console"; then
            kill "$vm" 2>/dev/null || true
            break
        fi
        sleep 2
    done
    wait "$vm" || true
}
# A soft lockup or an RCU stall is the emulated guest's kernel spinning with
# preemption off (seen once, session 11: both vCPUs, 354 s, in the first
# case; three boots of the same binary after it passed). A program cannot
# do that to a kernel, so it is no verdict on stockade: say so, with the
# guest's own lines, and boot once more. A second lockup fails the test.
boot
if ! tr -d '\r' <"$tmp/console" | grep -q '^VMDONE$' &&
    grep -qE 'soft lockup|rcu_preempt detected stalls' "$tmp/console"; then
    echo "the VM's kernel locked up (not a case's verdict); its lines, then a second boot:"
    tr -d '\r' <"$tmp/console" | grep -E 'soft lockup|rcu_preempt|^CASE' | head -n 8
    boot
fi
tr -d '\r' <"$tmp/console" | grep -E '^(kernel|CASE|PLANNED|VMDONE)' || true
planned=$(tr -d '\r' <"$tmp/console" | grep -o 'PLANNED [0-9]*' | head -n 1 | cut -d' ' -f2)
passed=$(tr -d '\r' <"$tmp/console" | grep -c '^CASE PASS ' || true)
failed=$(tr -d '\r' <"$tmp/console" | grep -c '^CASE FAIL ' || true)
tr -d '\r' <"$tmp/console" | grep -q '^VMDONE$' || {
    tail -n 40 "$tmp/console" >&2
    fail "the VM did not finish its cases"
}
[ -n "$planned" ] && [ "$passed" -eq "$planned" ] && [ "$failed" -eq 0 ] ||
    fail "$passed of ${planned:-?} cases passed, $failed failed"
echo "all $passed cases passed in the cgroup v2 VM"
