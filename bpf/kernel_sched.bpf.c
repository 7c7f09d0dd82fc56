// SPDX-License-Identifier: GPL-2.0
/*
 * bpf/kernel_sched.bpf.c
 *	  Probe set "sched": per tracked process (and query id) off-CPU time,
 *	  run-queue latency (woken or preempted -> back on a CPU, with a log2
 *	  histogram per pid), voluntary and involuntary context switches,
 *	  wakeups and migrations.
 *
 * A switch-out reads the query id in the process's own context (prev is
 * current) and caches it; the switch-in, wakeup and migration run in other
 * tasks' contexts and use that cached id.  Per-task state lives in task
 * storage.  Every context switch of the host costs two hash lookups.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "pgt_common.bpf.h"
#include "kernel_common.bpf.h"

char LICENSE[] SEC("license") = "GPL";

PGT_DECLARE_KPROC;
PGT_DECLARE_KHIST;

struct pgt_sched_state
{
	__u64		off_ns;			/* switched out at */
	__u64		enq_ns;			/* runnable since (wakeup / preemption) */
};

struct
{
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pgt_sched_state);
} sstate SEC(".maps");

/*
 * runnable
 *		p became runnable now (woken): remember when, count the wakeup.
 */
static __always_inline void
runnable(struct task_struct *p, int wakeup)
{
	__u32		tgid = BPF_CORE_READ(p, tgid);
	__u32		pm = pgt_tracked_pm(tgid);
	struct pgt_sched_state *s;
	struct pgt_kproc_val *v;

	if (!pm)
		return;
	s = bpf_task_storage_get(&sstate, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (s)
		s->enq_ns = bpf_ktime_get_ns();
	if (wakeup)
	{
		v = pgt_kproc_get(&kproc, tgid, pgt_cached_qid(tgid), pm);
		if (v)
			__sync_fetch_and_add(&v->v[PGT_KSCHED_WAKEUPS], 1);
	}
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(pgt_ksched_wakeup, struct task_struct *p)
{
	runnable(p, 1);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(pgt_ksched_wakeup_new, struct task_struct *p)
{
	runnable(p, 1);
	return 0;
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(pgt_ksched_migrate, struct task_struct *p, int dest_cpu)
{
	__u32		tgid = BPF_CORE_READ(p, tgid);
	__u32		pm = pgt_tracked_pm(tgid);
	struct pgt_kproc_val *v;

	if (!pm)
		return 0;
	v = pgt_kproc_get(&kproc, tgid, pgt_cached_qid(tgid), pm);
	if (v)
		__sync_fetch_and_add(&v->v[PGT_KSCHED_MIGRATIONS], 1);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(pgt_ksched_switch, bool preempt, struct task_struct *prev,
			 struct task_struct *next, unsigned int prev_state)
{
	__u64		now = bpf_ktime_get_ns();
	__u32		ptgid = BPF_CORE_READ(prev, tgid);
	__u32		ntgid = BPF_CORE_READ(next, tgid);
	__u32		pm;
	struct pgt_sched_state *s;
	struct pgt_kproc_val *v;

	pm = pgt_tracked_pm(ptgid);
	if (pm)
	{
		__u64		qid = pgt_current_qid(ptgid);

		s = bpf_task_storage_get(&sstate, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (s)
		{
			s->off_ns = now;
			/* still runnable (preempted, even mid-way to sleep): it waits
			 * in the run queue from now */
			s->enq_ns = (preempt || prev_state == 0) ? now : 0;
		}
		v = pgt_kproc_get(&kproc, ptgid, qid, pm);
		if (v)
			__sync_fetch_and_add(&v->v[(preempt || prev_state == 0) ?
									   PGT_KSCHED_INVOLUNTARY : PGT_KSCHED_VOLUNTARY], 1);
	}

	pm = pgt_tracked_pm(ntgid);
	if (pm)
	{
		__u64		qid = pgt_cached_qid(ntgid);
		__u64		off = 0;
		__u64		runq = 0;
		struct pgt_kev_proc_rec *r;

		s = bpf_task_storage_get(&sstate, next, 0, 0);
		if (!s)
			return 0;
		if (s->off_ns)
			off = now - s->off_ns;
		if (s->enq_ns)
			runq = now - s->enq_ns;
		s->off_ns = 0;
		s->enq_ns = 0;
		if (!off && !runq)
			return 0;
		v = pgt_kproc_get(&kproc, ntgid, qid, pm);
		if (v)
		{
			__sync_fetch_and_add(&v->v[PGT_KSCHED_OFFCPU_NS], off);
			if (runq)
			{
				__sync_fetch_and_add(&v->v[PGT_KSCHED_RUNQ_NS], runq);
				__sync_fetch_and_add(&v->v[PGT_KSCHED_RUNQ_COUNT], 1);
				if (runq > v->v[PGT_KSCHED_RUNQ_MAX_NS])
					v->v[PGT_KSCHED_RUNQ_MAX_NS] = runq;
			}
		}
		if (runq)
			pgt_khist_add(&khist, PGT_KHIST_RUNQ, ntgid, 0, 0, pm, runq);
		r = pgt_event_reserve(sizeof(*r), PGT_SET_SCHED, PGT_KEV_ONCPU, ntgid,
							  BPF_CORE_READ(next, pid), qid);
		if (r)
		{
			r->c.a = off;
			r->c.b = runq;
			r->c.cpu = bpf_get_smp_processor_id();
			r->c.kind = 0;
			bpf_ringbuf_submit(r, 0);
		}
	}
	return 0;
}
