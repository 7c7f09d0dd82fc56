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

/* What the set runs without on this kernel, for its status ("": nothing) */
static char missing_note[128];

/*
 * block_open
 *		The skeleton opened by KSET_SKELETON, without the programs of
 *		tracepoints this kernel lacks (a tp_btf program whose target is
 *		missing fails the whole object); what that costs in missing_note.
 */
static struct bpf_object *
block_open(void **skel, const pset_ctx *ctx)
{
	struct bpf_object *obj = kernel_block_kopen(skel, ctx);
	struct kernel_block_bpf *s = *skel;
	int			io_start = kernel_btf_has_tp("block_io_start");
	int			merge = kernel_btf_has_tp("block_rq_merge");

	if (obj == NULL)
		return NULL;
	s->rodata->has_io_start = (uint8_t) io_start;
	bpf_program__set_autoload(s->progs.pgt_kblk_start, io_start);
	bpf_program__set_autoload(s->progs.pgt_kblk_merge, merge);
	snprintf(missing_note, sizeof(missing_note), "%s%s%s",
			 io_start ? "" : "without block_io_start (before 6.5) the submitter is "
			 "the issuer: kblockd's issues count as the kernel's",
			 !io_start && !merge ? "; " : "", merge ? "" : "without block_rq_merge");
	return obj;
}

/*
 * note_io_start_lost
 *		block_io_start is in the kernel but its program did not attach (its
 *		failure is in the status already): tell the issue program to take
 *		requests at issue, as without the tracepoint, and say what it costs.
 *		Through the map, not s->bss: the set loads with bpf_object__load,
 *		and libbpf (1.1 in Debian 12) maps a skeleton's sections onto their
 *		maps only in the skeleton's own load.
 */
static void
note_io_start_lost(pset_inst *in)
{
	struct kernel_block_bpf *s = ((kset *) in->priv)->skel[0];
	struct kernel_block_bpf__bss bss;
	uint32_t	zero = 0;
	int			err;

	if (s == NULL || !s->rodata->has_io_start ||
		kset_running(in, s->progs.pgt_kblk_start))
		return;
	bss = *s->bss;
	bss.io_start_lost = 1;
	err = bpf_map__update_elem(s->maps.bss, &zero, sizeof(zero), &bss, sizeof(bss), BPF_ANY);
	if (err != 0)
	{
		char		ebuf[128];

		pset_set_status(in, PGT_PROBE_UNAVAILABLE, in->status.mechanism,
						"block_io_start did not attach, and the issue program could not "
						"take its place: %s", pset_errstr(err, ebuf, sizeof(ebuf)));
		return;
	}
	kset_status_append(in, "the submitter is the issuer: kblockd's issues count as the kernel's");
}

/*
 * start
 *		open (leaving out what the kernel lacks) -> shared maps -> load ->
 *		attach; the status says what the set runs without.
 */
static int
start(pset_inst *in, const pset_ctx *ctx)
{
	missing_note[0] = '\0';
	if (kset_start_single(in, ctx, &desc, "tp_btf/block_rq_*", block_open,
						  kernel_block_kdestroy) < 0)
		return -1;
	if (missing_note[0] != '\0')
		kset_status_append(in, missing_note);
	if (in->status.state != PGT_PROBE_UNAVAILABLE)
		note_io_start_lost(in);
	return 0;
}

KSET_PROBE_SET(block_set, "block",
			   "block requests per submitter, device and op; in-kernel latency histograms",
			   PGT_SET_BLOCK, 30, start);
