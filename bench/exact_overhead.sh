#!/usr/bin/env bash
# exact_overhead.sh — what exact wait timing (probe set "exact", system-call
# tagging) costs PostgreSQL.
#
# Baseline = the cluster served by `pg-tracer daemon --probes none` (the
# foundation's cost only); FULL = `--probes exact --mode full` (every
# blocking wait timed).  Each pair runs baseline and FULL (alternating which
# goes first) for pgbench select-only (-S, shared_buffers 16MB, scale 10:
# page-cache reads) and TPC-B; the script prints every run, the median TPS
# per side, the median of the per-pair ratios, the exact waits timed per
# second, and what the BPF programs cost per invocation in one more run
# (kernel.bpf_stats_enabled, off during the pairs: run_time_ns / run_cnt of
# the programs named pgt_exact*; most invocations are system calls with no
# wait event, or of other processes).  Then TIERED-OFF (`--probes exact --mode tiered`, no
# window open: the programs are detached between windows) against baseline,
# select-only, in pairs that alternate which goes first as well.  The
# waits timed per second are the growth of pg_tracer_exact_waits() over
# each FULL run's timed seconds (read right before and after them), not
# the count since the helper started (the VACUUM, CHECKPOINT and warm-up
# before the run were in that).  PAIRS and OFF_PAIRS are rounded up to
# even numbers (said on stderr): as many pairs in each order.  A
# benchmark, not a test: it asserts nothing.  Run as root after `make
# install`.
#
#   bench/exact_overhead.sh [PAIRS (6)] [SECONDS per run (15)] [OFF_PAIRS (2)]
#   env: EXACT_ARGS (extra daemon arguments for FULL, e.g. an exact source),
#        and those of bench/lib.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

pairs=$(bench_even "${1:-6}" PAIRS)
secs=${2:-15}
off_pairs=$(bench_even "${3:-2}" OFF_PAIRS)
read -ra exact_args <<<"${EXACT_ARGS:-}"

bench_cluster exact 55579

waits() { bench_psql "SELECT coalesce(sum(waits), 0) FROM pg_tracer_exact_waits()"; }
run_base() { bench_helper_start --probes none --anomaly off; ta=$(bench_pgbench "$1" "$secs"); bench_helper_stop; }
run_full() { # run_full MODE: tb; adds the waits/s of the timed run
	bench_helper_start --probes exact --anomaly off --mode full "${exact_args[@]}"
	bench_helper_pgbench "$1" "$secs" waits	# waits before and after: bench_count0/1
	bench_helper_stop
	rate_sum[$1]=$(echo "${rate_sum[$1]:-0} + ($bench_count1 - $bench_count0) / $secs" | bc -l)
}
cost_run() { # cost_run MODE: one full run with bpf_stats on, its report
	local before after tps
	bench_helper_start --probes exact --anomaly off --mode full "${exact_args[@]}"
	bench_pgbench_ready "$1"
	bench_bpf_stats_on
	before=$(bench_bpf_snapshot)
	tps=$(bench_pgbench_timed "$1" "$secs")
	after=$(bench_bpf_snapshot)
	bench_bpf_stats_off
	bench_helper_stop
	bench_bpf_report "pgt_exact|pgt_sys_|pgt_sched_switch" "$secs" "$tps" "$before" "$after"
}

declare -A rate_sum
sel_r=() tpcb_r=() sel_a=() sel_b=() tpcb_a=() tpcb_b=()
bench_pgbench select 5 >/dev/null	# warm the cache
for i in $(seq "$pairs"); do
	for mode in select tpcb; do
		if bench_a_first "$i"; then run_base "$mode"; run_full "$mode"
		else run_full "$mode"; run_base "$mode"; fi
		ratio=$(bench_ratio "$tb" "$ta")
		if [ "$mode" = select ]; then sel_a+=("$ta"); sel_b+=("$tb"); sel_r+=("$ratio")
		else tpcb_a+=("$ta"); tpcb_b+=("$tb"); tpcb_r+=("$ratio"); fi
		printf 'pair %d %-6s: baseline %.1f tps, full %.1f tps, ratio %.3f, helper cpu %.1f%%\n' \
			"$i" "$mode" "$ta" "$tb" "$ratio" "$helper_cpu"
	done
done
printf '\nselect-only: median baseline %.1f, full %.1f tps, median ratio %.3f (target >= 0.95)\n' \
	"$(bench_median "${sel_a[@]}")" "$(bench_median "${sel_b[@]}")" "$(bench_median "${sel_r[@]}")"
printf 'TPC-B:       median baseline %.1f, full %.1f tps, median ratio %.3f (target >= 0.98)\n' \
	"$(bench_median "${tpcb_a[@]}")" "$(bench_median "${tpcb_b[@]}")" "$(bench_median "${tpcb_r[@]}")"
for mode in select tpcb; do
	printf '%s: exact waits timed %.0f/s (mean over the full runs); BPF cost in one more full run (bpf_stats on):\n' \
		"$mode" "$(echo "${rate_sum[$mode]:-0} / $pairs" | bc -l)"
	cost_run "$mode"
done

[ "$off_pairs" -gt 0 ] || exit 0
echo
echo "tiered mode outside windows (programs detached), select-only ($off_pairs pairs):"
rs=()
run_tiered() { bench_helper_start --probes exact --anomaly off --mode tiered; tb=$(bench_pgbench select "$secs"); bench_helper_stop; }
for i in $(seq "$off_pairs"); do
	if bench_a_first "$i"; then run_base select; run_tiered
	else run_tiered; run_base select; fi
	rs+=("$(bench_ratio "$tb" "$ta")")
	printf '  pair %d: baseline %.1f, tiered-off %.1f tps\n' "$i" "$ta" "$tb"
done
printf '  median ratio %.3f\n' "$(bench_median "${rs[@]}")"
