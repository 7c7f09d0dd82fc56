/*
 * helper/kernel_sysio.c
 *	  The object bpf/kernel_sysio.bpf.c that the "syscall" and "network"
 *	  sets share: one sys_enter and one sys_exit program do the work of
 *	  both, so a system call of any task on the host pays for one program
 *	  pair however many of the two sets run.  The first of the two sets to
 *	  start loads the object with the flags of every selected one
 *	  (pset_ctx.selected); each set reads only its own aggregate maps
 *	  (syscall: kio, khist; network: kproc); the last to stop unloads it.
 *
 * Single-threaded (the daemon's or the trace loop): no locking.
 */
#include "kernel_sysio.h"

#include "kernel_sysio.skel.h"
#include "log.h"

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The loaded object, shared by reference count. */
static struct
{
	int			refs;
	pset_inst	inst;			/* owns the skeleton, links and map fds */
	kset_attach att;
} shared;

static const kset_desc shared_desc = {0, NULL, 0, NULL, PGT_CHAIN_SLOT_SYSIO, NULL};

static void
destroy_skel(void *skel)
{
	kernel_sysio_bpf__destroy(skel);
}

/*
 * release
 *		A set stops: the last one detaches and unloads the object.
 */
static void
release(void *unused)
{
	if (shared.refs > 0 && --shared.refs == 0)
	{
		kset_stop(&shared.inst);
		memset(&shared, 0, sizeof(shared));
	}
}

/*
 * retransmit_has_err
 *		Does this kernel's tcp_retransmit_skb tracepoint pass the transmit
 *		error (sk, skb, err: 6.12 and later)?  Read from the running
 *		kernel's BTF: the prototype of btf_trace_tcp_retransmit_skb
 *		(its first parameter is the tracepoint's own context).
 */
static int
retransmit_has_err(void)
{
	struct btf *btf = btf__load_vmlinux_btf();
	const struct btf_type *t;
	int			id;
	int			has = 0;

	if (btf == NULL)
		return 0;
	id = btf__find_by_name_kind(btf, "btf_trace_tcp_retransmit_skb", BTF_KIND_TYPEDEF);
	t = id > 0 ? btf__type_by_id(btf, (uint32_t) id) : NULL;
	if (t != NULL)
		t = btf__type_by_id(btf, t->type);	/* pointer */
	if (t != NULL && btf_is_ptr(t))
		t = btf__type_by_id(btf, t->type);	/* function prototype */
	if (t != NULL && btf_is_func_proto(t))
		has = btf_vlen(t) >= 4;
	btf__free(btf);
	return has;
}

/*
 * acquire
 *		Load the object on first use, with each set's code enabled when
 *		that set is selected.  Returns -1 only when out of memory.
 */
static int
acquire(pset_inst *in, const pset_ctx *ctx)
{
	struct kernel_sysio_bpf *skel;
	int			file;
	int			net;

	if (shared.refs++ > 0)
		return 0;
	shared.inst.set = in->set;
	if (kset_new(&shared.inst, &shared_desc) == NULL)
	{
		shared.refs = 0;
		return -1;
	}
	skel = kernel_sysio_bpf__open();
	if (skel == NULL)
	{
		shared.att.load_err = -EINVAL;
		snprintf(shared.att.first_error, sizeof(shared.att.first_error), "BPF open failed");
		return 0;
	}
	file = (ctx->selected & (UINT64_C(1) << PGT_SET_SYSCALL)) || in->set->id == PGT_SET_SYSCALL;
	net = (ctx->selected & (UINT64_C(1) << PGT_SET_NETWORK)) || in->set->id == PGT_SET_NETWORK;
	skel->rodata->pgt_stream = ctx->stream;
	skel->rodata->pgt_chained = ctx->chain != NULL;
	skel->rodata->do_file = (uint8_t) file;
	skel->rodata->do_net = (uint8_t) net;
	skel->rodata->retrans_err_arg = (uint8_t) (net && retransmit_has_err());
	if (net && kset_miss_events)
		log_warn("network: --miss-events: no retransmit program; the socket pass alone "
				 "counts retransmits (testing)");
	(void) bpf_program__set_autoload(skel->progs.pgt_knet_retransmit,
									 net && !kset_miss_events);
	(void) bpf_program__set_autoload(skel->progs.pgt_knet_reconcile, net);
	(void) kset_load_attach(&shared.inst, ctx, skel->obj, skel, destroy_skel, &shared.att);
	return 0;
}

/*
 * ksysio_start
 *		See kernel_sysio.h.
 */
int
ksysio_start(pset_inst *in, const pset_ctx *ctx, const kset_desc *desc,
			 const char *mechanism)
{
	kset	   *ks = kset_new(in, desc);
	kset	   *sh;

	if (ks == NULL || acquire(in, ctx) < 0)
		return -1;
	ks->skel[0] = &shared;
	ks->destroy[0] = release;
	sh = shared.inst.priv;
	ks->runner = sh;			/* holding one holds the object for both */
	ks->tacc_iter = sh->tacc_iter;
	ks->tacc_folds_fd = sh->tacc_folds_fd;
	if (in->set->id == PGT_SET_SYSCALL)
	{
		ks->kio_fd = sh->kio_fd;
		ks->khist_fd = sh->khist_fd;
	}
	else
	{
		ks->kproc_fd = sh->kproc_fd;
		ks->sock_iter = sh->sock_iter;
		ks->owners_fd = sh->owners_fd;
	}
	kset_status_from(in, mechanism, &shared.att);
	return 0;
}
