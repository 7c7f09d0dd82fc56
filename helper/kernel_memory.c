/*
 * helper/kernel_memory.c
 *	  Probe set "memory" (bpf/kernel_memory.bpf.c): page faults user/kernel, major/minor, pages allocated/freed, oom_score_adj.
 */
#include "kernel_set.h"
#include "kernel_memory.skel.h"

static const char *const names[] = {"faults_user", "faults_kernel", "faults_major", "faults_minor", "pages_alloc", "pages_free", "oom_score_adj_updates", "oom_score_adj", NULL};

static const kset_desc desc = {PGT_KPROC_MEMORY, names, 1};

static void
destroy(void *skel)
{
	kernel_memory_bpf__destroy(skel);
}

/*
 * start
 *		open -> shared maps -> load -> attach.
 */
static int
start(pset_inst *in, const pset_ctx *ctx)
{
	struct kernel_memory_bpf *skel;
	kset_attach a;

	if (kset_new(in, &desc) == NULL)
		return -1;
	skel = kernel_memory_bpf__open();
	if (skel == NULL)
	{
		pset_set_status(in, PGT_PROBE_UNAVAILABLE, "tp_btf/page_fault_*,mm_page_*", "BPF open failed");
		return 0;
	}
	skel->rodata->pgt_stream = ctx->stream;
	(void) kset_load_attach(in, ctx, skel->obj, skel, destroy, &a);
	kset_status_from(in, "tp_btf/page_fault_*,mm_page_*", &a);
	return 0;
}

static const probe_set memory_set = {
	.name = "memory",
	.description = "page faults user/kernel, major/minor, pages allocated/freed, oom_score_adj",
	.id = PGT_SET_MEMORY,
	.order = 50,
	.start = start,
	.stop = kset_stop,
	.collect = kset_collect,
	.publish = kset_publish,
	.event = kset_event,
	.stats = kset_stats,
	.histograms = kset_histograms,
};

PGT_REGISTER_PROBE_SET(memory_set);
