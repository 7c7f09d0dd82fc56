/*
 * helper/kernel_reset.c
 *	  pg_tracer_reset() for the kernel sets: drop one cluster's rows of a
 *	  set's aggregates, so that its kernel views count from the reset on.
 *
 * A cluster's rows are in two places (kernel_tacc.bpf.h): the rows a live
 * task keeps in its task storage, and the shared maps (kio, kproc, khist)
 * that take rows evicted from tasks, the rows of exited tasks and those of
 * other contexts.  Every row carries its postmaster (`pm`).  The tasks go
 * first, through the object's task iterator with `tacc_forget` naming the
 * postmaster, then the maps: a row a task evicts into a map between the two
 * is one from before the reset, and goes with the map's.  The kernel's own
 * rows (pm 0: writeback, shown to every cluster) go too, but only when the
 * cluster is the one the daemon serves: a reset is one cluster's, and the
 * others' views must not lose rows to it.  Nothing else is touched: a
 * call, request or off-CPU period under way counts whole when it ends, and
 * the network set's retransmit baselines stay (they are counts the kernel
 * keeps, not the view's).
 *
 * Single-threaded (the daemon's loop); the programs run on meanwhile, so
 * an update that lands as its row is dropped is lost with it.
 */
#include "kernel_set.h"

#include "log.h"
#include "map_copy.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/*
 * forget_tasks
 *		Run the object's task iterator with tacc_forget set to pm: each
 *		tracked task drops its rows of that cluster.  Its output (the rows as
 *		they were) is not wanted.
 */
static void
forget_tasks(kset *ks, uint32_t pm)
{
	uint32_t	zero = 0;
	uint32_t	none = 0;
	int			err;

	if (ks->tacc_iter == NULL || ks->tacc_forget_fd < 0)
		return;
	if (bpf_map_update_elem(ks->tacc_forget_fd, &zero, &pm, BPF_ANY) != 0)
	{
		log_warn("kernel reset: cannot name the cluster to the task iterator: %s",
				 strerror(errno));
		return;
	}
	err = tacc_read(ks->tacc_iter, &ks->tacc);
	if (err != 0)
		log_warn("kernel reset: the task iterator failed: %s", strerror(-err));
	ks->tacc.len = 0;
	if (bpf_map_update_elem(ks->tacc_forget_fd, &zero, &none, BPF_ANY) != 0)
		log_warn("kernel reset: cannot clear tacc_forget: %s", strerror(errno));
}

/* the rows of a map of ktype keys and vtype values (its `pm`) */
#define FORGET_ROWS(fd_, ktype, vtype, max_, pm_, shared_) \
	map_delete_rows_of((fd_), sizeof(ktype), sizeof(vtype), \
					   sizeof(ktype) + offsetof(vtype, pm), (max_), (pm_), (shared_))

/*
 * kset_reset
 *		See kernel_set.h.
 */
size_t
kset_reset(pset_inst *in, uint32_t pm, int shared)
{
	kset	   *ks = in->priv;
	size_t		gone;

	if (ks == NULL || pm == 0)
		return 0;
	forget_tasks(ks, pm);
	gone = FORGET_ROWS(ks->kio_fd, struct pgt_kio_key, struct pgt_kio_val, ks->kio_max, pm,
					   shared);
	gone += FORGET_ROWS(ks->kproc_fd, struct pgt_kproc_key, struct pgt_kproc_val,
						ks->kproc_max, pm, shared);
	gone += FORGET_ROWS(ks->khist_fd, struct pgt_khist_key, struct pgt_khist_val,
						ks->khist_max, pm, shared);
	log_info("probe set %s: reset for postmaster %u (%zu rows dropped)", in->set->name,
			 pm, gone);
	return gone;
}
