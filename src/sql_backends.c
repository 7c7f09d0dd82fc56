/*-------------------------------------------------------------------------
 *
 * sql_backends.c
 *	  SQL function pg_tracer_backends(): the processes of this cluster the
 *	  helper tracks, joinable with pg_stat_activity on pid.
 *
 * Rows come from the helper's segment, read in the calling backend.  When
 * the helper is not connected the result is empty (pg_tracer_status says
 * why).
 *
 * Visibility follows pg_stat_activity: roles with the privileges of
 * pg_read_all_stats (and superusers) see every row; other roles see only
 * client backends whose session user they have the privileges of, looked
 * up in the server's own backend status array by pid.
 *
 * Locking: none of its own; pgstat_fetch_stat_local_beentry() takes the
 * backend status snapshot the same way pg_stat_activity does.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_authid_d.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "pg_tracer.h"

PG_FUNCTION_INFO_V1(pg_tracer_backends);

#define PGT_BACKENDS_COLS	5

static void backends_put_row(ReturnSetInfo *rsinfo,
							 const struct pgt_backend_entry *e);

/*
 * pg_tracer_backends
 *		One row per process in the segment's backends table.
 */
Datum
pg_tracer_backends(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PgtLink		link;
	PgtVisibility vis;
	uint32		n;
	uint32		i;

	n = pgt_link_srf_begin(fcinfo, &link, PGT_SEC_BACKENDS, &vis);
	for (i = 0; i < n; i++)
	{
		const struct pgt_backend_entry *e = pgt_view_backend(&link.view, i);

		if (e->pid == 0 || e->pid > (uint32) PG_INT32_MAX)
			continue;
		if (!pgt_visible_pid(&vis, e->pid))
			continue;
		backends_put_row(rsinfo, e);
	}
	pgt_link_free(&link);
	return (Datum) 0;
}

/*
 * backends_put_row
 *		Append one backend; the helper's backend_type string is used as
 *		given (sanitized), falling back to the name of its role number.
 */
static void
backends_put_row(ReturnSetInfo *rsinfo, const struct pgt_backend_entry *e)
{
	Datum		values[PGT_BACKENDS_COLS];
	bool		nulls[PGT_BACKENDS_COLS];
	char		type[sizeof(e->backend_type) + 1];
	bool		valid;

	memset(nulls, false, sizeof(nulls));
	pgt_copy_string(type, sizeof(type), e->backend_type,
					sizeof(e->backend_type));
	if (type[0] == '\0')
		strlcpy(type, pgt_role_name(e->role), sizeof(type));

	values[0] = Int32GetDatum((int32) e->pid);
	values[1] = CStringGetTextDatum(type);
	values[2] = TimestampTzGetDatum(pgt_unix_us_to_timestamptz(e->attached_us,
															   &valid));
	nulls[2] = !valid;
	values[3] = TimestampTzGetDatum(pgt_unix_us_to_timestamptz(e->started_us,
															   &valid));
	nulls[3] = !valid;
	values[4] = Int64GetDatum(pgt_uint64_to_int64(e->syscalls));
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}
