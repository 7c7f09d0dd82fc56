/*
 * helper/kernel_memory.c
 *	  Probe set "memory" (bpf/kernel_memory.bpf.c): page faults user /
 *	  kernel, major / minor, pages allocated / freed, oom_score_adj.
 */
#include "kernel_set.h"
#include "kernel_memory.skel.h"

static const char *const names[] = {"faults_user", "faults_kernel", "faults_major", "faults_minor", "pages_alloc", "pages_free", "oom_score_adj_updates", "oom_score_adj", NULL};

static const kset_desc desc = {PGT_KPROC_MEMORY, names, 1,
	"runs on every page fault and page allocation of the host", -1, NULL};

KSET_SKELETON(kernel_memory)

/*
 * start
 *		open -> shared maps -> load -> attach.
 */
static int
start(pset_inst *in, const pset_ctx *ctx)
{
	return kset_start_single(in, ctx, &desc, "tp_btf/page_fault_*,mm_page_*",
							 kernel_memory_kopen, kernel_memory_kdestroy);
}

KSET_PROBE_SET(memory_set, "memory",
			   "page faults user/kernel, major/minor, pages allocated/freed, oom_score_adj",
			   PGT_SET_MEMORY, 50, start);
