/*
 * helper/kernel_sysio.h
 *	  Start of the "syscall" and "network" sets on their shared object
 *	  (helper/kernel_sysio.c).
 */
#ifndef PGT_HELPER_KERNEL_SYSIO_H
#define PGT_HELPER_KERNEL_SYSIO_H

#include "kernel_set.h"

/*
 * ksysio_start
 *		Join the shared system-call object (loading it when this is the
 *		first set) and take this set's maps and status from it, with the
 *		mechanism of the exit hook used (sys_exit or fexit).  Returns 0, or
 *		-1 when out of memory.
 */
extern int	ksysio_start(pset_inst *in, const pset_ctx *ctx, const kset_desc *desc,
						 const char *mech_sys_exit, const char *mech_fexit);

#endif							/* PGT_HELPER_KERNEL_SYSIO_H */
