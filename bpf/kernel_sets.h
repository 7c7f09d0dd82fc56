/*
 * bpf/kernel_sets.h
 *	  Map keys, values and event payloads of the kernel probe sets
 *	  (bpf/kernel_*.bpf.c), shared with the helper (helper/kernel_*.c).
 *	  Codes (layers, ops, file classes, metrics) are in common/pgt_kernel.h.
 *
 * Fixed-width, size-guarded: the kernel/user ABI of the sets' maps.
 */
#ifndef PGT_BPF_KERNEL_SETS_H
#define PGT_BPF_KERNEL_SETS_H

#include "pgt_trace.h"

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define PGT_KERNEL_NO_NAMES
#include "../common/pgt_kernel.h"
#undef PGT_KERNEL_NO_NAMES

/* Capacities of the aggregation maps (LRU: the least used entries go first) */
#define PGT_KIO_MAX			16384
#define PGT_KPROC_MAX		8192
#define PGT_KHIST_ENTRIES	4096

/* `kio`: one I/O aggregate per (pid, query, layer, op, file, device) */
struct pgt_kio_key
{
	__u32		pid;			/* tgid; 0 = kernel (writeback, other) */
	__u8		layer;			/* PGT_KLAYER_* */
	__u8		op;				/* PGT_KOP_* */
	__u8		file_class;		/* PGT_KFILE_* */
	__u8		pad;
	__u64		queryid;
	__u32		relfilenode;	/* data files: the file's number, else 0 */
	__u32		dev;			/* kernel dev_t (major << 20 | minor), 0 = n/a */
	__u32		dboid;			/* data files: their database, 0 = shared (global/) */
	__u32		pad2;
};
_Static_assert(sizeof(struct pgt_kio_key) == 32, "pgt_kio_key size");

struct pgt_kio_val
{
	__u64		calls;
	__u64		bytes;
	__u64		errors;
	__u64		total_ns;
	__u64		max_ns;
	__u32		pm;				/* postmaster of pid, 0 for the kernel */
	__u32		pad;
};
_Static_assert(sizeof(struct pgt_kio_val) == 48, "pgt_kio_val size");

/* `kproc`: per (pid, query) counters of sched, memory or network */
struct pgt_kproc_key
{
	__u32		pid;
	__u32		pad;
	__u64		queryid;
};
_Static_assert(sizeof(struct pgt_kproc_key) == 16, "pgt_kproc_key size");

struct pgt_kproc_val
{
	__u64		v[PGT_KPROC_NVALS];	/* PGT_KSCHED_* / PGT_KMEM_* / PGT_KNET_* */
	__u32		pm;
	__u32		pad;
};
_Static_assert(sizeof(struct pgt_kproc_val) == 104, "pgt_kproc_val size");

/* `khist`: log2 histograms in microseconds */
struct pgt_khist_key
{
	__u32		metric;			/* PGT_KHIST_* */
	__u32		pid;			/* 0 = kernel */
	__u32		dev;
	__u32		op;
};
_Static_assert(sizeof(struct pgt_khist_key) == 16, "pgt_khist_key size");

struct pgt_khist_val
{
	__u64		slots[32];
	__u32		pm;
	__u32		pad;
};
_Static_assert(sizeof(struct pgt_khist_val) == 264, "pgt_khist_val size");

/*
 * Whole rows (key then value), as the helper copies the maps and as a
 * task's accumulators (bpf/kernel_tacc.bpf.h) hold them.
 */
struct pgt_kio_row
{
	struct pgt_kio_key k;
	struct pgt_kio_val v;
};
_Static_assert(sizeof(struct pgt_kio_row) == 80, "pgt_kio_row size");

struct pgt_kproc_row
{
	struct pgt_kproc_key k;
	struct pgt_kproc_val v;
};
_Static_assert(sizeof(struct pgt_kproc_row) == 120, "pgt_kproc_row size");

struct pgt_khist_row
{
	struct pgt_khist_key k;
	struct pgt_khist_val v;
};
_Static_assert(sizeof(struct pgt_khist_row) == 280, "pgt_khist_row size");

/*
 * Task accumulators: the rows a tracked task keeps in its task storage
 * (bpf/kernel_tacc.bpf.h), read by the helper through the object's task
 * iterator as records of a pgt_tacc_rec header and one row.
 */
#define PGT_TACC_IO_ROWS	8
#define PGT_TACC_PROC_ROWS	8
#define PGT_TACC_HIST_ROWS	4

#define PGT_TACC_KIO		1	/* struct pgt_kio_row follows */
#define PGT_TACC_KPROC		2	/* struct pgt_kproc_row */
#define PGT_TACC_KHIST		3	/* struct pgt_khist_row */

struct pgt_tacc_rec
{
	__u32		kind;			/* PGT_TACC_K* */
	__u32		size;			/* bytes of the row that follows */
};
_Static_assert(sizeof(struct pgt_tacc_rec) == 8, "pgt_tacc_rec size");

/*
 * `tacc_folds` (one entry): rows moved between a task's accumulators and
 * the maps, counted when the move begins and when it is done.  A reader
 * whose copy of maps and accumulators saw begun == done before and the
 * same begun after read every row exactly once.
 */
struct pgt_tacc_folds
{
	__u64		begun;
	__u64		done;
};
_Static_assert(sizeof(struct pgt_tacc_folds) == 16, "pgt_tacc_folds size");

/* Event payloads (after struct pgt_event_hdr) */

/* syscall, vfs (kprobes), network: one completed call */
struct pgt_kev_call
{
	__u64		latency_ns;
	__s64		ret;
	__u32		fd;
	__u32		relfilenode;
	__u32		dev;
	__u32		dboid;			/* data files: their database, 0 = shared */
	__u8		op;
	__u8		file_class;
	__u16		pad;
	__u32		pad2;
};
_Static_assert(sizeof(struct pgt_kev_call) == 40, "pgt_kev_call size");

/* block: one completed request; vfs: one page-cache miss */
struct pgt_kev_io
{
	__u64		latency_ns;		/* block: issue -> completion */
	__u64		sector;			/* block: sector; page cache: file page index */
	__u64		ino;			/* page cache: inode */
	__u32		bytes;
	__u32		dev;
	__u8		op;
	__u8		pad[7];
};
_Static_assert(sizeof(struct pgt_kev_io) == 40, "pgt_kev_io size");

/* sched: back on CPU; memory: a fault or an oom_score_adj change */
struct pgt_kev_proc
{
	__u64		a;				/* sched: off-CPU ns; fault: address; oom: new adj */
	__u64		b;				/* sched: run-queue ns; fault: 1 when major so far */
	__u32		cpu;
	__u32		kind;			/* set-specific event kind */
};
_Static_assert(sizeof(struct pgt_kev_proc) == 24, "pgt_kev_proc size");

/* Whole ring-buffer records (header + payload) */
struct pgt_kev_call_rec
{
	struct pgt_event_hdr h;
	struct pgt_kev_call c;
};

struct pgt_kev_io_rec
{
	struct pgt_event_hdr h;
	struct pgt_kev_io c;
};

struct pgt_kev_proc_rec
{
	struct pgt_event_hdr h;
	struct pgt_kev_proc c;
};

/*
 * `kresume` (one entry per object): when the helper last attached the
 * object's hooks again after holding them (helper/kernel_hold.c); a start
 * noted before it is dropped at its end (bpf/kernel_common.bpf.h).
 */
struct pgt_kresume
{
	__u64		ns;				/* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	__u32		gen;			/* holds and resumes so far */
	__u32		pad;
};
_Static_assert(sizeof(struct pgt_kresume) == 16, "pgt_kresume size");

/* Event codes (pgt_event_hdr.event) */
#define PGT_KEV_CALL		1	/* pgt_kev_call */
#define PGT_KEV_BLOCK		2	/* pgt_kev_io */
#define PGT_KEV_CACHE_MISS	3	/* pgt_kev_io */
#define PGT_KEV_ONCPU		4	/* pgt_kev_proc */
#define PGT_KEV_FAULT		5	/* pgt_kev_proc, kind 0 user / 1 kernel */
#define PGT_KEV_OOM_ADJ		6	/* pgt_kev_proc */
#define PGT_KEV_RETRANSMIT	7	/* pgt_kev_proc: a = dport << 16 | sport */

#endif							/* PGT_BPF_KERNEL_SETS_H */
