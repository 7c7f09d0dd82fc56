/*-------------------------------------------------------------------------
 *
 * visibility.c
 *	  Which processes' rows a caller may see: pg_stat_activity's rule,
 *	  shared by every view that shows per-backend or per-query detail.
 *
 * Superusers and members of pg_read_all_stats see every row; any other role
 * sees the client backends of roles it has the privileges of, nothing else.
 * The list is taken once per call from the backend's local snapshot of the
 * backend status array (pgstat_fetch_stat_local_beentry), so it is as
 * consistent as pg_stat_activity's own view within a transaction.
 *
 * Locking: none; the snapshot is backend-local memory.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/backend_status.h"

#include "pg_tracer.h"

/*
 * cmp_int32
 *		qsort/bsearch comparator.
 */
static int
cmp_int32(const void *a, const void *b)
{
	int32		x = *(const int32 *) a;
	int32		y = *(const int32 *) b;

	return (x > y) - (x < y);
}

/*
 * pgt_visibility_init
 *		Decide what the current role may see; when it may not see
 *		everything, collect the pids of the client backends it may see,
 *		sorted for pgt_visible_pid.
 */
void
pgt_visibility_init(PgtVisibility *vis)
{
	int			nbackends;
	int			beid;

	vis->see_all = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);
	vis->pids = NULL;
	vis->n = 0;
	if (vis->see_all)
		return;
	nbackends = pgstat_fetch_stat_numbackends();
	vis->pids = palloc(sizeof(int32) * Max(nbackends, 1));
	for (beid = 1; beid <= nbackends; beid++)
	{
		LocalPgBackendStatus *local = pgstat_fetch_stat_local_beentry(beid);
		PgBackendStatus *be;

		if (local == NULL)
			continue;
		be = &local->backendStatus;
		if (be->st_backendType == B_BACKEND && be->st_procpid > 0 &&
			has_privs_of_role(GetUserId(), be->st_userid))
			vis->pids[vis->n++] = be->st_procpid;
	}
	qsort(vis->pids, vis->n, sizeof(int32), cmp_int32);
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
	int32		p;

	if (pid > (uint32) PG_INT32_MAX)
		return false;
	if (vis->see_all)
		return true;
	p = (int32) pid;
	return p != 0 && pid != PGT_PID_EXITED && vis->n > 0 &&
		bsearch(&p, vis->pids, vis->n, sizeof(int32), cmp_int32) != NULL;
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
