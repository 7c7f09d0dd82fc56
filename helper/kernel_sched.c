/*
 * helper/kernel_sched.c
 *	  Probe set "sched" (bpf/kernel_sched.bpf.c): off-CPU time, run-queue latency (histogram), context switches, wakeups, migrations.
 */
#include "kernel_set.h"
#include "kernel_sched.skel.h"

static const char *const names[] = {"offcpu_ns", "runq_ns", "runq_count", "runq_max_ns", "voluntary_switches", "involuntary_switches", "migrations", "wakeups", NULL};

static const kset_desc desc = {PGT_KPROC_SCHED, names, 0};

static void
destroy(void *skel)
{
	kernel_sched_bpf__destroy(skel);
}

/*
 * start
 *		open -> shared maps -> load -> attach.
 */
static int
start(pset_inst *in, const pset_ctx *ctx)
{
	struct kernel_sched_bpf *skel;
	kset_attach a;

	if (kset_new(in, &desc) == NULL)
		return -1;
	skel = kernel_sched_bpf__open();
	if (skel == NULL)
	{
		pset_set_status(in, PGT_PROBE_UNAVAILABLE, "tp_btf/sched_*", "BPF open failed");
		return 0;
	}
	skel->rodata->pgt_stream = ctx->stream;
	(void) kset_load_attach(in, ctx, skel->obj, skel, destroy, &a);
	kset_status_from(in, "tp_btf/sched_*", &a);
	return 0;
}

static const probe_set sched_set = {
	.name = "sched",
	.description = "off-CPU time, run-queue latency (histogram), context switches, wakeups, migrations",
	.id = PGT_SET_SCHED,
	.order = 40,
	.start = start,
	.stop = kset_stop,
	.collect = kset_collect,
	.publish = kset_publish,
	.event = kset_event,
	.stats = kset_stats,
	.histograms = kset_histograms,
};

PGT_REGISTER_PROBE_SET(sched_set);
