#!/usr/bin/env bash
# ash_overhead.sh — what the always-on wait-event sampler costs PostgreSQL.
#
# pgbench select-only with small shared_buffers (the most wait-event
# transitions per second: every buffer miss is an IO:DataFileRead from the
# page cache).  Interleaved runs:
#   A = the baseline: pg_tracer not preloaded (BASELINE=unloaded, default),
#       or preloaded with pg_tracer.sampler_enabled = off (BASELINE=disabled);
#   B = pg_tracer preloaded, sampler on at RATE Hz (default 100).
# Pairs alternate A-B and B-A.  Prints each pair, then the median TPS of
# each side, the median of the per-pair ratios B/A and the sampler's own CPU
# use (from /proc, and as the sampler measures its ticks).  A benchmark, not
# a test: it asserts nothing.  Run as root after `make install`; no helper
# is started.
#
#   bench/ash_overhead.sh [PAIRS (5)] [SECONDS per run (15)] [RATE (100)]
#   env: BASELINE, and those of bench/lib.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

pairs=${1:-5}
secs=${2:-15}
rate=${3:-100}
baseline=${BASELINE:-unloaded}
case "$baseline" in unloaded|disabled) ;; *) echo "BASELINE must be unloaded or disabled" >&2; exit 1;; esac

bench_cluster ash 54393 no

# side A or B: rewrite the included file and restart (preload needs it)
side() {
	local conf=$bench_dir/data/bench_side.conf

	if [ "$1" = B ]; then
		printf "shared_preload_libraries = 'pg_tracer'\npg_tracer.sample_rate = %s\n" "$rate" > "$conf"
	elif [ "$baseline" = disabled ]; then
		printf "shared_preload_libraries = 'pg_tracer'\npg_tracer.sampler_enabled = off\n" > "$conf"
	else
		: > "$conf"
	fi
	chown postgres "$conf"
	as_pg pg_ctl -D "$bench_dir/data" -l "$bench_dir/log" -m fast -w restart >/dev/null
}
sampler_pid() { bench_psql "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_tracer sampler'"; }
busy_ms() { bench_psql 'SELECT sampler_busy_ms FROM pg_tracer_ash_status'; }

side B
bench_psql 'CREATE EXTENSION pg_tracer' >/dev/null

run_a() {
	side A
	bench_pgbench select 2 >/dev/null	# warm shared buffers after the restart
	ta=$(bench_pgbench select "$secs")
}
run_b() {
	local sp b0 b1 c0 c1
	side B
	bench_pgbench select 2 >/dev/null
	sp=$(sampler_pid)
	bench_pgbench_ready select
	b0=$(busy_ms); c0=$(bench_cpu_ticks "$sp")
	tb=$(bench_pgbench_timed select "$secs")
	c1=$(bench_cpu_ticks "$sp"); b1=$(busy_ms)
	cpu+=("$(echo "($c1 - $c0) / $(getconf CLK_TCK) / $secs * 100" | bc -l)")
	busy+=("$(echo "($b1 - $b0) / 1000 / $secs * 100" | bc -l)")
}

a=() b=() r=() cpu=() busy=()
for i in $(seq "$pairs"); do
	if bench_a_first "$i"; then run_a; run_b; else run_b; run_a; fi
	a+=("$ta"); b+=("$tb"); r+=("$(bench_ratio "$tb" "$ta")")
	printf 'pair %d: A %.1f tps, B %.1f tps, ratio %.4f, sampler cpu %.2f%% (/proc), %.2f%% (ticks)\n' \
		"$i" "$ta" "$tb" "${r[-1]}" "${cpu[-1]}" "${busy[-1]}"
done
printf 'select-only, %d clients, shared_buffers 16MB, %d pairs x %d s, A = %s, B = sampler at %d Hz:\n' \
	"$bench_clients" "$pairs" "$secs" "$baseline" "$rate"
printf '  median A %.1f tps, median B %.1f tps, median ratio B/A %.4f (min %.4f, max %.4f)\n' \
	"$(bench_median "${a[@]}")" "$(bench_median "${b[@]}")" "$(bench_median "${r[@]}")" \
	"$(printf '%s\n' "${r[@]}" | sort -g | head -1)" "$(printf '%s\n' "${r[@]}" | sort -g | tail -1)"
printf '  sampler cpu median %.2f%% of one core (/proc utime+stime), %.2f%% (time inside ticks)\n' \
	"$(bench_median "${cpu[@]}")" "$(bench_median "${busy[@]}")"
