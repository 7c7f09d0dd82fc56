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
#   bench/toggle_ab.sh exact|hooks|kernel|kwindow [SECONDS per workload (120)] [PERIOD (4)]
#
#   exact: `--probes exact --mode tiered`, a window opened
#          (pg_tracer_escalate) and closed (pg_tracer_deescalate): on =
#          every blocking wait timed, as in full mode.
#   hooks: `--probes none`, plus empty sys_exit and sched_switch programs
#          (bench/bpf_op_cost --hold) started and stopped: on = the price
#          of the two hooks alone.  HOOKS picks others: "exit" (sys_exit
#          alone), "percall" (the per-call exit tracepoints of the calls
#          the syscall and network sets time).
#   kernel: the helper restarted at each switch, `--probes $SETS` (default
#          the six kernel sets) for on, `--probes none` for off; a period
#          of 6 s or more leaves room for the restart.  With HELPER_B set
#          (another pg-tracer binary), every other on-block runs that build
#          instead ("on-b"): two builds compared inside one run, each
#          against the off-blocks around it.  ARGS_B adds daemon options
#          to the on-b blocks (e.g. HELPER_B=<the same binary>
#          ARGS_B="--query-id off": two settings compared the same way).
#   kwindow: one helper, `--probes $SETS --kernel-sets escalated`, and an
#          escalation window opened and closed: on = the kernel sets'
#          hooks attached, off = held (loaded, detached).  A switch takes
#          milliseconds, not a restart, so periods of 2-3 s work: more,
#          shorter blocks in the same run, each nearer its neighbours.
#          ARGS adds daemon options (e.g. ARGS="--query-id off").
#
# The time a switch takes (a helper restart: a second or two) is left out,
# and so is the second after it (0.2 s for kwindow, whose switch is an
# attach or a detach: no work spills over).  Printed per workload: the
# median over on-blocks of (on-block mean TPS / mean of the off-blocks
# before and after it), with its 95 % bootstrap interval (blocks
# resampled), and the plain mean ratio; then the same with each
# second's TPS divided by the share of that second the VM's CPUs were not
# stolen by the host (/proc/stat steal, sampled every 0.5 s): a guest's
# throughput follows the CPU time it is given, and the host's other
# tenants take more of it in some seconds than the probes cost.
# A workload named more than once in WORKLOADS runs that many times, and a
# pooled line follows: the block ratios of all its runs together (the
# interval from a two-level bootstrap: runs, then their blocks), and the
# median of the runs' ratios of means (this host's TPS drifts between runs
# by more than the margins the targets leave).
# A "by second" line gives the on-blocks' seconds by how long after the
# switch they ran (medians over the blocks): a helper restart whose work
# spilled into the block would show as low early seconds.
# A "per transaction" line splits a transaction's time, for the backends
# and for pgbench, into time on a CPU, waiting in a run queue, and asleep,
# from the kernel's scheduler accounting (bench/schedstat_sample.py): the
# median over off-blocks, over on-blocks, and the on-blocks' median ratio
# to the off-blocks around them.  It tells whether the probes cost CPU,
# queueing for the CPUs, or waiting on something else.
#   env: those of bench/lib.sh, WORKLOADS (default "select tpcb"), and
#   KEEP=DIR to keep each run's raw data there (pgbench's per-second
#   progress, the switch times, the /proc/stat and schedstat samples).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kind=${1:?usage: toggle_ab.sh exact|hooks|kernel|kwindow [SECONDS] [PERIOD]}
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
	cost_on_b() {
		local a=$bench_helper_bin
		bench_helper_stop
		bench_helper_bin=$HELPER_B
		# shellcheck disable=SC2086  # ARGS_B: words on purpose
		bench_helper_start --probes "$sets" --anomaly off ${ARGS_B:-}
		bench_helper_bin=$a
	}
	cost_off() { bench_helper_stop; bench_helper_start "${helper_args[@]}"; } ;;
kwindow)
	sets=${SETS:-syscall,vfs,block,sched,memory,network}
	helper_args=(--probes "$sets" --kernel-sets escalated --exact-budget unlimited --anomaly off)
	# shellcheck disable=SC2206  # ARGS: words on purpose
	helper_args+=(${ARGS:-})
	cost_on() { bench_psql "SELECT granted_s FROM pg_tracer_escalate(3600)" >/dev/null; }
	cost_off() { bench_psql "SELECT pg_tracer_deescalate()" >/dev/null; }
	settle=0.2 ;;
*) echo "unknown kind $kind (exact, hooks, kernel or kwindow)" >&2; exit 2 ;;
esac

settle=${settle:-1.0}	# seconds after a switch left out
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
	: > "$work/cpu"
	( while :; do echo "$(date +%s.%N) $(head -1 /proc/stat)" >> "$work/cpu"; sleep 0.5; done ) &
	sampler=$!
	as_pg pgbench -T "$secs" -P 1 --progress-timestamp "${f[@]}" > /dev/null 2> "$work/progress" &
	pgb=$!
	python3 "$(dirname "$0")/schedstat_sample.py" "$(head -1 "$bench_dir/data/postmaster.pid")" "$work/sched" &
	sched_sampler=$!
	sleep 3
	while kill -0 "$pgb" 2>/dev/null; do
		toggle_to on cost_on
		toggle_to off cost_off
		if [ "$kind" = kernel ] && [ -n "${HELPER_B:-}" ] && kill -0 "$pgb" 2>/dev/null; then
			toggle_to on-b cost_on_b
			toggle_to off cost_off
		fi
	done
	wait "$pgb" || true
	kill "$sampler" "$sched_sampler" 2>/dev/null || true	# the sampler may have died: its line is then left out
	wait "$sampler" "$sched_sampler" 2>/dev/null || true
	if [ -n "${KEEP:-}" ]; then
		mkdir -p "$KEEP"
		n=$(ls "$KEEP" | grep -c "^$1-.*\.progress$" || true)
		for f in progress switches cpu sched; do cp "$work/$f" "$KEEP/$1-$((n + 1)).$f"; done
	fi
	python3 - "$1" "$work/progress" "$work/switches" "$work/cpu" "$work/pool" "$work/sched" "$settle" <<'PY'
import bisect, random, re, statistics, sys
mode, progress, switches, cpufile, pool, schedfile = sys.argv[1:7]
settle = float(sys.argv[7])
sw = [(l.split()[0], float(l.split()[1])) for l in open(switches) if l.strip()]
secs = [(float(m.group(1)), float(m.group(2))) for m in
        (re.match(r"progress: ([\d.]+) s, ([\d.]+) tps", l) for l in open(progress)) if m]

def state_at(t0, t1):
    """on/off when [t0, t1] lies in one block, settle s or more after its switch"""
    cur = None
    for i, (s, t) in enumerate(sw):
        end = sw[i + 1][1] if i + 1 < len(sw) else float("inf")
        if t + settle <= t0 and t1 <= end:
            return s, i
    return None, None

def off_around(i, values):
    """the values of the nearest off-blocks before and after switch entry i
    (values: {switch index of an off-block: value}; a side whose nearest
    off-block has none is left out): what an on-block is compared with"""
    near = []
    for step in (-1, 1):
        j = i + step
        while 0 <= j < len(sw) and sw[j][0] != "off":
            j += step
        if j in values:
            near.append(values[j])
    return near

# /proc/stat "cpu" lines: user nice system idle iowait irq softirq steal ...
cpu = [(float(f[0]), [int(x) for x in f[2:10]]) for f in
       (l.split() for l in open(cpufile)) if len(f) >= 10]
cpu_t = [c[0] for c in cpu]

def counters_at(t):
    """the cumulative counters at time t, interpolated between samples"""
    i = min(max(bisect.bisect_left(cpu_t, t), 1), len(cpu) - 1)
    (t0, a), (t1, b) = cpu[i - 1], cpu[i]
    f = (t - t0) / (t1 - t0) if t1 > t0 else 0
    return [x + (y - x) * f for x, y in zip(a, b)]

def given_share(t0, t1):
    """share of [t0, t1] the CPUs were not stolen by the host"""
    if len(cpu) < 2:
        return 1.0
    d = [y - x for x, y in zip(counters_at(t0), counters_at(t1))]
    total = sum(d)
    return (total - d[7]) / total if total > 0 and d[7] < total else 1.0

def median_ci(ratios, reps=2000):
    """95 % bootstrap interval of the median block ratio (blocks resampled
    with replacement; fixed seed, so a run's report is reproducible)"""
    rng = random.Random(1)
    meds = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(reps))
    return meds[int(0.025 * reps)], meds[int(0.975 * reps) - 1]

def report(label, per_second, state="on"):
    blocks = {}
    for t, tps in per_second:
        s, i = state_at(t - 1.0, t)
        if s:
            blocks.setdefault(i, (s, []))[1].append(tps)
    means = {i: (s, statistics.mean(v)) for i, (s, v) in blocks.items()}
    off_means = {i: m for i, (s, m) in means.items() if s == "off"}
    ratios = []
    for i, (s, m) in means.items():
        if s != state:
            continue
        around = off_around(i, off_means)
        if around:
            ratios.append(m / statistics.mean(around))
    on = [m for s, m in means.values() if s == state]
    off = [m for s, m in means.values() if s == "off"]
    if not ratios:
        print("%s: too few blocks" % mode)
        return
    q = statistics.quantiles(ratios, n=4) if len(ratios) >= 4 else [min(ratios), 0, max(ratios)]
    with open(pool, "a") as f:
        f.write("%s\t%s\t%s\t%r\t%s\n" % (mode, state, label, statistics.mean(on) / statistics.mean(off),
                                            " ".join("%r" % r for r in ratios)))
    lo, hi = median_ci(ratios)
    print("%-6s %-4s %-16s: %d on-blocks, median ratio %.3f (95%% CI %.3f-%.3f, quartiles %.3f-%.3f), "
          "mean on %.1f / off %.1f tps = %.3f"
          % (mode, state, label, len(ratios), statistics.median(ratios), lo, hi, q[0], q[-1],
             statistics.mean(on), statistics.mean(off), statistics.mean(on) / statistics.mean(off)))

def by_second(state):
    """each on-block's seconds, by their distance from its switch, over the
    off-blocks around it: a restart that still weighs on a block's first
    seconds would show there, not in the later ones"""
    off = {}
    for t, tps in secs:
        s, i = state_at(t - 1.0, t)
        if s == "off":
            off.setdefault(i, []).append(tps)
    at = {}
    for i, (s, t) in enumerate(sw):
        if s != state:
            continue
        near = off_around(i, {j: statistics.mean(v) for j, v in off.items()})
        if not near:
            continue
        for tt, tps in secs:
            if state_at(tt - 1.0, tt)[1] == i:
                at.setdefault(int(tt - t), []).append(tps / statistics.mean(near))
    print("%-6s %-4s by second      : %s" % (mode, state, " ".join(
        "%ds %.3f" % (k, statistics.median(v)) for k, v in sorted(at.items()) if len(v) >= 3)))

# schedstat_sample.py's samples: [(time, {tid: (class, cpu_ns, runq_ns, slices)})]
sched = []
for l in open(schedfile):
    f = l.split()
    if f and f[0] == "T":
        sched.append((float(f[1]), {}))
    elif sched and len(f) == 5:
        sched[-1][1][f[0]] = (f[1], int(f[2]), int(f[3]), int(f[4]))

def txn_split(t0, t1):
    """a transaction's time in [t0, t1] by process class: microseconds on a
    CPU, waiting in a run queue, and asleep (the rest of its threads' time),
    each summed over the class's threads and divided by the transactions"""
    inside = [x for x in sched if t0 <= x[0] <= t1]
    if len(inside) < 4:
        return None
    (ta, a), (tb, b) = inside[0], inside[-1]
    tps = [v for t, v in secs if ta + 1.0 <= t <= tb]
    if not tps or not statistics.mean(tps):
        return None
    txns = statistics.mean(tps) * (tb - ta)
    split = {}
    for tid, (cls, cpu_ns, runq_ns, _) in b.items():
        if tid in a:
            c = split.setdefault(cls, [0.0, 0.0, 0.0])
            c[0] += cpu_ns - a[tid][1]
            c[1] += runq_ns - a[tid][2]
            c[2] += (tb - ta) * 1e9 - (cpu_ns - a[tid][1]) - (runq_ns - a[tid][2])
    return {(cls, part): ns / txns / 1e3 for cls, c in split.items()
            for part, ns in zip(("CPU", "run queue", "asleep"), c)}

def per_txn(state):
    """txn_split of the on-blocks against the off-blocks before and after:
    whether the probes cost the clients and backends CPU, or time in a run
    queue (the CPUs' queueing), or sleep (waiting on something else)"""
    blocks = {i: (s, txn_split(t + 1.0, sw[i + 1][1])) for i, (s, t) in enumerate(sw[:-1]) if s != "x"}
    off_splits = {i: v for i, (s, v) in blocks.items() if s == "off" and v}
    level = {}
    ratios = {}
    for i, (s, v) in blocks.items():
        if not v:
            continue
        for k, us in v.items():
            level.setdefault((s, k), []).append(us)
        near = off_around(i, off_splits)
        if s != state or len(near) < 2:
            continue
        for k, us in v.items():
            base = statistics.mean(n.get(k, 0.0) for n in near)
            if base > 0:
                ratios.setdefault(k, []).append(us / base)
    groups = []
    for cls, label in (("backend", "backends"), ("pgbench", "pgbench")):
        parts = ["%s %.0f -> %.0f us (x%.3f)" % (
                     part, statistics.median(level[("off", (cls, part))]),
                     statistics.median(level[(state, (cls, part))]), statistics.median(ratios[(cls, part)]))
                 for part in ("CPU", "run queue", "asleep")
                 if ("off", (cls, part)) in level and (state, (cls, part)) in level and (cls, part) in ratios]
        if parts:
            groups.append(label + ": " + ", ".join(parts))
    if groups:
        print("%-6s %-4s per transaction: %s" % (mode, state, "; ".join(groups)))

for state in ["on"] + (["on-b"] if any(s == "on-b" for s, _ in sw) else []):
    report("TPS", secs, state)
    by_second(state)
    per_txn(state)
    report("TPS / given CPU", [(t, tps / given_share(t - 1.0, t)) for t, tps in secs], state)
PY
}

# pooled: for a workload run more than once (WORKLOADS="tpcb tpcb tpcb"),
# the median and quartiles of every run's block ratios together, and the
# median of the runs' ratios of means
pooled() {
	python3 - "$work/pool" <<'PY'
import random, statistics, sys

def pooled_ci(runs, reps=2000):
    """95 % interval of the pooled median by a two-level bootstrap: runs
    resampled, then each drawn run's blocks (runs minutes apart differ by
    more than blocks seconds apart, and this keeps that in the interval)"""
    rng = random.Random(1)
    meds = []
    for _ in range(reps):
        blocks = []
        for rr in rng.choices(runs, k=len(runs)):
            blocks += rng.choices(rr, k=len(rr))
        meds.append(statistics.median(blocks))
    meds.sort()
    return meds[int(0.025 * reps)], meds[int(0.975 * reps) - 1]

runs = {}
for l in open(sys.argv[1]):
    mode, state, label, mean_ratio, ratios = l.rstrip("\n").split("\t")
    runs.setdefault((mode, state, label), []).append((float(mean_ratio), [float(r) for r in ratios.split()]))
for (mode, state, label), rs in runs.items():
    if len(rs) < 2:
        continue
    blocks = [r for _, rr in rs for r in rr]
    q = statistics.quantiles(blocks, n=4)
    lo, hi = pooled_ci([rr for _, rr in rs])
    print("%-6s %-4s %-16s: pooled over %d runs, %d on-blocks, median ratio %.3f (95%% CI %.3f-%.3f, "
          "quartiles %.3f-%.3f); the runs' ratios of means %s, median %.3f"
          % (mode, state, label, len(rs), len(blocks), statistics.median(blocks), lo, hi, q[0], q[-1],
             " ".join("%.3f" % m for m, _ in rs), statistics.median(m for m, _ in rs)))
PY
}

label=$kind
[ "$kind" = hooks ] && label="hooks (${HOOKS:-exit,switch})"
echo "$label switched every ${period} s inside ${secs} s pgbench runs (clients $bench_clients):"
: > "$work/pool"
for w in ${WORKLOADS:-select tpcb}; do
	toggle_run "$w"
done
pooled
