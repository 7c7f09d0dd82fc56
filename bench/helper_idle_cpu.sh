#!/usr/bin/env bash
# helper_idle_cpu.sh — what the helper's own housekeeping costs as the
# number of backends grows: its CPU while SESSIONS client connections sit
# idle (nothing runs, so nothing but the helper's periodic work shows: its
# scans of /proc, its map copies, its reads of every backend's wait event).
# Two builds of the helper, interleaved (A B, B A, ...), each started fresh
# for every run; prints each run's CPU in % of one core and the medians.
# A benchmark, not a test: it asserts nothing.  Run as root after
# `make install`.
#
#   bench/helper_idle_cpu.sh HELPER_A HELPER_B [SESSIONS (100)] [ROUNDS (3)]
#                            [SECONDS (30)]
#
#   env: MODE=target (default: `daemon --pgdata`) or MODE=host (no
#   --pgdata, as the systemd unit runs it: it then serves every cluster on
#   the host, so run it where no other cluster runs); those of bench/lib.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [ $# -lt 2 ]; then
	echo "usage: helper_idle_cpu.sh HELPER_A HELPER_B [SESSIONS] [ROUNDS] [SECONDS]" >&2
	exit 2
fi
build_a=$1
build_b=$2
sessions=${3:-100}
rounds=${4:-3}
secs=${5:-30}
mode=${MODE:-target}

bench_cluster helper_idle 55613
echo "max_connections = $((sessions + 20))" > "$bench_dir/data/bench_side.conf"
as_pg pg_ctl -D "$bench_dir/data" -l "$bench_dir/log" -w restart >/dev/null

# idle sessions: each psql waits on a pipe that stays open until the end
for _ in $(seq "$sessions"); do
	sleep 86400 | as_pg psql -h "$bench_dir" -p "$bench_port" -Xq -d postgres >/dev/null 2>&1 &
done
trap 'pkill -P $$ -x sleep 2>/dev/null || true; bench_cleanup' EXIT
for _ in $(seq 50); do
	n=$(bench_psql "SELECT count(*) FROM pg_stat_activity WHERE state = 'idle'")
	[ "$n" -ge "$sessions" ] && break
	sleep 0.2
done
echo "$n idle sessions, $(ls -d /proc/[0-9]* | wc -l) processes on the host, mode $mode"

# one_run A|B ROUND: the helper's CPU over SECONDS, after 5 s to settle
one_run() {
	local t0 t1 pct bin=$build_a
	[ "$1" = B ] && bin=$build_b
	if [ "$mode" = host ]; then
		"$bin" daemon --runtime-dir "$bench_rt" --log-level error &
	else
		"$bin" daemon --pgdata "$bench_dir/data" --runtime-dir "$bench_rt" --log-level error &
	fi
	bench_helper_pid=$!
	sleep 5
	t0=$(bench_cpu_ticks "$bench_helper_pid")
	sleep "$secs"
	t1=$(bench_cpu_ticks "$bench_helper_pid")
	bench_helper_stop
	pct=$(echo "($t1 - $t0) / $(getconf CLK_TCK) / $secs * 100" | bc -l)
	printf 'round %d %s: helper CPU %.2f %% of a core\n' "$2" "$1" "$pct"
	if [ "$1" = A ]; then a+=("$pct"); else b+=("$pct"); fi
}

a=() b=()
for r in $(seq "$rounds"); do
	if bench_a_first "$r"; then one_run A "$r"; one_run B "$r"; else one_run B "$r"; one_run A "$r"; fi
done
printf 'median helper CPU with %d idle sessions (%s mode): A %.2f %%, B %.2f %% of a core\n' \
	"$sessions" "$mode" "$(bench_median "${a[@]}")" "$(bench_median "${b[@]}")"
