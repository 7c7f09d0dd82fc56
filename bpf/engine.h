/*
 * bpf/engine.h
 *	  Types shared by the engine probes (bpf/engine_probes.bpf.c) and the
 *	  helper (helper/engine_probes.c): probe ids, map keys and values, the
 *	  configuration entry and the stream record.
 *
 * Both sides compile this file (see bpf/pg_tracer.h for the convention).
 * Every struct is fixed-width and size-guarded.
 */
#ifndef PGT_BPF_ENGINE_H
#define PGT_BPF_ENGINE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Engine probe ids: the `probe` of keys, histograms and records. */
#define ENG_QUERY			1	/* statement latency */
#define ENG_LOCK_WAIT		2	/* heavyweight lock wait */
#define ENG_LWLOCK_WAIT		3	/* LWLock wait, by tranche */
#define ENG_WAL_INSERT		4	/* WAL record inserted */
#define ENG_WAL_FLUSH		5	/* XLogFlush call */
#define ENG_BUFFER_READ		6	/* shared buffer read (hit or miss) */
#define ENG_BUFFER_FLUSH	7	/* dirty buffer written out */
#define ENG_CHECKPOINT		8	/* checkpoint start .. done */
#define ENG_XACT_COMMIT		9
#define ENG_XACT_ABORT		10
#define ENG_DEADLOCK		11
#define ENG_SORT			12
#define ENG_LOCK_HOLD		13	/* heavyweight lock held: grant .. release */
#define ENG_LWLOCK_HOLD		14	/* LWLock held: acquire .. release */
#define ENG_QUERY_ERROR		15	/* statement that ended in an error */
#define ENG_NPROBES			16	/* ids are 1 .. ENG_NPROBES - 1 */

/* Probe-set ids of the engine sets (pgt_event_hdr.set, range 16..31). */
#define PGT_SET_PG_QUERY		16
#define PGT_SET_PG_LOCKS		17
#define PGT_SET_PG_LWLOCK		18
#define PGT_SET_PG_WAL			19
#define PGT_SET_PG_BUFFER		20
#define PGT_SET_PG_CHECKPOINT	21
#define PGT_SET_PG_USDT			22
#define PGT_SET_PG_LOCK_HOLD	23
#define PGT_SET_PG_LWLOCK_HOLD	24

#define ENG_HIST_SLOTS		32	/* log2 buckets of microseconds */
#define ENG_NAME_LEN		24
#define ENG_TEXT_LEN		256	/* query text in stream records */
#define ENG_MAX_KEYS		16384
#define ENG_CKPT_ARGS		5
#define ENG_HELD_LOCKS		32	/* heavyweight locks tracked per backend */
#define ENG_HELD_LWLOCKS	16	/* LWLocks tracked per thread */

/* eng_key.detail of an lwlock-hold row named by tranche id (no USDT) */
#define ENG_LW_TRANCHE_ID	0x10000

/* engine_cfg.flags */
#define ENG_CFG_SLOW_STREAM	0x1	/* emit slow statements into the ring buffer */

/*
 * Value of the `engine_cfg` hash map, keyed by postmaster (host tgid): a
 * process counts only when its postmaster has an entry.  Addresses are
 * absolute in the traced processes (load bias + link-time address), the
 * same in all of a cluster's processes since they fork from the postmaster.
 */
struct eng_cfg
{
	__u32		postmaster;
	__u32		flags;			/* ENG_CFG_* */
	__u64		mybeentry_addr; /* &MyBEEntry: query ids before pgt_qid has a slot */
	__u32		query_id_off;	/* offsetof(PgBackendStatus, st_query_id) */
	__u32		nckpt;			/* checkpoint__done arguments we read */
	__u64		slow_ns;		/* statements slower than this are streamed */
	__u64		ckpt_addr[ENG_CKPT_ARGS];	/* checkpoint__done args (globals) */
	__u32		ckpt_size[ENG_CKPT_ARGS];
	__u32		pad;
	__u64		owner_addr;		/* &CurrentResourceOwner, 0: not exported */
	__u64		query_string_addr;	/* &debug_query_string: NULL in PostgresMain's
									 * error recovery, 0: not resolvable */
	__u64		ckpt_write_addr;	/* &CheckpointStats.ckpt_write_t (the function
									 * fallback: 0 when the checkpoint was skipped) */
};
_Static_assert(sizeof(struct eng_cfg) == 120, "struct eng_cfg size");

/* Key of the `eng_stats` hash map. */
struct eng_key
{
	__u32		pid;			/* tgid */
	__u32		pm;				/* its postmaster */
	__u16		probe;			/* ENG_* */
	__u16		mode;			/* lock mode, LWLock mode */
	__u32		detail;			/* lock tag type, checkpoint flags */
	__u32		obj[3];			/* lock tag fields 1..3 */
	__u32		pad;
	__u64		queryid;		/* st_query_id at the event, 0 unknown */
	char		name[ENG_NAME_LEN];	/* LWLock tranche */
};
_Static_assert(sizeof(struct eng_key) == 64, "struct eng_key size");

/* Value of `eng_stats`: only ever changed with atomic adds (max: racy max). */
struct eng_val
{
	__u64		calls;
	__u64		total_ns;
	__u64		max_ns;
	__u64		c[3];			/* probe-specific, see helper/engine_probes.c */
};
_Static_assert(sizeof(struct eng_val) == 48, "struct eng_val size");

/* Value of `eng_hist`, keyed by (postmaster << 32 | probe id). */
struct eng_hist
{
	__u64		slots[ENG_HIST_SLOTS];
};

/*
 * LockTagType values (storage/lock.h, PostgreSQL 13 and later) that the
 * lock counters keep the object of.  ENG_LOCK_OBJECT_BOUNDED: does a lock
 * of this type name an object of the database (relation, extend, frozen
 * ids, page, tuple, object), so that counters keyed by it stay few?  A
 * transaction's own lock (its xid, virtual xid or speculative token) names
 * a new object in every transaction, and advisory and user locks whatever
 * the application chooses: keyed by those, the counters would grow without
 * bound (a contended pgbench run filled the 4,096 rows of the segment in
 * seconds), so their rows keep type and mode only.  Lock waits and lock
 * holds both follow it, in the kernel and in `trace --stats`.
 */
#define ENG_LOCKTAG_TUPLE		4
#define ENG_LOCKTAG_OBJECT		8
#define ENG_LOCK_OBJECT_BOUNDED(type) \
	((type) <= ENG_LOCKTAG_TUPLE || (type) == ENG_LOCKTAG_OBJECT)

/* In-flight start of a timed probe (a slot of the thread's eng_task). */
struct eng_start
{
	__u64		ts;
	__u64		ptr;			/* query text, tranche name */
	__u32		a[5];
	__u32		pad;
};
_Static_assert(sizeof(struct eng_start) == 40, "struct eng_start size");

/*
 * A heavyweight lock this backend holds (pg-lock-hold), from the return of
 * LockAcquireExtended to the release that drops its last hold.  tag is the
 * LOCKTAG as PostgreSQL lays it out: field1..3 (u32), field4 (u16), type,
 * lock method (u8).
 */
struct eng_held_lock
{
	__u32		tag[4];			/* field1, field2, field3, field4|type<<16|method<<24 */
	__u16		mode;
	__u16		scount;			/* of count, the session's (they survive
								 * transaction end) */
	__u32		count;			/* acquisitions not yet released; 0: free slot */
	__u64		ts;				/* grant */
	__u64		queryid;		/* at the grant */
	__u64		owner;			/* CurrentResourceOwner at the grant */
};
_Static_assert(sizeof(struct eng_held_lock) == 48, "struct eng_held_lock size");

/* An LWLock this thread holds (pg-lwlock-hold). */
struct eng_held_lw
{
	__u64		name;			/* tranche name pointer, 0: free slot */
	__u64		ts;				/* acquired */
	__u32		mode;
	__u32		seq;			/* acquisition order: releases pair LIFO */
};
_Static_assert(sizeof(struct eng_held_lw) == 24, "struct eng_held_lw size");

/* Ring buffer record: a slow statement or a checkpoint. */
struct eng_event
{
	__u64		ts;				/* bpf_ktime_get_boot_ns() at the end */
	__u32		pid;
	__u32		pm;
	__u16		probe;
	__u16		flags;
	__u32		pad;
	__u64		queryid;
	__u64		dur_ns;
	__u64		c[3];
	char		text[ENG_TEXT_LEN];
};
_Static_assert(sizeof(struct eng_event) == 320, "struct eng_event size");

/*
 * `pg-tracer trace` stream record (pgt_events, after struct pgt_event_hdr
 * of bpf/pgt_trace.h; hdr.event is the ENG_* probe id).
 */
struct eng_trace_rec
{
	__u64		dur_ns;
	__u32		detail;
	__u32		mode;
	__u32		obj[3];
	__u32		pad;
	__u64		c[3];
	char		text[ENG_TEXT_LEN];	/* statement, tranche */
};
_Static_assert(sizeof(struct eng_trace_rec) == 312, "struct eng_trace_rec size");

#endif							/* PGT_BPF_ENGINE_H */
