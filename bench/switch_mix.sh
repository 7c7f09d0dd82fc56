#!/usr/bin/env bash
# switch_mix.sh — whether the kernel sets change how the processes of a
# pgbench run are scheduled: voluntary and involuntary context switches a
# transaction, of the backends and of pgbench's threads, and the host's
# switches, in blocks with the sets on and off (one helper with
# `--kernel-sets escalated`, switched by escalation windows as in
# toggle_ab.sh kwindow).  If the sets made a backend lose its CPU more
# often, the processes sharing the CPUs would find colder caches, and user
# code would slow for that reason rather than for the programs' own time.
# Counts come from /proc/<pid>/status (voluntary_ctxt_switches,
# nonvoluntary_ctxt_switches) and /proc/stat (ctxt), transactions from
# pgbench_history (tpcb) or, for select-only, which writes no history, from
# pgbench's own per-second progress (-P 1 --progress-timestamp: the count
# of transactions interpolated at the snapshot times), at each block's
# ends.  The rows are printed when the run is over (select-only needs the
# progress line after each block's end).  A benchmark, not a test: it
# asserts nothing.  Run as root after `make install`.
#
#   bench/switch_mix.sh [ROUNDS (5)] [SECONDS per block (8)] [select|tpcb (tpcb)]
#
#   env: those of bench/lib.sh; SETS (default the six kernel sets), ARGS
#   (more daemon options)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

rounds=${1:-5}
block=${2:-8}
workload=${3:-tpcb}
sets=${SETS:-syscall,vfs,block,sched,memory,network}

# switch_counts PID...: "VOLUNTARY INVOLUNTARY" summed over the tasks of
# the given processes (a process gone meanwhile counts nothing)
switch_counts() {
	local p
	for p in "$@"; do
		cat /proc/"$p"/task/*/status 2>/dev/null || true
	done | awk '/^voluntary_ctxt_switches/ {v += $2}
		/^nonvoluntary_ctxt_switches/ {n += $2}
		END {print v + 0, n + 0}'
}

case $workload in select | tpcb) ;; *) echo "usage: switch_mix.sh [ROUNDS] [SECONDS] [select|tpcb]" >&2; exit 2 ;; esac

# snapshot: "TIME TXNS BACKEND_VOL BACKEND_INVOL PGBENCH_VOL PGBENCH_INVOL
# HOST" (TXNS -1 for select-only: counted from pgbench's progress instead)
snapshot() {
	local t txns=-1 backends pgb host
	t=$(date +%s.%N)
	[ "$workload" = select ] || txns=$(bench_psql "SELECT count(*) FROM pgbench_history")
	# shellcheck disable=SC2046  # one pid per word
	backends=$(switch_counts $(pgrep -f "postgres: postgres postgres \[local\]"))
	# shellcheck disable=SC2046
	pgb=$(switch_counts $(pgrep -x pgbench))
	host=$(awk '/^ctxt/ {print $2}' /proc/stat)
	echo "$t $txns $backends $pgb $host"
}

bench_cluster switchmix 55591
# shellcheck disable=SC2086  # ARGS: words on purpose
bench_helper_start --probes "$sets" --kernel-sets escalated --exact-budget unlimited \
	--anomaly off ${ARGS:-}
bench_pgbench_ready "$workload"
bench_workload_args "$workload"
rows=$(mktemp)
progress=$(mktemp)
trap 'rm -f "$rows" "$progress"; bench_cleanup' EXIT
# select-only: per-second progress to count its transactions by (TPC-B runs
# as before, without it: its pgbench_history counts them)
[ "$workload" = tpcb ] || bench_args=(-P 1 --progress-timestamp "${bench_args[@]}")
as_pg pgbench -T $((rounds * 2 * (block + 2) + 4)) "${bench_args[@]}" >/dev/null 2>"$progress" &
pgb=$!
sleep 2
echo "switch_mix: $workload, sets $sets, $rounds rounds of $block s blocks; switches a transaction"
printf '%-4s %8s  %14s %14s  %14s %14s  %10s\n' state txns "backends vol" "backends invol" \
	"pgbench vol" "pgbench invol" "host"
for ((r = 1; r <= rounds; r++)); do
	for state in on off; do
		if [ "$state" = on ]; then
			bench_psql "SELECT granted_s FROM pg_tracer_escalate(3600)" >/dev/null
		else
			bench_psql "SELECT pg_tracer_deescalate()" >/dev/null
		fi
		sleep 0.5
		a=$(snapshot)
		sleep "$block"
		b=$(snapshot)
		echo "$state $a $b" >> "$rows"
	done
done
wait "$pgb" || true
python3 - "$rows" "$progress" <<'PY'
import bisect, re, sys
# pgbench's progress: at time t, the rate over the second before: the
# cumulative count of transactions at each line, interpolated in between
prog = [(float(m.group(1)), float(m.group(2))) for m in
        (re.match(r"progress: ([\d.]+) s, ([\d.]+) tps", l) for l in open(sys.argv[2])) if m]
pt, cum = [], []
for i, (t, tps) in enumerate(prog):
    prev = prog[i - 1][0] if i else t - 1.0
    pt.append(t)
    cum.append((cum[-1] if cum else 0.0) + tps * (t - prev))

def txns_at(t):
    if len(pt) < 2 or not pt[0] <= t <= pt[-1]:
        return None
    i = max(bisect.bisect_left(pt, t), 1)
    f = (t - pt[i - 1]) / (pt[i] - pt[i - 1])
    return cum[i - 1] + (cum[i] - cum[i - 1]) * f

for l in open(sys.argv[1]):
    f = l.split()
    state, a, b = f[0], [float(x) for x in f[1:8]], [float(x) for x in f[8:15]]
    d = [y - x for x, y in zip(a[1:], b[1:])]
    if a[1] < 0:  # select-only: from the progress
        ta, tb = txns_at(a[0]), txns_at(b[0])
        if ta is None or tb is None:
            print("%-4s (no pgbench progress around this block: left out)" % state)
            continue
        d[0] = tb - ta
    tx = d[0] or 1
    print("%-4s %8d  %14.2f %14.2f  %14.2f %14.2f  %10.2f" % (state, d[0], *(x / tx for x in d[1:])))
PY
