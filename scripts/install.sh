#!/bin/sh
# `make install` and `make uninstall` (issue 23).
#
#   sh scripts/install.sh install   BUILD_DIR PREFIX [DESTDIR]
#   sh scripts/install.sh uninstall BUILD_DIR PREFIX [DESTDIR]
#
# install configures BUILD_DIR for the binary alone (no tests: their
# toolchain is not needed to install, and they are most of the build), builds
# only the stockade target, installs stripped under DESTDIR/PREFIX and writes
# BUILD_DIR/installed.txt: the prefix, each file with its sha256, and each
# directory the install had to make. uninstall reads it back and removes
# exactly that: first it checks every line (each path inside DESTDIR/PREFIX,
# each file the one install made, by its hash) and refuses, removing
# nothing, if one fails; then the files, then the directories it made,
# deepest first, those that are empty (a file of yours put there keeps its
# directory).
set -eu

usage() { echo "usage: $0 install|uninstall BUILD_DIR PREFIX [DESTDIR]" >&2; exit 2; }
[ $# -ge 3 ] && [ $# -le 4 ] || usage
action=$1 build=$2 prefix=$3 destdir=${4:-}
case $prefix in /*) ;; *) echo "PREFIX must be absolute: $prefix" >&2; exit 2 ;; esac
case $destdir in "" | /*) ;; *) echo "DESTDIR must be absolute: $destdir" >&2; exit 2 ;; esac
# One spelling of the root, so that the guard's prefix test is a string test.
prefix=$(echo "$prefix" | sed 's|//*|/|g; s|/$||')
destdir=$(echo "$destdir" | sed 's|//*|/|g; s|/$||')
root=$destdir$prefix
record=$build/installed.txt
here=$(cd "$(dirname "$0")/.." && pwd -P)

# A path the guard accepts: absolute, no `.` or `..` component, and inside
# ROOT, or inside DESTDIR for the directories above PREFIX a staged install
# made. Prints the reason it refuses.
outside() {
    case /$1/ in */../* | */./*) echo "has a . or .. component"; return 0 ;; esac
    case $1 in "$root" | "$root"/*) return 1 ;; esac
    if [ -n "$destdir" ] && [ "$2" = dir ]; then
        case $1 in "$destdir" | "$destdir"/*) return 1 ;; esac
    fi
    echo "is outside $root"
    return 0
}

case $action in
install)
    # A build directory configured from another source tree (a copied
    # checkout) is one cmake refuses: it is made afresh.
    if [ -f "$build/CMakeCache.txt" ] &&
        ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$here" "$build/CMakeCache.txt"; then
        echo "$build was configured for another source tree: configuring it afresh"
        rm -rf "$build"
    fi
    launcher=""
    command -v ccache >/dev/null 2>&1 &&
        launcher="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache"
    # shellcheck disable=SC2086
    cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF \
        -DCMAKE_INSTALL_PREFIX="$prefix" $launcher >/dev/null
    cmake --build "$build" -j "${JOBS:-$(nproc)}" --target stockade
    # The directories the install will make are those missing now on the
    # way to each place it puts files (cmake --install makes them silently);
    # a second install over the first keeps the first's.
    dirs=$(mktemp)
    trap 'rm -f "$dirs"' EXIT
    if [ -f "$record" ]; then
        if [ "$(sed -n 's/^prefix //p' "$record")" != "$prefix" ] ||
            [ "$(sed -n 's/^destdir *//p' "$record")" != "$destdir" ]; then
            echo "$build installed into another DESTDIR/PREFIX ($record): make uninstall" \
                "with those first" >&2
            exit 1
        fi
        sed -n 's/^dir //p' "$record" >"$dirs"
    fi
    for d in bin share/stockade/profiles share/stockade/apparmor share/man/man1 \
        share/bash-completion/completions share/zsh/vendor-completions; do
        p=$root/$d
        while [ "$p" != / ] && [ ! -e "$p" ]; do echo "$p"; p=$(dirname "$p"); done
    done >>"$dirs"
    sort -u -o "$dirs" "$dirs"
    DESTDIR=$destdir cmake --install "$build" --prefix "$prefix" --strip
    {
        echo "prefix $prefix"
        echo "destdir $destdir"
        # cmake ends the manifest without a newline: its last line counts too.
        while read -r f || [ -n "$f" ]; do
            [ -n "$f" ] || continue
            echo "file $(sha256sum <"$destdir$f" | cut -d' ' -f1) $destdir$f"
        done <"$build/install_manifest.txt"
        sed 's|^|dir |' "$dirs"
    } >"$record.new"
    mv "$record.new" "$record"
    helper=$prefix/share/stockade/apparmor/stockade-apparmor
    if [ -n "$destdir" ]; then
        echo "staged install: /etc/apparmor.d left alone; on the target run sudo sh $helper install"
    else
        sh "$helper" install || true
    fi
    ;;
uninstall)
    if [ ! -f "$record" ]; then
        echo "nothing installed from $build ($record is missing)"
        exit 0
    fi
    recorded_prefix=$(sed -n 's/^prefix //p' "$record")
    recorded_destdir=$(sed -n 's/^destdir *//p' "$record")
    if [ "$recorded_prefix" != "$prefix" ] || [ "$recorded_destdir" != "$destdir" ]; then
        echo "refused: $build installed into DESTDIR='$recorded_destdir' PREFIX=$recorded_prefix," \
            "not DESTDIR='$destdir' PREFIX=$prefix; nothing removed" >&2
        exit 1
    fi
    # Every line checked before anything is removed.
    refused=0
    while read -r kind a b; do
        case $kind in
        file)
            if why=$(outside "$b" file); then
                echo "refused: $b $why" >&2
                refused=1
            elif [ -L "$b" ] || { [ -e "$b" ] && [ ! -f "$b" ]; }; then
                echo "refused: $b is no longer the file install made (not a regular file)" >&2
                refused=1
            elif [ -f "$b" ] && [ "$(sha256sum <"$b" | cut -d' ' -f1)" != "$a" ]; then
                echo "refused: $b changed since install made it (sha256 differs); remove it" \
                    "yourself if it is to go" >&2
                refused=1
            fi
            ;;
        dir)
            a="$a${b:+ $b}"
            if why=$(outside "$a" dir); then
                echo "refused: directory $a $why" >&2
                refused=1
            elif [ -e "$a" ] && { [ -L "$a" ] || [ ! -d "$a" ]; }; then
                echo "refused: $a is no longer the directory install made" >&2
                refused=1
            fi
            ;;
        prefix | destdir) ;;
        *)
            echo "refused: $record has an unknown line: $kind $a $b" >&2
            refused=1
            ;;
        esac
    done <"$record"
    if [ "$refused" -ne 0 ]; then
        echo "nothing removed" >&2
        exit 1
    fi
    helper=$(sed -n 's|^file [0-9a-f]* \(.*/share/stockade/apparmor/stockade-apparmor\)$|\1|p' "$record")
    if [ -z "$destdir" ] && [ -n "$helper" ] && [ -f "$helper" ]; then sh "$helper" remove || true; fi
    sed -n 's/^file [0-9a-f]* //p' "$record" | while read -r f; do rm -f "$f"; done
    sed -n 's/^dir //p' "$record" | sort -r | while read -r d; do
        [ -d "$d" ] || continue
        rmdir "$d" 2>/dev/null || echo "kept $d: it holds files install did not put there"
    done
    rm -f "$record" "$build/install_manifest.txt"
    ;;
*) usage ;;
esac
