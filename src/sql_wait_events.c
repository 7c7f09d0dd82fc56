/*-------------------------------------------------------------------------
 *
 * sql_wait_events.c
 *	  SQL functions of the sampled wait-event tier: wait events, time model,
 *	  sessions, session events, query events (each cumulative or over a
 *	  window), active processes, the sampler's status, and reset.
 *
 * Every function copies what it needs out of shared memory with the
 * seqlock protocol (ash.h), then aggregates its private copy: reading never
 * waits on the sampler and never holds anything the sampler needs.
 *
 * A window of W seconds is served by the 1-second buckets when W <= 60 and
 * by the 10-second buckets otherwise (so it is rounded up to whole
 * 10-second periods); the current, partial period is included.
 *
 * Visibility follows pg_stat_activity: roles with the privileges of
 * pg_read_all_stats (pg_monitor members, superusers) see every process;
 * other roles see only sessions whose user they have the privileges of,
 * and their system-wide views (events, time model) are computed from those
 * sessions alone.
 *
 * Locking: none (seqlock reads only).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_authid_d.h"
#include "commands/dbcommands.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

#include "pg_tracer.h"
#include "ash.h"

PG_FUNCTION_INFO_V1(pg_tracer_wait_events_since);
PG_FUNCTION_INFO_V1(pg_tracer_time_model_since);
PG_FUNCTION_INFO_V1(pg_tracer_sessions_since);
PG_FUNCTION_INFO_V1(pg_tracer_session_events_since);
PG_FUNCTION_INFO_V1(pg_tracer_query_events_since);
PG_FUNCTION_INFO_V1(pg_tracer_active);
PG_FUNCTION_INFO_V1(pg_tracer_ash_status);
PG_FUNCTION_INFO_V1(pg_tracer_reset);

/* Events under a class shown by the time model: at least this share. */
#define PGT_TM_MIN_PCT		1.0
#define PGT_TM_MAX_EVENTS	5

/* A private, aggregated copy of the sampled data. */
typedef struct AshSnap
{
	PgtAshShared hdr;
	PgtAshSession *dir;			/* hdr.nsessions entries */
	PgtAshLive *live;			/* hdr.nslots entries */
	PgtAshTable *rows;			/* aggregated rows of all kinds */
	PgtAshSession **bykey;		/* the directory's used entries, by key */
	int			nbykey;
	bool		dir_whole;		/* the directory was copied in one tick */
	bool		rows_whole;		/* and so were the cumulative tables */
	bool		see_all;
	bool		cumulative;		/* since the reset, not a window */
	uint64		covered_us;		/* wall time the sampled rows stand for */
} AshSnap;

/* One row of an output, sorted before it is emitted. */
typedef struct OutRow
{
	PgtAshRow	r;
	int32		pid;
} OutRow;

static int	window_seconds(FunctionCallInfo fcinfo);
static void snap_take(AshSnap *snap, int window_s);
static void snap_add_table(PgtAshTable *dst, const PgtAshTable *src);
static void snap_index(AshSnap *snap);
static PgtAshSession *snap_session(const AshSnap *snap, uint64 key);
static bool snap_session_visible(const AshSnap *snap, uint64 key);
static PgtAshTable *snap_events(const AshSnap *snap);
static uint64 db_time_of(const PgtAshTable *events);
static int	cmp_time_desc(const void *a, const void *b);
static OutRow *collect(const PgtAshTable *t, uint8 kind, int *n);
static Datum pct_datum(uint64 part, uint64 whole, bool *isnull);
static double us_to_ms(uint64 us);

/*
 * window_seconds
 *		The window argument in whole seconds (rounded up); 0 = cumulative.
 */
static int
window_seconds(FunctionCallInfo fcinfo)
{
	Interval   *iv;
	double		secs;

	if (PG_NARGS() < 1 || PG_ARGISNULL(0))
		return 0;
	iv = PG_GETARG_INTERVAL_P(0);
	secs = (double) iv->time / USECS_PER_SEC +
		(double) iv->day * SECS_PER_DAY +
		(double) iv->month * DAYS_PER_MONTH * SECS_PER_DAY;
	if (secs <= 0 || secs > PGT_ASH_MAX_WINDOW_S)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("window must be greater than 0 and at most %d seconds",
						PGT_ASH_MAX_WINDOW_S),
				 errhint("Pass an interval such as '5 s', '1 min' or '5 min', or NULL for the totals since the last reset.")));
	return (int) ceil(secs);
}

/*
 * snap_copy_cumulative
 *		Copy the three regions in reg (header, directory, live array) and
 *		the cumulative tables in one consistent read; the tables' copies go
 *		to parts.  Returns their count.
 */
static int
snap_copy_cumulative(AshSnap *snap, PgtCopyRegion *reg, PgtAshTable **parts)
{
	PgtAshShared *a = pgt_ash;
	PgtAshTable *src[3];
	int			i;

	src[0] = pgt_ash_events(a);
	src[1] = pgt_ash_sessions_tab(a);
	src[2] = pgt_ash_queries_tab(a);
	for (i = 0; i < 3; i++)
	{
		Size		len = pgt_ash_table_bytes(src[i]->size);

		parts[i] = palloc(len);
		reg[3 + i].dst = parts[i];
		reg[3 + i].src = src[i];
		reg[3 + i].len = len;
	}
	if (!pgt_seq_copy_quiet(&a->seq, reg, 6))
	{
		/*
		 * The tables may mix two ticks, which blurs the figures; the
		 * directory must not, for it says whose rows the caller may see (an
		 * entry reused meanwhile, copied half old and half new, would give
		 * one session another's role).  Alone it is small enough to copy
		 * whole.  A row itself may be torn too (a reset or a rebuild under
		 * way), pairing one role's oid with another's figures: rows_whole
		 * false keeps the per-role rows from a caller who may not see all.
		 */
		snap->rows_whole = false;
		snap->dir_whole = pgt_seq_copy_quiet(&a->seq, reg, 3);
		pgt_seq_mixed_notice();
	}
	snap->covered_us = snap->hdr.sampled_us;
	return 3;
}

/*
 * snap_copy_window
 *		Copy the three regions in reg, then each history bucket (fine ones
 *		for a window shorter than their span, else coarse ones) that covers
 *		part of the last window_s seconds, each in a consistent read of its
 *		own; their tables go to parts.  Returns their count.
 */
static int
snap_copy_window(AshSnap *snap, PgtCopyRegion *reg, int window_s, PgtAshTable **parts)
{
	PgtAshShared *a = pgt_ash;
	int64		now_s = GetCurrentTimestamp() / USECS_PER_SEC;
	bool		fine = window_s <= PGT_ASH_FINE_BUCKETS - 1;
	int			nb = fine ? PGT_ASH_FINE_BUCKETS : PGT_ASH_COARSE_BUCKETS;
	int64		lo = fine ? now_s - window_s + 1 :
	(now_s - window_s) / PGT_ASH_COARSE_SECS;
	int64		hi = fine ? now_s : now_s / PGT_ASH_COARSE_SECS;
	Size		stride = fine ? a->fine_stride : a->coarse_stride;
	int			nparts = 0;
	int			i;

	snap->dir_whole = pgt_seq_copy_quiet(&a->seq, reg, 3);
	if (!snap->dir_whole)
		pgt_seq_mixed_notice();
	for (i = 0; i < nb; i++)
	{
		PgtAshBucket *b = fine ? pgt_ash_fine(a, i) : pgt_ash_coarse(a, i);
		PgtAshBucket *copy = palloc(stride);
		PgtCopyRegion r;
		bool		torn;

		r.dst = copy;
		r.src = b;
		r.len = stride;
		torn = !pgt_seq_copy_quiet(&b->seq, &r, 1);
		if (copy->period < lo || copy->period > hi || copy->period == 0)
		{
			pfree(copy);
			continue;
		}
		if (torn)
		{
			/* a torn row may pair one role's oid with another's figures */
			snap->rows_whole = false;
			pgt_seq_mixed_notice();
		}
		parts[nparts++] = &copy->table;
		snap->covered_us += copy->elapsed_us;
	}
	return nparts;
}

/*
 * snap_merge
 *		Aggregate the rows of the copied tables into one table, sized for
 *		them all at most half full.
 */
static void
snap_merge(AshSnap *snap, PgtAshTable **parts, int nparts)
{
	uint64		total = 0;
	uint32		size = 16;
	int			i;

	for (i = 0; i < nparts; i++)
		total += parts[i]->used;
	while (size < total * 2 + 2)
		size <<= 1;
	snap->rows = palloc(pgt_ash_table_bytes(size));
	pgt_ash_table_init(snap->rows, size, size - 1);
	for (i = 0; i < nparts; i++)
		snap_add_table(snap->rows, parts[i]);
}

/*
 * snap_take
 *		Copy the header, directory and live array, and aggregate the rows
 *		of the cumulative tables (window_s = 0) or of the history buckets
 *		that cover the last window_s seconds.
 */
static void
snap_take(AshSnap *snap, int window_s)
{
	PgtAshShared *a = pgt_ash;
	PgtCopyRegion reg[6];
	Size		dir_len;
	Size		live_len;
	PgtAshTable *parts[PGT_ASH_FINE_BUCKETS + PGT_ASH_COARSE_BUCKETS + 3];
	int			nparts;

	pgt_ash_require();
	snap->see_all = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);
	snap->cumulative = (window_s == 0);
	snap->covered_us = 0;
	snap->dir_whole = true;
	snap->rows_whole = true;

	/* sizes never change after startup */
	dir_len = sizeof(PgtAshSession) * a->nsessions;
	live_len = sizeof(PgtAshLive) * a->nslots;
	snap->dir = palloc(dir_len);
	snap->live = palloc(live_len);
	reg[0].dst = &snap->hdr;
	reg[0].src = a;
	reg[0].len = sizeof(PgtAshShared);
	reg[1].dst = snap->dir;
	reg[1].src = pgt_ash_directory(a);
	reg[1].len = dir_len;
	reg[2].dst = snap->live;
	reg[2].src = pgt_ash_live(a);
	reg[2].len = live_len;

	if (window_s == 0)
		nparts = snap_copy_cumulative(snap, reg, parts);
	else
		nparts = snap_copy_window(snap, reg, window_s, parts);
	snap_merge(snap, parts, nparts);
	snap_index(snap);
}

/*
 * cmp_session_key
 *		qsort/bsearch comparator of directory entries (pointers) by key.
 */
static int
cmp_session_key(const void *a, const void *b)
{
	uint64		x = (*(PgtAshSession *const *) a)->key;
	uint64		y = (*(PgtAshSession *const *) b)->key;

	return x < y ? -1 : x > y;
}

/*
 * snap_index
 *		Sort the copied directory's used entries by key, so that finding a
 *		row's session (snap_session, once or twice per row) is a binary
 *		search, not a scan of the directory.  A directory that may mix two
 *		ticks (the sampler stalled inside an update) names no session for a
 *		caller who may not see every one: who owns a session is what it
 *		would get wrong.
 */
static void
snap_index(AshSnap *snap)
{
	int			i;

	snap->bykey = palloc(sizeof(PgtAshSession *) * (snap->hdr.nsessions + 1));
	snap->nbykey = 0;
	if (!snap->dir_whole && !snap->see_all)
		return;
	for (i = 0; i < snap->hdr.nsessions; i++)
		if (snap->dir[i].key != 0)
			snap->bykey[snap->nbykey++] = &snap->dir[i];
	qsort(snap->bykey, snap->nbykey, sizeof(PgtAshSession *), cmp_session_key);
}

/*
 * snap_add_table
 *		Merge src's rows into dst (sums; max of max).
 */
static void
snap_add_table(PgtAshTable *dst, const PgtAshTable *src)
{
	uint32		i;

	for (i = 0; i < src->size; i++)
	{
		const PgtAshRow *r = &src->rows[i];

		if (r->kind == PGT_ASH_EMPTY)
			continue;
		pgt_ash_table_add(dst, r, 0);
	}
	dst->overflow_rows += src->overflow_rows;
	dst->overflow_us += src->overflow_us;
}

/*
 * snap_session
 *		The directory entry of a session key, NULL if forgotten.
 */
static PgtAshSession *
snap_session(const AshSnap *snap, uint64 key)
{
	PgtAshSession probe;
	PgtAshSession *p = &probe;
	PgtAshSession **hit;

	if (key == 0)
		return NULL;
	probe.key = key;
	hit = bsearch(&p, snap->bykey, snap->nbykey, sizeof(PgtAshSession *), cmp_session_key);
	return hit != NULL ? *hit : NULL;
}

/*
 * snap_session_visible
 *		May the caller see this session's rows?  As pg_stat_activity: a
 *		process of a type shown to its role (pgt_ash_role_visible_type) of a
 *		role the caller has the privileges of.  Parallel workers count: their
 *		time is in the query rows the caller sees, so it must be in the DB
 *		time those are shares of.
 */
static bool
snap_session_visible(const AshSnap *snap, uint64 key)
{
	PgtAshSession *s;

	if (snap->see_all)
		return true;
	s = snap_session(snap, key);
	return s != NULL && OidIsValid(s->userid) &&
		pgt_ash_role_visible_type(s->backend_type) &&
		has_privs_of_role(GetUserId(), s->userid);
}

/*
 * snap_events
 *		(event) rows of the caller's scope: the system-wide rows, or for a
 *		role that may not see everything, the rows of the roles it has the
 *		privileges of, regrouped: since the reset their (user, event) rows,
 *		which outlive their sessions' rows; over a window their sessions'
 *		rows (sessions are kept longer than the longest window).
 */
static PgtAshTable *
snap_events(const AshSnap *snap)
{
	PgtAshTable *ev = palloc(pgt_ash_table_bytes(PGT_ASH_EVENT_SLOTS * 2));
	uint32		i;

	pgt_ash_table_init(ev, PGT_ASH_EVENT_SLOTS * 2, PGT_ASH_EVENT_SLOTS * 2 - 1);
	for (i = 0; i < snap->rows->size; i++)
	{
		PgtAshRow	r = snap->rows->rows[i];
		bool		mine;

		if (snap->see_all)
			mine = (r.kind == PGT_ASH_EVENT);
		else if (snap->cumulative)
			mine = (r.kind == PGT_ASH_USER && snap->rows_whole &&
					has_privs_of_role(GetUserId(), (Oid) r.key));
		else
			mine = (r.kind == PGT_ASH_SESSION && snap_session_visible(snap, r.key));
		if (!mine)
			continue;
		r.kind = PGT_ASH_EVENT;
		r.key = 0;
		pgt_ash_table_add(ev, &r, 0);
	}
	return ev;
}

/*
 * db_time_of
 *		Sum of the non-idle time of a table's (event) rows.
 */
static uint64
db_time_of(const PgtAshTable *events)
{
	uint64		sum = 0;
	uint32		i;

	for (i = 0; i < events->size; i++)
		if (events->rows[i].kind != PGT_ASH_EMPTY && !events->rows[i].idle)
			sum += events->rows[i].time_us;
	return sum;
}

static int
cmp_time_desc(const void *a, const void *b)
{
	const OutRow *x = a;
	const OutRow *y = b;

	if (x->r.time_us != y->r.time_us)
		return x->r.time_us < y->r.time_us ? 1 : -1;
	if (x->r.key != y->r.key)
		return x->r.key < y->r.key ? -1 : 1;
	return (x->r.event > y->r.event) - (x->r.event < y->r.event);
}

/*
 * collect
 *		The rows of one kind, sorted by time, descending.
 */
static OutRow *
collect(const PgtAshTable *t, uint8 kind, int *n)
{
	OutRow	   *out = palloc(sizeof(OutRow) * (t->used + 1));
	uint32		i;

	*n = 0;
	for (i = 0; i < t->size; i++)
		if (t->rows[i].kind == kind)
		{
			out[*n].r = t->rows[i];
			out[*n].pid = (int32) (t->rows[i].key >> 32);
			(*n)++;
		}
	qsort(out, *n, sizeof(OutRow), cmp_time_desc);
	return out;
}

static Datum
pct_datum(uint64 part, uint64 whole, bool *isnull)
{
	*isnull = (whole == 0);
	return Float8GetDatum(whole == 0 ? 0 : 100.0 * (double) part / (double) whole);
}

static double
us_to_ms(uint64 us)
{
	return (double) us / 1000.0;
}

/*
 * put_event_cols
 *		wait_event_type, wait_event, waits, total_ms, avg_us, max_us into
 *		values[0..5].
 */
static void
put_event_cols(Datum *values, bool *nulls, const PgtAshRow *r)
{
	const char *type;
	const char *name;

	pgt_event_names(r->event, &type, &name);
	values[0] = CStringGetTextDatum(type);
	values[1] = CStringGetTextDatum(name);
	values[2] = Int64GetDatum(pgt_uint64_to_int64(r->waits));
	values[3] = Float8GetDatum(us_to_ms(r->time_us));
	values[4] = Float8GetDatum(r->waits ? (double) r->time_us / r->waits : 0);
	nulls[4] = (r->waits == 0);
	values[5] = Int64GetDatum(pgt_uint64_to_int64(r->max_us));
}

/*
 * pg_tracer_wait_events_since(window interval)
 *		One row per event: waits (sampled runs), time, average and longest
 *		run, share of DB time (NULL for idle events), fidelity.
 */
Datum
pg_tracer_wait_events_since(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			window_s = window_seconds(fcinfo);
	AshSnap		snap;
	PgtAshTable *ev;
	OutRow	   *rows;
	uint64		db;
	int			n;
	int			i;

	InitMaterializedSRF(fcinfo, 0);
	snap_take(&snap, window_s);
	ev = snap_events(&snap);
	db = db_time_of(ev);
	rows = collect(ev, PGT_ASH_EVENT, &n);
	for (i = 0; i < n; i++)
	{
		Datum		values[10];
		bool		nulls[10];

		memset(nulls, 0, sizeof(nulls));
		put_event_cols(values, nulls, &rows[i].r);
		if (rows[i].r.idle)
			nulls[6] = true;
		else
			values[6] = pct_datum(rows[i].r.time_us, db, &nulls[6]);
		values[7] = CStringGetTextDatum("sampled");
		values[8] = BoolGetDatum(rows[i].r.idle);
		values[9] = Int64GetDatum(pgt_uint64_to_int64(rows[i].r.samples));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * tm_put
 *		One time-model row; with a sixth column (pg_tracer_time_model_covered),
 *		the time the snapshot's samples stand for.
 */
static void
tm_put(ReturnSetInfo *rsinfo, const AshSnap *snap, const char *name, int depth,
	   uint64 us, uint64 db, bool idle)
{
	Datum		values[6];
	bool		nulls[6];

	memset(nulls, 0, sizeof(nulls));
	values[0] = CStringGetTextDatum(name);
	values[1] = Int32GetDatum(depth);
	values[2] = Float8GetDatum(us_to_ms(us));
	if (idle)
		nulls[3] = true;
	else
		values[3] = pct_datum(us, db, &nulls[3]);
	values[4] = BoolGetDatum(idle);
	values[5] = Float8GetDatum(us_to_ms(snap->covered_us));
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * tm_class_totals
 *		The non-idle time of each wait class among rows, one OutRow per
 *		class byte (event = class | 0), longest first; *nclasses gets their
 *		count and *idle_total the idle events' time.
 */
static OutRow *
tm_class_totals(const OutRow *rows, int n, int *nclasses, uint64 *idle_total)
{
	OutRow	   *classes = palloc0(sizeof(OutRow) * (n + 1));
	int			i;
	int			j;

	*nclasses = 0;
	*idle_total = 0;
	for (i = 0; i < n; i++)
	{
		uint32		cls = rows[i].r.event & 0xFF000000;

		if (rows[i].r.idle)
		{
			*idle_total += rows[i].r.time_us;
			continue;
		}
		for (j = 0; j < *nclasses; j++)
			if (classes[j].r.event == cls)
				break;
		if (j == *nclasses)
		{
			classes[j].r.event = cls;
			(*nclasses)++;
		}
		classes[j].r.time_us += rows[i].r.time_us;
	}
	qsort(classes, *nclasses, sizeof(OutRow), cmp_time_desc);
	return classes;
}

/*
 * tm_put_class
 *		A wait class's row (CPU* for class byte 0), then its events of at
 *		least PGT_TM_MIN_PCT of DB time db, at most PGT_TM_MAX_EVENTS.
 */
static void
tm_put_class(ReturnSetInfo *rsinfo, const AshSnap *snap, const OutRow *cls_row,
			 const OutRow *rows, int n, uint64 db)
{
	uint32		cls = cls_row->r.event;
	const char *type;
	const char *name;
	int			shown = 0;
	int			i;

	if (cls == 0)
	{
		/* class byte 0 holds CPU* only among non-idle events */
		tm_put(rsinfo, snap, "CPU*", 1, cls_row->r.time_us, db, false);
		return;
	}
	pgt_event_names(cls, &type, &name);
	tm_put(rsinfo, snap, type, 1, cls_row->r.time_us, db, false);
	for (i = 0; i < n && shown < PGT_TM_MAX_EVENTS; i++)
	{
		char		label[NAMEDATALEN * 2 + 2];

		if (rows[i].r.idle || (rows[i].r.event & 0xFF000000) != cls ||
			db == 0 || 100.0 * rows[i].r.time_us / db < PGT_TM_MIN_PCT)
			continue;
		pgt_event_names(rows[i].r.event, &type, &name);
		snprintf(label, sizeof(label), "%s:%s", type, name);
		tm_put(rsinfo, snap, label, 2, rows[i].r.time_us, db, false);
		shown++;
	}
}

/*
 * tm_put_idle
 *		The Idle row (idle_total), then each idle event.
 */
static void
tm_put_idle(ReturnSetInfo *rsinfo, const AshSnap *snap, const OutRow *rows, int n,
			uint64 idle_total, uint64 db)
{
	int			i;

	tm_put(rsinfo, snap, "Idle", 0, idle_total, db, true);
	for (i = 0; i < n; i++)
	{
		const char *type;
		const char *name;
		char		label[NAMEDATALEN * 2 + 2];

		if (!rows[i].r.idle)
			continue;
		pgt_event_names(rows[i].r.event, &type, &name);
		snprintf(label, sizeof(label), "%s:%s", type, name);
		tm_put(rsinfo, snap, label, 1, rows[i].r.time_us, db, true);
	}
}

/*
 * pg_tracer_time_model_since(window interval)
 *		DB Time; CPU* and each wait class under it, each class followed by
 *		its events of at least 1% of DB time (at most 5); then Idle, apart,
 *		with its parts.
 */
Datum
pg_tracer_time_model_since(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			window_s = window_seconds(fcinfo);
	AshSnap		snap;
	PgtAshTable *ev;
	OutRow	   *rows;
	OutRow	   *classes;
	int			nclasses;
	uint64		db;
	uint64		idle_total;
	int			n;
	int			j;

	InitMaterializedSRF(fcinfo, 0);
	snap_take(&snap, window_s);
	ev = snap_events(&snap);
	db = db_time_of(ev);
	rows = collect(ev, PGT_ASH_EVENT, &n);
	classes = tm_class_totals(rows, n, &nclasses, &idle_total);

	tm_put(rsinfo, &snap, "DB Time", 0, db, db, false);
	for (j = 0; j < nclasses; j++)
		tm_put_class(rsinfo, &snap, &classes[j], rows, n, db);
	tm_put_idle(rsinfo, &snap, rows, n, idle_total, db);
	return (Datum) 0;
}

/* Per-session totals while building pg_tracer_sessions. */
typedef struct SessTotal
{
	uint64		key;
	uint64		db_us;
	uint64		cpu_us;
	uint64		idle_us;
	uint64		top_us;
	uint32		top_event;
} SessTotal;

/* Where a session's SessTotal is (by its key), while building them. */
typedef struct SessIndex
{
	uint64		key;
	int			idx;
} SessIndex;

/*
 * sess_totals
 *		Sum the snapshot's rows per visible session: DB, CPU and idle time
 *		and the largest wait event.  Returns the totals (palloc'd) and
 *		their number in *ntot.
 */
static SessTotal *
sess_totals(const AshSnap *snap, int *ntot)
{
	SessTotal  *tot = palloc0(sizeof(SessTotal) * (snap->rows->used + 1));
	HASHCTL		ctl;
	HTAB	   *index;
	uint32		i;

	*ntot = 0;
	/* rows x sessions would be quadratic: a hash finds each session's total */
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(uint64);
	ctl.entrysize = sizeof(SessIndex);
	ctl.hcxt = CurrentMemoryContext;
	index = hash_create("pg_tracer session totals", 256, &ctl,
						HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	for (i = 0; i < snap->rows->size; i++)
	{
		const PgtAshRow *r = &snap->rows->rows[i];
		SessIndex  *e;
		SessTotal  *t;
		bool		found;

		CHECK_FOR_INTERRUPTS();
		if (r->kind != PGT_ASH_SESSION || !snap_session_visible(snap, r->key))
			continue;
		e = hash_search(index, &r->key, HASH_ENTER, &found);
		if (!found)
		{
			e->idx = (*ntot)++;
			tot[e->idx].key = r->key;
		}
		t = &tot[e->idx];
		if (r->idle)
			t->idle_us += r->time_us;
		else
		{
			t->db_us += r->time_us;
			if (r->event == PGT_EV_CPU)
				t->cpu_us += r->time_us;
			else if (r->time_us > t->top_us)
			{
				t->top_us = r->time_us;
				t->top_event = r->event;
			}
		}
	}
	hash_destroy(index);
	return tot;
}

/*
 * sess_put_row
 *		One row of pg_tracer_sessions_since: session s and its totals t.
 */
static void
sess_put_row(ReturnSetInfo *rsinfo, const PgtAshSession *s, const SessTotal *t)
{
	Datum		values[11];
	bool		nulls[11];
	char	   *db = OidIsValid(s->dbid) ? get_database_name(s->dbid) : NULL;
	char	   *user = OidIsValid(s->userid) ? GetUserNameFromId(s->userid, true) : NULL;

	memset(nulls, 0, sizeof(nulls));
	values[0] = Int32GetDatum((int32) (t->key >> 32));
	values[1] = CStringGetTextDatum(s->type_name);
	/* a role dropped since: an empty name, as before; no role: NULL */
	if (OidIsValid(s->userid))
		values[2] = CStringGetTextDatum(user != NULL ? user : "");
	else
		nulls[2] = true;
	nulls[3] = (db == NULL);
	if (db != NULL)
		values[3] = CStringGetTextDatum(db);
	values[4] = Float8GetDatum(us_to_ms(t->db_us));
	values[5] = pct_datum(t->cpu_us, t->db_us, &nulls[5]);
	values[6] = pct_datum(t->db_us - t->cpu_us, t->db_us, &nulls[6]);
	if (t->top_us > 0)
	{
		const char *type;
		const char *name;
		char		label[NAMEDATALEN * 2 + 2];

		pgt_event_names(t->top_event, &type, &name);
		snprintf(label, sizeof(label), "%s:%s", type, name);
		values[7] = CStringGetTextDatum(label);
	}
	else
		nulls[7] = true;
	values[8] = Float8GetDatum(us_to_ms(t->idle_us));
	values[9] = TimestampTzGetDatum(s->proc_start);
	values[10] = BoolGetDatum(s->exited);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * pg_tracer_sessions_since(window interval)
 *		One row per visible session: DB time, CPU and wait shares of it,
 *		its top wait event (non-idle, not CPU), idle time.
 */
Datum
pg_tracer_sessions_since(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			window_s = window_seconds(fcinfo);
	AshSnap		snap;
	SessTotal  *tot;
	int			ntot;
	int			j;

	InitMaterializedSRF(fcinfo, 0);
	snap_take(&snap, window_s);
	tot = sess_totals(&snap, &ntot);
	for (j = 0; j < ntot; j++)
	{
		PgtAshSession *s = snap_session(&snap, tot[j].key);

		/*
		 * Rows of a session whose entry went to a new one (a connection
		 * storm): nobody's any more; the sampler drops them within a second.
		 */
		if (s != NULL)
			sess_put_row(rsinfo, s, &tot[j]);
	}
	return (Datum) 0;
}

/*
 * pg_tracer_session_events_since(window interval)
 *		One row per (visible session, event); pct_db_time is the share of
 *		that session's DB time.
 */
Datum
pg_tracer_session_events_since(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			window_s = window_seconds(fcinfo);
	AshSnap		snap;
	OutRow	   *rows;
	PgtAshTable *dbt;
	int			n;
	int			i;

	InitMaterializedSRF(fcinfo, 0);
	snap_take(&snap, window_s);
	rows = collect(snap.rows, PGT_ASH_SESSION, &n);
	/* each session's DB time, keyed (session, event 0) */
	dbt = palloc(pgt_ash_table_bytes(snap.rows->size));
	pgt_ash_table_init(dbt, snap.rows->size, snap.rows->size - 1);
	for (i = 0; i < n; i++)
	{
		PgtAshRow	d = rows[i].r;

		if (d.idle)
			continue;
		d.event = 0;
		pgt_ash_table_add(dbt, &d, 0);
	}
	for (i = 0; i < n; i++)
	{
		Datum		values[10];
		bool		nulls[10];
		PgtAshSession *s;
		PgtAshRow  *tot;
		uint64		db;

		s = snap_session(&snap, rows[i].r.key);
		/* no entry: an orphan of a reused entry (see pg_tracer_sessions_since) */
		if (s == NULL || !snap_session_visible(&snap, rows[i].r.key))
			continue;
		tot = pgt_ash_table_get(dbt, PGT_ASH_SESSION, rows[i].r.key, 0, 0);
		db = tot ? tot->time_us : 0;
		memset(nulls, 0, sizeof(nulls));
		values[0] = Int32GetDatum(rows[i].pid);
		values[1] = CStringGetTextDatum(s->type_name);
		put_event_cols(values + 2, nulls + 2, &rows[i].r);
		if (rows[i].r.idle)
			nulls[8] = true;
		else
			values[8] = pct_datum(rows[i].r.time_us, db, &nulls[8]);
		values[9] = BoolGetDatum(rows[i].r.idle);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * pg_tracer_query_events_since(window interval)
 *		One row per (query id, event) over the users the caller may see;
 *		pct_db_time is the share of the caller's scope's DB time.
 */
Datum
pg_tracer_query_events_since(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			window_s = window_seconds(fcinfo);
	AshSnap		snap;
	PgtAshTable *q;
	PgtAshTable *ev;
	OutRow	   *rows;
	uint64		db;
	uint32		i;
	int			n;
	int			k;

	InitMaterializedSRF(fcinfo, 0);
	snap_take(&snap, window_s);
	ev = snap_events(&snap);
	db = db_time_of(ev);

	/* regroup over users the caller may see */
	q = palloc(pgt_ash_table_bytes(snap.rows->size));
	pgt_ash_table_init(q, snap.rows->size, snap.rows->size - 1);
	for (i = 0; i < snap.rows->size; i++)
	{
		PgtAshRow	r = snap.rows->rows[i];

		if (r.kind != PGT_ASH_QUERY)
			continue;
		if (!snap.see_all &&
			(!snap.rows_whole || !OidIsValid(r.aux) ||
			 !has_privs_of_role(GetUserId(), r.aux)))
			continue;
		r.aux = 0;
		pgt_ash_table_add(q, &r, 0);
	}
	rows = collect(q, PGT_ASH_QUERY, &n);
	for (k = 0; k < n; k++)
	{
		Datum		values[8];
		bool		nulls[8];

		memset(nulls, 0, sizeof(nulls));
		values[0] = Int64GetDatum((int64) rows[k].r.key);
		put_event_cols(values + 1, nulls + 1, &rows[k].r);
		values[7] = pct_datum(rows[k].r.time_us, db, &nulls[7]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * active_put_row
 *		One row of pg_tracer_active: live slot l of session s, as of the
 *		sampler's tick last_tick.
 */
static void
active_put_row(ReturnSetInfo *rsinfo, const PgtAshLive *l, const PgtAshSession *s,
			   TimestampTz last_tick)
{
	static const char *const states[] = {"idle", "on cpu", "waiting"};
	Datum		values[9];
	bool		nulls[9];
	char	   *user = OidIsValid(s->userid) ? GetUserNameFromId(s->userid, true) : NULL;

	memset(nulls, 0, sizeof(nulls));
	values[0] = Int32GetDatum(l->pid);
	values[1] = CStringGetTextDatum(states[Min(l->state, 2)]);
	if (l->state == PGT_LIVE_WAITING || l->state == PGT_LIVE_IDLE)
	{
		const char *type;
		const char *name;

		pgt_event_names(l->event, &type, &name);
		values[2] = CStringGetTextDatum(type);
		values[3] = CStringGetTextDatum(name);
	}
	else
		nulls[2] = nulls[3] = true;
	values[4] = Float8GetDatum(us_to_ms(l->state_us));
	values[5] = Float8GetDatum(us_to_ms(l->db_time_us));
	values[6] = CStringGetTextDatum(s->type_name);
	nulls[7] = (user == NULL);
	if (user != NULL)
		values[7] = CStringGetTextDatum(user);
	values[8] = TimestampTzGetDatum(last_tick);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * pg_tracer_active()
 *		What every visible process was doing at the sampler's latest tick.
 */
Datum
pg_tracer_active(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	AshSnap		snap;
	PgtCopyRegion reg[3];
	int			i;

	InitMaterializedSRF(fcinfo, 0);
	pgt_ash_require();
	snap.see_all = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);
	snap.dir = palloc(sizeof(PgtAshSession) * pgt_ash->nsessions);
	snap.live = palloc(sizeof(PgtAshLive) * pgt_ash->nslots);
	reg[0].dst = &snap.hdr;
	reg[0].src = pgt_ash;
	reg[0].len = sizeof(PgtAshShared);
	reg[1].dst = snap.dir;
	reg[1].src = pgt_ash_directory(pgt_ash);
	reg[1].len = sizeof(PgtAshSession) * pgt_ash->nsessions;
	reg[2].dst = snap.live;
	reg[2].src = pgt_ash_live(pgt_ash);
	reg[2].len = sizeof(PgtAshLive) * pgt_ash->nslots;
	if (!pgt_seq_copy_quiet(&pgt_ash->seq, reg, 3))
	{
		pgt_seq_mixed_notice();
		/* a mixed directory could give a session another's role: see snap_index */
		if (!snap.see_all)
			return (Datum) 0;
	}

	for (i = 0; i < snap.hdr.nslots; i++)
	{
		PgtAshLive *l = &snap.live[i];
		PgtAshSession *s;

		if (l->pid == 0 || l->session < 0 || l->session >= snap.hdr.nsessions)
			continue;
		s = &snap.dir[l->session];
		if (s->pid != l->pid)
			continue;
		if (!snap.see_all &&
			(!pgt_ash_role_visible_type(s->backend_type) || !OidIsValid(s->userid) ||
			 !has_privs_of_role(GetUserId(), s->userid)))
			continue;
		active_put_row(rsinfo, l, s, snap.hdr.last_tick);
	}
	return (Datum) 0;
}

/*
 * pg_tracer_ash_status()
 *		The sampler's own state: is it running, at what rate, how much
 *		time it covered and lost, table fill and overflow.
 */
Datum
pg_tracer_ash_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PgtAshShared hdr;
	PgtAshTable tabs[3];
	PgtCopyRegion reg[4];
	uint64		hist_overflow = 0;
	Datum		values[20];
	bool		nulls[20];
	int			i;

	InitMaterializedSRF(fcinfo, 0);
	pgt_ash_require();
	reg[0].dst = &hdr;
	reg[0].src = pgt_ash;
	reg[0].len = sizeof(hdr);
	reg[1].dst = &tabs[0];
	reg[1].src = pgt_ash_events(pgt_ash);
	reg[1].len = offsetof(PgtAshTable, rows);
	reg[2].dst = &tabs[1];
	reg[2].src = pgt_ash_sessions_tab(pgt_ash);
	reg[2].len = offsetof(PgtAshTable, rows);
	reg[3].dst = &tabs[2];
	reg[3].src = pgt_ash_queries_tab(pgt_ash);
	reg[3].len = offsetof(PgtAshTable, rows);
	pgt_seq_copy(&pgt_ash->seq, reg, 4);
	for (i = 0; i < PGT_ASH_FINE_BUCKETS + PGT_ASH_COARSE_BUCKETS; i++)
	{
		PgtAshBucket *b = i < PGT_ASH_FINE_BUCKETS ? pgt_ash_fine(pgt_ash, i) :
		pgt_ash_coarse(pgt_ash, i - PGT_ASH_FINE_BUCKETS);

		/* a torn 64-bit read cannot happen on the platforms we build for */
		hist_overflow += b->table.overflow_rows;
	}

	memset(nulls, 0, sizeof(nulls));
	values[0] = BoolGetDatum(hdr.sampler_pid != 0);
	values[1] = Int32GetDatum(hdr.sampler_pid);
	nulls[1] = (hdr.sampler_pid == 0);
	values[2] = BoolGetDatum(pgt_sampler_enabled);
	/* the rate the sampler uses (it follows a reload at its next tick) */
	values[3] = Int32GetDatum(hdr.rate_hz > 0 ? hdr.rate_hz : pgt_sample_rate);
	values[4] = TimestampTzGetDatum(hdr.sampler_started);
	nulls[4] = (hdr.sampler_started == 0);
	values[5] = TimestampTzGetDatum(hdr.reset_at);
	values[6] = TimestampTzGetDatum(hdr.last_tick);
	nulls[6] = (hdr.last_tick == 0);
	values[7] = Int64GetDatum(pgt_uint64_to_int64(hdr.ticks));
	values[8] = Float8GetDatum(us_to_ms(hdr.sampled_us));
	values[9] = Float8GetDatum(us_to_ms(hdr.lost_us));
	values[10] = Float8GetDatum(us_to_ms(hdr.tick_cpu_us));
	values[11] = Int32GetDatum((int32) tabs[0].used);
	values[12] = Int32GetDatum((int32) tabs[1].used);
	values[13] = Int32GetDatum((int32) tabs[2].used);
	values[14] = Int32GetDatum(hdr.max_entries);
	values[15] = Int64GetDatum(pgt_uint64_to_int64(tabs[0].overflow_rows +
												   tabs[1].overflow_rows +
												   tabs[2].overflow_rows));
	values[16] = Int64GetDatum(pgt_uint64_to_int64(hist_overflow));
	values[17] = Int64GetDatum(pgt_uint64_to_int64(hdr.session_overflow));
	values[18] = Int32GetDatum(PGT_ASH_MAX_WINDOW_S);
	values[19] = Int64GetDatum((int64) hdr.total_size);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}

/*
 * pg_tracer_reset()
 *		Ask the sampler to empty its counters and history, and wait (at
 *		most 2 s) until it did.  Returns whether it confirmed.
 */
Datum
pg_tracer_reset(PG_FUNCTION_ARGS)
{
	uint32		req;
	TimestampTz deadline;

	pgt_ash_require();
	req = pg_atomic_add_fetch_u32(&pgt_ash->reset_requests, 1);
	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), 2000);
	while (GetCurrentTimestamp() < deadline)
	{
		uint32		served;
		PgtCopyRegion r;

		r.dst = &served;
		r.src = &pgt_ash->reset_served;
		r.len = sizeof(served);
		/* a sampler stopped inside an update: its last value will do */
		(void) pgt_seq_copy_quiet(&pgt_ash->seq, &r, 1);
		if ((int32) (served - req) >= 0)
			PG_RETURN_BOOL(true);
		CHECK_FOR_INTERRUPTS();
		pg_usleep(1000);
	}
	ereport(NOTICE,
			(errmsg("the pg_tracer sampler has not confirmed the reset yet"),
			 errhint("It resets when it next runs; see pg_tracer_ash_status.")));
	PG_RETURN_BOOL(false);
}
