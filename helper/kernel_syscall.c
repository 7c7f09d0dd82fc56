/*
 * helper/kernel_syscall.c
 *	  Probe set "syscall" (bpf/kernel_syscall.bpf.c): file I/O system calls
 *	  of PostgreSQL processes with the file class behind the descriptor, and
 *	  an fsync latency histogram.
 */
#include "kernel_set.h"
#include "kernel_syscall.skel.h"

static const kset_desc desc = {0, NULL, 0};

static void
destroy(void *skel)
{
	kernel_syscall_bpf__destroy(skel);
}

/*
 * start
 *		open -> shared maps -> load -> attach.
 */
static int
start(pset_inst *in, const pset_ctx *ctx)
{
	struct kernel_syscall_bpf *skel;
	kset_attach a;

	if (kset_new(in, &desc) == NULL)
		return -1;
	skel = kernel_syscall_bpf__open();
	if (skel == NULL)
	{
		pset_set_status(in, PGT_PROBE_UNAVAILABLE, "tp_btf/sys_enter+sys_exit",
						"BPF open failed");
		return 0;
	}
	skel->rodata->pgt_stream = ctx->stream;
	(void) kset_load_attach(in, ctx, skel->obj, skel, destroy, &a);
	kset_status_from(in, "tp_btf/sys_enter+sys_exit", &a);
	return 0;
}

static const probe_set syscall_set = {
	.name = "syscall",
	.description = "file I/O system calls: calls, bytes, errors, latency, file class; fsync histogram",
	.id = PGT_SET_SYSCALL,
	.order = 10,
	.start = start,
	.stop = kset_stop,
	.collect = kset_collect,
	.publish = kset_publish,
	.event = kset_event,
	.stats = kset_stats,
	.histograms = kset_histograms,
};

PGT_REGISTER_PROBE_SET(syscall_set);
