/*
 * helper/kernel_block.c
 *	  Probe set "block" (bpf/kernel_block.bpf.c): block requests per
 *	  submitter, device and op; in-kernel latency histograms.
 *
 * Two of its tracepoints are younger than the rest: block_io_start (6.5),
 * which sees a request submitted in its submitter's context, and
 * block_rq_merge.  Without the first the submitter is taken at issue,
 * which a request dispatched later from a kblockd worker credits to the
 * kernel; without the second a merged request's entry lingers until its
 * address is reused.  The set runs either way and its status says which.
 */
#include "kernel_set.h"
#include "kernel_block.skel.h"
#include "kernel_btf.h"

static const kset_desc desc = {0, NULL, 0, "runs per block request", -1, NULL};

KSET_SKELETON(kernel_block)

#define BLOCK_MECHANISM "tp_btf/block_rq_*"

/*
 * leave_out_missing
 *		Keep the programs of tracepoints this kernel lacks from loading (a
 *		tp_btf program whose target is missing fails the whole object), and
 *		say what that costs in `scope`.
 */
static void
leave_out_missing(struct kernel_block_bpf *s, char *scope, size_t len)
{
	int			io_start = kernel_btf_has_tp("block_io_start");
	int			merge = kernel_btf_has_tp("block_rq_merge");

	s->rodata->has_io_start = (uint8_t) io_start;
	bpf_program__set_autoload(s->progs.pgt_kblk_start, io_start);
	bpf_program__set_autoload(s->progs.pgt_kblk_merge, merge);
	snprintf(scope, len, "%s%s%s", desc.scope,
			 io_start ? "" : "; without block_io_start (before 6.5) the submitter is "
			 "the issuer: kblockd's issues count as the kernel's",
			 merge ? "" : "; without block_rq_merge");
}

/*
 * start
 *		open -> leave out what the kernel lacks -> shared maps -> load ->
 *		attach.  Returns 0, or -1 when out of memory.
 */
static int
start(pset_inst *in, const pset_ctx *ctx)
{
	struct bpf_object *obj;
	void	   *skel = NULL;
	char		scope[256];
	kset_attach a;

	if (kset_new(in, &desc) == NULL)
		return -1;
	obj = kernel_block_kopen(&skel, ctx);
	if (obj == NULL)
	{
		pset_set_status(in, PGT_PROBE_UNAVAILABLE, BLOCK_MECHANISM, "BPF open failed");
		return 0;
	}
	leave_out_missing(skel, scope, sizeof(scope));
	(void) kset_load_attach(in, ctx, obj, skel, kernel_block_kdestroy, &a);
	kset_status_scoped(in, BLOCK_MECHANISM, &a, scope);
	return 0;
}

KSET_PROBE_SET(block_set, "block",
			   "block requests per submitter, device and op; in-kernel latency histograms",
			   PGT_SET_BLOCK, 30, start);
