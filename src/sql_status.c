/*-------------------------------------------------------------------------
 *
 * sql_status.c
 *	  SQL functions pg_tracer_status() and pg_tracer_probes(): is the
 *	  helper connected, what does it run, and why not.
 *
 * Both read the helper's segment directly in the calling backend
 * (helper_link.c), so they are as fresh as the segment itself and do not
 * depend on the background worker's last iteration.  Neither ever fails
 * because of the segment's content: an unreadable, damaged, stale or
 * foreign segment is reported in segment_state/reason.
 *
 * File paths (they reveal the data directory) are shown only to roles
 * with the privileges of pg_read_all_settings, as data_directory is.
 *
 * Locking: the shared area is copied out with pgt_shared_copy().
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_authid_d.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "pg_tracer.h"

PG_FUNCTION_INFO_V1(pg_tracer_status);
PG_FUNCTION_INFO_V1(pg_tracer_probes);

#define PGT_STATUS_COLS		13
#define PGT_PROBES_COLS		5

static void status_fill_segment(const PgtLink *link, Datum *values,
								bool *nulls);
static void status_fill_files(const PgtLink *link, Datum *values,
							  bool *nulls);
static void probes_put_rows(ReturnSetInfo *rsinfo, const PgtLink *link);
static void probes_put_one(ReturnSetInfo *rsinfo, const char *name,
						   const char *state, const char *mechanism,
						   bool has_events, uint64 events,
						   const char *reason);

/*
 * pg_tracer_status
 *		One row: the helper's connection as seen from this backend now.
 */
Datum
pg_tracer_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		values[PGT_STATUS_COLS];
	bool		nulls[PGT_STATUS_COLS];
	PgtLink		link;

	pgt_require_preload();
	InitMaterializedSRF(fcinfo, 0);

	memset(values, 0, sizeof(values));
	memset(nulls, true, sizeof(nulls));
	pgt_link_read(&link, 0);

	values[0] = BoolGetDatum(link.connected);
	nulls[0] = false;
	status_fill_segment(&link, values, nulls);
	values[7] = CStringGetTextDatum(link.state);
	nulls[7] = false;
	if (link.reason[0] != '\0')
	{
		values[8] = CStringGetTextDatum(link.reason);
		nulls[8] = false;
	}
	status_fill_files(&link, values, nulls);

	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	pgt_link_free(&link);
	return (Datum) 0;
}

/*
 * status_fill_segment
 *		Columns 1..6 from a segment that validated (even when it is stale,
 *		stopped or foreign: what it says is still worth showing).
 */
static void
status_fill_segment(const PgtLink *link, Datum *values, bool *nulls)
{
	const struct pgt_seg_header *h = link->view.hdr;
	char		version[PGT_VERSION_LEN];
	TimestampTz ts;
	bool		valid;

	if (h == NULL)
		return;

	if (h->writer_pid <= (uint32) PG_INT32_MAX)
	{
		values[1] = Int32GetDatum((int32) h->writer_pid);
		nulls[1] = false;
	}
	pgt_copy_string(version, sizeof(version), h->helper_version,
					sizeof(h->helper_version));
	values[2] = CStringGetTextDatum(version);
	nulls[2] = false;
	values[3] = Int64GetDatum(pgt_uint64_to_int64(h->generation));
	nulls[3] = false;
	ts = pgt_unix_us_to_timestamptz(h->attached_us, &valid);
	values[4] = TimestampTzGetDatum(ts);
	nulls[4] = !valid;
	ts = pgt_unix_us_to_timestamptz(h->last_update_us, &valid);
	values[5] = TimestampTzGetDatum(ts);
	nulls[5] = !valid;
	if (h->postmaster_pid != 0 && h->postmaster_pid <= (uint32) PG_INT32_MAX)
	{
		values[6] = Int32GetDatum((int32) h->postmaster_pid);
		nulls[6] = false;
	}
}

/*
 * status_fill_files
 *		Columns 10..13: the segment and layout files and whether the
 *		background worker wrote the layout.
 */
static void
status_fill_files(const PgtLink *link, Datum *values, bool *nulls)
{
	PgtSharedState shared;
	char		layout[MAXPGPATH];

	pgt_shared_copy(&shared);
	if (has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_SETTINGS))
	{
		pgt_layout_path(layout, sizeof(layout));
		if (link->path[0] != '\0')
		{
			values[9] = CStringGetTextDatum(link->path);
			nulls[9] = false;
		}
		values[10] = CStringGetTextDatum(layout);
		nulls[10] = false;
	}
	values[11] = BoolGetDatum(shared.layout_written);
	nulls[11] = false;
	if (!shared.layout_written)
	{
		values[12] = CStringGetTextDatum(pgt_hide_data_dir(shared.layout_error));
		nulls[12] = false;
	}
}

/*
 * pg_tracer_probes
 *		One row per probe set the helper reports; when the helper is not
 *		connected, a single row saying so (the view is never silently
 *		empty).
 */
Datum
pg_tracer_probes(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PgtLink		link;

	pgt_require_preload();
	InitMaterializedSRF(fcinfo, 0);

	pgt_link_read(&link, PGT_SEG_TABLE(PGT_SEC_PROBESETS));
	probes_put_rows(rsinfo, &link);
	pgt_link_free(&link);
	return (Datum) 0;
}

/*
 * probes_put_rows
 *		The segment's probe sets, or the one explanatory "helper" row.
 */
static void
probes_put_rows(ReturnSetInfo *rsinfo, const PgtLink *link)
{
	const pgt_seg_view *v = &link->view;
	uint32		i;

	if (!link->connected)
	{
		char		reason[PGT_REASON_LEN + 64];

		snprintf(reason, sizeof(reason), "helper not connected (%s): %s",
				 link->state, link->reason);
		probes_put_one(rsinfo, "helper", "unavailable", "none", false, 0, reason);
		return;
	}
	if (pgt_view_count(v, PGT_SEC_PROBESETS) == 0)
	{
		probes_put_one(rsinfo, "helper", "degraded", "none", false, 0,
					   "the helper is connected but reports no probe sets");
		return;
	}
	for (i = 0; i < pgt_view_count(v, PGT_SEC_PROBESETS); i++)
	{
		const struct pgt_probeset_entry *e = pgt_view_probeset(v, i);
		char		name[sizeof(e->name) + 1];
		char		mechanism[sizeof(e->mechanism) + 1];
		char		reason[sizeof(e->reason) + 1];

		pgt_copy_string(name, sizeof(name), e->name, sizeof(e->name));
		pgt_copy_string(mechanism, sizeof(mechanism), e->mechanism,
						sizeof(e->mechanism));
		pgt_copy_string(reason, sizeof(reason), e->reason, sizeof(e->reason));
		/* the helper's reasons may name the data directory (layout file) */
		probes_put_one(rsinfo, name, pgt_probe_state_name(e->state),
					   mechanism, true, e->events, pgt_hide_data_dir(reason));
	}
}

/*
 * probes_put_one
 *		Append one row; empty strings become NULL.
 */
static void
probes_put_one(ReturnSetInfo *rsinfo, const char *name, const char *state,
			   const char *mechanism, bool has_events, uint64 events,
			   const char *reason)
{
	Datum		values[PGT_PROBES_COLS];
	bool		nulls[PGT_PROBES_COLS];

	memset(nulls, false, sizeof(nulls));
	values[0] = CStringGetTextDatum(name);
	values[1] = CStringGetTextDatum(state);
	values[2] = CStringGetTextDatum(mechanism);
	nulls[2] = (mechanism[0] == '\0');
	values[3] = Int64GetDatum(pgt_uint64_to_int64(events));
	nulls[3] = !has_events;
	values[4] = CStringGetTextDatum(reason);
	nulls[4] = (reason[0] == '\0');
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}
