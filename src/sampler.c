/*-------------------------------------------------------------------------
 *
 * sampler.c
 *	  The "pg_tracer sampler" background worker: the always-on sampled
 *	  wait-event tier.  pg_tracer.sample_rate times a second it reads, for
 *	  every process with a PGPROC and a backend status slot, its pid,
 *	  backend type, state, wait_event_info and query id, and adds the time
 *	  since the previous tick (measured, so a late tick loses nothing) to
 *	  the (event), (session, event) and (query id, event) rows of the
 *	  cumulative tables and of the current history buckets (ash.h).
 *
 * It is a separate worker from the helper link so that sampling never
 * waits on the helper.  SIGTERM (die) ends it; the postmaster restarts it
 * after a second, and a crash of any process restarts it with the cluster.
 *
 * What a sample means (README "Sampled wait events"):
 *	- Activity class, Client:ClientRead: idle (kept, not DB time).
 *	- no wait event: CPU*, except a client backend that is not inside a
 *	  statement (state idle / idle in transaction): that is the pseudo event
 *	  CPU:OutsideStatement, idle.  pg_stat_activity's "active" state is the
 *	  statement boundary, as for pg_stat_database.active_time.
 *	- pg_tracer's own workers are not sampled.
 *
 * Query ids.  st_query_id is reset to 0 whenever a backend reports a new
 * running state (every Parse/Bind/Execute message of the extended protocol)
 * and is set only once parse analysis or ExecutorStart ran, so a statement
 * waiting on a lock during parse analysis, or planning at Bind, shows 0.
 * Such samples of a running backend are held per backend ("pending"),
 * tagged with the statement's start timestamp, until the backend records
 * that statement's query id in its statement ring (ash_hooks.c, written
 * from post_parse_analyze_hook and ExecutorStart_hook); the ring is looked
 * at again 1, 2, 4, ... ms after a tick that left samples held
 * (later_looks), before short statements overwrite it.  A Bind message,
 * which plans without analysing, takes its Execute's id (same transaction).
 * A statement that ends without any query id gets 0.
 *
 * Locking: the sampler reads PGPROCs and PgBackendStatus entries without
 * locks (the latter with the changecount protocol, retrying a torn read),
 * so no backend ever waits for it.  The only lock is BackgroundWorkerLock,
 * in shared mode, once per new background-worker process to learn its
 * bgw_type, outside the write sections.  Its writes to shared memory are seqlock write sections
 * (ash.h); it never waits on a reader.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/backend_status.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/queryjumble.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "pg_tracer.h"
#include "ash.h"

/* The most a single tick may weigh; the rest counts as lost. */
#define PGT_TICK_CAP_US			2000000
/* Distinct pending events kept per backend before folding into query 0. */
#define PGT_MAX_PENDING			8
/* Torn reads of a status entry retried before skipping it this tick. */
#define PGT_BEENTRY_RETRIES		10
/*
 * How long a background worker's samples wait for a query id (a parallel
 * worker's comes at its start, an SPI statement's at ExecutorStart): past
 * that, the worker runs something that never gets one.
 */
#define PGT_HOLD_WORKER_MAX_US	1000000

/*
 * Time a held query-id-less sample waits for its query id.  When it is given,
 * its time is spread over the history buckets of the span it was taken in
 * (from the start of its first sample to its last tick), not added to the
 * bucket current then: a 30 s lock wait in parse analysis is 30 s of the
 * last minute, not of the last second.
 */
typedef struct PendingEvent
{
	uint32		event;
	TimestampTz stmt_ts;		/* the statement the samples belong to */
	TimestampTz xact_ts;
	TimestampTz span_start;		/* first sample's tick less its weight */
	TimestampTz first_tick;		/* the run began in this tick's bucket */
	TimestampTz last_tick;
	uint64		time_us;
	uint64		waits;
	uint64		samples;
	uint64		max_us;
} PendingEvent;

/* What the sampler remembers about the process in one status slot. */
typedef struct Tracker
{
	int32		pid;			/* 0 = nothing tracked */
	TimestampTz proc_start;
	uint64		key;			/* session key */
	int			session;		/* directory index, -1 if none */
	bool		ignored;		/* one of pg_tracer's own workers */
	Oid			userid;
	uint32		event;			/* event of the current run */
	uint64		run_qid;		/* query id the current run went to */
	uint64		run_us;			/* length of the current run */
	uint64		run_cut_us;		/* of it, before pg_tracer_reset(): not counted */
	bool		run_recount;	/* a run that goes on across a reset counts as
								 * one wait again, from the reset */
	uint64		db_time_us;
	bool		never_hold;		/* a background worker whose statement held
								 * its samples past PGT_HOLD_WORKER_MAX_US without
								 * an id: not held again */
	int			npending;
	PendingEvent pending[PGT_MAX_PENDING];
} Tracker;

/* One process as read this tick. */
typedef struct Sample
{
	int32		pid;
	BackendType bt;
	BackendState state;
	uint64		qid;
	Oid			userid;
	Oid			dbid;
	TimestampTz proc_start;
	TimestampTz stmt_ts;		/* st_activity_start_timestamp */
	TimestampTz xact_ts;		/* st_xact_start_timestamp */
	uint32		event;
} Sample;

/* pid -> PGPROC, from the PGPROC array. */
typedef struct ProcWait
{
	int32		pid;
	volatile PGPROC *proc;
} ProcWait;

static PgBackendStatus *beentries;
static Tracker *trackers;
static Sample *samples;
static bool *seen;
static bool *torn;
static char (*typenames)[64];
static ProcWait *procwaits;
static int	nslots;
static int64 last_gc_second;

/* a directory entry was given to a new session: its old rows are orphans */
static bool recycled_entries;

static void sampler_shutdown(int code, Datum arg);
static void ask_short_slice(void);
static void sampler_tick(uint64 weight_us, TimestampTz now);
static bool later_looks(uint64 period_us);
static bool any_pending(void);
static void resolve_held(TimestampTz now, bool all);
static int	read_procs(void);
static bool read_beentry(int slot, Sample *s, bool *torn);
static int	cmp_procwait(const void *a, const void *b);
static void handle_reset(void);
static void serve_reset(void);
static PgtAshBucket *rotate(bool fine, int64 period, TimestampTz now);
static int	forget_future(int64 second, TimestampTz now);
static void session_begin(int slot, const Sample *s, TimestampTz now);
static void session_end(int slot, TimestampTz now, PgtAshBucket *fb,
						PgtAshBucket *cb);
static void account(int slot, const Sample *s, uint64 w, PgtAshBucket *fb,
					PgtAshBucket *cb, TimestampTz now);
static void add_everywhere(PgtAshTable *cum, PgtAshBucket *fb,
						   PgtAshBucket *cb, const PgtAshRow *d, uint64 run);
static void add_query(PgtAshBucket *fb, PgtAshBucket *cb, uint64 qid,
					  Oid userid, uint32 event, uint64 time_us, uint64 waits,
					  uint64 nsamples, uint64 max_us, bool idle);
static bool may_get_query_id(int slot, const Sample *s);
static void pending_add(int slot, const Sample *s, uint32 event, uint64 w,
						bool new_run, TimestampTz now, PgtAshBucket *fb,
						PgtAshBucket *cb);
static void pending_resolve(int slot, const Sample *s, bool gone,
							PgtAshBucket *fb, PgtAshBucket *cb);
static void pending_give(Tracker *t, int i, uint64 qid, PgtAshBucket *fb,
						 PgtAshBucket *cb);
static void spread_over_ring(bool fine, const PendingEvent *p,
							 const PgtAshRow *q, PgtAshBucket *open);
static uint64 share_until(uint64 total, const PendingEvent *p, TimestampTz x);
static void gc_sessions(TimestampTz now);
static void adopt_directory(TimestampTz now);
static int	cmp_uint64(const void *a, const void *b);

/*
 * pgt_register_sampler
 *		Register the sampler; called from _PG_init.
 */
void
pgt_register_sampler(void)
{
	pgt_register_bgworker("pgt_sampler_main", "pg_tracer sampler");
}

/*
 * sampler_setup
 *		Find the backend status array through this worker's own slot, and
 *		allocate the per-slot state the ticks keep; then announce this
 *		sampler in shared memory (its pid, start time, empty live rows).
 */
static void
sampler_setup(void)
{
	if (MyBEEntry == NULL || MyBackendId == InvalidBackendId || pgt_ash == NULL)
		elog(FATAL, "pg_tracer sampler: no backend status slot or shared memory");
	beentries = MyBEEntry - (MyBackendId - 1);
	ask_short_slice();
	nslots = pgt_ash->nslots;

	trackers = MemoryContextAllocZero(TopMemoryContext, sizeof(Tracker) * nslots);
	samples = MemoryContextAllocZero(TopMemoryContext, sizeof(Sample) * nslots);
	seen = MemoryContextAllocZero(TopMemoryContext, sizeof(bool) * nslots);
	torn = MemoryContextAllocZero(TopMemoryContext, sizeof(bool) * nslots);
	typenames = MemoryContextAllocZero(TopMemoryContext, 64 * nslots);
	procwaits = MemoryContextAllocZero(TopMemoryContext,
									   sizeof(ProcWait) * ProcGlobal->allProcCount);

	pgt_seq_begin_write(&pgt_ash->seq);
	pgt_ash->sampler_pid = MyProcPid;
	pgt_ash->sampler_started = GetCurrentTimestamp();
	memset(pgt_ash_live(pgt_ash), 0, sizeof(PgtAshLive) * nslots);
	adopt_directory(pgt_ash->sampler_started);
	pgt_seq_end_write(&pgt_ash->seq);
}

/*
 * timed_tick
 *		One tick, weighted by the time since the previous one (*prev; a
 *		whole period for the first), and its cost counted.  Returns the
 *		milliseconds to wait for the next tick: the rest of the period,
 *		which runs from this tick's start, at least 1.
 */
static long
timed_tick(instr_time *prev, bool *have_prev)
{
	instr_time	now;
	instr_time	spent;
	uint64		weight;
	uint64		period_us = 1000000 / Max(pgt_sample_rate, 1);
	long		timeout_ms;

	INSTR_TIME_SET_CURRENT(now);
	if (*have_prev)
	{
		instr_time	d = now;

		INSTR_TIME_SUBTRACT(d, *prev);
		weight = INSTR_TIME_GET_MICROSEC(d);
	}
	else
		weight = period_us;
	*prev = now;
	*have_prev = true;

	sampler_tick(weight, GetCurrentTimestamp());

	INSTR_TIME_SET_CURRENT(spent);
	INSTR_TIME_SUBTRACT(spent, now);
	pgt_ash->tick_cpu_us += INSTR_TIME_GET_MICROSEC(spent);	/* sampler-only field */
	if (later_looks(period_us))
	{
		INSTR_TIME_SET_CURRENT(spent);
		INSTR_TIME_SUBTRACT(spent, now);	/* the period runs from the tick */
	}
	timeout_ms = (long) ((period_us > (uint64) INSTR_TIME_GET_MICROSEC(spent) ?
						  period_us - INSTR_TIME_GET_MICROSEC(spent) : 0) + 500) / 1000;
	return Max(timeout_ms, 1);
}

/*
 * pgt_sampler_main
 *		Entry point: tick at pg_tracer.sample_rate until told to stop.
 */
void
pgt_sampler_main(Datum main_arg)
{
	instr_time	prev;
	bool		have_prev = false;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	/* a stop is seen in the loop: the held samples are given first */
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	/*
	 * pg_cancel_backend() has no statement to cancel here: its ERROR would
	 * end the worker (no handler to catch it) and lose the held samples.
	 */
	pqsignal(SIGINT, SIG_IGN);
	BackgroundWorkerUnblockSignals();

	/* no database; gives MyBackendId/MyBEEntry to find the status array */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	sampler_setup();
	before_shmem_exit(sampler_shutdown, (Datum) 0);

	for (;;)
	{
		long		timeout_ms;

		CHECK_FOR_INTERRUPTS();
		if (ShutdownRequestPending)
		{
			/* before, a restart lost them: up to a whole lock wait */
			resolve_held(GetCurrentTimestamp(), true);
			proc_exit(1);		/* 1: the postmaster restarts a worker */
		}
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		if (pgt_sampler_enabled)
			timeout_ms = timed_tick(&prev, &have_prev);
		else
		{
			/* time while disabled is not sampled time */
			have_prev = false;
			timeout_ms = 1000;
			serve_reset();		/* a reset must not wait for the next enable */
		}

		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 timeout_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/*
 * ask_short_slice
 *		Ask the scheduler (Linux EEVDF, 6.12 and later) for a short time
 *		slice, which lets the sampler's wakeup preempt a running backend
 *		at once.  Without it, on a saturated host the sampler runs when a
 *		CPU frees up, which is when a backend blocks, mostly for its
 *		client: samples would lean towards idle.  Weight and priority are
 *		unchanged, so no privilege is needed; where the kernel does not
 *		know the request it is ignored.
 */
static void
ask_short_slice(void)
{
#ifdef SYS_sched_setattr
	struct
	{
		uint32		size;
		uint32		sched_policy;
		uint64		sched_flags;
		int32		sched_nice;
		uint32		sched_priority;
		uint64		sched_runtime;
		uint64		sched_deadline;
		uint64		sched_period;
		uint32		sched_util_min;
		uint32		sched_util_max;
	}			attr;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.sched_policy = 0;		/* SCHED_OTHER */
	errno = 0;
	attr.sched_nice = getpriority(PRIO_PROCESS, 0);
	attr.sched_runtime = 100000;	/* 100 us slice */
	if (syscall(SYS_sched_setattr, 0, &attr, 0) != 0)
		ereport(DEBUG1,
				(errmsg_internal("pg_tracer sampler: sched_setattr: %m")));
#endif
}

/*
 * sampler_shutdown
 *		before_shmem_exit: say that nobody samples any more.
 */
static void
sampler_shutdown(int code, Datum arg)
{
	int			i;

	/* an error inside a write section must not leave a counter odd */
	for (i = 0; i < PGT_ASH_FINE_BUCKETS + PGT_ASH_COARSE_BUCKETS; i++)
	{
		PgtAshBucket *b = i < PGT_ASH_FINE_BUCKETS ? pgt_ash_fine(pgt_ash, i) :
		pgt_ash_coarse(pgt_ash, i - PGT_ASH_FINE_BUCKETS);

		if (pg_atomic_read_u32(&b->seq) & 1)
			pg_atomic_fetch_add_u32(&b->seq, 1);
	}
	if (pg_atomic_read_u32(&pgt_ash->seq) & 1)
		pg_atomic_fetch_add_u32(&pgt_ash->seq, 1);
	pgt_seq_begin_write(&pgt_ash->seq);
	pgt_ash->sampler_pid = 0;
	memset(pgt_ash_live(pgt_ash), 0, sizeof(PgtAshLive) * nslots);
	pgt_seq_end_write(&pgt_ash->seq);
}

/*
 * cmp_procwait
 *		qsort/bsearch by pid.
 */
static int
cmp_procwait(const void *a, const void *b)
{
	int32		x = ((const ProcWait *) a)->pid;
	int32		y = ((const ProcWait *) b)->pid;

	return (x > y) - (x < y);
}

/*
 * read_procs
 *		pid -> PGPROC of every PGPROC in use, sorted by pid.  Unlocked
 *		reads of aligned 32-bit fields: a process that comes or goes
 *		meanwhile is seen or missed for one tick.  wait_event_info is read
 *		later, right after the process's status entry, so that the state
 *		and the wait event describe the same moment.
 *		In use: its latch owned by its pid.  A backend's exit (ProcKill)
 *		leaves the pid in the PGPROC it frees (before PostgreSQL 17) but
 *		disowns the latch; a new backend that the kernel gives that pid
 *		would otherwise be found twice, and maybe sampled from the dead
 *		one's frozen wait event for its whole life.
 */
static int
read_procs(void)
{
	uint32		n = ProcGlobal->allProcCount;
	int			count = 0;
	uint32		i;

	for (i = 0; i < n; i++)
	{
		volatile PGPROC *proc = &ProcGlobal->allProcs[i];
		int32		pid = proc->pid;

		if (pid == 0 || proc->procLatch.owner_pid != pid)
			continue;
		procwaits[count].pid = pid;
		procwaits[count].proc = proc;
		count++;
	}
	qsort(procwaits, count, sizeof(ProcWait), cmp_procwait);
	return count;
}

/*
 * read_beentry
 *		Consistent copy of the fields of one status slot that the sampler
 *		needs (changecount protocol, as pg_stat_activity reads them).
 *		False when the slot is unused, or stayed torn (*torn: the owner
 *		was preempted inside its update; try again next tick).
 */
static bool
read_beentry(int slot, Sample *s, bool *torn)
{
	volatile PgBackendStatus *be = &beentries[slot];
	int			attempt;

	for (attempt = 0; attempt < PGT_BEENTRY_RETRIES; attempt++)
	{
		int			before;
		int			after;

		pgstat_begin_read_activity(be, before);
		s->pid = be->st_procpid;
		s->bt = be->st_backendType;
		s->state = be->st_state;
		s->qid = be->st_query_id;
		s->userid = be->st_userid;
		s->dbid = be->st_databaseid;
		s->proc_start = be->st_proc_start_timestamp;
		s->stmt_ts = be->st_activity_start_timestamp;
		s->xact_ts = be->st_xact_start_timestamp;
		pgstat_end_read_activity(be, after);
		if (pgstat_read_activity_complete(before, after))
			return s->pid != 0;
	}
	*torn = true;
	return false;
}

/*
 * leader_query_id
 *		The query id a parallel worker's samples go to: its leader's, as
 *		the kernel tier's events do (its own is the statement it runs,
 *		which for a parallel scan inside a function is the nested one,
 *		not in pg_stat_statements with track = top; and a parallel index
 *		build's workers report none).  own when the leader's entry cannot
 *		be read consistently, belongs to another process, or has no id.
 */
static uint64
leader_query_id(volatile PGPROC *leader, uint64 own)
{
	int			backend_id = leader->backendId;
	int32		pid = leader->pid;
	volatile PgBackendStatus *be;
	int			attempt;

	if (backend_id < 1 || backend_id > MaxBackends || pid == 0)
		return own;
	be = &beentries[backend_id - 1];
	for (attempt = 0; attempt < PGT_BEENTRY_RETRIES; attempt++)
	{
		int			before;
		int			after;
		int32		be_pid;
		uint64		qid;

		pgstat_begin_read_activity(be, before);
		be_pid = be->st_procpid;
		qid = be->st_query_id;
		pgstat_end_read_activity(be, after);
		if (pgstat_read_activity_complete(before, after))
			return (be_pid == pid && qid != 0) ? qid : own;
	}
	return own;
}

/*
 * sample_slot
 *		Read backend status slot i and its process's wait event into
 *		samples[i]; seen[i] says whether it holds a live process other than
 *		this one, torn[i] whether the slot was mid-update.  Runs before the
 *		write section: a new background worker's type is looked up here.
 */
static void
sample_slot(int i, int nprocs)
{
	Sample	   *s = &samples[i];
	ProcWait	key;
	ProcWait   *pw;

	seen[i] = false;
	torn[i] = false;
	if (!read_beentry(i, s, &torn[i]) || s->pid == MyProcPid)
		return;
	key.pid = s->pid;
	pw = bsearch(&key, procwaits, nprocs, sizeof(ProcWait), cmp_procwait);
	if (pw == NULL)
		return;
	/* right after the state: the two must describe the same moment */
	s->event = pw->proc->wait_event_info;
	if (pw->proc->pid != s->pid)
		return;
	seen[i] = true;

	if (s->bt == B_BG_WORKER &&
		(trackers[i].pid != s->pid || trackers[i].proc_start != s->proc_start))
	{
		volatile PGPROC *leader = pw->proc->lockGroupLeader;
		/*
		 * A parallel worker, once in its leader's lock group, is named
		 * without BackgroundWorkerLock, which every parallel query's leader
		 * takes exclusively to register its workers: the sampler should not
		 * queue behind them.  A worker not yet in its group (the pointer
		 * read unlocked, maybe stale) is looked up as any other.
		 */
		const char *bgw = (leader != NULL && leader != pw->proc) ? "parallel worker" :
			GetBackgroundWorkerTypeByPid(s->pid);

		strlcpy(typenames[i], bgw ? bgw : GetBackendTypeDesc(s->bt),
				sizeof(typenames[i]));
	}
	if (s->bt == B_BG_WORKER)
	{
		volatile PGPROC *leader = pw->proc->lockGroupLeader;

		if (leader != NULL && leader != pw->proc)
			s->qid = leader_query_id(leader, s->qid);
	}
}

/*
 * account_samples
 *		Inside the write sections: end the sessions whose slot now holds
 *		another process or none, begin new ones, and account each sample
 *		with weight_us into the buckets fb and cb.
 */
static void
account_samples(uint64 weight_us, TimestampTz now, PgtAshBucket *fb, PgtAshBucket *cb)
{
	int			i;

	for (i = 0; i < nslots; i++)
	{
		Tracker    *t = &trackers[i];

		if (torn[i])
			continue;			/* mid-update: skip this tick, keep the session */
		if (t->pid != 0 &&
			(!seen[i] || t->pid != samples[i].pid ||
			 t->proc_start != samples[i].proc_start))
			session_end(i, now, fb, cb);
		if (!seen[i])
			continue;
		if (t->pid == 0)
			session_begin(i, &samples[i], now);
		if (t->ignored)
			continue;
		account(i, &samples[i], weight_us, fb, cb, now);
		if (t->npending > 0)
			pending_resolve(i, &samples[i], false, fb, cb);
	}
}

/*
 * sampler_tick
 *		Take one sample of every process and account it with weight_us.
 */
static void
sampler_tick(uint64 weight_us, TimestampTz now)
{
	int			nprocs = read_procs();
	int64		second = now / USECS_PER_SEC;
	uint64		lost = 0;
	int64		step_back_us = 0;
	int			dropped = 0;
	PgtAshBucket *fb;
	PgtAshBucket *cb;
	int			i;

	if (weight_us > PGT_TICK_CAP_US)
	{
		lost = weight_us - PGT_TICK_CAP_US;
		weight_us = PGT_TICK_CAP_US;
	}
	for (i = 0; i < nslots; i++)
		sample_slot(i, nprocs);

	pgt_seq_begin_write(&pgt_ash->seq);
	if (pg_atomic_read_u32(&pgt_ash->reset_requests) != pgt_ash->reset_served)
		handle_reset();
	if (pgt_ash->last_tick != 0 && second < pgt_ash->last_tick / USECS_PER_SEC)
	{
		step_back_us = pgt_ash->last_tick - now;
		dropped = forget_future(second, now);
	}
	fb = rotate(true, second, now);
	cb = rotate(false, second / PGT_ASH_COARSE_SECS, now);
	pgt_seq_begin_write(&fb->seq);
	pgt_seq_begin_write(&cb->seq);
	account_samples(weight_us, now, fb, cb);
	fb->last_tick = now;
	fb->elapsed_us += weight_us;
	cb->last_tick = now;
	cb->elapsed_us += weight_us;
	pgt_seq_end_write(&cb->seq);
	pgt_seq_end_write(&fb->seq);

	if (second != last_gc_second)
	{
		gc_sessions(now);
		last_gc_second = second;
	}
	if (step_back_us > 0)
		ereport(LOG,
				(errmsg("pg_tracer sampler: the clock went back %.1f s; the history of the %d seconds from the new time on was dropped",
						(double) step_back_us / 1e6, dropped)));
	pgt_ash->ticks++;
	pgt_ash->sampled_us += weight_us;
	pgt_ash->lost_us += lost;
	pgt_ash->last_tick = now;
	pgt_ash->rate_hz = pgt_sample_rate;
	pgt_seq_end_write(&pgt_ash->seq);
}

/*
 * serve_reset
 *		Serve a pending pg_tracer_reset() outside a tick (the sampler is
 *		disabled): in a write section of its own.
 */
static void
serve_reset(void)
{
	if (pg_atomic_read_u32(&pgt_ash->reset_requests) == pgt_ash->reset_served)
		return;
	pgt_seq_begin_write(&pgt_ash->seq);
	handle_reset();
	pgt_seq_end_write(&pgt_ash->seq);
}

/*
 * handle_reset
 *		Serve pg_tracer_reset(): empty the counters and the history, keep
 *		the sessions.  Inside the write section.
 */
static void
handle_reset(void)
{
	PgtAshLive *live = pgt_ash_live(pgt_ash);
	PgtAshTable *t;
	int			i;

	t = pgt_ash_events(pgt_ash);
	pgt_ash_table_init(t, t->size, t->limit);
	t = pgt_ash_sessions_tab(pgt_ash);
	pgt_ash_table_init(t, t->size, t->limit);
	t = pgt_ash_queries_tab(pgt_ash);
	pgt_ash_table_init(t, t->size, t->limit);
	for (i = 0; i < PGT_ASH_FINE_BUCKETS + PGT_ASH_COARSE_BUCKETS; i++)
	{
		PgtAshBucket *b = i < PGT_ASH_FINE_BUCKETS ? pgt_ash_fine(pgt_ash, i) :
		pgt_ash_coarse(pgt_ash, i - PGT_ASH_FINE_BUCKETS);

		pgt_seq_begin_write(&b->seq);
		b->period = 0;
		b->elapsed_us = 0;
		pgt_ash_table_init(&b->table, b->table.size, b->table.limit);
		pgt_seq_end_write(&b->seq);
	}
	for (i = 0; i < nslots; i++)
	{
		trackers[i].npending = 0;
		trackers[i].db_time_us = 0;
		trackers[i].run_cut_us = trackers[i].run_us;
		trackers[i].run_recount = true;
		live[i].db_time_us = 0;
	}
	for (i = 0; i < pgt_ash->nsessions; i++)
		pgt_ash_directory(pgt_ash)[i].db_time_us = 0;
	pgt_ash->ticks = 0;
	pgt_ash->sampled_us = 0;
	pgt_ash->lost_us = 0;
	pgt_ash->tick_cpu_us = 0;
	pgt_ash->session_overflow = 0;
	pgt_ash->reset_at = GetCurrentTimestamp();
	pgt_ash->reset_served = pg_atomic_read_u32(&pgt_ash->reset_requests);
}

/*
 * empty_bucket
 *		Make b hold period, with nothing in it yet.
 */
static void
empty_bucket(PgtAshBucket *b, int64 period, TimestampTz now)
{
	pgt_seq_begin_write(&b->seq);
	pgt_ash_table_init(&b->table, b->table.size, b->table.limit);
	b->period = period;
	b->first_tick = now;
	b->last_tick = now;
	b->elapsed_us = 0;
	pgt_seq_end_write(&b->seq);
}

/*
 * forget_future
 *		The wall clock went back (an NTP step, a VM's clock put right) to
 *		second: the buckets of that second and those after it would be
 *		found again, as their own period, when the clock gets there, and
 *		their samples counted twice with the new ones.  They are emptied
 *		(period 0: no window reads them; the coarse bucket of second's
 *		period goes too, with the part of it before the step).  Returns how
 *		many fine buckets were dropped (the caller logs it, outside the
 *		write section).
 */
static int
forget_future(int64 second, TimestampTz now)
{
	int64		coarse = second / PGT_ASH_COARSE_SECS;
	int			dropped = 0;
	int			i;

	for (i = 0; i < PGT_ASH_FINE_BUCKETS; i++)
	{
		PgtAshBucket *b = pgt_ash_fine(pgt_ash, i);

		if (b->period >= second)
		{
			empty_bucket(b, 0, now);
			dropped++;
		}
	}
	for (i = 0; i < PGT_ASH_COARSE_BUCKETS; i++)
	{
		PgtAshBucket *b = pgt_ash_coarse(pgt_ash, i);

		if (b->period >= coarse)
			empty_bucket(b, 0, now);
	}
	return dropped;
}

/*
 * rotate
 *		The bucket for this period, emptied first if it held an older one.
 */
static PgtAshBucket *
rotate(bool fine, int64 period, TimestampTz now)
{
	PgtAshBucket *b;

	if (fine)
		b = pgt_ash_fine(pgt_ash, (int) (period % PGT_ASH_FINE_BUCKETS));
	else
		b = pgt_ash_coarse(pgt_ash, (int) (period % PGT_ASH_COARSE_BUCKETS));
	if (b->period != period)
		empty_bucket(b, period, now);
	return b;
}

/*
 * session_begin
 *		A new process in this slot: give it a directory entry (the oldest
 *		exited one if none is free) and learn its type name.
 */
static void
session_begin(int slot, const Sample *s, TimestampTz now)
{
	Tracker    *t = &trackers[slot];
	PgtAshSession *dir = pgt_ash_directory(pgt_ash);
	const char *type_name;
	int			best = -1;
	int			i;

	memset(t, 0, sizeof(*t));
	t->pid = s->pid;
	t->proc_start = s->proc_start;
	t->key = ((uint64) (uint32) s->pid << 32) |
		((uint64) s->proc_start & UINT64CONST(0xFFFFFFFF));
	t->userid = s->userid;
	t->event = PG_UINT32_MAX;	/* no run yet */

	if (s->bt == B_BG_WORKER)
	{
		type_name = typenames[slot];
		t->ignored = strncmp(type_name, "pg_tracer ", 10) == 0;
	}
	else
		type_name = GetBackendTypeDesc(s->bt);

	/*
	 * One pass: an entry of this very process (the sampler restarted) goes
	 * on, with the DB time counted so far; else the first free one, else
	 * the one exited longest ago.
	 */
	for (i = 0; i < pgt_ash->nsessions; i++)
	{
		if (dir[i].key == t->key)
		{
			t->session = i;
			t->db_time_us = dir[i].db_time_us;
			dir[i].exited = false;
			dir[i].last_seen = now;
			return;
		}
		if (best >= 0 && dir[best].key == 0)
			continue;			/* a free one found: only a same-key one beats it */
		if (dir[i].key == 0 ||
			(dir[i].exited && (best < 0 || dir[i].last_seen < dir[best].last_seen)))
			best = i;
	}
	t->session = best;
	if (best < 0)
	{
		pgt_ash->session_overflow++;
		return;
	}
	if (dir[best].key != 0)
	{
		/*
		 * An exited session not yet past the longest window (gc_sessions
		 * frees those) is forgotten early: its rows go, and the windows of
		 * a role that may not see all lose its time.  Counted, so that
		 * churn beyond the directory's size shows.
		 */
		recycled_entries = true;	/* gc_sessions drops the old session's rows */
		pgt_ash->session_overflow++;
	}
	memset(&dir[best], 0, sizeof(PgtAshSession));
	dir[best].key = t->key;
	dir[best].pid = s->pid;
	dir[best].backend_type = (int32) s->bt;
	dir[best].userid = s->userid;
	dir[best].dbid = s->dbid;
	dir[best].proc_start = s->proc_start;
	dir[best].last_seen = now;
	strlcpy(dir[best].type_name, type_name, sizeof(dir[best].type_name));
}

/*
 * session_end
 *		The process in this slot is gone: its held samples get their
 *		statement's query id if one was recorded, else 0; its directory
 *		entry is marked exited.
 */
static void
session_end(int slot, TimestampTz now, PgtAshBucket *fb, PgtAshBucket *cb)
{
	Tracker    *t = &trackers[slot];
	PgtAshLive *live = pgt_ash_live(pgt_ash);

	if (t->npending > 0)
		pending_resolve(slot, NULL, true, fb, cb);
	if (t->session >= 0)
	{
		PgtAshSession *d = &pgt_ash_directory(pgt_ash)[t->session];

		if (d->key == t->key)
		{
			d->exited = true;
			d->last_seen = now;
		}
	}
	live[slot].pid = 0;
	memset(t, 0, sizeof(*t));
}

/*
 * sample_event
 *		The event a sample counts under: its wait event, or, when it waits
 *		on nothing, CPU (idle CPU for a client backend between statements).
 */
static uint32
sample_event(const Sample *s)
{
	if (s->event != 0)
		return s->event;
	return (s->bt == B_BACKEND &&
			(s->state == STATE_IDLE || s->state == STATE_IDLEINTRANSACTION ||
			 s->state == STATE_IDLEINTRANSACTION_ABORTED)) ?
		PGT_EV_IDLE_CPU : PGT_EV_CPU;
}

/*
 * advance_run
 *		Extend the tracker's run of event ev by w microseconds, or start a
 *		new run.  Returns whether this sample starts a wait (a new run, or
 *		the first since a reset); *run gets the run's length since the
 *		reset (what max_us sees).
 */
static bool
advance_run(Tracker *t, uint32 ev, uint64 w, uint64 *run)
{
	bool		new_run = (ev != t->event);

	if (new_run)
	{
		t->event = ev;
		t->run_us = 0;
		t->run_cut_us = 0;
	}
	else if (t->run_recount)
		new_run = true;			/* in the counters since the reset: a new wait */
	t->run_recount = false;
	t->run_us += w;
	*run = t->run_us - t->run_cut_us;
	return new_run;
}

/*
 * attribute_query
 *		Query attribution of a non-idle sample (row d, DB time only): to its
 *		query id, or, for a running statement whose id is not known yet,
 *		pending until it is; else to query id 0.
 */
static void
attribute_query(int slot, const Sample *s, const PgtAshRow *d, bool new_run,
				uint64 run, PgtAshBucket *fb, PgtAshBucket *cb, TimestampTz now)
{
	Tracker    *t = &trackers[slot];
	bool		running = (s->state == STATE_RUNNING || s->state == STATE_FASTPATH);

	if (s->qid != 0)
	{
		add_query(fb, cb, s->qid, t->userid, d->event, d->time_us,
				  (new_run || t->run_qid != s->qid) ? 1 : 0, 1, run, false);
		t->run_qid = s->qid;
	}
	else if (running && slot < MaxBackends && may_get_query_id(slot, s))
		pending_add(slot, s, d->event, d->time_us, new_run, now, fb, cb);
	else
		add_query(fb, cb, 0, t->userid, d->event, d->time_us, new_run ? 1 : 0, 1,
				  run, false);
}

/*
 * publish_live
 *		The process's row of the live array (and its session's DB time).
 */
static void
publish_live(int slot, const Sample *s, uint32 ev, bool idle)
{
	Tracker    *t = &trackers[slot];
	PgtAshLive *live = &pgt_ash_live(pgt_ash)[slot];

	live->pid = s->pid;
	live->session = t->session;
	live->event = ev;
	live->state = idle ? PGT_LIVE_IDLE :
		(ev == PGT_EV_CPU ? PGT_LIVE_ON_CPU : PGT_LIVE_WAITING);
	live->state_us = t->run_us;
	live->db_time_us = t->db_time_us;
	if (t->session >= 0)
		pgt_ash_directory(pgt_ash)[t->session].db_time_us = t->db_time_us;
}

/*
 * account
 *		Add one sample of the process in `slot`, weighing w microseconds.
 */
static void
account(int slot, const Sample *s, uint64 w, PgtAshBucket *fb, PgtAshBucket *cb,
		TimestampTz now)
{
	Tracker    *t = &trackers[slot];
	uint32		ev = sample_event(s);
	bool		idle = pgt_event_is_idle(ev);
	bool		new_run;
	PgtAshRow	d;
	uint64		run;

	/* a process that started since the last tick weighs its own age */
	if (t->event == PG_UINT32_MAX && s->proc_start > 0 &&
		now > s->proc_start && (uint64) (now - s->proc_start) < w)
		w = (uint64) (now - s->proc_start);
	new_run = advance_run(t, ev, w, &run);

	memset(&d, 0, sizeof(d));
	d.event = ev;
	d.idle = idle;
	d.time_us = w;
	d.waits = new_run ? 1 : 0;
	d.samples = 1;

	d.kind = PGT_ASH_EVENT;
	add_everywhere(pgt_ash_events(pgt_ash), fb, cb, &d, run);
	if (t->session >= 0)
	{
		d.kind = PGT_ASH_SESSION;
		d.key = t->key;
		add_everywhere(pgt_ash_sessions_tab(pgt_ash), fb, cb, &d, run);
		pgt_ash_directory(pgt_ash)[t->session].last_seen = now;
	}
	if (OidIsValid(t->userid) && pgt_ash_role_visible_type(s->bt))
	{
		/* the role's totals since the reset (cumulative table only) */
		d.kind = PGT_ASH_USER;
		d.key = t->userid;
		pgt_ash_table_add(pgt_ash_sessions_tab(pgt_ash), &d, run);
	}

	if (idle)
		t->run_qid = 0;
	else
	{
		attribute_query(slot, s, &d, new_run, run, fb, cb, now);
		t->db_time_us += w;
	}
	publish_live(slot, s, ev, idle);
}

/*
 * add_everywhere
 *		Add a delta row to a cumulative table and the two current buckets.
 */
static void
add_everywhere(PgtAshTable *cum, PgtAshBucket *fb, PgtAshBucket *cb,
			   const PgtAshRow *d, uint64 run)
{
	pgt_ash_table_add(cum, d, run);
	pgt_ash_table_add(&fb->table, d, run);
	pgt_ash_table_add(&cb->table, d, run);
}

/*
 * add_query
 *		Add to the (query id, user, event) rows.
 */
static void
add_query(PgtAshBucket *fb, PgtAshBucket *cb, uint64 qid, Oid userid,
		  uint32 event, uint64 time_us, uint64 waits, uint64 nsamples,
		  uint64 max_us, bool idle)
{
	PgtAshRow	d;

	memset(&d, 0, sizeof(d));
	d.kind = PGT_ASH_QUERY;
	d.key = qid;
	d.aux = userid;
	d.event = event;
	d.idle = idle;
	d.time_us = time_us;
	d.waits = waits;
	d.samples = nsamples;
	d.max_us = max_us;
	pgt_ash_table_add(pgt_ash_queries_tab(pgt_ash), &d, max_us);
	if (fb != NULL)
	{
		pgt_ash_table_add(&fb->table, &d, max_us);
		pgt_ash_table_add(&cb->table, &d, max_us);
	}
}

/*
 * may_get_query_id
 *		Can the running statement of this sample still get a query id, so
 *		that holding its samples is worth it?  Not where no query id is
 *		computed (compute_query_id off, or auto without a module that asks
 *		for one), and not in a WAL sender: its replication commands
 *		(START_REPLICATION, for as long as it streams) never get one, and
 *		their samples would be held as long as the standby stays connected,
 *		with the sampler looking again after every tick.  Nor in a
 *		background worker that once ran PGT_HOLD_WORKER_MAX_US without one
 *		(pending_resolve).
 */
static bool
may_get_query_id(int slot, const Sample *s)
{
	return IsQueryIdEnabled() &&
		(s->bt == B_BACKEND || (s->bt == B_BG_WORKER && !trackers[slot].never_hold));
}

/*
 * pending_add
 *		Hold a sample of a statement whose query id is not known yet.
 */
static void
pending_add(int slot, const Sample *s, uint32 event, uint64 w, bool new_run,
			TimestampTz now, PgtAshBucket *fb, PgtAshBucket *cb)
{
	Tracker    *t = &trackers[slot];
	PendingEvent *p = NULL;
	int			i;

	for (i = 0; i < t->npending; i++)
		if (t->pending[i].event == event && t->pending[i].stmt_ts == s->stmt_ts)
			p = &t->pending[i];
	if (p == NULL)
	{
		if (t->npending == PGT_MAX_PENDING)
		{
			/* too many: the oldest goes to its query id if known, else 0 */
			uint64		qid = 0;

			(void) pgt_stmt_lookup(slot, t->pid, t->pending[0].stmt_ts,
								   t->pending[0].xact_ts, &qid);
			pending_give(t, 0, qid, fb, cb);
		}
		p = &t->pending[t->npending++];
		memset(p, 0, sizeof(*p));
		p->event = event;
		p->stmt_ts = s->stmt_ts;
		p->xact_ts = s->xact_ts;
		p->span_start = now - (TimestampTz) Max(w, 1);
		p->first_tick = now;
	}
	p->last_tick = now;
	p->time_us += w;
	p->waits += new_run ? 1 : 0;
	p->samples++;
	p->max_us = Max(p->max_us, t->run_us - t->run_cut_us);
}

/*
 * pending_resolve
 *		Give held samples to their statement's query id once the backend
 *		recorded it (ash_hooks.c).  Samples whose statement is over, and
 *		whose transaction too (a Bind waits for its Execute, same
 *		transaction), with no id recorded, go to query id 0; so does
 *		everything of a process that is gone (gone = true, s = NULL).  With
 *		s NULL and gone false (resolve_held), only samples whose id is
 *		recorded are given.
 */
static void
pending_resolve(int slot, const Sample *s, bool gone, PgtAshBucket *fb,
				PgtAshBucket *cb)
{
	Tracker    *t = &trackers[slot];
	int			i = 0;

	while (i < t->npending)
	{
		PendingEvent *p = &t->pending[i];
		uint64		qid = 0;

		if (pgt_stmt_lookup(slot, t->pid, p->stmt_ts, p->xact_ts, &qid) ||
			gone ||
			(s != NULL &&
			 (!(s->state == STATE_RUNNING || s->state == STATE_FASTPATH) ||
			  s->xact_ts != p->xact_ts)))
			pending_give(t, i, qid, fb, cb);
		else if (s != NULL && s->bt == B_BG_WORKER &&
				 p->last_tick - p->span_start > PGT_HOLD_WORKER_MAX_US)
		{
			/*
			 * A worker "running" a long transaction with no statement id
			 * (logical replication's apply worker, from a remote BEGIN to
			 * its COMMIT): its time goes to query id 0 now, and its samples
			 * are not held again, nor the ticks' extra looks run for them.
			 */
			t->never_hold = true;
			pending_give(t, i, 0, fb, cb);
		}
		else
			i++;
	}
}

/*
 * later_looks
 *		After a tick that left samples held, look again 1, 2, 4, ... ms
 *		later (while samples are held, and the waits stay within a quarter
 *		of the sampling period) and give those whose statement has recorded
 *		its id by then (resolve_held).  One look a millisecond after the
 *		tick is enough on an idle host; on a busy one the backend may not get
 *		a CPU to finish parse analysis that soon, and by the next tick at a
 *		low rate its statement ring has moved on.  The passes' own time
 *		counts as the tick's.  Returns whether any look ran.
 */
static bool
later_looks(uint64 period_us)
{
	long		delay_ms = 1;
	uint64		waited_us = 0;
	bool		looked = false;

	while (any_pending() && (!looked || waited_us + delay_ms * 1000 <= period_us / 4))
	{
		instr_time	start;
		instr_time	spent;

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 delay_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		/* the latch set by SIGTERM or SIGHUP: the main loop's, not ours */
		if (ShutdownRequestPending || ConfigReloadPending)
		{
			SetLatch(MyLatch);
			break;
		}
		waited_us += delay_ms * 1000;
		delay_ms *= 2;
		looked = true;
		INSTR_TIME_SET_CURRENT(start);
		resolve_held(GetCurrentTimestamp(), false);
		INSTR_TIME_SET_CURRENT(spent);
		INSTR_TIME_SUBTRACT(spent, start);
		pgt_ash->tick_cpu_us += INSTR_TIME_GET_MICROSEC(spent);
	}
	return looked;
}

/*
 * any_pending
 *		Does any backend have samples held for their query id?
 */
static bool
any_pending(void)
{
	int			i;

	for (i = 0; i < nslots; i++)
		if (trackers[i].npending > 0)
			return true;
	return false;
}

/*
 * resolve_held
 *		Shortly after a tick, give held samples whose statement has recorded
 *		its query id by now.  A sample taken before its statement's id
 *		existed (raw parsing, say) could otherwise only be resolved at the
 *		next tick, and a backend that runs more short statements per tick
 *		than its statement ring holds (PGT_STMT_RING: 64 per 10 ms at 100
 *		Hz is 6,400 a second, which one pgbench -S client exceeds) would
 *		have overwritten the entry by then, leaving the samples to id 0.
 *		With all, as the sampler stops, every held sample is given: to its
 *		statement's id if recorded, else 0 (its memory goes with it).  The
 *		same write sections as a tick.
 */
static void
resolve_held(TimestampTz now, bool all)
{
	int64		second = now / USECS_PER_SEC;
	PgtAshBucket *fb;
	PgtAshBucket *cb;
	int			i;

	pgt_seq_begin_write(&pgt_ash->seq);
	fb = rotate(true, second, now);
	cb = rotate(false, second / PGT_ASH_COARSE_SECS, now);
	pgt_seq_begin_write(&fb->seq);
	pgt_seq_begin_write(&cb->seq);
	for (i = 0; i < nslots; i++)
		if (trackers[i].npending > 0)
			pending_resolve(i, NULL, all, fb, cb);
	pgt_seq_end_write(&cb->seq);
	pgt_seq_end_write(&fb->seq);
	pgt_seq_end_write(&pgt_ash->seq);
}

/*
 * pending_give
 *		Account held entry i to query id qid and drop it: its whole time to
 *		the cumulative table, and its share of each history bucket still in
 *		the rings to that bucket.  fb and cb are the current buckets, whose
 *		write sections the caller holds.
 */
static void
pending_give(Tracker *t, int i, uint64 qid, PgtAshBucket *fb, PgtAshBucket *cb)
{
	PendingEvent *p = &t->pending[i];
	PgtAshRow	q;

	add_query(NULL, NULL, qid, t->userid, p->event, p->time_us, p->waits,
			  p->samples, p->max_us, false);
	memset(&q, 0, sizeof(q));
	q.kind = PGT_ASH_QUERY;
	q.key = qid;
	q.aux = t->userid;
	q.event = p->event;
	spread_over_ring(true, p, &q, fb);
	spread_over_ring(false, p, &q, cb);
	memmove(&t->pending[i], &t->pending[i + 1],
			sizeof(PendingEvent) * (t->npending - i - 1));
	t->npending--;
}

/*
 * spread_over_ring
 *		Add to each bucket of one ring the part of held entry p that falls
 *		in its period, taking p's time as spread evenly over its span (the
 *		samples of one held entry are one statement's consecutive waits of
 *		one event, so that is close).  The run's start (waits) goes to the
 *		bucket of its first tick.  Buckets already reused for a later period
 *		get nothing: that part has left every window.  `open` is the ring's
 *		current bucket, already in its write section; only the periods from
 *		the span's start (or the ring's oldest) to its end are looked at.
 */
static void
spread_over_ring(bool fine, const PendingEvent *p, const PgtAshRow *q,
				 PgtAshBucket *open)
{
	int			n = fine ? PGT_ASH_FINE_BUCKETS : PGT_ASH_COARSE_BUCKETS;
	int64		len_us = (fine ? 1 : PGT_ASH_COARSE_SECS) * USECS_PER_SEC;
	int64		period = Max(p->span_start / len_us, open->period - (n - 1));
	int64		last = Min(p->last_tick / len_us, open->period);

	/* the periods of the span still in the ring: mostly one or two */
	for (; period <= last; period++)
	{
		PgtAshBucket *b = fine ? pgt_ash_fine(pgt_ash, (int) (period % n)) :
		pgt_ash_coarse(pgt_ash, (int) (period % n));
		TimestampTz from = Max(p->span_start, b->period * len_us);
		TimestampTz to = Min(p->last_tick, (b->period + 1) * len_us);
		PgtAshRow	d = *q;

		if (b->period != period || to <= from)
			continue;
		d.time_us = share_until(p->time_us, p, to) - share_until(p->time_us, p, from);
		d.samples = share_until(p->samples, p, to) - share_until(p->samples, p, from);
		if (p->first_tick >= b->period * len_us &&
			p->first_tick < (b->period + 1) * len_us)
			d.waits = p->waits;
		if (d.time_us == 0 && d.samples == 0 && d.waits == 0)
			continue;
		d.max_us = Min(p->max_us, (uint64) (to - p->span_start));
		if (b != open)
			pgt_seq_begin_write(&b->seq);
		pgt_ash_table_add(&b->table, &d, d.max_us);
		if (b != open)
			pgt_seq_end_write(&b->seq);
	}
}

/*
 * share_until
 *		The part of `total` (time or samples) of held entry p taken before
 *		instant x of its span, rounded so that consecutive parts sum to the
 *		whole exactly.  A span is never empty (pending_add).
 */
static uint64
share_until(uint64 total, const PendingEvent *p, TimestampTz x)
{
	double		len = (double) (p->last_tick - p->span_start);

	if (x >= p->last_tick)
		return total;
	if (x <= p->span_start || len <= 0)
		return 0;
	return (uint64) floor((double) total * (double) (x - p->span_start) / len + 0.5);
}

/*
 * cmp_uint64
 *		qsort/bsearch comparator of session keys.
 */
static int
cmp_uint64(const void *a, const void *b)
{
	uint64		x = *(const uint64 *) a;
	uint64		y = *(const uint64 *) b;

	return (x > y) - (x < y);
}

/*
 * gc_sessions
 *		Forget sessions that exited longer ago than the longest window:
 *		free their directory entries and drop their cumulative rows (the
 *		(session, event) table would otherwise fill with the dead), and the
 *		rows of sessions whose entries session_begin gave to new ones.  The
 *		(user, event) rows stay: they hold the dropped sessions' time.
 */
static void
gc_sessions(TimestampTz now)
{
	PgtAshSession *dir = pgt_ash_directory(pgt_ash);
	PgtAshTable *tab = pgt_ash_sessions_tab(pgt_ash);
	TimestampTz horizon = now - (TimestampTz) (PGT_ASH_MAX_WINDOW_S + PGT_ASH_COARSE_SECS) * USECS_PER_SEC;
	uint64	   *kept;
	int			nkept = 0;
	bool		freed = false;
	PgtAshTable *copy;
	uint32		i;
	int			j;

	for (j = 0; j < pgt_ash->nsessions; j++)
		if (dir[j].key != 0 && dir[j].exited && dir[j].last_seen < horizon)
		{
			memset(&dir[j], 0, sizeof(PgtAshSession));
			freed = true;
		}
	if (!freed && !recycled_entries)
		return;
	recycled_entries = false;

	/*
	 * Keep the rows of the sessions the directory still has (sorted, so that
	 * each row's test is a binary search): not those freed above, nor those
	 * of entries session_begin gave to a new session since the last pass.
	 */
	kept = palloc(sizeof(uint64) * Max(pgt_ash->nsessions, 1));
	for (j = 0; j < pgt_ash->nsessions; j++)
		if (dir[j].key != 0)
			kept[nkept++] = dir[j].key;
	qsort(kept, nkept, sizeof(uint64), cmp_uint64);
	copy = palloc(pgt_ash_table_bytes(tab->size));
	memcpy(copy, tab, pgt_ash_table_bytes(tab->size));
	pgt_ash_table_init(tab, copy->size, copy->limit);
	tab->overflow_rows = copy->overflow_rows;
	tab->overflow_us = copy->overflow_us;
	for (i = 0; i < copy->size; i++)
	{
		PgtAshRow  *r = &copy->rows[i];

		if (r->kind == PGT_ASH_EMPTY)
			continue;
		if (r->kind == PGT_ASH_USER ||
			bsearch(&r->key, kept, nkept, sizeof(uint64), cmp_uint64) != NULL)
		{
			PgtAshRow  *n = pgt_ash_table_get(tab, r->kind, r->key, r->event, r->aux);

			if (n != NULL)
				*n = *r;
		}
	}
	pfree(copy);
	pfree(kept);
}

/*
 * adopt_directory
 *		At the sampler's start: the session directory may hold entries of a
 *		sampler that ran before (it restarted after an error, or was
 *		terminated).  Its trackers are gone, so every entry not marked
 *		exited is marked so now; a process still running finds its entry
 *		again by key at its first sample (session_begin), the others are
 *		collected with the rest of the exited.
 */
static void
adopt_directory(TimestampTz now)
{
	PgtAshSession *dir = pgt_ash_directory(pgt_ash);
	int			j;

	for (j = 0; j < pgt_ash->nsessions; j++)
		if (dir[j].key != 0 && !dir[j].exited)
		{
			dir[j].exited = true;
			dir[j].last_seen = now;
		}
}
