/*
 * helper/kernel_block.c
 *	  Probe set "block" (bpf/kernel_block.bpf.c): block requests per submitter, device and op; in-kernel latency histograms.
 */
#include "kernel_set.h"
#include "kernel_block.skel.h"



static const kset_desc desc = {0, NULL, 0};

static void
destroy(void *skel)
{
	kernel_block_bpf__destroy(skel);
}

/*
 * start
 *		open -> shared maps -> load -> attach.
 */
static int
start(pset_inst *in, const pset_ctx *ctx)
{
	struct kernel_block_bpf *skel;
	kset_attach a;

	if (kset_new(in, &desc) == NULL)
		return -1;
	skel = kernel_block_bpf__open();
	if (skel == NULL)
	{
		pset_set_status(in, PGT_PROBE_UNAVAILABLE, "tp_btf/block_rq_*", "BPF open failed");
		return 0;
	}
	skel->rodata->pgt_stream = ctx->stream;
	(void) kset_load_attach(in, ctx, skel->obj, skel, destroy, &a);
	kset_status_from(in, "tp_btf/block_rq_*", &a);
	return 0;
}

static const probe_set block_set = {
	.name = "block",
	.description = "block requests per submitter, device and op; in-kernel latency histograms",
	.id = PGT_SET_BLOCK,
	.order = 30,
	.start = start,
	.stop = kset_stop,
	.collect = kset_collect,
	.publish = kset_publish,
	.event = kset_event,
	.stats = kset_stats,
	.histograms = kset_histograms,
};

PGT_REGISTER_PROBE_SET(block_set);
