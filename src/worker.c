/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  The "pg_tracer helper link" background worker.
 *
 * At start the worker writes <PGDATA>/pg_tracer.layout (layout_writer.c),
 * then every PGT_IMPORT_INTERVAL_MS it imports the helper's segment and
 * publishes what it found in shared memory (helper_link.c).  It connects to
 * no database: BackgroundWorkerInitializeConnection(NULL, NULL, 0) gives it
 * a BackendId and a PgBackendStatus slot (MyBEEntry), which the layout
 * writer needs, and access to shared catalogs only.
 *
 * Signals: SIGHUP reloads the configuration; SIGTERM is die(), so the
 * worker leaves at the next CHECK_FOR_INTERRUPTS() with FATAL and the
 * postmaster restarts it after bgw_restart_time unless the server is
 * shutting down.
 *
 * Locking: none of its own; see helper_link.c for the shared area.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "pg_tracer.h"

/* How often the segment is imported. */
#define PGT_IMPORT_INTERVAL_MS		250

/* How often a failed layout write is retried, in import iterations. */
#define PGT_LAYOUT_RETRY_ITERATIONS	40

static void pgt_worker_write_layout(bool first_attempt);

/*
 * pgt_register_bgworker
 *		Register one of pg_tracer's background workers (entry point
 *		`function` of this library, shown as `name`): shared memory, started
 *		once the cluster is consistent, restarted 1 s after it dies.  Called
 *		from _PG_init.
 */
void
pgt_register_bgworker(const char *function, const char *name)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS |
		BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	worker.bgw_restart_time = 1;
	strlcpy(worker.bgw_library_name, "pg_tracer", BGW_MAXLEN);
	strlcpy(worker.bgw_function_name, function, BGW_MAXLEN);
	strlcpy(worker.bgw_name, name, BGW_MAXLEN);
	strlcpy(worker.bgw_type, name, BGW_MAXLEN);
	worker.bgw_main_arg = (Datum) 0;
	worker.bgw_notify_pid = 0;
	RegisterBackgroundWorker(&worker);
}

/*
 * pgt_register_worker
 *		Register the helper-link worker; called from _PG_init.
 */
void
pgt_register_worker(void)
{
	pgt_register_bgworker("pgt_worker_main", "pg_tracer helper link");
}

/*
 * pgt_worker_main
 *		Entry point of the background worker.
 */
void
pgt_worker_main(Datum main_arg)
{
	MemoryContext iter_cxt;
	bool		layout_done;
	int			iterations = 0;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	/* no database: enough for MyBackendId and MyBEEntry */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	pgt_worker_write_layout(true);

	iter_cxt = AllocSetContextCreate(TopMemoryContext, "pg_tracer import",
									 ALLOCSET_DEFAULT_SIZES);
	for (;;)
	{
		MemoryContext old;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		old = MemoryContextSwitchTo(iter_cxt);
		pgt_link_import();
		MemoryContextSwitchTo(old);
		MemoryContextReset(iter_cxt);
		pgt_debug_trap_report();

		SpinLockAcquire(&pgt_shared->mutex);
		layout_done = pgt_shared->layout_written;
		SpinLockRelease(&pgt_shared->mutex);
		if (!layout_done && ++iterations % PGT_LAYOUT_RETRY_ITERATIONS == 0)
			pgt_worker_write_layout(false);

		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 PGT_IMPORT_INTERVAL_MS,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/*
 * pgt_worker_write_layout
 *		Write the layout file and record the outcome in shared memory.
 *		A failure is logged once (first attempt) and retried quietly.
 */
static void
pgt_worker_write_layout(bool first_attempt)
{
	char		err[PGT_REASON_LEN];
	char		path[MAXPGPATH];

	pgt_layout_path(path, sizeof(path));
	if (pgt_write_layout(err, sizeof(err)))
	{
		pgt_link_set_layout(true, NULL);
		if (!first_attempt)
			ereport(LOG,
					(errmsg("pg_tracer: wrote layout file \"%s\"", path)));
		return;
	}
	pgt_link_set_layout(false, err);
	if (first_attempt)
		ereport(WARNING,
				(errcode(ERRCODE_IO_ERROR),
				 errmsg("pg_tracer: could not write layout file \"%s\"", path),
				 errdetail_internal("%s", err),
				 errhint("The helper cannot read backend state without it; the background worker retries every %d seconds.",
						 PGT_IMPORT_INTERVAL_MS * PGT_LAYOUT_RETRY_ITERATIONS / 1000)));
}
