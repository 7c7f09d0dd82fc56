/*
 * helper/kernel_set.h
 *	  The machinery the six kernel probe sets (kernel_syscall.c,
 *	  kernel_vfs.c, kernel_block.c, kernel_sched.c, kernel_memory.c,
 *	  kernel_net.c) share: load and attach one or more BPF objects on the
 *	  shared maps, copy their aggregate maps (kio, kproc, khist) with the
 *	  rows tracked tasks keep themselves (task_accum.h), publish
 *	  them as segment rows, print them for `pg-tracer trace`, and render
 *	  their events.  A set file only opens its skeleton(s) and describes
 *	  itself with a kset_desc.
 */
#ifndef PGT_HELPER_KERNEL_SET_H
#define PGT_HELPER_KERNEL_SET_H

#include "probe_set.h"
#include "kernel_sets.h"
#include "task_accum.h"

struct bpf_object;
struct bpf_link;

#define KSET_MAX_OBJS	2
#define KSET_MAX_LINKS	32		/* the system-call object with fexit: 24 */

typedef struct kset_desc
{
	uint32_t	proc_flag;		/* PGT_KPROC_* for kproc rows, 0 if none */
	const char *const *proc_names;	/* PGT_KPROC_NVALS field names */
	int			proc_signed_last;	/* the last used value is signed */
	const char *scope;			/* what the hooks fire on (status reason) */
	int			chain_slot;		/* PGT_CHAIN_SLOT_* of its programs on a
								 * chained hook (hook_chain.h), if it has any */
	/*
	 * Does its sched_switch program, as loaded, need only the switches
	 * that take a tracked process off a CPU (chain_member.out_only)?
	 * NULL: it needs them all.
	 */
	int			(*switch_out_only) (void);
} kset_desc;

typedef struct pgt_kio_row kio_row;
typedef struct pgt_kproc_row kproc_row;
typedef struct pgt_khist_row khist_row;

typedef struct kset
{
	const kset_desc *desc;
	void	   *skel[KSET_MAX_OBJS];
	void		(*destroy[KSET_MAX_OBJS]) (void *skel);
	/* per running program: its link, or its place in a hook chain */
	struct bpf_link *links[KSET_MAX_LINKS];
	chain_member members[KSET_MAX_LINKS];
	struct bpf_program *progs[KSET_MAX_LINKS];	/* to attach again */
	int			nlinks;
	hook_chain *chain;			/* where members joined */
	/* holding (kernel_hold.c): whose programs run for this set, and theirs */
	struct kset *runner;		/* this kset, or the shared object's */
	int			held;			/* runner: its hooks are detached */
	int			resume_fd[KSET_MAX_OBJS];	/* each object's `kresume` */
	uint32_t	edges;			/* holds and resumes so far: kresume.gen */
	int			failed;			/* runner: programs not attached again */
	int			failed_err;		/* the first one's error */
	uint32_t	state;			/* status before the first hold */
	char		reason[sizeof(((probe_status *) 0)->reason)];
	int			kio_fd;
	int			kproc_fd;
	int			khist_fd;
	/* their sizes as loaded: PGT_KIO_MAX ... and the CPUs' LRU room */
	size_t		kio_max;
	size_t		kproc_max;
	size_t		khist_max;
	/* the tasks' own rows (task_accum.h): NULL / -1 when the object has none */
	struct bpf_link *tacc_iter;
	int			tacc_iter_makes_storage;	/* and makes tracked tasks' storage */
	int			tacc_folds_fd;
	int			tacc_forget_fd;	/* pg_tracer_reset(): whose rows to drop */
	/* network: the pass that charges unreported retransmits, or NULL */
	struct bpf_link *sock_iter;
	int			owners_fd;		/* the TCP sockets it looks for (`owners`) */
	int			sock_pass;		/* did the pass run at the last copy (-1: no copy yet) */
	tacc_buf	tacc;
	/* the copies: maps' rows, then the tasks' rows merged in */
	kio_row    *io;
	size_t		nio;
	size_t		io_cap;
	kproc_row  *proc;
	size_t		nproc;
	size_t		proc_cap;
	khist_row  *hist;
	size_t		nhist;
	size_t		hist_cap;
} kset;

/* attach outcome of one object */
typedef struct kset_attach
{
	int			attached;		/* programs running, chained ones included */
	int			recording;		/* of those, the ones on events that make rows
								 * (not the exit and fork folds, not iterators) */
	int			chained;		/* of those, in a hook chain */
	int			failed;
	int			failed_fexit;	/* of those, fexit programs */
	int			load_err;		/* < 0 when the object did not load */
	char		first_error[128];
	char		failed_names[96];
} kset_attach;

/*
 * Open a set's skeleton with its read-only flags set from ctx (stream);
 * returns the object, *skel the skeleton, NULL when it did not open.
 */
typedef struct bpf_object *(*kset_open_fn) (void **skel, const pset_ctx *ctx);

/*
 * KSET_SKELETON(kernel_x): kernel_x_kopen() (a kset_open_fn) and
 * kernel_x_kdestroy() for the skeleton build/kernel_x.skel.h, whose object
 * includes pgt_common.bpf.h (the pgt_stream flag).
 */
#define KSET_SKELETON(name) \
static struct bpf_object * \
name##_kopen(void **skel, const pset_ctx *ctx) \
{ \
	struct name##_bpf *s = name##_bpf__open(); \
	if (s == NULL) \
		return NULL; \
	s->rodata->pgt_stream = ctx->stream; \
	s->rodata->pgt_chained = ctx->chain != NULL; \
	*skel = s; \
	return s->obj; \
} \
static void \
name##_kdestroy(void *skel) \
{ \
	name##_bpf__destroy(skel); \
}

/* The probe_set of a kernel set: its own start, the shared callbacks. */
#define KSET_PROBE_SET(sym, name_, descr, id_, order_, start_) \
static const probe_set sym = { \
	.name = name_, \
	.description = descr, \
	.id = id_, \
	.order = order_, \
	.start = start_, \
	.stop = kset_stop, \
	.collect = kset_collect, \
	.publish = kset_publish, \
	.event = kset_event, \
	.stats = kset_stats, \
	.histograms = kset_histograms, \
	.hold = kset_hold, \
	.reset = kset_reset, \
	.tracked = kset_tracked, \
}; \
PGT_REGISTER_PROBE_SET(sym)

/*
 * --miss-events N (testing): the sets behave as on a kernel that leaves
 * some events unreported, so that what repairs such gaps is exercised
 * (t/022, t/024): the sched program ignores every Nth switch-in it sees
 * (its period is then closed from the scheduler's record), the network
 * set attaches no retransmit program (retransmits reach the counts through
 * the helper's socket pass alone), and the daemon's exec notes lose one in
 * N (discovery then scans /proc: t/004).  0, the default, is off.
 */
extern int	kset_miss_events;
extern int	kset_configure_miss_events(const char *arg, char *err, size_t errlen);

extern kset *kset_new(pset_inst *in, const kset_desc *desc);
extern int	kset_start_single(pset_inst *in, const pset_ctx *ctx, const kset_desc *desc,
							  const char *mechanism, kset_open_fn open,
							  void (*destroy) (void *));
extern int	kset_load_attach(pset_inst *in, const pset_ctx *ctx, struct bpf_object *obj,
							 void *skel, void (*destroy) (void *), kset_attach *out);
extern void kset_status_from(pset_inst *in, const char *mechanism, const kset_attach *a);
extern void kset_status_scoped(pset_inst *in, const char *mechanism, const kset_attach *a,
							   const char *scope);

/* probe_set callbacks shared by the kernel sets */
extern void kset_stop(pset_inst *in);
extern void kset_hold(pset_inst *in, int hold);	/* kernel_hold.c */
extern void kset_tracked(pset_inst *in);
extern void kset_status_append(pset_inst *in, const char *note);
extern int	kset_running(const pset_inst *in, const struct bpf_program *prog);
extern void kset_collect(pset_inst *in);
extern void kset_publish(pset_inst *in, pset_pub *pub);
/*
 * pg_tracer_reset() of the cluster whose postmaster is pm (host pid): drop
 * its rows of the set's aggregates, and the kernel's own; returns the map
 * rows dropped (kernel_reset.c).
 */
extern size_t kset_reset(pset_inst *in, uint32_t pm, int shared);
extern int	kset_event(pset_inst *in, struct trace_out *out,
					   const struct pgt_event_hdr *hdr, const void *data, size_t len);
extern void kset_stats(pset_inst *in, struct trace_out *out);
extern void kset_histograms(pset_inst *in, struct trace_out *out);

#endif							/* PGT_HELPER_KERNEL_SET_H */
