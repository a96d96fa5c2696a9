#!/bin/sh
# A Debian 13 (trixie) root holding apparmor_parser 4, for the AppArmor
# profile's syntax test (tests/package/apparmor_profile_test.sh). Debian 12's
# parser (3.0) predates the `userns` rule the profile exists for and refuses
# it, so the test parses with trixie's (4.1) instead. debootstrap's minbase
# plus the apparmor package, made once, as root, into
# STOCKADE_APPARMOR_ROOT (default /var/cache/stockade-test/trixie-apparmor),
# from the mirror apt already uses; kept for the next run. This is an install
# step, like apt-get: the test itself talks to no network.
set -eu
ROOT=${STOCKADE_APPARMOR_ROOT:-/var/cache/stockade-test/trixie-apparmor}
[ -x "$ROOT/usr/sbin/apparmor_parser" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "stockade: the AppArmor profile test needs a Debian 13 root with apparmor; as root run: sh scripts/apparmor-root.sh" >&2
    exit 0
fi
mirror=$(sh "$(dirname "$0")/debian-mirror.sh")
echo "stockade: making a Debian 13 root with apparmor_parser 4 in $ROOT (debootstrap, ~1 min)" >&2
rm -rf "$ROOT.tmp"
mkdir -p "$(dirname "$ROOT")"
debootstrap --variant=minbase --include=apparmor trixie "$ROOT.tmp" "$mirror" >/dev/null
# The parser only is wanted: apt's lists and downloaded packages are not.
rm -rf "$ROOT.tmp/var/cache/apt/archives/"*.deb "$ROOT.tmp/var/lib/apt/lists/"*
mv "$ROOT.tmp" "$ROOT"
