/*
 * helper/kernel_net.c
 *	  Probe set "network" (bpf/kernel_sysio.bpf.c, shared with "syscall"):
 *	  socket send/recv calls, bytes and time; TCP retransmits by socket
 *	  owner.
 */
#include "kernel_sysio.h"

static const char *const names[] = {"send_calls", "send_bytes", "send_ns", "send_errors", "recv_calls", "recv_bytes", "recv_ns", "recv_errors", "retransmits", NULL};

/* the scope is the shared object's (kernel_sysio.c) */
static const kset_desc desc = {PGT_KPROC_NET, names, 0, NULL, -1, NULL};

/*
 * start
 *		Join the shared system-call object.
 */
static int
start(pset_inst *in, const pset_ctx *ctx)
{
	return ksysio_start(in, ctx, &desc, "tp_btf/sys_*,tcp_retransmit",
						"sys_enter+fexit,tcp_retransmit");
}

KSET_PROBE_SET(net_set, "network",
			   "socket send/recv calls, bytes and time; TCP retransmits by socket owner",
			   PGT_SET_NETWORK, 60, start);
