/*-------------------------------------------------------------------------
 *
 * ash_hooks.c
 *	  Backend side of query-id attribution for the sampled wait-event tier:
 *	  post_parse_analyze_hook and ExecutorStart_hook record, per backend,
 *	  which query id each statement got (the statement ring, ash.h), and
 *	  pgt_stmt_lookup() lets the sampler find it afterwards.
 *
 * Why: PostgreSQL sets st_query_id only after parse analysis (or at
 * ExecutorStart) and resets it at every protocol message, so samples of a
 * statement taken before its id existed (waiting for a lock inside parse
 * analysis, planning at Bind) see 0, and a short statement's id may never
 * be visible at a tick at all.  The ring keeps the ids long enough for the
 * sampler to give those samples to the statement they belong to.
 *
 * Cost: one comparison per hook call, and per statement one 32-byte write
 * to the backend's own ring entry.
 *
 * Locking: each ring is written only by its backend; each entry is its own
 * seqlock.  The sampler reads without locks and ignores torn entries.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "parser/analyze.h"
#include "storage/backendid.h"

#include "pg_tracer.h"
#include "ash.h"

static post_parse_analyze_hook_type prev_post_parse_analyze_hook = NULL;
static ExecutorStart_hook_type prev_ExecutorStart_hook = NULL;

static void pgt_post_parse_analyze(ParseState *pstate, Query *query,
								   JumbleState *jstate);
static void pgt_executor_start(QueryDesc *queryDesc, int eflags);
static void record_query_id(uint64 qid);
static void ring_put(TimestampTz ts, uint64 qid);
static void pgt_xact_abort(XactEvent event, void *arg);
static void pgt_subxact_abort(SubXactEvent event, SubTransactionId mySubid,
							  SubTransactionId parentSubid, void *arg);

/*
 * pgt_ash_install_hooks
 *		Called from _PG_init (preload only).
 */
void
pgt_ash_install_hooks(void)
{
	prev_post_parse_analyze_hook = post_parse_analyze_hook;
	post_parse_analyze_hook = pgt_post_parse_analyze;
	prev_ExecutorStart_hook = ExecutorStart_hook;
	ExecutorStart_hook = pgt_executor_start;
	RegisterXactCallback(pgt_xact_abort, NULL);
	RegisterSubXactCallback(pgt_subxact_abort, NULL);
}

/*
 * pgt_xact_abort
 *		A transaction that aborts ends its statement: one that recorded no
 *		id (it failed in parse analysis, waiting for a lock until
 *		lock_timeout) gets an entry with id 0, so that its held samples go
 *		to 0, not to the next statement of the transaction (the client's
 *		ROLLBACK, whose transaction start is the same).
 */
static void
pgt_xact_abort(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		ring_put(GetCurrentStatementStartTimestamp(), 0);
}

/*
 * pgt_subxact_abort
 *		The same for a statement that fails inside a subtransaction (psql's
 *		ON_ERROR_ROLLBACK, a driver's automatic savepoints): the client's
 *		next statement, ROLLBACK TO SAVEPOINT, is of the same transaction.
 *		A statement that recorded its id keeps it (ring_put adds nothing
 *		for a statement it has an entry of), as does one that catches the
 *		error in a PL/pgSQL EXCEPTION block.
 */
static void
pgt_subxact_abort(SubXactEvent event, SubTransactionId mySubid,
				  SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		ring_put(GetCurrentStatementStartTimestamp(), 0);
}

/*
 * pgt_post_parse_analyze
 *		The statement's query id is known from here on.
 */
static void
pgt_post_parse_analyze(ParseState *pstate, Query *query, JumbleState *jstate)
{
	if (prev_post_parse_analyze_hook)
		prev_post_parse_analyze_hook(pstate, query, jstate);
	record_query_id(query->queryId);
}

/*
 * pgt_executor_start
 *		Statements executed without parse analysis (extended protocol with
 *		a cached plan, EXECUTE) get their query id here.
 */
static void
pgt_executor_start(QueryDesc *queryDesc, int eflags)
{
	record_query_id(queryDesc->plannedstmt->queryId);
	if (prev_ExecutorStart_hook)
		prev_ExecutorStart_hook(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
}

/*
 * record_query_id
 *		Remember (statement start, query id) in this backend's ring.  The
 *		first id of a statement wins: nested statements (functions) share
 *		their top-level statement's start timestamp, as pg_stat_activity
 *		keeps the top-level id.
 */
static void
record_query_id(uint64 qid)
{
	if (qid != 0)
		ring_put(GetCurrentStatementStartTimestamp(), qid);
}

/*
 * ring_put
 *		Append (ts, qid) to this backend's ring unless its last entry is of
 *		the same statement already.
 */
static void
ring_put(TimestampTz ts, uint64 qid)
{
	PgtStmtRing *ring;
	PgtStmtEntry *e;
	uint32		n;

	if (pgt_ash == NULL || MyBackendId == InvalidBackendId || MyBackendId > MaxBackends)
		return;
	ring = pgt_ash_stmt_ring(pgt_ash, MyBackendId - 1);
	n = pg_atomic_read_u32(&ring->next);
	if (n > 0)
	{
		e = &ring->e[(n - 1) % PGT_STMT_RING];
		if (e->pid == MyProcPid && e->stmt_ts == ts)
			return;
	}
	e = &ring->e[n % PGT_STMT_RING];
	pgt_seq_begin_write(&e->seq);
	e->pid = MyProcPid;
	e->stmt_ts = ts;
	e->xact_ts = GetCurrentTransactionStartTimestamp();
	e->qid = qid;
	pgt_seq_end_write(&e->seq);
	pg_atomic_write_u32(&ring->next, n + 1);
}

/*
 * pgt_stmt_lookup
 *		The query id of the statement of process `pid` (status slot `slot`)
 *		that started at stmt_ts.  A statement with no id of its own (a Bind
 *		message, which plans but does not analyse) takes the id of the next
 *		statement of the same transaction (its Execute), provided the ring
 *		still reaches back to it: an entry of the process from before it, or
 *		fewer entries of the process than the ring holds (none of them was
 *		overwritten).  Otherwise its own entry may have been, and the next
 *		one found could be any later statement.  False if none.
 */
bool
pgt_stmt_lookup(int slot, int32 pid, TimestampTz stmt_ts, TimestampTz xact_ts,
				uint64 *qid)
{
	PgtStmtRing *ring;
	TimestampTz best_ts = 0;
	uint64		best = 0;
	int			own = 0;		/* entries of the process */
	bool		reaches_back = false;
	int			i;

	if (slot < 0 || slot >= MaxBackends)
		return false;
	ring = pgt_ash_stmt_ring(pgt_ash, slot);
	for (i = 0; i < PGT_STMT_RING; i++)
	{
		volatile PgtStmtEntry *e = &ring->e[i];
		uint32		before;
		int32		epid;
		TimestampTz ets;
		TimestampTz exact;
		uint64		eqid;

		before = pg_atomic_read_u32(&ring->e[i].seq);
		pg_read_barrier();
		epid = e->pid;
		ets = e->stmt_ts;
		exact = e->xact_ts;
		eqid = e->qid;
		pg_read_barrier();
		if ((before & 1) || pg_atomic_read_u32(&ring->e[i].seq) != before ||
			epid != pid)
			continue;
		own++;
		reaches_back |= ets < stmt_ts;
		if (ets == stmt_ts)
		{
			*qid = eqid;
			return true;
		}
		if (ets > stmt_ts && exact == xact_ts &&
			(best_ts == 0 || ets < best_ts))
		{
			best_ts = ets;
			best = eqid;
		}
	}
	if (!reaches_back && own >= PGT_STMT_RING)
		best_ts = 0;
	*qid = best_ts != 0 ? best : 0;
	return best_ts != 0;
}
