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
#include "kernel_btf.h"
#include "kernel_sysio.h"

#include "kernel_sysio.skel.h"
#include "log.h"
#include "syscall_exit.h"

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
	int			fexit;			/* calls end at fexit programs, not sys_exit */
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
 * open_configured
 *		Open the object with the selected sets' code (file, net) and its
 *		calls' exits at fexit programs or at sys_exit; NULL when it did not
 *		open or the fexit targets are missing (reason filled).
 */
static struct kernel_sysio_bpf *
open_configured(const pset_ctx *ctx, int file, int net, int fexit, char *reason, size_t len)
{
	struct kernel_sysio_bpf *skel = kernel_sysio_bpf__open();

	if (skel == NULL)
	{
		snprintf(reason, len, "BPF open failed");
		return NULL;
	}
	skel->rodata->pgt_stream = ctx->stream;
	skel->rodata->pgt_chained = ctx->chain != NULL;
	skel->rodata->do_file = (uint8_t) file;
	skel->rodata->do_net = (uint8_t) net;
	/* (sk, skb, err) from 6.12 on: the transmit's error */
	skel->rodata->retrans_err_arg = (uint8_t) (net && kernel_btf_tp_args("tcp_retransmit_skb") >= 3);
	(void) bpf_program__set_autoload(skel->progs.pgt_knet_retransmit,
									 net && !kset_miss_events);
	(void) bpf_program__set_autoload(skel->progs.pgt_knet_reconcile, net);
	if (syscall_exit_setup(skel->obj, fexit, file, net, reason, len) != 0)
	{
		kernel_sysio_bpf__destroy(skel);
		return NULL;
	}
	return skel;
}

/*
 * unavailable
 *		The object does not run: why, for both sets' status.
 */
static void
unavailable(int err, const char *why)
{
	shared.att.load_err = err;
	snprintf(shared.att.first_error, sizeof(shared.att.first_error), "%.*s",
			 (int) sizeof(shared.att.first_error) - 1, why);
}

/*
 * load_with_exits
 *		Open, load and attach the object with exits at fexit (when fexit)
 *		or at sys_exit.  Returns 0, or a negative error with why filled:
 *		the object is then gone, and with fexit also when an fexit program
 *		did not attach (a call whose end went unseen would not be counted).
 */
static int
load_with_exits(const pset_ctx *ctx, int file, int net, int fexit, char *why, size_t len)
{
	struct kernel_sysio_bpf *skel;
	int			err;

	skel = open_configured(ctx, file, net, fexit, why, len);
	if (skel == NULL)
	{
		unavailable(-EINVAL, why);
		return -EINVAL;
	}
	err = kset_load_attach(&shared.inst, ctx, skel->obj, skel, destroy_skel, &shared.att);
	if (err < 0)
		snprintf(why, len, "%s", shared.att.first_error);
	else if (fexit && shared.att.failed_fexit > 0)
	{
		snprintf(why, len, "%s did not attach: %s", shared.att.failed_names,
				 shared.att.first_error);
		err = -EBUSY;
	}
	if (err < 0)
	{
		kset_stop(&shared.inst);	/* detached, unloaded; a fresh kset follows */
		if (kset_new(&shared.inst, &shared_desc) == NULL)
			return -ENOMEM;
	}
	return err;
}

/*
 * acquire
 *		Load the object on first use, with each set's code enabled when
 *		that set is selected, and its calls' exits where --syscall-exit and
 *		the kernel allow.  Returns -1 only when out of memory.
 */
static int
acquire(pset_inst *in, const pset_ctx *ctx)
{
	syscall_exit_mode mode = syscall_exit_mode_chosen();
	char		failed[256];
	char		why[sizeof(failed) + 32] = "";
	int			file;
	int			net;
	int			err;

	if (shared.refs++ > 0)
		return 0;
	shared.inst.set = in->set;
	if (kset_new(&shared.inst, &shared_desc) == NULL)
		goto out_of_memory;
	file = (ctx->selected & (UINT64_C(1) << PGT_SET_SYSCALL)) || in->set->id == PGT_SET_SYSCALL;
	net = (ctx->selected & (UINT64_C(1) << PGT_SET_NETWORK)) || in->set->id == PGT_SET_NETWORK;
	if (net && kset_miss_events)
		log_warn("network: --miss-events: no retransmit program; the socket pass alone "
				 "counts retransmits (testing)");
	shared.fexit = mode != SYSCALL_EXIT_TRACEPOINT && syscall_exit_fexit_works(why, sizeof(why));
	if (mode == SYSCALL_EXIT_FEXIT && !shared.fexit)
	{
		char		msg[sizeof(shared.att.first_error)];

		snprintf(msg, sizeof(msg), "--syscall-exit fexit: fexit unavailable: %s", why);
		unavailable(-EOPNOTSUPP, msg);
		return 0;
	}
	err = load_with_exits(ctx, file, net, shared.fexit, failed, sizeof(failed));
	if (err == -ENOMEM)
		goto out_of_memory;
	if (err < 0 && shared.fexit && mode == SYSCALL_EXIT_AUTO)
	{
		snprintf(why, sizeof(why), "the fexit programs: %s", failed);
		log_warn("system-call sets: %s", why);
		shared.fexit = 0;
		if (load_with_exits(ctx, file, net, 0, failed, sizeof(failed)) == -ENOMEM)
			goto out_of_memory;
	}
	else if (err < 0)
		unavailable(err, failed);	/* the status says what did not run */
	if (shared.fexit)
		log_info("system-call sets: calls end at fexit programs on the timed calls");
	else
		log_info("system-call sets: calls end at the sys_exit tracepoint (%s)",
				 mode == SYSCALL_EXIT_TRACEPOINT ? "--syscall-exit tracepoint" : why);
	return 0;

out_of_memory:
	shared.refs = 0;
	return -1;
}

/*
 * ksysio_start
 *		See kernel_sysio.h.
 */
int
ksysio_start(pset_inst *in, const pset_ctx *ctx, const kset_desc *desc,
			 const char *mech_sys_exit, const char *mech_fexit)
{
	kset	   *ks = kset_new(in, desc);
	kset	   *sh;
	int			fexit;

	if (ks == NULL || acquire(in, ctx) < 0)
		return -1;
	ks->skel[0] = &shared;
	ks->destroy[0] = release;
	sh = shared.inst.priv;
	ks->runner = sh;			/* holding one holds the object for both */
	ks->tacc_iter = sh->tacc_iter;
	ks->tacc_folds_fd = sh->tacc_folds_fd;
	ks->tacc_forget_fd = sh->tacc_forget_fd;
	if (in->set->id == PGT_SET_SYSCALL)
	{
		ks->kio_fd = sh->kio_fd;
		ks->kio_max = sh->kio_max;
		ks->khist_fd = sh->khist_fd;
		ks->khist_max = sh->khist_max;
	}
	else
	{
		ks->kproc_fd = sh->kproc_fd;
		ks->kproc_max = sh->kproc_max;
		ks->sock_iter = sh->sock_iter;
		ks->owners_fd = sh->owners_fd;
	}
	fexit = shared.fexit || syscall_exit_mode_chosen() == SYSCALL_EXIT_FEXIT;
	kset_status_scoped(in, fexit ? mech_fexit : mech_sys_exit, &shared.att,
					   shared.fexit ? "sys_enter on every system call of the host, fexit "
					   "on the timed calls' exits (one object shared with the other set)"
					   : "sys_enter and sys_exit on every system call of the host (one "
					   "object shared with the other set)");
	return 0;
}
