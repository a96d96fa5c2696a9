#!/bin/sh
# scripts/fuzz.sh [SECONDS]: builds the libFuzzer targets of tests/fuzz/ and
# runs each for SECONDS (default 30). Exits non-zero when a target crashes,
# leaks, trips ASan/UBSan or breaks one of its checks; the input that did it is
# left in $BUILD_DIR/artifacts/ with the command that replays it.
#
# The targets need the stockade libraries instrumented for coverage, which only
# global compile flags can do, so this uses a build directory of its own
# (build-fuzz) configured with clang and
#   -DSTOCKADE_FUZZ=ON -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link,address,undefined
# and builds only the fuzz targets.
#
# Needs clang with compiler-rt's libFuzzer; on Debian 12:
#   apt-get install clang-14 libclang-rt-14-dev
# (libclang-rt-14-dev is only a Recommends of clang-14, so an install with
# --no-install-recommends lacks it and -fsanitize=fuzzer fails to link.)
#
# Environment: BUILD_DIR (default build-fuzz), CC/CXX (default clang/clang++),
# STOCKADE_FUZZ_NO_ROUNDTRIP=1 (see tests/fuzz/profile_fuzz.cpp).
set -eu

SECONDS_EACH=${1:-30}
case $SECONDS_EACH in
    '' | *[!0-9]*)
        echo "usage: scripts/fuzz.sh [SECONDS]  (whole seconds per target)" >&2
        exit 2
        ;;
esac

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build-fuzz}
CC=${CC:-clang}
CXX=${CXX:-clang++}
export CC CXX

# Fail early, and say what to install, when clang cannot build a fuzzer.
probe=$(mktemp -d "${TMPDIR:-/tmp}/stockade-fuzz-probe.XXXXXX")
trap 'rm -rf "$probe"' EXIT
printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t* d, size_t n) { (void)d; (void)n; return 0; }\n' \
    >"$probe/t.c"
if ! command -v "$CC" >/dev/null 2>&1; then
    echo "fuzz.sh: $CC not found; on Debian 12: apt-get install clang-14 libclang-rt-14-dev" >&2
    exit 2
fi
if ! "$CC" -fsanitize=fuzzer,address,undefined "$probe/t.c" -o "$probe/t" 2>"$probe/err"; then
    cat "$probe/err" >&2
    echo "fuzz.sh: $CC cannot link -fsanitize=fuzzer (libFuzzer missing);" \
        "on Debian 12: apt-get install libclang-rt-14-dev" >&2
    exit 2
fi

SAN_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
mkdir -p "$BUILD_DIR"
cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja \
    -DSTOCKADE_FUZZ=ON -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS="$SAN_FLAGS" -DCMAKE_CXX_FLAGS="$SAN_FLAGS" >"$BUILD_DIR/configure.log" 2>&1 ||
    {
        cat "$BUILD_DIR/configure.log" >&2
        exit 2
    }
ninja -C "$BUILD_DIR" stockade-fuzz-profile stockade-fuzz-oci-seccomp stockade-fuzz-oci-config \
    stockade-fuzz-junit stockade-fuzz-tap

# JSON tokens and the keys and words of both formats, so mutations stay close
# to documents the parsers would accept.
dict="$BUILD_DIR/fuzz-json.dict"
cat >"$dict" <<'DICT'
"{"
"}"
"["
"]"
":"
","
"\""
"null"
"true"
"false"
"-1"
"0"
"1.5"
"18446744073709551615"
"1e400"
"\\u0000"
"\"schema\""
"\"stockade.profile/v1\""
"\"description\""
"\"filesystem\""
"\"system_dirs\""
"\"etc\""
"\"tmp_size\""
"\"sys\""
"\"environment\""
"\"pass\""
"\"pass_interactive\""
"\"set\""
"\"network\""
"\"loopback-publish\""
"\"limits\""
"\"memory\""
"\"pids\""
"\"cpu_time\""
"\"timeout\""
"\"output\""
"\"file_size\""
"\"open_files\""
"\"require\""
"\"seccomp\""
"\"landlock\""
"\"best-effort\""
"\"lifetime\""
"\"service\""
"\"capture\""
"\"512m\""
"\"/usr\""
"\"/proc\""
"\"..\""
"\"defaultAction\""
"\"defaultErrnoRet\""
"\"architectures\""
"\"archMap\""
"\"architecture\""
"\"subArchitectures\""
"\"SCMP_ARCH_X86_64\""
"\"SCMP_ARCH_X32\""
"\"SCMP_ARCH_AARCH64\""
"\"syscalls\""
"\"names\""
"\"name\""
"\"action\""
"\"errnoRet\""
"\"args\""
"\"index\""
"\"value\""
"\"valueTwo\""
"\"op\""
"\"SCMP_CMP_MASKED_EQ\""
"\"SCMP_CMP_EQ\""
"\"SCMP_CMP_GE\""
"\"SCMP_ACT_ALLOW\""
"\"SCMP_ACT_ERRNO\""
"\"SCMP_ACT_KILL\""
"\"SCMP_ACT_KILL_PROCESS\""
"\"SCMP_ACT_TRAP\""
"\"SCMP_ACT_LOG\""
"\"SCMP_ACT_NOTIFY\""
"\"includes\""
"\"excludes\""
"\"caps\""
"\"arches\""
"\"minKernel\""
"\"flags\""
"\"listenerPath\""
"\"comment\""
"\"CAP_SYS_ADMIN\""
"\"amd64\""
"\"clone\""
"\"ioctl\""
"\"personality\""
DICT

# Seeds: the shipped profiles and every profile fixture; every seccomp
# fixture, good and malformed. libFuzzer writes new inputs only to the first
# directory (in the build dir), never to the seed directories of the source tree.
run_target() {
    name=$1
    shift
    corpus="$BUILD_DIR/corpus/$name"
    mkdir -p "$corpus" "$BUILD_DIR/artifacts"
    echo "=== $name: $SECONDS_EACH s"
    status=0
    "$BUILD_DIR/tests/fuzz/stockade-fuzz-$name" \
        -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -dict="$dict" -print_final_stats=1 \
        -artifact_prefix="$BUILD_DIR/artifacts/$name-" \
        "$corpus" "$@" >"$BUILD_DIR/$name.log" 2>&1 || status=$?
    grep -E '^(stat::number_of_executed_units|stat::new_units_added|stat::peak_rss_mb)' \
        "$BUILD_DIR/$name.log" || true
    if [ "$status" -ne 0 ]; then
        echo "!!! $name failed (exit $status); the end of $BUILD_DIR/$name.log:" >&2
        tail -n 60 "$BUILD_DIR/$name.log" >&2
        for artifact in "$BUILD_DIR/artifacts/$name-"*; do
            [ -e "$artifact" ] || continue
            echo "replay: $BUILD_DIR/tests/fuzz/stockade-fuzz-$name $artifact" >&2
        done
        failed="$failed $name"
    fi
}

failed=""
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
run_target profile "$ROOT/profiles" "$ROOT/tests/fixtures/profiles"
run_target oci-seccomp "$ROOT/tests/fixtures/seccomp" "$ROOT/tests/fixtures/seccomp/malformed"
run_target oci-config "$ROOT/tests/fixtures/oci"
run_target junit "$ROOT/tests/fixtures/oracle/junit"
run_target tap "$ROOT/tests/fixtures/oracle/tap"

if [ -n "$failed" ]; then
    echo "fuzz.sh: FAILED:$failed" >&2
    exit 1
fi
echo "fuzz.sh: no crash in $SECONDS_EACH s per target"
