#!/bin/sh
# Issue 7: how long the end of a sandbox holding 1,000 processes takes (target
# under 50 ms): from the moment the command exits, leaving 1,000 sleepers, to
# the moment `stockade run` has returned with every one of them gone. Also
# init's own part (kill(-1) and reaping), from --log-level debug, and
# bubblewrap in the same rounds (its PID namespace ends when its command
# does, and the kernel kills the rest), and the kernel's own floor: the same
# command as PID 1 of a bare PID namespace (`unshare --pid --fork`, nothing
# else), whose end makes the kernel kill and reap the 1,000 sleepers before
# unshare's wait returns.
# Not a test: nothing here asserts a time.
# Usage: bench/teardown_bench.sh [path/to/stockade] [ROUNDS]
set -eu
S=${1:-build/stockade}
ROUNDS=${2:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The sleepers are started, then the command prints the time and exits.
cmd='for i in $(seq 1000); do sleep 600 & done; date +%s%N; exit 0'
i=0
while [ "$i" -lt "$ROUNDS" ]; do
    i=$((i + 1))
    "$S" run --pids 2000 --log-level debug --result "$tmp/r.json" -- sh -c "$cmd" \
        >"$tmp/out" 2>"$tmp/err"
    returned=$(date +%s%N)
    ended=$(tail -n 1 "$tmp/out")
    killed=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['stragglers_killed'])" "$tmp/r.json")
    init_ms=$(sed -n 's/.* \([0-9.]*\) ms *child: init: every straggler killed and reaped.*/\1/p' "$tmp/err")
    echo "round $i: $killed stragglers killed; command exit -> stockade returned: $(( (returned - ended) / 1000 )) us; init's kill and reap: ${init_ms} ms"
    if command -v bwrap >/dev/null; then
        bwrap --unshare-all --die-with-parent --new-session --cap-drop ALL --ro-bind /usr /usr \
            --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 \
            --proc /proc --dev /dev --tmpfs /tmp -- sh -c "$cmd" >"$tmp/out"
        returned=$(date +%s%N)
        ended=$(tail -n 1 "$tmp/out")
        echo "         bubblewrap: command exit -> bwrap returned: $(( (returned - ended) / 1000 )) us"
    fi
    unshare --pid --fork sh -c "$cmd" >"$tmp/out"
    returned=$(date +%s%N)
    ended=$(tail -n 1 "$tmp/out")
    echo "         kernel floor (unshare --pid --fork): command exit -> returned: $(( (returned - ended) / 1000 )) us"
done
