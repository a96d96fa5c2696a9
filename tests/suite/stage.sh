#!/bin/sh
# The suite's stage: what uid 65534 must reach (the binary under test, the
# probes, the scratch directories), copied into a directory of its own under
# /var/tmp, because the checkout and its build may sit under a directory that
# only their owner can enter (root's home, `mktemp -d`, a 0700 parent).
#   sh tests/suite/stage.sh create STAGE STOCKADE PROBE...
#   sh tests/suite/stage.sh remove STAGE
# ctest runs `create` before the first test that needs the stage and `remove`
# after the last (FIXTURES_SETUP, FIXTURES_CLEANUP in tests/CMakeLists.txt).
set -eu

usage() { echo "usage: $0 create STAGE STOCKADE PROBE... | remove STAGE" >&2; exit 2; }
[ $# -ge 2 ] || usage
action=$1 stage=$2
shift 2
case $stage in
    /var/tmp/stockade-suite-*) ;;
    *) echo "stage.sh: $stage is not a suite stage (/var/tmp/stockade-suite-*)" >&2; exit 2 ;;
esac

# /var/tmp is writable by everyone: a name there may have been made by someone
# else first. Only a real directory of ours is removed or reused.
remove_ours() {
    [ -e "$stage" ] || [ -L "$stage" ] || return 0
    if [ -L "$stage" ] || [ ! -d "$stage" ] || [ "$(stat -c %u "$stage")" != "$(id -u)" ]; then
        echo "stage.sh: $stage exists and is not a directory of uid $(id -u); remove it and run again" >&2
        exit 1
    fi
    rm -rf "$stage"
}

case $action in
    create)
        [ $# -ge 2 ] || usage
        remove_ours
        mkdir -m 0755 "$stage"
        mkdir -m 0755 "$stage/bin" "$stage/probe" "$stage/scratch"
        cp -p "$1" "$stage/bin/stockade"
        shift
        for probe in "$@"; do cp -p "$probe" "$stage/probe/"; done
        chmod 0755 "$stage/bin/stockade" "$stage/probe/"*
        echo "stage: $stage"
        ;;
    remove)
        remove_ours
        ;;
    *) usage ;;
esac
