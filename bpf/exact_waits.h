/*
 * bpf/exact_waits.h
 *	  Map keys and values of the exact wait-event set (bpf/exact_waits.bpf.c),
 *	  shared with the helper (helper/exact_waits.c).  Fixed-width and
 *	  size-guarded: the kernel/user ABI of the set's maps.
 */
#ifndef PGT_BPF_EXACT_WAITS_H
#define PGT_BPF_EXACT_WAITS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define PGT_EXACT_WAITS_MAX		16384	/* (pid, query id, event) aggregates */
#define PGT_EXACT_HISTS_MAX		1024	/* (postmaster, event) histograms */
#define PGT_EXACT_NSLOTS		26		/* = PGT_EXACT_HIST_SLOTS (pgt_segment.h) */

/* `exact_waits`: per (pid, query id, wait_event_info) */
struct pgt_exact_key
{
	__u32		pid;			/* tgid */
	__u32		event;			/* wait_event_info at system-call entry */
	__u64		queryid;
};
_Static_assert(sizeof(struct pgt_exact_key) == 16, "pgt_exact_key size");

struct pgt_exact_val
{
	__u64		count;
	__u64		total_ns;
	__u64		max_ns;
	__u32		pm;				/* postmaster of pid */
	__u32		pad;
};
_Static_assert(sizeof(struct pgt_exact_val) == 32, "pgt_exact_val size");

/* `exact_hists`: per (postmaster, wait_event_info) */
struct pgt_exact_hkey
{
	__u32		pm;
	__u32		event;
};
_Static_assert(sizeof(struct pgt_exact_hkey) == 8, "pgt_exact_hkey size");

struct pgt_exact_hval
{
	__u64		slots[PGT_EXACT_NSLOTS];	/* 0: < 1 us; i: [2^(i-1), 2^i) us */
};
_Static_assert(sizeof(struct pgt_exact_hval) == 208, "pgt_exact_hval size");

/*
 * `exact_starts` (task storage): the per-task state of the system-call
 * source.  The BPF side keeps in it the wait in progress (ts, qid, event,
 * gen) and a cache of what the enter program needs from the process's
 * `pgt_qid` slot; an untracked task caches "not tracked" for the current
 * exact_tick.  The helper writes it too, through a pidfd, once per window:
 * a wait already in progress when timing is switched on is seeded into the
 * task's own state (ts, qid, event, gen, pm), so the thread's next
 * system-call exit ends it like any other and nothing else pays for the
 * seed (see bpf/exact_waits.bpf.c).
 */
struct pgt_exact_start
{
	__u64		ts;				/* 0 = no wait in progress */
	__u64		qid;
	__u32		event;
	__u32		gen;			/* exact_gen when it started */
	__u64		wait_addr;		/* 0: not mapped (as of tick) */
	__u64		procpid_addr;
	__u64		queryid_addr;
	__u32		nspid;
	__u32		pm;
	__u32		tick;			/* exact_tick of a "not tracked" entry */
	__u32		off_event;		/* event set while preempted */
	__u32		qid_ok;			/* the slot's st_procpid matched once */
	__u32		off_gen;		/* exact_gen when off_ts was set */
	__u64		off_ts;			/* preempted since, 0 = not */
	__u64		off_qid;
	__u64		wait_ptr;		/* not mapped yet: &my_wait_event_info, 0 = none */
	__u64		off_arrivals;	/* sched_info.pcount when off_ts was set */
};
_Static_assert(sizeof(struct pgt_exact_start) == 104, "pgt_exact_start size");

/*
 * `exact_watch` (key: tgid): watchpoint source.  The value of the backend's
 * PGPROC.wait_event_info since `since_ns`, as the last breakpoint hit (or the
 * helper's seed, written before the breakpoint is enabled) left it.  The
 * perf_event program closes the interval at each write that changes it.
 */
struct pgt_exact_watch
{
	__u64		wait_addr;		/* &PGPROC.wait_event_info of the process */
	__u64		since_ns;		/* bpf_ktime_get_ns() clock */
	__u64		queryid;		/* query id when the event was set */
	__u64		hits;			/* breakpoint hits (BPF) */
	__u32		event;			/* current wait_event_info, 0 = none */
	__u32		gen;			/* exact_gen when seeded */
};
_Static_assert(sizeof(struct pgt_exact_watch) == 40, "pgt_exact_watch size");

#endif							/* PGT_BPF_EXACT_WAITS_H */
