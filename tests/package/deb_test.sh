#!/bin/sh
# The Debian package, built by CPack, unpacked into a throwaway root with no
# other files of the project: its binary finds its own profiles, `check` runs,
# and a sandboxed job passes. (The binary is a static PIE: it needs nothing
# from the root but what the sandbox mounts.)
set -eu
BUILD=$1
root=$(mktemp -d /var/tmp/stockade-deb.XXXXXX)
trap 'rm -rf "$root"' EXIT
cd "$BUILD"
cpack -G DEB >/dev/null
deb=$(ls -t stockade_*_amd64.deb | head -1)
dpkg-deb --info "$deb" | grep -q "Package: stockade"
if dpkg-deb --field "$deb" Depends | grep -q .; then
    echo "FAIL the package declares dependencies: $(dpkg-deb --field "$deb" Depends)"; exit 1
fi
dpkg-deb -x "$deb" "$root"
bin="$root/usr/bin/stockade"
"$bin" --version
"$bin" profile show dev-server >/dev/null
test -f "$root/usr/share/man/man1/stockade.1"
test -f "$root/usr/share/bash-completion/completions/stockade"
# An installed profile is found by name beside the binary, before the built-in ones.
sed 's/"description": "[^"]*"/"description": "installed copy"/' \
    "$root/usr/share/stockade/profiles/held-test.json" > "$root/usr/share/stockade/profiles/local.json"
"$bin" profile show local | grep -q "installed copy"
"$bin" check >/dev/null
mkdir -p "$root/work"
echo 'echo from-the-package' > "$root/work/job.sh"
out=$("$bin" run --worktree "$root/work" -- sh job.sh)
test "$out" = "from-the-package"
echo "1 passed, 0 failed"
