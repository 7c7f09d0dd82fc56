/*
 * bpf/pgt_trace.h
 *	  Types every probe set shares between its BPF programs and the helper:
 *	  the header of each ring-buffer record, the probe-set ids, the
 *	  per-process query-id slot, and the log2 histogram size.
 *
 * Both sides compile this file (BPF after vmlinux.h, user space with
 * <linux/types.h>).  Structs are fixed-width and size-guarded: they are the
 * kernel/user ABI of the shared maps `pgt_qid` and `pgt_events`
 * (bpf/pgt_common.bpf.h).
 */
#ifndef PGT_BPF_PGT_TRACE_H
#define PGT_BPF_PGT_TRACE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/*
 * Probe-set ids (pgt_event_hdr.set).  Ranges by feature so that branches
 * developed side by side never collide:
 *	  1..15   kernel sets (issue 5)
 *	  16..31  engine sets (issue 6)
 *	  32..63  unassigned
 */
#define PGT_SET_SYSCALL		1
#define PGT_SET_VFS			2
#define PGT_SET_BLOCK		3
#define PGT_SET_SCHED		4
#define PGT_SET_MEMORY		5
#define PGT_SET_NETWORK		6
#define PGT_SET_EXACT		32	/* exact wait events (issue 4) */
#define PGT_SET_ID_MAX		64

/* Buckets of every in-kernel log2 histogram: bucket i counts [2^i, 2^(i+1)) */
#define PGT_HIST_SLOTS		32

/* Size of the shared ring buffer (`pgt_events`) when a stream is asked for. */
#define PGT_EVENTS_RINGBUF_BYTES	(4 * 1024 * 1024)

/*
 * Header of every record a BPF program submits to `pgt_events`; the
 * set-specific payload follows.  ts_ns is bpf_ktime_get_boot_ns().
 */
struct pgt_event_hdr
{
	__u64		ts_ns;
	__u64		queryid;		/* 0 = unknown (see pgt_common.bpf.h) */
	__u32		pid;			/* tgid */
	__u32		tid;
	__u16		set;			/* PGT_SET_* */
	__u16		event;			/* set-specific */
	__u32		size;			/* bytes of the whole record */
};
_Static_assert(sizeof(struct pgt_event_hdr) == 32, "pgt_event_hdr size");

/*
 * Value of `pgt_qid` (key: tgid, __u32): where the process's
 * PgBackendStatus lives in the cluster's shared memory.  The helper fills
 * it from the layout file and the postmaster's memory; a BPF program reads
 * st_procpid first and trusts st_query_id only when it equals nspid (a slot
 * reused by another backend reads as "unknown").  last_qid caches an id read
 * in the process's own context (at its sends: pgt_task_qid), for programs
 * that run elsewhere (retransmits).
 */
struct pgt_qid_slot
{
	__u64		procpid_addr;	/* &BackendStatusArray[i].st_procpid */
	__u64		queryid_addr;	/* &BackendStatusArray[i].st_query_id */
	__u32		nspid;			/* the pid PostgreSQL knows the process by */
	__u32		flags;			/* PGT_QID_* */
	__u64		last_qid;		/* written by BPF */
	__u64		wait_addr;		/* &PGPROC.wait_event_info of the process, 0 = unknown
								 * (indirect slot: &my_wait_event_info) */
	__u64		bgw_addr;		/* indirect slot: &MyBgworkerEntry, 0 = none */
	__u32		bgw_off_type;	/* indirect slot: offsetof(BackgroundWorker, bgw_type) */
	__u32		bgw_off_notify_pid; /* ... and of bgw_notify_pid */
};
_Static_assert(sizeof(struct pgt_qid_slot) == 56, "pgt_qid_slot size");

/*
 * pgt_qid_slot.flags: PGT_QID_INDIRECT marks a slot keyed by a POSTMASTER's
 * tgid that serves every tracked child without a slot of its own:
 * queryid_addr is the address of the `MyBEEntry` pointer variable (the same
 * in every child), procpid_addr holds offsetof(PgBackendStatus,
 * st_query_id) and nspid offsetof(PgBackendStatus, st_procpid).  The first
 * read in a child's context creates the child's own (direct) slot.  Its
 * wait_addr is the address of the `my_wait_event_info` pointer variable
 * (PostgreSQL 14 and later; 0 when not exported): through it the exact
 * set times a new backend's waits before the helper has mapped the
 * backend (a connection's first statement, a short-lived connection).
 */
#define PGT_QID_INDIRECT	0x1

/*
 * PGT_QID_LEADER marks the direct slot of a parallel worker that points at
 * its leader's PgBackendStatus (procpid_addr, queryid_addr and nspid are the
 * leader's; wait_addr stays the worker's own): the worker's events carry
 * the query id the leader runs, as its own rows in pg_stat_activity do not
 * for a parallel utility command (CREATE INDEX's workers report 0 in
 * PostgreSQL 15).  BPF makes it when it creates the worker's slot, through
 * the indirect slot's bgw_* fields (MyBgworkerEntry: bgw_type "parallel
 * worker", bgw_notify_pid the leader); the helper's refresh keeps it.
 */
#define PGT_QID_LEADER		0x2

#endif							/* PGT_BPF_PGT_TRACE_H */
