/*
 * helper/kernel_set.c
 *	  Shared machinery of the kernel probe sets (see kernel_set.h): load and
 *	  attach on the shared maps with per-program failure reasons, copy the
 *	  aggregate maps and merge the tasks' own rows into the copies
 *	  (task_accum.h), publish segment rows for one cluster, print summaries,
 *	  histograms and events.  Single-threaded.
 */
#include "kernel_set.h"

#include "log.h"
#include "map_copy.h"
#include "parse_num.h"
#include "pid_retire.h"
#include "pgt_kernel.h"
#include "trace_out.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* every row the three maps feeding a table declare fits in its first size */
_Static_assert(PGT_DEFAULT_KERNEL_IO_CAP >= 3 * PGT_KIO_MAX,
			   "kernel io table smaller than the syscall, vfs and block kio maps");
_Static_assert(PGT_DEFAULT_KERNEL_PROC_CAP >= 3 * PGT_KPROC_MAX,
			   "kernel proc table smaller than the sched, memory and network kproc maps");
_Static_assert(PGT_DEFAULT_KERNEL_HIST_CAP >= 3 * PGT_KHIST_ENTRIES,
			   "kernel hist table smaller than the syscall, block and sched khist maps");

int			kset_miss_events = 0;

#define KSET_MISS_EVENTS_MAX	1000

/*
 * kset_configure_miss_events
 *		--miss-events N (see kernel_set.h).
 */
int
kset_configure_miss_events(const char *arg, char *err, size_t errlen)
{
	long		v;

	if (parse_decimal(arg, 0, KSET_MISS_EVENTS_MAX, &v) < 0)
	{
		snprintf(err, errlen, "\"%s\" is not a number from 0 to %d", arg,
				 KSET_MISS_EVENTS_MAX);
		return -1;
	}
	kset_miss_events = (int) v;
	return 0;
}

/*
 * kset_new
 *		Allocate the set's state into in->priv.
 */
kset *
kset_new(pset_inst *in, const kset_desc *desc)
{
	kset	   *ks = calloc(1, sizeof(*ks));

	if (ks == NULL)
		return NULL;
	ks->desc = desc;
	ks->kio_fd = ks->kproc_fd = ks->khist_fd = ks->tacc_folds_fd = ks->owners_fd = -1;
	ks->tacc_forget_fd = -1;
	ks->sock_pass = -1;
	ks->resume_fd[0] = ks->resume_fd[1] = -1;
	ks->runner = ks;
	in->priv = ks;
	return ks;
}

/*
 * note_attach_failure
 *		Count prog as not attached: its section name into out's list, and
 *		err's text as the set's first error when it is the first.
 */
static void
note_attach_failure(const pset_inst *in, struct bpf_program *prog, int err,
					kset_attach *out)
{
	size_t		off = strlen(out->failed_names);
	char		ebuf[128];

	pset_errstr(err, ebuf, sizeof(ebuf));
	out->failed++;
	if (bpf_program__expected_attach_type(prog) == BPF_TRACE_FEXIT)
		out->failed_fexit++;
	if (out->first_error[0] == '\0')
		snprintf(out->first_error, sizeof(out->first_error), "%s", ebuf);
	snprintf(out->failed_names + off, sizeof(out->failed_names) - off, "%s%s",
			 off ? "," : "", bpf_program__section_name(prog));
	log_debug("probe set %s: %s did not attach: %s", in->set->name,
			  bpf_program__section_name(prog), ebuf);
}

/*
 * records_rows
 *		Whether prog makes a set's rows: the exit and fork programs only
 *		fold or set up a task's state, and the iterators walk what others
 *		recorded, so a set with nothing else attached records nothing.
 */
static int
records_rows(const struct bpf_program *prog)
{
	const char *sec = bpf_program__section_name(prog);

	return bpf_program__expected_attach_type(prog) != BPF_TRACE_ITER &&
		strcmp(sec, "tp_btf/sched_process_exit") != 0 &&
		strcmp(sec, "tp_btf/sched_process_fork") != 0;
}

/*
 * attach_programs
 *		Attach each program obj loads (one on a chained hook joins the hook's
 *		chain instead when there are chains); one that does not attach is
 *		counted in out with its error, the others still run.  Keeps the
 *		links, and the task and TCP iterators among them.
 */
static void
attach_programs(pset_inst *in, struct bpf_object *obj, kset_attach *out)
{
	kset	   *ks = in->priv;
	struct bpf_program *prog;
	int			err;

	bpf_object__for_each_program(prog, obj)
	{
		int			i = ks->nlinks;

		if (!bpf_program__autoload(prog))
			continue;			/* left out on purpose: its set is not selected */
		if (i >= KSET_MAX_LINKS)
			break;
		ks->members[i].out_only = ks->desc->switch_out_only != NULL &&
			ks->desc->switch_out_only();
		err = hook_chain_attach(ks->chain, prog, ks->desc->chain_slot, &ks->members[i],
								&ks->links[i]);
		if (err != 0)
		{
			note_attach_failure(in, prog, err, out);
			continue;
		}
		if (bpf_program__expected_attach_type(prog) == BPF_TRACE_ITER)
		{
			if (strcmp(bpf_program__section_name(prog), "iter/tcp") == 0)
				ks->sock_iter = ks->links[i];
			else
				ks->tacc_iter = ks->links[i];
		}
		ks->progs[i] = prog;
		ks->nlinks++;
		out->attached++;
		out->recording += records_rows(prog);
		if (ks->members[i].hook >= 0)
			out->chained++;
	}
}

/*
 * find_maps
 *		Note the descriptors (and sizes) of the maps of obj the set reads:
 *		the aggregates, the socket owners, the task accumulators' counters,
 *		and the object's resume generation (at slot, its place in the set).
 */
static void
find_maps(kset *ks, struct bpf_object *obj, int slot)
{
	struct bpf_map *m;

	bpf_object__for_each_map(m, obj)
	{
		const char *name = bpf_map__name(m);

		if (strcmp(name, "kio") == 0)
		{
			ks->kio_fd = bpf_map__fd(m);
			ks->kio_max = bpf_map__max_entries(m);
		}
		else if (strcmp(name, "kproc") == 0)
		{
			ks->kproc_fd = bpf_map__fd(m);
			ks->kproc_max = bpf_map__max_entries(m);
		}
		else if (strcmp(name, "khist") == 0)
		{
			ks->khist_fd = bpf_map__fd(m);
			ks->khist_max = bpf_map__max_entries(m);
		}
		else if (strcmp(name, "owners") == 0)
			ks->owners_fd = bpf_map__fd(m);
		else if (strcmp(name, "tacc_folds") == 0)
			ks->tacc_folds_fd = bpf_map__fd(m);
		else if (strcmp(name, "tacc_forget") == 0)
			ks->tacc_forget_fd = bpf_map__fd(m);
		else if (strcmp(name, "kresume") == 0)
			ks->resume_fd[slot] = bpf_map__fd(m);
	}
}

/*
 * kset_load_attach
 *		Reuse the shared maps, load obj, attach its programs
 *		(attach_programs) and find the maps the set reads.  The skeleton is
 *		kept for kset_stop.  Returns 0, or a negative error when it did not
 *		load.
 */
int
kset_load_attach(pset_inst *in, const pset_ctx *ctx, struct bpf_object *obj,
				 void *skel, void (*destroy) (void *), kset_attach *out)
{
	kset	   *ks = in->priv;
	char		ebuf[128];
	int			slot;
	int			err;

	memset(out, 0, sizeof(*out));
	for (slot = 0; slot < KSET_MAX_OBJS && ks->skel[slot] != NULL; slot++)
		;
	if (slot == KSET_MAX_OBJS)
		return -EINVAL;
	ks->skel[slot] = skel;
	ks->destroy[slot] = destroy;

	err = pset_prepare_object(ctx, obj);
	if (err == 0)
		err = bpf_object__load(obj);
	if (err != 0)
	{
		out->load_err = err;
		snprintf(out->first_error, sizeof(out->first_error), "load failed: %s",
				 pset_errstr(err, ebuf, sizeof(ebuf)));
		return err;
	}
	ks->chain = ctx->chain;
	attach_programs(in, obj, out);
	find_maps(ks, obj, slot);
	return 0;
}

/*
 * kset_start_single
 *		The start of a set made of one object: open (flags set by open),
 *		reuse the shared maps, load, attach, and say how it went.  Returns
 *		0, or -1 when out of memory (a set that cannot run is not an error).
 */
int
kset_start_single(pset_inst *in, const pset_ctx *ctx, const kset_desc *desc,
				  const char *mechanism, kset_open_fn open, void (*destroy) (void *))
{
	struct bpf_object *obj;
	void	   *skel = NULL;
	kset_attach a;

	if (kset_new(in, desc) == NULL)
		return -1;
	obj = open(&skel, ctx);
	if (obj == NULL)
	{
		pset_set_status(in, PGT_PROBE_UNAVAILABLE, mechanism, "BPF open failed");
		return 0;
	}
	(void) kset_load_attach(in, ctx, obj, skel, destroy, &a);
	kset_status_from(in, mechanism, &a);
	return 0;
}

/*
 * kset_tracked
 *		The pid filter took in processes found in /proc: a set whose task
 *		iterator makes the storage of tracked tasks that have none
 *		(tacc_iter_makes_storage) runs it now, so that they are counted from
 *		here on rather than from the next copy.  Its rows are not wanted.
 */
void
kset_tracked(pset_inst *in)
{
	kset	   *ks = in->priv;
	tacc_buf	rows = {0};
	int			err;

	if (ks == NULL || !ks->tacc_iter_makes_storage || ks->tacc_iter == NULL)
		return;
	err = tacc_read(ks->tacc_iter, &rows);
	if (err != 0)
		log_debug("probe set %s: the task iterator did not run: %d", in->set->name, err);
	tacc_buf_free(&rows);
}

/*
 * kset_running
 *		Whether prog attached when the set started (by its link or in a
 *		hook chain): a set whose programs depend on each other asks.
 */
int
kset_running(const pset_inst *in, const struct bpf_program *prog)
{
	const kset *ks = in->priv;
	int			i;

	for (i = 0; ks != NULL && i < ks->nlinks; i++)
		if (ks->progs[i] == prog)
			return 1;
	return 0;
}

/*
 * kset_status_append
 *		Add "; note" to a running set's status reason (what it runs without,
 *		or how, on this kernel); its state and mechanism stay.
 */
void
kset_status_append(pset_inst *in, const char *note)
{
	char		reason[sizeof(in->status.reason)];

	if (in->status.state == PGT_PROBE_UNAVAILABLE)
		return;
	snprintf(reason, sizeof(reason), "%s", in->status.reason);
	pset_set_status(in, in->status.state, in->status.mechanism, "%s; %s", reason, note);
}

/*
 * kset_status_from
 *		State of a single-object set from its attach outcome.
 */
void
kset_status_from(pset_inst *in, const char *mechanism, const kset_attach *a)
{
	kset	   *ks = in->priv;

	kset_status_scoped(in, mechanism, a, ks ? ks->desc->scope : NULL);
}

/*
 * kset_status_scoped
 *		The same, with what its hooks fire on (NULL: not said).
 */
void
kset_status_scoped(pset_inst *in, const char *mechanism, const kset_attach *a,
				   const char *scope)
{
	if (a->load_err < 0 || a->attached == 0)
		pset_set_status(in, PGT_PROBE_UNAVAILABLE, mechanism, "%s",
						a->first_error[0] ? a->first_error : "no program attached");
	else if (a->recording == 0)
		pset_set_status(in, PGT_PROBE_UNAVAILABLE, mechanism,
						"%s did not attach: %s; the programs left record nothing",
						a->failed_names[0] ? a->failed_names : "no recording program",
						a->first_error[0] ? a->first_error : "none loaded");
	else if (a->failed > 0)
		pset_set_status(in, PGT_PROBE_DEGRADED, mechanism, "%s did not attach: %s",
						a->failed_names, a->first_error);
	else
	{
		char		chained[48] = "";

		if (a->chained > 0)
			snprintf(chained, sizeof(chained), " (%d in the hook chains)", a->chained);
		pset_set_status(in, PGT_PROBE_AVAILABLE, mechanism, "%d program%s attached%s%s%s",
						a->attached, a->attached == 1 ? "" : "s", chained,
						scope ? "; " : "", scope ? scope : "");
	}
}

/*
 * kset_stop
 *		Detach and unload.
 */
void
kset_stop(pset_inst *in)
{
	kset	   *ks = in->priv;
	int			i;

	if (ks == NULL)
		return;
	for (i = 0; i < ks->nlinks; i++)
		hook_chain_detach(ks->chain, &ks->members[i], &ks->links[i]);
	for (i = 0; i < KSET_MAX_OBJS; i++)
		if (ks->skel[i] != NULL)
			ks->destroy[i] (ks->skel[i]);
	free(ks->io);
	free(ks->proc);
	free(ks->hist);
	tacc_buf_free(&ks->tacc);
	free(ks);
	in->priv = NULL;
}

/*
 * copy_map
 *		Up to max entries of a hash map into *rows (key then value, packed;
 *		allocated on first use).  Returns the number of rows.
 */
static size_t
copy_map(int fd, size_t ksize, size_t vsize, unsigned char **rows, size_t max)
{
	if (fd < 0)
		return 0;
	if (*rows == NULL && (*rows = malloc(max * (ksize + vsize))) == NULL)
		return 0;
	return map_copy_rows(fd, ksize, vsize, *rows, max);
}

/* How rows of exited processes fold (pid_retire.h) */
static const retire_u64_layout kio_fold = {.nwords = 5, .max_mask = 1ULL << 4};
static const retire_u64_layout khist_fold = {.nwords = 32};
static const retire_u64_layout ksched_fold = {
	.nwords = PGT_KPROC_NVALS, .max_mask = 1ULL << PGT_KSCHED_RUNQ_MAX_NS};
static const retire_u64_layout kmem_fold = {
	.nwords = PGT_KPROC_NVALS, .last_mask = 1ULL << PGT_KMEM_OOM_SCORE_ADJ,
	.last_guard = 1 + PGT_KMEM_OOM_UPDATES};	/* rows without an update have 0 */
static const retire_u64_layout ksum_fold = {.nwords = PGT_KPROC_NVALS};

_Static_assert(offsetof(struct pgt_kio_val, max_ns) == 4 * 8, "kio_fold layout");
_Static_assert(sizeof(((struct pgt_khist_val *) 0)->slots) == 32 * 8, "khist_fold layout");

static const retire_u64_layout *
kproc_fold(uint32_t proc_flag)
{
	switch (proc_flag)
	{
		case PGT_KPROC_SCHED:
			return &ksched_fold;
		case PGT_KPROC_MEMORY:
			return &kmem_fold;
	}
	return &ksum_fold;
}

/*
 * copy_retire
 *		copy_map, and once more when rows of exited processes were folded.
 */
static size_t
copy_retire(const retire_map *m, unsigned char **rows, size_t max)
{
	size_t		n = copy_map(m->fd, m->ksize, m->vsize, rows, max);

	/*
	 * rows are key then value, packed (kio_row, kproc_row, khist_row); an
	 * empty map has its round too (a reused pid's rows: none to fold here)
	 */
	if (pid_retire_rows(m, *rows, *rows ? *rows + m->ksize : NULL, n) > 0)
		n = copy_map(m->fd, m->ksize, m->vsize, rows, max);
	return n;
}

/*
 * copy_retire of a map whose key has `pid` and whose value has `pm`; rows
 * of exited processes fold per role
 */
#define COPY_RETIRE(name_, fd_, ktype, vtype, fold_, rows_, max_) \
	copy_retire(&(retire_map) { \
		.name = (name_), .fd = (fd_), .ksize = sizeof(ktype), .vsize = sizeof(vtype), \
		.kstride = sizeof(ktype) + sizeof(vtype), \
		.vstride = sizeof(ktype) + sizeof(vtype), \
		.pid_off = offsetof(ktype, pid), .pm_off = offsetof(vtype, pm), .role_in_key = 1, \
		.max_entries = (max_), .fold = pid_retire_fold_u64, .fold_arg = (fold_)}, \
		(unsigned char **) (rows_), (max_))

/*
 * copy_maps
 *		The set's aggregate maps into its copies.
 */
static void
copy_maps(kset *ks)
{
	ks->nio = COPY_RETIRE("kernel io", ks->kio_fd, struct pgt_kio_key,
						  struct pgt_kio_val, &kio_fold, &ks->io, ks->kio_max);
	ks->nproc = COPY_RETIRE("kernel proc", ks->kproc_fd, struct pgt_kproc_key,
							struct pgt_kproc_val, kproc_fold(ks->desc->proc_flag),
							&ks->proc, ks->kproc_max);
	ks->nhist = COPY_RETIRE("kernel histograms", ks->khist_fd, struct pgt_khist_key,
							struct pgt_khist_val, &khist_fold, &ks->hist, ks->khist_max);
}

/*
 * Copies of the maps and the tasks' rows before one is taken as it is:
 * exits and evictions under connection churn come tens a second (30 s of
 * pgbench -C: 5 copies still saw rows move after 3 tries, none after 6).
 */
#define COPY_ATTEMPTS	6

/*
 * copy_with_tasks
 *		The maps and the tasks' own rows (ks->tacc), taken again (up to
 *		COPY_ATTEMPTS times) while rows moved between the two, so that each
 *		row is counted once (task_accum.h).  "syscall" and "network" share one
 *		object, yet each runs its iterator: a read of the tasks' rows is
 *		only consistent with the map copy it brackets, so one set cannot
 *		reuse the other's (some 0.1 ms a second).
 */
static void
copy_with_tasks(kset *ks)
{
	int			attempt;

	for (attempt = 0; attempt < COPY_ATTEMPTS; attempt++)
	{
		struct pgt_tacc_folds before;
		struct pgt_tacc_folds after;
		int			quiet;

		quiet = tacc_folds_read(ks->tacc_folds_fd, &before) == 0 &&
			before.begun == before.done;
		copy_maps(ks);
		if (ks->tacc_iter == NULL || tacc_read(ks->tacc_iter, &ks->tacc) != 0)
			return;
		if (quiet && tacc_folds_read(ks->tacc_folds_fd, &after) == 0 &&
			after.begun == before.begun)
			return;
	}
	log_debug("probe set: rows kept moving between tasks and maps; this copy may count "
			  "a few twice or not at all");
}

/* The tasks' rows of each kind: keys and folds as the maps' */
#define TACC_KIND(kind_, row, fold_) \
	((tacc_kind) {.kind = (kind_), .ksize = sizeof(((row *) 0)->k), .rsize = sizeof(row), \
		.pid_off = offsetof(row, k.pid), .pm_off = offsetof(row, v.pm), \
		.fold = pid_retire_fold_u64, .fold_arg = (fold_)})

/*
 * merge_tasks
 *		The tasks' rows into the copies of the maps this set reads.
 */
static void
merge_tasks(kset *ks)
{
	if (ks->tacc.len == 0)
		return;
	if (ks->kio_fd >= 0)
	{
		ks->io_cap = ks->io_cap ? ks->io_cap : ks->kio_max;
		ks->nio = tacc_merge(&TACC_KIND(PGT_TACC_KIO, kio_row, &kio_fold), &ks->tacc,
							 (unsigned char **) &ks->io, ks->nio, &ks->io_cap);
	}
	if (ks->kproc_fd >= 0)
	{
		ks->proc_cap = ks->proc_cap ? ks->proc_cap : ks->kproc_max;
		ks->nproc = tacc_merge(&TACC_KIND(PGT_TACC_KPROC, kproc_row,
										  kproc_fold(ks->desc->proc_flag)),
							   &ks->tacc, (unsigned char **) &ks->proc, ks->nproc,
							   &ks->proc_cap);
	}
	if (ks->khist_fd >= 0)
	{
		ks->hist_cap = ks->hist_cap ? ks->hist_cap : ks->khist_max;
		ks->nhist = tacc_merge(&TACC_KIND(PGT_TACC_KHIST, khist_row, &khist_fold),
							   &ks->tacc, (unsigned char **) &ks->hist, ks->nhist,
							   &ks->hist_cap);
	}
}

/*
 * reconcile_sockets
 *		Run the network set's pass over the host's TCP sockets
 *		(pgt_knet_reconcile, bpf/kernel_sysio.bpf.c), which charges the
 *		retransmits the kernel did not report, so that this copy has them.
 *		Not while the set is held: held spans are not counted.  Nor while
 *		no tracked process owns a TCP socket (clients on Unix sockets): the
 *		pass walks every bucket of the kernel's TCP hash, some 1 ms of CPU
 *		on the development VM (bench/RESULTS.md, 2026-12-03 morning), and
 *		would charge nothing.
 */
static void
reconcile_sockets(kset *ks)
{
	char		buf[256];
	uint64_t	key;
	ssize_t		n;
	int			fd;
	int			run;

	if (ks->sock_iter == NULL || ks->runner->held)
		return;
	run = ks->owners_fd < 0 || bpf_map_get_next_key(ks->owners_fd, NULL, &key) == 0;
	if (run != ks->sock_pass)
		log_debug("network: socket pass %s", run ? "runs: a served process owns a TCP socket"
				  : "skipped: no served process owns a TCP socket");
	ks->sock_pass = run;
	if (!run)
		return;
	fd = bpf_iter_create(bpf_link__fd(ks->sock_iter));
	if (fd < 0)
	{
		log_debug("network: cannot run the socket pass: %s", strerror(errno));
		return;
	}
	/* the program writes nothing: read to the end so it visits every socket */
	while ((n = read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
		;
	close(fd);
}

/*
 * note_full
 *		After a copy: is one of the set's maps holding its declared capacity
 *		(PGT_KIO_MAX ...)?  From there on its least recently updated rows
 *		are evicted, 128 at a time, and nothing counts them: the set's
 *		pg_tracer_probes row says so (in->note) and the log, once an episode.
 */
static void
note_full(pset_inst *in, const kset *ks)
{
	const char *what = NULL;
	size_t		n = 0;
	size_t		cap = 0;

	if (ks->kio_fd >= 0 && ks->nio >= PGT_KIO_MAX)
		what = "I/O", n = ks->nio, cap = PGT_KIO_MAX;
	else if (ks->kproc_fd >= 0 && ks->nproc >= PGT_KPROC_MAX)
		what = "per-process", n = ks->nproc, cap = PGT_KPROC_MAX;
	else if (ks->khist_fd >= 0 && ks->nhist >= PGT_KHIST_ENTRIES)
		what = "histogram", n = ks->nhist, cap = PGT_KHIST_ENTRIES;
	if (what == NULL)
	{
		in->note[0] = '\0';
		return;
	}
	if (in->note[0] == '\0')
		log_warn("probe set %s: its in-kernel %s table holds %zu rows, its capacity is "
				 "%zu: the least recently updated rows are evicted from now on, uncounted "
				 "(pg_tracer_reset() empties a cluster's)", in->set->name, what, n, cap);
	snprintf(in->note, sizeof(in->note),
			 "%s table full (%zu rows of %zu): least recently updated rows evicted", what, n,
			 cap);
}

/*
 * kset_collect
 *		Copy the set's aggregates (the maps' rows and the tasks' own) and
 *		count its events.
 */
void
kset_collect(pset_inst *in)
{
	kset	   *ks = in->priv;
	uint64_t	events = 0;
	size_t		i;

	if (ks == NULL)
		return;
	reconcile_sockets(ks);
	copy_with_tasks(ks);
	note_full(in, ks);
	merge_tasks(ks);
	for (i = 0; i < ks->nio; i++)
		events += ks->io[i].v.calls;
	for (i = 0; i < ks->nproc; i++)
	{
		const uint64_t *v = (const uint64_t *) ks->proc[i].v.v;

		switch (ks->desc->proc_flag)
		{
			case PGT_KPROC_SCHED:
				events += v[PGT_KSCHED_VOLUNTARY] + v[PGT_KSCHED_INVOLUNTARY];
				break;
			case PGT_KPROC_MEMORY:
				events += v[PGT_KMEM_FAULTS_USER] + v[PGT_KMEM_FAULTS_KERNEL];
				break;
			case PGT_KPROC_NET:
				events += v[PGT_KNET_SEND_CALLS] + v[PGT_KNET_RECV_CALLS];
				break;
		}
	}
	in->events = events;
}

/*
 * mine
 *		Does a row (its postmaster pm) belong to the cluster being
 *		published?  Kernel rows (pm 0) go to every cluster.
 */
static int
mine(const pset_pub *pub, uint32_t pm)
{
	return pm == 0 || pm == pub->postmaster;
}

/*
 * kset_publish
 *		Segment rows of one cluster.
 */
void
kset_publish(pset_inst *in, pset_pub *pub)
{
	kset	   *ks = in->priv;
	size_t		i;

	if (ks == NULL)
		return;
	for (i = 0; i < ks->nio; i++)
	{
		struct pgt_kernel_io_entry e;
		const kio_row *r = &ks->io[i];

		if (!mine(pub, r->v.pm))
			continue;
		memset(&e, 0, sizeof(e));
		e.pid = pset_pub_nspid(pub, r->k.pid);
		e.role = (uint8_t) pset_pub_role(pub, r->k.pid);
		e.layer = r->k.layer;
		e.op = r->k.op;
		e.file_class = r->k.file_class;
		e.queryid = (int64_t) r->k.queryid;
		e.relfilenode = r->k.relfilenode;
		e.database = r->k.dboid;
		e.dev = r->k.dev;
		e.calls = r->v.calls;
		e.bytes = r->v.bytes;
		e.errors = r->v.errors;
		e.total_ns = r->v.total_ns;
		e.max_ns = r->v.max_ns;
		(void) pset_pub_add_pid(pub, PGT_SEC_KERNEL_IO, &e, sizeof(e), r->k.pid);
	}
	for (i = 0; i < ks->nproc; i++)
	{
		struct pgt_kernel_proc_entry e;
		const kproc_row *r = &ks->proc[i];

		if (!mine(pub, r->v.pm))
			continue;
		memset(&e, 0, sizeof(e));
		e.pid = pset_pub_nspid(pub, r->k.pid);
		e.role = (uint8_t) pset_pub_role(pub, r->k.pid);
		e.sets = ks->desc->proc_flag;
		e.queryid = (int64_t) r->k.queryid;
		memcpy(e.vals, r->v.v, sizeof(e.vals));
		(void) pset_pub_add_pid(pub, PGT_SEC_KERNEL_PROC, &e, sizeof(e), r->k.pid);
	}
	for (i = 0; i < ks->nhist; i++)
	{
		struct pgt_kernel_hist_entry e;
		const khist_row *r = &ks->hist[i];

		if (!mine(pub, r->v.pm))
			continue;
		memset(&e, 0, sizeof(e));
		e.metric = r->k.metric;
		e.pid = pset_pub_nspid(pub, r->k.pid);
		e.role = (uint8_t) pset_pub_role(pub, r->k.pid);
		e.dev = r->k.dev;
		e.op = r->k.op;
		memcpy(e.slots, r->v.slots, sizeof(e.slots));
		(void) pset_pub_add_pid(pub, PGT_SEC_KERNEL_HIST, &e, sizeof(e), r->k.pid);
	}
}

/*
 * dev_str
 *		"major:minor" of a kernel dev_t.
 */
static const char *
dev_str(uint32_t dev, char *buf, size_t len)
{
	snprintf(buf, len, "%u:%u", dev >> 20, dev & ((1U << 20) - 1));
	return buf;
}

/*
 * render_call
 *		A timed system call (syscall and network sets).
 */
static void
render_call(pset_inst *in, trace_out *out, const struct pgt_event_hdr *h,
			const struct pgt_kev_call *c)
{
	char		dbuf[32];

	trace_rec_begin(out, in->set->name, pgt_kop_name(c->op), h->pid, h->queryid, h->ts_ns);
	trace_rec_u64(out, "tid", h->tid);
	trace_rec_i64(out, "ret", c->ret);
	if (c->ret > 0 && c->op != PGT_KOP_OPENAT && c->op != PGT_KOP_CLOSE &&
		c->op != PGT_KOP_FSYNC && c->op != PGT_KOP_FDATASYNC &&
		c->op != PGT_KOP_SYNC_FILE_RANGE)
		trace_rec_u64(out, "bytes", (uint64_t) c->ret);
	trace_rec_f64(out, "latency_us", (double) c->latency_ns / 1000.0);
	trace_rec_i64(out, "fd", (int32_t) c->fd);
	if (h->set != PGT_SET_NETWORK)
	{
		trace_rec_str(out, "file_class", pgt_kfile_name(c->file_class));
		if (c->file_class == PGT_KFILE_DATA)
		{
			trace_rec_u64(out, "relfilenode", c->relfilenode);
			trace_rec_u64(out, "database", c->dboid);
		}
		if (c->dev)
			trace_rec_str(out, "dev", dev_str(c->dev, dbuf, sizeof(dbuf)));
	}
	trace_rec_end(out);
}

/*
 * render_io
 *		A block request or a page-cache miss.
 */
static void
render_io(pset_inst *in, trace_out *out, const struct pgt_event_hdr *h,
		  const struct pgt_kev_io *c)
{
	char		dbuf[32];
	const char *name = h->event == PGT_KEV_BLOCK ? pgt_kop_name(c->op) :
		c->op == PGT_KOP_CACHE_WRITE_MISS ? "cache_write_miss" :
		c->op == PGT_KOP_CACHE_META_MISS ? "cache_meta_miss" : "cache_miss";

	trace_rec_begin(out, in->set->name, name, h->pid, h->queryid, h->ts_ns);
	trace_rec_u64(out, "bytes", c->bytes);
	trace_rec_str(out, "dev", dev_str(c->dev, dbuf, sizeof(dbuf)));
	if (h->event == PGT_KEV_BLOCK)
	{
		trace_rec_f64(out, "latency_us", (double) c->latency_ns / 1000.0);
		trace_rec_u64(out, "sector", c->sector);
	}
	else
	{
		trace_rec_u64(out, "ino", c->ino);
		trace_rec_u64(out, "page_index", c->sector);
	}
	trace_rec_end(out);
}

/*
 * render_proc
 *		A per-process event: a switch-in with its off-CPU and run-queue
 *		time, a page fault, an OOM score change, a TCP retransmit.
 */
static void
render_proc(pset_inst *in, trace_out *out, const struct pgt_event_hdr *h,
			const struct pgt_kev_proc *c)
{
	char		abuf[32];
	const char *name = h->event == PGT_KEV_ONCPU ? "oncpu"
		: h->event == PGT_KEV_FAULT ? (c->kind ? "fault_kernel" : "fault_user")
		: h->event == PGT_KEV_OOM_ADJ ? "oom_score_adj" : "tcp_retransmit";

	trace_rec_begin(out, in->set->name, name, h->pid, h->queryid, h->ts_ns);
	trace_rec_u64(out, "tid", h->tid);
	trace_rec_u64(out, "cpu", c->cpu);
	if (h->event == PGT_KEV_ONCPU)
	{
		trace_rec_f64(out, "offcpu_us", (double) c->a / 1000.0);
		trace_rec_f64(out, "runq_us", (double) c->b / 1000.0);
	}
	else if (h->event == PGT_KEV_FAULT)
	{
		snprintf(abuf, sizeof(abuf), "0x%llx", (unsigned long long) c->a);
		trace_rec_str(out, "address", abuf);
	}
	else if (h->event == PGT_KEV_OOM_ADJ)
		trace_rec_i64(out, "oom_score_adj", (int64_t) c->a);
	else
	{
		trace_rec_u64(out, "sport", c->a & 0xffff);
		trace_rec_u64(out, "dport", (c->a >> 16) & 0xffff);
		trace_rec_u64(out, "segments", c->b);
	}
	trace_rec_end(out);
}

/*
 * kset_event
 *		Render one ring-buffer record of a kernel set; -1 when it is
 *		malformed (a payload shorter than its kind's, an unknown kind).
 *		The payload is copied out first: a record need not be aligned.
 */
int
kset_event(pset_inst *in, trace_out *out, const struct pgt_event_hdr *h,
		   const void *data, size_t len)
{
	union
	{
		struct pgt_kev_call call;
		struct pgt_kev_io io;
		struct pgt_kev_proc proc;
	}			c;

	switch (h->event)
	{
		case PGT_KEV_CALL:
			if (len < sizeof(c.call))
				return -1;
			memcpy(&c.call, data, sizeof(c.call));
			render_call(in, out, h, &c.call);
			return 0;
		case PGT_KEV_BLOCK:
		case PGT_KEV_CACHE_MISS:
			if (len < sizeof(c.io))
				return -1;
			memcpy(&c.io, data, sizeof(c.io));
			render_io(in, out, h, &c.io);
			return 0;
		case PGT_KEV_ONCPU:
		case PGT_KEV_FAULT:
		case PGT_KEV_OOM_ADJ:
		case PGT_KEV_RETRANSMIT:
			if (len < sizeof(c.proc))
				return -1;
			memcpy(&c.proc, data, sizeof(c.proc));
			render_proc(in, out, h, &c.proc);
			return 0;
	}
	return -1;
}

/*
 * cmp_io
 *		qsort order of I/O rows in trace --stats: by pid, then the most time
 *		first, then the most calls; the key decides ties, so the order is
 *		the same from one summary to the next.
 */
static int
cmp_io(const void *a, const void *b)
{
	const kio_row *x = a;
	const kio_row *y = b;
	int			c;

	if ((c = TRACE_CMP3(x->k.pid, y->k.pid)) != 0)
		return c;
	if ((c = trace_cmp_heaviest(x->v.total_ns, x->v.calls, y->v.total_ns, y->v.calls)) != 0)
		return c;
	return memcmp(&x->k, &y->k, sizeof(x->k));
}

/* process rows: by pid, then query id */
static int
cmp_proc(const void *a, const void *b)
{
	const kproc_row *x = a;
	const kproc_row *y = b;
	int			c;

	if ((c = TRACE_CMP3(x->k.pid, y->k.pid)) != 0)
		return c;
	return TRACE_CMP3((int64_t) x->k.queryid, (int64_t) y->k.queryid);
}

/* histograms: by pid, metric, op, device */
static int
cmp_hist(const void *a, const void *b)
{
	const khist_row *x = a;
	const khist_row *y = b;
	int			c;

	if ((c = TRACE_CMP3(x->k.pid, y->k.pid)) != 0)
		return c;
	if ((c = TRACE_CMP3(x->k.metric, y->k.metric)) != 0)
		return c;
	if ((c = TRACE_CMP3(x->k.op, y->k.op)) != 0)
		return c;
	return TRACE_CMP3(x->k.dev, y->k.dev);
}

/*
 * kset_stats
 *		trace --stats: one record per I/O aggregate and per process row,
 *		grouped by pid (cmp_io, cmp_proc).  The rows are the last collect's
 *		copy, so sorting them in place loses nothing.
 */
void
kset_stats(pset_inst *in, trace_out *out)
{
	kset	   *ks = in->priv;
	char		dbuf[32];
	size_t		i;
	int			j;

	if (ks == NULL)
		return;
	if (ks->nio > 1)
		qsort(ks->io, ks->nio, sizeof(ks->io[0]), cmp_io);
	if (ks->nproc > 1)
		qsort(ks->proc, ks->nproc, sizeof(ks->proc[0]), cmp_proc);
	for (i = 0; i < ks->nio; i++)
	{
		const kio_row *r = &ks->io[i];

		trace_rec_begin(out, in->set->name, "stats", r->k.pid, r->k.queryid, 0);
		trace_rec_str(out, "layer", pgt_klayer_name(r->k.layer));
		trace_rec_str(out, "op", pgt_kop_name(r->k.op));
		trace_rec_str(out, "file_class", pgt_kfile_name(r->k.file_class));
		if (r->k.file_class == PGT_KFILE_DATA)
		{
			trace_rec_u64(out, "relfilenode", r->k.relfilenode);
			trace_rec_u64(out, "database", r->k.dboid);
		}
		if (r->k.dev)
			trace_rec_str(out, "dev", dev_str(r->k.dev, dbuf, sizeof(dbuf)));
		trace_rec_u64(out, "calls", r->v.calls);
		trace_rec_u64(out, "bytes", r->v.bytes);
		trace_rec_u64(out, "errors", r->v.errors);
		if (pgt_klayer_timed(r->k.layer))
		{
			trace_rec_f64(out, "total_ms", (double) r->v.total_ns / 1e6);
			trace_rec_f64(out, "avg_us", r->v.calls ? (double) r->v.total_ns / 1e3 / (double) r->v.calls : 0);
			trace_rec_f64(out, "max_us", (double) r->v.max_ns / 1e3);
		}
		trace_rec_end(out);
	}
	for (i = 0; i < ks->nproc && ks->desc->proc_names; i++)
	{
		const kproc_row *r = &ks->proc[i];

		trace_rec_begin(out, in->set->name, "stats", r->k.pid, r->k.queryid, 0);
		for (j = 0; j < PGT_KPROC_NVALS && ks->desc->proc_names[j]; j++)
		{
			/*
			 * a signed last value is the latest of the updates the value
			 * before it counts: with none, there is none (SQL: NULL)
			 */
			if (ks->desc->proc_signed_last && (j + 1 == PGT_KPROC_NVALS ||
											   !ks->desc->proc_names[j + 1]))
			{
				if (j > 0 && r->v.v[j - 1] > 0)
					trace_rec_i64(out, ks->desc->proc_names[j], (int64_t) r->v.v[j]);
			}
			else
				trace_rec_u64(out, ks->desc->proc_names[j], r->v.v[j]);
		}
		trace_rec_end(out);
	}
}

/*
 * kset_histograms
 *		trace --histogram: every histogram of the set, by pid (cmp_hist).
 */
void
kset_histograms(pset_inst *in, trace_out *out)
{
	kset	   *ks = in->priv;
	size_t		i;

	if (ks == NULL)
		return;
	if (ks->nhist > 1)
		qsort(ks->hist, ks->nhist, sizeof(ks->hist[0]), cmp_hist);
	for (i = 0; i < ks->nhist; i++)
	{
		const khist_row *r = &ks->hist[i];
		char		label[96];
		int			n;

		/* what the histogram is keyed by: runq's has no op and no device */
		n = snprintf(label, sizeof(label), "%s", pgt_khist_name(r->k.metric));
		if (r->k.op)
			n += snprintf(label + n, sizeof(label) - n, " %s", pgt_kop_name(r->k.op));
		if (r->k.dev)
			snprintf(label + n, sizeof(label) - n, " dev %u:%u", r->k.dev >> 20,
					 r->k.dev & ((1U << 20) - 1));
		trace_hist(out, in->set->name, pgt_khist_name(r->k.metric), r->k.pid, 0, label,
				   (const uint64_t *) r->v.slots, 32, "usecs");
	}
}
