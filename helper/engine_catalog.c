/*
 * helper/engine_catalog.c
 *	  Engine probe sets and points, and the per-binary choice of mechanism.
 *
 * Choice rule, per group of points (a start and its done must be timed by
 * the same family): USDT when every non-optional point of the group has
 * its note (a note whose arguments libbpf cannot evaluate is attached at
 * its address with our own argument resolution when the point has a site
 * program); otherwise the fallback functions when every point of the
 * group has one resolvable in .symtab or .dynsym; otherwise none.  A
 * point marked fallback_only has no USDT twin (an entry probe the function
 * fallback needs beside a return probe): it is left out when the group
 * runs on USDT.  A companion point is a function probe that runs with its
 * group, on USDT or not, and only then; optional, it never decides the
 * group's family.  No locking: constant tables and pure functions.
 */
#include "engine_catalog.h"

#include "engine.h"
#include "pgt_segment.h"

#include <stdio.h>
#include <string.h>

/*
 * default_on: whether the daemon runs the set unless --engine-probes says
 * otherwise.  Off: the sets that cost more than 5% alone in
 * bench/engine_overhead.sh where they fire at >= 1000 events/s (sets that
 * fire ~0 events show the same +-20% spread on the shared 2-core VM, so
 * their ratios are noise), and pg-lwlock (fires per contended LWLock
 * wait: unbounded under contention).  README "Overhead" has the figures.
 */
const engine_set engine_sets[] = {
	{"pg-query", "statement latency, query id, slow statements with text", 0},
	{"pg-locks", "heavyweight lock waits by lock type, mode and object", 1},
	{"pg-lwlock", "LWLock waits by tranche", 0},
	{"pg-wal", "WAL inserts; XLogFlush calls and duration", 1},
	{"pg-buffer", "buffer reads, hits, misses; dirty buffer flushes", 0},
	{"pg-checkpoint", "checkpoints: duration, buffers written, sync phase", 1},
	{"pg-usdt", "transaction commits/aborts, deadlocks, sorts", 0},
	{"pg-lock-hold", "heavyweight lock hold times by lock type, mode and object", 0},
	{"pg-lwlock-hold", "LWLock hold times by tranche", 0},
};
const size_t engine_nsets = sizeof(engine_sets) / sizeof(engine_sets[0]);

const engine_point engine_points[] = {
	{"pg-query", 1, "query__start", "eng_query_start_usdt", NULL,
	 "exec_simple_query", 0, "eng_query_start_uprobe", 0, 0, 0, NULL, NULL},
	{"pg-query", 1, "query__done", "eng_query_done_usdt", NULL,
	 "exec_simple_query", 1, "eng_query_done_uprobe", 0, 0, 0, NULL, NULL},
	/*
	 * the extended protocol's statements: PortalRun (see engine_probes.bpf.c);
	 * its notes also mark each plannable statement in PortalRunMulti, whose
	 * sites are left out
	 */
	{"pg-query", 1, "query__execute__start", "eng_portal_start_usdt", NULL,
	 "PortalRun", 0, "eng_portal_start_uprobe", 1, 0, 0, NULL, "PortalRun"},
	{"pg-query", 1, "query__execute__done", "eng_portal_done_usdt", NULL,
	 "PortalRun", 1, "eng_portal_done_uprobe", 1, 0, 0, NULL, "PortalRun"},
	{"pg-locks", 2, "lock__wait__start", "eng_lock_wait_start_usdt", NULL,
	 "ProcSleep", 0, "eng_lock_wait_start_uprobe", 0, 0, 0, NULL, NULL},
	{"pg-locks", 2, "lock__wait__done", "eng_lock_wait_done_usdt", NULL,
	 "ProcSleep", 1, "eng_lock_wait_done_uprobe", 0, 0, 0, NULL, NULL},
	{"pg-lwlock", 3, "lwlock__wait__start", "eng_lwlock_wait_start_usdt", NULL, NULL, 0, NULL, 0, 0, 0, NULL, NULL},
	{"pg-lwlock", 3, "lwlock__wait__done", "eng_lwlock_wait_done_usdt", NULL, NULL, 0, NULL, 0, 0, 0, NULL, NULL},
	{"pg-wal", 4, "wal__insert", "eng_wal_insert_usdt", NULL,
	 "XLogInsert", 0, "eng_wal_insert_uprobe", 0, 0, 0, NULL, NULL},
	{"pg-wal", 5, NULL, NULL, NULL, "XLogFlush", 0, "eng_wal_flush_uprobe", 0, 0, 0, NULL, NULL},
	{"pg-wal", 5, NULL, NULL, NULL, "XLogFlush", 1, "eng_wal_flush_uretprobe", 0, 0, 0, NULL, NULL},
	{"pg-buffer", 6, "buffer__read__start", "eng_buffer_read_start_usdt", NULL,
	 "ReadBufferExtended", 0, "eng_buffer_read_start_uprobe", 0, 0, 0, NULL, NULL},
	{"pg-buffer", 6, "buffer__read__done", "eng_buffer_read_done_usdt", NULL,
	 "ReadBufferExtended", 1, "eng_buffer_read_done_uprobe", 0, 0, 0, NULL, NULL},
	{"pg-buffer", 7, "buffer__flush__start", "eng_buffer_flush_start_usdt", NULL, NULL, 0, NULL, 1, 0, 0, NULL, NULL},
	{"pg-buffer", 7, "buffer__flush__done", "eng_buffer_flush_done_usdt", NULL, NULL, 0, NULL, 1, 0, 0, NULL, NULL},
	{"pg-checkpoint", 8, "checkpoint__start", "eng_checkpoint_start_usdt", NULL,
	 "CreateCheckPoint", 0, "eng_checkpoint_start_uprobe", 0, 0, 0, NULL, NULL},
	{"pg-checkpoint", 8, "checkpoint__done", NULL, "eng_checkpoint_done_site",
	 "CreateCheckPoint", 1, "eng_checkpoint_done_uprobe", 0, 0, 0, NULL, NULL},
	{"pg-checkpoint", 9, "buffer__sync__written", "eng_buffer_sync_written_usdt", NULL, NULL, 0, NULL, 1, 0, 0, NULL, NULL},
	{"pg-checkpoint", 9, "buffer__checkpoint__sync__start", "eng_ckpt_sync_start_usdt", NULL, NULL, 0, NULL, 1, 0, 0, NULL, NULL},
	{"pg-checkpoint", 9, "buffer__checkpoint__done", "eng_ckpt_buffers_done_usdt", NULL, NULL, 0, NULL, 1, 0, 0, NULL, NULL},
	{"pg-usdt", 10, "transaction__commit", "eng_xact_commit_usdt", NULL, NULL, 0, NULL, 0, 0, 0, NULL, NULL},
	{"pg-usdt", 11, "transaction__abort", "eng_xact_abort_usdt", NULL, NULL, 0, NULL, 1, 0, 0, NULL, NULL},
	{"pg-usdt", 12, "deadlock__found", "eng_deadlock_usdt", NULL, NULL, 0, NULL, 1, 0, 0, NULL, NULL},
	{"pg-usdt", 13, "sort__done", "eng_sort_done_usdt", NULL, NULL, 0, NULL, 1, 0, 0, NULL, NULL},
	/*
	 * no USDT marks a grant or a release: uprobes on the exported lock
	 * manager.  The hold sets list (and so attach) their release points
	 * first: a grant seen before its release probe is in place would stay
	 * in the backend's slots with nothing to end it.
	 */
	{"pg-lock-hold", 14, NULL, NULL, NULL, "LockRelease", 0, "eng_lock_release_uprobe", 0, 0, 0, NULL, NULL},
	{"pg-lock-hold", 14, NULL, NULL, NULL, "LockReleaseAll", 0, "eng_lock_release_all_uprobe", 0, 0, 0, NULL, NULL},
	{"pg-lock-hold", 15, NULL, NULL, NULL, "LockReleaseSession", 0,
	 "eng_lock_release_session_uprobe", 0, 0, 0, NULL, NULL},
	{"pg-lock-hold", 16, NULL, NULL, NULL, "LockReleaseCurrentOwner", 0,
	 "eng_lock_release_owner_uprobe", 0, 0, 0, NULL, NULL},
	{"pg-lock-hold", 16, NULL, NULL, NULL, "LockReassignCurrentOwner", 0,
	 "eng_lock_reassign_owner_uprobe", 0, 0, 0, NULL, NULL},
	{"pg-lock-hold", 14, NULL, NULL, NULL, "LockAcquireExtended", 0, "eng_lock_acquire_uprobe", 0, 0, 0, NULL, NULL},
	{"pg-lock-hold", 14, NULL, NULL, NULL, "LockAcquireExtended", 1, "eng_lock_acquire_uretprobe", 0, 0, 0, NULL, NULL},
	/*
	 * USDT pairs by tranche name (lwlock__release carries no lock address);
	 * the fallback pairs by lock address, entry to return of the acquire
	 * functions (the last three points exist only for it).
	 */
	{"pg-lwlock-hold", 17, "lwlock__release", "eng_lwlock_release_usdt", NULL,
	 "LWLockRelease", 0, "eng_lwlock_release_uprobe", 0, 0, 0, NULL, NULL},
	{"pg-lwlock-hold", 17, "lwlock__acquire", "eng_lwlock_acquired_usdt", NULL,
	 "LWLockAcquire", 1, "eng_lwlock_acquire_uretprobe", 0, 0, 0, NULL, NULL},
	{"pg-lwlock-hold", 17, "lwlock__condacquire", "eng_lwlock_acquired_usdt", NULL,
	 "LWLockConditionalAcquire", 1, "eng_lwlock_acquire_uretprobe", 1, 0, 0, NULL, NULL},
	{"pg-lwlock-hold", 17, "lwlock__acquire__or__wait", "eng_lwlock_acquired_usdt", NULL,
	 "LWLockAcquireOrWait", 1, "eng_lwlock_acquire_uretprobe", 1, 0, 0, NULL, NULL},
	{"pg-lwlock-hold", 17, NULL, NULL, NULL, "LWLockAcquire", 0, "eng_lwlock_acquire_uprobe", 0, 1, 0, NULL, NULL},
	{"pg-lwlock-hold", 17, NULL, NULL, NULL, "LWLockConditionalAcquire", 0,
	 "eng_lwlock_condacquire_uprobe", 1, 1, 0, NULL, NULL},
	{"pg-lwlock-hold", 17, NULL, NULL, NULL, "LWLockAcquireOrWait", 0,
	 "eng_lwlock_condacquire_uprobe", 1, 1, 0, NULL, NULL},
	/*
	 * A statement or lock wait that ends in an error reaches neither its
	 * done note nor its function's return (no note marks where it ends): a
	 * statement ends where PostgresMain's error recovery aborts the
	 * transaction, a lock wait where the error is caught: there, where an
	 * EXCEPTION block rolls back its subtransaction, or where a backend
	 * that dies (a terminated wait) aborts at exit.  Not LockErrorCleanup(),
	 * which every commit calls too (ProcReleaseLocks).
	 */
	{"pg-query", 1, NULL, NULL, NULL, "AbortCurrentTransaction", 0, "eng_query_abort_uprobe",
	 1, 0, 1, "debug_query_string", NULL},
	{"pg-locks", 2, NULL, NULL, NULL, "AbortCurrentTransaction", 0,
	 "eng_lock_wait_abort_uprobe", 1, 0, 1, NULL, NULL},
	{"pg-locks", 2, NULL, NULL, NULL, "RollbackAndReleaseCurrentSubTransaction", 0,
	 "eng_lock_wait_abort_uprobe", 1, 0, 1, NULL, NULL},
	{"pg-locks", 2, NULL, NULL, NULL, "AbortOutOfAnyTransaction", 0,
	 "eng_lock_wait_abort_uprobe", 1, 0, 1, NULL, NULL},
};
const size_t engine_npoints = sizeof(engine_points) / sizeof(engine_points[0]);

const char *const engine_wanted_symbols[] = {
	"exec_simple_query", "LockAcquire", "LockRelease", "LWLockAcquire",
	"LWLockRelease", "XLogInsert", "XLogFlush", "ReadBuffer_common",
	"ReadBufferExtended", "FlushBuffer", "smgrread", "smgrwrite",
	"CreateCheckPoint", "BufferSync", "MyBEEntry", "MyProc", "ProcGlobal",
	"my_wait_event_info", "CheckpointStats", "NBuffers", "LockAcquireExtended",
	"LockReleaseAll", "LockReleaseSession", "LockReleaseCurrentOwner",
	"LockReassignCurrentOwner", "CurrentResourceOwner", "ProcSleep",
	"LWLockConditionalAcquire", "LWLockAcquireOrWait", "AbortCurrentTransaction",
	"RollbackAndReleaseCurrentSubTransaction", "AbortOutOfAnyTransaction", "debug_query_string",
	"PortalRun",
};
const size_t engine_nwanted_symbols =
	sizeof(engine_wanted_symbols) / sizeof(engine_wanted_symbols[0]);

/*
 * usdt_args_for_libbpf
 *		Whether libbpf can evaluate every argument of every site of the
 *		probe (it cannot do "sym(%rip)" globals).
 */
static int
usdt_args_for_libbpf(const elf_info *elf, const char *name)
{
	size_t		i;

	for (i = 0; i < elf->nprobes; i++)
	{
		usdt_arg	args[USDT_MAX_ARGS];
		int			n;
		int			j;

		if (strcmp(elf->probes[i].provider, ENGINE_USDT_PROVIDER) != 0 ||
			strcmp(elf->probes[i].name, name) != 0)
			continue;
		n = usdt_parse_args(elf->probes[i].args, args, USDT_MAX_ARGS);
		if (n < 0)
			return 0;
		for (j = 0; j < n; j++)
			if (args[j].kind == USDT_ARG_SYMBOL)
				return 0;
	}
	return 1;
}

/*
 * usdt_ok
 *		Whether point p can be attached as USDT in this binary; why not in
 *		why.
 */
static int
usdt_ok(const elf_info *elf, const engine_point *p, engine_mech *m, char *why, size_t wl)
{
	if (p->usdt == NULL)
	{
		snprintf(why, wl, "no USDT probe marks this point");
		return 0;
	}
	if (elf_find_usdt(elf, ENGINE_USDT_PROVIDER, p->usdt) == NULL)
	{
		snprintf(why, wl, "binary has no USDT %s:%s%s", ENGINE_USDT_PROVIDER, p->usdt,
				 elf->has_stapsdt ? "" : " (built without --enable-dtrace)");
		return 0;
	}
	if (p->usdt_prog != NULL && usdt_args_for_libbpf(elf, p->usdt))
	{
		*m = ENGINE_MECH_USDT;
		return 1;
	}
	if (p->site_prog != NULL)
	{
		*m = ENGINE_MECH_USDT_SITE;
		return 1;
	}
	snprintf(why, wl, "USDT %s has argument specs libbpf cannot evaluate", p->usdt);
	return 0;
}

/*
 * func_ok
 *		Whether point p's fallback function resolves in this binary.
 */
static int
func_ok(const elf_info *elf, const engine_point *p, char *why, size_t wl)
{
	elf_symbol	s;

	if (p->func == NULL)
	{
		snprintf(why, wl, "no function fallback");
		return 0;
	}
	if (elf_find_symbol(elf, p->func, &s) < 0 || !s.is_func || s.offset == 0)
	{
		snprintf(why, wl, "%s not resolvable (%s)", p->func,
				 elf->has_symtab ? "not in .symtab" :
				 "static, binary stripped to .dynsym (the helper reads no separate debug files)");
		return 0;
	}
	return 1;
}

/*
 * plan_companion
 *		A companion point: a uprobe on its function while its group runs.
 */
static void
plan_companion(const elf_info *elf, const engine_point *q, int group_runs, engine_choice *c)
{
	char		w[160];

	elf_symbol	s;

	if (!group_runs)
		snprintf(c->reason, sizeof(c->reason), "only with the points it completes");
	else if (!func_ok(elf, q, w, sizeof(w)))
		snprintf(c->reason, sizeof(c->reason), "optional point: %.120s", w);
	else if (q->needs != NULL && (elf_find_symbol(elf, q->needs, &s) < 0 || !s.addr))
		snprintf(c->reason, sizeof(c->reason), "optional point: %s not resolvable", q->needs);
	else
	{
		c->mech = ENGINE_MECH_UPROBE;
		snprintf(c->reason, sizeof(c->reason), "uprobe %s (errors end timers there)", q->func);
	}
}

/*
 * engine_plan
 *		See engine_catalog.h.
 */
void
engine_plan(const elf_info *elf, engine_choice *choices)
{
	size_t		i;
	size_t		j;

	memset(choices, 0, engine_npoints * sizeof(*choices));
	for (i = 0; i < engine_npoints; i++)
	{
		const engine_point *p = &engine_points[i];
		int			all_usdt = 1;
		int			all_func = 1;
		char		why_u[160] = "";
		char		why_f[160] = "";

		if (choices[i].mech != ENGINE_MECH_NONE || choices[i].reason[0] != '\0')
			continue;			/* decided with its group */
		for (j = i; j < engine_npoints; j++)
		{
			const engine_point *q = &engine_points[j];
			engine_mech m;
			char		w[160];

			if (q->group != p->group || q->companion)
				continue;
			if (!usdt_ok(elf, q, &m, w, sizeof(w)) && !q->optional && !q->fallback_only)
			{
				all_usdt = 0;
				if (why_u[0] == '\0')
					snprintf(why_u, sizeof(why_u), "%s", w);
			}
			if (!func_ok(elf, q, w, sizeof(w)))
			{
				all_func = 0;
				if (why_f[0] == '\0')
					snprintf(why_f, sizeof(why_f), "%s", w);
			}
		}
		for (j = i; j < engine_npoints; j++)
		{
			const engine_point *q = &engine_points[j];
			engine_choice *c = &choices[j];
			engine_mech m;
			char		w[160];

			if (q->group != p->group)
				continue;
			if (q->companion)
				plan_companion(elf, q, all_usdt || all_func, c);
			else if (all_usdt && usdt_ok(elf, q, &m, w, sizeof(w)))
			{
				c->mech = m;
				snprintf(c->reason, sizeof(c->reason), "USDT %s:%s%s", ENGINE_USDT_PROVIDER,
						 q->usdt, m == ENGINE_MECH_USDT_SITE ?
						 " at its address, arguments resolved by pg-tracer" : "");
			}
			else if (all_usdt && q->fallback_only)
				snprintf(c->reason, sizeof(c->reason), "only for the %s fallback: USDT runs",
						 q->func);
			else if (all_usdt)
				snprintf(c->reason, sizeof(c->reason), "optional point: %.120s", w);
			else if (all_func)
			{
				c->mech = q->func_ret ? ENGINE_MECH_URETPROBE : ENGINE_MECH_UPROBE;
				snprintf(c->reason, sizeof(c->reason), "%s %s (%.100s)",
						 q->func_ret ? "uretprobe" : "uprobe", q->func, why_u);
			}
			else
				snprintf(c->reason, sizeof(c->reason), "%.78s; %.78s", why_u, why_f);
		}
	}
}

/*
 * group_runs
 *		Whether a point of group other than its companions has a mechanism.
 */
static int
group_runs(const engine_choice *choices, int group)
{
	size_t		i;

	for (i = 0; i < engine_npoints; i++)
		if (engine_points[i].group == group && !engine_points[i].companion &&
			choices[i].mech != ENGINE_MECH_NONE)
			return 1;
	return 0;
}

/*
 * engine_set_state
 *		See engine_catalog.h.
 */
uint32_t
engine_set_state(const char *set, const engine_choice *choices, const int *attached,
				 char *mechanism, size_t mlen, char *reason, size_t rlen)
{
	int			usdt = 0;
	int			uprobe = 0;
	int			missing_required = 0;
	int			missing_optional = 0;
	int			present = 0;
	size_t		used = 0;
	size_t		i;

	reason[0] = '\0';
	for (i = 0; i < engine_npoints; i++)
	{
		const engine_point *p = &engine_points[i];
		int			ok;

		if (strcmp(p->set, set) != 0)
			continue;
		if (p->fallback_only && choices[i].mech == ENGINE_MECH_NONE)
			continue;			/* the set runs on USDT */
		if (p->companion && choices[i].mech == ENGINE_MECH_NONE && !group_runs(choices, p->group))
			continue;			/* its group does not run either */
		ok = choices[i].mech != ENGINE_MECH_NONE && (attached == NULL || attached[i]);
		if (ok)
		{
			present++;
			if (choices[i].mech == ENGINE_MECH_USDT || choices[i].mech == ENGINE_MECH_USDT_SITE)
				usdt = 1;
			else
				uprobe = 1;
			continue;
		}
		if (p->optional)
			missing_optional++;
		else
			missing_required++;
		if (used < rlen)
		{
			int			n = snprintf(reason + used, rlen - used, "%s%s: %s",
									 used ? "; " : "", p->usdt ? p->usdt : p->func,
									 choices[i].mech == ENGINE_MECH_NONE ? choices[i].reason :
									 "attach failed");

			used += n > 0 ? (size_t) n : 0;
		}
	}
	snprintf(mechanism, mlen, "%s", usdt && uprobe ? "usdt+uprobe" :
			 usdt ? "usdt" : uprobe ? "uprobe" : "none");
	if (present == 0 || missing_required > 0)
		return present == 0 ? PGT_PROBE_UNAVAILABLE : PGT_PROBE_DEGRADED;
	if (missing_optional > 0)
		return PGT_PROBE_DEGRADED;
	return PGT_PROBE_AVAILABLE;
}

const char *
engine_mech_name(engine_mech m)
{
	switch (m)
	{
		case ENGINE_MECH_USDT:
			return "usdt";
		case ENGINE_MECH_USDT_SITE:
			return "usdt-site";
		case ENGINE_MECH_UPROBE:
			return "uprobe";
		case ENGINE_MECH_URETPROBE:
			return "uretprobe";
		default:
			return "none";
	}
}

int
engine_set_index(const char *name)
{
	size_t		i;

	for (i = 0; i < engine_nsets; i++)
		if (strcmp(engine_sets[i].name, name) == 0)
			return (int) i;
	return -1;
}

static const char *const probe_names[ENG_NPROBES] = {
	[ENG_QUERY] = "query",
	[ENG_LOCK_WAIT] = "lock-wait",
	[ENG_LWLOCK_WAIT] = "lwlock-wait",
	[ENG_WAL_INSERT] = "wal-insert",
	[ENG_WAL_FLUSH] = "wal-flush",
	[ENG_BUFFER_READ] = "buffer-read",
	[ENG_BUFFER_FLUSH] = "buffer-flush",
	[ENG_CHECKPOINT] = "checkpoint",
	[ENG_XACT_COMMIT] = "xact-commit",
	[ENG_XACT_ABORT] = "xact-abort",
	[ENG_DEADLOCK] = "deadlock",
	[ENG_SORT] = "sort",
	[ENG_LOCK_HOLD] = "lock-hold",
	[ENG_LWLOCK_HOLD] = "lwlock-hold",
	[ENG_QUERY_ERROR] = "query-error",
};

static const char *const probe_sets[ENG_NPROBES] = {
	[ENG_QUERY] = "pg-query",
	[ENG_LOCK_WAIT] = "pg-locks",
	[ENG_LWLOCK_WAIT] = "pg-lwlock",
	[ENG_WAL_INSERT] = "pg-wal",
	[ENG_WAL_FLUSH] = "pg-wal",
	[ENG_BUFFER_READ] = "pg-buffer",
	[ENG_BUFFER_FLUSH] = "pg-buffer",
	[ENG_CHECKPOINT] = "pg-checkpoint",
	[ENG_XACT_COMMIT] = "pg-usdt",
	[ENG_XACT_ABORT] = "pg-usdt",
	[ENG_DEADLOCK] = "pg-usdt",
	[ENG_SORT] = "pg-usdt",
	[ENG_LOCK_HOLD] = "pg-lock-hold",
	[ENG_QUERY_ERROR] = "pg-query",
	[ENG_LWLOCK_HOLD] = "pg-lwlock-hold",
};

const char *
engine_probe_name(uint32_t probe)
{
	return probe < ENG_NPROBES && probe_names[probe] ? probe_names[probe] : "unknown";
}

const char *
engine_probe_set_of(uint32_t probe)
{
	return probe < ENG_NPROBES && probe_sets[probe] ? probe_sets[probe] : "unknown";
}

int
engine_probe_by_name(const char *name)
{
	int			i;

	for (i = 1; i < ENG_NPROBES; i++)
		if (probe_names[i] && strcmp(probe_names[i], name) == 0)
			return i;
	return -1;
}

const char *
engine_locktag_name(uint32_t type)
{
	static const char *const n[] = {"relation", "extend", "frozenid", "page", "tuple",
		"transactionid", "virtualxid", "spectoken", "object", "userlock", "advisory"};

	return type < sizeof(n) / sizeof(n[0]) ? n[type] : "unknown";
}

const char *
engine_lockmode_name(uint32_t mode)
{
	static const char *const n[] = {"NoLock", "AccessShareLock", "RowShareLock",
		"RowExclusiveLock", "ShareUpdateExclusiveLock", "ShareLock",
		"ShareRowExclusiveLock", "ExclusiveLock", "AccessExclusiveLock"};

	return mode < sizeof(n) / sizeof(n[0]) ? n[mode] : "unknown";
}

const char *
engine_lwmode_name(uint32_t mode)
{
	static const char *const n[] = {"LW_EXCLUSIVE", "LW_SHARED", "LW_WAIT_UNTIL_FREE"};

	return mode < sizeof(n) / sizeof(n[0]) ? n[mode] : "unknown";
}
