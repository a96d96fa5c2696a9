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
dpkg-deb --field "$deb" Recommends | grep -qw bash-completion
# Without the bash-completion package (a plain shell that sources the file),
# completion still works and prints no error.
completed=$(env -i bash --norc --noprofile -c '. "$1"; COMP_WORDS=(stockade run --work);
    COMP_CWORD=2; _stockade; echo "${COMPREPLY[*]}"' sh \
    "$root/usr/share/bash-completion/completions/stockade" 2>&1)
test "$completed" = "--worktree --workdir" ||
    { echo "FAIL completion without bash-completion: $completed"; exit 1; }
# An installed profile is found by name beside the binary, before the built-in ones.
sed 's/"description": "[^"]*"/"description": "installed copy"/' \
    "$root/usr/share/stockade/profiles/held-test.json" > "$root/usr/share/stockade/profiles/local.json"
"$bin" profile show local | grep -q "installed copy"
"$bin" check >/dev/null
# The AppArmor profile for /usr/bin/stockade (Ubuntu's userns restriction):
# shipped under /usr/share/stockade/apparmor with its helper, never in /etc
# (an AppArmor 3 parser refuses it there at every boot); postinst runs the
# helper, which copies it only where the host's parser accepts it, and prerm
# takes it out again.
aa="$root/usr/share/stockade/apparmor"
grep -qx 'profile stockade /usr/bin/stockade flags=(unconfined) {' "$aa/stockade" ||
    { echo "FAIL the package's AppArmor profile does not attach to /usr/bin/stockade"; exit 1; }
grep -qx '  userns,' "$aa/stockade" ||
    { echo "FAIL the package's AppArmor profile does not grant userns"; exit 1; }
test -x "$aa/stockade-apparmor" || { echo "FAIL the package ships no AppArmor helper"; exit 1; }
if dpkg-deb -c "$deb" | grep -q ' \./etc/'; then
    echo "FAIL the package ships files under /etc: $(dpkg-deb -c "$deb" | grep ' \./etc/')"; exit 1
fi
if dpkg-deb --ctrl-tarfile "$deb" | tar -t | grep -q conffiles; then
    echo "FAIL the package declares conffiles"; exit 1
fi
for script in postinst prerm; do
    dpkg-deb --ctrl-tarfile "$deb" | tar -xO "./$script" |
        grep -qx 'helper=/usr/share/stockade/apparmor/stockade-apparmor' ||
        { echo "FAIL $script does not name the packaged helper"; exit 1; }
done
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./postinst | grep -q '^ *sh "$helper" install' ||
    { echo "FAIL postinst does not run the AppArmor helper"; exit 1; }
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./prerm | grep -q '^ *sh "$helper" remove' ||
    { echo "FAIL prerm does not run the AppArmor helper"; exit 1; }
mkdir -p "$root/work"
echo 'echo from-the-package' > "$root/work/job.sh"
out=$("$bin" run --worktree "$root/work" -- sh job.sh)
test "$out" = "from-the-package"

# The package on a clean Debian 12 (debootstrap minbase, made by
# scripts/clean-root.sh): a throwaway copy, the .deb installed with dpkg and
# its declared dependencies only (none), then `stockade check` and a job run
# there as root and as uid 65534. bubblewrap makes the copy the root of a
# mount namespace of its own (not a chroot, in which the kernel refuses user
# namespaces) and shares the host's /proc (a fresh procfs in a user namespace
# needs a fully visible one), /dev and /sys (for the cgroups).
CLEAN=${STOCKADE_CLEAN_ROOT:-/var/cache/stockade-test/bookworm}
if readelf -l "$bin" | grep -q "Requesting program interpreter"; then
    # The sanitizer build links its runtimes dynamically; the package ships
    # the release build, a static PIE, which the normal suite runs here.
    echo "clean Debian 12 root: not for this sanitized (dynamic) build"
    echo "1 passed, 0 failed"
    exit 0
fi
if [ ! -x "$CLEAN/bin/sh" ]; then
    if [ "${CI:-}" = "true" ]; then
        echo "FAIL no clean Debian root at $CLEAN (scripts/clean-root.sh makes it)"; exit 1
    fi
    echo "WARN SKIPPED, NOT TESTED: no clean Debian root at $CLEAN (run scripts/clean-root.sh as root)"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "FAIL the clean-root test installs a package and must run as root"; exit 1
fi
clean=$(mktemp -d /var/tmp/stockade-clean.XXXXXX)
trap 'rm -rf "$root" "$clean"' EXIT
cp -a "$CLEAN/." "$clean/"
cp "$deb" "$clean/tmp/stockade.deb"
said=$(chroot "$clean" dpkg -i /tmp/stockade.deb 2>&1)
# No AppArmor in the root: postinst says so in one line, writes nothing to
# /etc/apparmor.d and does not fail.
echo "$said" | grep -q '^stockade: AppArmor is not installed (no apparmor_parser)' ||
    { echo "FAIL postinst without AppArmor said: $said"; exit 1; }
test ! -e "$clean/etc/apparmor.d/stockade" ||
    { echo "FAIL dpkg -i wrote /etc/apparmor.d/stockade without AppArmor"; exit 1; }
grep -qx 'profile stockade /usr/bin/stockade flags=(unconfined) {' \
    "$clean/usr/share/stockade/apparmor/stockade" ||
    { echo "FAIL dpkg -i left no shipped AppArmor profile for /usr/bin/stockade"; exit 1; }
test -x "$clean/usr/bin/stockade"
mkdir -p "$clean/work"
echo 'echo from-a-clean-root' > "$clean/work/job.sh"
chown -R 65534:65534 "$clean/work"
inside() {
    bwrap --bind "$clean" / --bind /proc /proc --dev-bind /dev /dev --tmpfs /tmp --tmpfs /run \
        --bind /sys /sys --chdir / --die-with-parent -- "$@"
}
inside /usr/bin/stockade --version
inside /usr/bin/stockade check >/dev/null
out=$(inside /usr/bin/stockade run --worktree /work -- sh job.sh)
test "$out" = "from-a-clean-root" || { echo "FAIL root job said: $out"; exit 1; }
out=$(inside setpriv --reuid 65534 --regid 65534 --clear-groups \
      /usr/bin/stockade run --worktree /work -- sh job.sh)
test "$out" = "from-a-clean-root" || { echo "FAIL rootless job said: $out"; exit 1; }
# Debian 12's own AppArmor (3.0, the package scripts/clean-root.sh keeps
# beside the root) added, and the package configured again: its parser
# refuses the profile (no abi/4.0, no `userns` rule), so postinst says so and
# /etc/apparmor.d stays as AppArmor left it, with nothing there for
# apparmor.service to fail on at boot.
AA3_DEB=${STOCKADE_APPARMOR3_DEB:-$CLEAN.apparmor.deb}
if [ ! -f "$AA3_DEB" ]; then
    if [ "${CI:-}" = "true" ]; then
        echo "FAIL no Debian 12 apparmor package at $AA3_DEB (scripts/clean-root.sh fetches it)"; exit 1
    fi
    echo "WARN SKIPPED, NOT TESTED: no Debian 12 apparmor package at $AA3_DEB (run scripts/clean-root.sh as root)"
    aa3=skipped
else
    cp "$AA3_DEB" "$clean/tmp/apparmor.deb"
    chroot "$clean" dpkg -i /tmp/apparmor.deb >/dev/null 2>&1 ||
        { echo "FAIL Debian 12's apparmor did not install in the clean root"; exit 1; }
    chroot "$clean" apparmor_parser --version | head -n 1 | grep -q "version 3\." ||
        { echo "FAIL the clean root's apparmor_parser is not AppArmor 3"; exit 1; }
    said=$(chroot "$clean" dpkg -i /tmp/stockade.deb 2>&1)
    echo "$said" | grep -q '^stockade: /etc/apparmor.d/stockade not written: AppArmor parser version 3\..* refuses the profile' ||
        { echo "FAIL postinst under AppArmor 3 said: $said"; exit 1; }
    test "$(echo "$said" | grep -c '^stockade:')" = 1 ||
        { echo "FAIL postinst said more than one line: $said"; exit 1; }
    test ! -e "$clean/etc/apparmor.d/stockade" ||
        { echo "FAIL dpkg -i wrote /etc/apparmor.d/stockade, which AppArmor 3 refuses"; exit 1; }
    test -f "$clean/usr/share/stockade/apparmor/stockade" ||
        { echo "FAIL the shipped AppArmor profile is missing"; exit 1; }
    aa3="AppArmor 3.0 added: profile refused, said in one line, not in /etc/apparmor.d"
fi
# Removed, the binary and the shipped profile go; purged, nothing of the
# package is left, and /etc/apparmor.d never held it.
chroot "$clean" dpkg -r stockade >/dev/null
test ! -e "$clean/usr/bin/stockade" && test ! -e "$clean/usr/share/stockade/apparmor/stockade" ||
    { echo "FAIL dpkg -r left the binary or the shipped AppArmor profile"; exit 1; }
chroot "$clean" dpkg --purge stockade >/dev/null
test ! -e "$clean/usr/share/stockade" && test ! -e "$clean/etc/apparmor.d/stockade" ||
    { echo "FAIL dpkg --purge left /usr/share/stockade or /etc/apparmor.d/stockade"; exit 1; }
echo "clean Debian 12 root: installed with dpkg (no AppArmor: said so, /etc/apparmor.d untouched),"
echo "check and a job as root and as 65534; $aa3; removed and purged (nothing left)"

# The positive case: a throwaway copy of the Debian 13 root with AppArmor 4
# (scripts/apparmor-root.sh). There postinst's parse accepts the profile, so
# dpkg -i puts it in /etc/apparmor.d under the helper's marker (and loads
# nothing: AppArmor is not enabled in this kernel); trixie's parser accepts
# the file as installed, strictly. A copy an administrator edited is left
# alone by the next configure and by remove; an unedited one goes with
# remove.
AA_ROOT=${STOCKADE_APPARMOR_ROOT:-/var/cache/stockade-test/trixie-apparmor}
if [ ! -x "$AA_ROOT/usr/sbin/apparmor_parser" ]; then
    if [ "${CI:-}" = "true" ]; then
        echo "FAIL no apparmor_parser 4 root at $AA_ROOT (scripts/apparmor-root.sh makes it)"; exit 1
    fi
    echo "WARN SKIPPED, NOT TESTED: no apparmor_parser 4 root at $AA_ROOT (run scripts/apparmor-root.sh as root)"
    echo "3 passed, 0 failed"
    exit 0
fi
four=$(mktemp -d /var/tmp/stockade-trixie.XXXXXX)
trap 'rm -rf "$root" "$clean" "$four"' EXIT
cp -a "$AA_ROOT/." "$four/"
cp "$deb" "$four/tmp/stockade.deb"
profile="$four/etc/apparmor.d/stockade"
said=$(chroot "$four" dpkg -i /tmp/stockade.deb 2>&1)
echo "$said" | grep -qx 'stockade: installed the AppArmor profile /etc/apparmor.d/stockade' ||
    { echo "FAIL postinst under AppArmor 4 said: $said"; exit 1; }
if echo "$said" | grep -q loaded; then echo "FAIL postinst loaded a profile: $said"; exit 1; fi
head -n 1 "$profile" | grep -q "^# stockade-managed sha256 $(sha256sum < "$four/usr/share/stockade/apparmor/stockade" | cut -d ' ' -f 1) " ||
    { echo "FAIL the installed profile has no marker for the shipped copy: $(head -n 1 "$profile")"; exit 1; }
tail -n +2 "$profile" | cmp -s - "$four/usr/share/stockade/apparmor/stockade" ||
    { echo "FAIL the installed profile is not the shipped copy"; exit 1; }
out=$(bwrap --ro-bind "$four" / --dev /dev --proc /proc --tmpfs /tmp --unshare-all --die-with-parent -- \
    /usr/sbin/apparmor_parser --skip-kernel-load --skip-cache \
    --kernel-features /usr/share/apparmor-features/features --Werror --warn=all \
    /etc/apparmor.d/stockade 2>&1) || { echo "FAIL apparmor_parser 4 refuses the installed profile: $out"; exit 1; }
echo '  # a local edit' >> "$profile"
said=$(chroot "$four" dpkg -i /tmp/stockade.deb 2>&1)
echo "$said" | grep -q '^stockade: /etc/apparmor.d/stockade was changed locally: left as it is' ||
    { echo "FAIL reconfigure over an edited profile said: $said"; exit 1; }
chroot "$four" dpkg -r stockade >/dev/null 2>&1
tail -n 1 "$profile" | grep -qx '  # a local edit' ||
    { echo "FAIL dpkg -r did not leave the edited profile alone"; exit 1; }
sed -i '$d' "$profile"
chroot "$four" dpkg -i /tmp/stockade.deb >/dev/null 2>&1
said=$(chroot "$four" dpkg -r stockade 2>&1)
test ! -e "$profile" || { echo "FAIL dpkg -r left the profile stockade wrote: $said"; exit 1; }
chroot "$four" dpkg --purge stockade >/dev/null
test ! -e "$four/usr/share/stockade" || { echo "FAIL dpkg --purge left /usr/share/stockade"; exit 1; }
echo "Debian 13 root (AppArmor 4.1): dpkg -i wrote /etc/apparmor.d/stockade (marked, parsed strictly);"
echo "an edited copy kept on configure and remove; an unedited one removed with the package"
echo "4 passed, 0 failed"
