/*-------------------------------------------------------------------------
 *
 * pg_tracer.h
 *	  Declarations shared by the pg_tracer extension's source files.
 *
 * The extension is loaded with shared_preload_libraries.  pg_tracer.c owns
 * the GUCs and a small shared-memory area (PgtSharedState); worker.c runs
 * the "pg_tracer helper link" background worker; debug_trap.c keeps
 * processes alive through debug traps no breakpoint claims;
 * layout_writer.c and wait_event_names.c produce <PGDATA>/pg_tracer.layout;
 * helper_link.c reads and judges the helper's segment; control_client.c
 * talks to the helper's control socket; sql_*.c are the SQL-callable
 * functions.
 *
 * Locking: PgtSharedState is protected by its spinlock `mutex`, except its
 * trap counters, which are atomics (debug_trap.c).  Only the background
 * worker writes the rest; anybody may read it.  Hold the spinlock only
 * to copy fields in or out (bounded memcpy/strlcpy), never across a call
 * that can error out or sleep.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_TRACER_H
#define PG_TRACER_H

#include "datatype/timestamp.h"
#include "fmgr.h"
#include "port/atomics.h"
#include "storage/spin.h"

#include "pgt_layout.h"
#include "pgt_segment.h"

/* Length of the human-readable reason strings kept in shared memory. */
#define PGT_REASON_LEN		256

/* Short state names ("ok", "stale", "missing", ...). */
#define PGT_STATE_LEN		32

/*
 * The worker's latest view of the helper, and whether it wrote the layout
 * file.  Protected by `mutex` (see the file header).
 */
typedef struct PgtSharedState
{
	slock_t		mutex;
	/* the latest import, written by the worker every iteration */
	bool		helper_connected;
	int32		helper_pid;		/* writer_pid of the segment, 0 if none */
	uint64		generation;		/* segment generation, 0 if none */
	TimestampTz last_update;	/* segment's last_update, 0 if none */
	TimestampTz checked_at;		/* when the worker last looked */
	char		seg_state[PGT_STATE_LEN];
	char		reason[PGT_REASON_LEN];
	bool		abandoned;		/* a writer stopped mid-update (PGT_SEG_ABANDONED) */
	/* the layout file, written by the worker at start */
	bool		layout_written;
	char		layout_error[PGT_REASON_LEN];
	/* debug traps absorbed (debug_trap.c): atomics, written in a handler */
	pg_atomic_uint32 traps_absorbed;
	pg_atomic_uint32 traps_reported;	/* by the worker, in the log */
	pg_atomic_uint32 trap_last_pid;
	pg_atomic_uint32 trap_last_code;
} PgtSharedState;

/*
 * Outcome of one reading of the helper's segment (helper_link.c).  `view`
 * points into `buf`, which was palloc'd in the caller's memory context.
 */
typedef struct PgtLink
{
	bool		connected;		/* valid, ours, running and fresh */
	bool		abandoned;		/* its writer stopped in the middle of an update */
	const char *state;			/* "ok", a reader result name, "stale", ... */
	char		reason[PGT_REASON_LEN]; /* why not connected; "" when ok */
	char		path[MAXPGPATH];	/* the segment file */
	void	   *buf;			/* the copy, NULL when unreadable */
	pgt_seg_view view;			/* view.hdr != NULL when it validated */
} PgtLink;

/*
 * The segment's unsigned counters as SQL bigint: values no bigint can hold
 * (only a damaged or hostile segment has them) saturate.
 */
static inline int64
pgt_uint64_to_int64(uint64 v)
{
	return v > (uint64) PG_INT64_MAX ? PG_INT64_MAX : (int64) v;
}

/* pg_tracer.c */
extern PGDLLIMPORT PgtSharedState *pgt_shared;
extern char *pgt_runtime_dir;
extern int	pgt_helper_stale_ms;
extern void pgt_require_preload(void);

/* worker.c */
extern PGDLLEXPORT void pgt_worker_main(Datum main_arg);
extern void pgt_register_worker(void);
extern void pgt_register_bgworker(const char *function, const char *name);

/* debug_trap.c */
extern void pgt_debug_trap_install(void);
extern void pgt_debug_trap_report(void);

/* layout_writer.c */
extern void pgt_layout_path(char *out, size_t outlen);
extern bool pgt_write_layout(char *err, size_t errlen);

/* wait_event_names.c */
extern int	pgt_collect_wait_events(pgt_wait_event_name *out, int max);

/* helper_link.c */
extern bool pgt_cluster_file(const char *suffix, char *out, size_t outlen,
							 char *err, size_t errlen);
extern void pgt_link_read(PgtLink *link, uint64 tables);
extern void pgt_link_free(PgtLink *link);
extern void pgt_link_import(void);
extern void pgt_link_set_layout(bool written, const char *error);
extern void pgt_shared_copy(PgtSharedState *dst);
extern TimestampTz pgt_unix_us_to_timestamptz(int64 us, bool *valid);
extern void pgt_copy_segment_text(char *dst, size_t dstlen,
								  const char *src, size_t srclen);

/* control_client.c */
typedef enum PgtCtlResult
{
	PGT_CTL_OK = 0,				/* helper answered OK; out holds the text */
	PGT_CTL_REFUSED,			/* helper answered ERR; out holds the text */
	PGT_CTL_NO_HELPER,			/* no socket, or nobody listening */
	PGT_CTL_TIMEOUT,			/* no complete answer in time */
	PGT_CTL_IO_ERROR,			/* the connection failed half-way */
	PGT_CTL_MALFORMED,			/* the answer broke the protocol */
	PGT_CTL_BAD_REQUEST			/* the request itself cannot be sent */
} PgtCtlResult;

extern PgtCtlResult pgt_control_request(const char *verb, char *out,
										size_t outlen, char *err,
										size_t errlen);
extern void pgt_control_request_or_error(const char *verb, char *out,
										 size_t outlen);

/* visibility.c: pg_stat_activity's rule for per-backend rows */
typedef struct PgtVisiblePid
{
	int32		pid;
	TimestampTz started;		/* its backend's st_proc_start_timestamp */
} PgtVisiblePid;

typedef struct PgtVisibility
{
	bool		see_all;		/* superuser or pg_read_all_stats */
	PgtVisiblePid *pids;		/* else: visible client backends, by pid */
	int			n;
} PgtVisibility;

extern void pgt_require_cluster_wide(const char *function);
extern void pgt_visibility_init(PgtVisibility *vis, const pgt_seg_view *view);
extern bool pgt_visible_pid(const PgtVisibility *vis, uint32 pid);
extern bool pgt_visible_pid_at(const PgtVisibility *vis, uint32 pid, TimestampTz when,
							   bool when_valid);
extern Datum pgt_pid_datum(uint32 pid, bool *isnull);
extern const char *pgt_hide_data_dir(const char *text);

/* helper_link.c, declared here for PgtVisibility */
extern uint32 pgt_link_srf_begin(FunctionCallInfo fcinfo, PgtLink *link,
								 uint32 section, PgtVisibility *vis);

#endif							/* PG_TRACER_H */
