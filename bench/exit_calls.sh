#!/usr/bin/env bash
# exit_calls.sh — how many system-call exits a pgbench transaction makes on
# the host, and how many of them are of the calls the syscall and network
# sets time: with the raw sys_exit tracepoint every one of them runs the
# hook and its dispatcher, with fexit (--syscall-exit, helper/syscall_exit.c)
# only the timed ones run a program.  Counted by `perf stat -a` on the
# tracepoints (raw_syscalls:sys_exit, and syscalls:sys_exit_<call> for the
# 19 calls), with the foundation's helper running as in the benchmarks and
# by default no kernel set, so that the counting hooks are the only ones
# added.  A benchmark, not a test: it asserts nothing.  Run as root after
# `make install`.
#
#   bench/exit_calls.sh [select|tpcb (tpcb)] [SECONDS (10)]
#
#   env: those of bench/lib.sh; PROBES (the helper's --probes, default none)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

mode=${1:-tpcb}
secs=${2:-10}
case $mode in select | tpcb) ;; *) echo "usage: exit_calls.sh [select|tpcb] [SECONDS]" >&2; exit 2 ;; esac
command -v perf >/dev/null || { echo "exit_calls.sh: needs perf" >&2; exit 1; }

# the calls bpf/kernel_sysio.bpf.c has an fexit program for
calls="read write close pread64 pwrite64 readv writev fsync fdatasync openat sync_file_range
       preadv pwritev preadv2 pwritev2 sendto sendmsg recvfrom recvmsg"
events=(-e raw_syscalls:sys_exit)
for c in $calls; do events+=(-e "syscalls:sys_exit_$c"); done

bench_cluster exitcalls 55597
bench_helper_start --probes "${PROBES:-none}" --anomaly off
bench_pgbench_ready "$mode"
counts=$(mktemp)
trap 'rm -f "$counts"; bench_cleanup' EXIT
pgb=$(mktemp)
perf stat -a -x, -o "$counts" "${events[@]}" -- \
	runuser -u postgres -- pgbench -T "$secs" "${bench_args[@]}" > "$pgb" 2>/dev/null
tps=$(awk '/^tps/ {print $3; exit}' "$pgb")
txns=$(awk '/number of transactions actually processed/ {print $NF; exit}' "$pgb")
txns=${txns%%/*}
rm -f "$pgb"
[ -n "$txns" ] && [ "$txns" -gt 0 ] || { echo "exit_calls.sh: pgbench ran no transaction" >&2; exit 1; }
awk -F, -v n="$txns" -v tps="$tps" -v mode="$mode" '
	$3 ~ /^raw_syscalls:sys_exit$/ { all = $1; next }
	$3 ~ /^syscalls:sys_exit_/ { sub("syscalls:sys_exit_", "", $3); per[$3] = $1; timed += $1 }
	END {
		printf "%s at %.0f tps, %d transactions: %.1f system-call exits a transaction on the host, %.1f of the timed calls (%.0f %%)\n",
			mode, tps, n, all / n, timed / n, 100 * timed / all
		for (c in per) if (per[c] > 0) printf "  %-16s %6.2f a transaction\n", c, per[c] / n
	}' "$counts"
