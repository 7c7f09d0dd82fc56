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

/* Per-thread state: timers of the probes in flight, the postmaster cache. */
struct eng_task
{
	struct eng_start s[ENG_NPROBES];
	__u32		pm;				/* postmaster, 0: not a served process */
	__u32		pad;
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

/*
 * cfg_for_current
 *		The configuration of the current process's postmaster when it is
 *		tracked and configured, else NULL.
 */
static __always_inline struct eng_task *
task_state(void)
{
	return bpf_task_storage_get(&eng_task, bpf_get_current_task_btf(), 0,
								BPF_LOCAL_STORAGE_GET_F_CREATE);
}

static __always_inline struct eng_cfg *
cfg_for_current(void)
{
	struct eng_task *t = task_state();
	__u64		now;
	__u32		pm;

	if (!t)
		return NULL;
	now = bpf_ktime_get_ns();
	if (now >= t->recheck_ns)
	{
		/* a process's postmaster never changes; "not tracked" may */
		t->pm = pgt_tracked_pm(bpf_get_current_pid_tgid() >> 32);
		t->recheck_ns = t->pm ? ~0ULL : now + 1000000000ULL;
	}
	pm = t->pm;
	if (!pm)
		return NULL;
	return bpf_map_lookup_elem(&engine_cfg, &pm);
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
	struct eng_event *e;
	__u64		ns;

	if (!cfg)
		return 0;
	ns = stop_timer(ENG_QUERY, &s);
	if (!ns)
		return 0;
	key_init(&k, ENG_QUERY, cfg);
	stats_add(&k, ns, 0, 0, 0);
	hist_add(cfg, ENG_QUERY, ns);
	trace_emit(PGT_SET_PG_QUERY, &k, ns, 0, 0, 0, s.ptr);
	if (pgt_stream || !(cfg->flags & ENG_CFG_SLOW_STREAM) || ns < cfg->slow_ns)
		return 0;
	e = bpf_ringbuf_reserve(&eng_events, sizeof(*e), 0);
	if (!e)
		return 0;
	e->ts = bpf_ktime_get_boot_ns();
	e->pid = k.pid;
	e->pm = k.pm;
	e->pad = 0;
	e->probe = ENG_QUERY;
	e->flags = 0;
	e->queryid = k.queryid;
	e->dur_ns = ns;
	e->c[0] = e->c[1] = e->c[2] = 0;
	e->text[0] = '\0';
	if (s.ptr)
		bpf_probe_read_user_str(e->text, sizeof(e->text), (void *) s.ptr);
	bpf_ringbuf_submit(e, 0);
	return 0;
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

/* ------------------------------------------------------------ pg-locks */

SEC("usdt")
int BPF_USDT(eng_lock_wait_start_usdt, __u32 f1, __u32 f2, __u32 f3, __u16 f4,
			 __u8 type, int mode)
{
	if (!cfg_for_current())
		return 0;
	start_timer(ENG_LOCK_WAIT, 0, f1, f2, f3, type, (__u32) mode);
	return 0;
}

SEC("usdt")
int BPF_USDT(eng_lock_wait_done_usdt)
{
	struct eng_cfg *cfg = cfg_for_current();
	struct eng_key k = {};
	struct eng_start s;
	__u64		ns;

	if (!cfg)
		return 0;
	ns = stop_timer(ENG_LOCK_WAIT, &s);
	if (!ns)
		return 0;
	key_init(&k, ENG_LOCK_WAIT, cfg);
	k.obj[0] = s.a[0];
	k.obj[1] = s.a[1];
	k.obj[2] = s.a[2];
	k.detail = s.a[3];
	k.mode = (__u16) s.a[4];
	stats_add(&k, ns, 0, 0, 0);
	hist_add(cfg, ENG_LOCK_WAIT, ns);
	trace_emit(PGT_SET_PG_LOCKS, &k, ns, 0, 0, 0, 0);
	return 0;
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

	if (!cfg)
		return 0;
	ns = stop_timer(ENG_LWLOCK_WAIT, &s);
	if (!ns)
		return 0;
	key_init(&k, ENG_LWLOCK_WAIT, cfg);
	k.mode = (__u16) s.a[0];
	if (s.ptr)
		bpf_probe_read_user_str(k.name, sizeof(k.name), (void *) s.ptr);
	stats_add(&k, ns, 0, 0, 0);
	hist_add(cfg, ENG_LWLOCK_WAIT, ns);
	trace_emit(PGT_SET_PG_LWLOCK, &k, ns, 0, 0, 0, s.ptr);
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
	if (!cfg_for_current())
		return 0;
	start_timer(ENG_WAL_FLUSH, 0, 0, 0, 0, 0, 0);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(eng_wal_flush_uretprobe)
{
	struct eng_cfg *cfg = cfg_for_current();
	struct eng_key k = {};
	struct eng_start s;
	__u64		ns;

	if (!cfg)
		return 0;
	ns = stop_timer(ENG_WAL_FLUSH, &s);
	if (!ns)
		return 0;
	key_init(&k, ENG_WAL_FLUSH, cfg);
	stats_add(&k, ns, 0, 0, 0);
	hist_add(cfg, ENG_WAL_FLUSH, ns);
	trace_emit(PGT_SET_PG_WAL, &k, ns, 0, 0, 0, 0);
	return 0;
}

/* ------------------------------------------------------------ pg-buffer */

SEC("usdt")
int BPF_USDT(eng_buffer_read_start_usdt)
{
	if (!cfg_for_current())
		return 0;
	start_timer(ENG_BUFFER_READ, 0, 0, 0, 0, 0, 0);
	return 0;
}

/*
 * buffer__read__done(fork, block, spc, db, rel, backend, isExtend, found):
 * c[0] hits, c[1] misses, c[2] ns spent in misses.
 */
SEC("usdt")
int BPF_USDT(eng_buffer_read_done_usdt, int fork, __u32 block, __u32 spc,
			 __u32 db, __u32 rel, int backend, __u8 is_extend, __u8 found)
{
	struct eng_cfg *cfg = cfg_for_current();
	struct eng_key k = {};
	struct eng_start s;
	__u64		ns;

	if (!cfg)
		return 0;
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
	if (!cfg_for_current())
		return 0;
	start_timer(ENG_BUFFER_READ, 0, 0, 0, 0, 0, 0);
	return 0;
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
	if (!cfg_for_current())
		return 0;
	start_timer(ENG_BUFFER_FLUSH, 0, 0, 0, 0, 0, 0);
	return 0;
}

SEC("usdt")
int BPF_USDT(eng_buffer_flush_done_usdt)
{
	struct eng_cfg *cfg = cfg_for_current();
	struct eng_key k = {};
	struct eng_start s;
	__u64		ns;

	if (!cfg)
		return 0;
	ns = stop_timer(ENG_BUFFER_FLUSH, &s);
	key_init(&k, ENG_BUFFER_FLUSH, cfg);
	stats_add(&k, ns, 0, 0, 0);
	hist_add(cfg, ENG_BUFFER_FLUSH, ns);
	trace_emit(PGT_SET_PG_BUFFER, &k, ns, 0, 0, 0, 0);
	return 0;
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
	struct eng_event *e;
	__u64		ns;
	__u64		written;
	__u64		segs;

	ns = stop_timer(ENG_CHECKPOINT, &s);
	if (!ns)
		return 0;
	/* from checkpoint__done when resolvable, else BufferSync's count */
	written = cfg->nckpt > 0 ? read_global(cfg, 0) : s.a[1];
	segs = read_global(cfg, 2) + read_global(cfg, 3) + read_global(cfg, 4);
	key_init(&k, ENG_CHECKPOINT, cfg);
	k.detail = s.a[0];
	stats_add(&k, ns, written, (__u64) s.a[2] * 1000, segs);
	hist_add(cfg, ENG_CHECKPOINT, ns);
	trace_emit(PGT_SET_PG_CHECKPOINT, &k, ns, written, (__u64) s.a[2] * 1000, segs, 0);
	if (pgt_stream)
		return 0;
	e = bpf_ringbuf_reserve(&eng_events, sizeof(*e), 0);
	if (!e)
		return 0;
	e->ts = bpf_ktime_get_boot_ns();
	e->pid = k.pid;
	e->pm = k.pm;
	e->pad = 0;
	e->probe = ENG_CHECKPOINT;
	e->flags = (__u16) s.a[0];
	e->queryid = 0;
	e->dur_ns = ns;
	e->c[0] = written;
	e->c[1] = (__u64) s.a[2] * 1000;
	e->c[2] = segs;
	e->text[0] = '\0';
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* checkpoint__done at its note's address (semaphore set by the kernel) */
SEC("uprobe")
int BPF_KPROBE(eng_checkpoint_done_site)
{
	struct eng_cfg *cfg = cfg_for_current();

	return cfg ? checkpoint_done(cfg) : 0;
}

/* fallback: return of CreateCheckPoint */
SEC("uretprobe")
int BPF_KRETPROBE(eng_checkpoint_done_uprobe)
{
	struct eng_cfg *cfg = cfg_for_current();

	return cfg ? checkpoint_done(cfg) : 0;
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
