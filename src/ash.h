/*-------------------------------------------------------------------------
 *
 * ash.h
 *	  The always-on sampled wait-event tier (ASH): shared-memory layout of
 *	  the sampler's accumulators and history ring, and the functions the
 *	  sampler (sampler.c), the storage code (ash_store.c) and the SQL
 *	  functions (sql_wait_events.c) share.
 *
 * Storage.  Every sample is an (event) row, a (session, event) row and a
 * (query id, user, event) row; a sample of a process whose details its role
 * may see (pgt_ash_role_visible_type) is also a (user, event) row of the
 * cumulative session table, which keeps a role's totals since the reset
 * after its sessions' own rows are collected.  Each kind lives in a fixed-capacity open
 * addressing hash table (PgtAshTable): the cumulative tables since the last
 * reset, and one table per history bucket (1-second buckets for the last
 * minute, 10-second buckets for the last five minutes).  A row that does not
 * fit is not stored: its time is added to the table's overflow counters,
 * which pg_tracer_ash_status shows.  Nothing ever grows.
 *
 * The row format is source-neutral: an exact source (the helper's syscall
 * timing, issue 4) can be merged into the same rows at read time, and the
 * views keep their columns; `fidelity` then says which source a row used.
 *
 * Locking: only the sampler writes.  The cumulative part (PgtAshShared, its
 * three tables, the session directory and the live array) is covered by the
 * seqlock PgtAshShared.seq; each history bucket has its own seqlock.  The
 * sampler makes the counter odd, writes, makes it even.  Readers copy what
 * they need and retry when the counter was odd or moved: they never wait on
 * a lock the sampler holds, and the sampler never waits on a reader.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGT_ASH_H
#define PGT_ASH_H

#include "datatype/timestamp.h"
#include "port/atomics.h"

/* Row kinds. */
#define PGT_ASH_EMPTY		0
#define PGT_ASH_EVENT		1	/* key 0 */
#define PGT_ASH_SESSION		2	/* key = session key */
#define PGT_ASH_QUERY		3	/* key = query id, aux = user oid */
#define PGT_ASH_USER		4	/* key = user oid; cumulative table only */

/*
 * Pseudo events.  PostgreSQL never uses wait class 0x00, so these cannot
 * collide with a real wait_event_info.
 */
#define PGT_EV_CPU			0x00000000	/* in DB time, no wait event: CPU* */
#define PGT_EV_IDLE_CPU		0x00000001	/* client backend on CPU between statements */

/* History rings. */
#define PGT_ASH_FINE_BUCKETS	61	/* 1-second buckets: windows up to 60 s */
#define PGT_ASH_COARSE_SECS		10
#define PGT_ASH_COARSE_BUCKETS	31	/* 10-second buckets: windows up to 300 s */
#define PGT_ASH_MAX_WINDOW_S	300
#define PGT_ASH_FINE_SLOTS		512		/* hash slots per 1-second bucket, at least */
#define PGT_ASH_COARSE_SLOTS	1024	/* hash slots per 10-second bucket, at least */
#define PGT_ASH_EVENT_SLOTS		1024	/* cumulative (event) table */

/* Live states of pg_tracer_active. */
#define PGT_LIVE_IDLE		0
#define PGT_LIVE_ON_CPU		1
#define PGT_LIVE_WAITING	2

/* One accumulated row; the same format everywhere. */
typedef struct PgtAshRow
{
	uint64		key;			/* see the kinds above */
	uint32		event;			/* wait_event_info or a pseudo event */
	uint32		aux;			/* query rows: user oid; else 0 */
	uint8		kind;			/* PGT_ASH_*, PGT_ASH_EMPTY = free slot */
	uint8		idle;			/* not DB time (Activity, ClientRead, ...) */
	uint8		pad[6];
	uint64		time_us;		/* sampled time */
	uint64		waits;			/* sampled runs: consecutive samples = 1 */
	uint64		samples;		/* ticks that saw it */
	uint64		max_us;			/* longest run seen */
} PgtAshRow;

StaticAssertDecl(sizeof(PgtAshRow) == 56, "PgtAshRow layout");

/* Fixed-capacity open-addressing (linear probing) hash table of rows. */
typedef struct PgtAshTable
{
	uint32		size;			/* slots, a power of two */
	uint32		limit;			/* most rows stored (3/4 of size) */
	uint32		used;
	uint32		pad;
	uint64		overflow_rows;	/* updates that found no room */
	uint64		overflow_us;	/* and their time */
	PgtAshRow	rows[FLEXIBLE_ARRAY_MEMBER];
} PgtAshTable;

/* One history bucket: a period of 1 or 10 seconds. */
typedef struct PgtAshBucket
{
	pg_atomic_uint32 seq;		/* seqlock of this bucket */
	uint32		pad;
	int64		period;			/* second (or 10-second) number; 0 = empty */
	TimestampTz first_tick;
	TimestampTz last_tick;
	uint64		elapsed_us;		/* wall time covered by its ticks */
	PgtAshTable table;			/* must be last */
} PgtAshBucket;

/* A session the sampler has seen (kept PGT_ASH_MAX_WINDOW_S after exit). */
typedef struct PgtAshSession
{
	uint64		key;			/* 0 = free */
	int32		pid;
	int32		backend_type;	/* BackendType */
	Oid			userid;
	Oid			dbid;
	TimestampTz proc_start;
	TimestampTz last_seen;
	bool		exited;
	char		type_name[64];	/* backend type description or bgw_type */
	uint64		db_time_us;		/* its DB time since reset, as the sampler last
								 * counted it: a restarted sampler goes on from
								 * it (pg_tracer_active.db_time_ms) */
} PgtAshSession;

/* What a sampled process was doing at the latest tick. */
typedef struct PgtAshLive
{
	int32		pid;			/* 0 = not in use */
	int32		session;		/* index into the session directory */
	uint32		event;
	uint8		state;			/* PGT_LIVE_* */
	uint8		pad[3];
	uint64		state_us;		/* how long it has been in this event */
	uint64		db_time_us;		/* the session's DB time since reset */
} PgtAshLive;

/*
 * Query ids a backend learned, by statement (ash_hooks.c writes, the
 * sampler reads).  PostgreSQL publishes a statement's query id only once
 * parse analysis (or ExecutorStart) is done, and clears it at the next
 * protocol message, so a sampler can miss it entirely between two ticks;
 * this per-backend ring keeps the last PGT_STMT_RING (statement start, query
 * id) pairs so that samples taken before the id existed (a lock wait inside
 * parse analysis, planning at Bind) still find it.  Each entry is a tiny
 * seqlock written only by its backend.
 */
#define PGT_STMT_RING		64

typedef struct PgtStmtEntry
{
	pg_atomic_uint32 seq;
	int32		pid;
	TimestampTz stmt_ts;		/* GetCurrentStatementStartTimestamp() */
	TimestampTz xact_ts;		/* GetCurrentTransactionStartTimestamp() */
	uint64		qid;
} PgtStmtEntry;

typedef struct PgtStmtRing
{
	pg_atomic_uint32 next;		/* entries written so far */
	uint32		pad;
	PgtStmtEntry e[PGT_STMT_RING];
} PgtStmtRing;

/* The fixed part of the shared area. */
typedef struct PgtAshShared
{
	pg_atomic_uint32 seq;		/* seqlock of everything but the buckets */
	pg_atomic_uint32 reset_requests;	/* bumped by pg_tracer_reset() */
	uint32		reset_served;	/* last request the sampler served */
	int32		sampler_pid;	/* 0 when not running */
	int32		nslots;			/* live array length */
	int32		nsessions;		/* session directory length */
	int32		rate_hz;		/* rate in use */
	int32		max_entries;	/* pg_tracer.ash_max_entries */
	TimestampTz sampler_started;
	TimestampTz reset_at;
	TimestampTz last_tick;
	uint64		ticks;
	uint64		sampled_us;		/* wall time covered by ticks */
	uint64		lost_us;		/* wall time beyond the per-tick cap */
	uint64		tick_cpu_us;	/* sampler time spent inside ticks */
	uint64		session_overflow;	/* sessions that found no directory slot,
									 * or exited ones forgotten before the
									 * longest window (their slot reused) */
	/* offsets of the variable parts from the start of this struct */
	Size		off_events;
	Size		off_sessions_tab;
	Size		off_queries_tab;
	Size		off_directory;
	Size		off_live;
	Size		off_stmt;		/* MaxBackends statement rings */
	Size		off_fine;
	Size		off_coarse;
	Size		fine_stride;
	Size		coarse_stride;
	Size		total_size;
} PgtAshShared;

/* ash_store.c */
extern PgtAshShared *pgt_ash;
extern int	pgt_sample_rate;
extern bool pgt_sampler_enabled;
extern int	pgt_ash_max_entries;

extern void pgt_ash_define_gucs(void);
extern Size pgt_ash_shmem_size(void);
extern void pgt_ash_shmem_startup(void);
extern void pgt_ash_require(void);

extern Size pgt_ash_table_bytes(uint32 size);
extern void pgt_ash_table_init(PgtAshTable *t, uint32 size, uint32 limit);
extern PgtAshRow *pgt_ash_table_get(PgtAshTable *t, uint8 kind, uint64 key,
									uint32 event, uint32 aux);
extern void pgt_ash_table_add(PgtAshTable *t, const PgtAshRow *delta,
							  uint64 run_us);

static inline PgtAshTable *
pgt_ash_events(PgtAshShared *a)
{
	return (PgtAshTable *) ((char *) a + a->off_events);
}
static inline PgtAshTable *
pgt_ash_sessions_tab(PgtAshShared *a)
{
	return (PgtAshTable *) ((char *) a + a->off_sessions_tab);
}
static inline PgtAshTable *
pgt_ash_queries_tab(PgtAshShared *a)
{
	return (PgtAshTable *) ((char *) a + a->off_queries_tab);
}
static inline PgtAshSession *
pgt_ash_directory(PgtAshShared *a)
{
	return (PgtAshSession *) ((char *) a + a->off_directory);
}
static inline PgtAshLive *
pgt_ash_live(PgtAshShared *a)
{
	return (PgtAshLive *) ((char *) a + a->off_live);
}
static inline PgtStmtRing *
pgt_ash_stmt_ring(PgtAshShared *a, int slot)
{
	return (PgtStmtRing *) ((char *) a + a->off_stmt) + slot;
}
static inline PgtAshBucket *
pgt_ash_fine(PgtAshShared *a, int i)
{
	return (PgtAshBucket *) ((char *) a + a->off_fine + a->fine_stride * i);
}
static inline PgtAshBucket *
pgt_ash_coarse(PgtAshShared *a, int i)
{
	return (PgtAshBucket *) ((char *) a + a->off_coarse + a->coarse_stride * i);
}

/* Seqlock writer side (sampler only). */
static inline void
pgt_seq_begin_write(pg_atomic_uint32 *seq)
{
	pg_atomic_fetch_add_u32(seq, 1);
	pg_write_barrier();
}
static inline void
pgt_seq_end_write(pg_atomic_uint32 *seq)
{
	pg_write_barrier();
	pg_atomic_fetch_add_u32(seq, 1);
}

/* Seqlock reader side: copy regions consistently (ash_store.c). */
typedef struct PgtCopyRegion
{
	void	   *dst;
	const void *src;
	Size		len;
} PgtCopyRegion;

extern bool pgt_seq_copy_quiet(pg_atomic_uint32 *seq, PgtCopyRegion *regions,
							   int nregions);
extern void pgt_seq_mixed_notice(void);
extern void pgt_seq_copy(pg_atomic_uint32 *seq, PgtCopyRegion *regions,
						 int nregions);

/* ash_hooks.c */
extern void pgt_ash_install_hooks(void);
extern bool pgt_stmt_lookup(int slot, int32 pid, TimestampTz stmt_ts,
							TimestampTz xact_ts, uint64 *qid);

/* sampler.c */
extern PGDLLEXPORT void pgt_sampler_main(Datum main_arg);
extern void pgt_register_sampler(void);

/* classification shared by sampler and SQL */
extern bool pgt_ash_role_visible_type(int backend_type);
extern bool pgt_event_is_idle(uint32 event);
extern void pgt_event_names(uint32 event, const char **type, const char **name);

#endif							/* PGT_ASH_H */
