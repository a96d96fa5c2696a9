#!/bin/sh
# The child side (every file of runtime/child/ and every *_in_child.cpp
# elsewhere: what runs after clone3 and before
# execve, in a process that may share memory with its parent or have been
# forked from a threaded one) may use no allocator, throw nothing, take no
# lock and write through no stdio: none of those is async-signal-safe
# (signal-safety(7)). Checked on the compiled objects, by what they import.
#   sh tests/suite/child_symbols.sh OBJECT...   (a library's objects; the
#   child-side ones are picked by folder and by name)
set -eu
forbidden='operator new|operator delete|\bmalloc\b|\bcalloc\b|\brealloc\b|\bfree\b|posix_memalign|__cxa_throw|__cxa_allocate_exception|__cxa_rethrow|pthread_mutex_lock|pthread_rwlock|std::mutex|printf|fprintf|fwrite|fputs|\bputs\b|std::cout|std::cerr|std::ostream|basic_ostream|basic_string<.*>::_M_create|basic_string<.*>::_M_mutate|basic_string<.*>::append|std::vector<.*>::_M_realloc|syslog'
checked=0
bad=0
# ctest passes each library's objects as one ;-separated argument.
IFS=';'
set -- $*
unset IFS
for object in "$@"; do
    case $object in */runtime/child/*.o | *_in_child.cpp.o) ;; *) continue ;; esac
    checked=$((checked + 1))
    found=$(nm -uC "$object" | sed 's/^ *U //' | grep -E "$forbidden" || true)
    if [ -n "$found" ]; then
        echo "FAIL $(basename "$object") imports what the child side may not use:" >&2
        echo "$found" | sed 's/^/    /' >&2
        bad=1
    fi
done
# A list that matched nothing would prove nothing.
if [ "$checked" -lt 12 ]; then
    echo "FAIL only $checked child-side objects found (expected every *_in_child.cpp.o)" >&2
    exit 1
fi
[ "$bad" -eq 0 ] || exit 1
echo "child side: $checked objects, none imports an allocator, a throw, a lock or stdio"
