// SPDX-License-Identifier: GPL-2.0
/*
 * bpf/kernel_sched.bpf.c
 *	  Probe set "sched": per tracked process (and query id) off-CPU time,
 *	  run-queue latency (woken or preempted -> back on a CPU, with a log2
 *	  histogram per pid), voluntary and involuntary context switches,
 *	  wakeups and migrations.
 *
 * A switch-out reads the query id in the process's own context (prev is
 * current) and keeps it in the task's storage; the switch-in, wakeup and
 * migration run in other tasks' contexts and use that id.  Per-task state
 * lives in task storage, and the counters of one off-CPU period (the
 * switch-out's kind, wakeups, migrations, off-CPU and run-queue time) are
 * kept there and added to `kproc` in one lookup when the task is back on a
 * CPU: a switch is counted when it ends.
 *
 * Cost for tasks that are not tracked: in the hook chain, nothing for a
 * switch between two of them (the dispatcher's bitmap test); otherwise,
 * or attached on its own, a task-storage probe each for prev and next (a
 * task without storage was never tracked) and, for prev, one hash lookup
 * in `tracked` (a tracked task gets its storage there, at its first
 * switch-out); a wakeup or a migration one task-storage probe.  No
 * ring-buffer work unless a stream was asked for.
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
	__u64		qid;			/* query id at the last switch-out */
	struct pgt_qid_cache qc;	/* see pgt_task_qid */
	__u32		pm;				/* postmaster: the task is tracked */
	__u16		wakeups;		/* since the last switch-in */
	__u8		migrations;
	__u8		out_kind;		/* 0, or PGT_KSCHED_(IN)VOLUNTARY + 1 */
};

struct
{
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pgt_sched_state);
} sstate SEC(".maps");

/*
 * state_of
 *		p's state, NULL for tasks that are not tracked.  A tracked task has
 *		state from its first switch-out on, and a task is switched out
 *		before anything can wake it or move it, so one task-storage probe
 *		(no hash lookup) settles wakeups and migrations of every task; only
 *		a task without state (create: at its first wakeup or switch-out) is
 *		looked up in `tracked`.
 */
static __always_inline struct pgt_sched_state *
state_of(struct task_struct *p, int create)
{
	struct pgt_sched_state *s = bpf_task_storage_get(&sstate, p, 0, 0);
	__u32		pm;

	if (s || !create)
		return s;
	pm = pgt_tracked_pm(p->tgid);
	if (!pm)
		return 0;
	s = bpf_task_storage_get(&sstate, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (s)
	{
		s->pm = pm;
		s->qid = pgt_cached_qid(p->tgid);
	}
	return s;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(pgt_ksched_wakeup, struct task_struct *p)
{
	struct pgt_sched_state *s = state_of(p, 0);

	if (s)
	{
		s->enq_ns = bpf_ktime_get_ns();
		s->wakeups++;
	}
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(pgt_ksched_wakeup_new, struct task_struct *p)
{
	struct pgt_sched_state *s = state_of(p, 1);

	if (s)
	{
		s->enq_ns = bpf_ktime_get_ns();
		s->wakeups++;
	}
	return 0;
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(pgt_ksched_migrate, struct task_struct *p, int dest_cpu)
{
	struct pgt_sched_state *s = state_of(p, 0);

	if (s)
		s->migrations++;
	return 0;
}

/*
 * switch_in_state
 *		next is back on a CPU: its off-CPU period into `kproc` (one lookup),
 *		the run-queue wait into the histogram, the event when streaming.
 */
static __always_inline void
switch_in_state(struct task_struct *next, struct pgt_sched_state *s, __u64 now)
{
	struct pgt_kproc_val *v;
	struct pgt_kev_proc_rec *r;
	__u64		off = 0;
	__u64		runq = 0;
	__u32		tgid;

	if (s->off_ns)
		off = now - s->off_ns;
	if (s->enq_ns)
		runq = now - s->enq_ns;
	if (!off && !runq && !s->out_kind && !s->wakeups && !s->migrations)
		return;
	tgid = next->tgid;
	v = pgt_kproc_get(&kproc, tgid, s->qid, s->pm);
	if (v)
	{
		if (off)
			__sync_fetch_and_add(&v->v[PGT_KSCHED_OFFCPU_NS], off);
		if (s->out_kind)
			__sync_fetch_and_add(&v->v[(s->out_kind - 1) & 7], 1);
		if (s->wakeups)
			__sync_fetch_and_add(&v->v[PGT_KSCHED_WAKEUPS], s->wakeups);
		if (s->migrations)
			__sync_fetch_and_add(&v->v[PGT_KSCHED_MIGRATIONS], s->migrations);
		if (runq)
		{
			__sync_fetch_and_add(&v->v[PGT_KSCHED_RUNQ_NS], runq);
			__sync_fetch_and_add(&v->v[PGT_KSCHED_RUNQ_COUNT], 1);
			if (runq > v->v[PGT_KSCHED_RUNQ_MAX_NS])
				v->v[PGT_KSCHED_RUNQ_MAX_NS] = runq;
		}
	}
	if (runq)
		pgt_khist_add(&khist, PGT_KHIST_RUNQ, tgid, 0, 0, s->pm, runq);
	r = pgt_event_reserve(sizeof(*r), PGT_SET_SCHED, PGT_KEV_ONCPU, tgid, next->pid, s->qid);
	if (r)
	{
		r->c.a = off;
		r->c.b = runq;
		r->c.cpu = bpf_get_smp_processor_id();
		r->c.kind = 0;
		bpf_ringbuf_submit(r, 0);
	}
	s->off_ns = 0;
	s->enq_ns = 0;
	s->out_kind = 0;
	s->wakeups = 0;
	s->migrations = 0;
}

/*
 * switch_in
 *		next is back on a CPU: switch_in_state when it is tracked (the clock
 *		is read only then, unless prev already read it: now != 0).
 */
static __always_inline void
switch_in(struct task_struct *next, __u64 now)
{
	struct pgt_sched_state *s = bpf_task_storage_get(&sstate, next, 0, 0);

	if (!s)
		return;					/* never tracked (or not switched out yet) */
	if (!now)
		now = bpf_ktime_get_ns();
	switch_in_state(next, s, now);
}

/*
 * ksched_switch
 *		prev leaves the CPU (tracked: note why and since when), next comes
 *		back (switch_in).
 */
static __always_inline void
ksched_switch(bool preempt, struct task_struct *prev, struct task_struct *next,
			  unsigned int prev_state)
{
	__u64		now = 0;
	struct pgt_sched_state *s = state_of(prev, 1);

	if (s)
	{
		int			runnable = preempt || prev_state == 0;

		now = bpf_ktime_get_ns();
		/* prev is current: its own query id */
		s->qid = pgt_task_qid(prev->tgid, &s->qc);
		s->off_ns = now;
		/* still runnable (preempted, even mid-way to sleep): it waits in
		 * the run queue from now */
		s->enq_ns = runnable ? now : 0;
		s->out_kind = 1 + (runnable ? PGT_KSCHED_INVOLUNTARY : PGT_KSCHED_VOLUNTARY);
	}
	switch_in(next, now);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(pgt_ksched_switch, bool preempt, struct task_struct *prev,
			 struct task_struct *next, unsigned int prev_state)
{
	ksched_switch(preempt, prev, next, prev_state);
	pgt_chain_next(ctx, &pgt_chain_switch, PGT_CHAIN_SLOT_SCHED);
	return 0;
}
