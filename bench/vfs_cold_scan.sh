#!/usr/bin/env bash
# vfs_cold_scan.sh — what the vfs set's page-cache program costs where it
# fires most: a sequential scan of a table whose pages are not cached (the
# page cache dropped before each scan), every page entering the cache.
# Two builds of the helper, interleaved (A B, B A, ...), each run three
# cold scans with bpf_stats on; prints the program's calls and ns per call
# for each run and the median per build.  pgbench's workloads add too few
# pages to the cache for build_ab.sh to see this program (30-60 a second
# in TPC-B).  A benchmark, not a test: it asserts nothing.  Run as root
# after `make install`.
#
#   bench/vfs_cold_scan.sh HELPER_A HELPER_B [ROUNDS (2)] [ROWS (1000000)]
#
# ROWS: the table's rows (about 170 bytes each on disk).
#   env: those of bench/lib.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [ $# -lt 2 ]; then
	echo "usage: vfs_cold_scan.sh HELPER_A HELPER_B [ROUNDS] [ROWS]" >&2
	exit 2
fi
build_a=$1
build_b=$2
rounds=${3:-2}
rows=${4:-1000000}

bench_cluster vfs_cold_scan 55611
bench_psql "CREATE TABLE cold_scan AS SELECT g, repeat(md5(g::text), 4) AS pad
              FROM generate_series(1, $rows) g" >/dev/null
bench_psql CHECKPOINT >/dev/null

# cold_scans: three scans, each after dropping the page cache, by one
# backend (no parallel workers)
cold_scans() {
	for _ in 1 2 3; do
		sync
		echo 3 > /proc/sys/vm/drop_caches
		as_pg psql -h "$bench_dir" -p "$bench_port" -XAtq -d postgres \
			-c 'SET max_parallel_workers_per_gather = 0' \
			-c 'SELECT count(*) FROM cold_scan' >/dev/null
	done
}

# one_run A|B ROUND: prints "round R X: CALLS calls, NS ns a call", keeps NS
one_run() {
	local before after line
	bench_helper_bin=$build_a
	[ "$1" = B ] && bench_helper_bin=$build_b
	bench_helper_start --probes vfs --anomaly off
	bench_bpf_stats_on
	before=$(bench_bpf_snapshot)
	cold_scans
	after=$(bench_bpf_snapshot)
	bench_bpf_stats_off
	bench_helper_stop
	# with SECONDS 1 the report's "calls/s" is the run's calls
	line=$(bench_bpf_report 'pgt_kvfs_cache_add' 1 0 "$before" "$after" | sed -n 1p)
	read -r _ calls _ ns _ <<<"$line"
	printf 'round %d %s: %s calls, %s ns a call\n' "$2" "$1" "$calls" "$ns"
	if [ "$1" = A ]; then a+=("$ns"); else b+=("$ns"); fi
}

a=() b=()
for r in $(seq "$rounds"); do
	if bench_a_first "$r"; then one_run A "$r"; one_run B "$r"; else one_run B "$r"; one_run A "$r"; fi
done
printf 'median ns a page entering the cache (vfs, cold scans of %s rows): A %.0f, B %.0f\n' \
	"$rows" "$(bench_median "${a[@]}")" "$(bench_median "${b[@]}")"
