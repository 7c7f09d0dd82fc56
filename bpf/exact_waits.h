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
#define PGT_EXACT_SEEDS_MAX		4096	/* waits in progress when timing began */
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
 * `exact_seeds` (key: tid): a wait already in progress when exact timing
 * was switched on, written by the helper from the process's current
 * wait_event_info; the next system-call exit of that thread ends it.
 */
struct pgt_exact_seed
{
	__u64		start_ns;		/* bpf_ktime_get_ns() clock (CLOCK_MONOTONIC) */
	__u64		queryid;
	__u32		event;
	__u32		pid;			/* tgid */
};
_Static_assert(sizeof(struct pgt_exact_seed) == 24, "pgt_exact_seed size");

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
