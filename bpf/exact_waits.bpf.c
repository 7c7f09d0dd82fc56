// SPDX-License-Identifier: GPL-2.0
/*
 * bpf/exact_waits.bpf.c
 *	  Probe set "exact": exact timing of every blocking PostgreSQL wait.
 *	  Every wait that blocks goes through a system call (epoll_wait for
 *	  latches, futex/semop for semaphores, pread/pwrite/fsync for I/O,
 *	  recv/send for the client).  At sys_enter of a tracked process that has
 *	  a wait event set (PGPROC.wait_event_info, address in its `pgt_qid`
 *	  slot) the event, the query id and the time go to task storage; at
 *	  sys_exit the duration is added to the (pid, query id, event)
 *	  aggregate and the (postmaster, event) log2 histogram.  No ring-buffer
 *	  record per system call.
 *
 * Cost when a system call has no wait event set: nothing but the number's
 * test, at entry and exit, for the calls PostgreSQL never makes under a
 * wait (wait_free_call); else the `exact_on` check, one task-storage
 * lookup (the cached per-task state, struct pgt_exact_start) and, for a
 * tracked process, one user read at entry; one task-storage lookup at
 * exit.  In the hook chains an untracked task never gets here (the
 * dispatchers' bitmap test); attached on their own, the programs let it
 * look up `pgt_qid` once per exact_tick.
 *
 * Time a tracked process spends preempted (runnable, off CPU) with a wait
 * event set but outside a system call, typically right after the call
 * returned and before pgstat_report_wait_end(), belongs to the event too:
 * the sched_switch program adds it (to total_ns, not to the count).
 * That is where a process is preempted on a busy host, at the return to
 * user space; without it the system-call source undercounts short, frequent
 * waits (page-cache reads, WAL writes) against the event's real span.  Most
 * of a busy host's switches are other preemptions (a backend preempted at
 * the return of a send that woke its client), so the program looks only at
 * a process that just ended a timed wait on that CPU (exact_last_waiter) and
 * at an incoming one only while some interval is open (exact_off_open): the
 * rest pay the hook and two loads.  An interval whose switch-in the kernel
 * did not report (the task is found running, or has had a CPU since:
 * sched_info.pcount moved) is dropped, not stretched (drop_unseen_interval).
 *
 * In tiered mode the helper attaches the programs only during windows
 * (nothing at all is paid outside them); `exact_on` covers the moments
 * around attaching and detaching.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "pgt_common.bpf.h"
#include "exact_waits.h"

char LICENSE[] SEC("license") = "GPL";

/* Written by the helper: 1 while exact timing is on. */
__u32		exact_on = 0;

/*
 * Written by the helper: incremented each time timing is switched on.  In
 * tiered mode the programs are detached between windows, so a start left
 * in task storage by a call that never reached sys_exit while attached is
 * stale: starts of an older generation are dropped.
 */
__u32		exact_gen = 0;

/* Written by the helper: bumped every publication (see struct pgt_exact_start). */
__u32		exact_tick = 0;

/*
 * Waits, and parts of waits (preempted time), that found the aggregates
 * full and were not counted; the helper reports them.
 */
__u64		exact_lost = 0;

/* Waits counted in the aggregates that found the histograms full. */
__u64		exact_hist_lost = 0;

/*
 * Tasks whose task storage holds a preempted interval (off_ts) not yet
 * closed: raised when one is opened, lowered when one is closed, so it is
 * never below the true number.  At 0 the sched_switch program skips the
 * incoming task's storage lookup, which most switches would otherwise pay
 * for nothing.  An interval left open when the programs were detached (a
 * tiered window ended) keeps it raised until that task next comes back on
 * a CPU: that costs the lookup, never a lost interval.
 */
__u32		exact_off_open = 0;

/*
 * Per CPU: the thread that last finished a timed wait here (sys_exit).
 * A process preempted with a wait event set outside a system call is
 * almost always one preempted on the way back from the call that waited
 * (the wake-up that ended the wait, or the call's own, asked for a
 * reschedule), on this CPU, before anything else ran here.  The
 * sched_switch program reads the outgoing process's wait_event_info (a
 * user-memory read, some 100 ns) only when it is that thread; the other
 * preemptions (most of a busy host's, at the return of send or receive
 * calls no wait surrounds) cost one per-CPU load.
 */
struct
{
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} exact_last_waiter SEC(".maps");

struct
{
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PGT_EXACT_WAITS_MAX);
	__type(key, struct pgt_exact_key);
	__type(value, struct pgt_exact_val);
} exact_waits SEC(".maps");

struct
{
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PGT_EXACT_HISTS_MAX);
	__type(key, struct pgt_exact_hkey);
	__type(value, struct pgt_exact_hval);
} exact_hists SEC(".maps");

struct
{
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PGT_BPF_MAX_TRACKED);
	__type(key, __u32);
	__type(value, struct pgt_exact_watch);
} exact_watch SEC(".maps");

/*
 * Per-task state (struct pgt_exact_start: its fields and who writes them
 * are described in bpf/exact_waits.h), the only map a system call of an
 * untracked task touches once the task is known.  Caching the `pgt_qid`
 * slot's addresses here saves a tracked process two hash lookups per call.
 * The "not tracked" mark is re-checked every `exact_tick` (bumped each
 * publication, 250 ms), so a backend mapped meanwhile is picked up; until
 * then (its first second or so) it is served through its postmaster's
 * indirect slot, wait_ptr, read on each call.  The re-check leaves the
 * fields of a wait the helper seeded alone.
 */
struct
{
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pgt_exact_start);
} exact_starts SEC(".maps");

/*
 * hist_slot
 *		0 for under 1 us, i for [2^(i-1), 2^i) us, capped at the last slot.
 */
static __always_inline __u32
hist_slot(__u64 ns)
{
	__u64		us = ns / 1000;
	__u32		s;

	if (us == 0)
		return 0;
	s = pgt_log2(us) + 1;
	return s < PGT_EXACT_NSLOTS ? s : PGT_EXACT_NSLOTS - 1;
}

/*
 * wait_val
 *		The (pid, event, query id) aggregate, created when missing; NULL
 *		when the map is full.
 */
static __always_inline struct pgt_exact_val *
wait_val(__u32 tgid, __u32 pm, __u32 event, __u64 qid)
{
	struct pgt_exact_key k = {.pid = tgid, .event = event, .queryid = qid};
	struct pgt_exact_val *v = bpf_map_lookup_elem(&exact_waits, &k);

	if (!v)
	{
		struct pgt_exact_val init = {.pm = pm};

		bpf_map_update_elem(&exact_waits, &k, &init, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&exact_waits, &k);
	}
	return v;
}

/*
 * record_wait
 *		Add one finished wait to the aggregate and the histogram.
 */
static __always_inline void
record_wait(__u32 tgid, __u32 pm, __u32 event, __u64 qid, __u64 ns)
{
	struct pgt_exact_hkey hk = {.pm = pm, .event = event};
	struct pgt_exact_val *v = wait_val(tgid, pm, event, qid);
	struct pgt_exact_hval *h;
	__u32		slot;

	if (v)
	{
		__sync_fetch_and_add(&v->count, 1);
		__sync_fetch_and_add(&v->total_ns, ns);
		if (ns > v->max_ns)
			v->max_ns = ns;		/* backends are single-threaded: no race */
	}
	else
		__sync_fetch_and_add(&exact_lost, 1);
	h = bpf_map_lookup_elem(&exact_hists, &hk);
	if (!h)
	{
		struct pgt_exact_hval hinit = {};

		bpf_map_update_elem(&exact_hists, &hk, &hinit, BPF_NOEXIST);
		h = bpf_map_lookup_elem(&exact_hists, &hk);
	}
	slot = hist_slot(ns);
	if (!h)
		__sync_fetch_and_add(&exact_hist_lost, 1);
	else if (slot < PGT_EXACT_NSLOTS)
		__sync_fetch_and_add(&h->slots[slot], 1);
}

/*
 * add_time
 *		Add ns to an aggregate without counting a wait (preempted time).
 */
static __always_inline void
add_time(__u32 tgid, __u32 pm, __u32 event, __u64 qid, __u64 ns)
{
	struct pgt_exact_val *v = wait_val(tgid, pm, event, qid);

	if (v)
		__sync_fetch_and_add(&v->total_ns, ns);
	else
		__sync_fetch_and_add(&exact_lost, 1);
}

/*
 * slot_qid
 *		pgt_current_qid() for a slot already looked up (saves the second
 *		hash lookup on every wait).
 */
static __always_inline __u64
slot_qid(struct pgt_qid_slot *slot)
{
	__u64		qid;

	if (pgt_qid_off ||
		pgt_read_qid(slot->procpid_addr, slot->nspid, slot->queryid_addr, &qid) != 0)
		return 0;
	return qid;
}

/*
 * task_state
 *		The current task's cached state: created on its first system call
 *		from its `pgt_qid` slot, entries without one (untracked, or not
 *		mapped yet), and without the chain's tracked check every entry,
 *		re-checked once per exact_tick.  NULL when storage
 *		cannot be had.
 */
static __always_inline struct pgt_exact_start *
task_state(__u32 tgid)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pgt_exact_start *s = bpf_task_storage_get(&exact_starts, task, 0, 0);
	struct pgt_qid_slot *slot;

	/*
	 * Attached on their own (not chained behind the dispatcher's tracked
	 * check), the programs re-check a tracked entry once a tick too: a
	 * backend that exec()s another program leaves `tracked` but keeps its
	 * task storage, whose addresses mean nothing in the new image.
	 */
	if (s && (s->tick == exact_tick || (s->wait_addr && pgt_chained)))
		return s;
	if (!s)
	{
		s = bpf_task_storage_get(&exact_starts, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!s)
			return NULL;
	}
	s->tick = exact_tick;
	s->wait_ptr = 0;
	s->wait_addr = 0;			/* set again below while mapped and tracked */
	s->pm = pgt_tracked_pm(tgid);
	if (!s->pm)
		return s;
	slot = bpf_map_lookup_elem(&pgt_qid, &tgid);
	if (!slot || !slot->wait_addr || (slot->flags & PGT_QID_INDIRECT))
	{
		/* not mapped yet: through the postmaster's indirect slot */
		slot = bpf_map_lookup_elem(&pgt_qid, &s->pm);
		if (slot && (slot->flags & PGT_QID_INDIRECT) && s->pm != tgid)
			s->wait_ptr = slot->wait_addr;
		return s;
	}
	s->procpid_addr = slot->procpid_addr;
	s->queryid_addr = slot->queryid_addr;
	s->nspid = slot->nspid;
	s->qid_ok = 0;
	s->wait_addr = slot->wait_addr;	/* last: marks the entry tracked */
	return s;
}

/*
 * state_qid
 *		The query id the process runs, through the cached addresses.  The
 *		slot is checked (its st_procpid is this process's) until a check
 *		passes; a live backend keeps its slot, so from then on one read.
 *		Runs in the process's context.
 */
static __always_inline __u64
state_qid(struct pgt_exact_start *s, __u32 tgid)
{
	__u64		qid = 0;

	if (pgt_qid_off)
		return 0;
	if (!s->wait_addr)
		return pgt_current_qid(tgid);	/* not mapped yet: indirect */
	if (s->qid_ok)
	{
		if (bpf_probe_read_user(&qid, sizeof(qid), (void *) s->queryid_addr) != 0)
			return 0;
		return qid;
	}
	if (pgt_read_qid(s->procpid_addr, s->nspid, s->queryid_addr, &qid) == 0)
		s->qid_ok = 1;
	return qid;
}

/*
 * read_wait
 *		The process's wait_event_info (its own context): through the mapped
 *		address, or before the mapping through its my_wait_event_info
 *		pointer.  0 when none is set or it cannot be read.
 */
static __always_inline __u32
read_wait(struct pgt_exact_start *s)
{
	__u64		addr = s->wait_addr;
	__u32		wei = 0;

	if (!addr && (!s->wait_ptr ||
				  bpf_probe_read_user(&addr, sizeof(addr), (void *) s->wait_ptr) != 0))
		return 0;
	if (!addr || bpf_probe_read_user(&wei, sizeof(wei), (void *) addr) != 0)
		return 0;
	return wei;
}

/*
 * wait_free_call
 *		Is id a system call PostgreSQL never makes with a wait event set?
 *		Its sockets are non-blocking: a send or receive that would block
 *		returns EAGAIN and the wait (ClientRead, ClientWrite, ...) happens
 *		in epoll_wait; lseek (FileSize, relation sizes for the planner),
 *		kill (SetLatch) and getpid are never wrapped in a wait either.  These
 *		are most of a busy backend's calls; skipping them saves the
 *		user-memory read of wait_event_info.
 */
static __always_inline int
wait_free_call(long id)
{
#if defined(__TARGET_ARCH_x86)
	switch (id)
	{
		case 8:					/* lseek */
		case 39:				/* getpid */
		case 44: case 45:		/* sendto, recvfrom */
		case 46: case 47:		/* sendmsg, recvmsg */
		case 62:				/* kill */
			return 1;
	}
#elif defined(__TARGET_ARCH_arm64)
	switch (id)
	{
		case 62:				/* lseek */
		case 129:				/* kill */
		case 172:				/* getpid */
		case 206: case 207:		/* sendto, recvfrom */
		case 211: case 212:		/* sendmsg, recvmsg */
			return 1;
	}
#endif
	return 0;
}

/*
 * exact_enter
 *		A system call starts: when the process has a wait event set, note
 *		the event, its query id and the time.  Without one, a wait the helper
 *		seeded for this task (not inside a system call when seeded) is over.
 */
static __always_inline void
exact_enter(long id)
{
	__u32		tgid;
	struct pgt_exact_start *s;
	__u32		wei;

	if (!exact_on || wait_free_call(id))
		return;
	tgid = bpf_get_current_pid_tgid() >> 32;
	s = task_state(tgid);
	if (!s || (!s->wait_addr && !s->wait_ptr))
		return;
	wei = read_wait(s);
	s->gen = exact_gen;			/* seen in this window: a seed must not overwrite */
	if (wei == 0)
	{
		s->ts = 0;
		return;
	}
	s->event = wei;
	s->qid = state_qid(s, tgid);
	s->ts = bpf_ktime_get_ns();
}

SEC("tp_btf/sys_enter")
int BPF_PROG(pgt_exact_enter, struct pt_regs *regs, long id)
{
	exact_enter(id);
	pgt_chain_next(ctx, &pgt_chain_enter, PGT_CHAIN_SLOT_EXACT);
	return 0;
}

/*
 * last_waiter
 *		This CPU's slot of exact_last_waiter; NULL only if the map is broken.
 */
static __always_inline __u32 *
last_waiter(void)
{
	__u32		zero = 0;

	return bpf_map_lookup_elem(&exact_last_waiter, &zero);
}

/*
 * arrivals
 *		How many times t has been given a CPU (sched_info.pcount; 0 where
 *		the kernel keeps no sched_info).
 */
static __always_inline __u64
arrivals(struct task_struct *t)
{
	if (!bpf_core_field_exists(t->sched_info))
		return 0;
	return t->sched_info.pcount;
}

/*
 * drop_unseen_interval
 *		A task found running with a preempted interval open was switched in
 *		unseen (the kernel reports no tracepoint while certain tasks are
 *		current: the switch from one of them never reached us); when that
 *		was is not known on this clock, so the interval is dropped, not
 *		stretched over the time the task has run since.
 */
static __always_inline void
drop_unseen_interval(struct pgt_exact_start *s)
{
	s->off_ts = 0;
	__sync_fetch_and_add(&exact_off_open, -1);
}

/*
 * close_preempted
 *		next comes back on a CPU: the time it stood preempted with a wait
 *		event set (an interval opened by open_preempted) goes to that event,
 *		and this CPU watches it for the next preemption.
 */
static __always_inline void
close_preempted(struct task_struct *next)
{
	struct pgt_exact_start *s;
	__u32	   *waiter;
	__u64		now;

	if (!exact_off_open)
		return;
	s = bpf_task_storage_get(&exact_starts, next, 0, 0);
	if (!s || !s->off_ts)
		return;
	/* it got a CPU since it was preempted: that switch-in went unseen */
	if (arrivals(next) != s->off_arrivals)
	{
		drop_unseen_interval(s);
		return;
	}
	now = bpf_ktime_get_ns();
	if (s->off_gen == exact_gen && now > s->off_ts)
		add_time(next->tgid, s->pm, s->off_event, s->off_qid, now - s->off_ts);
	s->off_ts = 0;
	__sync_fetch_and_add(&exact_off_open, -1);
	/* it may still be in that wait (a lock wait's loop): watch it here */
	waiter = last_waiter();
	if (waiter)
		*waiter = next->pid;
}

/*
 * open_preempted
 *		prev leaves the CPU runnable (preempted) outside a system call: when
 *		it has a wait event set, note since when and which (prev is still
 *		the current task: its memory is readable).  Only for the thread that
 *		last ended a timed wait on this CPU (exact_last_waiter).
 */
static __always_inline void
open_preempted(struct task_struct *prev)
{
	struct pgt_exact_start *s;
	__u32	   *waiter = last_waiter();
	__u32		wei;

	/* 0 = nobody (and the idle task's pid: never a waiter) */
	if (!waiter || !*waiter || *waiter != prev->pid)
		return;
	*waiter = 0;
	s = bpf_task_storage_get(&exact_starts, prev, 0, 0);
	if (!s || (!s->wait_addr && !s->wait_ptr) || s->ts || s->off_ts)
		return;
	wei = read_wait(s);
	if (wei == 0)
		return;
	s->off_qid = wei == s->event ? s->qid : state_qid(s, prev->tgid);
	s->off_event = wei;
	s->off_gen = exact_gen;
	s->off_arrivals = arrivals(prev);
	__sync_fetch_and_add(&exact_off_open, 1);
	s->off_ts = bpf_ktime_get_ns();
}

/*
 * exact_switch
 *		Time a tracked process spends preempted with a wait event set
 *		outside a system call (see the file header).  A process that blocks
 *		is inside a system call: timed there.
 */
static __always_inline void
exact_switch(bool preempt, struct task_struct *prev, struct task_struct *next,
			 unsigned int prev_state)
{
	if (!exact_on)
		return;
	close_preempted(next);
	if (prev_state == 0 || preempt)
		open_preempted(prev);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(pgt_exact_switch, bool preempt, struct task_struct *prev,
			 struct task_struct *next, unsigned int prev_state)
{
	exact_switch(preempt, prev, next, prev_state);
	pgt_chain_next(ctx, &pgt_chain_switch, PGT_CHAIN_SLOT_EXACT);
	return 0;
}

/*
 * exact_exit
 *		A system call ends: a wait noted at its entry (or seeded by the
 *		helper while the call was in progress) is over.
 */
static __always_inline void
exact_exit(struct pt_regs *regs)
{
	struct pgt_exact_start *s;
	__u64		now;

	/* the enter side never starts a wait for these */
	if (wait_free_call(pgt_exit_nr(regs)))
		return;
	s = bpf_task_storage_get(&exact_starts, bpf_get_current_task_btf(), 0, 0);
	/*
	 * No state yet: its first call in timing's time ends (a wait entered
	 * before the window).  Made now, so that the mark below keeps the
	 * helper's seed off it.
	 */
	if (!s && (!exact_on || !(s = task_state(bpf_get_current_pid_tgid() >> 32))))
		return;
	if (s->off_ts)				/* it runs: switched in unseen */
		drop_unseen_interval(s);
	if (s->ts)
	{
		now = bpf_ktime_get_ns();
		if (s->gen == exact_gen && s->pm && now > s->ts)
		{
			__u64		id = bpf_get_current_pid_tgid();
			__u32	   *waiter = last_waiter();

			record_wait(id >> 32, s->pm, s->event, s->qid, now - s->ts);
			if (waiter)
				*waiter = (__u32) id;
		}
		s->ts = 0;
	}

	/*
	 * Seen in this window, running: the helper's seed of the wait it read
	 * a moment before (seed_one) would time this call's end, or the CPU
	 * after it, as that wait.
	 */
	s->gen = exact_gen;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(pgt_exact_exit, struct pt_regs *regs, long ret)
{
	exact_exit(regs);
	pgt_chain_next(ctx, &pgt_chain_exit, PGT_CHAIN_SLOT_EXACT);
	return 0;
}

/*
 * pgt_exact_watch_hit
 *		Watchpoint source: a hardware write breakpoint on the process's
 *		PGPROC.wait_event_info fired (after the write; we run in the
 *		writer's context).  When the value changed, the interval of the old
 *		value is over: record it (when it was a wait) and start the new one.
 *		pgstat_report_wait_end() writes 0 even when no event is set; such
 *		writes change nothing.
 */
SEC("perf_event")
int
pgt_exact_watch_hit(struct bpf_perf_event_data *ctx)
{
	__u32		tgid = bpf_get_current_pid_tgid() >> 32;
	struct pgt_exact_watch *w;
	__u32		wei = 0;
	__u64		now;
	__u32		pm;

	w = bpf_map_lookup_elem(&exact_watch, &tgid);
	if (!w)
		return 0;
	/* not tracked (any more): it exec'd, and its new memory is not ours to read */
	pm = pgt_tracked_pm(tgid);
	if (!pm)
		return 0;
	if (bpf_probe_read_user(&wei, sizeof(wei), (void *) w->wait_addr) != 0)
		return 0;
	__sync_fetch_and_add(&w->hits, 1);
	/*
	 * Off (a window is closing): the state stays as it was, for the helper
	 * to count the wait in progress up to the switch (helper/exact_open.c).
	 */
	if (wei == w->event || !exact_on)
		return 0;
	now = bpf_ktime_get_ns();
	if (w->event != 0 && w->gen == exact_gen && now > w->since_ns)
		record_wait(tgid, pm, w->event, w->queryid, now - w->since_ns);
	w->event = wei;
	w->since_ns = now;
	if (wei != 0)
	{
		struct pgt_qid_slot *slot = bpf_map_lookup_elem(&pgt_qid, &tgid);

		w->queryid = slot ? slot_qid(slot) : 0;
	}
	return 0;
}
