/*-------------------------------------------------------------------------
 *
 * exact_sql.c
 *	  SQL functions over the helper's exact wait-event data (issue 4):
 *	  pg_tracer_exact_waits() (per pid, query id and event, behind the
 *	  pg_tracer_exact_* views and the exact columns of the sampled views),
 *	  pg_tracer_histogram(wait_event), pg_tracer_escalations_srf(),
 *	  pg_tracer_exact_coverage(since [, until]),
 *	  pg_tracer_exact_session_totals() (behind pg_tracer_exact_time_model
 *	  since 0.5.4) and pg_tracer_reset_all() (what pg_tracer_reset() calls
 *	  since 0.3.0: sampled and exact counters, and the probe sets' rows of
 *	  this cluster).
 *
 * Rows come from the helper's segment (tables PGT_SEC_EXACT_WAITS, _HIST,
 * _WINDOWS), copied and validated in the calling backend; a helper that is
 * not connected reads as no exact data.
 *
 * Visibility of per-process and per-query rows follows pg_stat_activity:
 * pg_read_all_stats (and superusers) see every row, other roles the rows of
 * client backends whose role they have the privileges of.  Windows carry
 * no per-session detail and are visible to all; a histogram sums every
 * session of the cluster, so it takes pg_read_all_stats.
 *
 * Locking: none of its own; pgstat_fetch_stat_local_beentry() takes the
 * backend status snapshot the way pg_stat_activity does.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_authid_d.h"
#include "common/int.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include <math.h>

#include "ash.h"
#include "pg_tracer.h"

PG_FUNCTION_INFO_V1(pg_tracer_exact_waits);
PG_FUNCTION_INFO_V1(pg_tracer_histogram);
PG_FUNCTION_INFO_V1(pg_tracer_escalations_srf);
PG_FUNCTION_INFO_V1(pg_tracer_exact_coverage);
PG_FUNCTION_INFO_V1(pg_tracer_exact_coverage_until);
PG_FUNCTION_INFO_V1(pg_tracer_exact_session_totals);
PG_FUNCTION_INFO_V1(pg_tracer_reset_all);

/* the sampler's reset (src/sql_wait_events.c) */
extern Datum pg_tracer_reset(PG_FUNCTION_ARGS);

/* Difference between the unix epoch and PostgreSQL's, in microseconds. */
#define EXACT_EPOCH_DIFF_US \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY)

#define EXACT_COLS	9
#define TOTALS_COLS	4
#define HIST_COLS	5
#define WIN_COLS	8

/*
 * add_saturating
 *		a + b, or PG_UINT64_MAX where that would wrap: sums of the helper's
 *		figures, which are checked for shape, not for size (two rows of
 *		2^63 waits summed to 0 and read as an empty histogram).
 */
static inline uint64
add_saturating(uint64 a, uint64 b)
{
	uint64		sum;

	return pg_add_u64_overflow(a, b, &sum) ? PG_UINT64_MAX : sum;
}

/*
 * pg_tracer_exact_waits
 *		One row per (pid, query id, wait event) timed exactly: pid, queryid,
 *		wait_event_type, wait_event, waits, total_ms, avg_us, max_us, idle.
 */
Datum
pg_tracer_exact_waits(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PgtLink		link;
	PgtVisibility vis;
	uint32		n;
	uint32		i;

	n = pgt_link_srf_begin(fcinfo, &link, PGT_SEC_EXACT_WAITS, &vis);
	for (i = 0; i < n; i++)
	{
		const struct pgt_exact_wait_entry *e =
			pgt_view_row(&link.view, PGT_SEC_EXACT_WAITS, i);
		Datum		values[EXACT_COLS];
		bool		nulls[EXACT_COLS];
		const char *type;
		const char *name;

		/* a real wait event has a class byte; anything else is damage */
		if ((e->event & 0xFF000000) == 0 || e->pid > (uint32) PG_INT32_MAX ||
			e->count == 0 || !pgt_visible_pid(&vis, e->pid))
			continue;
		memset(nulls, false, sizeof(nulls));
		pgt_event_names(e->event, &type, &name);
		values[0] = pgt_pid_datum(e->pid, &nulls[0]);
		values[1] = Int64GetDatum(e->queryid);
		values[2] = CStringGetTextDatum(type);
		values[3] = CStringGetTextDatum(name);
		values[4] = Int64GetDatum(pgt_uint64_to_int64(e->count));
		values[5] = Float8GetDatum((double) e->total_ns / 1e6);
		values[6] = Float8GetDatum((double) e->total_ns / 1e3 / (double) e->count);
		values[7] = Int64GetDatum(pgt_uint64_to_int64(e->max_ns / 1000));
		values[8] = BoolGetDatum(pgt_event_is_idle(e->event));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	pgt_link_free(&link);
	return (Datum) 0;
}

/*
 * resolve_event
 *		wait_event_info of "Type:Event" or "Event" (case-insensitive), from
 *		the running server's own table; raises the "unknown" error, and the
 *		"ambiguous" one for a bare name that more than one type uses
 *		(WALWrite is an LWLock and an IO event, SyncRep an LWLock and an
 *		IPC event).
 */
static uint32
resolve_event(const char *arg)
{
	pgt_wait_event_name *names = palloc(sizeof(pgt_wait_event_name) * PGT_LAYOUT_MAX_EVENTS);
	int			n = pgt_collect_wait_events(names, PGT_LAYOUT_MAX_EVENTS);
	const char *colon = strchr(arg, ':');
	int			found = -1;
	int			i;

	for (i = 0; i < n; i++)
	{
		if (colon != NULL)
		{
			size_t		tl = colon - arg;

			if (strlen(names[i].class_name) == tl &&
				pg_strncasecmp(names[i].class_name, arg, tl) == 0 &&
				pg_strcasecmp(names[i].event_name, colon + 1) == 0)
				return names[i].info;
		}
		else if (pg_strcasecmp(names[i].event_name, arg) == 0)
		{
			if (found >= 0 && names[found].info != names[i].info)
				ereport(ERROR,
						(errcode(ERRCODE_AMBIGUOUS_PARAMETER),
						 errmsg("wait event name \"%s\" is ambiguous", arg),
						 errdetail("It is both %s:%s and %s:%s.",
								   names[found].class_name, names[found].event_name,
								   names[i].class_name, names[i].event_name),
						 errhint("Qualify it with its type, e.g. '%s:%s'.",
								 names[i].class_name, names[i].event_name)));
			found = i;
		}
	}
	if (found >= 0)
		return names[found].info;
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("unknown wait event \"%s\"", arg),
			 errhint("Give a wait event as wait_event or wait_event_type:wait_event, e.g. 'IO:DataFileRead'; "
					 "names are listed by SELECT wait_event_type, wait_event FROM pg_tracer_wait_events.")));
	return 0;
}

/*
 * event_slots
 *		The exact latency histogram of event, summed over the processes in
 *		the segment link shows, into slots.  Returns the total count; the
 *		first and last non-empty slot in *first and *last (-1: none).
 */
static uint64
event_slots(const PgtLink *link, uint32 event, uint64 *slots, int *first, int *last)
{
	uint64		total = 0;
	uint32		r;
	int			i;

	memset(slots, 0, sizeof(uint64) * PGT_EXACT_HIST_SLOTS);
	*first = *last = -1;
	for (r = 0; link->connected && r < pgt_view_count(&link->view, PGT_SEC_EXACT_HIST); r++)
	{
		const struct pgt_exact_hist_entry *h =
			pgt_view_row(&link->view, PGT_SEC_EXACT_HIST, r);

		if (h->event != event || h->nslots != PGT_EXACT_HIST_SLOTS)
			continue;
		for (i = 0; i < PGT_EXACT_HIST_SLOTS; i++)
			slots[i] = add_saturating(slots[i], h->slots[i]);
	}
	for (i = 0; i < PGT_EXACT_HIST_SLOTS; i++)
	{
		total = add_saturating(total, slots[i]);
		if (slots[i] != 0)
		{
			if (*first < 0)
				*first = i;
			*last = i;
		}
	}
	return total;
}

/*
 * pg_tracer_histogram(wait_event text)
 *		The exact latency histogram of one event: bucket_lo_us,
 *		bucket_hi_us (NULL for the open-ended last bucket), waits, pct,
 *		cumulative_pct, from the first to the last non-empty bucket.
 */
Datum
pg_tracer_histogram(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *arg;
	uint32		event;
	uint64		slots[PGT_EXACT_HIST_SLOTS];
	uint64		total;
	uint64		cum = 0;
	PgtLink		link;
	int			first;
	int			last;
	int			i;

	pgt_require_preload();
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("wait_event must not be NULL"),
				 errhint("Give a wait event, e.g. pg_tracer_histogram('IO:DataFileRead').")));
	arg = text_to_cstring(PG_GETARG_TEXT_PP(0));
	event = resolve_event(arg);
	pgt_require_cluster_wide("pg_tracer_histogram");
	InitMaterializedSRF(fcinfo, 0);
	pgt_link_read(&link, PGT_SEG_TABLE(PGT_SEC_EXACT_HIST));
	total = event_slots(&link, event, slots, &first, &last);
	if (total == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_tracer_histogram(%s) needs exact data: escalate", quote_literal_cstr(arg)),
				 errdetail("%s", link.connected ?
						   "The helper has timed no wait of this event exactly; the sampled tier has no latency distribution." :
						   psprintf("The pg_tracer helper is not connected: %s.", link.reason)),
				 errhint("Run SELECT * FROM pg_tracer_escalate(60) (or start the helper with --mode full), then retry while the event occurs.")));
	for (i = first; i <= last; i++)
	{
		Datum		values[HIST_COLS];
		bool		nulls[HIST_COLS];

		memset(nulls, false, sizeof(nulls));
		cum += slots[i];
		values[0] = Float8GetDatum(i == 0 ? 0.0 : ldexp(1.0, i - 1));
		values[1] = Float8GetDatum(ldexp(1.0, i));
		nulls[1] = (i == PGT_EXACT_HIST_SLOTS - 1);
		values[2] = Int64GetDatum(pgt_uint64_to_int64(slots[i]));
		values[3] = Float8GetDatum(100.0 * (double) slots[i] / (double) total);
		values[4] = Float8GetDatum(100.0 * (double) cum / (double) total);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	pgt_link_free(&link);
	return (Datum) 0;
}

/*
 * safe_text
 *		A fixed-size string of the segment as text: cut at its NUL (or its
 *		size), anything not printable ASCII replaced by '?'.
 */
static Datum
safe_text(const char *s, size_t size)
{
	char	   *out = palloc(size + 1);
	size_t		i;

	for (i = 0; i < size && s[i] != '\0'; i++)
		out[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	out[i] = '\0';
	return CStringGetTextDatum(out);
}

/*
 * pg_tracer_escalations_srf
 *		The exact-timing windows of the last hour: start_time, end_time (NULL
 *		while open), planned_end, granted_s, reason, requested_by,
 *		end_reason, duration_s.
 */
Datum
pg_tracer_escalations_srf(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PgtLink		link;
	int64		now_us = (int64) (GetCurrentTimestamp() + EXACT_EPOCH_DIFF_US);
	uint32		i;

	pgt_require_preload();
	InitMaterializedSRF(fcinfo, 0);
	pgt_link_read(&link, PGT_SEG_TABLE(PGT_SEC_EXACT_WINDOWS));
	if (!link.connected)
	{
		pgt_link_free(&link);	/* a stale or stopped segment was copied */
		return (Datum) 0;
	}
	for (i = 0; i < pgt_view_count(&link.view, PGT_SEC_EXACT_WINDOWS); i++)
	{
		const struct pgt_exact_window_entry *w =
			pgt_view_row(&link.view, PGT_SEC_EXACT_WINDOWS, i);
		Datum		values[WIN_COLS];
		bool		nulls[WIN_COLS];
		bool		valid;
		int64		end;

		if (w->flags & PGT_EXACT_WINDOW_EARLIER)
			continue;			/* not a window: the span of those before the hour */
		memset(nulls, false, sizeof(nulls));
		values[0] = TimestampTzGetDatum(pgt_unix_us_to_timestamptz(w->start_us, &valid));
		if (!valid)
			continue;
		values[1] = TimestampTzGetDatum(pgt_unix_us_to_timestamptz(w->end_us, &valid));
		nulls[1] = !valid;
		values[2] = TimestampTzGetDatum(pgt_unix_us_to_timestamptz(w->planned_end_us, &valid));
		nulls[2] = !valid;
		values[3] = Int32GetDatum((int32) Min(w->granted_s, (uint32) PG_INT32_MAX));
		values[4] = safe_text(w->reason, sizeof(w->reason));
		values[5] = safe_text(w->who, sizeof(w->who));
		values[6] = safe_text(w->end_reason, sizeof(w->end_reason));
		nulls[6] = (w->end_us == 0);
		end = w->end_us ? w->end_us : now_us;
		values[7] = Float8GetDatum(end > w->start_us ? (double) (end - w->start_us) / 1e6 : 0.0);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	pgt_link_free(&link);
	return (Datum) 0;
}

/*
 * exact_share
 *		Share (0..1) of [since, until_us) (unix microseconds, until_us at
 *		most now) that exact-timing windows covered: 0 without a helper,
 *		-1 for a span that is empty or not yet begun (the callers' NULL).
 *		-infinity and times before 1970 count from 1970.
 */
static double
exact_share(TimestampTz since, int64 until_us)
{
	int64		since_us;
	int64		now_us = (int64) (GetCurrentTimestamp() + EXACT_EPOCH_DIFF_US);
	int64		covered = 0;
	PgtLink		link;
	uint32		i;

	if (TIMESTAMP_IS_NOEND(since))
		return -1;
	if (TIMESTAMP_IS_NOBEGIN(since) ||
		pg_add_s64_overflow(since, EXACT_EPOCH_DIFF_US, &since_us) || since_us < 0)
		since_us = 0;
	if (since_us >= until_us)
		return -1;
	pgt_link_read(&link, PGT_SEG_TABLE(PGT_SEC_EXACT_WINDOWS));
	/* stop at the whole span: the share is capped at 1, and the sum cannot overflow */
	for (i = 0; link.connected && i < pgt_view_count(&link.view, PGT_SEC_EXACT_WINDOWS) &&
		 covered < until_us - since_us; i++)
	{
		const struct pgt_exact_window_entry *w =
			pgt_view_row(&link.view, PGT_SEC_EXACT_WINDOWS, i);

		covered += pgt_window_covered(w, since_us, until_us, now_us);
	}
	pgt_link_free(&link);
	return Min(1.0, (double) covered / (double) (until_us - since_us));
}

/*
 * pg_tracer_exact_coverage(since timestamptz)
 *		Share (0..1) of the time from `since` to now that exact-timing
 *		windows covered; 0 without a helper, NULL for a NULL or future since.
 */
Datum
pg_tracer_exact_coverage(PG_FUNCTION_ARGS)
{
	double		share;

	pgt_require_preload();
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	share = exact_share(PG_GETARG_TIMESTAMPTZ(0),
						(int64) (GetCurrentTimestamp() + EXACT_EPOCH_DIFF_US));
	if (share < 0)
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(share);
}

/*
 * pg_tracer_exact_coverage(since timestamptz, until timestamptz)
 *		The same from `since` to `until` (a later until counts as now):
 *		pg_tracer_exact_time_model counts to the time the helper's copy is
 *		of.  NULL when until is not after since.  STRICT.
 */
Datum
pg_tracer_exact_coverage_until(PG_FUNCTION_ARGS)
{
	TimestampTz until = PG_GETARG_TIMESTAMPTZ(1);
	int64		now_us = (int64) (GetCurrentTimestamp() + EXACT_EPOCH_DIFF_US);
	int64		until_us;
	double		share;

	pgt_require_preload();
	if (TIMESTAMP_IS_NOBEGIN(until))
		PG_RETURN_NULL();
	if (TIMESTAMP_IS_NOEND(until) ||
		pg_add_s64_overflow(until, EXACT_EPOCH_DIFF_US, &until_us) || until_us > now_us)
		until_us = now_us;
	share = exact_share(PG_GETARG_TIMESTAMPTZ(0), until_us);
	if (share < 0)
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(share);
}

/* One process of pg_tracer_exact_session_totals. */
typedef struct SessionTotals
{
	int32		pid;
	bool		visible;		/* the caller may see its rows */
	uint64		idle_ns;
	uint64		wait_ns;
} SessionTotals;

static int
cmp_totals(const void *a, const void *b)
{
	int32		x = ((const SessionTotals *) a)->pid;
	int32		y = ((const SessionTotals *) b)->pid;

	return (x > y) - (x < y);
}

/*
 * listed_sessions
 *		The processes of this transaction's pg_stat_activity snapshot (the
 *		one the view joins), by pid, with zero totals.  Sets *n.
 */
static SessionTotals *
listed_sessions(const PgtVisibility *vis, int *n)
{
	int			nbackends = pgstat_fetch_stat_numbackends();
	SessionTotals *t = palloc0(sizeof(SessionTotals) * Max(nbackends, 1));
	int			beid;

	*n = 0;
	for (beid = 1; beid <= nbackends; beid++)
	{
		LocalPgBackendStatus *local = pgstat_fetch_stat_local_beentry(beid);

		if (local == NULL || local->backendStatus.st_procpid <= 0)
			continue;
		t[*n].pid = local->backendStatus.st_procpid;
		t[*n].visible = pgt_visible_pid(vis, (uint32) t[*n].pid);
		(*n)++;
	}
	qsort(t, *n, sizeof(SessionTotals), cmp_totals);
	return t;
}

/*
 * add_exact_rows
 *		Each well-formed exact row of the copy to its process's idle or
 *		blocking total (rows of processes not listed are left out).
 */
static void
add_exact_rows(const pgt_seg_view *view, SessionTotals *t, int n)
{
	uint32		i;

	for (i = 0; i < pgt_view_count(view, PGT_SEC_EXACT_WAITS); i++)
	{
		const struct pgt_exact_wait_entry *e = pgt_view_row(view, PGT_SEC_EXACT_WAITS, i);
		SessionTotals key;
		SessionTotals *s;

		if ((e->event & 0xFF000000) == 0 || e->pid > (uint32) PG_INT32_MAX || e->count == 0)
			continue;
		key.pid = (int32) e->pid;
		s = bsearch(&key, t, n, sizeof(SessionTotals), cmp_totals);
		if (s == NULL)
			continue;
		if (pgt_event_is_idle(e->event))
			s->idle_ns = add_saturating(s->idle_ns, e->total_ns);
		else
			s->wait_ns = add_saturating(s->wait_ns, e->total_ns);
	}
}

/*
 * pg_tracer_exact_session_totals
 *		One row per process pg_stat_activity lists: pid, idle_ms and
 *		wait_ms (exact idle and blocking waits, those in progress included)
 *		and as_of, the time of the helper's copy they are of.  All come
 *		from one copy of the segment, so that pg_tracer_exact_time_model
 *		counts its covered time to as_of, not to now: the waits in progress
 *		are counted to the copy, up to 250 ms before (before 0.5.4 the
 *		difference read as CPU*).  idle_ms and wait_ms are NULL for a
 *		process whose rows the caller may not see.  No rows without a
 *		helper.
 */
Datum
pg_tracer_exact_session_totals(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PgtLink		link;
	PgtVisibility vis;
	SessionTotals *t;
	TimestampTz as_of = 0;
	bool		valid = false;
	int			n;
	int			i;

	pgt_require_preload();
	InitMaterializedSRF(fcinfo, 0);
	pgt_link_read(&link, PGT_SEG_TABLE(PGT_SEC_EXACT_WAITS) | PGT_SEG_TABLE(PGT_SEC_BACKENDS));
	if (link.connected && link.view.hdr != NULL)
		as_of = pgt_unix_us_to_timestamptz(link.view.hdr->last_update_us, &valid);
	if (!valid)
	{
		pgt_link_free(&link);
		return (Datum) 0;
	}
	pgt_visibility_init(&vis, &link.view);
	t = listed_sessions(&vis, &n);
	add_exact_rows(&link.view, t, n);
	for (i = 0; i < n; i++)
	{
		Datum		values[TOTALS_COLS];
		bool		nulls[TOTALS_COLS] = {false, !t[i].visible, !t[i].visible, false};

		values[0] = Int32GetDatum(t[i].pid);
		values[1] = Float8GetDatum((double) t[i].idle_ns / 1e6);
		values[2] = Float8GetDatum((double) t[i].wait_ns / 1e6);
		values[3] = TimestampTzGetDatum(as_of);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	pgt_link_free(&link);
	return (Datum) 0;
}

/*
 * helper_reset
 *		Ask the helper to empty this cluster's rows with verb; true when it
 *		did, or when there was nothing to empty: no helper running, the
 *		cluster not attached (its postmaster's rows went when it exited), a
 *		helper older than the verb.  Otherwise (refused, no answer in time,
 *		a broken connection) a WARNING says so and the result is false.
 *		*emptied: whether the helper answered that it emptied them.
 */
static bool
helper_reset(const char *verb, const char *what, bool *emptied)
{
	char		out[128];
	char		err[256];
	PgtCtlResult rc;

	out[0] = err[0] = '\0';
	rc = pgt_control_request(verb, out, sizeof(out), err, sizeof(err));
	/* "OK reset=0": nothing to empty (detached, no exact set), no publication to wait for */
	*emptied = (rc == PGT_CTL_OK) && strstr(out, "reset=0") == NULL;
	if (rc == PGT_CTL_OK || rc == PGT_CTL_NO_HELPER)
		return true;
	if (rc == PGT_CTL_REFUSED &&
		(strncmp(out, "unknown-verb", 12) == 0 ||
		 strncmp(out, "unavailable the cluster is not attached", 39) == 0))
	{
		elog(DEBUG1, "pg_tracer: the helper did not reset %s: %s", what, out);
		return true;
	}
	ereport(WARNING,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("pg_tracer: the helper did not reset %s", what),
			 errdetail_internal("Request \"%s\": %s.", verb, err[0] ? err : out),
			 errhint("Call pg_tracer_reset() again once the helper answers; pg_tracer_probes shows its state.")));
	return false;
}

/*
 * pg_tracer_reset_all
 *		pg_tracer_reset(): the sampler's counters and history, then the
 *		helper's probe-set rows of this cluster (verb PROBERESET: the kernel
 *		and engine views) and its exact counters (verb EXACTRESET), waiting
 *		(at most 2 s) for a publication after the helper emptied them so
 *		that the helper's views read as "since the reset" on return.  "After" is after its
 *		answer: a publication stamped between the request and the answer
 *		may have been written before the reset (the helper does one thing
 *		at a time, so one stamped later was written after it).  Without a helper there
 *		is nothing exact to reset.  Returns whether the sampler confirmed and
 *		the helper, where one runs, emptied its rows (helper_reset warns
 *		when it did not: the exact and kernel views would keep their totals
 *		while the sampler's reset time moved on).
 */
Datum
pg_tracer_reset_all(PG_FUNCTION_ARGS)
{
	bool		sampled = DatumGetBool(DirectFunctionCall1(pg_tracer_reset, (Datum) 0));
	bool		probes_emptied;
	bool		exact_emptied;
	bool		probes = helper_reset("PROBERESET", "its kernel and engine rows",
									  &probes_emptied);
	int64		answered_us;
	int			i;

	if (!helper_reset("EXACTRESET", "its exact counters", &exact_emptied))
		PG_RETURN_BOOL(false);
	if (!probes_emptied && !exact_emptied)
		PG_RETURN_BOOL(sampled && probes);	/* nothing emptied: nothing to wait for */
	answered_us = GetCurrentTimestamp() + EXACT_EPOCH_DIFF_US;
	for (i = 0; i < 200; i++)
	{
		PgtLink		link;
		bool		fresh;

		pgt_link_read(&link, 0);
		fresh = link.connected && link.view.hdr != NULL &&
			link.view.hdr->last_update_us > answered_us;
		pgt_link_free(&link);
		if (fresh || !link.connected)
			break;
		CHECK_FOR_INTERRUPTS();
		pg_usleep(10000);
	}
	PG_RETURN_BOOL(sampled && probes);
}
