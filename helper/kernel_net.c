/*
 * helper/kernel_net.c
 *	  Probe set "network" (bpf/kernel_net.bpf.c): socket send/recv calls, bytes and time; TCP retransmits by socket owner.
 */
#include "kernel_set.h"
#include "kernel_net.skel.h"

static const char *const names[] = {"send_calls", "send_bytes", "send_ns", "send_errors", "recv_calls", "recv_bytes", "recv_ns", "recv_errors", "retransmits", NULL};

static const kset_desc desc = {PGT_KPROC_NET, names, 0};

static void
destroy(void *skel)
{
	kernel_net_bpf__destroy(skel);
}

/*
 * start
 *		open -> shared maps -> load -> attach.
 */
static int
start(pset_inst *in, const pset_ctx *ctx)
{
	struct kernel_net_bpf *skel;
	kset_attach a;

	if (kset_new(in, &desc) == NULL)
		return -1;
	skel = kernel_net_bpf__open();
	if (skel == NULL)
	{
		pset_set_status(in, PGT_PROBE_UNAVAILABLE, "tp_btf/sys_enter+exit,tcp_retransmit", "BPF open failed");
		return 0;
	}
	skel->rodata->pgt_stream = ctx->stream;
	(void) kset_load_attach(in, ctx, skel->obj, skel, destroy, &a);
	kset_status_from(in, "tp_btf/sys_enter+exit,tcp_retransmit", &a);
	return 0;
}

static const probe_set net_set = {
	.name = "network",
	.description = "socket send/recv calls, bytes and time; TCP retransmits by socket owner",
	.id = PGT_SET_NETWORK,
	.order = 60,
	.start = start,
	.stop = kset_stop,
	.collect = kset_collect,
	.publish = kset_publish,
	.event = kset_event,
	.stats = kset_stats,
	.histograms = kset_histograms,
};

PGT_REGISTER_PROBE_SET(net_set);
