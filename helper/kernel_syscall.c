/*
 * helper/kernel_syscall.c
 *	  Probe set "syscall" (bpf/kernel_sysio.bpf.c, shared with "network"):
 *	  file I/O system calls of PostgreSQL processes with the file class
 *	  behind the descriptor, and an fsync latency histogram.
 */
#include "kernel_sysio.h"

/* the scope is the shared object's (kernel_sysio.c) */
static const kset_desc desc = {0, NULL, 0, NULL, -1, NULL};

/*
 * start
 *		Join the shared system-call object.
 */
static int
start(pset_inst *in, const pset_ctx *ctx)
{
	return ksysio_start(in, ctx, &desc, "tp_btf/sys_enter+sys_exit", "tp_btf/sys_enter+fexit");
}

KSET_PROBE_SET(syscall_set, "syscall",
			   "file I/O system calls: calls, bytes, errors, latency, file class; fsync histogram",
			   PGT_SET_SYSCALL, 10, start);
