/*
 * helper/kernel_sched.h
 *	  The option of the "sched" probe set (helper/kernel_sched.c).
 */
#ifndef PGT_HELPER_KERNEL_SCHED_H
#define PGT_HELPER_KERNEL_SCHED_H

#include <stddef.h>

/*
 * kernel_sched_configure_clock
 *		--sched-clock auto|ktime: auto (the default) times off-CPU periods
 *		on the run queue's clock and measures run-queue latency where the
 *		kernel keeps per-task run-queue times; ktime always uses the
 *		monotonic clock and leaves run-queue latency out, as on a kernel
 *		without them (so that path can be chosen, and tested, anywhere).
 *		Returns 0, or -1 with a message in err.
 */
extern int	kernel_sched_configure_clock(const char *s, char *err, size_t errlen);

/*
 * kernel_sched_no_storage_in_switch
 *		Testing (trace --no-storage-in-switch): make tasks' storage at fork
 *		and in the task iterator only, as on a kernel before 6.4, whose
 *		task-storage allocation is not safe under the scheduler's lock.
 */
extern void kernel_sched_no_storage_in_switch(void);

#endif							/* PGT_HELPER_KERNEL_SCHED_H */
