#!/usr/bin/env bash
# demo.sh — set everything up and show pg_tracer working, end to end.
#
# As root on Debian 12: installs the packages, builds and installs the
# extension and the helper, creates a throwaway cluster (as postgres) with
# pg_tracer preloaded, starts the helper (as root), runs pgbench against the
# cluster and shows, from psql, what the helper sees per backend, joined
# with pg_stat_activity.  Everything it started is stopped and removed at
# the end; pass --keep to leave the cluster and helper running.
set -euo pipefail
# root's PATH from su (without -) or cron lacks the sbin directories that
# bpftool, runuser, dpkg's ldconfig and nft live in
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin${PATH:+:$PATH}
# initdb takes the caller's locale: one forwarded by ssh may not exist here
export LANG=C.UTF-8
unset LC_ALL

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
[ "$(id -u)" -eq 0 ] || { echo "demo.sh: run as root" >&2; exit 1; }
keep=0
[ "${1:-}" = "--keep" ] && keep=1

bash scripts/install-deps.sh
export PATH=/usr/lib/postgresql/15/bin:$PATH
make -j2
make install

demo=/tmp/pg_tracer_demo
port=54329
rt=$demo/run		# the helper's segment and socket for this cluster
as_pg() { runuser -u postgres -- "$@"; }
psql_demo() { as_pg psql -X -h /tmp -p "$port" -d postgres "$@"; }

helper_pid=
cleanup() {
	[ "$keep" -eq 1 ] && { echo "left running: cluster $demo/data (port $port), helper pid $helper_pid"; return; }
	[ -n "$helper_pid" ] && kill "$helper_pid" 2>/dev/null && wait "$helper_pid" 2>/dev/null || true
	as_pg pg_ctl -D "$demo/data" -m fast stop >/dev/null 2>&1 || true
	rm -rf "$demo"
}
trap cleanup EXIT

echo "=== throwaway cluster in $demo (port $port)"
# what an earlier demo left with --keep: its helper waits for its cluster for
# ever (its binary was replaced by the make install above: " (deleted)")
if [ -f "$demo/helper.pid" ] && old=$(cat "$demo/helper.pid") &&
	old_exe=$(readlink "/proc/$old/exe" 2>/dev/null) &&
	[ "${old_exe% (deleted)}" = /usr/local/sbin/pg-tracer ]; then
	kill "$old" 2>/dev/null || true
fi
as_pg pg_ctl -D "$demo/data" -m immediate stop >/dev/null 2>&1 || true
rm -rf "$demo"
install -d -o postgres -g postgres "$demo"
install -d -m 0755 "$rt"
as_pg initdb -D "$demo/data" -A trust >/dev/null
cat >> "$demo/data/postgresql.conf" <<CONF
port = $port
unix_socket_directories = '/tmp'
listen_addresses = ''
shared_preload_libraries = 'pg_tracer'
pg_tracer.runtime_dir = '$rt'
CONF
as_pg pg_ctl -D "$demo/data" -l "$demo/server.log" -w start >/dev/null
psql_demo -q -c 'CREATE EXTENSION pg_tracer'

echo "=== helper: pg-tracer daemon --pgdata $demo/data"
/usr/local/sbin/pg-tracer daemon --pgdata "$demo/data" --runtime-dir "$rt" >"$demo/helper.log" 2>&1 &
helper_pid=$!
echo "$helper_pid" > "$demo/helper.pid"	# a later demo stops it, --keep or not
connected=
for _ in $(seq 50); do
	connected=$(psql_demo -Atc 'SELECT helper_connected FROM pg_tracer_status()' 2>/dev/null) || true
	[ "$connected" = t ] && break
	sleep 0.2
done
if [ "$connected" != t ]; then
	echo "the helper did not connect within 10 s; its log:" >&2
	tail -n 30 "$demo/helper.log" >&2
	exit 1
fi

echo "=== pgbench (4 clients, 10 s) while we look"
as_pg pgbench -h /tmp -p "$port" -i -s 5 -q postgres >/dev/null 2>&1
as_pg pgbench -h /tmp -p "$port" -c 4 -T 10 postgres >"$demo/pgbench.log" 2>&1 &
bench=$!
sleep 5

psql_demo -c 'SELECT helper_connected, helper_pid, helper_version, segment_generation,
                     last_update, postmaster_pid FROM pg_tracer_status()'
psql_demo -c 'SELECT probe_set, state, mechanism, events, reason FROM pg_tracer_probes'
psql_demo -c "SELECT b.pid, b.backend_type, a.state, b.syscalls, b.attached_at
                FROM pg_tracer_backends b LEFT JOIN pg_stat_activity a USING (pid)
               ORDER BY b.syscalls DESC LIMIT 12"
psql_demo -c 'SELECT pg_tracer_ping()'

echo "=== sampled wait events (in the extension, no helper needed): time model and top events"
psql_demo -c "SELECT stat_name, round(time_ms::numeric, 1) AS time_ms, round(pct_db_time::numeric, 1) AS pct
                FROM pg_tracer_time_model WHERE NOT idle ORDER BY depth, time_ms DESC LIMIT 8"
psql_demo -c "SELECT wait_event_type, wait_event, waits, round(total_ms::numeric, 1) AS total_ms,
                     round(pct_db_time::numeric, 1) AS pct_db_time, fidelity
                FROM pg_tracer_wait_events WHERE NOT idle ORDER BY total_ms DESC LIMIT 8"

echo "=== kernel I/O per backend and query (join pg_stat_statements on queryid)"
psql_demo -c "SELECT pid, backend_type, queryid, layer, op, file_class, relation, calls, bytes, round(avg_us::numeric, 1) AS avg_us
                FROM pg_tracer_kernel_io ORDER BY calls DESC LIMIT 10"
echo "=== scheduler, network and memory per client backend (all its queries together)"
per_client="WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() GROUP BY pid ORDER BY pid"
psql_demo -c "SELECT pid, round(sum(offcpu_ms)::numeric) AS offcpu_ms, sum(runq_count) AS runq_waits,
                     round((sum(runq_ms) * 1000 / nullif(sum(runq_count), 0))::numeric, 1) AS runq_avg_us,
                     sum(voluntary_switches) AS vol_switches, sum(involuntary_switches) AS invol_switches
                FROM pg_tracer_kernel_sched $per_client"
psql_demo -c "SELECT pid, sum(send_calls) AS sends, sum(send_bytes) AS sent_bytes,
                     sum(recv_calls) AS recvs, sum(recv_bytes) AS received_bytes, sum(retransmits) AS retransmits
                FROM pg_tracer_kernel_net $per_client"
psql_demo -c "SELECT pid, sum(faults_minor) AS minor_faults, sum(faults_major) AS major_faults,
                     sum(pages_alloc) AS pages_alloc, sum(pages_free) AS pages_free
                FROM pg_tracer_kernel_memory $per_client"
echo "=== run-queue latency of all backends (log2 histogram, microseconds)"
psql_demo -c "SELECT bucket_lo_us, bucket_hi_us, sum(count) AS switches_in
                FROM pg_tracer_kernel_histogram('runq') GROUP BY 1, 2 ORDER BY 1"

echo "=== engine probes (USDT): locks, WAL, checkpoints"
psql_demo -c "SELECT probe_set, probe, sum(calls) AS calls, round(sum(total_ms)::numeric, 1) AS total_ms
                FROM pg_tracer_engine_events GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 10"
wait "$bench"
grep -E '^(tps|number of transactions actually processed)' "$demo/pgbench.log" || true

echo "=== pg-tracer status"
/usr/local/sbin/pg-tracer status --runtime-dir "$rt"
echo "=== demo finished"
