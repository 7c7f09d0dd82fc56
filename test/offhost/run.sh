#!/usr/bin/env bash
# run.sh — pg_tracer's kernel-dependent checks on another machine: one with
# another kernel, other CPUs or hardware breakpoints, and no package
# registry (the device machines lent to some sessions: Ubuntu 24.04, root,
# no sudo, no network).  Not part of CI.  In the repository root, as root,
# with the bundle test/offhost/pack.sh made:
#
#   bash test/offhost/run.sh
#
# The bundle is git-ignored: the device tool's run must carry it
# (carry: test/offhost/bundle.tar.gz).  One run with the defaults takes
# about 5 minutes on a 16-CPU machine.
#
# 1. facts: kernel, BTF, event sources (kprobe, breakpoint, uprobe), the
#    config lines that decide the probe sets;
# 2. the bundle unpacked at /, and only the libraries whose soname the
#    machine lacks made visible to ld.so (its own newer ones serve the
#    rest); a postgres user made if there is none;
# 3. the TAP tests in $TESTS (default: those whose result depends on the
#    kernel), as the postgres user, with PG_TRACER_CTL going through
#    ctl_broker.py instead of sudo; TESTS=none skips them;
# 4. bench/toggle_ab.sh kwindow for $WORKLOADS (default tpcb), $BENCH_SECS
#    per workload (default 60, 0 skips), once per --syscall-exit mode in
#    $EXITS (default "auto tracepoint").
#
# Everything printed also goes to $OUT/check.log ($OUT: the device tool's
# folder, else /tmp/pgt_offhost), the TAP logs to $OUT/taplogs.tgz.
set -uo pipefail
[ "$(id -u)" -eq 0 ] || { echo "run.sh: run as root" >&2; exit 1; }
repo=$(cd "$(dirname "$0")/../.." && pwd)
bundle=$repo/test/offhost/bundle.tar.gz
OUT=${OUT:-/tmp/pgt_offhost}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/check.log") 2>&1
TESTS=${TESTS:-t/002_helper_attach.pl t/020_kernel_sets.pl t/021_kernel_trace_cli.pl t/024_task_accumulators.pl t/025_kernel_windows.pl t/030_engine_probes.pl t/043_exact_watch.pl}
BENCH_SECS=${BENCH_SECS:-60}
pg=/usr/lib/postgresql/15
work=/opt/pgt/work
stage() { printf '\n=== %s (%s)\n' "$*" "$(date +%T)"; }

# facts: what decides which probe sets attach here
facts() {
	uname -a; grep PRETTY_NAME /etc/os-release; echo "cpus $(nproc)"
	ls -l /sys/kernel/btf/vmlinux
	echo "event sources: $(ls /sys/bus/event_source/devices/ | tr '\n' ' ')"
	echo "perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)"
	[ -d /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing
	if [ -r /proc/config.gz ]; then
		zcat /proc/config.gz | grep -E '^(# )?CONFIG_(BPF_SYSCALL|BPF_JIT|BPF_EVENTS|DEBUG_INFO_BTF|KPROBES|FPROBE|FUNCTION_TRACER|DYNAMIC_FTRACE_WITH_DIRECT_CALLS|FTRACE_SYSCALLS|UPROBES|HAVE_HW_BREAKPOINT|SCHEDSTATS|SCHED_INFO|TASK_IO_ACCOUNTING)[ =]'
	fi
}

# unpack: the bundle at /, and ld.so told of the libraries the machine lacks
unpack() {
	[ -r "$bundle" ] || { echo "no $bundle: run test/offhost/pack.sh here first"; return 1; }
	tar -C / --no-overwrite-dir -xzf "$bundle" || return 1
	rm -f /etc/ld.so.conf.d/zz-pgt.conf && ldconfig	# ours, from a run before, set aside
	for l in /opt/pgt/lib/*; do
		ldconfig -p | grep -q "^[[:space:]]$(basename "$l") " && rm -f "$l"
	done
	echo "libraries added: $(ls /opt/pgt/lib | tr '\n' ' ')"
	echo /opt/pgt/lib > /etc/ld.so.conf.d/zz-pgt.conf && ldconfig
	[ -e /usr/share/zoneinfo/UTC ] || { mkdir -p /usr/share/zoneinfo && cp -a /opt/pgt/zoneinfo/. /usr/share/zoneinfo/; }
	id postgres >/dev/null 2>&1 || useradd -m -d /var/lib/postgresql -s /bin/bash postgres || return 1
	export TZ=UTC PATH=$pg/bin:/opt/pgt/bin:$PATH
	export PERL5LIB=/opt/pgt/perl/base:/opt/pgt/perl/arch:/opt/pgt/perl/priv:/opt/pgt/perl/vendor
	perl -MIPC::Run -MJSON::PP -e 'print "perl $^V with IPC::Run\n"' && postgres --version &&
		pg-tracer --version && bpftool version | head -1
}

# pick_python: a python3 (3.9 or later: socket.send_fds) the postgres user can run
pick_python() {
	local p
	for p in /usr/bin/python3 /usr/local/bin/python3 $(command -v python3); do
		[ -x "$p" ] && runuser -u postgres -- "$p" -c 'import socket; socket.send_fds' 2>/dev/null &&
			{ echo "$p"; return 0; }
	done
	return 1
}

# tap_tests: $TESTS as postgres in a copy of the tree, the root steps via the broker
tap_tests() {
	local py broker rc
	py=$(pick_python) || { echo "no python3 >= 3.9 the postgres user can run"; return 1; }
	chgrp postgres /opt/pgt/ctl && chmod 750 /opt/pgt/ctl
	"$py" /opt/pgt/ctl/ctl_broker.py /opt/pgt/ctl/ctl.sock /opt/pgt/ctl/helper-ctl postgres &
	broker=$!
	rm -rf "$work" && mkdir -p "$work"
	(cd "$repo" && tar --exclude=./.git --exclude=./build --exclude='./tmp_check*' \
		--exclude=./test/offhost/bundle.tar.gz -cf - .) | tar -C "$work" -xf -
	chown -R postgres: "$work" && chmod 755 /opt/pgt "$work"
	# shellcheck disable=SC2086  # TESTS: words on purpose
	runuser -u postgres -- env PATH="$PATH" PERL5LIB="$PERL5LIB" TZ=UTC \
		PG_TRACER_CTL="$py /opt/pgt/ctl/ctl_client.py /opt/pgt/ctl/ctl.sock" \
		TESTDIR="$work" PGPORT=65432 PG_REGRESS=$pg/lib/pgxs/src/test/regress/pg_regress \
		bash -c "cd $work && mkdir -p tmp_check && perl /opt/pgt/bin/prove --timer -I $pg/lib/pgxs/src/test/perl -I . $TESTS"
	rc=$?
	kill "$broker"
	(cd "$work/tmp_check/log" && tar -czf "$OUT/taplogs.tgz" .)
	return $rc
}

# bench: the kernel sets' cost, toggled inside pgbench runs, per exit mode
bench() {
	local exits
	if ! command -v bc >/dev/null; then	# bench/lib.sh's arithmetic
		printf '#!/bin/sh\nexec python3 -c "import sys; print(eval(sys.stdin.read()))"\n' > /usr/local/bin/bc
		chmod 755 /usr/local/bin/bc
	fi
	for exits in ${EXITS:-auto tracepoint}; do
		stage "bench/toggle_ab.sh kwindow $BENCH_SECS s, ${WORKLOADS:-tpcb}, --syscall-exit $exits"
		HELPER=/opt/pgt/bin/pg-tracer WORKLOADS="${WORKLOADS:-tpcb}" ARGS="--syscall-exit $exits" \
			bash "$repo/bench/toggle_ab.sh" kwindow "$BENCH_SECS" 3 || return 1
	done
}

rc=0
stage facts
facts
[ -e /sys/kernel/btf/vmlinux ] || { echo "no BTF here: the helper cannot load; nothing more to check"; exit 1; }
stage unpack
unpack || exit 1
stage "probe sets (pg-tracer trace --probes all, no cluster)"
pg-tracer trace --probes all --duration 1s --format json 2>/dev/null | grep '"event":"status"' | cut -c1-400
if [ "$TESTS" != none ]; then
	stage "TAP: $TESTS"
	tap_tests || rc=1
fi
if [ "$BENCH_SECS" -gt 0 ]; then
	bench || rc=1
fi
stage "done: rc $rc"
exit $rc
