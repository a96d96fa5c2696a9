#!/bin/sh
# `make install` and `make uninstall` into a throwaway DESTDIR (issue 23):
# install configures no tests and builds only the binary, which is installed
# stripped and runs; uninstall refuses, removing nothing, when a file changed
# since install made it, when asked for another PREFIX, or when its record
# names a path outside DESTDIR/PREFIX; then it removes every file and every
# directory install made, and nothing else: the tree is left as it was.
# Usage: sh tests/package/make_install_test.sh SOURCE_DIR INSTALL_BUILD
# INSTALL_BUILD is the install's build directory (ctest passes a sibling of
# its build tree, at the same depth, so that the compiler cache, which keys
# on paths relative to the build directory, serves the objects already built).
set -eu
[ $# -eq 2 ] || { echo "usage: $0 SOURCE_DIR INSTALL_BUILD" >&2; exit 2; }
src=$1
mkdir -p "$2"
build=$(cd "$2" && pwd)
stage=$(mktemp -d /var/tmp/stockade-install.XXXXXX)
trap 'rm -rf "$stage"' EXIT
prefix=/opt/stockade-install-test
fail() { echo "FAIL $*"; exit 1; }
run_make() { make -s -C "$src" INSTALL_BUILD="$build" DESTDIR="$stage" PREFIX="$prefix" JOBS=2 "$@"; }
# What must survive: a directory above PREFIX that existed, and a file in it.
mkdir -p "$stage/opt"
echo "not stockade's" >"$stage/opt/keep.txt"
snapshot() { (cd "$stage" && find . -printf '%p %y %m %s\n' | sort); }
before=$(snapshot)
rm -f "$build/installed.txt"

run_make install
root=$stage$prefix
bin=$root/bin/stockade
grep -qx "BUILD_TESTING:BOOL=OFF" "$build/CMakeCache.txt" || fail "the install build configures the tests"
if ninja -C "$build" -t targets all | grep -q "stockade_unit_tests\|stockade_integration_tests\|stockade-probe"; then
    fail "the install build has test targets"
fi
[ -x "$bin" ] || fail "no $bin"
if readelf -S "$bin" | grep -q "\.debug_\|\.symtab"; then fail "$bin is not stripped"; fi
"$bin" --version >/dev/null || fail "the installed binary does not run"
"$bin" profile show held-test >/dev/null || fail "the installed binary finds no profile"
for f in share/man/man1/stockade.1 share/bash-completion/completions/stockade \
    share/stockade/profiles/held-test.json share/stockade/apparmor/stockade-apparmor; do
    [ -f "$root/$f" ] || fail "not installed: $f"
done
[ ! -e "$stage/etc" ] || fail "a staged install wrote under DESTDIR/etc"
installed=$(snapshot)

# The guard: each refusal removes nothing.
expect_refused() {
    what=$1
    shift
    if out=$("$@" 2>&1); then fail "uninstall $what: not refused: $out"; fi
    echo "$out" | grep -q "refused" || fail "uninstall $what: no reason given: $out"
    [ "$(snapshot)" = "$installed" ] || fail "uninstall $what: removed something although refused"
}
# Backups are kept outside the stage, which the snapshot compares whole.
man=$root/share/man/man1/stockade.1
cp "$man" "$build/man.orig"
echo "a local edit" >>"$man"
installed=$(snapshot)
expect_refused "of a changed file" run_make uninstall
cp "$build/man.orig" "$man"
installed=$(snapshot)
expect_refused "for another PREFIX" make -s -C "$src" INSTALL_BUILD="$build" DESTDIR="$stage" \
    PREFIX=/opt/elsewhere uninstall
cp "$build/installed.txt" "$build/record.orig"
victim=$stage/opt/keep.txt
echo "file $(sha256sum <"$victim" | cut -d' ' -f1) $victim" >>"$build/installed.txt"
expect_refused "of a path outside PREFIX" run_make uninstall
cp "$build/record.orig" "$build/installed.txt"
echo "file $(sha256sum <"$victim" | cut -d' ' -f1) $root/../keep.txt" >>"$build/installed.txt"
expect_refused "of a path with .." run_make uninstall
mv "$build/record.orig" "$build/installed.txt"
rm -f "$build/man.orig"

run_make uninstall
after=$(snapshot)
[ "$after" = "$before" ] || {
    echo "FAIL uninstall did not leave the tree as it was:"
    echo "$before" >"$stage/.before"
    echo "$after" >"$stage/.after"
    diff "$stage/.before" "$stage/.after" || true
    exit 1
}
[ ! -e "$build/installed.txt" ] || fail "the install record is left"
echo "ok: installed stripped under $prefix, refused 4 unsafe uninstalls, uninstalled to the tree it found"
