#!/usr/bin/env bash
# bpf_op_cost.sh — the price of each operation the probe sets' hot paths
# are made of, on this host: builds bench/bpf_op_cost (a BPF object with a
# skeleton, against this kernel's BTF) in a temporary directory, runs it,
# and prints the CPU's speculation mitigations, which set the price of
# every call and return in the kernel.  A benchmark: it asserts nothing.
# Run as root from a checkout where `make` has run (build/vmlinux.h).
#
#   bench/bpf_op_cost.sh [ROUNDS (5)] [CALLS (300000)] [REPS (8)]
set -euo pipefail
. "$(dirname "$0")/lib.sh"

work=$(mktemp -d /tmp/pgt_bpf_op_cost.XXXXXX)
trap 'rm -rf "$work"; bench_cleanup' EXIT
bench_build_op_cost "$work"

echo "kernel $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs"
for v in spectre_v2 spec_rstack_overflow retbleed; do
	f=/sys/devices/system/cpu/vulnerabilities/$v
	[ -r "$f" ] && printf '  %-22s %s\n' "$v:" "$(cat "$f")"
done
"$work/bpf_op_cost" "${1:-5}" "${2:-300000}" "${3:-8}"
