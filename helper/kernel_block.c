/*
 * helper/kernel_block.c
 *	  Probe set "block" (bpf/kernel_block.bpf.c): block requests per
 *	  submitter, device and op; in-kernel latency histograms.
 */
#include "kernel_set.h"
#include "kernel_block.skel.h"

static const kset_desc desc = {0, NULL, 0, "runs per block request", -1, NULL};

KSET_SKELETON(kernel_block)

/*
 * start
 *		open -> shared maps -> load -> attach.
 */
static int
start(pset_inst *in, const pset_ctx *ctx)
{
	return kset_start_single(in, ctx, &desc, "tp_btf/block_rq_*",
							 kernel_block_kopen, kernel_block_kdestroy);
}

KSET_PROBE_SET(block_set, "block",
			   "block requests per submitter, device and op; in-kernel latency histograms",
			   PGT_SET_BLOCK, 30, start);
