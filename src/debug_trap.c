/*-------------------------------------------------------------------------
 *
 * debug_trap.c
 *	  Keep a PostgreSQL process alive through a debug trap that no
 *	  breakpoint claims, and say in the server log that it happened.
 *
 * With `--exact-source watchpoint` the helper puts a hardware write
 * breakpoint on every process's PGPROC.wait_event_info.  The kernel's #DB
 * handler (x86 exc_debug_user) sends the process SIGTRAP when the trap's
 * DR6 names a breakpoint that no perf event claims, or names none at all
 * (which it takes for an INT1 instruction).  On a 2-vCPU Intel VM a client
 * backend died of exactly that SIGTRAP under the helper's breakpoints; its
 * default action ends the process with a core dump, and the postmaster's
 * crash recovery then ends every session of the cluster.
 *
 * Such a trap asks nothing of the process.  A data breakpoint is a trap,
 * not a fault: it is raised after the write completed, and returning from
 * the handler resumes at the next instruction, as the process would have
 * gone on had the kernel claimed the trap.  So the library installs, in
 * the postmaster (inherited by every child it forks), a SIGTRAP handler
 * that absorbs the two codes the #DB handler sends, TRAP_HWBKPT and
 * TRAP_BRKPT, and counts them.  What the kernel did not do is run the
 * breakpoint's perf event, so a watching helper missed that write: the
 * handler stores the process's wait_event_info again, unchanged, and the
 * breakpoint sees it a few microseconds late (pgt_debug_trap_replay).
 * Every other SIGTRAP keeps its default action: `kill -TRAP` (SI_USER),
 * INT3 (SI_KERNEL), single-step (TRAP_TRACE: returning would step again),
 * a perf event's sigtrap (TRAP_PERF).  A debugger sees every signal before
 * the handler (ptrace), so debugging a backend is unchanged.
 *
 * The background worker reports new absorbed traps in the server log
 * (pgt_debug_trap_report), once per import interval at most; the count
 * it reported lives in the shared area too, so a restarted worker does not
 * report the same traps again.  pg_tracer_debug_traps() (SQL, since 0.5.5)
 * shows the same counters, and whether the calling process has the handler.
 *
 * Locking: the handler only adds to and stores pg_atomic_uint32 counters
 * in the shared area; they are lock-free wherever the platform has native
 * 32-bit atomics, which the handler requires (it counts nothing where
 * atomics are simulated with semaphores, which a signal handler must not
 * take).  Only the worker writes `traps_reported`.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "fmgr.h"
#include "funcapi.h"
#include "port/atomics.h"
#include "utils/builtins.h"
#include "utils/wait_event.h"

#include "pg_tracer.h"

/*
 * The si_codes the #DB handler sends: absorbed only where they are named,
 * and only on x86, where a data breakpoint traps after the write and
 * TRAP_BRKPT comes from #DB alone.  On arm64 a watchpoint reports before
 * the store completes and a `brk` instruction (__builtin_trap, the traps
 * the compiler inserts on erroneous paths) sends TRAP_BRKPT with the pc
 * still on it: returning would trap again, forever, instead of the crash
 * that lets the postmaster recover.
 */
#if defined(TRAP_HWBKPT) && defined(TRAP_BRKPT) && \
	(defined(__x86_64__) || defined(__i386__))
#define PGT_HAVE_DB_SI_CODES 1
#endif

#ifdef PGT_HAVE_DB_SI_CODES
/* Set while the handler replays a store (see pgt_debug_trap_replay). */
static volatile sig_atomic_t pgt_replaying = 0;

static void pgt_debug_trap_handler(int signo, siginfo_t *info, void *context);
static void pgt_debug_trap_replay(void);
#endif

PG_FUNCTION_INFO_V1(pg_tracer_debug_traps);

/*
 * pgt_debug_trap_install
 *		Install the SIGTRAP handler; called from _PG_init in the postmaster,
 *		whose children inherit it.  A failure leaves the default action and
 *		is logged: the process works as without the library.  Off x86, or
 *		where the platform names no #DB si_codes, nothing is installed
 *		(see PGT_HAVE_DB_SI_CODES).
 */
void
pgt_debug_trap_install(void)
{
#ifdef PGT_HAVE_DB_SI_CODES
	struct sigaction act;

	memset(&act, 0, sizeof(act));
	act.sa_sigaction = pgt_debug_trap_handler;
	/* SA_NODEFER: a trap raised by the replayed store comes back here */
	act.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
	sigemptyset(&act.sa_mask);
	if (sigaction(SIGTRAP, &act, NULL) != 0)
		ereport(LOG,
				(errmsg("pg_tracer: could not install the SIGTRAP handler: %m"),
				 errdetail("A debug trap that no hardware breakpoint claims will end the process.")));
#endif
}

#ifdef PGT_HAVE_DB_SI_CODES
/*
 * pgt_debug_trap_handler
 *		Absorb a #DB trap no breakpoint claimed; give any other SIGTRAP its
 *		default action.  Async-signal-safe: atomics, one store, sigaction
 *		and raise; errno is kept for the code it interrupted.
 */
static void
pgt_debug_trap_handler(int signo, siginfo_t *info, void *context)
{
	struct sigaction dfl;
	int			save_errno = errno;

	if (info != NULL && (info->si_code == TRAP_HWBKPT || info->si_code == TRAP_BRKPT))
	{
#ifndef PG_HAVE_ATOMIC_U32_SIMULATION
		if (pgt_shared != NULL)
		{
			pg_atomic_write_u32(&pgt_shared->trap_last_pid, (uint32) getpid());
			pg_atomic_write_u32(&pgt_shared->trap_last_code, (uint32) info->si_code);
			pg_atomic_fetch_add_u32(&pgt_shared->traps_absorbed, 1);
		}
#endif
		pgt_debug_trap_replay();
		errno = save_errno;
		return;
	}

	/*
	 * Not ours to absorb: the default action, as without the library.  The
	 * raised signal is delivered, with SIG_DFL, before raise() returns.
	 */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	(void) sigaction(SIGTRAP, &dfl, NULL);
	(void) raise(SIGTRAP);
}

/*
 * pgt_debug_trap_replay
 *		Store this process's wait_event_info again, unchanged, so that a
 *		breakpoint on it sees the write the absorbed trap followed.  Only
 *		this process writes it, and main-line code cannot run while the
 *		handler does, so the value read is the value stored.  A trap the
 *		store itself raises unclaimed is absorbed without another replay.
 */
static void
pgt_debug_trap_replay(void)
{
	volatile uint32 *wei = (volatile uint32 *) my_wait_event_info;

	if (pgt_replaying || wei == NULL)
		return;
	pgt_replaying = 1;
	*wei = *wei;
	pgt_replaying = 0;
}
#endif

/*
 * pgt_debug_trap_code_name
 *		What an absorbed trap's si_code says, for the log.
 */
static const char *
pgt_debug_trap_code_name(uint32 code)
{
#ifdef PGT_HAVE_DB_SI_CODES
	if (code == TRAP_HWBKPT)
		return "TRAP_HWBKPT: a breakpoint slot no perf event owns";
	if (code == TRAP_BRKPT)
		return "TRAP_BRKPT: a trap whose DR6 names no cause";
#endif
	return "unknown";
}

/*
 * pgt_debug_trap_report
 *		Called by the background worker each iteration: log the traps
 *		absorbed since the last report, with the latest one's process.
 */
void
pgt_debug_trap_report(void)
{
	uint32		total = pg_atomic_read_u32(&pgt_shared->traps_absorbed);
	uint32		fresh = total - pg_atomic_read_u32(&pgt_shared->traps_reported);
	uint32		code;

	if (fresh == 0)
		return;
	pg_atomic_write_u32(&pgt_shared->traps_reported, total);
	code = pg_atomic_read_u32(&pgt_shared->trap_last_code);
	ereport(LOG,
			(errmsg("pg_tracer: absorbed %u debug trap(s) that no hardware breakpoint claimed (%u since the server started or crash-restarted)",
					fresh, total),
			 errdetail("The latest was in process %u, si_code %u (%s). The process went on; without pg_tracer's handler the kernel's SIGTRAP would have ended it and the cluster with it.",
					   pg_atomic_read_u32(&pgt_shared->trap_last_pid), code,
					   pgt_debug_trap_code_name(code)),
			 errhint("Hardware breakpoints come from pg-tracer --exact-source watchpoint or auto; --exact-source syscall sets none.")));
}

/*
 * handler_installed
 *		Is this process's SIGTRAP action the handler?  A backend inherits it
 *		from the postmaster; code that replaced it since (another library,
 *		a debugger's helper) would leave the process unprotected.
 */
static bool
handler_installed(void)
{
#ifdef PGT_HAVE_DB_SI_CODES
	struct sigaction cur;

	if (sigaction(SIGTRAP, NULL, &cur) != 0)
		return false;
	return (cur.sa_flags & SA_SIGINFO) != 0 && cur.sa_sigaction == pgt_debug_trap_handler;
#else
	return false;
#endif
}

/*
 * pg_tracer_debug_traps
 *		One row: whether the calling process has the handler; the debug
 *		traps absorbed in all of the server's processes since it started or
 *		crash-restarted; how many of those the server log has reported; the
 *		latest one's process and si_code (NULL before the first).  Counts
 *		are NULL where the platform simulates atomics: the handler counts
 *		nothing there.
 */
Datum
pg_tracer_debug_traps(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[6];
	bool		nulls[6] = {false};

	pgt_require_preload();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = BoolGetDatum(handler_installed());
#ifdef PG_HAVE_ATOMIC_U32_SIMULATION
	nulls[1] = nulls[2] = nulls[3] = nulls[4] = nulls[5] = true;
#else
	{
		uint32		absorbed = pg_atomic_read_u32(&pgt_shared->traps_absorbed);
		uint32		code = pg_atomic_read_u32(&pgt_shared->trap_last_code);

		values[1] = Int64GetDatum((int64) absorbed);
		values[2] = Int64GetDatum((int64) pg_atomic_read_u32(&pgt_shared->traps_reported));
		values[3] = Int32GetDatum((int32) pg_atomic_read_u32(&pgt_shared->trap_last_pid));
		values[4] = Int32GetDatum((int32) code);
		values[5] = CStringGetTextDatum(pgt_debug_trap_code_name(code));
		nulls[3] = nulls[4] = nulls[5] = absorbed == 0;
	}
#endif
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
