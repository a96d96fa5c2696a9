#!/bin/sh
# A held runner in plain sh that writes TAP itself; the candidate runs one
# level down, through STOCKADE_ISOLATE (docs/oracle.md, "Runners and
# candidates"), so it can neither rewrite this shell's state nor kill it.
report="$STOCKADE_REPORT_DIR/report.tap"
echo "1..2" > "$report"
status=0
n=0
check() {
    n=$((n + 1))
    got=$("$STOCKADE_ISOLATE" -- sh /repo/add.sh "$1" "$2")
    if [ "$got" = "$3" ]; then
        echo "ok $n - add $1 $2" >> "$report"
    else
        echo "not ok $n - add $1 $2 gave '$got', not $3" >> "$report"
        status=1
    fi
}
check 2 3 5
check -1 1 0
exit $status
