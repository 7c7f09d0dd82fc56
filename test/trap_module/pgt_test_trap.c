/*-------------------------------------------------------------------------
 *
 * pgt_test_trap.c
 *	  Test-only SQL function for t/044_debug_traps.pl: raise a real debug
 *	  trap (#DB) in the calling backend.
 *
 * INT1 (opcode 0xF1) makes the CPU raise #DB with DR6 naming no cause: the
 * kernel's exc_debug_user takes the same path as for a trap whose DR6 a
 * hypervisor lost, and sends SIGTRAP with si_code TRAP_BRKPT.  INT3 gives
 * SIGTRAP with SI_KERNEL, which pg_tracer must leave to its default action.
 * pgt_test_hidden_wait sets and clears a wait event with stores no hardware
 * breakpoint sees, each followed by INT1: the pattern of a store whose trap
 * the kernel did not claim, which pg_tracer's handler replays.
 * Built by the test into its own directory (never installed) and loaded by
 * absolute path; x86-64 only.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/wait_event.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(pgt_test_debug_trap);
PG_FUNCTION_INFO_V1(pgt_test_hidden_wait);

/*
 * pgt_test_debug_trap(n int, kind text)
 *		Execute n INT1 (kind 'int1') or INT3 (kind 'int3') instructions;
 *		returns n when the process survived them.
 */
Datum
pgt_test_debug_trap(PG_FUNCTION_ARGS)
{
	int32		n = PG_GETARG_INT32(0);
	char	   *kind = text_to_cstring(PG_GETARG_TEXT_PP(1));
	bool		int3 = strcmp(kind, "int3") == 0;

	if (!int3 && strcmp(kind, "int1") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("kind must be \"int1\" or \"int3\", not \"%s\"", kind)));
	for (int32 i = 0; i < n; i++)
	{
		if (int3)
			__asm__ volatile("int3");
		else
			__asm__ volatile(".byte 0xf1");
	}
	PG_RETURN_INT32(n);
}

/*
 * hidden_store
 *		Store v in this process's wait_event_info through /proc/self/mem:
 *		the kernel writes the page through its own mapping, so no user-space
 *		write breakpoint on the word sees it.
 */
static void
hidden_store(int fd, uint32 v)
{
	if (pwrite(fd, &v, sizeof(v), (off_t) (uintptr_t) my_wait_event_info) != sizeof(v))
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write wait_event_info through /proc/self/mem: %m")));
}

/*
 * pgt_test_hidden_wait(event bigint, ms int)
 *		Hold wait event `event` for about ms milliseconds, set and cleared by
 *		hidden stores, each followed by INT1.  Returns the milliseconds
 *		between the two stores (float8), as the monotonic clock measured
 *		them.
 */
Datum
pgt_test_hidden_wait(PG_FUNCTION_ARGS)
{
	uint32		event = (uint32) PG_GETARG_INT64(0);
	int32		ms = PG_GETARG_INT32(1);
	struct timespec t0,
				t1;
	int			fd = open("/proc/self/mem", O_RDWR);

	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open /proc/self/mem: %m")));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	hidden_store(fd, event);
	__asm__ volatile(".byte 0xf1");
	pg_usleep(ms * 1000L);
	hidden_store(fd, 0);
	__asm__ volatile(".byte 0xf1");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	close(fd);
	PG_RETURN_FLOAT8((t1.tv_sec - t0.tv_sec) * 1000.0 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
}
