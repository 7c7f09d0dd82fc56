/*
 * helper/engine_sets.c
 *	  The engine probe sets registered with the probe-set framework
 *	  (helper/probe_set.h): pg-query, pg-locks, pg-lwlock, pg-wal,
 *	  pg-buffer, pg-checkpoint, pg-usdt.  They share one engine core
 *	  (helper/engine_probes.c); each set publishes, prints and summarizes
 *	  the probes that belong to it (engine_catalog.c: engine_probe_set_of).
 *
 * Daemon: rows go to PGT_SEC_ENGINE_EVENTS / _HIST / _STREAM for the SQL
 * views.  Trace: every event of the set as a record (buffer hits and WAL
 * inserts only in --stats, they are too many to print), per-pid/query-id
 * summaries and log2 histograms.
 *
 * Single-threaded (the daemon's or the trace command's loop).
 */
#include "engine_catalog.h"
#include "engine_probes.h"
#include "log.h"
#include "probe_set.h"
#include "procfs.h"
#include "trace_out.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* every row the map can hold fits in the segment's table */
_Static_assert(PGT_DEFAULT_ENGINE_EVENTS_CAP >= ENG_MAX_KEYS,
			   "engine events table smaller than eng_stats");

/*
 * set_index_of
 *		engine_sets[] index of a running set.
 */
static int
set_index_of(const pset_inst *inst)
{
	return engine_set_index(inst->set->name);
}

/*
 * eng_start
 *		Join the engine core; in the daemon, a set that costs too much to be
 *		always on runs only when --engine-probes names it.
 */
static int
eng_start(pset_inst *inst, const pset_ctx *ctx)
{
	int			si = set_index_of(inst);

	if (si < 0)
		return 0;
	if (ctx->mode == PSET_MODE_DAEMON && !engine_set_enabled(inst->set->name))
	{
		pset_set_status(inst, PGT_PROBE_UNAVAILABLE, "none",
						"off in the daemon%s: enable with --engine-probes",
						engine_sets[si].default_on ? "" :
						" by default (cost, see bench/engine_overhead.sh)");
		return 0;
	}
	return engine_core_join(inst, ctx, si);
}

static void
eng_stop(pset_inst *inst)
{
	engine_core_leave(set_index_of(inst));
}

static void
eng_collect(pset_inst *inst)
{
	engine_core_collect();
	inst->events = engine_core_set_events(set_index_of(inst));
}

/*
 * eng_reset
 *		pg_tracer_reset() of a cluster: the engine core's rows of it go (one
 *		core for every engine set: the first set's call does the work).
 */
static size_t
eng_reset(pset_inst *inst, uint32_t postmaster, int shared)
{
	(void) inst;
	(void) shared;				/* every engine row is one cluster's */
	return engine_core_reset(postmaster);
}

/*
 * in_set
 *		Does probe id belong to this set?
 */
static int
in_set(const pset_inst *inst, uint32_t probe)
{
	return strcmp(engine_probe_set_of(probe), inst->set->name) == 0;
}

/*
 * describe
 *		The `what` of a row: lock type and mode, tranche (whole), checkpoint
 *		flags.
 */
static void
describe(const engine_row *r, char *what, size_t len)
{
	const struct eng_key *k = &r->k;

	switch (k->probe)
	{
		case ENG_LOCK_WAIT:
		case ENG_LOCK_HOLD:
			snprintf(what, len, "%s %s", engine_locktag_name(k->detail),
					 engine_lockmode_name(k->mode));
			break;
		case ENG_LWLOCK_WAIT:
		case ENG_LWLOCK_HOLD:
			/* a tranche named longer than `what` holds is cut, with its mode */
			if (snprintf(what, len, "%s %s", r->name, engine_lwmode_name(k->mode)) >= (int) len)
				what[len - 1] = '\0';
			break;
		case ENG_CHECKPOINT:
			snprintf(what, len, "flags 0x%x%s%s%s", k->detail,
					 (k->detail & 0x4) ? " immediate" : "",
					 (k->detail & 0x1) ? " shutdown" : "",
					 (k->detail & 0x100) ? " time" : "");
			break;
		default:
			what[0] = '\0';
	}
}

/*
 * eng_publish
 *		This set's rows of one cluster (pub->postmaster).
 */
static void
eng_publish(pset_inst *inst, pset_pub *pub)
{
	engine_view v;
	size_t		i;

	engine_core_view(&v);
	for (i = 0; i < v.nrows; i++)
	{
		const engine_row *r = &v.rows[i];
		struct pgt_engine_event_entry e;

		if (r->k.pm != pub->postmaster || !in_set(inst, r->k.probe))
			continue;
		memset(&e, 0, sizeof(e));
		e.pid = pset_pub_nspid(pub, r->k.pid);
		e.probe = r->k.probe;
		e.queryid = r->k.queryid;
		e.calls = r->v.calls;
		e.total_ns = r->v.total_ns;
		e.max_ns = r->v.max_ns;
		memcpy(e.counter, r->v.c, sizeof(e.counter));
		e.detail = r->k.detail;
		e.mode = r->k.mode;
		memcpy(e.obj, r->k.obj, sizeof(e.obj));
		snprintf(e.probe_name, sizeof(e.probe_name), "%s", engine_probe_name(r->k.probe));
		describe(r, e.what, sizeof(e.what));
		(void) pset_pub_add_pid(pub, PGT_SEC_ENGINE_EVENTS, &e, sizeof(e), r->k.pid);
	}
	for (i = 0; i < v.nhist; i++)
	{
		const engine_hist_row *h = &v.hist[i];
		struct pgt_engine_hist_entry e;

		if (h->pm != pub->postmaster || !in_set(inst, h->probe))
			continue;
		memset(&e, 0, sizeof(e));
		snprintf(e.probe_name, sizeof(e.probe_name), "%s", engine_probe_name(h->probe));
		e.probe = h->probe;
		e.nslots = PGT_ENGINE_HIST_SLOTS;
		memcpy(e.slots, h->h.slots, sizeof(e.slots));
		(void) pset_pub_add(pub, PGT_SEC_ENGINE_HIST, &e, sizeof(e));
	}
	for (i = 0; i < v.nstream; i++)
	{
		struct pgt_engine_stream_entry e = v.stream[i].e;

		if (v.stream[i].pm != pub->postmaster || !in_set(inst, e.probe))
			continue;
		e.pid = pset_pub_nspid(pub, e.pid);
		(void) pset_pub_add(pub, PGT_SEC_ENGINE_STREAM, &e, sizeof(e));
	}
}

/*
 * put_detail
 *		The probe-specific fields of a record.  A summary row (`summary`)
 *		of a lock whose object the counters do not keep
 *		(ENG_LOCK_OBJECT_BOUNDED) has no lock_field1..3: the fields are left
 *		out rather than printed as zeros, as SQL shows NULL for them.
 */
static void
put_detail(trace_out *out, uint32_t probe, uint32_t detail, uint32_t mode,
		   const __u32 *obj, const __u64 *c, const char *text, bool summary)
{
	switch (probe)
	{
		case ENG_QUERY:
		case ENG_QUERY_ERROR:
			trace_rec_str(out, "query", text);
			break;
		case ENG_LOCK_WAIT:
		case ENG_LOCK_HOLD:
			trace_rec_str(out, "lock_type", engine_locktag_name(detail));
			trace_rec_str(out, "lock_mode", engine_lockmode_name(mode));
			if (summary && !ENG_LOCK_OBJECT_BOUNDED(detail))
				break;
			trace_rec_u64(out, "lock_field1", obj[0]);
			trace_rec_u64(out, "lock_field2", obj[1]);
			trace_rec_u64(out, "lock_field3", obj[2]);
			break;
		case ENG_LWLOCK_WAIT:
		case ENG_LWLOCK_HOLD:
			trace_rec_str(out, "tranche", text);
			trace_rec_str(out, "lwlock_mode", engine_lwmode_name(mode));
			break;
		case ENG_BUFFER_READ:
			trace_rec_u64(out, "database", obj[0]);
			trace_rec_u64(out, "relation", obj[1]);
			trace_rec_u64(out, "block", obj[2]);
			break;
		case ENG_CHECKPOINT:
			trace_rec_u64(out, "flags", detail);
			trace_rec_u64(out, "buffers_written", c[0]);
			trace_rec_f64(out, "sync_ms", (double) c[1] / 1e6);
			trace_rec_u64(out, "wal_segments", c[2]);
			break;
		default:
			break;
	}
}

/*
 * eng_event
 *		One streamed record (trace); -1 when it is malformed.
 */
static int
eng_event(pset_inst *inst, trace_out *out, const struct pgt_event_hdr *hdr,
		  const void *data, size_t len)
{
	const struct eng_trace_rec *r;
	char		text[ENG_TEXT_LEN];

	/* data is the payload after the header */
	if (len < sizeof(*r) || hdr->event == 0 || hdr->event >= ENG_NPROBES)
		return -1;
	r = data;
	pgt_copy_utf8(text, sizeof(text), r->text, sizeof(r->text));
	trace_rec_begin(out, inst->set->name, engine_probe_name(hdr->event), hdr->pid,
					hdr->queryid, hdr->ts_ns);
	if (r->dur_ns)
		trace_rec_f64(out, "latency_us", (double) r->dur_ns / 1e3);
	put_detail(out, hdr->event, r->detail, r->mode, r->obj, r->c, text, false);
	trace_rec_end(out);
	return 0;
}

/*
 * cmp_row
 *		qsort order of the rows' pointers in trace --stats: by pid, probe,
 *		the most time first, the most calls; the key decides ties, so the
 *		order is the same from one summary to the next.
 */
static int
cmp_row(const void *a, const void *b)
{
	const engine_row *x = *(const engine_row *const *) a;
	const engine_row *y = *(const engine_row *const *) b;
	int			c;

	if ((c = TRACE_CMP3(x->k.pid, y->k.pid)) != 0)
		return c;
	if ((c = TRACE_CMP3(x->k.probe, y->k.probe)) != 0)
		return c;
	if ((c = trace_cmp_heaviest(x->v.total_ns, x->v.calls, y->v.total_ns, y->v.calls)) != 0)
		return c;
	return memcmp(&x->k, &y->k, sizeof(x->k));
}

/*
 * eng_stats
 *		One summary record per (pid, query id, probe, lock/tranche), grouped
 *		by pid (cmp_row; in the core's order when out of memory).
 */
static void
eng_stats(pset_inst *inst, trace_out *out)
{
	engine_view v;
	const engine_row **ord;
	double		secs;
	size_t		i;

	engine_core_view(&v);
	secs = (double) (procfs_monotonic_us() - v.started_us) / 1e6;
	if (secs <= 0)
		secs = 1;
	ord = v.nrows ? malloc(v.nrows * sizeof(*ord)) : NULL;
	if (ord != NULL)
	{
		for (i = 0; i < v.nrows; i++)
			ord[i] = &v.rows[i];
		qsort(ord, v.nrows, sizeof(*ord), cmp_row);
	}
	for (i = 0; i < v.nrows; i++)
	{
		const engine_row *r = ord != NULL ? ord[i] : &v.rows[i];

		if (!in_set(inst, r->k.probe))
			continue;
		trace_rec_begin(out, inst->set->name, "stats", r->k.pid, r->k.queryid, 0);
		trace_rec_str(out, "probe", engine_probe_name(r->k.probe));
		trace_rec_u64(out, "calls", r->v.calls);
		trace_rec_f64(out, "rate_per_s", (double) r->v.calls / secs);
		if (r->v.total_ns)
		{
			trace_rec_f64(out, "total_ms", (double) r->v.total_ns / 1e6);
			/* a copy taken during a key's first update may have no call yet */
			trace_rec_f64(out, "avg_us", r->v.calls ? (double) r->v.total_ns / 1e3 / (double) r->v.calls : 0);
			trace_rec_f64(out, "max_us", (double) r->v.max_ns / 1e3);
		}
		if (r->k.probe == ENG_BUFFER_READ)
		{
			/*
			 * The ReadBufferExtended fallback cannot tell hits from misses
			 * (both 0): no ratio then, as the SQL view's NULL, not 0.
			 */
			if (r->v.c[0] + r->v.c[1] > 0)
			{
				trace_rec_u64(out, "hits", r->v.c[0]);
				trace_rec_u64(out, "misses", r->v.c[1]);
				trace_rec_f64(out, "hit_ratio",
							  (double) r->v.c[0] / (double) (r->v.c[0] + r->v.c[1]));
			}
		}
		else if (r->k.probe != ENG_QUERY && r->k.probe != ENG_QUERY_ERROR)	/* text: events only */
		{
			put_detail(out, r->k.probe, r->k.detail, r->k.mode, r->k.obj, r->v.c, r->name, true);
		}
		trace_rec_end(out);
	}
	free(ord);
}

/*
 * eng_histograms
 *		One histogram per timed probe of the set, all processes of all
 *		clusters together (pid 0, type "all"), in the framework's buckets
 *		([2^i, 2^(i+1)) us; ours start at < 1 us).
 */
static void
eng_histograms(pset_inst *inst, trace_out *out)
{
	engine_view v;
	uint32_t	p;

	engine_core_view(&v);
	for (p = 1; p < ENG_NPROBES; p++)
	{
		uint64_t	slots[PGT_HIST_SLOTS];
		char		metric[48];
		size_t		i;
		int			any = 0;

		if (!in_set(inst, p))
			continue;
		memset(slots, 0, sizeof(slots));
		for (i = 0; i < v.nhist; i++)
		{
			int			s;

			if (v.hist[i].probe != p)
				continue;
			for (s = 0; s < ENG_HIST_SLOTS; s++)
			{
				int			b = s <= 1 ? 0 : s - 1;

				if (b < PGT_HIST_SLOTS)
					slots[b] += v.hist[i].h.slots[s];
				any |= v.hist[i].h.slots[s] != 0;
			}
		}
		if (!any)
			continue;
		snprintf(metric, sizeof(metric), "%s_latency", engine_probe_name(p));
		/* the engine's top slot lands in 30: the last, open-ended one */
		trace_hist(out, inst->set->name, metric, TRACE_PID_ALL, 0, engine_probe_name(p),
				   slots, PGT_HIST_SLOTS - 1, "usecs");
	}
}

#define ENGINE_SET(sym, nm, desc, setid, ord) \
	static const probe_set sym = { \
		.name = nm, .description = desc, .id = setid, .order = ord, \
		.start = eng_start, .stop = eng_stop, .collect = eng_collect, \
		.publish = eng_publish, .event = eng_event, .stats = eng_stats, \
		.histograms = eng_histograms, .reset = eng_reset, \
	}; \
	PGT_REGISTER_PROBE_SET(sym)

ENGINE_SET(pset_pg_query, "pg-query",
		   "statement latency, query id, slow statements with text (USDT query__start/done)",
		   PGT_SET_PG_QUERY, 100);
ENGINE_SET(pset_pg_locks, "pg-locks",
		   "heavyweight lock waits: lock type, mode, object (USDT lock__wait__start/done)",
		   PGT_SET_PG_LOCKS, 101);
ENGINE_SET(pset_pg_lwlock, "pg-lwlock",
		   "LWLock waits by tranche (USDT lwlock__wait__start/done)",
		   PGT_SET_PG_LWLOCK, 102);
ENGINE_SET(pset_pg_wal, "pg-wal",
		   "WAL inserts (USDT wal__insert), XLogFlush calls and duration (uprobe)",
		   PGT_SET_PG_WAL, 103);
ENGINE_SET(pset_pg_buffer, "pg-buffer",
		   "buffer reads, hits, misses, hit ratio; dirty buffer flushes (USDT buffer__*)",
		   PGT_SET_PG_BUFFER, 104);
ENGINE_SET(pset_pg_checkpoint, "pg-checkpoint",
		   "checkpoints: duration, buffers written, sync phase (USDT checkpoint__*)",
		   PGT_SET_PG_CHECKPOINT, 105);
ENGINE_SET(pset_pg_usdt, "pg-usdt",
		   "transaction commits/aborts, deadlocks, sorts (USDT)",
		   PGT_SET_PG_USDT, 106);
ENGINE_SET(pset_pg_lock_hold, "pg-lock-hold",
		   "heavyweight lock hold times: lock type, mode, object (uprobes on LockAcquireExtended, LockRelease*)",
		   PGT_SET_PG_LOCK_HOLD, 107);
ENGINE_SET(pset_pg_lwlock_hold, "pg-lwlock-hold",
		   "LWLock hold times by tranche (USDT lwlock__acquire*/release; uprobes without USDT)",
		   PGT_SET_PG_LWLOCK_HOLD, 108);
