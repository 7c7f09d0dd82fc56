// SPDX-License-Identifier: GPL-2.0
/*
 * bpf/kernel_sched.bpf.c
 *	  Probe set "sched": per tracked process (and query id) off-CPU time,
 *	  run-queue latency (woken or preempted -> back on a CPU, with a log2
 *	  histogram per pid), voluntary and involuntary context switches,
 *	  wakeups and migrations, all from one program on sched_switch.
 *
 * The scheduler keeps most of it already, so nothing runs at a wakeup or a
 * migration: sched_info.last_queued is when a task became runnable (woken,
 * or preempted while still runnable; zeroed when it gets a CPU, just after
 * this tracepoint), se.nr_migrations counts its moves, and the run queue's
 * clock (rq->clock, updated by __schedule before the tracepoint) is the
 * clock last_queued was taken on.  So at a switch-in the run-queue wait is
 * rq->clock - last_queued (what the kernel adds to the task's run_delay a
 * moment later), plus what run_delay grew by since the switch-out (a task
 * moved off a queue it waited in: the kernel added that stint when it left
 * it), the period's whole wait, as /proc/<pid>/schedstat counts it; and
 * the off-CPU time is rq->clock - the rq clock at the task's switch-out.  A wakeup is the end of a voluntary switch (a sleep).
 * Where the kernel keeps no sched_info or the task has no cfs_rq (the
 * helper checks before load: kclock = 0), the off-CPU time is taken with
 * bpf_ktime_get_ns and the run-queue wait is not measured (the set says so).
 *
 * A switch-out reads the query id in the process's own context (prev is
 * current) and keeps it in the task's storage, with the switch's kind and
 * time; the counters of that off-CPU period are added, once it has ended,
 * to the task's own row for that query id and its own run-queue histogram
 * (task accumulators, kernel_tacc.bpf.h: no shared-map lookup until the
 * task has more query ids than its table holds, or exits).  A new process
 * is counted from its first switch-out on.
 *
 * Where a period is closed.  With kclock, at the task's next switch-out
 * (or its exit), from the scheduler's own record: it got the CPU at
 * sched_info.last_arrival, and sched_info.run_delay grew since the
 * switch-out by its run-queue wait (close_from_record).  Those are the
 * values the switch-in itself would give (the same rq clock reading, the
 * same stint), so the program needs no switch-ins, and the dispatcher
 * does not run the chain for a switch to a tracked task from one that is
 * not (helper/hook_chain.c: the member joins "out only"): half the
 * switches a backend takes part in, and no task-storage probe of next in
 * the others.  A period is counted one run after it ends: when the task
 * leaves the CPU again.
 *
 * The switch-in closes the period instead (switch_in) without kclock (no
 * record), with a stream (its event is sent when the task comes back), or
 * with --miss-events (which tests the repair below).  A task found on a
 * CPU with its switch-out still open was then switched in unseen:
 * tracepoints can go unreported (on some hosts the kernel reports no event
 * at all while certain tasks are current: seen here, a sandbox's own agent
 * threads, hidden from /proc), and the record closes that period too;
 * without kclock only the switch itself is counted.
 *
 * Cost for tasks that are not tracked: in the hook chain, nothing for a
 * switch between two of them (the dispatcher's bitmap test), nor, out
 * only, for one to a tracked task; otherwise, or attached on its own, a
 * task-storage probe for prev (and next, when switch-ins are used: a task
 * without storage was never tracked) and, for prev, one hash lookup in
 * `tracked` (a tracked task gets its storage there, at its first
 * switch-out).  No ring-buffer work unless a stream was asked for.
 *
 * Where a task's storage is made.  From 6.4 on the kernel allocates task
 * storage from BPF's own allocator, safe in any context, so the first
 * switch-out of a tracked task makes it.  Before, it took GFP_ATOMIC
 * memory, which can wake kswapd, and a wakeup takes a run queue's lock:
 * under the scheduler's lock (sched_switch) that could deadlock the CPU.
 * There (create_in_switch 0, set by the helper) the storage is made in
 * process context only: at fork, for a served postmaster's child
 * (pgt_ksched_fork), and by the task iterator the helper runs at every
 * copy of the maps, for the processes it found in /proc (pgt_ksched_dump).
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

#include "kernel_tacc.bpf.h"

/*
 * Set by the helper before load: 1 when the kernel keeps sched_info and
 * tasks have se.cfs_rq (times are then the run queue's clock, and
 * run-queue waits are measured), 0 otherwise.
 */
const volatile __u8 kclock = 1;

/* --miss-events N (testing): ignore every Nth switch-in seen, 0 = none */
const volatile __u32 miss_in_every = 0;

/*
 * Set by the helper before load (helper/kernel_sched.c, which tells the
 * hook chain the same): 1 when periods are closed at switch-ins (see the
 * file header), 0 when at the next switch-out.
 */
const volatile __u8 use_switch_ins = 1;

/*
 * Set by the helper before load: 1 when a task's storage may be made in
 * sched_switch (the kernel's allocator is safe there: 6.4+), 0 when only
 * at fork and in the task iterator (see the file header).
 */
const volatile __u8 create_in_switch = 1;

struct pgt_sched_state
{
	__u64		out_clock;		/* clock at the last switch-out, 0 before it */
	__u64		migrations;		/* se.nr_migrations at the last switch-in */
	__u64		qid;			/* query id at the last switch-out */
	__u64		out_run_delay;	/* sched_info.run_delay then (kclock) */
	struct pgt_qid_cache qc;	/* see pgt_task_qid */
	__u32		pm;				/* postmaster: the task is tracked */
	__u8		out_kind;		/* PGT_KSCHED_(IN)VOLUNTARY */
	__u8		exited;			/* the task folded its rows at exit */
	__u16		out_gen;		/* kresume's gen at the last switch-out */
	__u32		ins;			/* switch-ins seen (for miss_in_every) */
	/* the task's accumulators (kernel_tacc.bpf.h) */
	struct pgt_tacc_proc tproc;
	struct pgt_tacc_hist thist;
};

struct
{
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pgt_sched_state);
} sstate SEC(".maps");

/*
 * new_state
 *		Make the state of p, a task of a process of postmaster pm.
 */
static __always_inline struct pgt_sched_state *
new_state(struct task_struct *p, __u32 pm)
{
	struct pgt_sched_state *s;

	s = bpf_task_storage_get(&sstate, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (s)
	{
		s->pm = pm;
		s->migrations = p->se.nr_migrations;
	}
	return s;
}

/*
 * out_state
 *		The state of p, switched out, created when p is tracked and has none
 *		yet (where create_in_switch allows); NULL for tasks that are not
 *		tracked.  A tracked task has state from its first switch-out on, so
 *		a switch-in needs one task-storage probe and no hash lookup; only a
 *		task without state is looked up in `tracked`.
 */
static __always_inline struct pgt_sched_state *
out_state(struct task_struct *p)
{
	struct pgt_sched_state *s = bpf_task_storage_get(&sstate, p, 0, 0);
	__u32		pm;

	if (s || !create_in_switch)
		return s;
	pm = pgt_tracked_pm(p->tgid);
	if (!pm)
		return 0;
	return new_state(p, pm);
}

/*
 * sched_now
 *		The clock of this switch: the run queue's (prev runs here, so its
 *		cfs_rq is this CPU's), or with kclock 0 the monotonic clock.
 */
static __always_inline __u64
sched_now(struct task_struct *prev)
{
	if (kclock)
		return prev->se.cfs_rq->rq->clock;
	return bpf_ktime_get_ns();
}

/*
 * delay_since_out
 *		What t's sched_info.run_delay grew by since its switch-out (s): the
 *		run-queue stints of this period the kernel has added already (with
 *		kclock only).
 */
static __always_inline __u64
delay_since_out(struct task_struct *t, const struct pgt_sched_state *s)
{
	__u64		delay = t->sched_info.run_delay;

	return delay > s->out_run_delay ? delay - s->out_run_delay : 0;
}

/*
 * runq_wait
 *		How long next waited in run queues since its switch-out (s), for
 *		this switch-in: the stint it ends (not in run_delay yet) and any
 *		earlier one (in it already).  0 when kclock is 0.
 */
static __always_inline __u64
runq_wait(struct task_struct *next, const struct pgt_sched_state *s, __u64 now)
{
	__u64		queued;

	if (!kclock)
		return 0;
	queued = next->sched_info.last_queued;
	return (queued && now > queued ? now - queued : 0) + delay_since_out(next, s);
}

/*
 * account_period
 *		One off-CPU period of task (switched out at s->out_clock, for s->qid)
 *		has ended, off ns long with runq ns of it in a run queue: into its
 *		(pid, query) counters and its run-queue histogram (the task's
 *		accumulators: only this CPU touches the task now), the event when
 *		streaming.  The period is closed.
 */
static __always_inline void
account_period(struct task_struct *task, struct pgt_sched_state *s, __u64 off, __u64 runq)
{
	struct pgt_kproc_val *v;
	struct pgt_kev_proc_rec *r;
	__u64		moved = task->se.nr_migrations - s->migrations;
	__u32		tgid = task->tgid;
	int			shared;

	v = pgt_tacc_kproc(s->exited ? 0 : &s->tproc, &kproc, tgid, s->qid, s->pm,
					   PGT_KSCHED_RUNQ_MAX_NS, &shared);
	if (v)
	{
		PGT_ADD(shared, &v->v[PGT_KSCHED_OFFCPU_NS], off);
		PGT_ADD(shared, &v->v[s->out_kind & 7], 1);
		if (s->out_kind == PGT_KSCHED_VOLUNTARY)
			PGT_ADD(shared, &v->v[PGT_KSCHED_WAKEUPS], 1);
		if (moved)
			PGT_ADD(shared, &v->v[PGT_KSCHED_MIGRATIONS], moved);
		if (runq)
		{
			PGT_ADD(shared, &v->v[PGT_KSCHED_RUNQ_NS], runq);
			PGT_ADD(shared, &v->v[PGT_KSCHED_RUNQ_COUNT], 1);
			PGT_MAX(&v->v[PGT_KSCHED_RUNQ_MAX_NS], runq);
		}
	}
	if (runq)
		pgt_tacc_khist(s->exited ? 0 : &s->thist, &khist, PGT_KHIST_RUNQ, tgid, 0, 0,
					   s->pm, runq);
	r = pgt_event_reserve(sizeof(*r), PGT_SET_SCHED, PGT_KEV_ONCPU, tgid, task->pid, s->qid);
	if (r)
	{
		r->c.a = off;
		r->c.b = runq;
		r->c.cpu = bpf_get_smp_processor_id();
		r->c.kind = 0;
		bpf_ringbuf_submit(r, 0);
	}
	s->out_clock = 0;
	s->migrations += moved;
}

/*
 * period_is_stale
 *		Was s's open period begun before the set was last held (that span
 *		went unseen)?  Then it is dropped, not counted.
 */
static __always_inline int
period_is_stale(struct task_struct *task, struct pgt_sched_state *s, __u16 gen)
{
	if (s->out_gen == gen)
		return 0;
	s->out_clock = 0;
	s->migrations = task->se.nr_migrations;
	return 1;
}

/*
 * switch_in
 *		next is back on a CPU: the period since its switch-out ends now.
 */
static __always_inline void
switch_in(struct task_struct *next, __u64 now, __u16 gen)
{
	struct pgt_sched_state *s = bpf_task_storage_get(&sstate, next, 0, 0);

	if (!s || !s->out_clock)
		return;					/* never tracked, or not switched out yet */
	if (miss_in_every && ++s->ins % miss_in_every == 0)
		return;					/* as if the kernel had not reported it */
	if (period_is_stale(next, s, gen))
		return;
	account_period(next, s, now > s->out_clock ? now - s->out_clock : 0,
				   runq_wait(next, s, now));
}

/*
 * close_from_record
 *		task is on a CPU with its switch-out still open: at its next
 *		switch-out or its exit (see the file header: with kclock and no
 *		stream, or when its switch-in went unseen).  The scheduler's record
 *		closes the period: it got this CPU at sched_info.last_arrival, after
 *		waiting the growth of sched_info.run_delay since the switch-out.
 */
static __always_inline void
close_from_record(struct task_struct *task, struct pgt_sched_state *s, __u16 gen)
{
	__u64		arrived;

	if (period_is_stale(task, s, gen))
		return;
	if (!kclock)
	{
		account_period(task, s, 0, 0);
		return;
	}
	arrived = task->sched_info.last_arrival;
	account_period(task, s, arrived > s->out_clock ? arrived - s->out_clock : 0,
				   delay_since_out(task, s));
}

/*
 * PostgreSQL's wait_event_info while a backend is between statements: its
 * main loop waits for the client (Client class, ClientRead first in it), a
 * background process's main loop in the Activity class.
 */
#define PGT_WAIT_CLASS_MASK		0xFF000000U
#define PGT_WAIT_CLASS_ACTIVITY	0x05000000U
#define PGT_WAIT_CLIENT_READ	0x06000000U

/*
 * between_statements
 *		Is the current task, going to sleep, a backend between statements
 *		(idle, or idle in a transaction)?  PostgreSQL keeps st_query_id at
 *		the last statement's id until the next one starts, so the sleep
 *		would count against that statement: under pgbench every client
 *		round trip against a transaction's last statement, an idle hour
 *		against a session's last SELECT.  One read of PGPROC's
 *		wait_event_info, on voluntary switch-outs only (and a look at the
 *		process's slot, at most every 100 ms, until the helper has mapped
 *		it).  A COPY FROM STDIN
 *		waiting for its data waits in ClientRead too: that time is the
 *		client's, and counts as between statements as well.
 */
static __always_inline bool
between_statements(struct pgt_qid_cache *c, __u32 tgid, __u64 now)
{
	struct pgt_qid_slot *slot;
	__u32		wei = 0;

	if (!c->addr)
		return false;
	if (!c->wait && now - c->wait_looked >= 100000000ULL)
	{
		/*
		 * a slot BPF made has none until the helper maps it (once a
		 * second): look again, at most every 100 ms
		 */
		c->wait_looked = now;
		slot = bpf_map_lookup_elem(&pgt_qid, &tgid);
		if (slot && !(slot->flags & PGT_QID_INDIRECT) && slot->queryid_addr == c->addr)
			c->wait = slot->wait_addr;
	}
	if (!c->wait || bpf_probe_read_user(&wei, sizeof(wei), (void *) c->wait) != 0)
		return false;
	return wei == PGT_WAIT_CLIENT_READ ||
		(wei & PGT_WAIT_CLASS_MASK) == PGT_WAIT_CLASS_ACTIVITY;
}

/*
 * ksched_switch
 *		prev leaves the CPU (tracked: note why, when and for which query),
 *		next comes back (switch_in).
 */
static __always_inline void
ksched_switch(bool preempt, struct task_struct *prev, struct task_struct *next,
			  unsigned int prev_state)
{
	__u64		now = sched_now(prev);
	struct pgt_sched_state *s = out_state(prev);
	__u16		gen = (__u16) pgt_kresume_gen();

	if (s)
	{
		/* still runnable (preempted, even mid-way to sleep): involuntary */
		int			runnable = preempt || prev_state == 0;

		if (s->out_clock)
			close_from_record(prev, s, gen);
		/* prev is current: its own query id (not published: see pgt_task_qid) */
		s->qid = pgt_task_qid(prev, prev->tgid, &s->qc, 0);
		if (!runnable && s->qid && between_statements(&s->qc, prev->tgid, now))
			s->qid = 0;			/* its sleep is no statement's */
		s->out_clock = now;
		if (kclock)
			s->out_run_delay = prev->sched_info.run_delay;
		s->out_kind = runnable ? PGT_KSCHED_INVOLUNTARY : PGT_KSCHED_VOLUNTARY;
		s->out_gen = gen;
	}
	if (use_switch_ins)
		switch_in(next, now, gen);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(pgt_ksched_switch, bool preempt, struct task_struct *prev,
			 struct task_struct *next, unsigned int prev_state)
{
	ksched_switch(preempt, prev, next, prev_state);
	pgt_chain_next(ctx, &pgt_chain_switch, PGT_CHAIN_SLOT_SCHED);
	return 0;
}

/*
 * pgt_ksched_exit
 *		A task exits: its accumulated rows into the maps (its storage dies
 *		with it); its last switches after this go to the maps directly.
 *		Its open period (it runs: the switch-in was not used, or went
 *		unseen) is closed first.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(pgt_ksched_exit, struct task_struct *p)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct pgt_sched_state *s = bpf_task_storage_get(&sstate, t, 0, 0);

	if (!s || s->exited)
		return 0;
	if (s->out_clock)			/* it runs: its last period is still open */
		close_from_record(t, s, (__u16) pgt_kresume_gen());
	pgt_tacc_fold_all(0, 0, &s->tproc, &kproc, PGT_KSCHED_RUNQ_MAX_NS, &s->thist, &khist);
	s->exited = 1;
	return 0;
}

/*
 * pgt_ksched_fork
 *		Without create_in_switch (the helper loads it only then): a served
 *		postmaster's new child gets its state here, in process context, so
 *		it is counted from its first switch-out as elsewhere.
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(pgt_ksched_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32		ptgid = parent->tgid;
	__u32		pm;

	if (create_in_switch || child->pid != child->tgid)
		return 0;
	/*
	 * The pid filter's own fork program (attached first, so run first) has
	 * put the child into `tracked`; failing that, a tracked postmaster is
	 * its own pm
	 */
	pm = pgt_tracked_pm(child->tgid);
	if (!pm && pgt_tracked_pm(ptgid) == ptgid)
		pm = ptgid;
	if (pm)
		new_state(child, pm);
	return 0;
}

/*
 * pgt_ksched_dump
 *		The helper's read of every task's accumulated rows (a task
 *		iterator: helper/task_accum.c), and its drop of a cluster's rows
 *		(pgt_tacc_forget).  Without create_in_switch it makes the state of
 *		tracked tasks that have none (found in /proc, not forked since).
 */
SEC("iter/task")
int pgt_ksched_dump(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct pgt_sched_state *s;
	__u32		pm;

	if (!task)
		return 0;
	s = bpf_task_storage_get(&sstate, task, 0, 0);
	if (!s && !create_in_switch && (pm = pgt_tracked_pm(task->tgid)) != 0)
		s = new_state(task, pm);
	if (!s)
		return 0;
	pgt_tacc_dump(ctx->meta->seq, 0, &s->tproc, &s->thist);
	pgt_tacc_forget(0, &s->tproc, &s->thist);
	return 0;
}
