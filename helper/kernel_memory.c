/*
 * helper/kernel_memory.c
 *	  Probe set "memory" (bpf/kernel_memory.bpf.c): page faults user /
 *	  kernel, major / minor, pages allocated / freed, oom_score_adj.
 */
#include "kernel_btf.h"
#include "kernel_set.h"
#include "kernel_memory.skel.h"

static const char *const names[] = {"faults_user", "faults_kernel", "faults_major", "faults_minor", "pages_alloc", "pages_free", "oom_score_adj_updates", "oom_score_adj", NULL};

static const kset_desc desc = {PGT_KPROC_MEMORY, names, 1,
	"runs on every page fault and page allocation of the host", -1, NULL};

KSET_SKELETON(kernel_memory)

static int	without_faults;		/* set by memory_open, said by start */

/*
 * memory_open
 *		The skeleton opened by KSET_SKELETON, without the page-fault
 *		programs where the kernel lacks their tracepoints (x86 has them;
 *		a tp_btf program whose target is missing fails the whole object,
 *		page moves and OOM scores included).
 */
static struct bpf_object *
memory_open(void **skel, const pset_ctx *ctx)
{
	struct bpf_object *obj = kernel_memory_kopen(skel, ctx);
	struct kernel_memory_bpf *s = *skel;
	int			faults = kernel_btf_has_tp("page_fault_user") &&
		kernel_btf_has_tp("page_fault_kernel");

	if (obj == NULL)
		return NULL;
	s->rodata->has_fault_tps = (uint8_t) faults;
	bpf_program__set_autoload(s->progs.pgt_kmem_fault_user, faults);
	bpf_program__set_autoload(s->progs.pgt_kmem_fault_kernel, faults);
	without_faults = !faults;
	return obj;
}

/*
 * start
 *		open (leaving out what the kernel lacks) -> shared maps -> load ->
 *		attach; the status says what the set runs without.
 */
static int
start(pset_inst *in, const pset_ctx *ctx)
{
	without_faults = 0;
	if (kset_start_single(in, ctx, &desc, "tp_btf/page_fault_*,mm_page_*", memory_open,
						  kernel_memory_kdestroy) < 0)
		return -1;
	if (without_faults && in->status.state != PGT_PROBE_UNAVAILABLE)
	{
		char		reason[sizeof(in->status.reason)];

		/* faults are half of what the set is for: degraded, not available */
		snprintf(reason, sizeof(reason), "%s", in->status.reason);
		pset_set_status(in, PGT_PROBE_DEGRADED, in->status.mechanism,
						"%s; without the exceptions:page_fault_* tracepoints (x86 only) "
						"page faults are not counted", reason);
	}
	return 0;
}

KSET_PROBE_SET(memory_set, "memory",
			   "page faults user/kernel, major/minor, pages allocated/freed, oom_score_adj",
			   PGT_SET_MEMORY, 50, start);
