/*
 * helper/kernel_set.h
 *	  The machinery the six kernel probe sets (kernel_syscall.c,
 *	  kernel_vfs.c, kernel_block.c, kernel_sched.c, kernel_memory.c,
 *	  kernel_net.c) share: load and attach one or more BPF objects on the
 *	  shared maps, copy their aggregate maps (kio, kproc, khist), publish
 *	  them as segment rows, print them for `pg-tracer trace`, and render
 *	  their events.  A set file only opens its skeleton(s) and describes
 *	  itself with a kset_desc.
 */
#ifndef PGT_HELPER_KERNEL_SET_H
#define PGT_HELPER_KERNEL_SET_H

#include "probe_set.h"
#include "kernel_sets.h"

struct bpf_object;
struct bpf_link;

#define KSET_MAX_OBJS	2
#define KSET_MAX_LINKS	16

typedef struct kset_desc
{
	uint32_t	proc_flag;		/* PGT_KPROC_* for kproc rows, 0 if none */
	const char *const *proc_names;	/* PGT_KPROC_NVALS field names */
	int			proc_signed_last;	/* the last used value is signed */
} kset_desc;

typedef struct kio_row
{
	struct pgt_kio_key k;
	struct pgt_kio_val v;
} kio_row;

typedef struct kproc_row
{
	struct pgt_kproc_key k;
	struct pgt_kproc_val v;
} kproc_row;

typedef struct khist_row
{
	struct pgt_khist_key k;
	struct pgt_khist_val v;
} khist_row;

typedef struct kset
{
	const kset_desc *desc;
	void	   *skel[KSET_MAX_OBJS];
	void		(*destroy[KSET_MAX_OBJS]) (void *skel);
	struct bpf_link *links[KSET_MAX_LINKS];
	int			nlinks;
	int			kio_fd;
	int			kproc_fd;
	int			khist_fd;
	kio_row    *io;
	size_t		nio;
	kproc_row  *proc;
	size_t		nproc;
	khist_row  *hist;
	size_t		nhist;
} kset;

/* attach outcome of one object */
typedef struct kset_attach
{
	int			attached;
	int			failed;
	int			load_err;		/* < 0 when the object did not load */
	char		first_error[128];
	char		failed_names[96];
} kset_attach;

extern kset *kset_new(pset_inst *in, const kset_desc *desc);
extern int	kset_load_attach(pset_inst *in, const pset_ctx *ctx, struct bpf_object *obj,
							 void *skel, void (*destroy) (void *), kset_attach *out);
extern void kset_status_from(pset_inst *in, const char *mechanism, const kset_attach *a);

/* probe_set callbacks shared by the kernel sets */
extern void kset_stop(pset_inst *in);
extern void kset_collect(pset_inst *in);
extern void kset_publish(pset_inst *in, pset_pub *pub);
extern void kset_event(pset_inst *in, struct trace_out *out,
					   const struct pgt_event_hdr *hdr, const void *data, size_t len);
extern void kset_stats(pset_inst *in, struct trace_out *out);
extern void kset_histograms(pset_inst *in, struct trace_out *out);

#endif							/* PGT_HELPER_KERNEL_SET_H */
