// SPDX-License-Identifier: GPL-2.0
/*
 * bpf/engine_probes.bpf.c
 *	  PostgreSQL engine probes: statements, heavyweight lock and LWLock
 *	  waits, WAL inserts and flushes, buffer reads and flushes, checkpoints,
 *	  transaction/deadlock/sort counts.
 *
 * Each probe point has a USDT program (SEC("usdt"), arguments through
 * libbpf's USDT spec) and, where the engine exports a function that marks
 * the same point, a uprobe program; helper/engine_probes.c attaches the
 * one the binary supports.  Everything is aggregated here: counters by
 * (pid, probe, query id, lock/tranche), log2 histograms by probe; only slow
 * statements and checkpoints go to the ring buffer.
 *
 * Only processes of a configured postmaster count: `tracked` (the shared
 * pid filter, bpf/pgt_common.bpf.h) maps a tgid to its postmaster, and
 * `engine_cfg` holds an entry per postmaster whose executable the helper
 * attached to.  Query ids come from the shared `pgt_qid` slots.  Timed
 * probes keep their start in task-local storage (`eng_task`, one slot per
 * probe), which also caches the thread's postmaster: a hit costs no hash
 * update or delete, and processes of clusters nobody serves (the uprobes
 * are on the executable) are turned away after one lookup a second.  `pg-tracer trace` streams records through
 * the shared `pgt_events`; the daemon keeps only slow statements and
 * checkpoints, in this object's own `eng_events`.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

#include "pgt_common.bpf.h"
#include "engine.h"

char LICENSE[] SEC("license") = "GPL";

struct
{
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PGT_BPF_MAX_POSTMASTERS);
	__type(key, __u32);
	__type(value, struct eng_cfg);
} engine_cfg SEC(".maps");

struct
{
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ENG_MAX_KEYS);
	__type(key, struct eng_key);
	__type(value, struct eng_val);
} eng_stats SEC(".maps");

struct
{
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PGT_BPF_MAX_POSTMASTERS * ENG_NPROBES);
	__type(key, __u64);
	__type(value, struct eng_hist);
} eng_hist SEC(".maps");

/*
 * LockAcquireExtended nests: a relation AccessExclusiveLock first assigns
 * the transaction id (LogAccessExclusiveLockPrepare), which takes the
 * transactionid lock.
 */
#define ENG_ACQ_DEPTH	4

/* Per-thread state: timers of the probes in flight, the postmaster cache. */
struct eng_task
{
	struct eng_start s[ENG_NPROBES];
	struct eng_held_lock locks[ENG_HELD_LOCKS];	/* pg-lock-hold */
	struct eng_start acq[ENG_ACQ_DEPTH];	/* LockAcquireExtended calls in flight */
	struct eng_held_lw lw[ENG_HELD_LWLOCKS];	/* pg-lwlock-hold */
	__u32		pm;				/* postmaster, 0: not a served process */
	__u32		lw_seq;			/* LWLock acquisitions so far */
	__u32		acq_depth;		/* entries of acq[] in use */
	__u32		pad2;
	__u64		recheck_ns;		/* when to look `tracked` up again */
};

struct
{
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct eng_task);
} eng_task SEC(".maps");

struct
{
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} eng_events SEC(".maps");

/* Events the stats map had no room for (user space reports it). */
__u64		eng_dropped = 0;
/* slow statements and checkpoints that found the daemon's ring buffer full */
__u64		eng_stream_lost = 0;

/* Locks / LWLocks held beyond the per-thread slots: not timed. */
__u64		eng_hold_overflow = 0;

static __always_inline struct eng_task *
task_state(void)
{
	return bpf_task_storage_get(&eng_task, bpf_get_current_task_btf(), 0,
								BPF_LOCAL_STORAGE_GET_F_CREATE);
}

/*
 * served
 *		The configuration of the current process's postmaster when it is
 *		tracked and configured, else NULL; *tp the thread's state.  Whether
 *		it is tracked is cached for a second.
 */
static __always_inline struct eng_cfg *
served(struct eng_task **tp)
{
	struct eng_task *t = task_state();
	__u64		now;
	__u32		pm;

	*tp = t;
	if (!t)
		return NULL;
	now = bpf_ktime_get_ns();
	if (now >= t->recheck_ns)
	{
		/*
		 * Once a second, both ways: a process may enter the filter, and
		 * `pg-tracer trace --pid` lets go of the other backends, which
		 * entered it at fork (a cached "tracked" had them counted in the
		 * set's histograms for the rest of their lives).
		 */
		t->pm = pgt_tracked_pm(bpf_get_current_pid_tgid() >> 32);
		t->recheck_ns = now + 1000000000ULL;
	}
	pm = t->pm;
	if (!pm)
		return NULL;
	return bpf_map_lookup_elem(&engine_cfg, &pm);
}

/*
 * cfg_for_current
 *		served() without the thread's state.
 */
static __always_inline struct eng_cfg *
cfg_for_current(void)
{
	struct eng_task *t;

	return served(&t);
}

/*
 * log2_slot
 *		Histogram slot of a duration: 0 for < 1 us, i for [2^(i-1), 2^i) us.
 */
static __always_inline __u32
log2_slot(__u64 ns)
{
	__u64		us = ns / 1000;
	__u32		s = 0;

	while (us && s < ENG_HIST_SLOTS - 1)
	{
		us >>= 1;
		s++;
	}
	return s;
}

/*
 * hist_add
 *		Count a duration in the probe's histogram.
 */
static __always_inline void
hist_add(const struct eng_cfg *cfg, __u32 probe, __u64 ns)
{
	__u64		k = ((__u64) cfg->postmaster << 32) | probe;
	struct eng_hist *h = bpf_map_lookup_elem(&eng_hist, &k);
	__u32		s = log2_slot(ns);

	if (!h)
	{
		struct eng_hist zero = {};

		bpf_map_update_elem(&eng_hist, &k, &zero, BPF_NOEXIST);
		h = bpf_map_lookup_elem(&eng_hist, &k);
	}
	if (h && s < ENG_HIST_SLOTS)
		__sync_fetch_and_add(&h->slots[s], 1);
}

/*
 * stats_add
 *		Add one call (duration ns, counters c0..c2) under key.
 */
static __always_inline void
stats_add(struct eng_key *key, __u64 ns, __u64 c0, __u64 c1, __u64 c2)
{
	struct eng_val *v = bpf_map_lookup_elem(&eng_stats, key);

	if (!v)
	{
		struct eng_val zero = {};

		if (bpf_map_update_elem(&eng_stats, key, &zero, BPF_NOEXIST) &&
			!bpf_map_lookup_elem(&eng_stats, key))
		{
			__sync_fetch_and_add(&eng_dropped, 1);
			return;
		}
		v = bpf_map_lookup_elem(&eng_stats, key);
		if (!v)
			return;
	}
	__sync_fetch_and_add(&v->calls, 1);
	__sync_fetch_and_add(&v->total_ns, ns);
	if (ns > v->max_ns)
		v->max_ns = ns;
	if (c0)
		__sync_fetch_and_add(&v->c[0], c0);
	if (c1)
		__sync_fetch_and_add(&v->c[1], c1);
	if (c2)
		__sync_fetch_and_add(&v->c[2], c2);
}

/*
 * timer_slot
 *		This thread's slot of probe (NULL when it has no state).
 */
static __always_inline struct eng_start *
timer_slot(__u32 probe)
{
	struct eng_task *t = bpf_task_storage_get(&eng_task, bpf_get_current_task_btf(), 0, 0);

	if (!t || probe >= ENG_NPROBES)
		return NULL;
	return &t->s[probe];
}

/*
 * start_timer
 *		Remember when probe started on this thread (and a pointer, args).
 *		Called after cfg_for_current(), which created the thread's state.
 */
static __always_inline void
start_timer(__u32 probe, __u64 ptr, __u32 a0, __u32 a1, __u32 a2, __u32 a3, __u32 a4)
{
	struct eng_start *s = timer_slot(probe);

	if (!s)
		return;
	s->ts = bpf_ktime_get_ns();
	s->ptr = ptr;
	s->a[0] = a0;
	s->a[1] = a1;
	s->a[2] = a2;
	s->a[3] = a3;
	s->a[4] = a4;
}

/*
 * stop_timer
 *		Take the start of probe on this thread into *out and forget it.
 *		Returns the elapsed ns, or 0 when no start was seen (attached
 *		mid-wait).
 */
static __always_inline __u64
stop_timer(__u32 probe, struct eng_start *out)
{
	struct eng_start *s = timer_slot(probe);
	__u64		now = bpf_ktime_get_ns();

	if (!s || !s->ts)
		return 0;
	*out = *s;
	s->ts = 0;
	return now > out->ts ? now - out->ts : 1;
}

/*
 * current_qid
 *		The backend's query id: from its shared `pgt_qid` slot when the
 *		helper mapped one, else (a backend younger than the helper's last
 *		refresh) through the exported MyBEEntry pointer.
 */
static __always_inline __u64
current_qid(const struct eng_cfg *cfg, __u32 tgid)
{
	__u64		be = 0;
	__u64		qid = 0;

	if (pgt_qid_off)
		return 0;
	if (bpf_map_lookup_elem(&pgt_qid, &tgid))
		return pgt_current_qid(tgid);
	if (!cfg->mybeentry_addr || !cfg->query_id_off)
		return 0;
	if (bpf_probe_read_user(&be, sizeof(be), (void *) cfg->mybeentry_addr) || !be)
		return 0;
	bpf_probe_read_user(&qid, sizeof(qid), (void *) (be + cfg->query_id_off));
	return qid;
}

static __always_inline void
key_init(struct eng_key *k, __u32 probe, const struct eng_cfg *cfg)
{
	k->pid = bpf_get_current_pid_tgid() >> 32;
	k->pm = cfg->postmaster;
	k->probe = probe;
	k->queryid = current_qid(cfg, k->pid);
}

/*
 * trace_emit
 *		`pg-tracer trace` record of one event (nothing unless streaming).
 *		text: a user pointer to a string (statement, tranche), or 0.
 */
static __always_inline void
trace_emit(__u16 set, const struct eng_key *k, __u64 ns, __u64 c0, __u64 c1,
		   __u64 c2, __u64 text)
{
	struct
	{
		struct pgt_event_hdr h;
		struct eng_trace_rec r;
	}		   *e;

	e = pgt_event_reserve(sizeof(*e), set, k->probe, k->pid,
						  (__u32) bpf_get_current_pid_tgid(), k->queryid);
	if (!e)
		return;
	e->r.dur_ns = ns;
	e->r.detail = k->detail;
	e->r.mode = k->mode;
	e->r.obj[0] = k->obj[0];
	e->r.obj[1] = k->obj[1];
	e->r.obj[2] = k->obj[2];
	e->r.pad = 0;
	e->r.c[0] = c0;
	e->r.c[1] = c1;
	e->r.c[2] = c2;
	e->r.text[0] = '\0';
	if (text)
		bpf_probe_read_user_str(e->r.text, sizeof(e->r.text), (void *) text);
	bpf_ringbuf_submit(e, 0);
}

/*
 * timed_stop
 *		End probe's timer on this thread: the elapsed ns (0 when no start
 *		was seen), with *k keyed to the current backend and query id and *s
 *		the start.
 */
static __always_inline __u64
timed_stop(const struct eng_cfg *cfg, __u32 probe, struct eng_key *k, struct eng_start *s)
{
	__u64		ns = stop_timer(probe, s);

	if (ns)
		key_init(k, probe, cfg);
	return ns;
}

/*
 * timed_record
 *		One timed event: counters, the probe's histogram, the trace stream.
 */
static __always_inline void
timed_record(const struct eng_cfg *cfg, __u16 set, struct eng_key *k, __u64 ns,
			 __u64 c0, __u64 c1, __u64 c2, __u64 text)
{
	stats_add(k, ns, c0, c1, c2);
	hist_add(cfg, k->probe, ns);
	trace_emit(set, k, ns, c0, c1, c2, text);
}

/*
 * stream_record
 *		The daemon's record of a slow statement or a checkpoint
 *		(`eng_events`; `pg-tracer trace` has trace_emit's instead).
 */
static __always_inline void
stream_record(const struct eng_key *k, __u16 flags, __u64 ns, __u64 c0, __u64 c1,
			  __u64 c2, __u64 text)
{
	struct eng_event *e;

	if (pgt_stream)
		return;
	e = bpf_ringbuf_reserve(&eng_events, sizeof(*e), 0);
	if (!e)
	{
		__sync_fetch_and_add(&eng_stream_lost, 1);
		return;
	}
	e->ts = bpf_ktime_get_boot_ns();
	e->pid = k->pid;
	e->pm = k->pm;
	e->pad = 0;
	e->probe = k->probe;
	e->flags = flags;
	e->queryid = k->queryid;
	e->dur_ns = ns;
	e->c[0] = c0;
	e->c[1] = c1;
	e->c[2] = c2;
	e->text[0] = '\0';
	if (text)
		bpf_probe_read_user_str(e->text, sizeof(e->text), (void *) text);
	bpf_ringbuf_submit(e, 0);
}

/*
 * plain_start, plain_done
 *		A timed probe with nothing but its duration: start, and end it into
 *		the counters, histogram and trace stream of set.
 */
static __always_inline int
plain_start(__u32 probe)
{
	if (cfg_for_current())
		start_timer(probe, 0, 0, 0, 0, 0, 0);
	return 0;
}

static __always_inline int
plain_done(__u32 probe, __u16 set)
{
	struct eng_cfg *cfg = cfg_for_current();
	struct eng_key k = {};
	struct eng_start s;
	__u64		ns;

	if (cfg && (ns = timed_stop(cfg, probe, &k, &s)))
		timed_record(cfg, set, &k, ns, 0, 0, 0, 0);
	return 0;
}

/* ------------------------------------------------------------ pg-query */

static __always_inline int
query_start(__u64 text)
{
	if (!cfg_for_current())
		return 0;
	start_timer(ENG_QUERY, text, 0, 0, 0, 0, 0);
	return 0;
}

static __always_inline int
query_done(void)
{
	struct eng_cfg *cfg = cfg_for_current();
	struct eng_key k = {};
	struct eng_start s;
	__u64		ns;

	if (!cfg || !(ns = timed_stop(cfg, ENG_QUERY, &k, &s)))
		return 0;
	timed_record(cfg, PGT_SET_PG_QUERY, &k, ns, 0, 0, 0, s.ptr);
	if ((cfg->flags & ENG_CFG_SLOW_STREAM) && ns >= cfg->slow_ns)
		stream_record(&k, 0, ns, 0, 0, 0, s.ptr);
	return 0;
}

/*
 * The extended protocol (Parse, Bind, Execute: drivers that send
 * parameters, pgbench -M extended or prepared) never runs query__start:
 * its statements are timed from PortalRun, whose query__execute__start and
 * __done notes mark every portal run.  A portal run inside a statement
 * already timed (exec_simple_query's own portal, an EXECUTE or FETCH, a
 * nested portal) only counts its depth in the statement's slot (a[1]), so
 * that the outermost one ends the statement.  Which run is the outermost
 * is told by the stack pointer, kept at its start (a[2], a[3]): a nested
 * run's frame is deeper.  A nested run whose error a PL/pgSQL EXCEPTION
 * block catches never reaches its done, and a count alone would then keep
 * every later statement of the backend nested.  Its text is
 * debug_query_string, which exec_execute_message points at the
 * statement's source text before it runs the portal.  What is timed is
 * one Execute message: planning at Bind is not in it, and a portal
 * suspended by a row limit is one statement per Execute.
 */
#define ENG_QUERY_BY_PORTAL	1	/* eng_start.a[0]: a portal started it */
/* a nested run's frame is deeper than its outer one's by more than this */
#define ENG_PORTAL_NEST_BYTES	512

/*
 * portal_nested
 *		Is a portal run at stack pointer sp nested in the one that started
 *		the statement timed in s?
 */
static __always_inline int
portal_nested(const struct eng_start *s, __u64 sp)
{
	__u64		outer = ((__u64) s->a[3] << 32) | s->a[2];

	return sp + ENG_PORTAL_NEST_BYTES < outer;
}

static __always_inline int
portal_start(__u64 sp)
{
	struct eng_cfg *cfg = cfg_for_current();
	struct eng_start *s;
	__u64		text = 0;

	/*
	 * Only where debug_query_string is known: AbortCurrentTransaction's
	 * probe needs it to end a statement that fails, and a failed Execute's
	 * timer left running would hold off every later one of the backend.
	 */
	if (!cfg || !cfg->query_string_addr || !(s = timer_slot(ENG_QUERY)))
		return 0;
	if (s->ts && (s->a[0] != ENG_QUERY_BY_PORTAL || portal_nested(s, sp)))
	{
		if (s->a[0] == ENG_QUERY_BY_PORTAL)
			s->a[1]++;
		return 0;
	}
	/* none timed, or one whose outermost run is gone: a new statement */
	bpf_probe_read_user(&text, sizeof(text), (void *) cfg->query_string_addr);
	start_timer(ENG_QUERY, text, ENG_QUERY_BY_PORTAL, 0, (__u32) sp, (__u32) (sp >> 32), 0);
	return 0;
}

static __always_inline int
portal_done(__u64 sp)
{
	struct eng_start *s;

	if (!cfg_for_current() || !(s = timer_slot(ENG_QUERY)) || !s->ts ||
		s->a[0] != ENG_QUERY_BY_PORTAL)
		return 0;
	if (portal_nested(s, sp))
	{
		if (s->a[1] > 0)
			s->a[1]--;
		return 0;
	}
	return query_done();		/* the outermost run's end, whatever the count */
}

/*
 * A statement that ends in an error never reaches query__done: the error
 * unwinds to PostgresMain, which sets debug_query_string to NULL and calls
 * AbortCurrentTransaction() (no USDT marks it).  That function also runs
 * inside statements that go on (a procedure's ROLLBACK through SPI, logical
 * decoding), with debug_query_string set: those are left alone.  A
 * statement still timed in the error recovery is counted as
 * ENG_QUERY_ERROR, its time up to the abort, and is a slow statement like
 * any other; its text is still valid (MessageContext is reset after the
 * abort).  An error that a savepoint or an EXCEPTION block catches aborts a
 * subtransaction only: the statement goes on, and its timer with it.
 */
static __always_inline int
query_failed(void)
{
	struct eng_cfg *cfg = cfg_for_current();
	struct eng_key k = {};
	struct eng_start s;
	__u64		query_string = 1;
	__u64		ns;

	if (!cfg || !cfg->query_string_addr ||
		bpf_probe_read_user(&query_string, sizeof(query_string),
							(void *) cfg->query_string_addr) || query_string)
		return 0;
	if (!(ns = timed_stop(cfg, ENG_QUERY, &k, &s)))
		return 0;
	k.probe = ENG_QUERY_ERROR;
	timed_record(cfg, PGT_SET_PG_QUERY, &k, ns, 0, 0, 0, s.ptr);
	if ((cfg->flags & ENG_CFG_SLOW_STREAM) && ns >= cfg->slow_ns)
		stream_record(&k, 0, ns, 0, 0, 0, s.ptr);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(eng_query_abort_uprobe)
{
	return query_failed();
}

SEC("usdt")
int BPF_USDT(eng_query_start_usdt, __u64 text)
{
	return query_start(text);
}

SEC("usdt")
int BPF_USDT(eng_query_done_usdt, __u64 text)
{
	return query_done();
}

SEC("usdt")
int BPF_USDT(eng_portal_start_usdt)
{
	return portal_start(PT_REGS_SP(ctx));
}

SEC("usdt")
int BPF_USDT(eng_portal_done_usdt)
{
	return portal_done(PT_REGS_SP(ctx));
}

/* fallback: exec_simple_query(const char *query_string), debug symbols only */
SEC("uprobe")
int BPF_KPROBE(eng_query_start_uprobe, __u64 text)
{
	return query_start(text);
}

SEC("uretprobe")
int BPF_KRETPROBE(eng_query_done_uprobe)
{
	return query_done();
}

/* fallback: PortalRun (exported), with exec_simple_query's */
SEC("uprobe")
int BPF_KPROBE(eng_portal_start_uprobe)
{
	return portal_start(PT_REGS_SP(ctx));
}

SEC("uretprobe")
int BPF_KRETPROBE(eng_portal_done_uprobe)
{
	return portal_done(PT_REGS_SP(ctx));
}

/* ------------------------------------------------------------ pg-locks */

/* see ENG_LOCK_OBJECT_BOUNDED (bpf/engine.h) */
static __always_inline int
lock_object_bounded(__u32 type)
{
	return ENG_LOCK_OBJECT_BOUNDED(type);
}

SEC("usdt")
int BPF_USDT(eng_lock_wait_start_usdt, __u32 f1, __u32 f2, __u32 f3, __u16 f4,
			 __u8 type, int mode)
{
	if (!cfg_for_current())
		return 0;
	start_timer(ENG_LOCK_WAIT, 0, f1, f2, f3, type, (__u32) mode);
	return 0;
}

static __always_inline int
lock_wait_done(void)
{
	struct eng_cfg *cfg = cfg_for_current();
	struct eng_key k = {};
	struct eng_start s;
	__u64		ns;

	if (!cfg || !(ns = timed_stop(cfg, ENG_LOCK_WAIT, &k, &s)))
		return 0;
	k.obj[0] = s.a[0];
	k.obj[1] = s.a[1];
	k.obj[2] = s.a[2];
	k.detail = s.a[3];
	k.mode = (__u16) s.a[4];
	/* the stream names the object; the counters only a lasting one */
	trace_emit(PGT_SET_PG_LOCKS, &k, ns, 0, 0, 0, 0);
	if (!lock_object_bounded(k.detail))
		k.obj[0] = k.obj[1] = k.obj[2] = 0;
	stats_add(&k, ns, 0, 0, 0);
	hist_add(cfg, k.probe, ns);
	return 0;
}

SEC("usdt")
int BPF_USDT(eng_lock_wait_done_usdt)
{
	return lock_wait_done();
}

/*
 * A wait that ends in an error (lock_timeout, statement_timeout, a cancel,
 * a termination) never reaches lock__wait__done (nor ProcSleep's return).
 * It ends where the error is caught, which no USDT marks: PostgresMain's
 * AbortCurrentTransaction(), an EXCEPTION block's
 * RollbackAndReleaseCurrentSubTransaction(), or, for a backend that dies,
 * AbortOutOfAnyTransaction() at exit.  A wait still timed there ended by
 * the error, and is counted up to then; elsewhere (a procedure's ROLLBACK,
 * a session's end) no wait is timed and nothing happens.  Not
 * LockErrorCleanup(), which every commit calls (ProcReleaseLocks).
 */
SEC("uprobe")
int BPF_KPROBE(eng_lock_wait_abort_uprobe)
{
	return lock_wait_done();
}

/*
 * fallback: ProcSleep(LOCALLOCK *locallock, ...), which WaitOnLock calls
 * where lock__wait__start/done surround it.  A LOCALLOCK starts with its
 * LOCALLOCKTAG: the LOCKTAG (field1..3, field4, type, method), the mode.
 */
SEC("uprobe")
int BPF_KPROBE(eng_lock_wait_start_uprobe, const void *locallock)
{
	__u32		tag[5];

	if (!cfg_for_current() || bpf_probe_read_user(tag, sizeof(tag), locallock))
		return 0;
	start_timer(ENG_LOCK_WAIT, 0, tag[0], tag[1], tag[2], (tag[3] >> 16) & 0xff, tag[4]);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(eng_lock_wait_done_uprobe)
{
	return lock_wait_done();
}

SEC("usdt")
int BPF_USDT(eng_lwlock_wait_start_usdt, __u64 tranche, int mode)
{
	if (!cfg_for_current())
		return 0;
	start_timer(ENG_LWLOCK_WAIT, tranche, (__u32) mode, 0, 0, 0, 0);
	return 0;
}

SEC("usdt")
int BPF_USDT(eng_lwlock_wait_done_usdt)
{
	struct eng_cfg *cfg = cfg_for_current();
	struct eng_key k = {};
	struct eng_start s;
	__u64		ns;

	if (!cfg || !(ns = timed_stop(cfg, ENG_LWLOCK_WAIT, &k, &s)))
		return 0;
	k.mode = (__u16) s.a[0];
	/* a name on a page this process never touched: user space reads it */
	if (s.ptr && bpf_probe_read_user_str(k.name, sizeof(k.name), (void *) s.ptr) <= 0)
	{
		k.obj[0] = (__u32) s.ptr;
		k.obj[1] = (__u32) (s.ptr >> 32);
	}
	timed_record(cfg, PGT_SET_PG_LWLOCK, &k, ns, 0, 0, 0, s.ptr);
	return 0;
}

/* ------------------------------------------------------------ pg-wal */

static __always_inline int
wal_insert(__u32 rmid)
{
	struct eng_cfg *cfg = cfg_for_current();
	struct eng_key k = {};

	if (!cfg)
		return 0;
	key_init(&k, ENG_WAL_INSERT, cfg);
	stats_add(&k, 0, 0, 0, 0);
	return 0;
}

SEC("usdt")
int BPF_USDT(eng_wal_insert_usdt, __u8 rmid, __u8 info)
{
	return wal_insert(rmid);
}

/* fallback: XLogInsert(RmgrId rmid, uint8 info) */
SEC("uprobe")
int BPF_KPROBE(eng_wal_insert_uprobe, __u8 rmid)
{
	return wal_insert(rmid);
}

/* XLogFlush(XLogRecPtr record): no USDT marks it; exported, so a uprobe */
SEC("uprobe")
int BPF_KPROBE(eng_wal_flush_uprobe)
{
	return plain_start(ENG_WAL_FLUSH);
}

SEC("uretprobe")
int BPF_KRETPROBE(eng_wal_flush_uretprobe)
{
	return plain_done(ENG_WAL_FLUSH, PGT_SET_PG_WAL);
}

/* ------------------------------------------------------------ pg-buffer */

SEC("usdt")
int BPF_USDT(eng_buffer_read_start_usdt)
{
	return plain_start(ENG_BUFFER_READ);
}

/*
 * buffer__read__done(fork, block, spc, db, rel, backend, isExtend, found)
 * through PostgreSQL 15; 16 dropped isExtend: `found` is the last argument
 * either way.  c[0] hits, c[1] misses, c[2] ns spent in misses.
 */
SEC("usdt")
int BPF_USDT(eng_buffer_read_done_usdt, int fork, __u32 block, __u32 spc,
			 __u32 db, __u32 rel)
{
	struct eng_cfg *cfg = cfg_for_current();
	struct eng_key k = {};
	struct eng_start s;
	__u64		ns;
	long		found = 0;
	int			nargs;

	if (!cfg)
		return 0;
	nargs = bpf_usdt_arg_cnt(ctx);
	if (nargs < 7 || bpf_usdt_arg(ctx, (__u64) (nargs - 1), &found) != 0)
		return 0;
	found &= 0xff;				/* a bool */
	ns = stop_timer(ENG_BUFFER_READ, &s);
	key_init(&k, ENG_BUFFER_READ, cfg);
	if (found)
		stats_add(&k, ns, 1, 0, 0);
	else
	{
		/* misses only in the stream: hits are too many to print */
		stats_add(&k, ns, 0, 1, ns);
		hist_add(cfg, ENG_BUFFER_READ, ns);
		k.obj[0] = db;
		k.obj[1] = rel;
		k.obj[2] = block;
		trace_emit(PGT_SET_PG_BUFFER, &k, ns, 0, 1, 0, 0);
	}
	return 0;
}

/* fallback: ReadBufferExtended entry/return: reads and time, no hit/miss */
SEC("uprobe")
int BPF_KPROBE(eng_buffer_read_start_uprobe)
{
	return plain_start(ENG_BUFFER_READ);
}

SEC("uretprobe")
int BPF_KRETPROBE(eng_buffer_read_done_uprobe)
{
	struct eng_cfg *cfg = cfg_for_current();
	struct eng_key k = {};
	struct eng_start s;
	__u64		ns;

	if (!cfg)
		return 0;
	ns = stop_timer(ENG_BUFFER_READ, &s);
	key_init(&k, ENG_BUFFER_READ, cfg);
	stats_add(&k, ns, 0, 0, 0);
	hist_add(cfg, ENG_BUFFER_READ, ns);
	return 0;
}

SEC("usdt")
int BPF_USDT(eng_buffer_flush_start_usdt)
{
	return plain_start(ENG_BUFFER_FLUSH);
}

SEC("usdt")
int BPF_USDT(eng_buffer_flush_done_usdt)
{
	return plain_done(ENG_BUFFER_FLUSH, PGT_SET_PG_BUFFER);
}

/* -------------------------------------------------------- pg-checkpoint */

/*
 * A checkpoint's phases live in the checkpointer: start (flags), buffers
 * written by BufferSync, sync phase (buffer__checkpoint__sync__start ..
 * buffer__checkpoint__done), done.  c[0] buffers written, c[1] sync ns,
 * c[2] WAL segments added + removed + recycled (from checkpoint__done).
 */
static __always_inline int
checkpoint_start(__u32 flags)
{
	if (!cfg_for_current())
		return 0;
	start_timer(ENG_CHECKPOINT, 0, flags, 0, 0, 0, 0);
	return 0;
}

SEC("usdt")
int BPF_USDT(eng_checkpoint_start_usdt, int flags)
{
	return checkpoint_start((__u32) flags);
}

/* fallback: CreateCheckPoint(int flags) */
SEC("uprobe")
int BPF_KPROBE(eng_checkpoint_start_uprobe, int flags)
{
	return checkpoint_start((__u32) flags);
}

SEC("usdt")
int BPF_USDT(eng_buffer_sync_written_usdt)
{
	struct eng_start *s;

	if (!cfg_for_current())
		return 0;
	s = timer_slot(ENG_CHECKPOINT);
	if (s && s->ts)
		__sync_fetch_and_add(&s->a[1], 1);
	return 0;
}

SEC("usdt")
int BPF_USDT(eng_ckpt_sync_start_usdt)
{
	struct eng_start *s;

	if (!cfg_for_current())
		return 0;
	s = timer_slot(ENG_CHECKPOINT);
	if (s && s->ts)
		s->ptr = bpf_ktime_get_ns();	/* sync phase start */
	return 0;
}

SEC("usdt")
int BPF_USDT(eng_ckpt_buffers_done_usdt)
{
	struct eng_start *s;
	__u64		now = bpf_ktime_get_ns();

	if (!cfg_for_current())
		return 0;
	s = timer_slot(ENG_CHECKPOINT);
	if (s && s->ts && s->ptr && now > s->ptr)
		s->a[2] = (__u32) ((now - s->ptr) / 1000);	/* sync phase, us */
	return 0;
}

/*
 * read_global_u32
 *		A checkpoint__done argument that lives in a global
 *		(CheckpointStats.x, NBuffers): libbpf cannot evaluate "sym(%rip)"
 *		specs, so user space resolved them to addresses for us.
 */
static __always_inline __u64
read_global(const struct eng_cfg *cfg, int i)
{
	__u32		v = 0;

	if (i >= ENG_CKPT_ARGS || !cfg->ckpt_addr[i] || cfg->ckpt_size[i] != 4)
		return 0;
	bpf_probe_read_user(&v, sizeof(v), (void *) cfg->ckpt_addr[i]);
	return v;
}

static __always_inline int
checkpoint_done(struct eng_cfg *cfg)
{
	struct eng_key k = {};
	struct eng_start s;
	__u64		ns;
	__u64		written;
	__u64		sync_ns;
	__u64		segs;

	if (!(ns = timed_stop(cfg, ENG_CHECKPOINT, &k, &s)))
		return 0;
	/* from checkpoint__done when resolvable, else BufferSync's count */
	written = cfg->nckpt > 0 ? read_global(cfg, 0) : s.a[1];
	segs = read_global(cfg, 2) + read_global(cfg, 3) + read_global(cfg, 4);
	sync_ns = (__u64) s.a[2] * 1000;
	k.queryid = 0;
	k.detail = s.a[0];
	timed_record(cfg, PGT_SET_PG_CHECKPOINT, &k, ns, written, sync_ns, segs, 0);
	stream_record(&k, (__u16) s.a[0], ns, written, sync_ns, segs, 0);
	return 0;
}

/* checkpoint__done at its note's address (semaphore set by the kernel) */
SEC("uprobe")
int BPF_KPROBE(eng_checkpoint_done_site)
{
	struct eng_cfg *cfg = cfg_for_current();

	return cfg ? checkpoint_done(cfg) : 0;
}

/*
 * fallback: return of CreateCheckPoint.  A checkpoint skipped because the
 * system is idle returns before CheckPointGuts() sets ckpt_write_t (the
 * USDT checkpoint__start comes after that test): no checkpoint, no event.
 */
SEC("uretprobe")
int BPF_KRETPROBE(eng_checkpoint_done_uprobe)
{
	struct eng_cfg *cfg = cfg_for_current();
	struct eng_start s;
	__s64		write_t = 1;

	if (!cfg)
		return 0;
	if (cfg->ckpt_write_addr &&
		bpf_probe_read_user(&write_t, sizeof(write_t), (void *) cfg->ckpt_write_addr) == 0 &&
		write_t == 0)
	{
		stop_timer(ENG_CHECKPOINT, &s);		/* forget its start */
		return 0;
	}
	return checkpoint_done(cfg);
}

/* ------------------------------------------------------------ pg-usdt */

static __always_inline int
count_event(__u32 probe)
{
	struct eng_cfg *cfg = cfg_for_current();
	struct eng_key k = {};

	if (!cfg)
		return 0;
	key_init(&k, probe, cfg);
	stats_add(&k, 0, 0, 0, 0);
	trace_emit(PGT_SET_PG_USDT, &k, 0, 0, 0, 0, 0);
	return 0;
}

SEC("usdt")
int BPF_USDT(eng_xact_commit_usdt)
{
	return count_event(ENG_XACT_COMMIT);
}

SEC("usdt")
int BPF_USDT(eng_xact_abort_usdt)
{
	return count_event(ENG_XACT_ABORT);
}

SEC("usdt")
int BPF_USDT(eng_deadlock_usdt)
{
	return count_event(ENG_DEADLOCK);
}

SEC("usdt")
int BPF_USDT(eng_sort_done_usdt)
{
	return count_event(ENG_SORT);
}

/* --------------------------------------------------------- pg-lock-hold */

/*
 * Heavyweight lock hold times: from the grant (return of
 * LockAcquireExtended, which LockAcquire jumps to; fast-path locks
 * included) to the release that drops the backend's last hold.  No USDT
 * marks grants or releases, so these are uprobes on the exported lock
 * manager functions: LockRelease (one hold), LockReleaseAll (transaction
 * end: a lock method's locks, session locks too when allLocks),
 * LockReleaseSession, LockReleaseCurrentOwner (subtransaction abort: the
 * locks of CurrentResourceOwner) and LockReassignCurrentOwner
 * (subtransaction or portal commit: its locks pass to the parent owner).
 * Held locks live in the thread's eng_task; more than ENG_HELD_LOCKS at
 * once are counted in eng_hold_overflow and not timed.  A lock the backend
 * holds both for its transaction and for its session (VACUUM, CREATE INDEX
 * CONCURRENTLY: LockRelationIdForSession on a relation opened in the
 * transaction) counts the two apart (scount), as PostgreSQL keeps them per
 * owner: the transaction's end drops its holds and the session's stay until
 * their own release.
 */
#define LOCKACQUIRE_OK				1
#define LOCKACQUIRE_ALREADY_HELD	2
#define LOCKACQUIRE_ALREADY_CLEAR	3
/* How a bulk release picks its locks (lock_release_cb). */
#define HOLD_END_METHOD		1	/* LockReleaseAll: method, session holds stay unless all */
#define HOLD_END_SESSION	2	/* LockReleaseSession: method, session only */
#define HOLD_END_OWNER		3	/* LockReleaseCurrentOwner: owner's, session holds stay */
#define HOLD_PASS_OWNER		4	/* LockReassignCurrentOwner: owner -> parent */

/*
 * lock_find
 *		Slot of the lock (tag, mode) this thread holds, or of a free slot
 *		when want_free and the lock is not held; -1 when neither.
 */
static __always_inline int
lock_find(struct eng_task *t, const __u32 *tag, __u32 mode, int want_free)
{
	int			free_slot = -1;
	int			i;

	for (i = 0; i < ENG_HELD_LOCKS; i++)
	{
		struct eng_held_lock *h = &t->locks[i];

		if (!h->count)
		{
			if (free_slot < 0)
				free_slot = i;
			continue;
		}
		if (h->mode == mode && h->tag[0] == tag[0] && h->tag[1] == tag[1] &&
			h->tag[2] == tag[2] && h->tag[3] == tag[3])
			return i;
	}
	return want_free ? free_slot : -1;
}

/*
 * lock_hold_done
 *		A lock released for good: its hold time under (pid, query id at the
 *		grant, lock type, mode, database and object when the tag type has
 *		a bounded one).
 */
static __always_inline void
lock_hold_done(const struct eng_cfg *cfg, struct eng_held_lock *h, __u64 now)
{
	struct eng_key k = {};
	__u32		type = (h->tag[3] >> 16) & 0xff;
	__u64		ns;

	k.pid = bpf_get_current_pid_tgid() >> 32;
	k.pm = cfg->postmaster;
	k.probe = ENG_LOCK_HOLD;
	k.mode = h->mode;
	k.detail = type;
	k.queryid = h->queryid;
	/* the tag's fields, as lock waits keep them (an object lock's objid) */
	k.obj[0] = h->tag[0];
	k.obj[1] = h->tag[1];
	k.obj[2] = h->tag[2];
	h->count = 0;
	h->scount = 0;
	ns = now > h->ts ? now - h->ts : 1;
	/* the stream names the object; the counters only a lasting one */
	trace_emit(PGT_SET_PG_LOCK_HOLD, &k, ns, 0, 0, 0, 0);
	if (!lock_object_bounded(type))
		k.obj[0] = k.obj[1] = k.obj[2] = 0;
	stats_add(&k, ns, 0, 0, 0);
	hist_add(cfg, k.probe, ns);
}

/*
 * LockAcquireExtended(locktag, lockmode, sessionLock, ...): push the call
 * (tag, mode, session, stack pointer) on the thread's acq[] stack.  Calls
 * that left by longjmp (an error while waiting) never return: an entry
 * whose frame is not above ours is such a leftover, dropped here.
 */
SEC("uprobe")
int BPF_KPROBE(eng_lock_acquire_uprobe, const void *locktag, int mode, int session)
{
	struct eng_task *t;
	struct eng_start *a;
	__u64		sp = PT_REGS_SP(ctx);
	__u32		d;
	int			i;

	if (!served(&t) || !t)
		return 0;
	for (i = 0; i < ENG_ACQ_DEPTH; i++)
	{
		d = t->acq_depth;
		if (d == 0 || d > ENG_ACQ_DEPTH || t->acq[(d - 1) & (ENG_ACQ_DEPTH - 1)].ptr > sp)
			break;
		t->acq_depth = d - 1;
	}
	d = t->acq_depth;
	if (d >= ENG_ACQ_DEPTH)
	{
		t->acq_depth = 0;		/* deeper than PostgreSQL nests: start over */
		return 0;
	}
	barrier_var(d);				/* keep the mask: the verifier needs it */
	a = &t->acq[d & (ENG_ACQ_DEPTH - 1)];
	if (bpf_probe_read_user(a->a, 4 * sizeof(__u32), locktag))
		return 0;
	a->a[4] = ((__u32) mode & 0xffff) | ((session & 0xff) ? 0x10000 : 0);
	a->ptr = sp;
	a->ts = 1;
	t->acq_depth = d + 1;
	return 0;
}

/*
 * The stack pointer at a function's return, against the one at its entry:
 * x86-64's call pushed the return address, which ret pops; arm64's bl puts
 * it in the link register, and the stack pointer is the same.
 */
#if defined(__TARGET_ARCH_arm64)
#define ENG_RET_SP_DELTA	0
#else
#define ENG_RET_SP_DELTA	8
#endif

/*
 * lock_acquire_pop
 *		The acq[] entry of the call returning now (its entry stack pointer
 *		is ours less ENG_RET_SP_DELTA) into *out, dropping any above it
 *		(calls left by a longjmp).  0, or -1 when there is none: an outer
 *		call's entry stays (this call pushed none: its tag was unreadable,
 *		or the process was not served at its entry).
 */
static __always_inline int
lock_acquire_pop(struct eng_task *t, __u64 sp, struct eng_start *out)
{
	int			i;

	for (i = 0; i < ENG_ACQ_DEPTH; i++)
	{
		__u32		d = t->acq_depth;
		struct eng_start *a;

		if (d == 0 || d > ENG_ACQ_DEPTH)
			return -1;
		a = &t->acq[(d - 1) & (ENG_ACQ_DEPTH - 1)];
		if (a->ptr + ENG_RET_SP_DELTA > sp)
			return -1;			/* an outer call's */
		t->acq_depth = d - 1;
		if (a->ptr + ENG_RET_SP_DELTA == sp)
		{
			*out = *a;
			return 0;
		}
	}
	return -1;
}

SEC("uretprobe")
int BPF_KRETPROBE(eng_lock_acquire_uretprobe, int res)
{
	struct eng_task *t;
	struct eng_cfg *cfg = served(&t);
	struct eng_held_lock *h;
	struct eng_start s;
	__u32		mode;
	int			i;

	if (!cfg || !t || lock_acquire_pop(t, PT_REGS_SP(ctx), &s) < 0)
		return 0;
	mode = s.a[4] & 0xffff;
	if (res != LOCKACQUIRE_OK && res != LOCKACQUIRE_ALREADY_HELD &&
		res != LOCKACQUIRE_ALREADY_CLEAR)
		return 0;				/* not granted (dontWait) */
	i = lock_find(t, s.a, mode, res == LOCKACQUIRE_OK);
	if (i < 0 || i >= ENG_HELD_LOCKS)
	{
		/* held since before we attached, or no room */
		if (res == LOCKACQUIRE_OK)
			__sync_fetch_and_add(&eng_hold_overflow, 1);
		return 0;
	}
	h = &t->locks[i];
	if (res != LOCKACQUIRE_OK)
	{
		/* a session hold keeps the lock past transaction end */
		h->count++;
		if (s.a[4] >> 16)
			h->scount++;
		return 0;
	}
	/* a new grant (a slot we never saw released is started afresh) */
	h->tag[0] = s.a[0];
	h->tag[1] = s.a[1];
	h->tag[2] = s.a[2];
	h->tag[3] = s.a[3];
	h->mode = (__u16) mode;
	h->scount = (s.a[4] >> 16) ? 1 : 0;
	h->count = 1;
	h->queryid = current_qid(cfg, bpf_get_current_pid_tgid() >> 32);
	h->owner = 0;
	if (!h->scount && cfg->owner_addr)
		bpf_probe_read_user(&h->owner, sizeof(h->owner), (void *) cfg->owner_addr);
	h->ts = bpf_ktime_get_ns();
	return 0;
}

/* LockRelease(locktag, lockmode, sessionLock): one hold, the session's or not */
SEC("uprobe")
int BPF_KPROBE(eng_lock_release_uprobe, const void *locktag, int mode, int session)
{
	struct eng_task *t;
	struct eng_cfg *cfg = served(&t);
	struct eng_held_lock *h;
	__u32		tag[4];
	int			i;

	if (!cfg || !t || bpf_probe_read_user(tag, sizeof(tag), locktag))
		return 0;
	i = lock_find(t, tag, (__u32) mode, 0);
	if (i < 0 || i >= ENG_HELD_LOCKS)
		return 0;
	h = &t->locks[i];
	if ((session & 0xff) && h->scount)
		h->scount--;
	if (--h->count == 0)
		lock_hold_done(cfg, h, bpf_ktime_get_ns());
	return 0;
}

/*
 * lock_keep_session
 *		The transaction's holds of h go (its end, or its owner's release):
 *		done when the session holds none, else the session's stay.
 */
static __always_inline void
lock_keep_session(const struct eng_cfg *cfg, struct eng_held_lock *h, __u64 now)
{
	if (!h->scount)
		lock_hold_done(cfg, h, now);
	else
		h->count = h->scount;
}

struct bulk_ctx
{
	struct eng_task *t;
	const struct eng_cfg *cfg;
	__u64		now;
	__u64		owner;
	__u64		parent;
	__u32		how;			/* HOLD_* */
	__u32		method;
	__u32		all;
};

/*
 * lock_bulk_cb
 *		bpf_loop body of a bulk release: slot i, if the release takes it.
 */
static long
lock_bulk_cb(__u64 i, void *data)
{
	struct bulk_ctx *c = data;
	struct eng_held_lock *h;
	__u32		method;

	if (i >= ENG_HELD_LOCKS || !c->t)
		return 1;
	h = &c->t->locks[i];
	if (!h->count)
		return 0;
	method = h->tag[3] >> 24;
	switch (c->how)
	{
		case HOLD_END_METHOD:
			if (method != c->method)
				break;
			if (c->all)
				lock_hold_done(c->cfg, h, c->now);
			else
				lock_keep_session(c->cfg, h, c->now);
			break;
		case HOLD_END_SESSION:
			/* the session's holds go; the transaction's, if any, stay */
			if (method != c->method || !h->scount)
				break;
			if (h->count <= h->scount)
				lock_hold_done(c->cfg, h, c->now);
			else
			{
				h->count -= h->scount;
				h->scount = 0;
			}
			break;
		case HOLD_END_OWNER:
			if (h->owner == c->owner && h->count > h->scount)
				lock_keep_session(c->cfg, h, c->now);
			break;
		case HOLD_PASS_OWNER:
			if (h->owner == c->owner && h->count > h->scount)
				h->owner = c->parent;
			break;
	}
	return 0;
}

/*
 * lock_bulk
 *		Apply a bulk release to this thread's held locks.
 */
static __always_inline int
lock_bulk(__u32 how, __u32 method, __u32 all)
{
	struct bulk_ctx c = {};

	c.cfg = served(&c.t);
	if (!c.cfg || !c.t)
		return 0;
	c.how = how;
	c.method = method;
	c.all = all;
	c.now = bpf_ktime_get_ns();
	if (how == HOLD_END_OWNER || how == HOLD_PASS_OWNER)
	{
		/* the owner being released; ResourceOwnerData starts with its parent */
		if (!c.cfg->owner_addr ||
			bpf_probe_read_user(&c.owner, sizeof(c.owner), (void *) c.cfg->owner_addr) ||
			!c.owner)
			return 0;
		if (how == HOLD_PASS_OWNER &&
			bpf_probe_read_user(&c.parent, sizeof(c.parent), (void *) c.owner))
			return 0;
	}
	bpf_loop(ENG_HELD_LOCKS, lock_bulk_cb, &c, 0);
	return 0;
}

/* LockReleaseAll(LOCKMETHODID lockmethodid, bool allLocks) */
SEC("uprobe")
int BPF_KPROBE(eng_lock_release_all_uprobe, int method, int all)
{
	return lock_bulk(HOLD_END_METHOD, (__u32) method & 0xffff, (all & 0xff) != 0);
}

/* LockReleaseSession(LOCKMETHODID lockmethodid) */
SEC("uprobe")
int BPF_KPROBE(eng_lock_release_session_uprobe, int method)
{
	return lock_bulk(HOLD_END_SESSION, (__u32) method & 0xffff, 1);
}

/* LockReleaseCurrentOwner(LOCALLOCK **locallocks, int nlocks) */
SEC("uprobe")
int BPF_KPROBE(eng_lock_release_owner_uprobe)
{
	return lock_bulk(HOLD_END_OWNER, 0, 0);
}

/* LockReassignCurrentOwner(LOCALLOCK **locallocks, int nlocks) */
SEC("uprobe")
int BPF_KPROBE(eng_lock_reassign_owner_uprobe)
{
	return lock_bulk(HOLD_PASS_OWNER, 0, 0);
}

/* ------------------------------------------------------- pg-lwlock-hold */

/*
 * LWLock hold times from the USDT probes LWLockAcquire,
 * LWLockConditionalAcquire and LWLockAcquireOrWait fire once they hold the
 * lock (lwlock__acquire, __condacquire, __acquire__or__wait: tranche name,
 * mode) to lwlock__release in LWLockRelease (tranche name only: the lock's
 * address is in no argument).  A release pairs with the latest acquisition
 * of the same tranche on this thread, so when two locks of one tranche are
 * held at once and released first-in first-out their durations swap;
 * counts and totals are exact.  Events are counted, never streamed (they
 * come at hundreds of thousands a second).
 */
/*
 * lw_push
 *		This thread now holds an LWLock known by key (tranche name address
 *		with USDT, lock address with uprobes).
 */
static __always_inline int
lw_push(struct eng_task *t, __u64 key, __u32 mode)
{
	struct eng_held_lw *h;
	int			free_slot = -1;
	int			i;

	for (i = 0; i < ENG_HELD_LWLOCKS; i++)
		if (!t->lw[i].name)
		{
			free_slot = i;
			break;
		}
	if (free_slot < 0 || free_slot >= ENG_HELD_LWLOCKS)
	{
		__sync_fetch_and_add(&eng_hold_overflow, 1);
		return 0;
	}
	h = &t->lw[free_slot];
	h->name = key;
	h->mode = mode;
	h->seq = ++t->lw_seq;
	h->ts = bpf_ktime_get_ns();
	return 0;
}

/*
 * lw_release
 *		The release of the latest acquisition under key: its hold time.
 *		by_id: key is the lock's address, named by the tranche id in the
 *		LWLock (detail = ENG_LW_TRANCHE_ID | id); else key is the tranche
 *		name's address, kept in obj[0..1] for user space to read (the
 *		string may sit on a page this process never touched, which BPF
 *		cannot fault in; helper/engine_probes.c reads it through the
 *		postmaster, where it has the same address).
 */
static __always_inline int
lw_release(__u64 key, int by_id)
{
	struct eng_task *t;
	struct eng_cfg *cfg = served(&t);
	struct eng_key k = {};
	struct eng_held_lw *h;
	__u64		now = bpf_ktime_get_ns();
	__u32		best_seq = 0;
	__u16		tranche = 0;
	int			best = -1;
	int			i;

	if (!cfg || !t || !key)
		return 0;
	for (i = 0; i < ENG_HELD_LWLOCKS; i++)
		if (t->lw[i].name == key && (best < 0 || (__s32) (t->lw[i].seq - best_seq) > 0))
		{
			best = i;
			best_seq = t->lw[i].seq;
		}
	if (best < 0 || best >= ENG_HELD_LWLOCKS)
		return 0;				/* taken before we attached */
	h = &t->lw[best];
	key_init(&k, ENG_LWLOCK_HOLD, cfg);
	k.mode = (__u16) h->mode;
	if (by_id)
	{
		/* struct LWLock starts with its uint16 tranche */
		bpf_probe_read_user(&tranche, sizeof(tranche), (void *) key);
		k.detail = ENG_LW_TRANCHE_ID | tranche;
	}
	else
	{
		k.obj[0] = (__u32) key;
		k.obj[1] = (__u32) (key >> 32);
	}
	stats_add(&k, now > h->ts ? now - h->ts : 1, 0, 0, 0);
	hist_add(cfg, ENG_LWLOCK_HOLD, now > h->ts ? now - h->ts : 1);
	h->name = 0;
	return 0;
}

SEC("usdt")
int BPF_USDT(eng_lwlock_acquired_usdt, __u64 name, int mode)
{
	struct eng_task *t;

	if (!served(&t) || !t || !name)
		return 0;
	return lw_push(t, name, (__u32) mode);
}

SEC("usdt")
int BPF_USDT(eng_lwlock_release_usdt, __u64 name)
{
	return lw_release(name, 0);
}

/*
 * Fallback without USDT: LWLockAcquire (always acquires; the result says
 * whether it waited), LWLockConditionalAcquire and LWLockAcquireOrWait
 * (acquired when they return true) by lock address from entry to return,
 * LWLockRelease(lock) at its entry: exact pairing by address.
 */
#define LW_CALL_ACQUIRE		0
#define LW_CALL_CONDITIONAL	1

static __always_inline int
lw_call(__u64 lock, int mode, __u32 call)
{
	if (cfg_for_current())
		start_timer(ENG_LWLOCK_HOLD, lock, (__u32) mode, call, 0, 0, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(eng_lwlock_acquire_uprobe, __u64 lock, int mode)
{
	return lw_call(lock, mode, LW_CALL_ACQUIRE);
}

SEC("uprobe")
int BPF_KPROBE(eng_lwlock_condacquire_uprobe, __u64 lock, int mode)
{
	return lw_call(lock, mode, LW_CALL_CONDITIONAL);
}

SEC("uretprobe")
int BPF_KRETPROBE(eng_lwlock_acquire_uretprobe, int ret)
{
	struct eng_task *t;
	struct eng_start s;

	if (!served(&t) || !t || !stop_timer(ENG_LWLOCK_HOLD, &s) || !s.ptr)
		return 0;
	if (s.a[1] != LW_CALL_ACQUIRE && !(ret & 0xff))
		return 0;				/* not acquired */
	return lw_push(t, s.ptr, s.a[0]);
}

SEC("uprobe")
int BPF_KPROBE(eng_lwlock_release_uprobe, __u64 lock)
{
	return lw_release(lock, 1);
}
