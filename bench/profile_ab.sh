#!/usr/bin/env bash
# profile_ab.sh — where the kernel sets' CPU goes, by sampling every CPU.
#
# The throughput ratios of toggle_ab.sh move by more from one run to the
# next on a shared VM than the sets cost, and bpf_stats (build_ab.sh) times
# the programs' bodies only: not the tracepoints and bpf_trace_run that call
# them, nor whatever they make slower around them.  This samples the whole
# machine instead (perf's cpu-clock, a timer: no PMU needed, so it works in
# a guest) during pgbench runs with the sets on and off, interleaved (off
# on, on off, ...; the helper runs throughout with --kernel-sets escalated
# and the switch is an escalation window, as in toggle_ab.sh kwindow), and
# divides each category's CPU time by the transactions pgbench reports for
# the same run:
#
#   tracepoint dispatch   bpf_trace_run*, __bpf_trace_*, syscall_exit_work,
#                         syscall_trace_enter: what every program attached
#                         to a tracepoint costs before it runs
#   BPF programs          the JITed programs' own code (bpf_prog_*)
#   BPF helpers, maps     the helpers and map code they call
#   irq-off skid          finish_task_switch, _raw_spin_unlock_irq*: a timer
#                         sample cannot land while interrupts are off, so
#                         the time of everything that runs with them off
#                         (the context switch, sched_switch's programs among
#                         it) is counted where they are turned on again
#   kernel, other         the rest of the kernel
#   postgres / pgbench    user-mode code of the server and of the client
#   helper                pg-tracer itself (reading the maps), all modes
#
# It prints each category's CPU per transaction and share of the busy CPU
# (medians of the rounds), on and off, the symbols that grew most, and
# round by round how user-mode time a transaction changed.  The
# figure to read is the sets' direct share (the first three categories): it
# moved by about half a point between rounds whose TPS ratios moved by
# twenty, since a slower host stretches the whole run alike.  From it, a
# ratio: what those categories alone cost a CPU-bound server.  The skid
# (sched_switch's programs) and any slowing of other code come on top.  The
# TPS and busy-CPU ratios it prints are as noisy as any on such a host
# (bench/RESULTS.md): throughput is toggle_ab.sh's to measure.  A
# benchmark, not a test: it asserts nothing.  Run as root after `make
# install`.
#
#   bench/profile_ab.sh [ROUNDS (4)] [SECONDS (12)] [select|tpcb]
#   env: SETS (default the six kernel sets), ARGS (more daemon options, e.g.
#   "--query-id off"), HOOKS (instead of the sets, empty programs on these
#   hooks: exit, switch, percall; see bench/bpf_op_cost.c), FREQ (samples a
#   second per CPU, default 4999),
#   SAMPLE=0 (the same runs without perf, TPS only: whether sampling
#   moves the ratios), KEEP=DIR (keep each run's perf report there), and
#   those of bench/lib.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

command -v perf >/dev/null ||
	{ echo "profile_ab.sh: needs perf (Debian's linux-perf: scripts/install-deps.sh)" >&2; exit 1; }
rounds=${1:-4}
secs=${2:-12}
mode=${3:-tpcb}
sets=${SETS:-syscall,vfs,block,sched,memory,network}
freq=${FREQ:-4999}
sample=${SAMPLE:-1}
work=$(mktemp -d /tmp/pgt_profile_ab.XXXXXX)
trap 'rm -rf "$work"; bench_cleanup' EXIT

bench_cluster profile 55603
if [ -n "${HOOKS:-}" ]; then
	# on: empty programs on HOOKS (bench/bpf_op_cost.c --hold), the
	# foundation alone running
	bench_build_op_cost "$work"
	bench_helper_start --probes none --anomaly off
	sets="none; empty programs on $HOOKS"
else
	# shellcheck disable=SC2086  # ARGS: words on purpose
	bench_helper_start --probes "$sets" --kernel-sets escalated --exact-budget unlimited \
		--anomaly off ${ARGS:-}
fi

set_state() {
	if [ -n "${HOOKS:-}" ]; then
		# two runs in a row may be on (off on, on off): one holder at a time
		if [ "$1" = on ]; then [ -n "$bench_hold_pid" ] || bench_hold_hooks "$work"
		elif [ -n "$bench_hold_pid" ]; then bench_release_hooks; fi
	elif [ "$1" = on ]; then bench_psql "SELECT granted_s FROM pg_tracer_escalate(3600)" >/dev/null
	else bench_psql "SELECT pg_tracer_deescalate()" >/dev/null; fi
	sleep 0.5
}

# profile_run on|off ROUND: one pgbench run under `perf record -a`, after a
# VACUUM, a CHECKPOINT and a 2 s run thrown away (as bench_pgbench); leaves
# STATE.ROUND.txns (transactions) and STATE.ROUND.report (perf report: CPU
# ns per comm, object and symbol)
profile_run() {
	local f=(-c "$bench_clients" -j "$bench_clients" -h "$bench_dir" -p "$bench_port" postgres)
	local tag=$work/$1.$2
	[ "$mode" = select ] && f=(-S "${f[@]}")
	set_state "$1"
	bench_psql VACUUM >/dev/null
	bench_psql CHECKPOINT >/dev/null
	as_pg pgbench -T 2 "${f[@]}" >/dev/null 2>&1
	if [ "$sample" = 1 ]; then
		perf record -q -a -e cpu-clock -F "$freq" -o "$tag.data" -- \
			runuser -u postgres -- pgbench -T "$secs" "${f[@]}" > "$tag.pgb" 2>/dev/null
		perf report -i "$tag.data" --stdio --no-children -F period,comm,dso,sym -t '|' \
			2>/dev/null | { grep -v -e '^#' -e '^$' || true; } > "$tag.report"
		rm -f "$tag.data"
	else
		as_pg pgbench -T "$secs" "${f[@]}" > "$tag.pgb" 2>/dev/null
		: > "$tag.report"
	fi
	awk '/^number of transactions actually processed/ {split($NF, a, "/"); print a[1]}' \
		"$tag.pgb" > "$tag.txns"
	[ -s "$tag.txns" ] ||
		{ echo "profile_ab.sh: pgbench reported no transactions ($1, round $2):" >&2; cat "$tag.pgb" >&2; exit 1; }
	[ "$sample" != 1 ] || [ -s "$tag.report" ] ||
		{ echo "profile_ab.sh: perf recorded no samples ($1, round $2)" >&2; exit 1; }
	[ -z "${KEEP:-}" ] || { mkdir -p "$KEEP"; cp "$tag.report" "$tag.txns" "$KEEP/"; }
	printf 'round %d %-3s: %s transactions in %s s\n' "$2" "$1" "$(cat "$tag.txns")" "$secs"
}

echo "profile_ab: $mode, sets $sets, $rounds rounds of $secs s," \
	"$([ "$sample" = 1 ] && echo "cpu-clock at $freq Hz per CPU" || echo "not sampled")"
for r in $(seq "$rounds"); do
	if bench_a_first "$r"; then profile_run off "$r"; profile_run on "$r"
	else profile_run on "$r"; profile_run off "$r"; fi
done

python3 - "$work" "$rounds" "$secs" "$sample" <<'PY'
import re, statistics, sys
work, rounds, secs, sample = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "1"

CATEGORIES = [
    ("tracepoint dispatch", re.compile(r"^(bpf_trace_run\d+|__bpf_trace_\w+|__traceiter_\w+|"
                                       r"syscall_exit_work|syscall_trace_enter\S*|trace_call_bpf|"
                                       r"perf_syscall_(enter|exit)|perf_call_bpf_\w+|"
                                       r"perf_trace_buf_\w+|bpf_prog_run_array\w*)$")),
    ("BPF programs", re.compile(r"^bpf_prog_")),
    ("BPF helpers, maps", re.compile(r"^(bpf_(?!lsm_)\w+|__bpf_\w+|_?_?htab_\w+|lookup_nulls_elem_raw|"
                                     r"lookup_elem_raw|\w*task_storage\w*|bpf_local_storage\w*|"
                                     r"copy_from_user_nofault|copy_from_kernel_nofault\w*|"
                                     r"ktime_get_mono_fast_ns|prog_array\w*)$")),
    ("irq-off skid", re.compile(r"^(finish_task_switch\S*|_raw_spin_unlock_irq\w*)$")),
]
IDLE = re.compile(r"^(pv_native_safe_halt|default_idle\w*|native_safe_halt|do_idle|cpu_idle_poll\S*|"
                  r"cpuidle_enter\w*|acpi_idle\w*|mwait_idle\w*|intel_idle\w*|poll_idle)$")
ORDER = [c for c, _ in CATEGORIES] + ["kernel, other", "postgres", "pgbench", "helper", "other user"]

def category(comm, sym):
    """the row a (comm, symbol) entry of perf report counts in"""
    kernel = sym.startswith("[k] ")
    name = sym[4:].strip() if sym[:4] in ("[k] ", "[.] ") else sym.strip()
    if comm == "pg-tracer":
        return "helper"
    if kernel:
        if IDLE.match(name):
            return None
        for cat, rx in CATEGORIES:
            if rx.match(name):
                return cat
        return "kernel, other"
    if comm in ("postgres", "pgbench"):
        return comm
    return "other user"

def load(state, r):
    """({category: µs of CPU per transaction}, TPS) of one run"""
    tag = "%s/%s.%d" % (work, state, r)
    txns = int(open(tag + ".txns").read().split()[0])
    ns = {c: 0 for c in ORDER}
    for line in open(tag + ".report"):
        f = line.rstrip("\n").split("|")
        if len(f) < 4:
            continue
        cat = category(f[1].strip(), f[3])
        if cat:
            ns[cat] += int(f[0])
            by_symbol.setdefault(state, {}).setdefault(f[3].strip(), 0)
            by_symbol[state][f[3].strip()] += int(f[0])
    all_txns[state] = all_txns.get(state, 0) + txns
    return {c: v / txns / 1000.0 for c, v in ns.items()}, txns / secs

by_symbol, all_txns = {}, {}		# every round's CPU ns by symbol, transactions

runs = {s: [load(s, r) for r in range(1, rounds + 1)] for s in ("off", "on")}
tps = {s: [run[1] for run in runs[s]] for s in runs}

def tps_line():
    print("TPS, on / off: %.3f (medians %.0f / %.0f; rounds %s)"
          % (statistics.median(tps["on"]) / statistics.median(tps["off"]),
             statistics.median(tps["on"]), statistics.median(tps["off"]),
             " ".join("%.3f" % (a / b) for a, b in zip(tps["on"], tps["off"]))))

def share(run, c):
    """category c's share of a run's busy CPU"""
    return run[0][c] / sum(run[0].values())

def categories():
    """the table of categories, busy CPU, and the direct share's ratio"""
    med = {s: {c: statistics.median(run[0][c] for run in runs[s]) for c in ORDER} for s in runs}
    shr = {s: {c: statistics.median(share(run, c) for run in runs[s]) for c in ORDER} for s in runs}
    busy = {s: [sum(run[0].values()) for run in runs[s]] for s in runs}
    print("\nCPU per transaction (µs) and share of the busy CPU (%%), medians of %d rounds; "
          "the sets' own categories first" % rounds)
    print("%-22s %9s %9s %9s   %7s %7s %7s" % ("category", "off", "on", "on - off", "off %", "on %", "diff"))
    for c in ORDER:
        print("%-22s %9.2f %9.2f %+9.2f   %7.2f %7.2f %+7.2f"
              % (c, med["off"][c], med["on"][c], med["on"][c] - med["off"][c],
                 100 * shr["off"][c], 100 * shr["on"][c], 100 * (shr["on"][c] - shr["off"][c])))
    b_off, b_on = statistics.median(busy["off"]), statistics.median(busy["on"])
    print("%-22s %9.2f %9.2f %+9.2f" % ("busy CPU", b_off, b_on, b_on - b_off))
    print("\nbusy CPU per transaction, off / on: %.3f (rounds %s)"
          % (b_off / b_on, " ".join("%.3f" % (a / b) for a, b in zip(busy["off"], busy["on"]))))
    tps_line()
    # User-mode time a transaction drifts between blocks on a shared VM by
    # more than the sets could cost it (+13, +6 and -18 % by round with
    # empty programs on the hooks: bench/RESULTS.md, 2026-12-06 late
    # night), so each round's own change is printed: rounds that disagree
    # in sign say a median difference is drift.
    for c in ("postgres", "pgbench"):
        print("%s user mode a transaction, on / off by round: %s"
              % (c, " ".join("%+.1f %%" % (100 * (a[0][c] / b[0][c] - 1)) if b[0][c] else "n/a"
                             for a, b in zip(runs["on"], runs["off"]))))
    # The direct categories' shares within a run do not depend on how fast
    # the host ran it.  If nothing else changed per transaction, the
    # on-runs' CPU per transaction is the off-runs' times
    # (1 - d_off) / (1 - d_on).  sched_switch's programs run with
    # interrupts off: their time is in the skid, not in this share.
    direct = [c for c, _ in CATEGORIES if c != "irq-off skid"]
    d_on = [sum(share(run, c) for c in direct) for run in runs["on"]]
    d_off = [sum(share(run, c) for c in direct) for run in runs["off"]]
    do, df = statistics.median(d_on), statistics.median(d_off)
    print("the sets' direct share (%s): %.2f %% of the busy CPU on, %.2f %% off (rounds on %s); "
          "alone it makes the ratio %.3f"
          % (", ".join(direct), 100 * do, 100 * df, " ".join("%.2f" % (100 * d) for d in d_on),
             (1 - do) / (1 - df)))

def symbols():
    """the symbols behind the differences: all rounds pooled, per transaction"""
    diff = {k: by_symbol["on"].get(k, 0) / all_txns["on"] - by_symbol["off"].get(k, 0) / all_txns["off"]
            for k in set(by_symbol["on"]) | set(by_symbol["off"])}
    print("\nthe 15 symbols whose CPU per transaction grew most, on - off (µs; all rounds pooled):")
    for k in sorted(diff, key=diff.get, reverse=True)[:15]:
        print("  %+6.2f  %s" % (diff[k] / 1000.0, k))

if sample:
    categories()
    symbols()
else:
    tps_line()
PY
