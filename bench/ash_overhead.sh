#!/usr/bin/env bash
# ash_overhead.sh — what the always-on wait-event sampler costs PostgreSQL.
#
# pgbench select-only with small shared_buffers (the most wait-event
# transitions per second: every buffer miss is an IO:DataFileRead from the
# page cache).  Interleaved runs:
#   A = the baseline: pg_tracer not preloaded (BASELINE=unloaded, default),
#       or preloaded with pg_tracer.sampler_enabled = off (BASELINE=disabled);
#   B = pg_tracer preloaded, sampler on at RATE Hz (default 100).
# Pairs alternate A-B and B-A.  Prints each pair, then the median TPS of each side, the median of the
# per-pair ratios B/A and the sampler's own CPU use (from /proc, and as the
# sampler measures its ticks).  A benchmark, not a test: it asserts
# nothing.  Run as root after `make install`; no helper is started.
#
#   bench/ash_overhead.sh [PAIRS (5)] [SECONDS per run (15)] [RATE (100)]
#   env: PG_BINDIR (Debian's PostgreSQL 15), PORT (54393), BASELINE, CLIENTS (2)
set -euo pipefail

pairs=${1:-5}
secs=${2:-15}
rate=${3:-100}
baseline=${BASELINE:-unloaded}
clients=${CLIENTS:-2}
port=${PORT:-54393}
bindir=${PG_BINDIR:-/usr/lib/postgresql/15/bin}
[ "$(id -u)" -eq 0 ] || { echo "run as root" >&2; exit 1; }
case "$baseline" in unloaded|disabled) ;; *) echo "BASELINE must be unloaded or disabled" >&2; exit 1;; esac
export PATH=$bindir:$PATH
dir=$(mktemp -d /tmp/pgt_ash_bench.XXXXXX)
as_pg() { runuser -u postgres -- "$@"; }

cleanup() {
	as_pg pg_ctl -D "$dir/data" -m fast stop >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT

chown postgres "$dir"
install -d -m 0700 -o postgres "$dir/run"
as_pg initdb -D "$dir/data" -A trust >/dev/null
cat >> "$dir/data/postgresql.conf" <<CONF
port = $port
unix_socket_directories = '$dir'
listen_addresses = ''
shared_buffers = 16MB
include_if_exists = 'bench_side.conf'
CONF

# side A or B: rewrite the included file and restart (preload needs it)
side() {
	if [ "$1" = B ]; then
		printf "shared_preload_libraries = 'pg_tracer'\npg_tracer.runtime_dir = '%s'\npg_tracer.sample_rate = %s\n" \
			"$dir/run" "$rate" > "$dir/data/bench_side.conf"
	elif [ "$baseline" = disabled ]; then
		printf "shared_preload_libraries = 'pg_tracer'\npg_tracer.runtime_dir = '%s'\npg_tracer.sampler_enabled = off\n" \
			"$dir/run" > "$dir/data/bench_side.conf"
	else
		: > "$dir/data/bench_side.conf"
	fi
	chown postgres "$dir/data/bench_side.conf"
	as_pg pg_ctl -D "$dir/data" -l "$dir/log" -m fast -w restart >/dev/null
}

psql_q() { as_pg psql -h "$dir" -p "$port" -XAtq -d postgres -c "$1"; }
run() {
	as_pg pgbench -S -c "$clients" -j "$clients" -T "$1" -h "$dir" -p "$port" postgres 2>/dev/null |
		awk '/^tps/ {print $3; exit}'
}
sampler_pid() { psql_q "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_tracer sampler'"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

as_pg pg_ctl -D "$dir/data" -l "$dir/log" -w start >/dev/null
as_pg pgbench -h "$dir" -p "$port" -i -s 10 -q postgres >/dev/null 2>&1
side B
psql_q 'CREATE EXTENSION pg_tracer' >/dev/null

median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
a=() b=() r=() cpu=() busy=()
hz=$(getconf CLK_TCK)
run_a() {
	side A
	run 2 >/dev/null				# warm shared buffers after the restart
	ta=$(run "$secs")
}
run_b() {
	side B
	run 2 >/dev/null
	sp=$(sampler_pid)
	b0=$(psql_q 'SELECT sampler_busy_ms FROM pg_tracer_ash_status')
	c0=$(cpu_ticks "$sp")
	tb=$(run "$secs")
	c1=$(cpu_ticks "$sp")
	b1=$(psql_q 'SELECT sampler_busy_ms FROM pg_tracer_ash_status')
}
for i in $(seq "$pairs"); do
	# A B, then B A: a drift of the host's load cancels out
	if [ $((i % 2)) -eq 1 ]; then run_a; run_b; else run_b; run_a; fi
	a+=("$ta"); b+=("$tb")
	r+=("$(echo "$tb / $ta" | bc -l)")
	cpu+=("$(echo "($c1 - $c0) / $hz / $secs * 100" | bc -l)")
	busy+=("$(echo "($b1 - $b0) / 1000 / $secs * 100" | bc -l)")
	printf 'pair %d: A %.1f tps, B %.1f tps, ratio %.4f, sampler cpu %.2f%% (/proc), %.2f%% (ticks)\n' \
		"$i" "$ta" "$tb" "${r[-1]}" "${cpu[-1]}" "${busy[-1]}"
done
printf 'select-only, %d clients, shared_buffers 16MB, %d pairs x %d s, A = %s, B = sampler at %d Hz:\n' \
	"$clients" "$pairs" "$secs" "$baseline" "$rate"
printf '  median A %.1f tps, median B %.1f tps, median ratio B/A %.4f (min %.4f, max %.4f)\n' \
	"$(median "${a[@]}")" "$(median "${b[@]}")" "$(median "${r[@]}")" \
	"$(printf '%s\n' "${r[@]}" | sort -g | head -1)" "$(printf '%s\n' "${r[@]}" | sort -g | tail -1)"
printf '  sampler cpu median %.2f%% of one core (/proc utime+stime), %.2f%% (time inside ticks)\n' \
	"$(median "${cpu[@]}")" "$(median "${busy[@]}")"
