#!/bin/bash
# test/oldkernel/guest.sh — runs as PID 1 in the guest test/oldkernel/run.sh
# boots (Debian 12's kernel, this machine's file system read-only), and
# prints TAP lines on the console.  What it checks, on that kernel:
#
#   - every probe set loads (the engine's too, all of them, with exact
#     timing, kprobes and fexit); every kernel set available (or degraded
#     with a reason),
#     with the fallbacks of an older kernel named (block without
#     block_io_start, sched without task storage made in the switch), in
#     pg_tracer_probes (daemon and extension) and in `trace`'s status
#   - a cold scan's block reads are its backend's, within 10% of
#     /proc/<pid>/io read_bytes (the block set's submitter taken at issue)
#   - a pg_sleep(1) is off-CPU time of its backend (sched: storage made at
#     fork, outside the scheduler's lock)
#   - its data-file preads are counted with their relation (syscall)
#   - --mode full: its pg_sleep(1) is timed exactly (±5%) by syscall tagging
#   - `trace --format json`: every line parses, each set's status is there
#   - escalation windows (`--kernel-sets escalated`): the six sets held,
#     a cold scan leaves their views untouched; in a window opened by
#     pg_tracer_escalate() the same scan's block reads are its backend's
#     again (the hooks attached anew on this kernel, no stale start
#     paired), its pg_sleep(1) is timed exactly (±5%) by hardware
#     watchpoints (--exact-source auto; they fire under qemu's emulation,
#     unlike on the development VMs) and is off-CPU time;
#     pg_tracer_deescalate() holds the sets again; two more windows open
#     and close while sessions come and go, and none of those fails
#
# A cluster runs on the guest's own ext4 disk (/dev/vda), as postgres.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/lib/postgresql/15/bin:/usr/sbin:/usr/bin:/sbin:/bin
export LANG=C.UTF-8
PGT_BIN=${PGT_BIN:-pg-tracer}
n=0
ok() {
	local cond=$1
	shift
	n=$((n + 1))
	if [ "$cond" = 1 ]; then echo "ok $n - $*"; else echo "not ok $n - $*"; fi
}
diag() { sed 's/^/# /'; }
# libbpf's warnings in the logs named, with the last lines of each verifier
# log (where the verifier says why it refused a program)
libbpf_warnings() {
	awk '/ warn: libbpf.*BEGIN PROG LOAD LOG/ { inlog = 1; n = 0; print; next }
		inlog && / warn: libbpf/ { for (i = (n > 25 ? n - 25 : 0); i < n; i++) print buf[i]; inlog = 0 }
		inlog { buf[n++] = $0; next }
		/ warn: libbpf/ { print }' "$@" | head -80
}
as_pg() { setpriv --reuid=postgres --regid=postgres --init-groups env HOME=/tmp PATH="$PATH" "$@"; }
sql() { as_pg psql -X -h /tmp -p 5432 -d postgres -Atq -v ON_ERROR_STOP=1 -c "$1"; }
finish() {
	echo "# guest: done"
	sync
	echo o > /proc/sysrq-trigger
	sleep 10
}
trap finish EXIT

mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
echo	# the firmware's last line may lack its newline
echo "1..33"
echo "# guest: kernel $(uname -r), $(nproc) CPUs"

# --- a cluster on the guest's own disk (run.sh made it, with initdb's data
# directory), with the extension preloaded
mkdir -p /tmp/disk /run/pg_tracer /dev/shm
mount -t tmpfs -o mode=1777 tmpfs /dev/shm	# initdb chose POSIX shared memory
mount /dev/vda /tmp/disk && [ -s /tmp/disk/data/PG_VERSION ] || {
	ok 0 "the guest's disk, with a data directory on it"
	exit 1
}
echo "# t=$SECONDS s: the cluster starts"
cat >>/tmp/disk/data/postgresql.conf <<EOF
listen_addresses = ''
unix_socket_directories = '/tmp'
shared_buffers = 16MB
max_parallel_workers_per_gather = 0
shared_preload_libraries = 'pg_tracer'
pg_tracer.runtime_dir = '/run/pg_tracer'
EOF
as_pg pg_ctl -D /tmp/disk/data -l /tmp/pg.log -w -t 120 start >/dev/null || { diag </tmp/pg.log; exit 1; }
sql "CREATE EXTENSION pg_tracer"
sql "CREATE TABLE cold AS SELECT g, repeat(md5(g::text), 4) AS pad FROM generate_series(1, 100000) g"
sql "CHECKPOINT"
"$PGT_BIN" daemon --pgdata /tmp/disk/data --runtime-dir /run/pg_tracer --probes all \
	--engine-probes all --kernel-sets always --mode full >/tmp/daemon.log 2>&1 &
daemon=$!

echo "# t=$SECONDS s: the helper"
# --- every kernel set runs (pg_tracer_probes, once the helper has published)
probes=""
for _ in $(seq 1 60); do
	probes=$(sql "SELECT probe_set || ' ' || state || ' [' || mechanism || '] ' || reason
	                FROM pg_tracer_probes
	               WHERE probe_set IN ('syscall', 'vfs', 'block', 'sched', 'memory', 'network')" 2>/dev/null)
	[ "$(grep -c . <<<"$probes")" -ge 6 ] && break
	sleep 1
done
diag <<<"$probes"
for set in syscall vfs block sched memory network; do
	ok "$(grep -Eq "^$set (available|degraded) " <<<"$probes" && echo 1)" "pg_tracer_probes: $set runs"
done
ok "$(grep -q '^block .*without block_io_start (before 6.5)' <<<"$probes" && echo 1)" \
	"block names its fallback: the submitter taken at issue"
ok "$(grep -q '^sched .*before 6.4: task storage made at fork and per copy' <<<"$probes" && echo 1)" \
	"sched names its fallback: no task storage made under the scheduler's lock"
sql "SELECT probe_set || ' ' || state || ' [' || mechanism || '] ' || reason FROM pg_tracer_probes
      WHERE probe_set NOT IN ('syscall', 'vfs', 'block', 'sched', 'memory', 'network')" | diag
down=$(sql "SELECT string_agg(probe_set, ', ') FROM pg_tracer_probes WHERE state = 'unavailable'")
ok "$([ -z "$down" ] && echo 1)" "the rest runs too: the engine probes (all), exact timing, kprobes, fexit (unavailable: ${down:-none})"

# A psql session fed through a fifo on file descriptor FD, its output in
# /tmp/NAME.out: session_open NAME FD sets sess_pid to its backend's pid (0
# when it has none); session_run NAME FD SQL runs SQL and waits until it
# is done.  Not in $(...): the fifo's writer and the count of runs must
# stay in this shell.
session_open() {
	local name=$1 fd=$2
	mkfifo "/tmp/$name.in"
	as_pg psql -X -h /tmp -p 5432 -d postgres -Atq <"/tmp/$name.in" >"/tmp/$name.out" 2>&1 &
	eval "exec $fd>/tmp/$name.in"
	echo "SELECT pg_backend_pid();" >&"$fd"
	for _ in $(seq 1 300); do [ -s "/tmp/$name.out" ] && break; sleep 0.2; done
	sess_pid=$(head -1 "/tmp/$name.out")
	[[ "$sess_pid" =~ ^[0-9]+$ ]] || { diag <"/tmp/$name.out"; sess_pid=0; }
}
runs=0
session_run() {
	local name=$1 fd=$2
	runs=$((runs + 1))
	echo "$3 SELECT 'done $runs';" >&"$fd"
	for _ in $(seq 1 600); do grep -q "^done $runs\$" "/tmp/$name.out" && break; sleep 0.2; done
}

# read_bytes PID: what the process has read from disk so far
read_bytes() { awk '/^read_bytes/ { print $2 }' "/proc/$1/io"; }

# cold_scan NAME FD PID: drop the page cache, scan `cold` and sleep 1 s in
# that session; sets scanned to what its backend read from disk meanwhile
cold_scan() {
	local io0
	scanned=0
	[ "$3" -gt 0 ] || return
	sync
	echo 3 > /proc/sys/vm/drop_caches
	io0=$(read_bytes "$3")
	session_run "$1" "$2" "SELECT count(*) FROM cold; SELECT pg_sleep(1);"
	scanned=$(($(read_bytes "$3") - io0))
}

# block_read_bytes PID: its block-layer read bytes in pg_tracer_kernel_io
block_read_bytes() {
	sql "SELECT coalesce(sum(bytes), 0) FROM pg_tracer_kernel_io
	      WHERE pid = $1 AND layer = 'block' AND op = 'read'"
}

# within10 A B: is A within 10% of B (B > 0)?
within10() { [ "$2" -gt 0 ] && [ $(($1 * 10 >= $2 * 9 && $1 * 10 <= $2 * 11)) = 1 ]; }

# within5 A B: is A within 5% of B (B > 0)?
within5() { [ -n "$1" ] && [ "$2" -gt 0 ] && [ $(($1 * 20 >= $2 * 19 && $1 * 20 <= $2 * 21)) = 1 ]; }

# exact_sleep_ms PID: its exact Timeout:PgSleep total, in ms (waits 10 s at
# most for the helper to publish it); empty when there is none
exact_sleep_ms() {
	local ms=""
	for _ in $(seq 1 10); do
		ms=$(sql "SELECT round(total_ms)::bigint FROM pg_tracer_exact_session_events
		           WHERE pid = $1 AND wait_event = 'PgSleep'")
		[ -n "$ms" ] && break
		sleep 1
	done
	echo "$ms"
}

# block_matches PID TRUTH: wait (20 s at most) for its block read bytes
# to come within 10% of TRUTH; prints them
block_matches() {
	local blk=0
	for _ in $(seq 1 20); do
		blk=$(block_read_bytes "$1")
		within10 "$blk" "$2" && break
		sleep 1
	done
	echo "$blk"
}

# --- a cold scan, one backend: its block reads against /proc/<pid>/io
echo "# t=$SECONDS s: a cold scan"
session_open session 3
pid=$sess_pid
cold_scan session 3 "$pid"
truth=$scanned
ok "$([ "$pid" -gt 0 ] && [ "$truth" -gt 5000000 ] && echo 1)" \
	"ground truth: the cold scan read $truth bytes from disk"
blk=$(block_matches "$pid" "$truth")
ok "$(within10 "$blk" "$truth" && echo 1)" \
	"its block reads ($blk bytes) within 10% of /proc/$pid/io read_bytes ($truth)"
off=$(sql "SELECT coalesce(sum(offcpu_ms), 0)::bigint FROM pg_tracer_kernel_sched WHERE pid = $pid")
ok "$([ "${off:-0}" -ge 1000 ] && echo 1)" "its pg_sleep(1) is off-CPU time: $off ms"
rel=$(sql "SELECT relation FROM pg_tracer_kernel_io
            WHERE pid = $pid AND layer = 'syscall' AND file_class = 'data'
            ORDER BY bytes DESC LIMIT 1")
ok "$([ "$rel" = cold ] && echo 1)" "its data-file reads are of the relation cold ($rel)"
# the vfs kprobes (this kernel has them): the same data-file reads, once
# each, no errors
vfs=$(sql "SELECT coalesce(sum(bytes) FILTER (WHERE layer = 'vfs' AND op = 'vfs_read'), 0)
                  || ' ' || coalesce(sum(bytes) FILTER (WHERE layer = 'syscall'), 0)
                  || ' ' || coalesce(sum(errors) FILTER (WHERE layer = 'vfs'), 0)
             FROM pg_tracer_kernel_io WHERE pid = $pid AND file_class = 'data' AND op IN ('vfs_read', 'pread64', 'read')")
read -r vfs_bytes sys_bytes vfs_errors <<<"$vfs"
ok "$(within10 "$vfs_bytes" "$sys_bytes" && [ "$vfs_errors" = 0 ] && echo 1)" \
	"vfs kprobes: its data-file vfs_read bytes ($vfs_bytes) within 10% of its read calls' ($sys_bytes), $vfs_errors errors"
slept=$(exact_sleep_ms "$pid")
ok "$(within5 "$slept" 1000 && echo 1)" \
	"--mode full, syscall tagging: its pg_sleep(1) timed exactly at ${slept:-no} ms (1000 +-5%)"
exec 3>&-

# --- trace: JSON Lines, the sets' status, a workload's events
echo "# t=$SECONDS s: trace"
"$PGT_BIN" trace --probes all --pgdata /tmp/disk/data --format json --duration 20s \
	>/tmp/trace.json 2>/tmp/trace.err &
tracer=$!
for _ in $(seq 1 150); do grep -q '"queryid-tagging"' /tmp/trace.json && break; sleep 0.2; done
sql "SELECT count(*) FROM cold" >/dev/null
wait $tracer
ok "$([ $? = 0 ] && echo 1)" "trace --duration 20s exits 0"
perl -MJSON::PP -ne 'eval { decode_json($_) } or print "unparsable: $_"' /tmp/trace.json >/tmp/bad.txt
ok "$([ -s /tmp/trace.json ] && [ ! -s /tmp/bad.txt ] && echo 1)" \
	"every one of its $(wc -l </tmp/trace.json) lines parses as JSON"
for set in syscall vfs block sched memory network; do
	ok "$(grep -Eq "\"set\":\"$set\",\"event\":\"status\".*\"state\":\"(available|degraded)\"" /tmp/trace.json && echo 1)" \
		"trace: $set runs"
done
ok "$(grep -q '"event":"pread64".*"file_class":"data"' /tmp/trace.json && echo 1)" \
	"trace: the scan's preads are events"
libbpf_warnings /tmp/trace.err /tmp/daemon.log | diag

kill "$daemon" 2>/dev/null
wait "$daemon" 2>/dev/null

# --- escalation windows: the kernel sets held, then attached for a window
echo "# t=$SECONDS s: escalation windows"
"$PGT_BIN" daemon --pgdata /tmp/disk/data --runtime-dir /run/pg_tracer --probes all \
	--engine-probes all --kernel-sets escalated --exact-budget unlimited --anomaly off \
	--exact-source auto \
	>/tmp/daemon2.log 2>&1 &
daemon=$!

# set_states: "held", "window" or the reason, for each of the six sets
set_states() {
	sql "SELECT string_agg(CASE WHEN reason LIKE 'held outside escalation windows%' THEN 'held'
	                            WHEN reason LIKE 'attached for an escalation window%' THEN 'window'
	                            ELSE probe_set || ': ' || reason END, ' ' ORDER BY probe_set)
	       FROM pg_tracer_probes
	      WHERE probe_set IN ('syscall', 'vfs', 'block', 'sched', 'memory', 'network')" 2>/dev/null
}
# wait_states WORD: wait (60 s at most) until the six sets say WORD
wait_states() {
	local want="$1 $1 $1 $1 $1 $1" got=""
	for _ in $(seq 1 60); do
		got=$(set_states)
		[ "$got" = "$want" ] && break
		sleep 1
	done
	echo "$got"
}
states=$(wait_states held)
ok "$([ "$states" = "held held held held held held" ] && echo 1)" \
	"--kernel-sets escalated: the six sets are loaded and held ($states)"

session_open window 4
pid2=$sess_pid
sleep 3		# the helper maps the new backend before the window
cold_scan window 4 "$pid2"
truth=$scanned
sleep 2		# the helper publishes once a second: nothing to publish
rows=$(sql "SELECT count(*) FROM pg_tracer_kernel_io WHERE pid = $pid2")
ok "$([ "$pid2" -gt 0 ] && [ "$truth" -gt 5000000 ] && [ "$rows" = 0 ] && echo 1)" \
	"held: a cold scan ($truth bytes from disk) leaves no kernel_io row ($rows)"

granted=$(sql "SELECT granted_s FROM pg_tracer_escalate(120)")
states=$(wait_states window)
ok "$([ "$granted" = 120 ] && [ "$states" = "window window window window window window" ] && echo 1)" \
	"pg_tracer_escalate(120): granted $granted s, the six sets attached ($states)"

cold_scan window 4 "$pid2"
truth=$scanned
blk=$(block_matches "$pid2" "$truth")
ok "$(within10 "$blk" "$truth" && echo 1)" \
	"in the window: its block reads ($blk bytes) within 10% of /proc/$pid2/io read_bytes ($truth)"
slept=$(exact_sleep_ms "$pid2")
source=$(sql "SELECT mechanism FROM pg_tracer_probes WHERE probe_set = 'exact'")
ok "$([ "$source" = "hardware watchpoints" ] && within5 "$slept" 1000 && echo 1)" \
	"in the window, by $source (--exact-source auto): its pg_sleep(1) timed exactly at ${slept:-no} ms (1000 +-5%)"
off=$(sql "SELECT coalesce(sum(offcpu_ms), 0)::bigint FROM pg_tracer_kernel_sched WHERE pid = $pid2")
ok "$([ "${off:-0}" -ge 1000 ] && echo 1)" "in the window: its pg_sleep(1) is off-CPU time: $off ms"

closed=$(sql "SELECT pg_tracer_deescalate()")
states=$(wait_states held)
ok "$([ "$closed" = t ] && [ "$states" = "held held held held held held" ] && echo 1)" \
	"pg_tracer_deescalate(): $closed, the six sets held again ($states)"
exec 4>&-

# --- windows under load: the hooks attached and detached (kernel text
# rewritten) while sessions come and go on both CPUs, each a new backend
# that scans.  load_loop K: sessions until /tmp/load.stop exists, then
# "SESSIONS FAILED" into /tmp/load.K
load_loop() {
	local done_n=0 failed=0
	while [ ! -e /tmp/load.stop ]; do
		if sql "SELECT count(*) FROM cold WHERE g % 50000 = 1" >/dev/null 2>>/tmp/load.err; then
			done_n=$((done_n + 1))
		else
			failed=$((failed + 1))
		fi
	done
	echo "$done_n $failed" >"/tmp/load.$1"
}
echo "# t=$SECONDS s: windows under load"
rm -f /tmp/load.stop
load_loop 1 &
load1=$!
load_loop 2 &
load2=$!
sleep 3
cycles=0
for _ in 1 2; do
	sql "SELECT granted_s FROM pg_tracer_escalate(60)" >/dev/null || break
	[ "$(wait_states window)" = "window window window window window window" ] || break
	sleep 2
	[ "$(sql "SELECT pg_tracer_deescalate()")" = t ] || break
	[ "$(wait_states held)" = "held held held held held held" ] || break
	cycles=$((cycles + 1))
done
touch /tmp/load.stop
wait "$load1" "$load2"
sessions=$(awk '{ n += $1 } END { print n + 0 }' /tmp/load.1 /tmp/load.2)
failed=$(awk '{ n += $2 } END { print n + 0 }' /tmp/load.1 /tmp/load.2)
ok "$([ "$cycles" = 2 ] && echo 1)" \
	"under load: $cycles of 2 windows opened and closed, the six sets attached and held again each time"
ok "$([ "${sessions:-0}" -gt 0 ] && [ "$failed" = 0 ] && echo 1)" \
	"the load ran through the switches: $sessions sessions, $failed failed"
head -5 /tmp/load.err 2>/dev/null | diag

libbpf_warnings /tmp/daemon2.log | diag

kill "$daemon" 2>/dev/null
wait "$daemon" 2>/dev/null
as_pg pg_ctl -D /tmp/disk/data -m fast stop >/dev/null
