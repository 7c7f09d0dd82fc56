/*-------------------------------------------------------------------------
 *
 * ash_store.c
 *	  Storage of the sampled wait-event tier: its settings, the size and
 *	  creation of its shared-memory area, the fixed-capacity row tables and
 *	  the seqlock copy readers use.  See ash.h for the layout.
 *
 * Locking: see ash.h.  The tables here are plain memory; the sampler calls
 * the writing functions inside its seqlock write section, readers call them
 * on their private copies.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"
#include "utils/queryjumble.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "pg_tracer.h"
#include "ash.h"

/* GUCs */
int			pgt_sample_rate = 100;
bool		pgt_sampler_enabled = true;
int			pgt_ash_max_entries = 4096;

/* The shared area; NULL unless preloaded. */
PgtAshShared *pgt_ash = NULL;

/* How many times a reader retries quickly before it starts yielding. */
#define PGT_SEQ_FAST_RETRIES	100
#define PGT_SEQ_PATIENCE_US		50000

static uint32 next_pow2(uint32 n);
static Size ash_layout(PgtAshShared *hdr);

/*
 * pgt_ash_define_gucs
 *		The sampler's settings.  Called from _PG_init before the
 *		"pg_tracer" prefix is reserved.  Query ids are turned on here too:
 *		compute_query_id = auto means "on if a module asks for it".
 */
void
pgt_ash_define_gucs(void)
{
	DefineCustomIntVariable("pg_tracer.sample_rate",
							"Wait-event samples per second taken by the pg_tracer sampler.",
							"Each sample is weighted by the measured time since the previous one.",
							&pgt_sample_rate,
							100, 1, 1000,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("pg_tracer.sampler_enabled",
							 "Whether the pg_tracer sampler takes samples.",
							 "When off, the sampler process sleeps and the sampled views stop moving.",
							 &pgt_sampler_enabled,
							 true,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("pg_tracer.ash_max_entries",
							"Capacity of each of the sampler's (session, event) and (query, event) tables.",
							"Samples that find no room are counted in pg_tracer_ash_status.",
							&pgt_ash_max_entries,
							4096, 256, 1000000,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);

	EnableQueryId();
}

/*
 * next_pow2
 *		Smallest power of two >= n.
 */
static uint32
next_pow2(uint32 n)
{
	uint32		p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/*
 * pgt_ash_table_bytes
 *		Size of a table of `size` slots.
 */
Size
pgt_ash_table_bytes(uint32 size)
{
	return MAXALIGN(add_size(offsetof(PgtAshTable, rows),
							 mul_size(sizeof(PgtAshRow), size)));
}

/*
 * bucket_slots
 *		Hash slots of a history bucket: every sampled process adds at least
 *		one (session, event) row to each bucket it is seen in, so a bucket
 *		grows with the processes (per_proc rows each, at 3/4 load), from
 *		the given minimum.
 */
static uint32
bucket_slots(uint32 nslots, uint32 per_proc, uint32 minimum)
{
	uint32		want = next_pow2((nslots + 64) * per_proc * 4 / 3 + 1);

	return Max(want, minimum);
}

#define FINE_SLOTS(nslots)		bucket_slots((nslots), 2, PGT_ASH_FINE_SLOTS)
#define COARSE_SLOTS(nslots)	bucket_slots((nslots), 4, PGT_ASH_COARSE_SLOTS)

/*
 * ash_layout
 *		Compute the offsets of the variable parts into hdr; return the
 *		total size.  Depends on MaxBackends and pg_tracer.ash_max_entries.
 */
static Size
ash_layout(PgtAshShared *hdr)
{
	Size		off = MAXALIGN(sizeof(PgtAshShared));
	uint32		keyed = next_pow2((uint32) pgt_ash_max_entries * 4 / 3 + 1);

	hdr->nslots = MaxBackends + NUM_AUXPROCTYPES;
	/* live sessions, plus as many exited ones kept for the windows */
	hdr->nsessions = 2 * hdr->nslots + 64;
	hdr->max_entries = pgt_ash_max_entries;

	hdr->off_events = off;
	off = add_size(off, pgt_ash_table_bytes(PGT_ASH_EVENT_SLOTS));
	hdr->off_sessions_tab = off;
	off = add_size(off, pgt_ash_table_bytes(keyed));
	hdr->off_queries_tab = off;
	off = add_size(off, pgt_ash_table_bytes(keyed));
	hdr->off_directory = off;
	off = add_size(off, MAXALIGN(mul_size(sizeof(PgtAshSession), hdr->nsessions)));
	hdr->off_live = off;
	off = add_size(off, MAXALIGN(mul_size(sizeof(PgtAshLive), hdr->nslots)));
	hdr->off_stmt = off;
	off = add_size(off, MAXALIGN(mul_size(sizeof(PgtStmtRing), MaxBackends)));
	hdr->fine_stride = MAXALIGN(offsetof(PgtAshBucket, table) +
								pgt_ash_table_bytes(FINE_SLOTS(hdr->nslots)));
	hdr->coarse_stride = MAXALIGN(offsetof(PgtAshBucket, table) +
								  pgt_ash_table_bytes(COARSE_SLOTS(hdr->nslots)));
	hdr->off_fine = off;
	off = add_size(off, mul_size(hdr->fine_stride, PGT_ASH_FINE_BUCKETS));
	hdr->off_coarse = off;
	off = add_size(off, mul_size(hdr->coarse_stride, PGT_ASH_COARSE_BUCKETS));
	hdr->total_size = off;
	return off;
}

/*
 * pgt_ash_shmem_size
 *		Bytes to request from shmem_request_hook.
 */
Size
pgt_ash_shmem_size(void)
{
	PgtAshShared hdr;

	return ash_layout(&hdr);
}

/*
 * pgt_ash_shmem_startup
 *		Create or attach to the area; called from shmem_startup_hook.
 */
void
pgt_ash_shmem_startup(void)
{
	PgtAshShared hdr;
	Size		size = ash_layout(&hdr);
	bool		found;
	int			i;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	pgt_ash = ShmemInitStruct("pg_tracer ash", size, &found);
	if (!found)
	{
		uint32		keyed = next_pow2((uint32) pgt_ash_max_entries * 4 / 3 + 1);

		memset(pgt_ash, 0, size);
		memcpy(pgt_ash, &hdr, sizeof(hdr));
		pg_atomic_init_u32(&pgt_ash->seq, 0);
		pg_atomic_init_u32(&pgt_ash->reset_requests, 0);
		pgt_ash->reset_at = GetCurrentTimestamp();
		pgt_ash_table_init(pgt_ash_events(pgt_ash), PGT_ASH_EVENT_SLOTS,
						   PGT_ASH_EVENT_SLOTS * 3 / 4);
		pgt_ash_table_init(pgt_ash_sessions_tab(pgt_ash), keyed,
						   (uint32) pgt_ash_max_entries);
		pgt_ash_table_init(pgt_ash_queries_tab(pgt_ash), keyed,
						   (uint32) pgt_ash_max_entries);
		for (i = 0; i < MaxBackends; i++)
		{
			PgtStmtRing *r = pgt_ash_stmt_ring(pgt_ash, i);
			int			j;

			pg_atomic_init_u32(&r->next, 0);
			for (j = 0; j < PGT_STMT_RING; j++)
				pg_atomic_init_u32(&r->e[j].seq, 0);
		}
		for (i = 0; i < PGT_ASH_FINE_BUCKETS; i++)
		{
			PgtAshBucket *b = pgt_ash_fine(pgt_ash, i);

			pg_atomic_init_u32(&b->seq, 0);
			pgt_ash_table_init(&b->table, FINE_SLOTS(hdr.nslots),
							   FINE_SLOTS(hdr.nslots) * 3 / 4);
		}
		for (i = 0; i < PGT_ASH_COARSE_BUCKETS; i++)
		{
			PgtAshBucket *b = pgt_ash_coarse(pgt_ash, i);

			pg_atomic_init_u32(&b->seq, 0);
			pgt_ash_table_init(&b->table, COARSE_SLOTS(hdr.nslots),
							   COARSE_SLOTS(hdr.nslots) * 3 / 4);
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * pgt_ash_require
 *		SQL entry points call this: preloaded, and the area exists.
 */
void
pgt_ash_require(void)
{
	pgt_require_preload();
	if (pgt_ash == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_tracer sampler shared memory is not initialized"),
				 errhint("Add pg_tracer to shared_preload_libraries in postgresql.conf and restart the server.")));
}

/*
 * pgt_ash_table_init
 *		Empty table of `size` slots (a power of two) storing at most limit.
 */
void
pgt_ash_table_init(PgtAshTable *t, uint32 size, uint32 limit)
{
	Assert((size & (size - 1)) == 0);
	t->size = size;
	t->limit = Min(limit, size - 1);
	t->used = 0;
	t->overflow_rows = 0;
	t->overflow_us = 0;
	memset(t->rows, 0, sizeof(PgtAshRow) * size);
}

/*
 * row_hash
 *		Hash of a row key (splitmix64 finalizer over the mixed fields).
 */
static inline uint32
row_hash(uint8 kind, uint64 key, uint32 event, uint32 aux)
{
	uint64		x = key ^ ((uint64) event << 32 | aux) * UINT64CONST(0x9E3779B97F4A7C15) ^ kind;

	x ^= x >> 30;
	x *= UINT64CONST(0xBF58476D1CE4E5B9);
	x ^= x >> 27;
	x *= UINT64CONST(0x94D049BB133111EB);
	x ^= x >> 31;
	return (uint32) x;
}

/*
 * pgt_ash_table_get
 *		Find the row for the key, inserting an empty one if there is room;
 *		NULL when the table is full.  The caller fills the counters.  An
 *		(event) row may use half of the slots above the limit: the tables
 *		of the history buckets hold every kind, and a storm of sessions
 *		must not keep a new event out of the system-wide views, which are
 *		made of those rows (there are few events: the room suffices).
 */
PgtAshRow *
pgt_ash_table_get(PgtAshTable *t, uint8 kind, uint64 key, uint32 event,
				  uint32 aux)
{
	uint32		mask = t->size - 1;
	uint32		i = row_hash(kind, key, event, aux) & mask;

	for (;;)
	{
		PgtAshRow  *r = &t->rows[i];

		if (r->kind == PGT_ASH_EMPTY)
		{
			if (t->used >= t->limit &&
				(kind != PGT_ASH_EVENT || t->used >= t->limit + (t->size - t->limit) / 2))
				return NULL;
			r->kind = kind;
			r->key = key;
			r->event = event;
			r->aux = aux;
			t->used++;
			return r;
		}
		if (r->kind == kind && r->key == key && r->event == event &&
			r->aux == aux)
			return r;
		i = (i + 1) & mask;
	}
}

/*
 * pgt_ash_table_add
 *		Add delta's counters to its key's row; run_us is the length of the
 *		run the delta belongs to (for max_us).  No room: count overflow.
 */
void
pgt_ash_table_add(PgtAshTable *t, const PgtAshRow *delta, uint64 run_us)
{
	PgtAshRow  *r = pgt_ash_table_get(t, delta->kind, delta->key,
									  delta->event, delta->aux);

	if (r == NULL)
	{
		t->overflow_rows++;
		t->overflow_us += delta->time_us;
		return;
	}
	r->idle = delta->idle;
	r->time_us += delta->time_us;
	r->waits += delta->waits;
	r->samples += delta->samples;
	r->max_us = Max(r->max_us, Max(run_us, delta->max_us));
}

/*
 * pgt_seq_copy
 *		Copy the regions so that no write section overlapped the copy.
 *		Never takes a lock: the sampler's write sections are a few
 *		microseconds long, so a retry almost always succeeds at once.  If
 *		the sampler stays inside one (stopped, or descheduled for long),
 *		the reader does not wait for it: after PGT_SEQ_PATIENCE_US of wall
 *		time (copies included: a copy of large tables that takes longer than
 *		the time between two ticks never succeeds) it keeps its last copy,
 *		which may mix two ticks, and says so (quiet: the caller polls).
 *		Nothing in a copy is trusted structurally (sizes come from the
 *		reader's side), so a mixed copy can only be slightly off, never
 *		unsafe to read; but who may see a session is decided from a copy of
 *		the directory that is whole (sql_wait_events.c: snap_index).
 */
bool
pgt_seq_copy_quiet(pg_atomic_uint32 *seq, PgtCopyRegion *regions, int nregions)
{
	int			attempt;
	instr_time	start;

	INSTR_TIME_SET_CURRENT(start);
	for (attempt = 0;; attempt++)
	{
		uint32		before;
		uint32		after;
		int			i;
		instr_time	now;
		bool		last;

		INSTR_TIME_SET_CURRENT(now);
		INSTR_TIME_SUBTRACT(now, start);
		last = INSTR_TIME_GET_MICROSEC(now) >= PGT_SEQ_PATIENCE_US;

		before = pg_atomic_read_u32(seq);
		pg_read_barrier();
		if ((before & 1) == 0 || last)
		{
			for (i = 0; i < nregions; i++)
				memcpy(regions[i].dst, regions[i].src, regions[i].len);
			pg_read_barrier();
			after = pg_atomic_read_u32(seq);
			if (after == before && (before & 1) == 0)
				return true;
		}
		if (last)
			return false;
		if (attempt >= PGT_SEQ_FAST_RETRIES)
		{
			CHECK_FOR_INTERRUPTS();
			pg_usleep(100);
		}
	}
}

/*
 * pgt_seq_mixed_notice
 *		Tell the caller that a copy may mix two samples.
 */
void
pgt_seq_mixed_notice(void)
{
	ereport(NOTICE,
			(errmsg("the pg_tracer sampler stayed inside an update; these figures may mix two samples")));
}

/*
 * pgt_seq_copy
 *		pgt_seq_copy_quiet, with a NOTICE when the copy may be mixed.
 */
void
pgt_seq_copy(pg_atomic_uint32 *seq, PgtCopyRegion *regions, int nregions)
{
	if (!pgt_seq_copy_quiet(seq, regions, nregions))
		pgt_seq_mixed_notice();
}

/*
 * pgt_event_is_idle
 *		Idle time is not DB time: the Activity class (background processes
 *		waiting for work), Client:ClientRead (a session waiting for its
 *		client), client backends on CPU between statements, and the waits
 *		in which only a background process sits for want of work or by
 *		design (a decision: without them an idle cluster with a logical
 *		slot, a spread checkpoint or a delayed standby read as one busy
 *		session more): a caught-up logical WAL sender (WalSenderWaitForWAL),
 *		the checkpointer's pacing (CheckpointWriteDelay), a standby's
 *		startup process waiting out recovery_min_apply_delay or for WAL to
 *		appear (RecoveryApplyDelay, RecoveryRetrieveRetryInterval), and a
 *		WAL receiver waiting to be started (WalReceiverWaitStart).  The
 *		cost-based vacuum delay stays DB time: a VACUUM of a client's waits
 *		there too, as part of its statement.
 */
bool
pgt_event_is_idle(uint32 event)
{
	switch (event)
	{
		case WAIT_EVENT_CLIENT_READ:
		case PGT_EV_IDLE_CPU:
		case WAIT_EVENT_WAL_SENDER_WAIT_WAL:
		case WAIT_EVENT_CHECKPOINT_WRITE_DELAY:
		case WAIT_EVENT_RECOVERY_APPLY_DELAY:
		case WAIT_EVENT_RECOVERY_RETRIEVE_RETRY_INTERVAL:
		case WAIT_EVENT_WAL_RECEIVER_WAIT_START:
			return true;
	}
	return (event & 0xFF000000) == PG_WAIT_ACTIVITY;
}

/*
 * pgt_ash_role_visible_type
 *		May a role that is not pg_read_all_stats see the details of a process
 *		of this type that runs as it (or as a role it has the privileges
 *		of)?  As pg_stat_activity: client backends, WAL senders, and
 *		background workers run as a role (parallel workers carry their
 *		leader's); not the auxiliary processes nor autovacuum, which run as
 *		no role or as the bootstrap superuser.
 */
bool
pgt_ash_role_visible_type(int backend_type)
{
	return backend_type == B_BACKEND || backend_type == B_BG_WORKER ||
		backend_type == B_WAL_SENDER;
}

/*
 * pgt_event_names
 *		Type and name of an event, from the running server for real events.
 */
void
pgt_event_names(uint32 event, const char **type, const char **name)
{
	if (event == PGT_EV_CPU)
	{
		*type = "CPU";
		*name = "CPU*";
		return;
	}
	if (event == PGT_EV_IDLE_CPU)
	{
		*type = "CPU";
		*name = "OutsideStatement";
		return;
	}
	*type = pgstat_get_wait_event_type(event);
	*name = pgstat_get_wait_event(event);
	if (*type == NULL)
		*type = "???";
	if (*name == NULL)
		*name = "???";
}
