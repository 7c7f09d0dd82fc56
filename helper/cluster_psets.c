/*
 * helper/cluster_psets.c
 *	  The daemon's probe sets, per served cluster: once a second the
 *	  query-id slots of the cluster's processes are refreshed from its
 *	  layout file, and each publication adds the sets' status rows and
 *	  their table rows (only this cluster's processes, pids as PostgreSQL
 *	  sees them).  Single-threaded (the daemon's loop).
 */
#include "cluster_psets.h"

#include "escalation.h"
#include "log.h"
#include "pid_retire.h"

#include <stdlib.h>
#include <string.h>

/* Rows of one publication; reused (seg_writer_publish copies them). */
static pset_pub pub;

/*
 * nspid_of
 *		pset_pub callback: host pid -> the pid the cluster knows.  A process
 *		that has exited keeps the one noted as it left (pid_retire_nspid).
 *		Never the pid of a process the rows may not be of: a new process on
 *		a pid whose earlier process's rows are not folded yet, or the host
 *		pid of a cluster in another pid namespace (there it may be a live
 *		backend's).  Another role's backend would see those rows as its
 *		own; they show as exited instead.
 */
static uint32_t
nspid_of(void *arg, uint32_t pid)
{
	const cluster *c = arg;
	const cluster_proc *p = cluster_find_proc(c, pid);
	uint32_t	nspid;

	if (p != NULL && pid_retire_rows_of_other(pid, p->attached_ns))
		return PGT_PID_EXITED;
	if (p != NULL && p->nspid)
		return p->nspid;
	if ((nspid = pid_retire_nspid(pid)) != 0)
		return nspid;
	return c->pm.nspid == c->pm.pid ? pid : PGT_PID_EXITED;
}

/*
 * role_of
 *		pset_pub callback: the role of a host pid, of this cluster's running
 *		processes, else as noted while it ran or when it exited
 *		(pid_retire_role); 0 when not known.
 */
static uint32_t
role_of(void *arg, uint32_t pid)
{
	const cluster_proc *p = cluster_find_proc(arg, pid);

	if (p != NULL && p->role != PGT_ROLE_UNKNOWN)
		return p->role;
	return pid_retire_role(pid);
}

/*
 * cluster_psets_tick
 *		Point every process's query-id slot at its PgBackendStatus.
 */
void
cluster_psets_tick(cluster *c)
{
	pset_runtime *rt = c->env->psets;
	uint32_t   *pids;
	uint32_t   *nspids;
	size_t		i;

	if (rt == NULL || rt->ninsts == 0 || !c->attached || !c->layout_loaded)
		return;
	pids = calloc(c->nprocs + 1, sizeof(*pids));
	nspids = calloc(c->nprocs + 1, sizeof(*nspids));
	if (pids != NULL && nspids != NULL)
	{
		for (i = 0; i < c->nprocs; i++)
		{
			pids[i] = c->procs[i].pid;
			nspids[i] = c->procs[i].nspid ? c->procs[i].nspid : c->procs[i].pid;
		}
		if (pset_qid_refresh(rt, c->pm.pid, &c->layout, pids, nspids, c->nprocs) < 0)
			log_debug("%s: query-id slots: %s", c->data_dir, rt->qid_reason);
	}
	free(pids);
	free(nspids);
}

/*
 * cluster_psets_rows
 *		The probe sets' pg_tracer_probes rows.
 */
size_t
cluster_psets_rows(cluster *c, struct pgt_probeset_entry *out, size_t max)
{
	if (c->env->psets == NULL)
		return 0;
	return pset_runtime_status_rows(c->env->psets, out, max);
}

/*
 * cluster_psets_publish
 *		Add the probe sets' table rows of this cluster to p.
 */
void
cluster_psets_publish(cluster *c, seg_publish *p)
{
	pset_runtime *rt = c->env->psets;
	uint32_t	k;

	if (rt == NULL || rt->ninsts == 0 || !c->attached)
		return;
	pub.postmaster = (uint32_t) c->pm.pid;
	pub.cluster_dev = c->dev;
	pub.cluster_ino = c->ino;
	pub.nspid = nspid_of;
	pub.role = role_of;
	pub.nspid_arg = c;
	pset_runtime_publish(rt, &pub);
	for (k = 0; k < PGT_SEC_KIND_MAX; k++)
		if (pub.tables[k].count > 0 && p->tables[k].rows == NULL)
			p->tables[k] = (seg_rows) {pub.tables[k].rows, pub.tables[k].count};
}

/*
 * cluster_psets_reset
 *		PROBERESET (pg_tracer_reset()): the running sets drop this cluster's
 *		rows and copy their aggregates again, so that the next publication
 *		counts from now.  Other clusters' rows stay, and so do the kernel's
 *		own (pid 0, shown to every cluster) unless this is the one cluster
 *		served.
 */
size_t
cluster_psets_reset(void *arg, int *nsets)
{
	cluster    *c = arg;
	pset_runtime *rt = c->env->psets;

	*nsets = 0;
	if (rt == NULL || rt->ninsts == 0 || !c->attached)
		return 0;
	return pset_runtime_reset(rt, (uint32_t) c->pm.pid, c->env->nclusters <= 1, nsets);
}

/*
 * cluster_psets_forget
 *		The cluster no longer runs the postmaster whose host pid is pm (it
 *		exited, or another owns the data directory): the running sets drop
 *		pm's rows, and the exact set its aggregates, which no publication
 *		shows again (a publication takes the rows of the current
 *		postmaster), and its claims on an escalation window end.  Without
 *		this each restart of a cluster would leave its rows in the maps
 *		for the daemon's life, until the maps were full.
 */
void
cluster_psets_forget(cluster *c, uint32_t pm)
{
	pset_runtime *rt = c->env->psets;
	size_t		rows = 0;
	int			nsets = 0;

	if (pm == 0)
		return;
	if (rt != NULL && rt->ninsts > 0)
		rows = pset_runtime_reset(rt, pm, 0, &nsets);
	escalation_party_gone((esc_party) {c->dev, c->ino}, pm, escalation_now_us());
	log_debug("%s: %zu rows of postmaster %u dropped by %d sets", c->data_dir, rows,
			  pm, nsets);
}
