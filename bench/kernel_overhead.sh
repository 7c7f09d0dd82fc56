#!/usr/bin/env bash
# kernel_overhead.sh — what the kernel probe sets cost PostgreSQL.
#
# OFF = the cluster served by `pg-tracer daemon --probes none` (pid filter
# and syscall counting only, the foundation's cost); ON = the same daemon
# with the kernel probe sets in SETS (default every kernel set; `all` would
# also start the exact tier).  Each pair
# runs OFF and ON (alternating which goes first) for pgbench select-only
# (-S) and TPC-B; the script prints every run, the median TPS per side, the
# median of the per-pair ratios ON/OFF and the event rate of each set
# (the growth of pg_tracer_probes.events over each ON run's timed seconds,
# read right before and right after them, so that the VACUUM, CHECKPOINT
# and warm-up before the run and the helper's start are not in it; the
# helper copies the counts once a second, so each end may lag by a second,
# by about as much at both ends).  PAIRS and SOLO_PAIRS are rounded up to
# even numbers (said on stderr): pairs alternate OFF-ON and ON-OFF, and an
# odd number would run one order once more.  Then each set
# alone against OFF (select-only) to find a set that costs more than 5% by
# itself.  Last, the in-kernel cost of every program of the sets during one
# select-only run with SETS on (kernel.bpf_stats_enabled for that run only:
# calls per second, ns per call, share of one CPU), a figure other load on
# the host does not blur.  A benchmark, not a test: it asserts nothing.
# Run as root after `make install`.
#
#   bench/kernel_overhead.sh [PAIRS (6)] [SECONDS per run (15)] [SOLO_PAIRS (2)]
#   env: SETS (default all), and those of bench/lib.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

pairs=$(bench_even "${1:-6}" PAIRS)
secs=${2:-15}
solo_pairs=$(bench_even "${3:-2}" SOLO_PAIRS)
sets_on=${SETS:-syscall,vfs,block,sched,memory,network}	# `all` would add exact
all_sets="syscall vfs block sched memory network"

bench_cluster kernel 54392

events() { bench_psql "SELECT probe_set || ' ' || events FROM pg_tracer_probes
                       WHERE probe_set IN ('${all_sets// /\',\'}')"; }
run_off() { bench_helper_start --probes none; ta=$(bench_pgbench "$1" "$secs"); bench_helper_stop; }
run_on() { # run_on MODE PROBES: tb, and the sets' event rates over the timed run added up
	local s e
	local -A e0=()
	bench_helper_start --probes "$2"
	bench_helper_pgbench "$1" "$secs" events	# events before and after: bench_count0/1
	while read -r s e; do
		if [ -n "$s" ]; then e0[$s]=$e; fi
	done <<<"$bench_count0"
	while read -r s e; do
		[ -n "$s" ] || continue
		rate_sum[$1.$s]=$(echo "${rate_sum[$1.$s]:-0} + ($e - ${e0[$s]:-0}) / $secs" | bc -l)
	done <<<"$bench_count1"
	bench_helper_stop
}

declare -A rate_sum
sel_r=() tpcb_r=() sel_a=() sel_b=() tpcb_a=() tpcb_b=()
bench_pgbench select 5 >/dev/null	# warm the cache
for i in $(seq "$pairs"); do
	for mode in select tpcb; do
		if bench_a_first "$i"; then run_off "$mode"; run_on "$mode" "$sets_on"
		else run_on "$mode" "$sets_on"; run_off "$mode"; fi
		ratio=$(bench_ratio "$tb" "$ta")
		if [ "$mode" = select ]; then sel_a+=("$ta"); sel_b+=("$tb"); sel_r+=("$ratio")
		else tpcb_a+=("$ta"); tpcb_b+=("$tb"); tpcb_r+=("$ratio"); fi
		printf 'pair %d %-6s: off %.1f tps, on %.1f tps, ratio %.3f, helper cpu %.1f%%\n' \
			"$i" "$mode" "$ta" "$tb" "$ratio" "$helper_cpu"
	done
done
printf '\nselect-only: median off %.1f, on %.1f tps, median ratio %.3f (target >= 0.90)\n' \
	"$(bench_median "${sel_a[@]}")" "$(bench_median "${sel_b[@]}")" "$(bench_median "${sel_r[@]}")"
printf 'TPC-B:       median off %.1f, on %.1f tps, median ratio %.3f (target >= 0.95)\n' \
	"$(bench_median "${tpcb_a[@]}")" "$(bench_median "${tpcb_b[@]}")" "$(bench_median "${tpcb_r[@]}")"
echo "event rates with $sets_on on (events/s, mean over the ON runs):"
for s in $all_sets; do
	printf '  %-8s select %10.0f   tpcb %10.0f\n' "$s" \
		"$(echo "${rate_sum[select.$s]:-0} / $pairs" | bc -l)" \
		"$(echo "${rate_sum[tpcb.$s]:-0} / $pairs" | bc -l)"
done

echo
if [ "$solo_pairs" -gt 0 ]; then
	echo "each set alone, select-only ($solo_pairs pairs):"
	for s in $all_sets; do
		rs=()
		for i in $(seq "$solo_pairs"); do
			if bench_a_first "$i"; then run_off select; run_on select "$s"
			else run_on select "$s"; run_off select; fi
			rs+=("$(bench_ratio "$tb" "$ta")")
		done
		m=$(bench_median "${rs[@]}")
		flag=$(echo "$m < 0.95" | bc -l)
		printf '  %-8s median ratio %.3f%s\n' "$s" "$m" "$([ "$flag" = 1 ] && echo '  (costs more than 5% alone)')"
	done
fi

echo
echo "in-kernel cost per program, select-only, $sets_on on (bpf_stats for this run only):"
others=$(bench_bpf_snapshot)	# programs loaded before our helper are not ours
bench_helper_start --probes "$sets_on"
bench_pgbench_ready select
bench_bpf_stats_on
before=$(bench_bpf_snapshot)
tps=$(bench_pgbench_timed select "$secs")
after=$(bench_bpf_snapshot)
bench_bpf_stats_off
bench_helper_stop
bench_bpf_report "pgt_k|pgt_sys_|pgt_sched_switch" "$secs" "$tps" "$before" "$after" "$others"
