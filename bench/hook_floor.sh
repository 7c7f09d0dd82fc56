#!/usr/bin/env bash
# hook_floor.sh — what the host-wide hooks cost a workload before any probe
# set does any work: interleaved pgbench pairs, the daemon with `--probes
# none` (BASE: the foundation, whose sys_enter dispatcher is always there)
# against the same plus empty programs on sys_exit and sched_switch
# (HOOKS: `bench/bpf_op_cost --hold`), the two hooks `exact` full mode and
# the kernel sets add.  The median ratio HOOKS / BASE bounds from above what
# any design built on these hooks can reach on this host.  A benchmark, not
# a test: it asserts nothing.  Run as root after `make install`.
#
#   bench/hook_floor.sh [PAIRS (5)] [SECONDS per run (15)]
#   env: those of bench/lib.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

pairs=${1:-5}
secs=${2:-15}
work=$(mktemp -d /tmp/pgt_hook_floor.XXXXXX)
trap 'rm -rf "$work"; bench_cleanup' EXIT
bench_build_op_cost "$work"
bench_cluster hookfloor 55581

run_base() { bench_helper_start --probes none --anomaly off; ta=$(bench_pgbench "$1" "$secs"); bench_helper_stop; }
run_hooks() {
	bench_helper_start --probes none --anomaly off
	bench_hold_hooks "$work"
	tb=$(bench_pgbench "$1" "$secs")
	bench_release_hooks
	bench_helper_stop
}

sel_r=() tpcb_r=()
bench_pgbench select 5 >/dev/null	# warm the cache
for i in $(seq "$pairs"); do
	for mode in select tpcb; do
		if bench_a_first "$i"; then run_base "$mode"; run_hooks "$mode"
		else run_hooks "$mode"; run_base "$mode"; fi
		ratio=$(bench_ratio "$tb" "$ta")
		if [ "$mode" = select ]; then sel_r+=("$ratio"); else tpcb_r+=("$ratio"); fi
		printf 'pair %d %-6s: base %.1f tps, hooks %.1f tps, ratio %.3f\n' "$i" "$mode" "$ta" "$tb" "$ratio"
	done
done
printf '\nempty sys_exit + sched_switch programs: median ratio select-only %.3f, TPC-B %.3f\n' \
	"$(bench_median "${sel_r[@]}")" "$(bench_median "${tpcb_r[@]}")"
