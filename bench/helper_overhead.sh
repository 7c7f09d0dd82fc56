#!/usr/bin/env bash
# helper_overhead.sh — what the helper's always-on path costs PostgreSQL.
#
# A = the cluster with pg_tracer preloaded and no helper; B = the same with
# `pg-tracer daemon` serving it (pid filter + per-process syscall counting).
# Runs interleaved pairs of pgbench (A-B, then B-A) and prints each run, the
# median TPS of each side and the median of the per-pair ratios B/A.  A
# benchmark, not a test: it asserts nothing.  Run as root after
# `make install`.
#
#   bench/helper_overhead.sh [PAIRS (5)] [SECONDS per run (15)] [select|tpcb]
#
# HELPER_ARGS picks what the helper runs; the default is the foundation path
# alone (pid filter + syscall counting, no other probe set).  Use
# HELPER_ARGS="" for the daemon's defaults.  Environment: see bench/lib.sh.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

pairs=${1:-5}
secs=${2:-15}
mode=${3:-select}
read -ra helper_args <<<"${HELPER_ARGS---probes none --engine-probes none}"

bench_cluster helper 54391

run_a() { ta=$(bench_pgbench "$mode" "$secs"); }
run_b() {
	bench_helper_start "${helper_args[@]}"
	bench_helper_pgbench "$mode" "$secs"
	bench_helper_stop
	cpu+=("$helper_cpu")
}

a=() b=() r=() cpu=()
bench_pgbench "$mode" 5 >/dev/null	# warm the cache
for i in $(seq "$pairs"); do
	if bench_a_first "$i"; then run_a; run_b; else run_b; run_a; fi
	a+=("$ta"); b+=("$tb"); r+=("$(bench_ratio "$tb" "$ta")")
	printf 'pair %d: off %.1f tps, on %.1f tps, ratio %.3f, helper cpu %.2f%%\n' \
		"$i" "$ta" "$tb" "${r[-1]}" "${cpu[-1]}"
done
printf 'mode %s, %d pairs x %d s: median off %.1f tps, median on %.1f tps, median ratio on/off %.3f, helper cpu median %.2f%% of one core\n' \
	"$mode" "$pairs" "$secs" "$(bench_median "${a[@]}")" "$(bench_median "${b[@]}")" \
	"$(bench_median "${r[@]}")" "$(bench_median "${cpu[@]}")"
