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
 * Built by the test into its own directory (never installed) and loaded by
 * absolute path; x86-64 only.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(pgt_test_debug_trap);

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
