#!/usr/bin/env bash
# soak.sh — does the helper hold steady over a long run with churn?  The
# daemon runs with every kernel set and its defaults for MINUTES while a
# workload loops: pgbench TPC-B with a new connection per transaction (-C:
# thousands of backends start and exit, so pids enter and leave the filter,
# rows of exited processes are kept and dropped), then select-only, then a
# read of the views.  Every INTERVAL seconds it prints the helper's memory
# (VmRSS, VmHWM), open fds, its CPU over the interval, the size of the
# cluster's segment, the entries of the pid filter `tracked` next to the
# postgres processes alive, and the rows pg_tracer_kernel_io serves; with
# gdb installed, also the helper's heap as glibc's malloc_stats() reports
# it (attached for a moment at each sample): the bytes its allocations hold
# (heap_use) and those the allocator holds from the kernel (heap_sys), so
# that a leak (heap_use climbing) shows apart from memory the allocator
# keeps after frees (heap_sys above heap_use).  Last, the growth of each
# from the first sample after WARMUP seconds to the last, per hour.  A leak shows as steady growth with a steady workload;
# the pid filter should follow the live processes, not the total started.
# A benchmark, not a test: it asserts nothing.  Run as root after
# `make install`.
#
#   bench/soak.sh [MINUTES (10)] [INTERVAL (30)] [WARMUP (60)]
#   env: ARGS (more daemon options), and those of bench/lib.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

minutes=${1:-10}
interval=${2:-30}
warmup=${3:-60}

bench_cluster soak 55731
echo "max_connections = 200" > "$bench_dir/data/bench_side.conf"
as_pg pg_ctl -D "$bench_dir/data" -l "$bench_dir/log" -w restart >/dev/null
# shellcheck disable=SC2086
bench_helper_start --log-level error ${ARGS:-} 2>>"$bench_dir/helper.err"
seg=$(bench_psql "SELECT segment_file FROM pg_tracer_status()")

# workload: loops until the file stop exists
workload() {
	bench_workload_args tpcb
	while [ ! -e "$bench_dir/stop" ]; do
		as_pg pgbench -C -T 20 "${bench_args[@]}" >/dev/null 2>&1 || true
		bench_workload_args select
		as_pg pgbench -T 10 "${bench_args[@]}" >/dev/null 2>&1 || true
		bench_workload_args tpcb
		bench_psql "SELECT count(*) FROM pg_tracer_kernel_io" >/dev/null 2>&1 || true
		bench_psql "SELECT count(*) FROM pg_tracer_wait_events" >/dev/null 2>&1 || true
	done
}
workload &
workload_pid=$!
trap 'touch "$bench_dir/stop"; wait "$workload_pid" 2>/dev/null || true; bench_cleanup' EXIT

status_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
# tracked_entries -> entries of the newest `tracked` map (this helper's)
tracked_entries() {
	local id
	id=$(bpftool map show -j | python3 -c '
import json, sys
ids = [m["id"] for m in json.load(sys.stdin) if m.get("name") == "tracked"]
print(max(ids) if ids else "")')
	if [ -z "$id" ]; then echo "?"; return; fi
	bpftool map dump id "$id" -j | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))'
}
postgres_alive() { pgrep -c -u postgres -x postgres || true; }
# heap_kb -> "IN_USE SYSTEM" in kB from the helper's malloc_stats() (its
# stderr is helper.err), or "- -" without gdb
heap_kb() {
	if ! command -v gdb >/dev/null; then echo "- -"; return; fi
	: >"$bench_dir/helper.err"	# appended to: a failed attach prints "- -", not the last figures
	gdb -p "$bench_helper_pid" -batch -ex 'call (void) malloc_stats()' >/dev/null 2>&1 || true
	awk '/^Total/ { t = 1 } t && /system bytes/ { s = $4 } t && /in use bytes/ { u = $5; t = 0 }
		END { if (u == "") print "- -"; else printf "%d %d\n", u / 1024, s / 1024 }' \
		"$bench_dir/helper.err"
}

printf '%6s %9s %9s %5s %6s %9s %8s %7s %7s %9s %9s\n' \
	elapsed rss_kB hwm_kB fds cpu% seg_B tracked alive io_rows heap_use heap_sys
declare -a t_s rss fds segb trk rows huse
t0=$(date +%s)
ticks0=$(bench_cpu_ticks "$bench_helper_pid")
end=$((t0 + minutes * 60))
while :; do
	sleep "$interval"
	now=$(date +%s)
	ticks=$(bench_cpu_ticks "$bench_helper_pid")
	cpu=$(echo "($ticks - $ticks0) / $(getconf CLK_TCK) / $interval * 100" | bc -l)
	ticks0=$ticks
	e=$((now - t0))
	r=$(status_kb "$bench_helper_pid" VmRSS)
	h=$(status_kb "$bench_helper_pid" VmHWM)
	f=$(ls "/proc/$bench_helper_pid/fd" | wc -l)
	s=$(stat -c %s "$seg" 2>/dev/null || echo 0)
	k=$(tracked_entries)
	a=$(postgres_alive)
	n=$(bench_psql "SELECT count(*) FROM pg_tracer_kernel_io" 2>/dev/null || echo "?")
	read -r hu hs < <(heap_kb)
	printf '%6d %9d %9d %5d %6.2f %9d %8s %7s %7s %9s %9s\n' "$e" "$r" "$h" "$f" "$cpu" "$s" "$k" \
		"$a" "$n" "$hu" "$hs"
	if [ "$e" -ge "$warmup" ]; then
		t_s+=("$e") rss+=("$r") fds+=("$f") segb+=("$s") trk+=("$k") rows+=("$n") huse+=("$hu")
	fi
	[ "$now" -ge "$end" ] && break
done

# growth from the first sample after the warm-up to the last, per hour
n=${#t_s[@]}
if [ "$n" -ge 2 ]; then
	span=$((t_s[n - 1] - t_s[0]))
	per_hour() { echo "($2 - $1) * 3600 / $span" | bc -l; }
	printf '\nafter %d s of warm-up, over %d s: VmRSS %d -> %d kB (%+.0f kB/h), fds %d -> %d, segment %d -> %d B, tracked %s -> %s (alive at the end %s), kernel_io rows %s -> %s\n' \
		"$warmup" "$span" "${rss[0]}" "${rss[n - 1]}" "$(per_hour "${rss[0]}" "${rss[n - 1]}")" \
		"${fds[0]}" "${fds[n - 1]}" "${segb[0]}" "${segb[n - 1]}" "${trk[0]}" "${trk[n - 1]}" \
		"$(postgres_alive)" "${rows[0]}" "${rows[n - 1]}"
	echo "heap in use: ${huse[0]} -> ${huse[n - 1]} kB"
	echo "sessions started: $(bench_psql "SELECT sessions FROM pg_stat_database WHERE datname = 'postgres'")"
fi
