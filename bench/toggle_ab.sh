#!/usr/bin/env bash
# toggle_ab.sh — overhead measured inside one pgbench run: the cost is
# switched on and off every PERIOD seconds while pgbench reports its TPS
# each second (--progress), and on-seconds are compared with the
# off-seconds around them.  Runs of their own (bench/*_overhead.sh) are
# minutes apart, and on this kind of VM the host's load drifts more in a
# minute than the probes cost; blocks of a few seconds see much less of
# that drift.  A benchmark, not a test: it asserts nothing.  Run as root
# after `make install`.
#
#   bench/toggle_ab.sh exact|hooks|kernel [SECONDS per workload (120)] [PERIOD (4)]
#
#   exact: `--probes exact --mode tiered`, a window opened
#          (pg_tracer_escalate) and closed (pg_tracer_deescalate): on =
#          every blocking wait timed, as in full mode.
#   hooks: `--probes none`, plus empty sys_exit and sched_switch programs
#          (bench/bpf_op_cost --hold) started and stopped: on = the price
#          of the two hooks alone.
#   kernel: the helper restarted at each switch, `--probes $SETS` (default
#          the six kernel sets) for on, `--probes none` for off; a period
#          of 6 s or more leaves room for the restart.
#
# The time a switch takes (a helper restart: a second or two) is left out,
# and so is the second after it.  Printed per workload: the
# median over on-blocks of (on-block mean TPS / mean of the off-blocks
# before and after it), and the plain mean ratio.
#   env: those of bench/lib.sh, and WORKLOADS (default "select tpcb")
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kind=${1:?usage: toggle_ab.sh exact|hooks|kernel [SECONDS] [PERIOD]}
secs=${2:-120}
period=${3:-4}
work=$(mktemp -d /tmp/pgt_toggle_ab.XXXXXX)
chmod 755 "$work"
trap 'rm -rf "$work"; bench_cleanup' EXIT

case $kind in
exact)
	helper_args=(--probes exact --mode tiered --exact-budget unlimited --anomaly off)
	cost_on() { bench_psql "SELECT granted_s FROM pg_tracer_escalate(3600)" >/dev/null; }
	cost_off() { bench_psql "SELECT pg_tracer_deescalate()" >/dev/null; } ;;
hooks)
	bench_build_op_cost "$work"
	helper_args=(--probes none --anomaly off)
	cost_on() { bench_hold_hooks "$work"; }
	cost_off() { bench_release_hooks; } ;;
kernel)
	sets=${SETS:-syscall,vfs,block,sched,memory,network}
	helper_args=(--probes none --anomaly off)
	cost_on() { bench_helper_stop; bench_helper_start --probes "$sets" --anomaly off; }
	cost_off() { bench_helper_stop; bench_helper_start "${helper_args[@]}"; } ;;
*) echo "unknown kind $kind (exact, hooks or kernel)" >&2; exit 2 ;;
esac

bench_cluster toggle 55587
bench_helper_start "${helper_args[@]}"

# toggle_to on|off FUNCTION: switch (the switch itself logged as state x),
# then hold the new state for a period
toggle_to() {
	echo "x $(date +%s.%N)" >> "$work/switches"
	"$2"
	echo "$1 $(date +%s.%N)" >> "$work/switches"
	sleep "$period"
}

# toggle_run select|tpcb: one pgbench run with the cost switched every
# period; prints the analysis
toggle_run() {
	local f=(-c "$bench_clients" -j "$bench_clients" -h "$bench_dir" -p "$bench_port" postgres)
	local pgb
	[ "$1" = select ] && f=(-S "${f[@]}")
	bench_psql VACUUM >/dev/null
	bench_psql CHECKPOINT >/dev/null
	: > "$work/switches"
	as_pg pgbench -T "$secs" -P 1 --progress-timestamp "${f[@]}" > /dev/null 2> "$work/progress" &
	pgb=$!
	sleep 3
	while kill -0 "$pgb" 2>/dev/null; do
		toggle_to on cost_on
		toggle_to off cost_off
	done
	wait "$pgb" || true
	python3 - "$1" "$work/progress" "$work/switches" <<'PY'
import re, statistics, sys
mode, progress, switches = sys.argv[1:4]
sw = [(l.split()[0], float(l.split()[1])) for l in open(switches) if l.strip()]
secs = [(float(m.group(1)), float(m.group(2))) for m in
        (re.match(r"progress: ([\d.]+) s, ([\d.]+) tps", l) for l in open(progress)) if m]

def state_at(t0, t1):
    """on/off when [t0, t1] lies in one block, more than 1 s after its switch"""
    cur = None
    for i, (s, t) in enumerate(sw):
        end = sw[i + 1][1] if i + 1 < len(sw) else float("inf")
        if t + 1.0 <= t0 and t1 <= end:
            return s, i
    return None, None

blocks = {}
for t, tps in secs:
    s, i = state_at(t - 1.0, t)
    if s:
        blocks.setdefault(i, (s, []))[1].append(tps)
means = {i: (s, statistics.mean(v)) for i, (s, v) in blocks.items()}
def off_near(i, step):
    """mean of the nearest off-block from block i in direction step"""
    j = i + step
    while 0 <= j < len(sw) and sw[j][0] != "off":
        j += step
    return [means[j][1]] if j in means and means[j][0] == "off" else []

ratios = []
for i, (s, m) in means.items():
    if s != "on":
        continue
    around = off_near(i, -1) + off_near(i, 1)
    if around:
        ratios.append(m / statistics.mean(around))
on = [m for s, m in means.values() if s == "on"]
off = [m for s, m in means.values() if s == "off"]
if not ratios:
    print("%s: too few blocks" % mode)
    sys.exit(0)
q = statistics.quantiles(ratios, n=4) if len(ratios) >= 4 else [min(ratios), 0, max(ratios)]
print("%-6s: %d on-blocks, median ratio %.3f (quartiles %.3f-%.3f), mean on %.1f / off %.1f tps = %.3f"
      % (mode, len(ratios), statistics.median(ratios), q[0], q[-1],
         statistics.mean(on), statistics.mean(off), statistics.mean(on) / statistics.mean(off)))
PY
}

echo "$kind switched every ${period} s inside ${secs} s pgbench runs (clients $bench_clients):"
for w in ${WORKLOADS:-select tpcb}; do
	toggle_run "$w"
done
