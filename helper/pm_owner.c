/*
 * helper/pm_owner.c
 *	  The owner of each served cluster, by its postmaster's host pid.
 *
 * The helper reads the memory of a cluster's processes (the postmaster's
 * shared memory, a backend's wait event) only where the process belongs to
 * the cluster's owner (procfs_plain_process): a pid another user's process
 * took, after the cluster's process exited and before the helper noticed,
 * is not read for the cluster.  Readers that know only a postmaster pid
 * (the exact set, the tranche names) learn the owner here.  An entry is
 * made when a cluster is attached (discovery checked that the postmaster
 * runs as the owner of its data directory) and dropped when it is
 * detached; a postmaster without one is read for nobody.
 *
 * Single-threaded: the daemon's loop, or pg-tracer trace's.
 */
#include "pm_owner.h"

#include <stdlib.h>

typedef struct pm_owner
{
	uint32_t	pm;
	uid_t		uid;
} pm_owner;

static pm_owner *owners;
static size_t nowners;
static size_t capacity;

/*
 * find
 *		The entry of postmaster pm, or NULL.
 */
static pm_owner *
find(uint32_t pm)
{
	for (size_t i = 0; i < nowners; i++)
		if (owners[i].pm == pm)
			return &owners[i];
	return NULL;
}

/*
 * pm_owner_set
 *		Postmaster pm's cluster belongs to uid.  0, or -1 out of memory.
 */
int
pm_owner_set(uint32_t pm, uid_t uid)
{
	pm_owner   *e = find(pm);

	if (e == NULL && nowners == capacity)
	{
		size_t		ncap = capacity ? capacity * 2 : 8;
		pm_owner   *grown = realloc(owners, ncap * sizeof(*owners));

		if (grown == NULL)
			return -1;
		owners = grown;
		capacity = ncap;
	}
	if (e == NULL)
		e = &owners[nowners++];
	e->pm = pm;
	e->uid = uid;
	return 0;
}

/*
 * pm_owner_forget
 *		Postmaster pm is no longer served.
 */
void
pm_owner_forget(uint32_t pm)
{
	pm_owner   *e = find(pm);

	if (e != NULL)
		*e = owners[--nowners];
}

/*
 * pm_owner_get
 *		The owner of postmaster pm's cluster into *uid; false when pm is not
 *		served.
 */
bool
pm_owner_get(uint32_t pm, uid_t *uid)
{
	const pm_owner *e = pm != 0 ? find(pm) : NULL;

	if (e == NULL)
		return false;
	*uid = e->uid;
	return true;
}
