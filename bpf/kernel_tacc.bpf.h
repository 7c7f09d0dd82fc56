/*
 * bpf/kernel_tacc.bpf.h
 *	  Task accumulators: the aggregate rows (kio, kproc, khist) a tracked
 *	  task touched last, kept in the task storage its set's programs look up
 *	  anyway, and added to plainly.
 *
 * Why: a shared map row costs a hash lookup into thousands of entries,
 * touched cold after every sleep, and atomic adds; a fsync'd TPC-B
 * transaction makes dozens of such updates, and they were most of what the
 * sets cost it (bench/RESULTS.md, 2026-12-02).  A backend moves between a
 * handful of rows (its statements, its files): those stay in its own
 * storage, found by a tag compare in one cache line.
 *
 * Rules:
 * - Only the task itself, or the CPU switching it in (sched), writes its
 *   accumulators, never an interrupt: plain adds.  Programs of other
 *   contexts (block completions, retransmits) keep to the shared maps.
 * - A row the table has no room for evicts one (round robin): the evicted
 *   row is folded into its map (atomic adds) and its slot takes the new
 *   key.  Every such move and the fold at exit run between tacc_folds'
 *   begun and done counts (a first use of a free slot moves nothing), so
 *   that the helper, which copies the maps and then reads every task's
 *   rows through the object's task iterator (pgt_tacc_dump_*), retries a
 *   copy during which a row moved: a row is then counted exactly once
 *   (helper/task_accum.c).
 *   The same iterator drops a cluster's rows when its pg_tracer_reset()
 *   asks (tacc_forget).
 * - At exit (sched_process_exit) a task folds all its rows and from then
 *   on adds to the maps directly: task storage dies with the task.
 *
 * Include after kernel_common.bpf.h, in an object that defines the maps
 * kio / kproc / khist it folds into.
 */
#ifndef PGT_BPF_KERNEL_TACC_BPF_H
#define PGT_BPF_KERNEL_TACC_BPF_H

struct
{
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pgt_tacc_folds);
} tacc_folds SEC(".maps");

/*
 * The postmaster whose rows the task iterator is to drop as it passes each
 * task (pgt_tacc_forget), 0 for none: pg_tracer_reset() of that cluster
 * (helper/kernel_set.c, kset_reset).  Written by the helper around one
 * iterator run, read here.
 */
struct
{
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} tacc_forget SEC(".maps");

/* One table of rows: which slots are used, a tag per slot to find a key */
struct pgt_tacc_io
{
	__u64		tag[PGT_TACC_IO_ROWS];
	__u8		used;			/* bit i: row[i] holds a key */
	__u8		hand;			/* next slot to evict */
	__u8		pad[6];
	struct pgt_kio_row row[PGT_TACC_IO_ROWS];
};

struct pgt_tacc_proc
{
	__u64		tag[PGT_TACC_PROC_ROWS];	/* the query id */
	__u8		used;
	__u8		hand;
	__u8		pad[6];
	struct pgt_kproc_row row[PGT_TACC_PROC_ROWS];
};

struct pgt_tacc_hist
{
	__u64		tag[PGT_TACC_HIST_ROWS];	/* metric, op, dev */
	__u8		used;
	__u8		hand;
	__u8		pad[6];
	struct pgt_khist_row row[PGT_TACC_HIST_ROWS];
};

/*
 * pgt_tacc_move
 *		Count a move of rows as begun (when done is 0) or done (1).
 */
static __always_inline void
pgt_tacc_move(int done)
{
	__u32		zero = 0;
	struct pgt_tacc_folds *f = bpf_map_lookup_elem(&tacc_folds, &zero);

	if (!f)
		return;
	if (done)
		__sync_fetch_and_add(&f->done, 1);
	else
		__sync_fetch_and_add(&f->begun, 1);
}

/*
 * pgt_tacc_publish
 *		Mark slot i used once its new row is written, and end the move an
 *		eviction began.  A first use of a free slot is no move: nothing
 *		left a map for it, so an iterator that reads the task before or
 *		after it counts nothing twice and loses nothing.  A free slot holds
 *		zeros, or a row a reset dropped (pgt_tacc_forget); the compiler
 *		barrier keeps the row's stores before the bit's, and x86 keeps
 *		stores in order for other CPUs, so an iterator that sees the bit
 *		sees the new row (a weakly ordered CPU could, racing a first use
 *		just after a reset, show the dropped row once).  Not counting first
 *		uses keeps the helper's copies from retrying at every new
 *		connection's first rows.
 */
static __always_inline void
pgt_tacc_publish(__u8 *used, int i, int evicted)
{
	asm volatile("" ::: "memory");
	*used |= (__u8) (1 << i);
	if (evicted)
		pgt_tacc_move(1);
}

/*
 * pgt_tacc_find
 *		The used slot of n (at most 8) whose tag is tag, or -1.
 */
static __always_inline int
pgt_tacc_find(const __u64 *tags, __u8 used, int n, __u64 tag)
{
	int			i;

	for (i = 0; i < n && i < 8; i++)
		if (((used >> i) & 1) && tags[i] == tag)
			return i;
	return -1;
}

/*
 * pgt_tacc_slot
 *		A slot for a new key: a free one, else the one the hand points at
 *		(*evict set).  n is a power of two.
 */
static __always_inline int
pgt_tacc_slot(__u8 used, __u8 *hand, int n, int *evict)
{
	int			i;

	*evict = 0;
	for (i = 0; i < n && i < 8; i++)
		if (!((used >> i) & 1))
			return i;
	*evict = 1;
	i = *hand & (n - 1);
	*hand = (__u8) (i + 1);
	return i;
}

/* kio ----------------------------------------------------------------- */

static __always_inline __u64
pgt_kio_tag(const struct pgt_kio_key *k)
{
	const __u64 *w = (const __u64 *) k;

	return (w[1] * 0x9E3779B97F4A7C15ULL) ^ (w[2] * 0xC2B2AE3D27D4EB4FULL) ^ w[0] ^
		(w[3] << 17);
}

static __always_inline int
pgt_kio_key_eq(const struct pgt_kio_key *a, const struct pgt_kio_key *b)
{
	const __u64 *x = (const __u64 *) a;
	const __u64 *y = (const __u64 *) b;

	return x[0] == y[0] && x[1] == y[1] && x[2] == y[2] && x[3] == y[3];
}

/*
 * pgt_kio_fold
 *		A task's row into map (atomic: other tasks' folds and other
 *		contexts add to the same rows).
 */
static __always_inline void
pgt_kio_fold(void *map, const struct pgt_kio_row *r)
{
	struct pgt_kio_val *v;

	if (!r->v.calls)
		return;
	v = pgt_kio_get(map, &r->k, r->v.pm);
	if (!v)
		return;
	__sync_fetch_and_add(&v->calls, r->v.calls);
	if (r->v.bytes)
		__sync_fetch_and_add(&v->bytes, r->v.bytes);
	if (r->v.errors)
		__sync_fetch_and_add(&v->errors, r->v.errors);
	if (r->v.total_ns)
		__sync_fetch_and_add(&v->total_ns, r->v.total_ns);
	PGT_MAX(&v->max_ns, r->v.max_ns);
}

/*
 * PGT_TACC_OPAQUE
 *		A caller passes its table as `exited ? NULL : &s->table`, and clang
 *		then tests `exited` again where the callee tests the pointer.  A
 *		verifier before 6.4 or so does not carry "exited != 0" from one test
 *		to the other, so on the path where the table is NULL it also walks
 *		the table's branch and refuses the program (a NULL dereference; seen
 *		on Debian 12's 6.1: test/oldkernel).  Hiding the pointer's origin
 *		from the compiler makes it test the pointer itself.
 */
#define PGT_TACC_OPAQUE(t) barrier_var(t)

/*
 * pgt_tacc_kio
 *		The row of key k to add to: the task's own (*shared 0) or, once the
 *		task has exited (t NULL), the map's (*shared 1).  NULL when the map
 *		refuses a row.
 */
static __always_inline struct pgt_kio_val *
pgt_tacc_kio(struct pgt_tacc_io *t, void *map, const struct pgt_kio_key *k, __u32 pm,
			 int *shared)
{
	__u64		tag = pgt_kio_tag(k);
	struct pgt_kio_row *r;
	int			evict;
	int			i;

	PGT_TACC_OPAQUE(t);
	*shared = !t;
	if (!t)
		return pgt_kio_get(map, k, pm);
	for (i = 0; i < PGT_TACC_IO_ROWS; i++)
		if (((t->used >> i) & 1) && t->tag[i] == tag && pgt_kio_key_eq(&t->row[i].k, k))
			return &t->row[i].v;
	i = pgt_tacc_slot(t->used, &t->hand, PGT_TACC_IO_ROWS, &evict) & (PGT_TACC_IO_ROWS - 1);
	r = &t->row[i];
	if (evict)
	{
		pgt_tacc_move(0);
		pgt_kio_fold(map, r);
	}
	r->k = *k;
	__builtin_memset(&r->v, 0, sizeof(r->v));
	r->v.pm = pm;
	t->tag[i] = tag;
	pgt_tacc_publish(&t->used, i, evict);
	return &r->v;
}

/* kproc --------------------------------------------------------------- */

/*
 * pgt_kproc_fold
 *		A task's row into map; max_idx is the value that is a maximum
 *		(-1: none).
 */
static __always_inline void
pgt_kproc_fold(void *map, const struct pgt_kproc_row *r, int max_idx)
{
	struct pgt_kproc_val *v = pgt_kproc_get(map, r->k.pid, r->k.queryid, r->v.pm);
	int			i;

	if (!v)
		return;
	for (i = 0; i < PGT_KPROC_NVALS; i++)
	{
		__u64		x = r->v.v[i];

		if (!x)
			continue;
		if (i == max_idx)
			PGT_MAX(&v->v[i], x);
		else
			__sync_fetch_and_add(&v->v[i], x);
	}
}

/*
 * pgt_tacc_kproc
 *		The (pid, query) counters to add to: the task's own row (*shared 0)
 *		or, with t NULL, the map's (*shared 1).
 */
static __always_inline struct pgt_kproc_val *
pgt_tacc_kproc(struct pgt_tacc_proc *t, void *map, __u32 pid, __u64 qid, __u32 pm,
			   int max_idx, int *shared)
{
	struct pgt_kproc_row *r;
	int			evict;
	int			i;

	PGT_TACC_OPAQUE(t);
	*shared = !t;
	if (!t)
		return pgt_kproc_get(map, pid, qid, pm);
	i = pgt_tacc_find(t->tag, t->used, PGT_TACC_PROC_ROWS, qid);
	if (i >= 0)
		return &t->row[i & (PGT_TACC_PROC_ROWS - 1)].v;
	i = pgt_tacc_slot(t->used, &t->hand, PGT_TACC_PROC_ROWS, &evict) & (PGT_TACC_PROC_ROWS - 1);
	r = &t->row[i];
	if (evict)
	{
		pgt_tacc_move(0);
		pgt_kproc_fold(map, r, max_idx);
	}
	__builtin_memset(r, 0, sizeof(*r));
	r->k.pid = pid;
	r->k.queryid = qid;
	r->v.pm = pm;
	t->tag[i] = qid;
	pgt_tacc_publish(&t->used, i, evict);
	return &r->v;
}

/* khist --------------------------------------------------------------- */

/*
 * pgt_khist_fold
 *		A task's histogram into map.
 */
static __always_inline void
pgt_khist_fold(void *map, const struct pgt_khist_row *r)
{
	struct pgt_khist_val *v = pgt_khist_get(map, &r->k, r->v.pm);
	int			i;

	if (!v)
		return;
	for (i = 0; i < 32; i++)
		if (r->v.slots[i])
			__sync_fetch_and_add(&v->slots[i], r->v.slots[i]);
}

/*
 * pgt_tacc_khist
 *		One latency (ns) into the histogram (metric, pid, dev, op): the
 *		task's own, or with t NULL the map's.
 */
static __always_inline void
pgt_tacc_khist(struct pgt_tacc_hist *t, void *map, __u32 metric, __u32 pid, __u32 dev,
			   __u32 op, __u32 pm, __u64 ns)
{
	__u64		tag = ((__u64) dev << 32) | ((op & 0xffff) << 16) | (metric & 0xffff);
	struct pgt_khist_row *r;
	int			evict;
	int			i;

	PGT_TACC_OPAQUE(t);
	if (!t)
	{
		pgt_khist_add(map, metric, pid, dev, op, pm, ns);
		return;
	}
	i = pgt_tacc_find(t->tag, t->used, PGT_TACC_HIST_ROWS, tag);
	if (i < 0)
	{
		i = pgt_tacc_slot(t->used, &t->hand, PGT_TACC_HIST_ROWS, &evict);
		r = &t->row[i & (PGT_TACC_HIST_ROWS - 1)];
		if (evict)
		{
			pgt_tacc_move(0);
			pgt_khist_fold(map, r);
		}
		__builtin_memset(r, 0, sizeof(*r));
		r->k.metric = metric;
		r->k.pid = pid;
		r->k.dev = dev;
		r->k.op = op;
		r->v.pm = pm;
		t->tag[i & (PGT_TACC_HIST_ROWS - 1)] = tag;
		pgt_tacc_publish(&t->used, i & 7, evict);
	}
	t->row[i & (PGT_TACC_HIST_ROWS - 1)].v.slots[pgt_khist_slot(ns)] += 1;
}

/* exit and the iterator ------------------------------------------------ */

/*
 * pgt_tacc_fold_all
 *		A task's rows into their maps (any table may be NULL), all slots
 *		freed: the task exits.  Runs in the task's own context.
 */
static __always_inline void
pgt_tacc_fold_all(struct pgt_tacc_io *io, void *kio_map, struct pgt_tacc_proc *proc,
				  void *kproc_map, int max_idx, struct pgt_tacc_hist *hist, void *khist_map)
{
	int			i;

	pgt_tacc_move(0);
	for (i = 0; io && i < PGT_TACC_IO_ROWS; i++)
		if ((io->used >> i) & 1)
			pgt_kio_fold(kio_map, &io->row[i]);
	for (i = 0; proc && i < PGT_TACC_PROC_ROWS; i++)
		if ((proc->used >> i) & 1)
			pgt_kproc_fold(kproc_map, &proc->row[i], max_idx);
	for (i = 0; hist && i < PGT_TACC_HIST_ROWS; i++)
		if ((hist->used >> i) & 1)
			pgt_khist_fold(khist_map, &hist->row[i]);
	if (io)
		io->used = 0;
	if (proc)
		proc->used = 0;
	if (hist)
		hist->used = 0;
	pgt_tacc_move(1);
}

/*
 * pgt_tacc_emit
 *		One row for the helper: a pgt_tacc_rec, then the row.
 */
static __always_inline void
pgt_tacc_emit(struct seq_file *seq, __u32 kind, const void *row, __u32 size)
{
	struct pgt_tacc_rec h = {.kind = kind, .size = size};

	bpf_seq_write(seq, &h, sizeof(h));
	bpf_seq_write(seq, row, size);
}

/*
 * pgt_tacc_dump
 *		A task's used rows (any table may be NULL), for the iterator.
 */
static __always_inline void
pgt_tacc_dump(struct seq_file *seq, struct pgt_tacc_io *io, struct pgt_tacc_proc *proc,
			  struct pgt_tacc_hist *hist)
{
	int			i;

	for (i = 0; io && i < PGT_TACC_IO_ROWS; i++)
		if ((io->used >> i) & 1)
			pgt_tacc_emit(seq, PGT_TACC_KIO, &io->row[i], sizeof(io->row[i]));
	for (i = 0; proc && i < PGT_TACC_PROC_ROWS; i++)
		if ((proc->used >> i) & 1)
			pgt_tacc_emit(seq, PGT_TACC_KPROC, &proc->row[i], sizeof(proc->row[i]));
	for (i = 0; hist && i < PGT_TACC_HIST_ROWS; i++)
		if ((hist->used >> i) & 1)
			pgt_tacc_emit(seq, PGT_TACC_KHIST, &hist->row[i], sizeof(hist->row[i]));
}

/*
 * PGT_TACC_UNUSE
 *		Free the slots of table t (n rows) whose rows belong to postmaster
 *		owner: one store of `used`, and none when no row does.  The store
 *		races the task's own programs (a slot taken meanwhile on another
 *		CPU is freed again, its row lost), which a reset of the task's own
 *		cluster accepts; a task of another cluster, whose rows never match,
 *		is not written at all.
 */
#define PGT_TACC_UNUSE(t, n, owner) \
	do { \
		__u8		was_ = (t)->used; \
		__u8		keep_ = was_; \
		int			i_; \
		for (i_ = 0; i_ < (n); i_++) \
			if ((t)->row[i_].v.pm == (owner)) \
				keep_ &= ~(1 << i_); \
		if (keep_ != was_) \
			(t)->used = keep_; \
	} while (0)

/*
 * pgt_tacc_forget
 *		Drop a task's rows (any table may be NULL) of the postmaster named
 *		in tacc_forget, for the iterator.  A row's slot is freed, not
 *		zeroed: its next use starts it afresh (pgt_tacc_slot).  The task may
 *		be adding to a row on another CPU meanwhile; such an add is lost
 *		with the row, and a slot it takes at that very moment may keep its
 *		row (`used` is a plain read-modify-write): a reset is exact only to
 *		within the calls under way as it passes.
 */
static __always_inline void
pgt_tacc_forget(struct pgt_tacc_io *io, struct pgt_tacc_proc *proc,
				struct pgt_tacc_hist *hist)
{
	__u32		zero = 0;
	__u32	   *pm = bpf_map_lookup_elem(&tacc_forget, &zero);

	if (!pm || !*pm)
		return;
	if (io)
		PGT_TACC_UNUSE(io, PGT_TACC_IO_ROWS, *pm);
	if (proc)
		PGT_TACC_UNUSE(proc, PGT_TACC_PROC_ROWS, *pm);
	if (hist)
		PGT_TACC_UNUSE(hist, PGT_TACC_HIST_ROWS, *pm);
}

#endif							/* PGT_BPF_KERNEL_TACC_BPF_H */
