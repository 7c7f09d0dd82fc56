#!/usr/bin/env bash
# drift.sh — does what the kernel sets cost a transaction grow the longer
# they run?  One helper with the sets on for the whole run, one pgbench
# workload in consecutive slices (no VACUUM, CHECKPOINT or restart in
# between: the run as a server would see it), and for each slice the BPF
# time per transaction (bpf_stats, as build_ab.sh), the TPS, and how many
# rows the task accumulators moved into the shared maps (the tacc_folds
# counts of every object that has them, bpf/kernel_tacc.bpf.h: a steady
# workload whose keys fit a task's table moves none after its first
# seconds; a growing count is rows evicted at every call, the cost the
# accumulators exist to avoid).  A cost that grew within a run would show
# as a rising ns per transaction or a rising move count; the toggles
# (toggle_ab.sh's "by second" line) could only hint at it through TPS.  A
# benchmark, not a test: it asserts nothing.  Run as root after `make
# install`.
#
#   bench/drift.sh [select|tpcb (tpcb)] [SLICES (6)] [SECONDS per slice (10)]
#
#   env: those of bench/lib.sh; SETS (default the six kernel sets); ARGS
#   (daemon options); DETAIL=1 prints each slice's programs.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

mode=${1:-tpcb}
slices=${2:-6}
secs=${3:-10}
sets=${SETS:-syscall,vfs,block,sched,memory,network}
case $mode in select | tpcb) ;; *) echo "usage: drift.sh [select|tpcb] [SLICES] [SECONDS]" >&2; exit 2 ;; esac

# tacc_moves -> rows moved so far (begun), over every tacc_folds map loaded
tacc_moves() {
	local id total=0 n
	for id in $(bpftool map show -j | python3 -c '
import json, sys
print(" ".join(str(m["id"]) for m in json.load(sys.stdin) if m.get("name") == "tacc_folds"))'); do
		n=$(bpftool map dump id "$id" -j | python3 -c '
import json, sys
print(sum(int(e["formatted"]["value"]["begun"]) for e in json.load(sys.stdin)))')
		total=$((total + n))
	done
	echo "$total"
}

bench_cluster drift 55598
# shellcheck disable=SC2086  # ARGS: words on purpose
bench_helper_start --probes "$sets" --anomaly off ${ARGS:-}
bench_bpf_stats_on
bench_pgbench_ready "$mode"
report=$(mktemp)
trap 'rm -f "$report"; bench_cleanup' EXIT
for i in $(seq "$slices"); do
	moves0=$(tacc_moves)
	before=$(bench_bpf_snapshot)
	# the run as it is (no VACUUM or warm-up between slices); a run without
	# a TPS stops the script with pgbench's error (bench_pgbench_timed)
	tps=$(bench_pgbench_timed "$mode" "$secs")
	after=$(bench_bpf_snapshot)
	moves1=$(tacc_moves)
	bench_bpf_report 'pgt' "$secs" "$tps" "$before" "$after" > "$report"
	[ -z "${DETAIL:-}" ] || sed '$d' "$report"
	ns=$(sed -n "s/.*(\([0-9]*\) ns of BPF per transaction).*/\1/p" "$report")
	printf 'slice %d (%3d-%3d s): %6.0f ns of BPF per transaction at %6.0f tps; rows moved %d (%.3f a transaction)\n' \
		"$i" $(((i - 1) * secs)) $((i * secs)) "$ns" "$tps" $((moves1 - moves0)) \
		"$(echo "($moves1 - $moves0) / ($tps * $secs)" | bc -l)"
done
