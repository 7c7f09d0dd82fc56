#!/usr/bin/env bash
# sql_call_cost.sh — what one call of the extension's SQL functions costs,
# with two builds of the library: the average latency of `pgbench -f` over
# one statement (SELECT 1 as the floor, pg_tracer_status(), a count over
# pg_tracer_kernel_io and over pg_tracer_probes), the cluster restarted on
# each library in turn (A B, B A, ...), a helper with its default sets
# running throughout and a segment filled by a pgbench run first.  Prints
# each run and the medians.  A benchmark, not a test: it asserts nothing.
# Run as root after `make install`; the installed library is put back at
# the end.
#
#   bench/sql_call_cost.sh LIB_A LIB_B [ROUNDS (3)] [SECONDS (4)]
#
#   LIB_A, LIB_B: pg_tracer.so files (e.g. one built from an older commit
#   with `make pg_tracer.so` in a worktree); env: those of bench/lib.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [ $# -lt 2 ]; then
	echo "usage: sql_call_cost.sh LIB_A LIB_B [ROUNDS] [SECONDS]" >&2
	exit 2
fi
lib_a=$1
lib_b=$2
rounds=${3:-3}
secs=${4:-4}
installed=$(pg_config --pkglibdir)/pg_tracer.so
saved=$(mktemp /tmp/pgt_bench_lib.XXXXXX)
cp "$installed" "$saved"
queries=("SELECT 1" "SELECT * FROM pg_tracer_status()"
	"SELECT count(*) FROM pg_tracer_kernel_io" "SELECT count(*) FROM pg_tracer_probes")

# use_lib FILE: install it (atomically: running backends keep theirs) and
# restart the cluster on it; the helper follows the new postmaster
use_lib() {
	install -m 0755 "$1" "$installed.new"
	mv "$installed.new" "$installed"
	as_pg pg_ctl -D "$bench_dir/data" -l "$bench_dir/log" -m fast -w restart >/dev/null
	for _ in $(seq 50); do
		[ "$(bench_psql 'SELECT helper_connected FROM pg_tracer_status()' 2>/dev/null)" = t ] && break
		sleep 0.2
	done
}

# latency_ms SQL: pgbench's average latency of one statement, one client
latency_ms() {
	echo "$1" > "$bench_dir/q.sql"
	chown postgres "$bench_dir/q.sql"
	as_pg pgbench -n -f "$bench_dir/q.sql" -T "$secs" -c 1 -h "$bench_dir" -p "$bench_port" \
		postgres 2>/dev/null | sed -n 's/^latency average = \([0-9.]*\) ms$/\1/p'
}

bench_cluster sql_cost 55614
trap 'cp "$saved" "$installed"; rm -f "$saved"; bench_cleanup' EXIT
bench_helper_start
bench_pgbench tpcb 5 >/dev/null	# rows in the kernel and engine tables
echo "segment: $(stat -c %s "$bench_rt"/*.seg) bytes"

declare -A lat
for r in $(seq "$rounds"); do
	order="A B"
	bench_a_first "$r" || order="B A"
	for side in $order; do
		lib=$lib_a
		[ "$side" = B ] && lib=$lib_b
		use_lib "$lib"
		line="$side round $r:"
		for i in "${!queries[@]}"; do
			ms=$(latency_ms "${queries[$i]}")
			lat[$side,$i]="${lat[$side,$i]:-} $ms"
			line="$line $ms"
		done
		echo "$line ms"
	done
done
for i in "${!queries[@]}"; do
	ma=$(bench_median ${lat[A,$i]})
	mb=$(bench_median ${lat[B,$i]})
	printf '%-45s A %s ms, B %s ms (B/A %.2f)\n' "${queries[$i]}" "$ma" "$mb" \
		"$(bench_ratio "$mb" "$ma")"
done
