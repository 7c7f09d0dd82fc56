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
[ "$(id -u)" -eq 0 ] || { echo "run as root" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
vmlinux=$top/build/vmlinux.h
[ -r "$vmlinux" ] || { echo "no $vmlinux: run make first" >&2; exit 1; }
arch=$(uname -m | sed 's/x86_64/x86/; s/aarch64/arm64/')
work=$(mktemp -d /tmp/pgt_bpf_op_cost.XXXXXX)
trap 'rm -rf "$work"' EXIT

${BPF_CLANG:-clang} -O2 -g -target bpf -D__TARGET_ARCH_"$arch" -I"$top/build" -I"$here" \
	-c "$here/bpf_op_cost.bpf.c" -o "$work/bpf_op_cost.bpf.o"
${BPFTOOL:-bpftool} gen skeleton "$work/bpf_op_cost.bpf.o" > "$work/bpf_op_cost.skel.h"
cc -O2 -Wall -I"$work" -I"$here" -o "$work/bpf_op_cost" "$here/bpf_op_cost.c" -lbpf

echo "kernel $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs"
for v in spectre_v2 spec_rstack_overflow retbleed; do
	f=/sys/devices/system/cpu/vulnerabilities/$v
	[ -r "$f" ] && printf '  %-22s %s\n' "$v:" "$(cat "$f")"
done
"$work/bpf_op_cost" "${1:-5}" "${2:-300000}" "${3:-8}"
