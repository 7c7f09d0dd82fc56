/*
 * helper/engine_probes.h
 *	  The engine core shared by the engine probe sets (helper/engine_sets.c):
 *	  one BPF object (bpf/engine_probes.bpf.c) per helper process, attached
 *	  to the executable of every target postmaster with the mechanism that
 *	  binary supports (engine_catalog.c), and a user-space copy of its
 *	  aggregates.
 */
#ifndef PGT_HELPER_ENGINE_PROBES_H
#define PGT_HELPER_ENGINE_PROBES_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "pgt_layout.h"
#include "pgt_segment.h"
#include "probe_set.h"

/* One aggregate as read from the map. */
typedef struct engine_row
{
	struct eng_key k;			/* LWLock rows: tranche name resolved */
	struct eng_val v;
	struct eng_key raw;			/* the key in the map */
	char		name[PGT_LAYOUT_NAME_LEN];	/* LWLock rows: the whole tranche name
										 * (k.name may be cut), else "" */
} engine_row;

/* One histogram (postmaster, probe). */
typedef struct engine_hist_row
{
	uint32_t	pm;
	uint32_t	probe;
	struct eng_hist h;
} engine_hist_row;

/* One streamed record kept for the segment (daemon). */
typedef struct engine_stream_row
{
	uint32_t	pm;
	struct pgt_engine_stream_entry e;	/* pid still the host pid */
} engine_stream_row;

/* What the sets read after engine_core_collect(). */
typedef struct engine_view
{
	const engine_row *rows;
	size_t		nrows;
	const engine_hist_row *hist;
	size_t		nhist;
	const engine_stream_row *stream;	/* oldest first */
	size_t		nstream;
	int64_t		started_us;		/* CLOCK_MONOTONIC when the core started */
} engine_view;

/*
 * Daemon configuration (main.c): which engine sets run when the daemon's
 * --probes selects them (default: all but pg-lwlock), and the slow-statement
 * threshold.  Returns 0 or -1 with err set (unknown set name).
 */
extern int	engine_configure(const char *sets, char *err, size_t errlen);
extern void engine_set_slow_ms(uint64_t ms);
extern int	engine_set_enabled(const char *set);

/* Set lifecycle: a set joins (its points attach to later targets) / leaves. */
extern int	engine_core_join(pset_inst *inst, const pset_ctx *ctx, int set_index);
extern void engine_core_leave(int set_index);

/*
 * A postmaster to trace (host pid): attach the joined sets to its
 * executable (once per executable) and configure it in the BPF side.
 * No-op when no engine set runs.  untarget removes its configuration.
 */
extern void engine_core_target(uint32_t pm);
extern void engine_core_untarget(uint32_t pm);

/* Read the aggregates (at most twice a second) and drain the stream. */
extern void engine_core_collect(void);
/* The next collect reads the maps however recent the last read (a summary). */
extern void engine_core_read_next(void);
extern void engine_core_view(engine_view *v);
extern uint64_t engine_core_set_events(int set_index);

/*
 * pg_tracer_reset() of the cluster whose postmaster is pm (host pid): drop
 * its aggregate rows, histograms and kept stream records; returns the map
 * rows dropped.  Every engine set's reset calls it; the calls after the
 * first find nothing left to drop.
 */
extern size_t engine_core_reset(uint32_t pm);

#endif							/* PGT_HELPER_ENGINE_PROBES_H */
