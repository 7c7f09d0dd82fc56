#!/usr/bin/env bash
# engine_overhead.sh — what each engine probe set costs PostgreSQL.
#
# For every configuration (the default engine sets together, then each set
# alone) and each workload (pgbench -S select-only, TPC-B), interleaved
# A/B pairs: A = `pg-tracer daemon --probes none` (pid filter only), B = the
# same daemon with the set(s) on.  Prints each pair, then per configuration
# and workload the median TPS of each side, the median of the per-pair
# ratios B/A and the median probe fire rate (events per second the set
# counted, from pg_tracer_probes).  A benchmark, not a test: it asserts
# nothing.  Run as root after `make install`.  A set whose median ratio is
# below 0.95 alone is off by default in the daemon (README, pg-lwlock).
#
#   bench/engine_overhead.sh [PAIRS (3)] [SECONDS per run (10)] [CONFIGS]
#   CONFIGS: comma-separated, default
#            "default,pg-query,pg-locks,pg-lwlock,pg-wal,pg-buffer,pg-checkpoint,pg-usdt"
#   env: PG_BIN (/usr/lib/postgresql/15/bin), HELPER (/usr/local/sbin/pg-tracer),
#        PORT (54392), MODES ("select tpcb")
set -euo pipefail

pairs=${1:-3}
secs=${2:-10}
configs=${3:-default,pg-query,pg-locks,pg-lwlock,pg-wal,pg-buffer,pg-checkpoint,pg-usdt}
modes=${MODES:-select tpcb}
pg_bin=${PG_BIN:-/usr/lib/postgresql/15/bin}
helper_bin=${HELPER:-/usr/local/sbin/pg-tracer}
port=${PORT:-54392}
[ "$(id -u)" -eq 0 ] || { echo "run as root" >&2; exit 1; }
export PATH=$pg_bin:$PATH
dir=$(mktemp -d /tmp/pgt_bench_engine.XXXXXX)
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
install -d -m 0700 -o postgres "$rt"
as_pg initdb -D "$dir/data" -A trust >/dev/null
cat >> "$dir/data/postgresql.conf" <<CONF
port = $port
unix_socket_directories = '$dir'
listen_addresses = ''
shared_buffers = 16MB
shared_preload_libraries = 'pg_tracer'
pg_tracer.runtime_dir = '$rt'
compute_query_id = on
CONF
as_pg pg_ctl -D "$dir/data" -l "$dir/log" -w start >/dev/null
as_pg pgbench -h "$dir" -p "$port" -i -s 10 -q postgres >/dev/null 2>&1
as_pg psql -h "$dir" -p "$port" -X -q -c 'CREATE EXTENSION pg_tracer' postgres

psql_q() { as_pg psql -h "$dir" -p "$port" -X -At -c "$1" postgres; }

start_helper() {	# $1: --probes list, $2: --engine-probes list
	"$helper_bin" daemon --pgdata "$dir/data" --runtime-dir "$rt" --log-level warn \
		--probes "$1" --engine-probes "$2" &
	helper=$!
	sleep 2
}
stop_helper() { kill "$helper"; wait "$helper" 2>/dev/null || true; helper=; }

# events the engine sets counted so far (sum over the sets that run)
engine_events() {
	psql_q "SELECT coalesce(sum(events), 0) FROM pg_tracer_probes
	         WHERE probe_set LIKE 'pg-%' AND state <> 'unavailable'"
}

median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

summary=()
for mode in $modes; do
	flags=(-c 2 -j 2 -T "$secs" -h "$dir" -p "$port" postgres)
	[ "$mode" = select ] && flags=(-S "${flags[@]}")
	run() { as_pg pgbench "${flags[@]}" 2>/dev/null | awk '/^tps/ {print $3; exit}'; }
	run >/dev/null	# warm the cache
	IFS=, read -ra cfgs <<<"$configs"
	for cfg in "${cfgs[@]}"; do
		if [ "$cfg" = default ]; then
			probes=pg-query,pg-locks,pg-wal,pg-buffer,pg-checkpoint,pg-usdt; eng=default
		else
			probes=$cfg; eng=$cfg
		fi
		a=() b=() r=() rate=()
		for i in $(seq "$pairs"); do
			start_helper none none
			ta=$(run)
			stop_helper
			start_helper "$probes" "$eng"
			e0=$(engine_events)
			tb=$(run)
			sleep 1.5	# one more publication
			e1=$(engine_events)
			stop_helper
			a+=("$ta"); b+=("$tb")
			r+=("$(echo "$tb / $ta" | bc -l)")
			rate+=("$(echo "($e1 - $e0) / $secs" | bc -l)")
			printf '%s %-13s pair %d: off %.1f tps, on %.1f tps, ratio %.3f, %.0f events/s\n' \
				"$mode" "$cfg" "$i" "$ta" "$tb" "${r[-1]}" "${rate[-1]}"
		done
		summary+=("$(printf '%-6s %-13s median off %8.1f tps  on %8.1f tps  ratio %.3f  fire rate %9.0f events/s' \
			"$mode" "$cfg" "$(median "${a[@]}")" "$(median "${b[@]}")" "$(median "${r[@]}")" \
			"$(median "${rate[@]}")")")
	done
done
echo "--- $pairs pairs x $secs s per configuration (2 clients, scale 10, shared_buffers 16MB)"
printf '%s\n' "${summary[@]}"
