#!/bin/sh
# The suite from a checkout uid 65534 cannot enter (root's home, a 0700
# `mktemp -d`): in a mount namespace of its own, the build tree's parent is
# covered by an empty 0700 tmpfs with only the build tree bound back into it,
# which 65534 then cannot reach; one case of the integration suite runs there
# in both modes. It passes only through the stage (tests/suite/stage.sh).
# Nothing outside the namespace changes.
#   sh tests/suite/unreachable_build.sh BUILD_DIR INTEGRATION_BINARY CASE
set -eu
[ $# -eq 3 ] || { echo "usage: $0 BUILD_DIR INTEGRATION_BINARY CASE" >&2; exit 2; }
if [ "$(id -u)" -ne 0 ]; then
    echo "covering the build tree's parent needs root (a mount namespace of the initial user namespace)" >&2
    [ "${CI:-}" = true ] && exit 1
    exit 77
fi
build=$(cd "$1" && pwd)
parent=$(dirname "$build")
[ "$parent" != / ] || { echo "the build tree is at /$(basename "$build"): no parent to cover" >&2; exit 1; }

exec unshare --mount --propagation private sh -eu -c '
    parent=$1 name=$2 binary=$3 case=$4
    # The original parent stays reachable for root through /mnt, a tmpfs of
    # this namespace only.
    mount -t tmpfs -o mode=0700 stockade-hold /mnt
    mkdir /mnt/parent
    mount --bind "$parent" /mnt/parent
    mount -t tmpfs -o mode=0700 stockade-unreachable "$parent"
    mkdir "$parent/$name"
    mount --bind "/mnt/parent/$name" "$parent/$name"
    if setpriv --reuid 65534 --regid 65534 --clear-groups test -e "$parent/$name"; then
        echo "uid 65534 still reaches $parent/$name: the test would prove nothing" >&2
        exit 1
    fi
    exec "$binary" "$case"
' sh "$parent" "$(basename "$build")" "$2" "$3"
