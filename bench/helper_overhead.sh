#!/usr/bin/env bash
# helper_overhead.sh — what the helper's always-on path costs PostgreSQL.
#
# A = the cluster with pg_tracer preloaded and no helper; B = the same with
# `pg-tracer daemon` serving it (pid filter + per-process syscall counting).
# Runs interleaved A/B pairs of pgbench and prints each run, the median TPS
# of each side and the median of the per-pair ratios B/A.  A benchmark, not
# a test: it asserts nothing.  Run as root after `make install`.
#
#   bench/helper_overhead.sh [PAIRS (5)] [SECONDS per run (15)] [select|tpcb]
#
# HELPER_ARGS picks what the helper runs; the default is the foundation path
# alone (pid filter + syscall counting, no other probe set).  Use
# HELPER_ARGS="" for the daemon's defaults.
set -euo pipefail

pairs=${1:-5}
secs=${2:-15}
mode=${3:-select}
helper_args=${HELPER_ARGS---probes none --engine-probes none}
[ "$(id -u)" -eq 0 ] || { echo "run as root" >&2; exit 1; }
export PATH=/usr/lib/postgresql/15/bin:$PATH
dir=$(mktemp -d /tmp/pgt_bench.XXXXXX)
port=54391
rt=$dir/run
as_pg() { runuser -u postgres -- "$@"; }
helper=

cleanup() {
	[ -n "$helper" ] && kill "$helper" 2>/dev/null || true
	as_pg pg_ctl -D "$dir/data" -m fast stop >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT

chown postgres "$dir"
install -d -m 0755 "$rt"	# root-owned, as in production
as_pg initdb -D "$dir/data" -A trust >/dev/null
cat >> "$dir/data/postgresql.conf" <<CONF
port = $port
unix_socket_directories = '$dir'
listen_addresses = ''
shared_buffers = 16MB
shared_preload_libraries = 'pg_tracer'
pg_tracer.runtime_dir = '$rt'
CONF
as_pg pg_ctl -D "$dir/data" -l "$dir/log" -w start >/dev/null
as_pg pgbench -h "$dir" -p "$port" -i -s 10 -q postgres >/dev/null 2>&1

flags=(-c 2 -j 2 -T "$secs" -h "$dir" -p "$port" postgres)
[ "$mode" = select ] && flags=(-S "${flags[@]}")

run() { as_pg pgbench "${flags[@]}" 2>/dev/null | awk '/^tps/ {print $3; exit}'; }

start_helper() {
	/usr/local/sbin/pg-tracer daemon --pgdata "$dir/data" --runtime-dir "$rt" --log-level error $helper_args &
	helper=$!
	sleep 2
}
stop_helper() { kill "$helper"; wait "$helper" 2>/dev/null || true; helper=; }

helper_cpu_ticks() { awk '{print $14 + $15}' "/proc/$helper/stat"; }

a=() b=() r=() cpu=()
run >/dev/null	# warm the cache
for i in $(seq "$pairs"); do
	ta=$(run)
	start_helper
	t0=$(helper_cpu_ticks)
	tb=$(run)
	t1=$(helper_cpu_ticks)
	stop_helper
	a+=("$ta"); b+=("$tb")
	r+=("$(echo "$tb / $ta" | bc -l)")
	cpu+=("$(echo "($t1 - $t0) / $(getconf CLK_TCK) / $secs * 100" | bc -l)")
	printf 'pair %d: off %.1f tps, on %.1f tps, ratio %.3f, helper cpu %.2f%%\n' \
		"$i" "$ta" "$tb" "${r[-1]}" "${cpu[-1]}"
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
printf 'mode %s, %d pairs x %d s: median off %.1f tps, median on %.1f tps, median ratio on/off %.3f, helper cpu median %.2f%% of one core\n' \
	"$mode" "$pairs" "$secs" "$(median "${a[@]}")" "$(median "${b[@]}")" "$(median "${r[@]}")" "$(median "${cpu[@]}")"
