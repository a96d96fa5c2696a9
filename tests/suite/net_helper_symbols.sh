#!/bin/sh
# The network namespace's helper shares init's memory and thread pointer
# (namespaces/net_helper_in_child.h): its body may call no libc function
# that writes thread-local state (errno first of all), nor a sanitizer's
# runtime. Checked on its object: it may import only memset and memcpy
# (which the compiler may emit for its one struct, and which set nothing)
# and the stack protector's failure call (which never returns).
#   sh tests/suite/net_helper_symbols.sh OBJECT...   (the namespaces library's objects)
set -eu
IFS=';'
set -- $*
unset IFS
found=0
for object in "$@"; do
    case $object in */net_helper_in_child.cpp.o) ;; *) continue ;; esac
    found=1
    imports=$(nm -u "$object" | sed 's/^ *U //')
    bad=$(echo "$imports" | grep -v -E '^(memset|memcpy|__stack_chk_fail)?$' || true)
    if [ -n "$bad" ]; then
        echo "FAIL net_helper_in_child.cpp.o imports what a helper sharing init's memory may not call:" >&2
        echo "$bad" | sed 's/^/    /' >&2
        exit 1
    fi
done
if [ "$found" -eq 0 ]; then
    echo "FAIL net_helper_in_child.cpp.o is not among the objects given" >&2
    exit 1
fi
echo "net helper: imports $(echo "$imports" | grep -c . || true) symbols, none that sets errno"
