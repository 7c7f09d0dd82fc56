/*-------------------------------------------------------------------------
 *
 * visibility.c
 *	  Which processes' rows a caller may see: pg_stat_activity's rule,
 *	  shared by every view that shows per-backend or per-query detail.
 *
 * Superusers and members of pg_read_all_stats see every row, and alone the
 * figures summed over the whole cluster (pgt_require_cluster_wide); any other role
 * sees the processes of roles it has the privileges of that pg_stat_activity
 * shows it in detail (client backends, WAL senders, background workers:
 * a parallel query's workers carry their leader's role), as the sampled
 * views do (pgt_ash_role_visible_type), nothing else.
 * The list is taken once per call from the backend's local snapshot of the
 * backend status array (pgstat_fetch_stat_local_beentry), so it is as
 * consistent as pg_stat_activity's own view within a transaction.
 *
 * A pid is not a process: once a backend exits, the kernel may give its pid
 * to a later backend of another role.  So each visible pid keeps its
 * backend's start time, and a row that carries a time (a slow statement's
 * end) shows only when it is not older than the process now holding the pid
 * (pgt_visible_pid_at).  Aggregate rows carry no time: the helper folds an
 * exited process's rows away from its pid (helper/pid_retire.c), at once
 * when it sees the pid taken by a new process.  Until it has seen that,
 * the rows under the pid are the earlier process's; so a pid is visible
 * only while the segment's own list of the cluster's processes, published
 * with those rows, names the same process (its start time) as the
 * snapshot does.  That also covers a snapshot older than the segment (it
 * lasts the transaction, the segment is read at each call).
 *
 * Locking: none; the snapshot is backend-local memory.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>
#include <stdlib.h>

#include "catalog/pg_authid.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/backend_status.h"

#include "ash.h"
#include "pg_tracer.h"

/*
 * pgt_require_cluster_wide
 *		Figures of the whole cluster that cannot be narrowed to the caller's
 *		own sessions (the histograms summed over every process) are for
 *		roles that see every session: anyone else gets an error, not an
 *		empty result that reads as "no data".
 */
void
pgt_require_cluster_wide(const char *function)
{
	if (has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied for %s", function),
			 errdetail("It sums every session of the cluster, and this role sees only its own."),
			 errhint("Grant pg_read_all_stats (or pg_monitor) to the role; the per-session views show its own sessions.")));
}

/*
 * cmp_visible_pid
 *		qsort/bsearch comparator of PgtVisiblePid by pid.
 */
static int
cmp_visible_pid(const void *a, const void *b)
{
	int32		x = ((const PgtVisiblePid *) a)->pid;
	int32		y = ((const PgtVisiblePid *) b)->pid;

	return (x > y) - (x < y);
}

/*
 * The most a backend's start time in PostgreSQL (st_proc_start_timestamp,
 * taken just after fork) and in the helper's list (the kernel's, in clock
 * ticks) differ by for one process: 0.5-10 ms measured (20 backends
 * starting at once; the tick truncates the kernel's), the rest slack for
 * a child scheduled late on a loaded host.  It is also the shortest life
 * of a process whose pid another one may take without showing it the
 * first one's rows: 2 s was too long (t/005, on a fast host, steered a
 * new backend onto the pid of one that had lived 1.5 s, and the new one
 * saw the other's rows until the helper noticed the exit).
 */
#define PGT_SAME_START_US	250000

/*
 * listed_as
 *		Does the segment's process list (PGT_SEC_BACKENDS of view) name pid
 *		with a start time that is the snapshot's `started`?
 */
static bool
listed_as(const pgt_seg_view *view, int32 pid, TimestampTz started)
{
	uint32		n = pgt_view_count(view, PGT_SEC_BACKENDS);
	uint32		i;

	for (i = 0; i < n; i++)
	{
		const struct pgt_backend_entry *b = pgt_view_backend(view, i);
		bool		valid;
		TimestampTz t;

		if (b->pid != (uint32) pid)
			continue;
		t = pgt_unix_us_to_timestamptz(b->started_us, &valid);
		return valid && t - started <= PGT_SAME_START_US && started - t <= PGT_SAME_START_US;
	}
	return false;
}

/*
 * pgt_visibility_init
 *		Decide what the current role may see; when it may not see
 *		everything, collect the pids of the processes it may see
 *		(and the segment in view lists as the same processes), sorted for
 *		pgt_visible_pid.
 */
void
pgt_visibility_init(PgtVisibility *vis, const pgt_seg_view *view)
{
	int			nbackends;
	int			beid;

	vis->see_all = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);
	vis->pids = NULL;
	vis->n = 0;
	if (vis->see_all)
		return;
	nbackends = pgstat_fetch_stat_numbackends();
	vis->pids = palloc(sizeof(PgtVisiblePid) * Max(nbackends, 1));
	for (beid = 1; beid <= nbackends; beid++)
	{
		LocalPgBackendStatus *local = pgstat_fetch_stat_local_beentry(beid);
		PgBackendStatus *be;

		if (local == NULL)
			continue;
		be = &local->backendStatus;
		if (pgt_ash_role_visible_type(be->st_backendType) && be->st_procpid > 0 &&
			has_privs_of_role(GetUserId(), be->st_userid) &&
			listed_as(view, be->st_procpid, be->st_proc_start_timestamp))
		{
			vis->pids[vis->n].pid = be->st_procpid;
			vis->pids[vis->n].started = be->st_proc_start_timestamp;
			vis->n++;
		}
	}
	qsort(vis->pids, vis->n, sizeof(PgtVisiblePid), cmp_visible_pid);
}

/*
 * find_pid
 *		The visible backend holding pid, or NULL (the caller does not see
 *		everything).
 */
static const PgtVisiblePid *
find_pid(const PgtVisibility *vis, uint32 pid)
{
	PgtVisiblePid key;

	if (pid == 0 || pid > (uint32) PG_INT32_MAX || pid == PGT_PID_EXITED || vis->n == 0)
		return NULL;
	key.pid = (int32) pid;
	return bsearch(&key, vis->pids, vis->n, sizeof(PgtVisiblePid), cmp_visible_pid);
}

/*
 * pgt_visible_pid
 *		May the caller see rows of pid?  pid 0 stands for work of no
 *		backend (kernel writeback, say) and PGT_PID_EXITED for processes
 *		that have exited (their folded rows): only roles that see everything
 *		do.  A pid from the helper beyond int32 is never valid.
 */
bool
pgt_visible_pid(const PgtVisibility *vis, uint32 pid)
{
	if (pid > (uint32) PG_INT32_MAX)
		return false;
	if (vis->see_all)
		return true;
	return find_pid(vis, pid) != NULL;
}

/*
 * pgt_visible_pid_at
 *		pgt_visible_pid for a row of pid that happened at `when` (the helper's
 *		time, valid as pgt_unix_us_to_timestamptz says): for a caller that
 *		does not see everything, only when the backend now holding pid had
 *		started by then.  A row without a valid time is not shown to it.
 */
bool
pgt_visible_pid_at(const PgtVisibility *vis, uint32 pid, TimestampTz when, bool when_valid)
{
	const PgtVisiblePid *v;

	if (pid > (uint32) PG_INT32_MAX)
		return false;
	if (vis->see_all)
		return true;
	v = find_pid(vis, pid);
	return v != NULL && when_valid && when >= v->started;
}

/*
 * replace_all
 *		text with every occurrence of path spelled "$PGDATA" (palloc'd, or
 *		text itself when there is none).
 */
static const char *
replace_all(const char *text, const char *path)
{
	StringInfoData out;
	const char *p = text;
	const char *hit;
	size_t		len = strlen(path);

	if (len == 0 || strstr(text, path) == NULL)
		return text;
	initStringInfo(&out);
	while ((hit = strstr(p, path)) != NULL)
	{
		appendBinaryStringInfo(&out, p, (int) (hit - p));
		appendStringInfoString(&out, "$PGDATA");
		p = hit + len;
	}
	appendStringInfoString(&out, p);
	return out.data;
}

/*
 * pgt_hide_data_dir
 *		text as the current role may read it: with the data directory's path
 *		spelled "$PGDATA" unless the role may read data_directory itself
 *		(pg_read_all_settings, as for the setting).  A hint or a status
 *		message must not tell other roles where the cluster lives.  Both
 *		spellings: the setting's, and the path with its symbolic links
 *		resolved, which is how the helper finds the directory.
 */
const char *
pgt_hide_data_dir(const char *text)
{
	static char *resolved = NULL;
	static bool resolved_tried = false;
	const char *out;

	if (DataDir == NULL || DataDir[0] == '\0' ||
		has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_SETTINGS))
		return text;
	if (!resolved_tried)
	{
		char	   *r = realpath(DataDir, NULL);	/* malloc'd, kept */

		resolved = r;
		resolved_tried = true;
	}
	/* the longer spelling first, should one contain the other */
	if (resolved != NULL && strlen(resolved) > strlen(DataDir))
		return replace_all(replace_all(text, resolved), DataDir);
	out = replace_all(text, DataDir);
	return resolved != NULL ? replace_all(out, resolved) : out;
}

/*
 * pgt_pid_datum
 *		A helper pid as the views show it: PGT_PID_EXITED (the folded rows
 *		of processes that have exited) is NULL.
 */
Datum
pgt_pid_datum(uint32 pid, bool *isnull)
{
	*isnull = pid == PGT_PID_EXITED;
	return Int32GetDatum(*isnull ? 0 : (int32) pid);
}
