/*
 * helper/cluster_psets.h
 *	  What one served cluster does with the daemon's always-on probe sets:
 *	  query-id slots for its processes, its probe-set status rows, and its
 *	  rows of the probe sets' segment tables.
 */
#ifndef PGT_HELPER_CLUSTER_PSETS_H
#define PGT_HELPER_CLUSTER_PSETS_H

#include "cluster.h"
#include "probe_set.h"

/* Most pg_tracer_probes rows the probe sets add to a cluster's segment. */
#define PSET_MAX_ROWS	24

extern void cluster_psets_tick(cluster *c);
extern size_t cluster_psets_rows(cluster *c, struct pgt_probeset_entry *out, size_t max);
extern void cluster_psets_publish(cluster *c, seg_publish *p);
/* control_reset_fn: PROBERESET (pg_tracer_reset()) of cluster arg */
extern size_t cluster_psets_reset(void *arg, int *nsets);
extern void cluster_psets_forget(cluster *c, uint32_t pm);

#endif							/* PGT_HELPER_CLUSTER_PSETS_H */
