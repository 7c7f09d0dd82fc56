/*
 * helper/engine_probes.h
 *	  The engine probes of one served cluster: load bpf/engine_probes.bpf.c,
 *	  attach each enabled set with the mechanism its binary supports
 *	  (engine_catalog.c), and turn the in-kernel aggregates into segment
 *	  rows (PGT_SEC_ENGINE_*) and probe-set rows.
 */
#ifndef PGT_HELPER_ENGINE_PROBES_H
#define PGT_HELPER_ENGINE_PROBES_H

#include <stddef.h>
#include <stdint.h>

#include "pgt_layout.h"
#include "pgt_segment.h"
#include "segment_writer.h"

typedef struct engine_state engine_state;

/* Maps a host pid to the pid the cluster sees (0: not one of its processes). */
typedef uint32_t (*engine_pid_map_fn) (void *arg, uint32_t host_pid);

/*
 * Configure which sets run (comma-separated names, "all", "default") and
 * the slow-statement threshold, before any attach.  Returns 0 or -1 with
 * err set (unknown set name).
 */
extern int	engine_configure(const char *sets, char *err, size_t errlen);
extern void engine_set_slow_ms(uint64_t ms);
extern int	engine_set_enabled(const char *set);

/*
 * Start the engine probes for postmaster pm (host pid) of a cluster.
 * tracked_fd is the daemon's `tracked` map (-1: BPF unavailable).  Never
 * NULL unless out of memory: a failed start is an engine_state that says
 * why in its set rows.
 */
extern engine_state *engine_attach(uint32_t pm, int tracked_fd);

/* Pass the layout file when it loads (query ids need its st_query_id offset). */
extern void engine_set_layout(engine_state *e, const pgt_layout *layout);

extern void engine_detach(engine_state *e);

/*
 * Add the engine's probe-set rows (at most max) to ps and its tables to p.
 * e may be NULL (cluster not attached).  Returns the rows added.
 */
extern int	engine_publish(engine_state *e, struct pgt_probeset_entry *ps, int max,
						   seg_publish *p, engine_pid_map_fn map, void *arg);

#endif							/* PGT_HELPER_ENGINE_PROBES_H */
