#!/bin/sh
# Issue 4's numbers (not tests: nothing here asserts a time):
#   1. output capture with SHA-256, GB/s (target >= 1 GB/s)
#   2. the supervisor's peak RSS while a command floods its output (target <= 4 MiB)
#   3. what cgroup limits add to one run: the same /bin/true with and without them
# Usage: bench/limits_bench.sh [path/to/stockade]
set -eu
S=${1:-build/stockade}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
BYTES=${BYTES:-4000000000}

echo "== output capture ($BYTES bytes through stdout, hashed and counted)"
for i in 1 2 3; do
    "$S" run --quiet --output-limit 100g --result "$tmp/r.json" -- head -c "$BYTES" /dev/zero
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('  %.2f GB/s' % (d['stdout']['bytes'] / d['duration_ms'] / 1e6))" "$tmp/r.json"
done

echo "== supervisor peak RSS while capturing 1 GB"
/usr/bin/time -f "  %M KiB" "$S" run --quiet --output-limit 100g -- head -c 1000000000 /dev/zero

echo "== cgroup cost per run (held-test with and without memory/pids limits)"
sed -e 's/"memory": "[^"]*",//' -e 's/"pids": [0-9]*,//' profiles/held-test.json > "$tmp/nolimits.json"
if command -v hyperfine >/dev/null; then
    hyperfine -N -w 20 -r 200 \
        "$S run --quiet --profile $tmp/nolimits.json -- /bin/true" \
        "$S run --quiet -- /bin/true" 2>&1 | grep -E "Benchmark|Time|faster"
else
    echo "  hyperfine is not installed (apt-get install hyperfine)"
fi
