#!/usr/bin/env bash
# install-deps.sh — install every Debian package that building, the demo and
# the test suites need.  Idempotent; run as root on Debian 12.
set -euo pipefail
# root's PATH from su (without -) or cron lacks the sbin directories that
# bpftool, runuser, dpkg's ldconfig and nft live in
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin${PATH:+:$PATH}

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps.sh: must run as root (it calls apt-get)" >&2
	exit 1
fi

PACKAGES=(
	# toolchain and BPF
	make gcc clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev pkg-config
	# fuzzing: libFuzzer and the sanitizers' runtimes for clang; objcopy (SDT seed)
	libclang-rt-14-dev binutils
	# PostgreSQL 15 server, headers (PGXS), client, TAP test modules
	postgresql-15 postgresql-server-dev-15 postgresql-client-15 postgresql-contrib
	libipc-run-perl perl
	# test harness: run root-only steps from TAP tests, drop caches, etc.
	sudo procps util-linux python3 rsync bc
	# TCP loss for the retransmit test (helper-ctl netloss), ss for its ground truth
	nftables iproute2
	# benchmarks: perf samples where the probes' CPU goes (bench/profile_ab.sh)
	linux-perf
	# Debian 12's own kernel under qemu's emulation (test/oldkernel): the
	# initramfs (cpio, depmod), the guest's data disk (mkfs.ext4)
	qemu-system-x86 cpio kmod e2fsprogs
)

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ "${#missing[@]}" -eq 0 ]; then
	echo "install-deps.sh: all packages present"
	exit 0
fi

echo "install-deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"

# Debian's postgresql-common creates and starts a "main" cluster on install;
# pg_tracer never uses it and its port would collide with nothing we run, but
# leave it alone: it is the administrator's.
