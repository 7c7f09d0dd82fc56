#!/usr/bin/env bash
# kernel_overhead.sh — what the kernel probe sets cost PostgreSQL.
#
# OFF = the cluster served by `pg-tracer daemon --probes none` (pid filter
# and syscall counting only, the foundation's cost); ON = the same daemon
# with every kernel probe set (`--probes all`).  Each pair runs OFF then ON
# for pgbench select-only (-S) and for TPC-B, interleaved; the script prints
# every run, the median TPS per side and the median of the per-pair ratios
# ON/OFF, and the event rate of each set (pg_tracer_probes.events per
# second during the ON runs).  Then each set alone against OFF (select-only)
# to find a set that costs more than 5% by itself.  A benchmark, not a
# test: it asserts nothing.  Last, the in-kernel cost of every program of
# the sets during one select-only run with all sets on (kernel.bpf_stats_enabled
# for that run only: calls per second, ns per call, share of one CPU), a
# figure other load on the host does not blur.  Run as root after
# `make install`.
#
#   bench/kernel_overhead.sh [PAIRS (5)] [SECONDS per run (15)] [SOLO_PAIRS (2)]
#
# Environment: PG_BINDIR (default /usr/lib/postgresql/15/bin; its server
# must have pg_tracer installed), HELPER (default /usr/local/sbin/pg-tracer).
set -euo pipefail

pairs=${1:-5}
secs=${2:-15}
solo_pairs=${3:-2}
[ "$(id -u)" -eq 0 ] || { echo "run as root" >&2; exit 1; }
bindir=${PG_BINDIR:-/usr/lib/postgresql/15/bin}
helper_bin=${HELPER:-/usr/local/sbin/pg-tracer}
export PATH=$bindir:$PATH
dir=$(mktemp -d /tmp/pgt_kernel_bench.XXXXXX)
port=${PGT_BENCH_PORT:-54392}
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
start_helper() { # start_helper PROBES
	"$helper_bin" daemon --pgdata "$dir/data" --runtime-dir "$rt" --log-level error --probes "$1" &
	helper=$!
	for _ in $(seq 50); do
		[ "$(psql_q 'SELECT helper_connected FROM pg_tracer_status()')" = t ] && break
		sleep 0.2
	done
	sleep 1
}
stop_helper() { kill "$helper"; wait "$helper" 2>/dev/null || true; helper=; }
events() { psql_q "SELECT probe_set || ' ' || events FROM pg_tracer_probes
                    WHERE probe_set IN ('syscall','vfs','block','sched','memory','network')"; }
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

declare -A rate_sum
sel_r=() tpcb_r=() sel_a=() sel_b=() tpcb_a=() tpcb_b=()
run select >/dev/null	# warm the cache
for i in $(seq "$pairs"); do
	for mode in select tpcb; do
		start_helper none; ta=$(run "$mode"); stop_helper
		start_helper all
		tb=$(run "$mode")
		while read -r s e; do
			rate_sum[$mode.$s]=$(echo "${rate_sum[$mode.$s]:-0} + $e / $secs" | bc -l)
		done < <(events)
		stop_helper
		ratio=$(echo "$tb / $ta" | bc -l)
		if [ "$mode" = select ]; then sel_a+=("$ta"); sel_b+=("$tb"); sel_r+=("$ratio")
		else tpcb_a+=("$ta"); tpcb_b+=("$tb"); tpcb_r+=("$ratio"); fi
		printf 'pair %d %-6s: off %.1f tps, all sets on %.1f tps, ratio %.3f\n' "$i" "$mode" "$ta" "$tb" "$ratio"
	done
done
printf '\nselect-only: median off %.1f, on %.1f tps, median ratio %.3f (target >= 0.90)\n' \
	"$(median "${sel_a[@]}")" "$(median "${sel_b[@]}")" "$(median "${sel_r[@]}")"
printf 'TPC-B:       median off %.1f, on %.1f tps, median ratio %.3f (target >= 0.95)\n' \
	"$(median "${tpcb_a[@]}")" "$(median "${tpcb_b[@]}")" "$(median "${tpcb_r[@]}")"
echo "event rates with all sets on (events/s, mean over the ON runs):"
for s in syscall vfs block sched memory network; do
	printf '  %-8s select %10.0f   tpcb %10.0f\n' "$s" \
		"$(echo "${rate_sum[select.$s]:-0} / $pairs" | bc -l)" \
		"$(echo "${rate_sum[tpcb.$s]:-0} / $pairs" | bc -l)"
done

echo
echo "each set alone, select-only ($solo_pairs pairs):"
for s in syscall vfs block sched memory network; do
	rs=()
	for i in $(seq "$solo_pairs"); do
		start_helper none; ta=$(run select); stop_helper
		start_helper "$s"; tb=$(run select); stop_helper
		rs+=("$(echo "$tb / $ta" | bc -l)")
	done
	m=$(median "${rs[@]}")
	flag=$(echo "$m < 0.95" | bc -l)
	printf '  %-8s median ratio %.3f%s\n' "$s" "$m" "$([ "$flag" = 1 ] && echo '  (costs more than 5% alone)')"
done

echo
echo "in-kernel cost per program, select-only, all sets on (bpf_stats for this run only):"
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
# programs loaded before our helper (other helpers on the host) are not ours
others=$(bpftool prog show -j)
start_helper all
sysctl -qw kernel.bpf_stats_enabled=1
before=$(bpftool prog show -j)
tps=$(run select)
after=$(bpftool prog show -j)
sysctl -qw kernel.bpf_stats_enabled="$old_stats"
stop_helper
python3 - "$secs" "$tps" "$before" "$after" "$others" <<'PY'
import json, sys
secs, tps = float(sys.argv[1]), float(sys.argv[2])
b = {p["id"]: p for p in json.loads(sys.argv[3])}
skip = {p["id"] for p in json.loads(sys.argv[5])}
a = [p for p in json.loads(sys.argv[4]) if p["id"] in b and p["id"] not in skip]
tot = 0.0
for p in sorted(a, key=lambda p: p.get("name", "")):
    n = p.get("name", "")
    if not n.startswith("pgt_k"):
        continue
    q = b.get(p["id"], {})
    cnt = p.get("run_cnt", 0) - q.get("run_cnt", 0)
    ns = p.get("run_time_ns", 0) - q.get("run_time_ns", 0)
    tot += ns
    print("  %-24s %10.0f calls/s %8.0f ns/call %6.2f%% of a CPU" %
          (n, cnt / secs, ns / cnt if cnt else 0, ns / secs / 1e7))
print("  total %.2f%% of a CPU at %.0f tps (%.0f ns of BPF per transaction)" %
      (tot / secs / 1e7, tps, tot / secs / tps if tps else 0))
PY
