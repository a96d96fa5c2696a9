#!/bin/sh
# The AppArmor profile (contrib/apparmor/stockade.in) as `make install` and
# the .deb write it, parsed and compiled, never loaded, by apparmor_parser 4
# from the Debian 13 root scripts/apparmor-root.sh makes: Debian 12's parser
# (3.0) predates the `userns` rule and refuses it. The parse is strict
# (every warning an error), against the feature set trixie's parser ships, so
# a `userns` rule the parser would not enforce fails too; broken copies of
# the profile and a feature set without user-namespace mediation must be
# refused, or the parse proves nothing.
set -eu
SRC=$(cd "$(dirname "$0")/../.." && pwd)
ROOT=${STOCKADE_APPARMOR_ROOT:-/var/cache/stockade-test/trixie-apparmor}
if [ ! -x "$ROOT/usr/sbin/apparmor_parser" ]; then
    if [ "${CI:-}" = "true" ]; then
        echo "FAIL no apparmor_parser 4 root at $ROOT (scripts/apparmor-root.sh makes it)"; exit 1
    fi
    echo "WARN SKIPPED, NOT TESTED: no apparmor_parser 4 root at $ROOT (run scripts/apparmor-root.sh as root)"
    exit 77
fi
work=$(mktemp -d /var/tmp/stockade-apparmor.XXXXXX)
trap 'rm -rf "$work"' EXIT
passed=0
pass() { passed=$((passed + 1)); echo "ok $passed $1"; }
fail() { echo "FAIL $1"; exit 1; }

# The same step the install runs (CMakeLists.txt), for the .deb's path.
cmake -DIN="$SRC/contrib/apparmor/stockade.in" -DOUT="$work/stockade" -DBIN=/usr/bin/stockade \
    -P "$SRC/cmake/apparmor_profile.cmake"
# A path the profile language would misread is refused when it is written.
if cmake -DIN="$SRC/contrib/apparmor/stockade.in" -DOUT="$work/spaced" \
    -DBIN="/opt/my tools/stockade" -P "$SRC/cmake/apparmor_profile.cmake" 2>/dev/null; then
    fail "a binary path with a space made a profile"
fi
pass "the profile is written for /usr/bin/stockade; a path with a space is refused"

# trixie's parser in a mount namespace whose root is the trixie root (the
# parser links trixie's libc), with the profiles to check at /tmp/check (on a tmpfs:
# the root is read-only).
parser() {
    bwrap --ro-bind "$ROOT" / --dev /dev --proc /proc --tmpfs /tmp --ro-bind "$work" /tmp/check \
        --unshare-all --die-with-parent -- /usr/sbin/apparmor_parser "$@"
}
features=/usr/share/apparmor-features/features
strict="--skip-kernel-load --skip-cache --kernel-features $features --Werror --warn=all"
parser --version | head -n 1 | grep -q "version 4\." || fail "the parser in $ROOT is not AppArmor 4"

# shellcheck disable=SC2086
out=$(parser $strict /tmp/check/stockade 2>&1) || fail "the profile was refused: $out"
names=$(parser --names /tmp/check/stockade 2>/dev/null)
test "$names" = stockade || fail "the file defines profiles '$names', not 'stockade'"
pass "the profile parses and compiles with every warning an error; it defines stockade alone"

# What it grants: userns, in an unconfined profile attached to the binary,
# and nothing else (comments and the site-local include aside).
grep -qx 'profile stockade /usr/bin/stockade flags=(unconfined) {' "$work/stockade" ||
    fail "the profile does not attach unconfined to /usr/bin/stockade"
rules=$(sed -n '/^profile /,/^}/p' "$work/stockade" | sed -e 's/#.*//' -e 's/^ *//' -e 's/ *$//' |
    grep -v -e '^$' -e '^profile ' -e '^}$' -e '^include if exists <local/stockade>$')
test "$rules" = "userns," || fail "the profile grants more than userns: $rules"
pass "the profile's one rule is userns"

# The profile `stockade check` tells the owner of an uncovered binary to
# write (runtime/check/host_apparmor_verdicts.cpp; unit: "the AppArmor
# restriction's fix fits the binary" pins its output to this text), for a
# path that needs AppArmor's quotes.
printf '%s\n' 'abi <abi/4.0>,' 'include <tunables/global>' \
    'profile stockade-local "/home/ann/it'"'"'s mine/build/stockade" flags=(unconfined) {' \
    '  userns,' '}' > "$work/stockade-local"
# shellcheck disable=SC2086
out=$(parser $strict /tmp/check/stockade-local 2>&1) || fail "check's suggested profile was refused: $out"
pass "the profile check suggests for another path parses too"

# A feature set without user-namespace mediation: the rule would not be
# enforced, which the strict parse must refuse.
grep -v '^namespaces {mask {userns_create' "$ROOT$features" > "$work/features-no-userns"
cmp -s "$ROOT$features" "$work/features-no-userns" &&
    fail "trixie's feature set has no user-namespace line to take out"
# shellcheck disable=SC2086
if out=$(parser --skip-kernel-load --skip-cache --kernel-features /tmp/check/features-no-userns \
    --Werror --warn=all /tmp/check/stockade 2>&1); then
    fail "a kernel without userns mediation was accepted"
fi
echo "$out" | grep -q "userns rules not enforced" || fail "refused for another reason: $out"
pass "without userns in the kernel's features the strict parse refuses: $out"

# Broken copies: each must be refused, naming the line.
broken() {  # name sed-expression expected-message
    sed "$2" "$work/stockade" > "$work/$1"
    cmp -s "$work/stockade" "$work/$1" && fail "$1: the edit changed nothing"
    # shellcheck disable=SC2086
    if out=$(parser $strict "/tmp/check/$1" 2>&1); then fail "$1 was accepted"; fi
    echo "$out" | grep -q "$3" || fail "$1 refused for another reason: $out"
    pass "refused: $1 ($(echo "$out" | head -n 1))"
}
broken misspelt-rule 's/^  userns,$/  usernz,/' "syntax error"
broken unterminated-rule 's/^  userns,$/  userns/' "Lexer found unexpected"
broken unknown-flag 's/flags=(unconfined)/flags=(unconfined, everything)/' "Invalid profile flag"
broken relative-attachment 's| /usr/bin/stockade | usr/bin/stockade |' "syntax error"
broken unclosed-block 's/^}$//' "syntax error"
broken missing-abi 's|<abi/4.0>|<abi/9.9>|' "abi/9.9"

# The helper's decision (contrib/apparmor/stockade-apparmor install) made by
# each parser, into a scratch directory standing for /etc/apparmor.d:
# trixie's 4.1 accepts the profile, so it is written, behind a marker
# holding the shipped copy's sum; and the host's own parser, where it is
# Debian 12's 3.0 (install-deps.sh installs it), refuses it, so nothing is.
mkdir -p "$work/share" "$work/etc4" "$work/etc3"
cp "$SRC/contrib/apparmor/stockade-apparmor" "$work/stockade" "$work/share/"
said=$(bwrap --ro-bind "$ROOT" / --dev /dev --proc /proc --tmpfs /tmp --ro-bind "$work/share" /tmp/share \
    --bind "$work/etc4" /tmp/etc --setenv STOCKADE_APPARMOR_DIR /tmp/etc --unshare-all \
    --die-with-parent -- /bin/sh /tmp/share/stockade-apparmor install)
test "$said" = "stockade: installed the AppArmor profile /tmp/etc/stockade" ||
    fail "the helper under apparmor_parser 4 said: $said"
tail -n +2 "$work/etc4/stockade" | cmp -s - "$work/stockade" ||
    fail "the helper's copy is not the shipped profile"
head -n 1 "$work/etc4/stockade" | grep -q "^# stockade-managed sha256 $(sha256sum < "$work/stockade" | cut -d ' ' -f 1) " ||
    fail "the helper's copy carries no marker with the shipped profile's sum"
pass "apparmor_parser 4 accepts the profile, so the helper writes it, marked"
host=$(command -v apparmor_parser || true)
if [ -n "$host" ] && "$host" --version | head -n 1 | grep -q "version 3\."; then
    said=$(STOCKADE_APPARMOR_DIR="$work/etc3" sh "$work/share/stockade-apparmor" install)
    echo "$said" | grep -q "^stockade: $work/etc3/stockade not written: AppArmor parser version 3\..* refuses the profile" ||
        fail "the helper under the host's apparmor_parser 3 said: $said"
    test ! -e "$work/etc3/stockade" || fail "the helper wrote a profile apparmor_parser 3 refuses"
    pass "the host's apparmor_parser 3 refuses it, so the helper writes nothing, saying why: $said"
elif [ "${CI:-}" = "true" ]; then
    fail "the host has no apparmor_parser 3 (install-deps.sh installs Debian 12's apparmor)"
else
    echo "WARN NOT TESTED here: the host's apparmor_parser is not AppArmor 3 (${host:-none})"
fi

echo "$passed passed, 0 failed"
