#!/bin/sh
# A clean Debian 12 root for the package test (tests/package/deb_test.sh):
# debootstrap's minbase, nothing of the project in it. Made once, as root,
# into STOCKADE_CLEAN_ROOT (default /var/cache/stockade-test/bookworm), from
# the mirror apt already uses; kept for the next run. This is an install
# step, like apt-get: the test itself talks to no network.
set -eu
ROOT=${STOCKADE_CLEAN_ROOT:-/var/cache/stockade-test/bookworm}
[ -x "$ROOT/bin/sh" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "stockade: the package test needs a clean Debian root; as root run: sh scripts/clean-root.sh" >&2
    exit 0
fi
mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $2 ~ /^http/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
echo "stockade: making a clean Debian 12 root for the package test in $ROOT (debootstrap, ~30 s)" >&2
rm -rf "$ROOT.tmp"
mkdir -p "$(dirname "$ROOT")"
debootstrap --variant=minbase bookworm "$ROOT.tmp" "$mirror" >/dev/null
mv "$ROOT.tmp" "$ROOT"
