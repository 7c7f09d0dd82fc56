#!/usr/bin/env bash
# exact_overhead.sh — what exact wait timing (probe set "exact", system-call
# tagging) costs PostgreSQL.
#
# Baseline = the cluster served by `pg-tracer daemon --probes none` (the
# foundation's cost only); FULL = `--probes exact --mode full` (every
# blocking wait timed).  Each pair runs baseline then FULL (or FULL then
# baseline on odd pairs) for pgbench select-only (-S, shared_buffers 16MB,
# scale 10: page-cache reads) and TPC-B; the script prints every run, the
# median TPS per side, the median of the per-pair ratios, the exact waits
# timed per second, and what the BPF programs cost per invocation
# (kernel.bpf_stats_enabled: run_time_ns / run_cnt of pgt_exact_enter and
# pgt_exact_exit; most invocations are system calls with no wait event, or
# of other processes).  Then TIERED-OFF (`--probes exact --mode tiered`,
# no window open: the programs are detached between windows) against
# baseline, select-only.  A benchmark, not a test: it asserts nothing.  Run as root
# after `make install`.
#
#   bench/exact_overhead.sh [PAIRS (5)] [SECONDS per run (15)] [OFF_PAIRS (2)]
#
# Environment: PG_BINDIR (default /usr/lib/postgresql/15/bin; its server
# must have pg_tracer installed), HELPER (default /usr/local/sbin/pg-tracer).
set -euo pipefail

pairs=${1:-5}
secs=${2:-15}
off_pairs=${3:-2}
[ "$(id -u)" -eq 0 ] || { echo "run as root" >&2; exit 1; }
bindir=${PG_BINDIR:-/usr/lib/postgresql/15/bin}
helper_bin=${HELPER:-/usr/local/sbin/pg-tracer}
export PATH=$bindir:$PATH
dir=$(mktemp -d /tmp/pgt_exact_bench.XXXXXX)
port=${PGT_BENCH_PORT:-55579}
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
as_pg psql -h "$dir" -p "$port" -qAtc 'CREATE EXTENSION pg_tracer' postgres

psql_q() { as_pg psql -h "$dir" -p "$port" -qAtc "$1" postgres; }
run() { # run select|tpcb -> tps
	local f=(-c 2 -j 2 -T "$secs" -h "$dir" -p "$port" postgres)
	[ "$1" = select ] && f=(-S "${f[@]}")
	as_pg pgbench "${f[@]}" 2>/dev/null | awk '/^tps/ {print $3; exit}'
}
start_helper() { # start_helper PROBES [daemon args...]
	local probes=$1; shift
	"$helper_bin" daemon --pgdata "$dir/data" --runtime-dir "$rt" --log-level error \
		--probes "$probes" --anomaly off "$@" &
	helper=$!
	for _ in $(seq 50); do
		[ "$(psql_q 'SELECT helper_connected FROM pg_tracer_status()')" = t ] && break
		sleep 0.2
	done
	sleep 1
}
stop_helper() { kill "$helper"; wait "$helper" 2>/dev/null || true; helper=; }
waits() { psql_q "SELECT coalesce(sum(waits), 0) FROM pg_tracer_exact_waits()"; }
# prog_stat NAME -> "run_cnt run_time_ns" of a loaded BPF program
prog_stat() {
	bpftool prog show name "$1" 2>/dev/null |
		awk '{for (i = 1; i < NF; i++) { if ($i == "run_time_ns") t = $(i+1); if ($i == "run_cnt") c = $(i+1) }}
		     END {print c + 0, t + 0}'
}
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

old_stats=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1
trap 'sysctl -qw kernel.bpf_stats_enabled=$old_stats; cleanup' EXIT

declare -A rate_sum ns_sum cnt_sum
sel_r=() tpcb_r=() sel_a=() sel_b=() tpcb_a=() tpcb_b=()
run select >/dev/null	# warm the cache
full_run() { # full_run MODE: full_tps; adds waits/s and BPF costs (no subshell)
	start_helper exact --mode full
	local w p c t
	full_tps=$(run "$1")
	w=$(waits)
	for p in pgt_exact_enter pgt_exact_exit; do
		read -r c t < <(prog_stat "$p")
		cnt_sum[$1.$p]=$(( ${cnt_sum[$1.$p]:-0} + c ))
		ns_sum[$1.$p]=$(( ${ns_sum[$1.$p]:-0} + t ))
	done
	stop_helper
	rate_sum[$1]=$(echo "${rate_sum[$1]:-0} + $w / $secs" | bc -l)
}
for i in $(seq "$pairs"); do
	for mode in select tpcb; do
		if [ $((i % 2)) -eq 1 ]; then
			start_helper none; ta=$(run "$mode"); stop_helper
			full_run "$mode"; tb=$full_tps
		else
			full_run "$mode"; tb=$full_tps
			start_helper none; ta=$(run "$mode"); stop_helper
		fi
		ratio=$(echo "$tb / $ta" | bc -l)
		if [ "$mode" = select ]; then sel_a+=("$ta"); sel_b+=("$tb"); sel_r+=("$ratio")
		else tpcb_a+=("$ta"); tpcb_b+=("$tb"); tpcb_r+=("$ratio"); fi
		printf 'pair %d %-6s: baseline %.1f tps, full %.1f tps, ratio %.3f\n' "$i" "$mode" "$ta" "$tb" "$ratio"
	done
done
printf '\nselect-only: median baseline %.1f, full %.1f tps, median ratio %.3f (target >= 0.95)\n' \
	"$(median "${sel_a[@]}")" "$(median "${sel_b[@]}")" "$(median "${sel_r[@]}")"
printf 'TPC-B:       median baseline %.1f, full %.1f tps, median ratio %.3f (target >= 0.98)\n' \
	"$(median "${tpcb_a[@]}")" "$(median "${tpcb_b[@]}")" "$(median "${tpcb_r[@]}")"
echo "exact waits timed (per second, mean over the full runs) and BPF cost per invocation:"
for mode in select tpcb; do
	printf '  %-6s %8.0f waits/s' "$mode" "$(echo "${rate_sum[$mode]:-0} / $pairs" | bc -l)"
	for p in pgt_exact_enter pgt_exact_exit; do
		c=${cnt_sum[$mode.$p]:-0}
		[ "$c" -gt 0 ] && printf '   %s %.0f ns x %.0f/s' "${p#pgt_exact_}" \
			"$(echo "${ns_sum[$mode.$p]} / $c" | bc -l)" "$(echo "$c / $pairs / $secs" | bc -l)"
	done
	echo
done

echo
echo "tiered mode outside windows (programs detached), select-only ($off_pairs pairs):"
rs=()
for i in $(seq "$off_pairs"); do
	start_helper none; ta=$(run select); stop_helper
	start_helper exact --mode tiered; tb=$(run select); stop_helper
	rs+=("$(echo "$tb / $ta" | bc -l)")
	printf '  pair %d: baseline %.1f, tiered-off %.1f tps\n' "$i" "$ta" "$tb"
done
printf '  median ratio %.3f\n' "$(median "${rs[@]}")"
