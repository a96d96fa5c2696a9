#!/bin/sh
# Issue 4's last point, run inside a throwaway VM (tests/vm/cgroup2_vm.sh)
# whose kernel mounts cgroup v2 only, with real memory and pids controllers:
# as root, and as uid 65534 in a delegated subtree (what systemd's
# Delegate=yes gives a user). Runs as PID 1; prints one "CASE PASS|FAIL name
# detail" line per case and powers off. Checks are made from the VM's side
# (the cgroup files) as well as from stockade's result.
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs -o mode=1777 tmp /tmp
mount -t tmpfs run /run
mount -t cgroup2 none /sys/fs/cgroup
CG=/sys/fs/cgroup

echo "PLANNED 12"
verdict() {  # verdict NAME DETAIL: the last command's status is the verdict
    if [ "$?" -eq 0 ]; then echo "CASE PASS $1 $2"; else echo "CASE FAIL $1 $2"; fi
}
has() {  # has FILE KEY VALUE: the result record has "KEY": VALUE
    grep -q "\"$2\": $3" "$1"
}
no_sleeper_left() {
    ! ps -o comm | grep -qx sleep
}
echo "kernel $(uname -r); controllers: $(cat $CG/cgroup.controllers)"
echo "+memory +pids" > $CG/cgroup.subtree_control

# 1. The bounds are written where the kernel enforces them, and the sandbox
#    is inside: read from the VM's side while it runs.
stockade run --memory 48m --pids 20 --result /tmp/r1.json -- sleep 3 &
sleep 1
leaf=$(ls -d $CG/stockade/*/ 2>/dev/null | grep -v stockade-supervisor | head -n 1)
mem=$(cat "${leaf}memory.max" 2>/dev/null)
pids=$(cat "${leaf}pids.max" 2>/dev/null)
swap=$(cat "${leaf}memory.swap.max" 2>/dev/null)
members=$(wc -l < "${leaf}cgroup.procs" 2>/dev/null)
wait
[ "$mem" = 50331648 ] && [ "$pids" = 20 ] && [ "$swap" = 0 ] && [ "${members:-0}" -ge 2 ] &&
    has /tmp/r1.json memory '"cgroup2"' && has /tmp/r1.json pids '"cgroup2"'
verdict root-bounds-written "leaf=$leaf memory.max=$mem pids.max=$pids memory.swap.max=$swap processes=$members"

# 2. Memory: a tmpfs filled past the bound is stopped by the memory
#    controller's OOM kill, reported as such.
stockade run --memory 32m --result /tmp/r2.json -- sh -c 'head -c 200000000 /dev/zero > /tmp/fill'
code=$?
has /tmp/r2.json status '"blocked"' && has /tmp/r2.json reason '"memory_limit"' &&
    has /tmp/r2.json memory '"cgroup2"' && [ "$code" -ne 0 ]
verdict root-memory-oom "exit=$code $(grep -E '"(status|reason|peak_memory_bytes)"' /tmp/r2.json | tr -d ' \n')"

# 3. Pids: forks past the bound fail; the stragglers go with the sandbox.
stockade run --memory 256m --pids 8 --result /tmp/r3.json -- sh -c 'for i in $(seq 20); do sleep 30 & done; exit 3' 2>/dev/null
code=$?
has /tmp/r3.json status '"blocked"' && has /tmp/r3.json reason '"pids_limit"' &&
    has /tmp/r3.json pids '"cgroup2"' && no_sleeper_left
verdict root-pids-limit "exit=$code $(grep -E '"(status|reason|stragglers_killed)"' /tmp/r3.json | tr -d ' \n')"

# 4. Stragglers that ignore SIGTERM, one in a session of its own, are
#    killed with the sandbox (cgroup.kill, then the PID namespace).
stockade run --memory 256m --pids 50 --result /tmp/r4.json -- sh -c \
    'trap "" TERM; (trap "" TERM; exec sleep 30) & setsid sleep 30 & sleep 0.2; exit 0'
kill_ok=$?
[ "$kill_ok" -eq 0 ] && no_sleeper_left && ! has /tmp/r4.json stragglers_killed 0
verdict root-stragglers-killed "$(grep -E '"stragglers_killed"' /tmp/r4.json | tr -d ' \n')"

# 4b. A stockade killed with SIGKILL leaves its leaf; the next run removes
#     it (its sandbox died with it: PR_SET_PDEATHSIG, then the PID namespace).
stockade run --memory 64m --pids 20 -- sleep 30 &
victim=$!
sleep 1
kill -9 $victim
wait $victim 2>/dev/null
sleep 0.5
stale=$(ls -d $CG/stockade/*/ 2>/dev/null | tr '\n' ' ')
stockade run --memory 64m --pids 20 -- true
after=$(ls -d $CG/stockade/*/ 2>/dev/null | tr '\n' ' ')
[ -n "$stale" ] && [ -z "$after" ] && no_sleeper_left
verdict root-stale-leaf-removed "after SIGKILL: '$stale'; after the next run: '$after'"

# 5. Nothing of the runs is left in the hierarchy: stockade's own dir at
#    the root stays (as root it is stockade's for good, like v1's), with no
#    leaf and no process in it; the controllers the test enabled are still
#    as the test left them.
left=$(ls -d $CG/stockade/*/ 2>/dev/null | tr '\n' ' ')
[ -d $CG/stockade ] && [ -z "$left" ] && [ -z "$(cat $CG/stockade/cgroup.procs)" ] &&
    [ "$(cat $CG/cgroup.subtree_control)" = "memory pids" ]
verdict root-nothing-left "leaves='$left' subtree_control='$(cat $CG/cgroup.subtree_control)'"

# A delegated subtree for uid 65534, as systemd makes one: the parent
# enables the controllers; the user owns its cgroup and its interface files.
D=$CG/user/u65534
mkdir -p $D
echo "+memory +pids" > $CG/user/cgroup.subtree_control
chown 65534:65534 $D $D/cgroup.procs $D/cgroup.subtree_control $D/cgroup.threads
as65534() {  # runs "$@" as uid 65534 from inside its delegated cgroup
    (exec_as65534 "$@")
}
exec_as65534() {  # the same, the caller's process becoming the command
    exec sh -c 'echo $$ > '"$D"'/cgroup.procs && exec as-user 65534 "$@"' sh "$@"
}

# 6. The same bounds through the delegated subtree, read from the VM's side.
as65534 stockade run --memory 48m --pids 20 --result /tmp/u6.json -- sleep 3 &
sleep 1
leaf=$(ls -d $D/stockade/*/ 2>/dev/null | head -n 1)
mem=$(cat "${leaf}memory.max" 2>/dev/null)
pids=$(cat "${leaf}pids.max" 2>/dev/null)
wait
[ "$mem" = 50331648 ] && [ "$pids" = 20 ] &&
    has /tmp/u6.json memory '"cgroup2"' && has /tmp/u6.json pids '"cgroup2"'
verdict delegated-bounds-written "leaf=$leaf memory.max=$mem pids.max=$pids"

# 7. Memory, as uid 65534.
as65534 stockade run --memory 32m --result /tmp/u7.json -- sh -c 'head -c 200000000 /dev/zero > /tmp/fill'
code=$?
has /tmp/u7.json status '"blocked"' && has /tmp/u7.json reason '"memory_limit"' &&
    has /tmp/u7.json memory '"cgroup2"'
verdict delegated-memory-oom "exit=$code $(grep -E '"(status|reason)"' /tmp/u7.json | tr -d ' \n')"

# 8. Pids, as uid 65534.
as65534 stockade run --memory 256m --pids 8 --result /tmp/u8.json -- sh -c 'for i in $(seq 20); do sleep 30 & done; exit 3' 2>/dev/null
code=$?
has /tmp/u8.json status '"blocked"' && has /tmp/u8.json reason '"pids_limit"' &&
    has /tmp/u8.json pids '"cgroup2"' && no_sleeper_left
verdict delegated-pids-limit "exit=$code $(grep -E '"(status|reason)"' /tmp/u8.json | tr -d ' \n')"

# 8b. A stockade SIGKILLed in its delegated cgroup: its sandbox goes with
#     it, and its guardian puts the cgroup back (no later stockade could:
#     no process may join a cgroup with controllers enabled, the
#     no-internal-processes rule), so the user can run stockade there again.
exec_as65534 stockade run --memory 64m --pids 20 -- sleep 30 &
victim=$!  # the supervisor itself: the subshell became it through execs
sleep 1
during=$(find $D -mindepth 1 -type d | sort | tr '\n' ' ')
kill -9 $victim
wait $victim 2>/dev/null
for i in $(seq 50); do [ -z "$(find $D -mindepth 1 -type d)" ] && break; sleep 0.1; done
after=$(find $D -mindepth 1 -type d | tr '\n' ' ')
control=$(cat $D/cgroup.subtree_control)
as65534 stockade run --memory 64m --pids 20 --result /tmp/u8b.json -- true
again=$?
[ "$during" = "$D/stockade $D/stockade-supervisor-$victim $D/stockade/$victim-0 " ] &&
    [ -z "$after" ] && [ -z "$control" ] && no_sleeper_left && [ "$again" -eq 0 ] &&
    has /tmp/u8b.json memory '"cgroup2"'
verdict delegated-killed-put-back "during: '$during' after: '$after' subtree_control: '$control' next run: exit $again"

# 9. Nothing left in the user's cgroup: no leaf, no relocation dir, its
#    subtree_control as the user had it (empty), no process but none.
leftovers=$(ls -d $D/*/ 2>/dev/null | tr '\n' ' ')
[ -z "$leftovers" ] && [ -z "$(cat $D/cgroup.subtree_control)" ] && [ -z "$(cat $D/cgroup.procs)" ]
verdict delegated-nothing-left "dirs='$leftovers' subtree_control='$(cat $D/cgroup.subtree_control)'"

# 10. Another user's subtree is out of reach: uid 65534 cannot write the
#     root's hierarchy, so from a cgroup it does not own stockade falls back
#     and says so, rather than failing or escaping its bounds.
as-user 65534 stockade run --memory 32m --pids 8 --result /tmp/u10.json -- true
code=$?
[ "$code" -eq 0 ] && has /tmp/u10.json memory '"rlimit"' && ! has /tmp/u10.json memory '"cgroup2"'
verdict undelegated-falls-back "exit=$code $(grep -E '"(memory|pids)"' /tmp/u10.json | tr -d ' \n')"

echo "VMDONE"
poweroff -f
