#!/bin/sh
# Installs the Debian packages stockade needs to build and test. As root it
# runs apt-get; otherwise it prints the one command to run.
set -eu

# scripts/install-deps.sh [build|test]: `build` is what the binary needs
# (make demo, make install); `test` (the default) adds the suite's toolchain.

BUILD_PACKAGES="cmake ninja-build g++ make libseccomp-dev libcap-dev libboost-program-options-dev \
nlohmann-json3-dev nettle-dev libpugixml-dev libre2-dev"
# containerd: tests/oci/containerd.py runs a private daemon of its own (its
# package also enables containerd.service where systemd is PID 1). runc and
# crun: the OCI references (tests/oci/lifecycle.py, bench/oci_lifecycle.py);
# slirp4netns: podman's published port in tests/oci/podman.py; e2fsprogs:
# mkfs.ext4 and debugfs for the walk cache's loop-mounted worktree;
# python3-grpcio: tests/oci/cri.py's client of containerd's CRI plugin;
# python3-websocket: its client of the plugin's streaming server (Exec,
# Attach and PortForward over WebSocket, as kubectl's newer clients speak);
# containernetworking-plugins and iptables: its pod network (CNI's bridge,
# host-local, portmap's rules in the test's own network namespace); tini:
# its static build as a container's PID 1 that waits in sigtimedwait
# (tests/oci/pid1_signals.py).
TEST_PACKAGES="catch2 bubblewrap python3 python3-jsonschema python3-pytest nodejs git util-linux \
iproute2 nftables acl debootstrap clang libclang-rt-14-dev llvm-14 hyperfine qemu-system-x86 busybox-static \
uidmap libpython3.11-testsuite apparmor jq curl podman containerd runc crun slirp4netns e2fsprogs \
python3-grpcio python3-websocket containernetworking-plugins iptables tini"

case ${1:-test} in
    build) PACKAGES=$BUILD_PACKAGES ;;
    test)
        PACKAGES="$BUILD_PACKAGES $TEST_PACKAGES"
        # NodeSource's nodejs carries npm (and conflicts with Debian's); Debian's does not.
        command -v npm >/dev/null 2>&1 || PACKAGES="$PACKAGES npm"
        ;;
    *) echo "usage: $0 [build|test]" >&2; exit 2 ;;
esac

missing=""
for pkg in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $pkg"
    fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
    echo "stockade: installing:$missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
else
    echo "stockade: missing packages. Run as root:" >&2
    echo "  apt-get install -y$missing" >&2
    exit 1
fi
