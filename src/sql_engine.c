/*-------------------------------------------------------------------------
 *
 * sql_engine.c
 *	  SQL functions of the engine probes: pg_tracer_engine_events(),
 *	  pg_tracer_engine_histogram(probe) and pg_tracer_engine_stream()
 *	  (slow statements with their text, checkpoints).
 *
 * Rows come from the helper's segment (tables PGT_SEC_ENGINE_*), read in
 * the calling backend and validated by pgt_segment_validate(); strings are
 * copied with pgt_copy_segment_text() (UTF-8 kept where the database
 * takes it).  Without a helper the results are empty (pg_tracer_probes
 * says why).
 *
 * Visibility follows pg_stat_activity: pg_read_all_stats (and superusers)
 * see every row; other roles see rows of client backends whose session
 * user they have the privileges of.
 *
 * Locking: none of its own; pgstat_fetch_stat_local_beentry() takes the
 * backend status snapshot the same way pg_stat_activity does.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "funcapi.h"
#include "miscadmin.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "pg_tracer.h"

PG_FUNCTION_INFO_V1(pg_tracer_engine_events);
PG_FUNCTION_INFO_V1(pg_tracer_engine_histogram);
PG_FUNCTION_INFO_V1(pg_tracer_engine_stream);

#define ENGINE_EVENTS_COLS	16
#define ENGINE_HIST_COLS	3
#define ENGINE_STREAM_COLS	9

/* Probe ids of bpf/engine.h, as the helper names them. */
static const char *const engine_probes[] = {
	NULL, "query", "lock-wait", "lwlock-wait", "wal-insert", "wal-flush",
	"buffer-read", "buffer-flush", "checkpoint", "xact-commit", "xact-abort",
	"deadlock", "sort", "lock-hold", "lwlock-hold", "query-error"
};
static const char *const engine_probe_sets[] = {
	NULL, "pg-query", "pg-locks", "pg-lwlock", "pg-wal", "pg-wal",
	"pg-buffer", "pg-buffer", "pg-checkpoint", "pg-usdt", "pg-usdt",
	"pg-usdt", "pg-usdt", "pg-lock-hold", "pg-lwlock-hold", "pg-query"
};
#define ENGINE_NPROBES	lengthof(engine_probes)
StaticAssertDecl(lengthof(engine_probe_sets) == ENGINE_NPROBES,
				 "every engine probe has its set");

/*
 * probe_text
 *		The probe's name from its id (the helper's name is not trusted
 *		beyond a known id).
 */
static const char *
probe_text(uint32 probe)
{
	return probe > 0 && probe < ENGINE_NPROBES ? engine_probes[probe] : "unknown";
}

/*
 * lock_object_kept
 *		Does the helper keep the object of a lock of this type?  Only for
 *		objects of the database; rows of a transaction's own lock (xid,
 *		virtual xid, speculative token) and of advisory and user locks add up
 *		by type and mode (ENG_LOCK_OBJECT_BOUNDED, bpf/engine.h).
 */
static bool
lock_object_kept(const char *type)
{
	static const char *const kept[] = {"relation", "extend", "frozenid", "page", "tuple",
	"object"};
	int			i;

	for (i = 0; i < lengthof(kept); i++)
		if (strcmp(type, kept[i]) == 0)
			return true;
	return false;
}

/*
 * pg_tracer_engine_events
 *		One row per (pid, query id, probe, lock/tranche) aggregate.
 */
Datum
pg_tracer_engine_events(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PgtLink		link;
	PgtVisibility vis;
	uint32		n;
	uint32		i;

	n = pgt_link_srf_begin(fcinfo, &link, PGT_SEC_ENGINE_EVENTS, &vis);
	for (i = 0; i < n; i++)
	{
		const struct pgt_engine_event_entry *e =
			pgt_view_row(&link.view, PGT_SEC_ENGINE_EVENTS, i);
		Datum		values[ENGINE_EVENTS_COLS];
		bool		nulls[ENGINE_EVENTS_COLS];
		char		what[sizeof(e->what) + 1];
		bool		is_lock;

		if (e->pid == 0 || !pgt_visible_pid(&vis, e->pid) || e->probe == 0 || e->probe >= ENGINE_NPROBES)
			continue;
		memset(nulls, false, sizeof(nulls));
		pgt_copy_segment_text(what, sizeof(what), e->what, sizeof(e->what));
		is_lock = strcmp(engine_probes[e->probe], "lock-wait") == 0 ||
			strcmp(engine_probes[e->probe], "lock-hold") == 0;
		values[0] = pgt_pid_datum(e->pid, &nulls[0]);
		values[1] = Int64GetDatum((int64) e->queryid);
		values[2] = CStringGetTextDatum(engine_probe_sets[e->probe]);
		values[3] = CStringGetTextDatum(probe_text(e->probe));
		values[4] = CStringGetTextDatum(what);
		nulls[4] = what[0] == '\0';
		values[5] = Int64GetDatum(pgt_uint64_to_int64(e->calls));
		values[6] = Float8GetDatum((double) e->total_ns / 1e6);
		values[7] = Float8GetDatum((double) e->max_ns / 1e3);
		values[8] = Int64GetDatum(pgt_uint64_to_int64(e->counter[0]));
		values[9] = Int64GetDatum(pgt_uint64_to_int64(e->counter[1]));
		values[10] = Int64GetDatum(pgt_uint64_to_int64(e->counter[2]));
		if (is_lock)
		{
			/* "relation AccessExclusiveLock": type, then mode */
			char	   *sp = strchr(what, ' ');

			if (sp != NULL)
				*sp = '\0';
			values[11] = CStringGetTextDatum(what);
			values[12] = CStringGetTextDatum(sp != NULL ? sp + 1 : "");
			values[13] = Int64GetDatum((int64) e->obj[0]);
			values[14] = Int64GetDatum((int64) e->obj[1]);
			values[15] = Int64GetDatum((int64) e->obj[2]);
			if (!lock_object_kept(what))
				nulls[13] = nulls[14] = nulls[15] = true;
		}
		else
			nulls[11] = nulls[12] = nulls[13] = nulls[14] = nulls[15] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	pgt_link_free(&link);
	return (Datum) 0;
}

/*
 * pg_tracer_engine_histogram
 *		The log2 histogram of one probe: slot 0 is [0, 1) us, slot i is
 *		[2^(i-1), 2^i) us, the last one [2^(i-1), inf) (bucket_hi_us NULL).
 *		Empty buckets are left out.
 */
Datum
pg_tracer_engine_histogram(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *probe = text_to_cstring(PG_GETARG_TEXT_PP(0));
	PgtLink		link;
	uint32		id = 0;
	uint32		i;

	pgt_require_preload();
	for (i = 1; i < ENGINE_NPROBES; i++)
		if (strcmp(engine_probes[i], probe) == 0)
			id = i;
	if (id == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown engine probe \"%s\"", probe),
				 errhint("Use one of: query, query-error, lock-wait, lwlock-wait, wal-flush, "
						 "buffer-read, buffer-flush, checkpoint, lock-hold, lwlock-hold.")));
	pgt_require_cluster_wide("pg_tracer_engine_histogram");
	InitMaterializedSRF(fcinfo, 0);
	pgt_link_read(&link, PGT_SEG_TABLE(PGT_SEC_ENGINE_HIST));
	if (!link.connected)
	{
		pgt_link_free(&link);	/* a stale or stopped segment was copied */
		return (Datum) 0;
	}
	for (i = 0; i < pgt_view_count(&link.view, PGT_SEC_ENGINE_HIST); i++)
	{
		const struct pgt_engine_hist_entry *h =
			pgt_view_row(&link.view, PGT_SEC_ENGINE_HIST, i);
		uint32		s;

		if (h->probe != id)
			continue;
		for (s = 0; s < PGT_ENGINE_HIST_SLOTS && s < h->nslots; s++)
		{
			Datum		values[ENGINE_HIST_COLS];
			bool		nulls[ENGINE_HIST_COLS] = {false, false, false};

			if (h->slots[s] == 0)
				continue;
			values[0] = Float8GetDatum(s == 0 ? 0.0 : ldexp(1.0, (int) s - 1));
			values[1] = Float8GetDatum(ldexp(1.0, (int) s));
			nulls[1] = s == PGT_ENGINE_HIST_SLOTS - 1;	/* the BPF side's top slot takes the rest */
			values[2] = Int64GetDatum(pgt_uint64_to_int64(h->slots[s]));
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
		break;
	}
	pgt_link_free(&link);
	return (Datum) 0;
}

/*
 * pg_tracer_engine_stream
 *		The latest slow statements (with their text) and checkpoints.
 */
Datum
pg_tracer_engine_stream(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PgtLink		link;
	PgtVisibility vis;
	uint32		n;
	uint32		i;

	n = pgt_link_srf_begin(fcinfo, &link, PGT_SEC_ENGINE_STREAM, &vis);
	for (i = 0; i < n; i++)
	{
		const struct pgt_engine_stream_entry *s =
			pgt_view_row(&link.view, PGT_SEC_ENGINE_STREAM, i);
		Datum		values[ENGINE_STREAM_COLS];
		bool		nulls[ENGINE_STREAM_COLS];
		char		text[sizeof(s->text) + 1];
		TimestampTz end;
		bool		valid;

		if (s->probe == 0 || s->probe >= ENGINE_NPROBES)
			continue;
		/*
		 * checkpoints are server-wide: privileged; statements: visibility,
		 * and only those of the process that holds the pid now
		 */
		end = pgt_unix_us_to_timestamptz(s->end_us, &valid);
		if (s->pid == 0 || !pgt_visible_pid_at(&vis, s->pid, end, valid))
			continue;
		memset(nulls, false, sizeof(nulls));
		pgt_copy_segment_text(text, sizeof(text), s->text, sizeof(s->text));
		values[0] = TimestampTzGetDatum(end);
		nulls[0] = !valid;
		values[1] = pgt_pid_datum(s->pid, &nulls[1]);	/* NULL: exited */
		values[2] = Int64GetDatum((int64) s->queryid);
		values[3] = CStringGetTextDatum(probe_text(s->probe));
		values[4] = Float8GetDatum((double) s->dur_ns / 1e6);
		values[5] = Int64GetDatum(pgt_uint64_to_int64(s->counter[0]));
		values[6] = Int64GetDatum(pgt_uint64_to_int64(s->counter[1]));
		values[7] = Int64GetDatum(pgt_uint64_to_int64(s->counter[2]));
		values[8] = CStringGetTextDatum(text);
		nulls[8] = text[0] == '\0';
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	pgt_link_free(&link);
	return (Datum) 0;
}
