#!/bin/sh
# A clean Debian 12 root for the package test (tests/package/deb_test.sh):
# debootstrap's minbase, nothing of the project in it. Made once, as root,
# into STOCKADE_CLEAN_ROOT (default /var/cache/stockade-test/bookworm), from
# the mirror apt already uses; kept for the next run. This is an install
# step, like apt-get: the test itself talks to no network.
set -eu
ROOT=${STOCKADE_CLEAN_ROOT:-/var/cache/stockade-test/bookworm}
# Beside it, Debian 12's apparmor package (3.0), which the test installs into
# a copy of the root to show the package leaves /etc/apparmor.d alone where
# that parser refuses its profile: taken from apt's cache, where
# install-deps.sh installed it on a Debian 12 host, else fetched with
# `apt-get download` (Debian 12 hosts only: elsewhere apt would give another
# release's).
fetch_apparmor3() {
    [ -f "$ROOT.apparmor.deb" ] && return 0
    [ "$(id -u)" -eq 0 ] || return 0
    [ "$(. /etc/os-release 2>/dev/null; echo "${VERSION_CODENAME:-}")" = bookworm ] || {
        echo "stockade: not a Debian 12 host: no Debian 12 apparmor package for the package test" >&2
        return 0; }
    deb=$(ls /var/cache/apt/archives/apparmor_3.*_amd64.deb 2>/dev/null | tail -n 1)
    if [ -z "$deb" ]; then
        dir=$(mktemp -d)
        (cd "$dir" && apt-get download apparmor >/dev/null) && deb=$(ls "$dir"/apparmor_3.*_amd64.deb 2>/dev/null | tail -n 1)
    fi
    [ -n "$deb" ] && cp "$deb" "$ROOT.apparmor.deb.tmp" && mv "$ROOT.apparmor.deb.tmp" "$ROOT.apparmor.deb"
    [ -n "${dir:-}" ] && rm -rf "$dir"
    return 0
}
if [ -x "$ROOT/bin/sh" ]; then fetch_apparmor3; exit 0; fi
if [ "$(id -u)" -ne 0 ]; then
    echo "stockade: the package test needs a clean Debian root; as root run: sh scripts/clean-root.sh" >&2
    exit 0
fi
mirror=$(sh "$(dirname "$0")/debian-mirror.sh")
echo "stockade: making a clean Debian 12 root for the package test in $ROOT (debootstrap, ~30 s)" >&2
rm -rf "$ROOT.tmp"
mkdir -p "$(dirname "$ROOT")"
debootstrap --variant=minbase bookworm "$ROOT.tmp" "$mirror" >/dev/null
mv "$ROOT.tmp" "$ROOT"
fetch_apparmor3
