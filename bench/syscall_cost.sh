#!/usr/bin/env bash
# syscall_cost.sh — what the helper's host-wide hooks cost a system call of
# a process that is not PostgreSQL's (pgbench, every other task): the
# fixed price of a probe set on sys_enter / sys_exit, free of pgbench's
# noise.  For each configuration, ROUNDS interleaved runs of
# bench/syscall_cost.c (getppid, read of an empty pipe, recv on an empty
# socket); prints the median ns per call and the difference from `none`
# (the foundation alone: the pid filter and its sys_enter counter).  A
# benchmark, not a test: it asserts nothing.  Run as root after `make
# install`.
#
#   bench/syscall_cost.sh [ROUNDS (3)] [CALLS per kind (1000000)]
#   env: CONFIGS (default "nohelper none exact sysio kernel"), and those of
#        bench/lib.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

rounds=${1:-3}
calls=${2:-1000000}
configs=${CONFIGS:-nohelper none exact sysio kernel}
prog=$(mktemp /tmp/pgt_syscall_cost.XXXXXX)
cc -O2 -o "$prog" "$(dirname "$0")/syscall_cost.c"
trap 'rm -f "$prog"; bench_cleanup' EXIT

bench_cluster syscost 54397

helper_args() {
	case $1 in
	none) echo --probes none ;;
	exact) echo --probes exact --mode full ;;
	sysio) echo --probes syscall,network ;;
	kernel) echo --probes syscall,vfs,block,sched,memory,network ;;
	*) echo "unknown configuration $1" >&2; exit 2 ;;
	esac
}

declare -A got
for r in $(seq "$rounds"); do
	for c in $configs; do
		[ "$c" = nohelper ] || bench_helper_start $(helper_args "$c") --anomaly off
		got[$c]+="$("$prog" "$calls")"$'\n'
		[ "$c" = nohelper ] || bench_helper_stop
	done
done

col() { printf '%s' "${got[$1]}" | awk -v k="$2" 'NF {print $k}'; }
printf '%-9s %14s %14s %14s   (median ns per call over %d rounds)\n' config getppid read recv "$rounds"
for c in $configs; do
	line=$(printf '%-9s' "$c")
	for k in 1 2 3; do
		m=$(bench_median $(col "$c" $k))
		if [ "$c" != none ] && [[ " $configs " == *" none "* ]]; then
			d=$(echo "$m - $(bench_median $(col none $k))" | bc -l)
			line+=$(printf ' %7.0f (%+4.0f)' "$m" "$d")
		else
			line+=$(printf ' %14.0f' "$m")
		fi
	done
	echo "$line"
done
