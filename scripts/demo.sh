#!/bin/sh
# `make demo`: a small worktree with a test script, run as a held test on the
# embedded default profile, then the result record.
set -eu
STOCKADE=${1:-build/stockade}
demo=$(mktemp -d /tmp/stockade-demo.XXXXXX)
trap 'rm -rf "$demo"' EXIT
mkdir -p "$demo/worktree/.git"
printf '[core]\n\trepositoryformatversion = 0\n' > "$demo/worktree/.git/config"
cat > "$demo/worktree/add.sh" <<'SH'
add() { echo $(( $1 + $2 )); }
SH
cat > "$demo/worktree/test.sh" <<'SH'
#!/bin/sh
. ./add.sh
fail=0
check() { if [ "$1" = "$2" ]; then echo "ok - $3"; else echo "not ok - $3"; fail=1; fi; }
check "$(add 2 3)" 5 "adds small numbers"
check "$(add -1 1)" 0 "adds negatives"
if (echo tamper >> .git/config) 2>/dev/null; then echo "not ok - .git is writable"; fail=1;
else echo "ok - .git is read-only"; fi
if cat "$HOME_CANARY" 2>/dev/null; then echo "not ok - host home visible"; fail=1;
else echo "ok - the host's home is out of reach"; fi
echo "uid inside: $(id -u), hostname: $(hostname), pid: $$"
exit $fail
SH
chmod +x "$demo/worktree/test.sh"
echo "\$ stockade run --worktree $demo/worktree --result $demo/result.json -- ./test.sh"
set +e
"$STOCKADE" run --worktree "$demo/worktree" --env HOME_CANARY=/root/.bashrc \
    --result "$demo/result.json" -- ./test.sh
code=$?
set -e
echo "--- exit code $code; result record:"
cat "$demo/result.json"
exit $code
