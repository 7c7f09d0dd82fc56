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
# pgbench_history, at each block's ends.  A benchmark, not a test: it
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

# snapshot: "TXNS BACKEND_VOL BACKEND_INVOL PGBENCH_VOL PGBENCH_INVOL HOST"
snapshot() {
	local txns backends pgb host
	txns=$(bench_psql "SELECT count(*) FROM pgbench_history")
	# shellcheck disable=SC2046  # one pid per word
	backends=$(switch_counts $(pgrep -f "postgres: postgres postgres \[local\]"))
	# shellcheck disable=SC2046
	pgb=$(switch_counts $(pgrep -x pgbench))
	host=$(awk '/^ctxt/ {print $2}' /proc/stat)
	echo "$txns $backends $pgb $host"
}

bench_cluster switchmix 55591
# shellcheck disable=SC2086  # ARGS: words on purpose
bench_helper_start --probes "$sets" --kernel-sets escalated --exact-budget unlimited \
	--anomaly off ${ARGS:-}
bench_pgbench_ready "$workload"
bench_workload_args "$workload"
as_pg pgbench -T $((rounds * 2 * (block + 2) + 4)) "${bench_args[@]}" >/dev/null 2>&1 &
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
		python3 - "$state" "$a" "$b" <<'PY'
import sys
state, a, b = sys.argv[1], [int(x) for x in sys.argv[2].split()], [int(x) for x in sys.argv[3].split()]
d = [y - x for x, y in zip(a, b)]
tx = d[0] or 1
print("%-4s %8d  %14.2f %14.2f  %14.2f %14.2f  %10.2f" % (state, d[0], *(x / tx for x in d[1:])))
PY
	done
done
wait "$pgb" || true
