# bench/lib.sh — what every bench/*_overhead.sh shares: a throwaway
# cluster with pgbench data, pgbench runs that print TPS, the helper started
# and stopped between runs, medians, and the in-kernel cost of BPF programs.
#
# Sourced, not run.  The caller sets `set -euo pipefail` and then calls
# bench_cluster once; the cluster, the helper and kernel.bpf_stats_enabled
# are put back by the EXIT trap this file installs.
#
# Environment (all optional):
#   PG_BINDIR   server binaries (default Debian's PostgreSQL 15); pg_tracer
#               must be installed in that server
#   HELPER      helper binary (default /usr/local/sbin/pg-tracer)
#   PORT        cluster port (default: the caller's)
#   CLIENTS     pgbench clients and threads (default 2)
#   SCALE       pgbench scale (default 10: 150 MB, larger than shared_buffers)
#   SYNC_COMMIT synchronous_commit of the cluster (default off).  On the
#               development VM a commit's fsync swings so much from run to
#               run (TPC-B with `none` against `none`: 705 and 1018 TPS two
#               minutes apart) that it, not the probes, decides a TPC-B
#               ratio; with it off TPC-B is CPU-bound, with more system calls
#               and context switches per second: the harder case for probe
#               overhead.  SYNC_COMMIT=on measures the fsync-bound variant.

[ "$(id -u)" -eq 0 ] || { echo "run as root" >&2; exit 1; }
bench_bindir=${PG_BINDIR:-/usr/lib/postgresql/15/bin}
bench_helper_bin=${HELPER:-/usr/local/sbin/pg-tracer}
bench_clients=${CLIENTS:-2}
bench_scale=${SCALE:-10}
bench_sync_commit=${SYNC_COMMIT:-off}
export PATH=$bench_bindir:$PATH
# pgbench's "tps = 1234.5" and bc's figures are read with a decimal point:
# a locale with a decimal comma would turn them into nonsense or errors.
# (initdb gets it too: the throwaway cluster is in locale C, whatever the
# caller's shell had.)
export LC_ALL=C
bench_dir=
bench_port=
bench_rt=
bench_helper_pid=
bench_hold_pid=
bench_old_stats=

as_pg() { runuser -u postgres -- "$@"; }

bench_cleanup() {
	[ -n "$bench_hold_pid" ] && kill "$bench_hold_pid" 2>/dev/null || true
	[ -n "$bench_helper_pid" ] && kill "$bench_helper_pid" 2>/dev/null || true
	[ -n "$bench_old_stats" ] && sysctl -qw kernel.bpf_stats_enabled="$bench_old_stats"
	if [ -n "$bench_dir" ]; then
		as_pg pg_ctl -D "$bench_dir/data" -m fast stop >/dev/null 2>&1 || true
		rm -rf "$bench_dir"
	fi
}
trap bench_cleanup EXIT

# bench_cluster NAME DEFAULT_PORT [PRELOAD (yes|no)]
#	initdb, start, pgbench -i, and (when preloaded) CREATE EXTENSION.
#	Small shared_buffers on purpose: pgbench -S then reads most pages from
#	the page cache, the path with the most wait-event transitions and
#	system calls per transaction.  The file bench_side.conf is included
#	last, for scripts that change settings between runs.
bench_cluster() {
	local preload=${3:-yes}

	bench_port=${PORT:-$2}
	bench_dir=$(mktemp -d "/tmp/pgt_bench_$1.XXXXXX")
	bench_rt=$bench_dir/run
	chown postgres "$bench_dir"
	install -d -m 0700 -o postgres "$bench_rt"
	as_pg initdb -D "$bench_dir/data" -A trust >/dev/null
	cat >> "$bench_dir/data/postgresql.conf" <<CONF
port = $bench_port
unix_socket_directories = '$bench_dir'
listen_addresses = ''
shared_buffers = 16MB
compute_query_id = on
synchronous_commit = $bench_sync_commit
checkpoint_timeout = 30min
max_wal_size = 8GB
autovacuum = off
pg_tracer.runtime_dir = '$bench_rt'
include_if_exists = 'bench_side.conf'
CONF
	[ "$preload" = yes ] &&
		echo "shared_preload_libraries = 'pg_tracer'" >> "$bench_dir/data/postgresql.conf"
	as_pg pg_ctl -D "$bench_dir/data" -l "$bench_dir/log" -w start >/dev/null
	as_pg pgbench -h "$bench_dir" -p "$bench_port" -i -s "$bench_scale" -q postgres >/dev/null 2>&1
	[ "$preload" = yes ] && bench_psql 'CREATE EXTENSION pg_tracer' >/dev/null
	return 0
}

bench_psql() { as_pg psql -h "$bench_dir" -p "$bench_port" -XAtq -d postgres -c "$1"; }

# bench_pgbench select|tpcb SECONDS -> TPS
#	Each run starts after a VACUUM, a CHECKPOINT and a 2 s run of the same
#	kind that is thrown away, and no checkpoint falls inside a run
#	(checkpoint_timeout and max_wal_size above), nor autovacuum: on a small
#	VM those, and whatever ran just before (in pairs without it, the run
#	that followed a TPC-B run was the slower one), would decide the TPS more
#	than the probes.  The VACUUM keeps TPC-B from slowing down run after run
#	(without it the dead versions of the small, hot branch and teller
#	tables pile up: the baseline fell from 3,500 to 2,760 tps within one
#	benchmark).
bench_pgbench() {
	bench_pgbench_ready "$1"
	bench_pgbench_timed "$1" "$2"
}

# bench_pgbench_ready select|tpcb: what comes before bench_pgbench's run
#	(VACUUM, CHECKPOINT, 2 s thrown away; bench_args set).  A script that
#	measures around the run itself (BPF time, the helper's CPU) calls this,
#	then measures around bench_pgbench_timed alone: the figures it divides
#	by the run's seconds and transactions must not include the warm-up.
bench_pgbench_ready() {
	bench_workload_args "$1"
	bench_psql VACUUM >/dev/null
	bench_psql CHECKPOINT >/dev/null
	as_pg pgbench -T 2 "${bench_args[@]}" >/dev/null 2>&1
}

# bench_pgbench_timed select|tpcb SECONDS -> TPS: the run itself.  A run
#	that fails, or prints no tps, stops here with pgbench's last words on
#	stderr and a non-zero status (`x=$(bench_pgbench ...)` under set -e
#	then ends the script) instead of a TPS of 0 or nothing further on.
bench_pgbench_timed() {
	local out err rc=0
	bench_workload_args "$1"
	err=$(mktemp)
	out=$(as_pg pgbench -T "$2" "${bench_args[@]}" 2>"$err") || rc=$?
	out=$(awk '/^tps/ {print $3; exit}' <<<"$out")
	if [ "$rc" -ne 0 ] || [ -z "$out" ]; then
		echo "bench: pgbench -T $2 ($1) exited $rc and printed ${out:-no} tps:" >&2
		tail -5 "$err" >&2
		rm -f "$err"
		return 1
	fi
	rm -f "$err"
	echo "$out"
}

# bench_workload_args select|tpcb: sets the array bench_args, pgbench's
#	options for that workload on the cluster
bench_workload_args() {
	bench_args=(-c "$bench_clients" -j "$bench_clients" -h "$bench_dir" -p "$bench_port" postgres)
	[ "$1" = select ] && bench_args=(-S "${bench_args[@]}")
	return 0
}

# bench_helper_start [daemon args...]
#	Starts `pg-tracer daemon` for the cluster and waits until the extension
#	sees it connected (or 10 s), then one more second for the probe sets.
bench_helper_start() {
	"$bench_helper_bin" daemon --pgdata "$bench_dir/data" --runtime-dir "$bench_rt" \
		--log-level error "$@" &
	bench_helper_pid=$!
	for _ in $(seq 50); do
		[ "$(bench_psql 'SELECT helper_connected FROM pg_tracer_status()' 2>/dev/null)" = t ] && break
		sleep 0.2
	done
	# a run "with the helper" without one would measure nothing: stop here
	if [ "$(bench_psql 'SELECT helper_connected FROM pg_tracer_status()' 2>/dev/null)" != t ]; then
		echo "bench: the helper did not connect within 10 s" >&2
		exit 1
	fi
	sleep 1
}

bench_helper_stop() {
	kill "$bench_helper_pid"
	wait "$bench_helper_pid" 2>/dev/null || true
	bench_helper_pid=
}

# bench_cpu_ticks PID -> user + system clock ticks of that process
bench_cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# bench_helper_pgbench select|tpcb SECONDS [COUNTER_FUNCTION]: sets tb
# (TPS) and helper_cpu (the running helper's CPU over the run, % of one
# core).  With COUNTER_FUNCTION, its output right before and right after
# the timed run (after the VACUUM, CHECKPOINT and warm-up) is left in
# bench_count0 and bench_count1: counters the helper keeps from its start
# (events, waits) are to be differenced over the run, not divided as they
# are by its seconds.
bench_helper_pgbench() {
	local t0 t1
	bench_pgbench_ready "$1"
	# shellcheck disable=SC2034  # bench_count0/1: for the caller
	[ -z "${3:-}" ] || bench_count0=$("$3")
	t0=$(bench_cpu_ticks "$bench_helper_pid")
	tb=$(bench_pgbench_timed "$1" "$2")
	t1=$(bench_cpu_ticks "$bench_helper_pid")
	# shellcheck disable=SC2034
	[ -z "${3:-}" ] || bench_count1=$("$3")
	helper_cpu=$(echo "($t1 - $t0) / $(getconf CLK_TCK) / $2 * 100" | bc -l)
}

bench_median() {
	printf '%s\n' "$@" | sort -g |
		awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

bench_ratio() { echo "$1 / $2" | bc -l; }

# bench_a_first PAIR_NUMBER: true on odd pairs.  Pairs alternate A-B and
# B-A so that a drift of the host's load cancels out of the median ratio.
bench_a_first() { [ $(($1 % 2)) -eq 1 ]; }

# bench_even N NAME -> N, or N + 1 when odd (saying so on stderr): with an
# odd number of pairs one order runs once more than the other, and the
# drift bench_a_first cancels weighs on the median again
bench_even() {
	if [ $(($1 % 2)) -eq 1 ]; then
		echo "bench: $2 rounded up from $1 to $(($1 + 1)): as many pairs in each order" >&2
		echo $(($1 + 1))
	else
		echo "$1"
	fi
}

# bench_bpf_stats_on / _off: run_time_ns / run_cnt are counted in between
# (put back at exit).  Counting costs two clock reads per program run, so
# the TPS pairs run with it off, and the cost report comes from a run of
# its own.
bench_bpf_stats_on() {
	[ -n "$bench_old_stats" ] || bench_old_stats=$(sysctl -n kernel.bpf_stats_enabled)
	sysctl -qw kernel.bpf_stats_enabled=1
}
bench_bpf_stats_off() { sysctl -qw kernel.bpf_stats_enabled=0; }

# bench_bpf_snapshot -> JSON of every loaded program (for bench_bpf_report)
bench_bpf_snapshot() { bpftool prog show -j; }

# bench_bpf_report NAME_REGEX SECONDS TPS BEFORE_JSON AFTER_JSON [SKIP_JSON]
#	Calls per second, ns per call and share of one CPU of each program
#	whose name matches NAME_REGEX at its start, between two snapshots.  A
#	program the hook chains tail-call (bpf/pgt_chain.bpf.h) has no figures
#	of its own: its time is in its hook's dispatcher's (pgt_sys_enter,
#	which also counts the system calls of tracked processes, pgt_sys_exit,
#	pgt_sched_switch), so the callers name those too.  Programs in
#	SKIP_JSON (loaded before our helper: other tools on the host) are left
#	out.  A figure other load on the host does not blur.
bench_bpf_report() {
	python3 - "$@" <<'PY'
import json, re, sys
prefix, secs, tps = sys.argv[1], float(sys.argv[2]), float(sys.argv[3] or 0)
before = {p["id"]: p for p in json.loads(sys.argv[4])}
skip = {p["id"] for p in json.loads(sys.argv[6])} if len(sys.argv) > 6 else set()
total = 0.0
for p in sorted(json.loads(sys.argv[5]), key=lambda p: p.get("name", "")):
    name = p.get("name", "")
    if not re.match(prefix, name) or p["id"] in skip or p["id"] not in before:
        continue
    q = before[p["id"]]
    cnt = p.get("run_cnt", 0) - q.get("run_cnt", 0)
    ns = p.get("run_time_ns", 0) - q.get("run_time_ns", 0)
    if cnt == 0:
        continue  # in a chain: counted in its dispatcher
    total += ns
    print("  %-24s %10.0f calls/s %8.0f ns/call %6.2f%% of a CPU" %
          (name, cnt / secs, ns / cnt if cnt else 0, ns / secs / 1e7))
print("  total %.2f%% of a CPU at %.0f tps (%.0f ns of BPF per transaction)" %
      (total / secs / 1e7, tps, total / secs / tps if tps else 0))
PY
}

# bench_build_op_cost DIR -> DIR/bpf_op_cost
#	Builds bench/bpf_op_cost.c and its BPF object against this kernel's BTF
#	(build/vmlinux.h: run make first).
bench_build_op_cost() {
	local here top arch
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	top=$(dirname "$here")
	[ -r "$top/build/vmlinux.h" ] || { echo "no $top/build/vmlinux.h: run make first" >&2; return 1; }
	arch=$(uname -m | sed 's/x86_64/x86/; s/aarch64/arm64/')
	${BPF_CLANG:-clang} -O2 -g -target bpf -D__TARGET_ARCH_"$arch" -I"$top/build" -I"$here" \
		-c "$here/bpf_op_cost.bpf.c" -o "$1/bpf_op_cost.bpf.o"
	${BPFTOOL:-bpftool} gen skeleton "$1/bpf_op_cost.bpf.o" > "$1/bpf_op_cost.skel.h"
	cc -O2 -Wall -I"$1" -I"$here" -o "$1/bpf_op_cost" "$here/bpf_op_cost.c" -lbpf
}

# bench_hold_hooks DIR / bench_release_hooks
#	Attach empty programs on the hooks HOOKS names (default exit,switch:
#	sys_exit and sched_switch; see bench/bpf_op_cost.c) with
#	DIR/bpf_op_cost --hold, built by bench_build_op_cost, and wait until
#	they are attached; detach them.
bench_hold_hooks() {
	"$1/bpf_op_cost" --hold "${HOOKS:-exit,switch}" > "$1/hold.out" &
	bench_hold_pid=$!
	for _ in $(seq 100); do grep -q holding "$1/hold.out" && return 0; sleep 0.05; done
	echo "bpf_op_cost --hold did not attach" >&2
	return 1
}
bench_release_hooks() {
	kill "$bench_hold_pid"
	wait "$bench_hold_pid" 2>/dev/null || true
	bench_hold_pid=
}
