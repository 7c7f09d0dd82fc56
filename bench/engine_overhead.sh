#!/usr/bin/env bash
# engine_overhead.sh — what each engine probe set costs PostgreSQL.
#
# For every configuration (the default engine sets together, then each set
# alone) and each workload (pgbench -S select-only, TPC-B), interleaved
# pairs (alternating which side goes first): A = `pg-tracer daemon --probes
# none` (pid filter only), B = the same daemon with the set(s) on.  Prints
# each pair, then per configuration and workload the median TPS of each
# side, the median of the per-pair ratios B/A and the median probe fire rate
# (events per second the set counted, from pg_tracer_probes).  A benchmark,
# not a test: it asserts nothing.  Run as root after `make install`.  A set
# whose median ratio is below 0.95 alone is off by default in the daemon
# (README).
#
#   bench/engine_overhead.sh [PAIRS (3)] [SECONDS per run (10)] [CONFIGS]
#   CONFIGS: comma-separated, default
#            "default,pg-query,pg-locks,pg-lwlock,pg-wal,pg-buffer,pg-checkpoint,pg-usdt"
#   env: MODES ("select tpcb"), and those of bench/lib.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

pairs=${1:-3}
secs=${2:-10}
configs=${3:-default,pg-query,pg-locks,pg-lwlock,pg-wal,pg-buffer,pg-checkpoint,pg-usdt}
modes=${MODES:-select tpcb}

bench_cluster engine 54394

# events the engine sets counted so far (sum over the sets that run)
engine_events() {
	bench_psql "SELECT coalesce(sum(events), 0) FROM pg_tracer_probes
	            WHERE probe_set LIKE 'pg-%' AND state <> 'unavailable'"
}
run_a() { bench_helper_start --probes none --engine-probes none; ta=$(bench_pgbench "$mode" "$secs"); bench_helper_stop; }
run_b() {
	local e0 e1
	bench_helper_start --probes "$probes" --engine-probes "$eng"
	e0=$(engine_events)
	tb=$(bench_pgbench "$mode" "$secs")
	sleep 1.5	# one more publication
	e1=$(engine_events)
	bench_helper_stop
	rate+=("$(echo "($e1 - $e0) / $secs" | bc -l)")
}

summary=()
for mode in $modes; do
	bench_pgbench "$mode" 5 >/dev/null	# warm the cache
	IFS=, read -ra cfgs <<<"$configs"
	for cfg in "${cfgs[@]}"; do
		if [ "$cfg" = default ]; then
			probes=pg-query,pg-locks,pg-wal,pg-buffer,pg-checkpoint,pg-usdt; eng=default
		else
			probes=$cfg; eng=$cfg
		fi
		a=() b=() r=() rate=()
		for i in $(seq "$pairs"); do
			if bench_a_first "$i"; then run_a; run_b; else run_b; run_a; fi
			a+=("$ta"); b+=("$tb"); r+=("$(bench_ratio "$tb" "$ta")")
			printf '%s %-13s pair %d: off %.1f tps, on %.1f tps, ratio %.3f, %.0f events/s\n' \
				"$mode" "$cfg" "$i" "$ta" "$tb" "${r[-1]}" "${rate[-1]}"
		done
		summary+=("$(printf '%-6s %-13s median off %8.1f tps  on %8.1f tps  ratio %.3f  fire rate %9.0f events/s' \
			"$mode" "$cfg" "$(bench_median "${a[@]}")" "$(bench_median "${b[@]}")" "$(bench_median "${r[@]}")" \
			"$(bench_median "${rate[@]}")")")
	done
done
echo "--- $pairs pairs x $secs s per configuration ($bench_clients clients, scale $bench_scale, shared_buffers 16MB)"
printf '%s\n' "${summary[@]}"
