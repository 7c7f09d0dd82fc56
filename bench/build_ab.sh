#!/usr/bin/env bash
# build_ab.sh — two builds of the helper compared by the BPF time they
# spend per transaction, in interleaved runs on one cluster (A B, B A,
# A B, ...: a TPC-B cluster slows as its tables grow, so neither build
# always runs second).  The per-call figures bpf_stats gives follow the host's speed,
# which drifts on this kind of VM by more than most changes to a program
# are worth, so a change is judged against the other build minutes, not
# hours, apart.  A benchmark, not a test: it asserts nothing.  Run as root
# after `make install` (the cluster needs the extension).
#
#   bench/build_ab.sh HELPER_A HELPER_B [ROUNDS (4)] [SECONDS (10)] [select|tpcb]
#
# HELPER_A/B: pg-tracer binaries (e.g. `make` on two trees, copy
# helper/pg-tracer of each; the BPF objects are built into them).  SETS:
# the probe sets both run (default the six kernel sets).  Prints each run
# (BPF ns per transaction, tps) and the median per build; DETAIL=1 also
# prints each run's programs (calls/s, ns per call).  ARGS_A / ARGS_B:
# daemon options of each build's runs (e.g. the same binary twice, with
# ARGS_B="--query-id off": two settings compared the same way).
#   env: those of bench/lib.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [ $# -lt 2 ]; then
	echo "usage: build_ab.sh HELPER_A HELPER_B [ROUNDS] [SECONDS] [select|tpcb]" >&2
	exit 2
fi
build_a=$1
build_b=$2
rounds=${3:-4}
secs=${4:-10}
mode=${5:-tpcb}
sets=${SETS:-syscall,vfs,block,sched,memory,network}

report=$(mktemp)
bench_cluster build_ab 55597
trap 'rm -f "$report"; bench_cleanup' EXIT

# one_run BINARY [DAEMON OPTIONS] -> "NS_PER_TX TPS" of one run with that helper
one_run() {
	local before after tps
	bench_helper_bin=$1
	shift
	bench_helper_start --probes "$sets" --anomaly off "$@"
	bench_pgbench_ready "$mode"
	bench_bpf_stats_on
	before=$(bench_bpf_snapshot)
	tps=$(bench_pgbench_timed "$mode" "$secs")
	after=$(bench_bpf_snapshot)
	bench_bpf_stats_off
	bench_helper_stop
	bench_bpf_report 'pgt' "$secs" "$tps" "$before" "$after" > "$report"
	[ -z "${DETAIL:-}" ] || sed '$d' "$report" >&2
	sed -n "s/.*(\([0-9]*\) ns of BPF per transaction).*/\1 $tps/p" "$report"
}

# run_build A|B ROUND: one run of that build, printed and kept
run_build() {
	local bin=$build_a args=${ARGS_A:-} ns tps
	[ "$1" = B ] && bin=$build_b && args=${ARGS_B:-}
	[ -z "${DETAIL:-}" ] || echo "round $2 $1:" >&2
	# shellcheck disable=SC2086  # the options: words on purpose
	read -r ns tps <<<"$(one_run "$bin" $args)"
	# one_run runs in a subshell, where set -e does not reach: a run without
	# a TPS (bench_pgbench_timed said why on stderr) stops here, not as 0
	if [ -z "$tps" ] || [ -z "$ns" ]; then
		echo "build_ab: round $2 $1 gave no figure (pgbench or bpf_stats failed): stopping" >&2
		exit 1
	fi
	printf 'round %d %s: %6.0f ns of BPF per transaction at %5.0f tps\n' "$2" "$1" "$ns" "$tps"
	if [ "$1" = A ]; then a+=("$ns"); else b+=("$ns"); fi
}

a=() b=()
for r in $(seq "$rounds"); do
	if bench_a_first "$r"; then
		run_build A "$r"
		run_build B "$r"
	else
		run_build B "$r"
		run_build A "$r"
	fi
done
printf 'median ns of BPF per transaction (%s, sets %s): A %.0f, B %.0f\n' "$mode" "$sets" \
	"$(bench_median "${a[@]}")" "$(bench_median "${b[@]}")"
