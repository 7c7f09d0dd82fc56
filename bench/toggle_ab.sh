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
# attach or a detach: no work spills over).  So is the start of each run:
# pgbench runs WARMUP seconds (default 15) before the first switch, seconds
# no block counts (right after the VACUUM and CHECKPOINT every page's first
# change writes a full-page image: the first block would pay for that), and
# the run is that much longer than SECONDS.  The first counted block is an
# on-block in a workload's 1st, 3rd, ... run and an off-block in its 2nd,
# 4th, ...: whatever still settles early in a run does not always weigh on
# the same state.
# Each switch is confirmed before its block's time starts: the switch asks
# (pg_tracer_escalate() returns before the helper attaches anything, and a
# set that fails to attach again only says so in pg_tracer_probes), so the
# script polls pg_tracer_probes until every selected set reads as the block
# needs ("attached for an escalation window" / "held outside escalation
# windows" for kwindow, running / not started for kernel; for exact, the
# window open or closed by pg_tracer_exact_budget() and the exact set
# running), and stops the whole run with the sets' states when one is
# unavailable, degraded, or not there within STATE_TIMEOUT seconds.
# Printed per workload: the median of the on/off pair ratios (each
# on-block's mean TPS over the mean TPS of each of the off-blocks right
# before and after it, separately: every block but the first and last is
# in two ratios, an on-block as numerator of both, an off-block as
# denominator of both, so a block that dips weighs the same in either
# state; comparing each on-block with the mean of its two neighbours
# instead, as this script did before, counted an off-block twice and an
# on-block once, and dips pushed that median up), with its "95 %"
# interval from a cycle bootstrap (on-blocks resampled, each with both of
# its ratios; nearer 90 % on simulated runs: see median_ci), and the ratio
# of means (mean TPS of the on-blocks over that of the off-blocks, which
# dips do not bias either); then the same with each
# second's TPS divided by the share of that second the VM's CPUs were not
# stolen by the host (/proc/stat steal, sampled every 0.5 s): a guest's
# throughput follows the CPU time it is given, and the host's other
# tenants take more of it in some seconds than the probes cost.
# A workload named more than once in WORKLOADS runs that many times, and a
# pooled line follows: the pair ratios of all its runs together (the
# interval from a bootstrap stratified by run: each run's on-blocks
# resampled within that run), the runs' ratios of means, their median and
# their range (this host's TPS drifts between runs by more than the
# margins the targets leave, and the interval does not include that).
# A "by second" line gives the on-blocks' seconds by how long after the
# switch they ran (medians over the on/off pairs): a helper restart whose
# work spilled into the block would show as low early seconds.
# A "per transaction" line splits a transaction's time, for the backends
# and for pgbench, into time on a CPU, waiting in a run queue, and asleep,
# from the kernel's scheduler accounting (bench/schedstat_sample.py): the
# median over off-blocks, over on-blocks, and the median of the on/off
# pair ratios (as above).  It tells whether the probes cost CPU,
# queueing for the CPUs, or waiting on something else.
#   env: those of bench/lib.sh, WORKLOADS (default "select tpcb"), KEEP=DIR
#   to keep each run's raw data there (pgbench's per-second progress, the
#   switch times, the /proc/stat and schedstat samples), WARMUP (whole
#   seconds before the first switch, default 15), STATE_TIMEOUT (seconds a
#   switch may take to show in pg_tracer_probes, default 5, 15 for kernel),
#   and ALLOW_DEGRADED (default 1: a set degraded for what this kernel
#   lacks, vfs without kprobes, say, is measured as it runs; 0 stops the
#   run on any degraded set); a set that fails to attach again for a
#   window stops the run regardless.
#   SETS="all" (kernel, kwindow) checks the six kernel sets.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kind=${1:?usage: toggle_ab.sh exact|hooks|kernel|kwindow [SECONDS] [PERIOD]}
secs=${2:-120}
period=${3:-4}
work=$(mktemp -d /tmp/pgt_toggle_ab.XXXXXX)
chmod 755 "$work"
sampler='' sched_sampler=''
trap 'kill $sampler $sched_sampler 2>/dev/null || true; rm -rf "$work"; bench_cleanup' EXIT
warmup=${WARMUP:-15}
case $warmup in '' | *[!0-9]*) echo "WARMUP: whole seconds, not $warmup" >&2; exit 2 ;; esac
kernel_sets="syscall vfs block sched memory network"

case $kind in
exact)
	helper_args=(--probes exact --mode tiered --exact-budget unlimited --anomaly off)
	watch=exact
	cost_on() { bench_psql "SELECT granted_s FROM pg_tracer_escalate(3600)" >/dev/null; }
	cost_off() { bench_psql "SELECT pg_tracer_deescalate()" >/dev/null; } ;;
hooks)
	bench_build_op_cost "$work"
	helper_args=(--probes none --anomaly off)
	watch=	# bench_hold_hooks itself waits until its programs are attached
	cost_on() { bench_hold_hooks "$work"; }
	# nothing held yet (a run that starts with an off-block): nothing to do
	cost_off() { [ -z "$bench_hold_pid" ] || bench_release_hooks; } ;;
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

# the sets a switch must be seen to reach (kernel, kwindow): those of SETS
# (`all`: the six kernel sets; only those are held between windows)
if [ "$kind" = kernel ] || [ "$kind" = kwindow ]; then
	watch=
	for s in ${sets//,/ }; do
		[ "$s" = all ] && s=$kernel_sets
		watch="${watch:+$watch }$s"
	done
fi
# a helper restart (kernel) takes a second or two before its sets report
state_timeout=${STATE_TIMEOUT:-$([ "$kind" = kernel ] && echo 15 || echo 5)}

settle=${settle:-1.0}	# seconds after a switch left out
bench_cluster toggle 55587
bench_helper_start "${helper_args[@]}"

# toggle_abort MESSAGE: stop the run (the measurement would be of the wrong
# state); the EXIT trap puts the cluster and the helper back
toggle_abort() {
	echo "toggle_ab: $*; stopping" >&2
	# shellcheck disable=SC2086  # pids, those not started empty
	kill ${pgb:-} $sampler $sched_sampler 2>/dev/null || true
	exit 1
}

# set_rows: "NAME|STATE|REASON" of every watched set (state "absent" when
# pg_tracer_probes has no row for it), and for exact one "window|open" or
# "window|closed" (pg_tracer_exact_budget(): the helper's own answer)
set_rows() {
	local q="SELECT w.name, coalesce(p.state, 'absent'), coalesce(p.reason, '')
	         FROM unnest(string_to_array('$watch', ' ')) AS w(name)
	         LEFT JOIN pg_tracer_probes p ON p.probe_set = w.name"
	[ "$kind" = exact ] &&
		q+=" UNION ALL SELECT 'window', CASE WHEN active THEN 'open' ELSE 'closed' END, ''
		     FROM pg_tracer_exact_budget()"
	bench_psql "$q" 2>/dev/null || true
}

# set_verdict WANT NAME STATE REASON: 0 when the row reads as WANT
# (on/off: kwindow's attached/held wording; running; stopped: no row;
# open/closed: exact's window), 1 when not yet, 2 when it will not (why in
# set_why).  The reasons are the helper's (helper/kernel_hold.c: RUN_NOTE,
# HOLD_NOTE, "did not attach again for an escalation window"); a note
# (a full table) may come before them, hence the wildcards.
set_verdict() {
	local want=$1 name=$2 state=$3 reason=$4
	case $want in
	open | closed) [ "$state" = "$want" ]; return ;;
	stopped) [ "$state" = absent ]; return ;;
	esac
	case $state in
	absent) return 1 ;;
	unavailable) set_why="$name is unavailable: $reason"; return 2 ;;
	degraded)
		if [[ $reason == *"did not attach again"* ]]; then
			set_why="$name is degraded: $reason"
			return 2
		fi
		if [ "${ALLOW_DEGRADED:-1}" = 0 ]; then
			set_why="$name is degraded: $reason (ALLOW_DEGRADED=0)"
			return 2
		fi ;;
	esac
	case $want in
	on) [[ $reason == *"attached for an escalation window"* ]] ;;
	off) [[ $reason == *"held outside escalation windows"* ]] ;;
	*) return 0 ;;
	esac
}

# sets_wait on|on-b|off: poll pg_tracer_probes until every watched set is
# as a block of that state needs (see the header), or abort the run
sets_wait() {
	[ -n "$watch" ] || return 0
	local want=$1 win='' name state reason rc left seen try tries
	case $kind/$1 in
	kernel/off) want=stopped ;;
	kernel/*) want=running ;;
	exact/on) want=running win=open ;;
	exact/off) want=running win=closed ;;
	esac
	tries=$(echo "$state_timeout * 20 / 1" | bc)	# 50 ms apart, each a psql round trip
	for ((try = 0; ; try++)); do
		left='' seen=0
		while IFS='|' read -r name state reason; do
			[ -n "$name" ] || continue
			seen=$((seen + 1))
			rc=0
			if [ "$name" = window ]; then
				set_verdict "$win" "$name" "$state" "$reason" || rc=$?
			else
				set_verdict "$want" "$name" "$state" "$reason" || rc=$?
			fi
			[ "$rc" -ne 2 ] || toggle_abort "switching to $1: $set_why"
			[ "$rc" -eq 0 ] || left+="; $name: $state${reason:+ ($reason)}"
		done <<<"$(set_rows)"
		[ "$seen" -gt 0 ] || left="; pg_tracer_probes could not be read"
		[ -n "$left" ] || return 0
		[ "$try" -lt "$tries" ] ||
			toggle_abort "switching to $1: not there within $state_timeout s${left}"
		sleep 0.05
	done
}
sets_wait off	# as the helper starts: held (kwindow), not started (kernel), no window (exact)
cur=off

# toggle_to on|on-b|off FUNCTION: switch (the switch itself, and the wait
# until pg_tracer_probes shows it done, logged as state x), then hold the
# new state for a period
toggle_to() {
	echo "x $(date +%s.%N)" >> "$work/switches"
	"$2"
	sets_wait "$1"
	echo "$1 $(date +%s.%N)" >> "$work/switches"
	cur=$1
	sleep "$period"
}

declare -A runs_of	# runs so far of each workload

# toggle_run select|tpcb: one pgbench run with the cost switched every
# period; prints the analysis
toggle_run() {
	local f=(-c "$bench_clients" -j "$bench_clients" -h "$bench_dir" -p "$bench_port" postgres)
	local pgb first order st
	[ "$1" = select ] && f=(-S "${f[@]}")
	runs_of[$1]=$((${runs_of[$1]:-0} + 1))
	# the cycle: on first in a workload's odd runs, off first in its even ones
	first=on order=(on off)
	[ $((runs_of[$1] % 2)) -eq 1 ] || first=off order=(off on)
	if [ "$kind" = kernel ] && [ -n "${HELPER_B:-}" ]; then
		if [ "$first" = on ]; then order+=(on-b off); else order+=(off on-b); fi
	fi
	# the warm-up in the other state, so that the first block, too, starts
	# with a switch (not logged: no block counts before the first switch)
	if [ "$first" = on ] && [ "$cur" != off ]; then cost_off; sets_wait off; cur=off; fi
	if [ "$first" = off ] && [ "$cur" = off ]; then cost_on; sets_wait on; cur=on; fi
	echo "$1 run ${runs_of[$1]}: $first-block first, after ${warmup} s of warm-up (not counted)"
	bench_psql VACUUM >/dev/null
	bench_psql CHECKPOINT >/dev/null
	: > "$work/switches"
	: > "$work/cpu"
	( while :; do echo "$(date +%s.%N) $(head -1 /proc/stat)" >> "$work/cpu"; sleep 0.5; done ) &
	sampler=$!
	as_pg pgbench -T "$((secs + warmup))" -P 1 --progress-timestamp "${f[@]}" > /dev/null 2> "$work/progress" &
	pgb=$!
	python3 "$(dirname "$0")/schedstat_sample.py" "$(head -1 "$bench_dir/data/postmaster.pid")" "$work/sched" &
	sched_sampler=$!
	sleep "$warmup"
	while kill -0 "$pgb" 2>/dev/null; do
		for st in "${order[@]}"; do
			kill -0 "$pgb" 2>/dev/null || break
			if [ "$st" = on-b ]; then toggle_to on-b cost_on_b
			elif [ "$st" = on ]; then toggle_to on cost_on
			else toggle_to off cost_off; fi
		done
	done
	wait "$pgb" || true
	kill "$sampler" "$sched_sampler" 2>/dev/null || true	# the sampler may have died: its line is then left out
	wait "$sampler" "$sched_sampler" 2>/dev/null || true
	sampler='' sched_sampler=''
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

def pair_ratios(values, state):
    """for each block of state that has an off-block with a value right
    before or after it, the list of its ratios to each of those off-blocks,
    separately (values: {switch index: (state, value)}).  An off-block is
    the denominator of the ratios of the two blocks of state beside it and a
    block of state the numerator of its two: every block weighs twice,
    whichever state it is in.  (An on-block over the mean of its two
    neighbours weighed each off-block twice and each on-block once: a dip
    in an off-block raised two ratios, one in an on-block lowered one, and
    the median of such ratios rose with the dips.)  The list per block
    keeps a block's two ratios together for median_ci."""
    off = {i: v for i, (s, v) in values.items() if s == "off"}
    units = []
    for i in sorted(values):
        s, v = values[i]
        if s == state:
            u = [v / o for o in off_around(i, off) if o]
            if u:
                units.append(u)
    return units

def median_ci(units, reps=2000):
    """95 % interval of the median pair ratio by a cycle bootstrap: whole
    on-blocks resampled with replacement, each with both of its ratios (the
    two share the on-block, so they are not two independent draws).  Two
    neighbouring on-blocks still share the off-block between them: drawing
    two or three neighbouring on-blocks together made no difference on
    simulated runs (30 cycles, 2-3 % noise a block and a second, up to 10 %
    of the blocks 30 % down), where this interval held the true ratio in
    89-92 % of the runs, not 95 % (the median's bootstrap is narrow at
    these sizes): read it as about a 90 % interval.  Fixed seed, so a
    run's report is reproducible."""
    rng = random.Random(1)
    meds = sorted(statistics.median([r for u in rng.choices(units, k=len(units)) for r in u])
                  for _ in range(reps))
    return meds[int(0.025 * reps)], meds[int(0.975 * reps) - 1]

def report(label, per_second, state="on"):
    blocks = {}
    for t, tps in per_second:
        s, i = state_at(t - 1.0, t)
        if s:
            blocks.setdefault(i, (s, []))[1].append(tps)
    means = {i: (s, statistics.mean(v)) for i, (s, v) in blocks.items()}
    units = pair_ratios(means, state)
    ratios = [r for u in units for r in u]
    on = [m for s, m in means.values() if s == state]
    off = [m for s, m in means.values() if s == "off"]
    if not ratios:
        print("%s: too few blocks" % mode)
        return
    q = statistics.quantiles(ratios, n=4) if len(ratios) >= 4 else [min(ratios), 0, max(ratios)]
    with open(pool, "a") as f:
        f.write("%s\t%s\t%s\t%r\t%s\n" % (mode, state, label, statistics.mean(on) / statistics.mean(off),
                                            " ".join(",".join("%r" % r for r in u) for u in units)))
    lo, hi = median_ci(units)
    print("%-6s %-4s %-16s: %d on-blocks, median ratio %.3f (95%% CI %.3f-%.3f, quartiles %.3f-%.3f), "
          "mean on %.1f / off %.1f tps = %.3f; the median is of %d on/off pair ratios"
          % (mode, state, label, len(units), statistics.median(ratios), lo, hi, q[0], q[-1],
             statistics.mean(on), statistics.mean(off), statistics.mean(on) / statistics.mean(off),
             len(ratios)))

def by_second(state):
    """each on-block's seconds, by their distance from its switch, over
    each off-block beside it (as pair_ratios): a restart that still weighs
    on a block's first seconds would show there, not in the later ones"""
    off = {}
    for t, tps in secs:
        s, i = state_at(t - 1.0, t)
        if s == "off":
            off.setdefault(i, []).append(tps)
    off_means = {j: statistics.mean(v) for j, v in off.items()}
    at = {}
    for i, (s, t) in enumerate(sw):
        if s != state:
            continue
        near = off_around(i, off_means)
        for tt, tps in secs:
            if state_at(tt - 1.0, tt)[1] == i:
                for o in near:
                    at.setdefault(int(tt - t), []).append(tps / o)
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
    """txn_split of the on-blocks against each off-block before and after,
    separately (the pairs of pair_ratios): whether the probes cost the
    clients and backends CPU, or time in a run queue (the CPUs' queueing),
    or sleep (waiting on something else)"""
    blocks = {i: (s, txn_split(t + 1.0, sw[i + 1][1])) for i, (s, t) in enumerate(sw[:-1]) if s != "x"}
    off_splits = {i: v for i, (s, v) in blocks.items() if s == "off" and v}
    level = {}
    ratios = {}
    pairs = 0
    for i, (s, v) in blocks.items():
        if not v:
            continue
        for k, us in v.items():
            level.setdefault((s, k), []).append(us)
        if s != state:
            continue
        near = off_around(i, off_splits)
        pairs += len(near)
        for n in near:
            for k, us in v.items():
                base = n.get(k, 0.0)
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
        print("%-6s %-4s per transaction: %s (x: median of %d on/off pair ratios)"
              % (mode, state, "; ".join(groups), pairs))

for state in ["on"] + (["on-b"] if any(s == "on-b" for s, _ in sw) else []):
    report("TPS", secs, state)
    by_second(state)
    per_txn(state)
    report("TPS / given CPU", [(t, tps / given_share(t - 1.0, t)) for t, tps in secs], state)
PY
}

# pooled: for a workload run more than once (WORKLOADS="tpcb tpcb tpcb"),
# the median and quartiles of every run's pair ratios together, the runs'
# ratios of means, their median and their range
pooled() {
	python3 - "$work/pool" <<'PY'
import random, statistics, sys

def pooled_ci(runs, reps=2000):
    """95 % interval of the pooled median pair ratio by a bootstrap
    stratified by run: in each replicate every run's on-blocks (each with
    its ratios, as median_ci) are resampled within that run, as many as it
    has.  The runs themselves are not resampled: with two to four of them a
    draw of runs is mostly one run twice, and what runs minutes apart differ
    by is shown by the range of their ratios of means, printed beside it
    (it is not in this interval)."""
    rng = random.Random(1)
    meds = []
    for _ in range(reps):
        ratios = []
        for units in runs:
            for u in rng.choices(units, k=len(units)):
                ratios += u
        meds.append(statistics.median(ratios))
    meds.sort()
    return meds[int(0.025 * reps)], meds[int(0.975 * reps) - 1]

runs = {}
for l in open(sys.argv[1]):
    mode, state, label, mean_ratio, units = l.rstrip("\n").split("\t")
    runs.setdefault((mode, state, label), []).append(
        (float(mean_ratio), [[float(r) for r in u.split(",")] for u in units.split()]))
for (mode, state, label), rs in runs.items():
    if len(rs) < 2:
        continue
    ratios = [r for _, units in rs for u in units for r in u]
    q = statistics.quantiles(ratios, n=4)
    lo, hi = pooled_ci([units for _, units in rs])
    means = [m for m, _ in rs]
    print("%-6s %-4s %-16s: pooled over %d runs, %d on-blocks, median ratio %.3f (95%% CI %.3f-%.3f, "
          "quartiles %.3f-%.3f); the runs' ratios of means %s, median %.3f; the median is of %d on/off "
          "pair ratios, its interval from on-blocks resampled within each run; the runs' ratios of "
          "means range %.3f-%.3f"
          % (mode, state, label, len(rs), sum(len(units) for _, units in rs), statistics.median(ratios),
             lo, hi, q[0], q[-1], " ".join("%.3f" % m for m in means), statistics.median(means),
             len(ratios), min(means), max(means)))
PY
}

label=$kind
[ "$kind" = hooks ] && label="hooks (${HOOKS:-exit,switch})"
echo "$label switched every ${period} s inside ${secs} s pgbench runs (clients $bench_clients;" \
	"each run ${warmup} s longer: a warm-up no block counts):"
: > "$work/pool"
for w in ${WORKLOADS:-select tpcb}; do
	toggle_run "$w"
done
pooled
