/*-------------------------------------------------------------------------
 *
 * pg_tracer.c
 *	  Module entry point of the pg_tracer extension: _PG_init, the GUCs and
 *	  the shared-memory area that holds the background worker's view of the
 *	  pg-tracer helper.
 *
 * pg_tracer must be loaded with shared_preload_libraries: only then does
 * _PG_init reserve shared memory and register the background worker.  When
 * the library is loaded any other way (CREATE EXTENSION, LOAD) _PG_init
 * does nothing and every SQL entry point raises an error through
 * pgt_require_preload().
 *
 * Locking: the shared area (PgtSharedState, see pg_tracer.h) is created
 * under AddinShmemInitLock at startup; afterwards its own spinlock protects
 * it.  Only the background worker writes it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"

#include "pg_tracer.h"
#include "ash.h"

PG_MODULE_MAGIC;

/* GUC variables */
char	   *pgt_runtime_dir = NULL;
int			pgt_helper_stale_ms = 3000;

/* The shared area; NULL unless preloaded. */
PgtSharedState *pgt_shared = NULL;

/* True when _PG_init ran from shared_preload_libraries. */
static bool pgt_preloaded = false;

/*
 * Longest runtime_dir that still leaves room for
 * "/pgt-<16 hex>-<16 hex>.sock" in a unix socket path (sun_path is 108
 * bytes including the NUL).
 */
#define PGT_RUNTIME_DIR_MAX		64

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

void		_PG_init(void);

static void pgt_define_gucs(void);
static bool pgt_check_runtime_dir(char **newval, void **extra,
								  GucSource source);
static void pgt_shmem_request(void);
static void pgt_shmem_startup(void);

/*
 * _PG_init
 *		Module load callback.  Does its work only from
 *		shared_preload_libraries.
 */
void
_PG_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;

	pgt_ash_define_gucs();
	pgt_define_gucs();

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = pgt_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = pgt_shmem_startup;

	pgt_register_worker();
	pgt_register_sampler();
	pgt_ash_install_hooks();
	pgt_debug_trap_install();
	pgt_preloaded = true;
}

/*
 * pgt_define_gucs
 *		Define pg_tracer.runtime_dir and pg_tracer.helper_stale_ms.
 */
static void
pgt_define_gucs(void)
{
	DefineCustomStringVariable("pg_tracer.runtime_dir",
							   "Directory where the pg-tracer helper keeps its segments and sockets.",
							   "Must be an absolute path and match the helper's --runtime-dir.",
							   &pgt_runtime_dir,
							   PGT_DEFAULT_RUNTIME_DIR,
							   PGC_POSTMASTER,
							   0,
							   pgt_check_runtime_dir,
							   NULL,
							   NULL);

	DefineCustomIntVariable("pg_tracer.helper_stale_ms",
							"A helper segment not updated for this long means the helper is not connected.",
							NULL,
							&pgt_helper_stale_ms,
							3000,
							500,
							600000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL,
							NULL,
							NULL);

	MarkGUCPrefixReserved("pg_tracer");
}

/*
 * pgt_check_runtime_dir
 *		GUC check hook: an absolute path short enough for a socket name.
 */
static bool
pgt_check_runtime_dir(char **newval, void **extra, GucSource source)
{
	const char *dir = *newval;

	if (dir == NULL || !is_absolute_path(dir))
	{
		GUC_check_errdetail("pg_tracer.runtime_dir must be an absolute path.");
		return false;
	}
	if (strlen(dir) > PGT_RUNTIME_DIR_MAX)
	{
		GUC_check_errdetail("pg_tracer.runtime_dir must be at most %d bytes long, so that socket paths fit.",
							PGT_RUNTIME_DIR_MAX);
		return false;
	}
	return true;
}

/*
 * pgt_shmem_request
 *		shmem_request_hook: reserve the shared area.
 */
static void
pgt_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();

	RequestAddinShmemSpace(MAXALIGN(sizeof(PgtSharedState)));
	RequestAddinShmemSpace(pgt_ash_shmem_size());
}

/*
 * pgt_shmem_startup
 *		shmem_startup_hook: create or attach to the shared area.
 */
static void
pgt_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	pgt_shared = ShmemInitStruct("pg_tracer", sizeof(PgtSharedState), &found);
	if (!found)
	{
		memset(pgt_shared, 0, sizeof(PgtSharedState));
		SpinLockInit(&pgt_shared->mutex);
		strlcpy(pgt_shared->seg_state, "unknown", PGT_STATE_LEN);
		strlcpy(pgt_shared->reason, "the background worker has not looked yet",
				PGT_REASON_LEN);
		strlcpy(pgt_shared->layout_error, "the background worker has not written it yet",
				PGT_REASON_LEN);
		pg_atomic_init_u32(&pgt_shared->traps_absorbed, 0);
		pg_atomic_init_u32(&pgt_shared->traps_reported, 0);
		pg_atomic_init_u32(&pgt_shared->trap_last_pid, 0);
		pg_atomic_init_u32(&pgt_shared->trap_last_code, 0);
	}
	LWLockRelease(AddinShmemInitLock);

	pgt_ash_shmem_startup();
}

/*
 * pgt_require_preload
 *		Every SQL entry point calls this first: without
 *		shared_preload_libraries there is no shared area and no worker.
 */
void
pgt_require_preload(void)
{
	if (!pgt_preloaded || pgt_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_tracer must be loaded via shared_preload_libraries"),
				 errhint("Add pg_tracer to shared_preload_libraries in postgresql.conf and restart the server.")));
}
