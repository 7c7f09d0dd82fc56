/*
 * helper/kernel_sched.c
 *	  Probe set "sched" (bpf/kernel_sched.bpf.c): off-CPU time, run-queue
 *	  latency (histogram), context switches, wakeups, migrations.
 */
#include "kernel_set.h"
#include "kernel_sched.skel.h"

static const char *const names[] = {"offcpu_ns", "runq_ns", "runq_count", "runq_max_ns", "voluntary_switches", "involuntary_switches", "migrations", "wakeups", NULL};

static const kset_desc desc = {PGT_KPROC_SCHED, names, 0,
	"runs on every context switch and wakeup of the host", PGT_CHAIN_SLOT_SCHED};

KSET_SKELETON(kernel_sched)

/*
 * start
 *		open -> shared maps -> load -> attach.
 */
static int
start(pset_inst *in, const pset_ctx *ctx)
{
	return kset_start_single(in, ctx, &desc, "tp_btf/sched_*",
							 kernel_sched_kopen, kernel_sched_kdestroy);
}

KSET_PROBE_SET(sched_set, "sched",
			   "off-CPU time, run-queue latency (histogram), context switches, wakeups, migrations",
			   PGT_SET_SCHED, 40, start);
