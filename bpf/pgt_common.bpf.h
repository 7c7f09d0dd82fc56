/*
 * bpf/pgt_common.bpf.h
 *	  What every probe set's BPF object includes: the foundation's pid
 *	  filter `tracked`, the query-id slots `pgt_qid`, the shared ring buffer
 *	  `pgt_events` with its loss count `pgt_event_drops`, the `pgt_stream`
 *	  switch, and inline helpers to use them.
 *
 * The helper creates each of these maps once and hands the same fd to every
 * object before it loads (pset_prepare_object() in helper/probe_set.c calls
 * bpf_map__reuse_fd() by map name), so all sets filter on the same
 * processes the daemon (or `pg-tracer trace`) tracks, and stream into one
 * ring buffer.  `tracked` is defined in pgt_tracked.bpf.h, which
 * bpf/pg_tracer.bpf.c (its owner) includes too.
 *
 * Include after vmlinux.h and the libbpf headers.
 */
#ifndef PGT_BPF_PGT_COMMON_BPF_H
#define PGT_BPF_PGT_COMMON_BPF_H

#include "pg_tracer.h"
#include "pgt_chain.bpf.h"
#include "pgt_trace.h"
#include "pgt_tracked.bpf.h"

struct
{
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PGT_BPF_MAX_TRACKED);
	__type(key, __u32);
	__type(value, struct pgt_qid_slot);
} pgt_qid SEC(".maps");

struct
{
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, PGT_EVENTS_RINGBUF_BYTES);
} pgt_events SEC(".maps");

/*
 * Stream records lost to a full `pgt_events` (shared like it; one count per
 * CPU, which the helper sums): `pg-tracer trace` reports them, so a gap in
 * a stream is never silent.
 */
struct
{
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} pgt_event_drops SEC(".maps");

/* Set by the helper before load: 1 when `pg-tracer trace` streams events. */
const volatile __u32 pgt_stream = 0;

/*
 * Set by the helper before load: 1 with `--query-id off`.  No program then
 * reads a query id from a backend's memory (a user-memory read at nearly
 * every event: the largest cost inside the kernel sets' programs) and every
 * row and event carries query id 0.  A constant, so the verifier drops the
 * reads.
 */
const volatile __u8 pgt_qid_off = 0;

/*
 * Set by the helper before load: 1 when this object's sys_enter, sys_exit
 * and sched_switch programs run as members of the foundation's hook chains
 * (bpf/pgt_chain.bpf.h), 0 when they are attached on their own.
 */
const volatile __u8 pgt_chained = 0;

/*
 * pgt_chain_next
 *		The end of a chain member at `slot`: hand the hook on to the slots
 *		after it.  A program attached on its own hands nothing on (the
 *		dispatcher runs the others).
 */
#define pgt_chain_next(ctx, chain, slot) \
	do { \
		if (pgt_chained) \
			pgt_chain_from(ctx, chain, (slot) + 1); \
	} while (0)

/*
 * pgt_tracked_pm
 *		The postmaster of a tracked tgid, 0 when the process is not tracked.
 */
static __always_inline __u32
pgt_tracked_pm(__u32 tgid)
{
	struct pgt_tracked *t = bpf_map_lookup_elem(&tracked, &tgid);

	return t ? t->postmaster : 0;
}

/*
 * pgt_read_qid
 *		Into *qid the st_query_id at queryid_addr, provided the slot's
 *		st_procpid (at procpid_addr) still holds nspid, the process's pid as
 *		PostgreSQL knows it (a slot is reused by the next backend).  0 when
 *		read (the id may be 0: between statements), -1 when not.  Two
 *		user-memory reads in the current task's address space.
 */
static __always_inline int
pgt_read_qid(__u64 procpid_addr, __u32 nspid, __u64 queryid_addr, __u64 *qid)
{
	__s32		procpid = 0;

	*qid = 0;
	if (bpf_probe_read_user(&procpid, sizeof(procpid), (void *) procpid_addr) != 0 ||
		(__u32) procpid != nspid)
		return -1;
	if (bpf_probe_read_user(qid, sizeof(*qid), (void *) queryid_addr) != 0)
	{
		*qid = 0;
		return -1;
	}
	return 0;
}

/*
 * bgw_type of a parallel query's or parallel utility command's worker,
 * "parallel worker" with its NUL, as two little-endian words.
 */
#define PGT_LE8(a, b, c, d, e, f, g, h) \
	((__u64) (a) | (__u64) (b) << 8 | (__u64) (c) << 16 | (__u64) (d) << 24 | \
	 (__u64) (e) << 32 | (__u64) (f) << 40 | (__u64) (g) << 48 | (__u64) (h) << 56)
#define PGT_PARALLEL_TYPE_0	PGT_LE8('p', 'a', 'r', 'a', 'l', 'l', 'e', 'l')
#define PGT_PARALLEL_TYPE_1	PGT_LE8(' ', 'w', 'o', 'r', 'k', 'e', 'r', 0)

/*
 * pgt_leader_slot
 *		When the current process, a new child of postmaster pm_tgid whose
 *		indirect slot is pm, is a parallel worker: point *n at its
 *		leader's PgBackendStatus (PGT_QID_LEADER), so that the worker's
 *		events carry the leader's query id.  The leader is its
 *		MyBgworkerEntry's bgw_notify_pid; it must be a tracked child of the
 *		same postmaster with a direct slot of its own for that pid (so a
 *		pid namespace, where the two pids differ, leaves the worker its own
 *		id).  Four user-memory reads, once per worker.
 */
static __always_inline void
pgt_leader_slot(const struct pgt_qid_slot *pm, __u32 pm_tgid, struct pgt_qid_slot *n)
{
	struct pgt_qid_slot *ls;
	struct pgt_tracked *lt;
	__u64		entry = 0;
	__u64		type[2] = {};
	__s32		leader = 0;
	__u32		key;

	if (!pm->bgw_addr ||
		bpf_probe_read_user(&entry, sizeof(entry), (void *) pm->bgw_addr) != 0 || !entry)
		return;
	if (bpf_probe_read_user(type, sizeof(type), (void *) (entry + pm->bgw_off_type)) != 0 ||
		type[0] != PGT_PARALLEL_TYPE_0 || type[1] != PGT_PARALLEL_TYPE_1)
		return;
	if (bpf_probe_read_user(&leader, sizeof(leader),
							(void *) (entry + pm->bgw_off_notify_pid)) != 0 || leader <= 0)
		return;
	key = (__u32) leader;
	lt = bpf_map_lookup_elem(&tracked, &key);
	if (!lt || lt->postmaster != pm_tgid)
		return;
	ls = bpf_map_lookup_elem(&pgt_qid, &key);
	if (!ls || (ls->flags & PGT_QID_INDIRECT) || ls->nspid != key)
		return;
	n->procpid_addr = ls->procpid_addr;
	n->queryid_addr = ls->queryid_addr;
	n->nspid = ls->nspid;
	n->flags = PGT_QID_LEADER;
}

/*
 * pgt_current_qid
 *		The query id the current process (a tracked backend, running in its
 *		own context) is executing: read from its PgBackendStatus in shared
 *		memory.  0 when unknown (no layout file, slot not mapped yet, slot
 *		reused, compute_query_id off, or between statements).
 */
static __always_inline __u64
pgt_current_qid(__u32 tgid)
{
	struct pgt_qid_slot *s = bpf_map_lookup_elem(&pgt_qid, &tgid);
	__s32		procpid = 0;
	__u64		qid = 0;

	if (pgt_qid_off)
		return 0;
	if (!s)
	{
		/* no slot yet: the postmaster's MyBEEntry slot, if any */
		struct pgt_tracked *t = bpf_map_lookup_elem(&tracked, &tgid);
		struct pgt_qid_slot *pm;
		struct pgt_qid_slot n = {};
		__u64		be = 0;

		if (!t)
			return 0;
		pm = bpf_map_lookup_elem(&pgt_qid, &t->postmaster);
		if (!pm || !(pm->flags & PGT_QID_INDIRECT) || t->postmaster == tgid)
			return 0;
		if (bpf_probe_read_user(&be, sizeof(be), (void *) pm->queryid_addr) != 0 || !be)
			return 0;
		n.procpid_addr = be + pm->nspid;
		n.queryid_addr = be + pm->procpid_addr;
		if (bpf_probe_read_user(&procpid, sizeof(procpid), (void *) n.procpid_addr) != 0 ||
			procpid <= 0)
			return 0;
		n.nspid = (__u32) procpid;
		pgt_leader_slot(pm, t->postmaster, &n);
		if (pgt_read_qid(n.procpid_addr, n.nspid, n.queryid_addr, &qid) != 0)
			return 0;
		n.last_qid = qid;
		bpf_map_update_elem(&pgt_qid, &tgid, &n, BPF_NOEXIST);
		return qid;
	}
	if (pgt_read_qid(s->procpid_addr, s->nspid, s->queryid_addr, &qid) != 0)
		return 0;
	return qid;
}

/*
 * pgt_cached_qid
 *		The query id last published in tgid's own context (pgt_task_qid:
 *		at its sends), for programs running in another task's context.
 */
static __always_inline __u64
pgt_cached_qid(__u32 tgid)
{
	struct pgt_qid_slot *s = bpf_map_lookup_elem(&pgt_qid, &tgid);

	return s ? s->last_qid : 0;
}

/*
 * pgt_log2
 *		Bucket of v in a PGT_HIST_SLOTS log2 histogram.
 */
static __always_inline __u32
pgt_log2(__u64 v)
{
	__u32		r = 0;

	if (v >= (1ULL << 32)) { v >>= 32; r += 32; }
	if (v >= (1ULL << 16)) { v >>= 16; r += 16; }
	if (v >= (1ULL << 8)) { v >>= 8; r += 8; }
	if (v >= (1ULL << 4)) { v >>= 4; r += 4; }
	if (v >= (1ULL << 2)) { v >>= 2; r += 2; }
	if (v >= (1ULL << 1)) { r += 1; }
	return r < PGT_HIST_SLOTS ? r : PGT_HIST_SLOTS - 1;
}

/*
 * pgt_event_reserve
 *		Reserve a record of `size` bytes in `pgt_events` and fill its header;
 *		NULL when no stream was asked for or the buffer is full (the record
 *		is lost, and counted in `pgt_event_drops`).
 */
static __always_inline void *
pgt_event_reserve(__u32 size, __u16 set, __u16 event, __u32 tgid, __u32 tid,
				  __u64 qid)
{
	struct pgt_event_hdr *h;

	if (!pgt_stream)
		return 0;
	h = bpf_ringbuf_reserve(&pgt_events, size, 0);
	if (!h)
	{
		__u32		zero = 0;
		__u64	   *lost = bpf_map_lookup_elem(&pgt_event_drops, &zero);

		if (lost)				/* an interrupt's program may count on this CPU too */
			__sync_fetch_and_add(lost, 1);
		return 0;
	}
	h->ts_ns = bpf_ktime_get_boot_ns();
	h->queryid = qid;
	h->pid = tgid;
	h->tid = tid;
	h->set = set;
	h->event = event;
	h->size = size;
	return h;
}

/*
 * pgt_exit_nr
 *		The system call number at sys_exit (from the saved registers), so
 *		exit programs skip the calls they do not time before any map
 *		lookup; -1 where the architecture is not known here.  regs is a
 *		tp_btf argument: a direct load, no helper call.
 */
static __always_inline long
pgt_exit_nr(struct pt_regs *regs)
{
#if defined(__TARGET_ARCH_x86)
	return (long) regs->orig_ax;
#elif defined(__TARGET_ARCH_arm64)
	return (long) regs->syscallno;
#else
	return -1;
#endif
}

#endif							/* PGT_BPF_PGT_COMMON_BPF_H */
