#!/bin/sh
# The TypeScript client's suite against a real stockade (ctest runs it):
# dependencies (npm ci, or the installed node_modules when the registry is out
# of reach), the generated types current, the build, node --test, and the
# packed tarball installed offline into an empty project running its example.
# Usage: sh clients/typescript/scripts/test.sh STOCKADE_BINARY [WORK_DIR]
# With WORK_DIR (ctest passes one in the build tree) the package is copied
# there with the schemas it is generated from, and built and tested in the
# copy: the source tree may be read-only, and node_modules and dist/ belong to
# a build. Without it, the package is built where it is.
set -eu

[ $# -eq 1 ] || [ $# -eq 2 ] || { echo "usage: $0 STOCKADE_BINARY [WORK_DIR]" >&2; exit 2; }
STOCKADE_BINARY=$(readlink -f "$1")
export STOCKADE_BINARY
[ -x "$STOCKADE_BINARY" ] || { echo "stockade-client test: $1 is not executable" >&2; exit 1; }
for tool in node npm; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "stockade-client test: $tool not found on PATH (scripts/install-deps.sh installs nodejs and npm)" >&2
        exit 1
    }
done
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 18 ] || { echo "stockade-client test: node $major is older than 18" >&2; exit 1; }

cd "$(dirname "$0")/.."
if [ $# -eq 2 ]; then
    source_pkg=$(pwd)
    mkdir -p "$2/clients/typescript" "$2/docs"
    work=$(cd "$2" && pwd)
    # The copy keeps its node_modules between runs (npm ci only when the lock
    # file changed); everything else is the source's, fresh.
    find "$work/clients/typescript" -mindepth 1 -maxdepth 1 ! -name node_modules -exec rm -rf {} +
    (cd "$source_pkg" && tar --exclude=./node_modules --exclude=./dist -cf - .) |
        (cd "$work/clients/typescript" && tar -xf -)
    rm -rf "$work/docs" && mkdir "$work/docs"
    cp "$source_pkg"/../../docs/*.schema.json "$work/docs/"
    cd "$work/clients/typescript"
fi
pkg=$(pwd)
# Scratch, result and fixture directories under /var/tmp, not /tmp: the
# integration tests' nothing-left-behind snapshots count /tmp.
scratch=$(mktemp -d /var/tmp/stockade-client-test.XXXXXX)
trap 'rm -rf "$scratch"' EXIT INT TERM
export TMPDIR="$scratch" npm_config_cache="${npm_config_cache:-${HOME:-/var/tmp}/.npm}" npm_config_update_notifier=false

# npm ci only when the lock file changed since the last install, so a
# machine without the registry still runs the suite on what it has.
stamp=node_modules/.stockade-client-lock
if ! cmp -s package-lock.json "$stamp" 2>/dev/null; then
    if npm ci --no-audit --no-fund --prefer-offline >"$scratch/npm-ci.log" 2>&1; then
        cp package-lock.json "$stamp"
    elif [ -d node_modules/typescript ]; then
        echo "stockade-client test: npm ci failed (offline?); using the installed node_modules" >&2
    else
        cat "$scratch/npm-ci.log" >&2
        exit 1
    fi
fi

node scripts/check-generated.mjs
rm -rf dist
npx --no-install tsc -p tsconfig.json
node --test test/*.test.mjs
# Again under Node 18, the oldest package.json's engines claims (the build
# from the npm registry that scripts/node18.sh unpacks).
node18=${STOCKADE_NODE18:-/var/cache/stockade-test/node18}/bin/node
if [ -x "$node18" ]; then
    echo "stockade-client test: the suite again under $("$node18" --version)"
    "$node18" --test test/*.test.mjs
elif [ "${CI:-}" = true ]; then
    echo "stockade-client test: no Node 18 at $node18 (as root: sh scripts/node18.sh)" >&2
    exit 1
else
    echo "stockade-client test: no Node 18 at $node18 (sh scripts/node18.sh): the engines claim is untested here" >&2
fi
# As root, the same again as uid 65534 with its own temp and runtime dirs:
# the client as a rootless harness uses it (the integration tests' two modes).
if [ "$(id -u)" -eq 0 ]; then
    rootless="$scratch/rootless"
    mkdir -p "$rootless/run" "$rootless/pkg"
    # The built package, copied where uid 65534 can read it: the checkout may
    # sit under a directory only root can enter.
    cp -R package.json dist test "$rootless/pkg/"
    chown -R 65534:65534 "$rootless"
    chmod 711 "$scratch"  # uid 65534 passes through to its own directory
    chmod 700 "$rootless/run"
    (cd "$rootless/pkg" &&
        setpriv --reuid 65534 --regid 65534 --clear-groups env -i PATH="$PATH" HOME="$rootless" \
            TMPDIR="$rootless" XDG_RUNTIME_DIR="$rootless/run" STOCKADE_BINARY="$STOCKADE_BINARY" \
            node --test test/*.test.mjs)
fi

# The tarball, installed offline into an empty project: it must need nothing
# from the registry (no runtime dependencies) and run its example.
npm pack --silent --ignore-scripts --pack-destination "$scratch" >/dev/null  # dist/ is built above
tarball=$(ls "$scratch"/stockade-client-*.tgz)
mkdir "$scratch/project"
cp examples/*.mjs "$scratch/project/"
cd "$scratch/project"
echo '{"name": "client-smoke", "private": true, "type": "module"}' >package.json
npm install --offline --no-audit --no-fund "$tarball" >"$scratch/npm-install.log" 2>&1 || {
    cat "$scratch/npm-install.log" >&2
    exit 1
}
[ ! -d node_modules/typescript ] || { echo "stockade-client test: the tarball pulled in dependencies" >&2; exit 1; }
# The published types, strict, from an outside project: what a harness compiles against.
cp "$pkg/test/consumer.ts" .
"$pkg/node_modules/.bin/tsc" --noEmit --strict --exactOptionalPropertyTypes --target es2022 \
    --module nodenext --moduleResolution nodenext --types node --typeRoots "$pkg/node_modules/@types" consumer.ts
for example in *.mjs; do
    node "$example"
done
echo "stockade-client test: all passed"
