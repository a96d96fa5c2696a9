#!/bin/sh
# The npm packages of the Vite test (tests/integration/serve_test.cpp, "a
# Vite dev server proxies /api to a node server it started"): Vite, at the
# version tests/fixtures/vite-app/package.json pins, installed once, as root,
# from the npm registry into STOCKADE_VITE_APP (default
# /var/cache/stockade-test/vite-app) and kept for the next run. This is an
# install step, like apt-get: the test itself talks to no network, and binds
# the packages into its sandbox read-only.
set -eu
APP=${STOCKADE_VITE_APP:-/var/cache/stockade-test/vite-app}
FIXTURE=$(cd "$(dirname "$0")/../tests/fixtures/vite-app" && pwd)
if [ -f "$APP/package.json" ] && cmp -s "$APP/package.json" "$FIXTURE/package.json" &&
    [ -x "$APP/node_modules/.bin/vite" ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "stockade: the Vite test needs its npm packages; as root run: sh scripts/vite-app.sh" >&2
    exit 0
fi
echo "stockade: installing the Vite test's npm packages into $APP (npm, ~20 s)" >&2
rm -rf "$APP.tmp"
mkdir -p "$APP.tmp"
cp "$FIXTURE/package.json" "$APP.tmp/"
(cd "$APP.tmp" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
chmod -R a+rX "$APP.tmp"
rm -rf "$APP"
mv "$APP.tmp" "$APP"
