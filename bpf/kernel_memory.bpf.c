// SPDX-License-Identifier: GPL-2.0
/*
 * bpf/kernel_memory.bpf.c
 *	  Probe set "memory": per tracked process (and query id) page faults in
 *	  user and kernel mode (exceptions tracepoints), how many of them were
 *	  major / minor (the task's maj_flt / min_flt counters, read at each
 *	  fault: a fault's own outcome is counted at the task's next fault, for
 *	  the query of the fault, so a task's last fault has none), pages
 *	  allocated and freed (kmem mm_page_alloc / mm_page_free, 1 << order
 *	  pages each), and oom_score_adj changes.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "pgt_common.bpf.h"
#include "kernel_common.bpf.h"

char LICENSE[] SEC("license") = "GPL";

PGT_DECLARE_KPROC;

struct pgt_fault_state
{
	__u64		maj;
	__u64		min;
	struct pgt_qid_cache qc;	/* see pgt_task_qid */
	__u64		qid;			/* query id at the last fault */
	__u32		pm;				/* postmaster: the task is tracked */
	__u16		have_base;		/* maj / min hold the counters at a fault */
	__u16		gen;			/* kresume.gen when they were taken */
};

struct
{
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pgt_fault_state);
} fstate SEC(".maps");

/* the exceptions:page_fault_* tracepoints exist (x86); set before load */
const volatile __u8 has_fault_tps = 1;

/*
 * outcome
 *		How the task's faults since its last one ended, major or minor: the
 *		growth of its maj_flt / min_flt counters (a fault is counted there
 *		as it ends, after this tracepoint), charged to the query of that
 *		last fault (v is the row of qid, the current one).  The first fault
 *		only takes the counters as the base: a process tracked since it
 *		started has them at 0, one tracked later has its past in them.  So
 *		does the first after the set was held: the growth since the base
 *		includes the faults of the held span, which are not counted.
 */
static __always_inline void
outcome(struct pgt_fault_state *fs, struct task_struct *task, __u32 tgid, __u32 pm,
		__u64 qid, struct pgt_kproc_val *v)
{
	__u64		maj = task->maj_flt;
	__u64		min = task->min_flt;
	__u16		gen = (__u16) pgt_kresume_gen();
	struct pgt_kproc_val *prev = v;

	if (fs->have_base && fs->gen == gen && (maj > fs->maj || min > fs->min))
	{
		if (fs->qid != qid)
			prev = pgt_kproc_get(&kproc, tgid, fs->qid, pm);
		if (prev && maj > fs->maj)
			__sync_fetch_and_add(&prev->v[PGT_KMEM_MAJOR], maj - fs->maj);
		if (prev && min > fs->min)
			__sync_fetch_and_add(&prev->v[PGT_KMEM_MINOR], min - fs->min);
	}
	fs->maj = maj;
	fs->min = min;
	fs->have_base = 1;
	fs->gen = gen;
}

/*
 * fault
 *		One page fault of the current task (kernel: 1 in kernel mode).
 */
static __always_inline int
fault(unsigned long address, int kernel)
{
	__u64		id = bpf_get_current_pid_tgid();
	__u32		tgid = id >> 32;
	__u32		pm = pgt_tracked_pm(tgid);
	struct task_struct *task;
	struct pgt_fault_state *fs;
	struct pgt_kproc_val *v;
	struct pgt_kev_proc_rec *r;
	__u64		qid;

	task = bpf_get_current_task_btf();
	if (!pm)
	{
		/*
		 * Not (or no longer) tracked: a process that exec'd, or one the
		 * helper took out again, must not have pages() charge its moves to
		 * the cluster for the rest of its life.
		 */
		fs = bpf_task_storage_get(&fstate, task, 0, 0);
		if (fs)
			fs->pm = 0;
		return 0;
	}
	fs = bpf_task_storage_get(&fstate, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	qid = fs ? pgt_task_qid(task, tgid, &fs->qc, 0) : pgt_current_qid(tgid);
	v = pgt_kproc_get(&kproc, tgid, qid, pm);
	if (v)
		__sync_fetch_and_add(&v->v[kernel ? PGT_KMEM_FAULTS_KERNEL : PGT_KMEM_FAULTS_USER], 1);
	if (fs)
	{
		if (v)
			outcome(fs, task, tgid, pm, qid, v);
		fs->qid = qid;
		fs->pm = pm;
	}
	if (!v)
		return 0;
	r = pgt_event_reserve(sizeof(*r), PGT_SET_MEMORY, PGT_KEV_FAULT, tgid, (__u32) id, qid);
	if (r)
	{
		r->c.a = address;
		r->c.b = 0;
		r->c.cpu = bpf_get_smp_processor_id();
		r->c.kind = kernel;
		bpf_ringbuf_submit(r, 0);
	}
	return 0;
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(pgt_kmem_fault_user, unsigned long address, struct pt_regs *regs,
			 unsigned long error_code)
{
	return fault(address, 0);
}

SEC("tp_btf/page_fault_kernel")
int BPF_PROG(pgt_kmem_fault_kernel, unsigned long address, struct pt_regs *regs,
			 unsigned long error_code)
{
	return fault(address, 1);
}

/*
 * state_without_faults
 *		Where the kernel has no page-fault tracepoints (they are x86's),
 *		the state fault() would keep: made at a tracked task's first page
 *		move (a hash lookup for every task's first, then one task-storage
 *		probe), its query id read at each move.
 */
static __always_inline struct pgt_fault_state *
state_without_faults(struct task_struct *task, __u32 tgid, struct pgt_fault_state *fs)
{
	__u32		pm;

	if (!fs)
	{
		pm = pgt_tracked_pm(tgid);
		if (!pm)
			return NULL;
		fs = bpf_task_storage_get(&fstate, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!fs)
			return NULL;
		fs->pm = pm;
	}
	if (fs->pm)
		fs->qid = pgt_task_qid(task, tgid, &fs->qc, 0);
	return fs;
}

/*
 * pages
 *		Pages allocated (idx PGT_KMEM_PAGES_ALLOC) or freed by the current
 *		task.  These fire for every task of the host, so the filter is one
 *		task-storage probe, not a hash lookup: a tracked process has its
 *		fault state from its first page fault (a forked process faults at
 *		once, copy-on-write), and pages it moves before that are not
 *		counted.  The query id is the one of its last fault.
 */
static __always_inline int
pages(unsigned int order, int idx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pgt_fault_state *fs = bpf_task_storage_get(&fstate, task, 0, 0);
	struct pgt_kproc_val *v;

	if (!has_fault_tps)
		fs = state_without_faults(task, bpf_get_current_pid_tgid() >> 32, fs);
	if (!fs || !fs->pm)
		return 0;
	v = pgt_kproc_get(&kproc, bpf_get_current_pid_tgid() >> 32, fs->qid, fs->pm);
	if (v)
		__sync_fetch_and_add(&v->v[idx], 1ULL << (order & 31));
	return 0;
}

SEC("tp_btf/mm_page_alloc")
int BPF_PROG(pgt_kmem_page_alloc, struct page *page, unsigned int order,
			 gfp_t gfp, int migratetype)
{
	/* the tracepoint reports failures too (a huge page tried first, say) */
	if (!page)
		return 0;
	return pages(order, PGT_KMEM_PAGES_ALLOC);
}

SEC("tp_btf/mm_page_free")
int BPF_PROG(pgt_kmem_page_free, struct page *page, unsigned int order)
{
	return pages(order, PGT_KMEM_PAGES_FREE);
}

SEC("tp_btf/oom_score_adj_update")
int BPF_PROG(pgt_kmem_oom_adj, struct task_struct *task)
{
	__u32		tgid = task->tgid;
	__u32		pm = pgt_tracked_pm(tgid);
	struct pgt_kproc_val *v;
	struct pgt_kev_proc_rec *r;
	__u64		qid;
	short		adj;

	if (!pm)
		return 0;
	adj = BPF_CORE_READ(task, signal, oom_score_adj);
	/* a process setting its own (a backend at fork): its id now */
	qid = tgid == bpf_get_current_pid_tgid() >> 32 ? pgt_current_qid(tgid)
		: pgt_cached_qid(tgid);
	v = pgt_kproc_get(&kproc, tgid, qid, pm);
	if (v)
	{
		__sync_fetch_and_add(&v->v[PGT_KMEM_OOM_UPDATES], 1);
		v->v[PGT_KMEM_OOM_SCORE_ADJ] = (__u64) (__s64) adj;
	}
	r = pgt_event_reserve(sizeof(*r), PGT_SET_MEMORY, PGT_KEV_OOM_ADJ, tgid,
						  BPF_CORE_READ(task, pid), qid);
	if (r)
	{
		r->c.a = (__u64) (__s64) adj;
		r->c.b = 0;
		r->c.cpu = bpf_get_smp_processor_id();
		r->c.kind = 0;
		bpf_ringbuf_submit(r, 0);
	}
	return 0;
}
