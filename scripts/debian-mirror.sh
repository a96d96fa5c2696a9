#!/bin/sh
# Prints the Debian mirror apt already uses (deb822 sources first, then
# sources.list), or deb.debian.org: where the test roots are debootstrapped
# from (clean-root.sh, apparmor-root.sh), so that they need no other network.
mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $2 ~ /^http/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
echo "${mirror:-http://deb.debian.org/debian}"
