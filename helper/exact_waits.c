/*
 * helper/exact_waits.c
 *	  Probe set "exact" (bpf/exact_waits.bpf.c): exact timing of blocking
 *	  wait events by system-call tagging, switched on and off by the tiers
 *	  and escalation windows (helper/escalation.c); the hardware-watchpoint
 *	  self-test; publication of the per-(pid, query id, event) totals, the
 *	  per-event histograms and the windows (segment kinds 10..12).
 *
 * When timing is switched on, waits already in progress are seeded: each
 * mapped process whose PGPROC.wait_event_info is set gets a wait starting
 * now in its own `exact_starts` task storage (written through a pidfd),
 * which its next system-call exit ends (a new call without a wait event
 * drops it instead).  Nothing else pays for a seed: a process that stays
 * asleep for the whole window (the checkpointer) keeps its seed at no cost
 * to the others.
 *
 * Once a second (collect) in tiered mode the sessions are sampled for the
 * anomaly rules (helper/escalation_anomaly.c): each mapped process's
 * wait_event_info, read as the seeds read it: from the cluster's
 * postmaster, one gather per cluster (read_mapped).  While timing is on, every
 * publication (4 a second) first copies the aggregates and then reads the
 * waits in progress, which it adds to their rows up to the time of that
 * read: the rows are all of one moment, just before the segment's
 * last_update_us, which is what pg_tracer_exact_time_model counts its
 * covered time to.  (Before, the aggregates were a second's copy while the
 * waits in progress ran to each publication: a wait that ended after the
 * copy went on growing until the next one.)  The end of a window folds the
 * waits in progress into the aggregates (helper/exact_open.c).
 *
 * Single-threaded (the daemon's loop).
 */
#include "escalation.h"
#include "exact_open.h"
#include "exact_watch.h"
#include "log.h"
#include "map_copy.h"
#include "pid_retire.h"
#include "pm_owner.h"
#include "procfs.h"
#include "probe_set.h"
#include "sort_u32.h"
#include "exact_waits.h"
#include "exact_waits.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define EXACT_RESETS_KEPT	64	/* clusters whose latest reset is remembered */
#define EXACT_RECOPY_NS		(100 * 1000 * 1000)	/* a copy younger is this round's */

/* every row the maps hold fits in the segment's tables */
_Static_assert(PGT_DEFAULT_EXACT_WAITS_CAP >= PGT_EXACT_WAITS_MAX,
			   "exact waits table smaller than the exact_waits map");
_Static_assert(PGT_DEFAULT_EXACT_HIST_CAP >= PGT_EXACT_HISTS_MAX,
			   "exact hist table smaller than the exact_hists map");

typedef struct exact_priv
{
	struct exact_waits_bpf *skel;
	/* sys_enter, sys_exit, sched_switch (preempted time of a wait), by
	 * PGT_CHAIN_*: in the hook's chain, or attached on their own */
	hook_chain *chain;
	chain_member member[PGT_CHAIN_NHOOKS];
	struct bpf_link *link[PGT_CHAIN_NHOOKS];
	int			qid_fd;
	int			tracked_fd;		/* the foundation's pid filter: postmasters */
	/* copies of the maps, refreshed by collect */
	struct pgt_exact_key *keys;
	struct pgt_exact_val *vals;
	size_t		n;
	struct pgt_exact_hkey *hkeys;
	struct pgt_exact_hval *hvals;
	size_t		nh;
	char		watch[96];		/* watchpoint self-test result */
	int			source;			/* EXACT_SOURCE_SYSCALL or _WATCHPOINT */
	char		why[224];		/* why that source */
	exact_watch *w;				/* watchpoint source: the breakpoints */
	uint64_t	last_sync_ns;
	uint32_t   *qid_pids;		/* a copy of the pgt_qid map (mapped_procs) */
	struct pgt_qid_slot *qid_slots;
	uint32_t   *tracked_pids;	/* a copy of `tracked`: each process's postmaster */
	struct pgt_tracked *tracked_vals;
	exact_open_set open;		/* waits in progress, as of copied_ns */
	uint64_t	copied_ns;		/* monotonic time of the latest copy_rest */
	uint64_t	fold_lost;		/* waits in progress the full map refused */
	/* the latest EXACTRESET of each cluster (monotonic ns): waits in
	 * progress count from there, as the emptied counters do */
	struct
	{
		uint32_t	pm;
		uint64_t	ns;
	}			resets[EXACT_RESETS_KEPT];
	uint64_t	lost_said;		/* losses the log has told */
} exact_priv;

static size_t copy_map(int fd, size_t max, size_t ksz, size_t vsz, void **keys,
					   void **vals);
static uint64_t open_start(const exact_priv *p, const exact_open_wait *w);
static void copy_waits(exact_priv *p);

/* The running instance, for the escalation switch (one per helper). */
static exact_priv *running;

/*
 * open_src
 *		Where p's source keeps its waits in progress (helper/exact_open.c).
 */
static exact_open_src
open_src(exact_priv *p)
{
	exact_open_src src;

	src.watchpoints = p->source == EXACT_SOURCE_WATCHPOINT;
	src.starts_fd = bpf_map__fd(p->skel->maps.exact_starts);
	src.watch_fd = bpf_map__fd(p->skel->maps.exact_watch);
	src.tracked_fd = p->tracked_fd;
	src.gen = __atomic_load_n(&p->skel->bss->exact_gen, __ATOMIC_SEQ_CST);
	return src;
}

/*
 * fold_open_waits
 *		The end of a window, once nothing records any more: the waits still
 *		in progress count, as far as they ran in it (helper/exact_open.c).
 */
static void
fold_open_waits(exact_priv *p)
{
	exact_open_src src = open_src(p);
	int			lost;

	exact_open_collect(&src, &p->open);
	for (size_t i = 0; i < p->open.n; i++)
		p->open.w[i].start_ns = open_start(p, &p->open.w[i]);
	lost = exact_open_fold(bpf_map__fd(p->skel->maps.exact_waits), &p->open,
						   exact_mono_ns());
	p->fold_lost += (uint64_t) (lost > 0 ? lost : 0);
	log_debug("exact: %zu waits in progress at the end of the window", p->open.n);
	p->open.n = 0;
	/* the publications from now on show what was folded */
	copy_waits(p);
}

/*
 * seed_one
 *		Start a wait of `event` (query id qid) now in pid's task storage,
 *		keeping what the BPF side cached there.  Timing is on already: a
 *		task whose state is of this window's generation has entered or
 *		left a system call since, and the BPF side knows better than the
 *		event read a moment ago (a seed over it would time that call, or
 *		the query's CPU after it, as the old wait); it is left alone.  A
 *		call entered between this lookup and the update (microseconds) is
 *		timed from the seed, as the event read.  An
 *		interval of preempted time is not carried over: its count in
 *		exact_off_open stays raised, which costs lookups, never counts.
 *		0 when seeded.
 */
static int
seed_one(exact_priv *p, uint32_t pid, uint32_t event, uint64_t qid, uint64_t now)
{
	int			starts_fd = bpf_map__fd(p->skel->maps.exact_starts);
	struct pgt_exact_start st;
	struct pgt_tracked t;
	int			pidfd;
	int			rc;

	if (bpf_map_lookup_elem(p->tracked_fd, &pid, &t) != 0)
		return -1;				/* exited, or not ours */
	pidfd = (int) syscall(SYS_pidfd_open, (pid_t) pid, 0);
	if (pidfd < 0)
		return -1;
	if (bpf_map_lookup_elem(starts_fd, &pidfd, &st) != 0)
		memset(&st, 0, sizeof(st));	/* no system call seen yet */
	else if (st.gen == p->skel->bss->exact_gen)
	{
		close(pidfd);
		return -1;				/* seen by the programs in this window */
	}
	st.off_ts = 0;
	st.ts = now;
	st.qid = qid;
	st.event = event;
	st.gen = p->skel->bss->exact_gen;
	st.pm = t.postmaster;
	rc = bpf_map_update_elem(starts_fd, &pidfd, &st, BPF_ANY);
	close(pidfd);
	return rc;
}

/*
 * The state of a mapped process (a direct `pgt_qid` slot, with its
 * PGPROC.wait_event_info's address), as read_mapped reads it.
 */
typedef struct mapped_proc
{
	uint32_t	pm;				/* first: the sort key (sort_u32.h) */
	uint32_t	pid;
	const struct pgt_qid_slot *slot;	/* in p's copy of `pgt_qid` */
	uint32_t	wei;			/* wait_event_info, 0: none (on CPU) */
	int32_t		procpid;		/* its BackendStatusArray entry's st_procpid */
	uint64_t	qid;			/* ... and st_query_id */
} mapped_proc;

/*
 * tracked_by_pid
 *		A copy of `tracked` as (pid, postmaster) pairs sorted by pid, into
 *		*out (malloc'd): how many, 0 when none or memory is short.
 */
static size_t
tracked_by_pid(exact_priv *p, uint32_t (**out)[2])
{
	size_t		n = copy_map(p->tracked_fd, PGT_BPF_MAX_TRACKED, sizeof(uint32_t),
							 sizeof(struct pgt_tracked), (void **) &p->tracked_pids,
							 (void **) &p->tracked_vals);
	uint32_t	(*pairs)[2] = malloc((n > 0 ? n : 1) * sizeof(*pairs));

	*out = pairs;
	if (pairs == NULL)
		return 0;
	for (size_t i = 0; i < n; i++)
	{
		pairs[i][0] = p->tracked_pids[i];
		pairs[i][1] = p->tracked_vals[i].postmaster;
	}
	qsort(pairs, n, sizeof(*pairs), sort_cmp_u32);
	return n;
}

/*
 * mapped_procs
 *		The mapped processes whose wait_event_info has an address in shared
 *		memory (direct slots of a batch copy of `pgt_qid`: two system calls
 *		per process fewer than a walk key by key), each with its postmaster,
 *		sorted by postmaster, into *out (malloc'd): how many.
 */
static size_t
mapped_procs(exact_priv *p, mapped_proc **out)
{
	uint32_t	(*pms)[2];
	size_t		npms = tracked_by_pid(p, &pms);
	size_t		nslots = p->qid_fd < 0 ? 0 :
		copy_map(p->qid_fd, PGT_BPF_MAX_TRACKED, sizeof(uint32_t),
				 sizeof(struct pgt_qid_slot), (void **) &p->qid_pids,
				 (void **) &p->qid_slots);
	size_t		n = 0;

	*out = malloc((nslots > 0 ? nslots : 1) * sizeof(**out));
	for (size_t i = 0; *out != NULL && pms != NULL && i < nslots; i++)
	{
		const struct pgt_qid_slot *slot = &p->qid_slots[i];
		uint32_t	(*pm)[2];

		if (slot->wait_addr == 0 || (slot->flags & PGT_QID_INDIRECT))
			continue;
		pm = bsearch(&p->qid_pids[i], pms, npms, sizeof(*pms), sort_cmp_u32);
		if (pm != NULL && (*pm)[1] != 0)
			(*out)[n++] = (mapped_proc) {.pm = (*pm)[1], .pid = p->qid_pids[i],
				.slot = slot};
	}
	free(pms);
	if (*out != NULL)
		qsort(*out, n, sizeof(**out), sort_cmp_u32);
	return n;
}

/*
 * read_cluster
 *		The wait events of the n processes of one cluster (all of postmaster
 *		pm), with their status entries' pid and query id when with_ids,
 *		read from the postmaster's memory in one gather: PGPROC and
 *		BackendStatusArray are shared memory, at the same address in every
 *		process of the cluster, so one process's plain-process check covers
 *		them all.  The processes whose wait event was read are moved to the
 *		front: returns how many (none when pm is not served).
 */
static size_t
read_cluster(uint32_t pm, mapped_proc *procs, size_t n, bool with_ids, procfs_span *spans)
{
	size_t		per = with_ids ? 3 : 1;
	size_t		k = 0;
	uid_t		owner;

	if (!pm_owner_get(pm, &owner))
		return 0;
	for (size_t i = 0; i < n; i++)
	{
		mapped_proc *m = &procs[i];

		m->wei = 0;
		m->procpid = 0;
		m->qid = 0;
		spans[i * per] = (procfs_span) {.addr = m->slot->wait_addr, .buf = &m->wei,
			.len = sizeof(m->wei)};
		if (!with_ids)
			continue;
		spans[i * per + 1] = (procfs_span) {.addr = m->slot->procpid_addr,
			.buf = &m->procpid, .len = sizeof(m->procpid)};
		spans[i * per + 2] = (procfs_span) {.addr = m->slot->queryid_addr,
			.buf = &m->qid, .len = sizeof(m->qid)};
	}
	if (procfs_mem_gather((pid_t) pm, owner, spans, n * per) <= 0)
		return 0;
	for (size_t i = 0; i < n; i++)
	{
		if (!spans[i * per].ok)
			continue;
		/* a status entry that is not the process's: no query id */
		if (with_ids && (!spans[i * per + 1].ok || !spans[i * per + 2].ok ||
						 (uint32_t) procs[i].procpid != procs[i].slot->nspid))
			procs[i].qid = 0;
		procs[k++] = procs[i];
	}
	return k;
}

/*
 * read_mapped
 *		The mapped processes whose wait event could be read (see
 *		read_cluster), into *out (malloc'd; free it): how many.  One gather
 *		per cluster, not a read per process: the anomaly rules' sample runs
 *		every second over every backend.
 */
static size_t
read_mapped(exact_priv *p, bool with_ids, mapped_proc **out)
{
	size_t		n;
	procfs_span *spans;
	size_t		kept = 0;

	*out = NULL;
	if (p->tracked_fd < 0)
		return 0;
	n = mapped_procs(p, out);
	spans = malloc((n > 0 ? n : 1) * (with_ids ? 3 : 1) * sizeof(*spans));
	for (size_t i = 0, j; *out != NULL && spans != NULL && i < n; i = j)
	{
		size_t		got;

		for (j = i; j < n && (*out)[j].pm == (*out)[i].pm; j++)
			;
		got = read_cluster((*out)[i].pm, *out + i, j - i, with_ids, spans);
		memmove(*out + kept, *out + i, got * sizeof(**out));
		kept += got;
	}
	free(spans);
	return kept;
}

/*
 * seed_waits
 *		Seed a wait starting now for every mapped process that is waiting
 *		now (backends are single-threaded: the process's task is its
 *		thread).  Returns how many.
 */
static int
seed_waits(exact_priv *p)
{
	uint64_t	now = exact_mono_ns();
	mapped_proc *m;
	size_t		n = read_mapped(p, true, &m);
	int			seeded = 0;

	for (size_t i = 0; i < n; i++)
		if (m[i].wei != 0 && seed_one(p, m[i].pid, m[i].wei, m[i].qid, now) == 0)
			seeded++;
	free(m);
	return seeded;
}

/*
 * is_session
 *		Does the anomaly rules' sample count process pid?  Client backends
 *		and their parallel workers do, and a process not classified yet (a
 *		storm of new connections is one); background processes do not: the
 *		pg_tracer workers of every cluster wait in the Extension class,
 *		which is not idle, and would raise every baseline by two.
 */
static bool
is_session(uint32_t pid)
{
	uint32_t	role = pid_retire_live_role(pid);

	return role == PGT_ROLE_UNKNOWN || role == PGT_ROLE_CLIENT_BACKEND ||
		role == PGT_ROLE_PARALLEL_WORKER;
}

/*
 * sample_sessions
 *		The anomaly rules' sample, over the host's served clusters (one
 *		window covers them all): sessions (is_session) whose wait event is
 *		not idle (Activity class, Client:ClientRead) count as active (0, no
 *		event, is on CPU), those in the Lock class as locked.
 */
static void
sample_sessions(exact_priv *p, uint32_t *active, uint32_t *locked)
{
	mapped_proc *m;
	size_t		n = read_mapped(p, false, &m);

	*active = *locked = 0;
	for (size_t i = 0; i < n; i++)
	{
		if ((m[i].wei & 0xFF000000) == 0x05000000 || m[i].wei == 0x06000000)
			continue;			/* Activity, Client:ClientRead: idle */
		if (!is_session(m[i].pid))
			continue;
		(*active)++;
		if ((m[i].wei & 0xFF000000) == 0x03000000)
			(*locked)++;
	}
	free(m);
}

/*
 * hook_prog
 *		The program of a hook (PGT_CHAIN_*).
 */
static struct bpf_program *
hook_prog(exact_priv *p, int hook)
{
	switch (hook)
	{
		case PGT_CHAIN_ENTER:
			return p->skel->progs.pgt_exact_enter;
		case PGT_CHAIN_EXIT:
			return p->skel->progs.pgt_exact_exit;
		default:
			return p->skel->progs.pgt_exact_switch;
	}
}

/*
 * attach_progs
 *		Put sys_exit, sched_switch and sys_enter (in that order: no start
 *		is noted that no exit would close) into their hook chains, or
 *		attach them on their own; those already on are left.  0 or -errno.
 */
static int
attach_progs(exact_priv *p)
{
	static const int order[] = {PGT_CHAIN_EXIT, PGT_CHAIN_SWITCH, PGT_CHAIN_ENTER};
	char		ebuf[128];
	int			err = 0;
	size_t		i;

	for (i = 0; i < sizeof(order) / sizeof(order[0]) && err == 0; i++)
	{
		int			h = order[i];

		if (p->link[h] == NULL && p->member[h].hook < 0)
			err = hook_chain_attach(p->chain, hook_prog(p, h), PGT_CHAIN_SLOT_EXACT,
									&p->member[h], &p->link[h]);
	}
	if (err != 0)
		log_error("exact: cannot attach the system-call programs: %s",
				  pset_errstr(err, ebuf, sizeof(ebuf)));
	return err;
}

/*
 * detach_progs
 *		Take the programs out of their chains (or detach them): between
 *		tiered windows the hooks cost nothing.
 */
static void
detach_progs(exact_priv *p)
{
	int			h;

	for (h = 0; h < PGT_CHAIN_NHOOKS; h++)
		hook_chain_detach(p->chain, &p->member[h], &p->link[h]);
}

/*
 * watch_switch
 *		Watchpoint source on or off: breakpoints exist only while exact
 *		timing is on; each is seeded with the process's current value.
 */
static void
watch_switch(exact_priv *p, int on)
{
	if (on)
	{
		uint32_t	gen = __atomic_add_fetch(&p->skel->bss->exact_gen, 1, __ATOMIC_SEQ_CST);
		size_t		n;

		__atomic_store_n(&p->skel->bss->exact_on, 1, __ATOMIC_SEQ_CST);
		n = exact_watch_sync(p->w, gen);
		p->last_sync_ns = exact_mono_ns();
		log_debug("exact: on, %zu backends watched", n);
	}
	else
	{
		/* the hit program records nothing from here on */
		__atomic_store_n(&p->skel->bss->exact_on, 0, __ATOMIC_SEQ_CST);
		fold_open_waits(p);
		exact_watch_clear(p->w);
	}
}

/*
 * watch_tick
 *		While on: breakpoints for new backends, none for exited ones (at
 *		most every 200 ms); the status row says how many (0 outside
 *		windows) and what failed.
 */
static void
watch_tick(pset_inst *in, exact_priv *p)
{
	char		last[96];
	unsigned	failed;
	uint64_t	now = exact_mono_ns();

	/* not the set's source when its start failed: the row keeps why */
	if (p->source != EXACT_SOURCE_WATCHPOINT || running != p || p->w == NULL ||
		now - p->last_sync_ns < 200000000ULL)
		return;
	p->last_sync_ns = now;
	if (p->skel->bss->exact_on)
		(void) exact_watch_sync(p->w, p->skel->bss->exact_gen);
	failed = exact_watch_failures(p->w, last, sizeof(last));
	pset_set_status(in, PGT_PROBE_AVAILABLE, "hardware watchpoints",
					"mode %s, budget %d s/h; %s; %zu watched, %u over the limit, "
					"%u failed%s%s",
					escalation_mode_name(), escalation_budget(), p->why,
					exact_watch_count(p->w), exact_watch_over_limit(p->w), failed,
					failed ? " (last: " : "", failed ? last : "");
	if (failed)
	{
		size_t		l = strlen(in->status.reason);

		if (l + 1 < sizeof(in->status.reason))
			snprintf(in->status.reason + l, sizeof(in->status.reason) - l, ")");
	}
}

/*
 * note_reset
 *		Remember when cluster pm was reset (its slot, a free one, or the
 *		oldest reset's).
 */
static void
note_reset(exact_priv *p, uint32_t pm)
{
	size_t		best = 0;
	size_t		i;

	for (i = 0; i < EXACT_RESETS_KEPT; i++)
	{
		if (p->resets[i].pm == pm || p->resets[i].pm == 0)
		{
			best = i;
			break;
		}
		if (p->resets[i].ns < p->resets[best].ns)
			best = i;
	}
	p->resets[best].pm = pm;
	p->resets[best].ns = exact_mono_ns();
}

/*
 * open_start
 *		Since when a wait in progress counts: its start, or its cluster's
 *		latest reset if later (the reset emptied the counters; the rest of
 *		the wait counts whole when it ends, as documented).
 */
static uint64_t
open_start(const exact_priv *p, const exact_open_wait *w)
{
	size_t		i;

	for (i = 0; i < EXACT_RESETS_KEPT; i++)
		if (p->resets[i].pm == w->pm)
			return p->resets[i].ns > w->start_ns ? p->resets[i].ns : w->start_ns;
	return w->start_ns;
}

/*
 * exact_reset
 *		EXACTRESET (pg_tracer_reset()) of the cluster whose postmaster is
 *		pm: empty its aggregates and histograms, in the maps and in the
 *		copies the next publication would show.  A wait in progress is
 *		counted whole when it ends.  Other clusters keep theirs.
 */
static void
exact_reset(uint32_t pm)
{
	exact_priv *p = running;
	size_t		i;
	size_t		j;

	if (p == NULL)
		return;
	(void) map_delete_rows_of(bpf_map__fd(p->skel->maps.exact_waits),
							  sizeof(struct pgt_exact_key), sizeof(struct pgt_exact_val),
							  sizeof(struct pgt_exact_key) + offsetof(struct pgt_exact_val, pm),
							  PGT_EXACT_WAITS_MAX, pm, 0);
	(void) map_delete_rows_of(bpf_map__fd(p->skel->maps.exact_hists),
							  sizeof(struct pgt_exact_hkey), sizeof(struct pgt_exact_hval),
							  offsetof(struct pgt_exact_hkey, pm), PGT_EXACT_HISTS_MAX, pm, 0);
	for (i = 0, j = 0; i < p->n; i++)
		if (p->vals[i].pm != pm)
		{
			p->keys[j] = p->keys[i];
			p->vals[j++] = p->vals[i];
		}
	p->n = j;
	for (i = 0, j = 0; i < p->nh; i++)
		if (p->hkeys[i].pm != pm)
		{
			p->hkeys[j] = p->hkeys[i];
			p->hvals[j++] = p->hvals[i];
		}
	p->nh = j;
	note_reset(p, pm);
	log_info("exact: counters of postmaster %u reset", pm);
}

/*
 * choose_source
 *		--exact-source against the self-test: watchpoints only where they
 *		fire, and for auto only in tiered mode (escalation windows are
 *		short and budgeted, full mode is always on); p->why says which
 *		source and why.
 */
static void
choose_source(exact_priv *p)
{
	int			fires = exact_watch_selftest(p->watch, sizeof(p->watch));
	int			req = exact_source_requested();

	if (req == EXACT_SOURCE_SYSCALL)
	{
		p->source = EXACT_SOURCE_SYSCALL;
		snprintf(p->why, sizeof(p->why), "source syscall (default; %s)", p->watch);
	}
	else if (req == EXACT_SOURCE_AUTO && escalation_mode() == ESC_MODE_FULL)
	{
		/* always on: the cheaper source; windows are short and budgeted */
		p->source = EXACT_SOURCE_SYSCALL;
		snprintf(p->why, sizeof(p->why),
				 "source syscall (--exact-source auto: watchpoints only in tiered windows; %s)",
				 p->watch);
	}
	else if (fires)
	{
		p->source = EXACT_SOURCE_WATCHPOINT;
		snprintf(p->why, sizeof(p->why), "source watchpoint (--exact-source %s; %s)",
				 exact_source_name(req), p->watch);
		/* README, "Debug traps no breakpoint claims" */
		log_warn("exact: hardware watchpoints on every backend: where a guest loses a "
				 "trap's DR6 (seen on a 2-vCPU Intel VM) the kernel sends the backend SIGTRAP; "
				 "the pg_tracer library absorbs it and logs it, a library built before "
				 "2026-12-06 lets it end the backend (--exact-source syscall sets no breakpoint)");
	}
	else
	{
		p->source = EXACT_SOURCE_SYSCALL;
		snprintf(p->why, sizeof(p->why), "source syscall (--exact-source %s, but %s)",
				 exact_source_name(req), p->watch);
	}
}

/*
 * exact_switch
 *		escalation callback: exact timing on or off.  -1 when the programs
 *		could not be attached (the escalation then ends the window: it
 *		would cover nothing).
 */
static int
exact_switch(int on)
{
	exact_priv *p = running;

	if (p == NULL)
		return on ? -1 : 0;
	if (p->source == EXACT_SOURCE_WATCHPOINT)
	{
		watch_switch(p, on);
		return 0;
	}
	if (on)
	{
		int			n;

		/* starts left from an earlier window are stale from now on */
		__atomic_add_fetch(&p->skel->bss->exact_gen, 1, __ATOMIC_SEQ_CST);
		if (attach_progs(p) < 0)
		{
			detach_progs(p);	/* those that did attach */
			return -1;
		}
		/* on before the seeds: see seed_one */
		__atomic_store_n(&p->skel->bss->exact_on, 1, __ATOMIC_SEQ_CST);
		n = seed_waits(p);
		log_debug("exact: on, %d waits in progress seeded", n);
	}
	else
	{
		__atomic_store_n(&p->skel->bss->exact_on, 0, __ATOMIC_SEQ_CST);
		detach_progs(p);		/* no tracepoint cost between windows */
		fold_open_waits(p);		/* sys_exit no longer records: safe */
	}
	return 0;
}

/*
 * start_watchpoints
 *		The loaded object's hardware-watchpoint source: made, and handed the
 *		escalation switch.  0, or -ENOMEM.
 */
static int
start_watchpoints(pset_inst *in, exact_priv *p)
{
	p->w = exact_watch_new(p->skel->progs.pgt_exact_watch_hit,
						   bpf_map__fd(p->skel->maps.exact_watch), p->qid_fd,
						   p->tracked_fd);
	if (p->w == NULL)
		return -ENOMEM;
	running = p;
	pset_set_status(in, PGT_PROBE_AVAILABLE, "hardware watchpoints",
					"mode %s, budget %d s/h; %s", escalation_mode_name(),
					escalation_budget(), p->why);
	escalation_attach(exact_switch, NULL);
	escalation_set_reset(exact_reset);
	return 0;
}

/*
 * start_tagging
 *		The syscall-tagging source, of an object whose load (or watchpoint
 *		source) returned err: attached once to prove it works (tiered mode
 *		attaches again per window), and handed the escalation switch; or
 *		reported unavailable with the reason.
 */
static void
start_tagging(pset_inst *in, exact_priv *p, int err)
{
	char		ebuf[128];

	if (err == 0)
		err = attach_progs(p);
	if (err != 0 || escalation_mode() != ESC_MODE_FULL)
		detach_progs(p);		/* between windows, or those that did attach */
	if (err != 0)
	{
		pset_set_status(in, PGT_PROBE_UNAVAILABLE, "syscall tagging",
						"tp_btf/sys_enter+sys_exit+sched_switch: %s; %s",
						pset_errstr(err, ebuf, sizeof(ebuf)), p->why);
		escalation_attach(NULL, in->status.reason);
		return;
	}
	running = p;
	pset_set_status(in, PGT_PROBE_AVAILABLE, "syscall tagging",
					"mode %s, budget %d s/h; %s; %s", escalation_mode_name(),
					escalation_budget(), p->why,
					p->chain ? "programs in the hook chains" : "programs attached on their own");
	escalation_attach(exact_switch, NULL);
	escalation_set_reset(exact_reset);
}

/*
 * start
 *		open -> shared maps -> load -> attach; watchpoint self-test; hand
 *		the switch to the escalation state.
 */
static int
start(pset_inst *in, const pset_ctx *ctx)
{
	exact_priv *p = calloc(1, sizeof(*p));
	int			err;
	int			h;

	if (p == NULL)
		return -1;
	in->priv = p;
	p->qid_fd = ctx->qid_fd;
	p->tracked_fd = ctx->tracked_fd;
	p->chain = ctx->chain;
	for (h = 0; h < PGT_CHAIN_NHOOKS; h++)
		p->member[h].hook = -1;
	choose_source(p);
	if (ctx->mode != PSET_MODE_DAEMON)
	{
		pset_set_status(in, PGT_PROBE_UNAVAILABLE, "syscall tagging",
						"exact timing runs in the daemon only; %s", p->why);
		return 0;
	}
	p->skel = exact_waits_bpf__open();
	if (p->skel == NULL)
	{
		pset_set_status(in, PGT_PROBE_UNAVAILABLE, "syscall tagging", "BPF open failed");
		escalation_attach(NULL, "BPF open failed");
		return 0;
	}
	p->skel->rodata->pgt_stream = 0;
	p->skel->rodata->pgt_chained = p->chain != NULL;
	err = pset_prepare_object(ctx, p->skel->obj);
	if (err == 0)
		err = exact_waits_bpf__load(p->skel);
	if (err == 0 && p->source == EXACT_SOURCE_WATCHPOINT)
	{
		err = start_watchpoints(in, p);
		if (err == 0)
			return 0;
	}
	start_tagging(in, p, err);
	return 0;
}

/*
 * stop
 *		Close the open window, detach, free.
 */
static void
stop(pset_inst *in)
{
	exact_priv *p = in->priv;

	if (p == NULL)
		return;
	if (running == p)
	{
		escalation_set_reset(NULL);
		escalation_detach();
		running = NULL;
	}
	exact_watch_free(p->w);
	if (p->skel != NULL)
		detach_progs(p);
	exact_waits_bpf__destroy(p->skel);
	free(p->keys);
	free(p->vals);
	free(p->hkeys);
	free(p->hvals);
	free(p->qid_pids);
	free(p->qid_slots);
	free(p->tracked_pids);
	free(p->tracked_vals);
	exact_open_free(&p->open);
	free(p);
	in->priv = NULL;
}

/*
 * copy_map
 *		All entries of a hash map into key/value arrays of max entries
 *		(allocated on first use, then reused).
 */
static size_t
copy_map(int fd, size_t max, size_t ksz, size_t vsz, void **keys, void **vals)
{
	if (*keys == NULL)
		*keys = malloc(max * ksz);
	if (*vals == NULL)
		*vals = malloc(max * vsz);
	if (*keys == NULL || *vals == NULL)
		return 0;
	return map_copy(fd, ksz, vsz, *keys, *vals, max);
}

/* Rows of exited processes fold into their cluster's row (pid_retire.h). */
static const retire_u64_layout waits_fold = {.nwords = 3, .max_mask = 1ULL << 2};

_Static_assert(offsetof(struct pgt_exact_val, max_ns) == 2 * 8, "waits_fold layout");

#define waits_retire(p) ((retire_map) { \
	.name = "exact waits", .fd = bpf_map__fd((p)->skel->maps.exact_waits), \
	.ksize = sizeof(struct pgt_exact_key), .vsize = sizeof(struct pgt_exact_val), \
	.kstride = sizeof(struct pgt_exact_key), .vstride = sizeof(struct pgt_exact_val), \
	.pid_off = offsetof(struct pgt_exact_key, pid), \
	.pm_off = offsetof(struct pgt_exact_val, pm), .max_entries = PGT_EXACT_WAITS_MAX, \
	.fold = pid_retire_fold_u64, .fold_arg = &waits_fold})

/*
 * note_losses
 *		Waits the full aggregates could not take (the programs', and the
 *		waits in progress folded at the end of windows): in the set's
 *		pg_tracer_probes row and, as they double, the log.
 */
static void
note_losses(pset_inst *in, exact_priv *p)
{
	uint64_t	lost = __atomic_load_n(&p->skel->bss->exact_lost, __ATOMIC_RELAXED) +
		p->fold_lost;
	uint64_t	hlost = __atomic_load_n(&p->skel->bss->exact_hist_lost, __ATOMIC_RELAXED);
	int			n = 0;

	in->note[0] = '\0';
	if (lost > 0)
		n = snprintf(in->note, sizeof(in->note), "%llu waits or parts not counted: the "
					 "table of %d rows was full", (unsigned long long) lost,
					 PGT_EXACT_WAITS_MAX);
	if (hlost > 0 && n >= 0 && (size_t) n < sizeof(in->note))
		snprintf(in->note + n, sizeof(in->note) - (size_t) n, "%s%llu waits not in the "
				 "histograms: their table of %d rows was full", n > 0 ? "; " : "",
				 (unsigned long long) hlost, PGT_EXACT_HISTS_MAX);
	if (lost + hlost > 0 && lost + hlost >= 2 * p->lost_said)
	{
		log_warn("exact: %llu waits or parts of waits not counted, %llu not in the "
				 "histograms: the aggregates (%d rows) or the histograms (%d rows) are "
				 "full (pg_tracer_reset() empties a cluster's rows)",
				 (unsigned long long) lost, (unsigned long long) hlost,
				 PGT_EXACT_WAITS_MAX, PGT_EXACT_HISTS_MAX);
		p->lost_said = lost + hlost;
	}
}

/*
 * copy_waits
 *		Copy the (pid, query id, event) aggregates.
 */
static void
copy_waits(exact_priv *p)
{
	p->n = copy_map(bpf_map__fd(p->skel->maps.exact_waits), PGT_EXACT_WAITS_MAX,
					sizeof(struct pgt_exact_key), sizeof(struct pgt_exact_val),
					(void **) &p->keys, (void **) &p->vals);
}

/*
 * copy_rest
 *		After copy_waits: the histograms, then the waits in progress while
 *		timing is on, and the time they count to.  In that order, a wait
 *		that ends in between is in neither copy until the next one, never
 *		in both (it would count twice).
 */
static void
copy_rest(exact_priv *p)
{
	p->nh = copy_map(bpf_map__fd(p->skel->maps.exact_hists), PGT_EXACT_HISTS_MAX,
					 sizeof(struct pgt_exact_hkey), sizeof(struct pgt_exact_hval),
					 (void **) &p->hkeys, (void **) &p->hvals);
	p->open.n = 0;
	if (__atomic_load_n(&p->skel->bss->exact_on, __ATOMIC_SEQ_CST))
	{
		exact_open_src src = open_src(p);

		exact_open_collect(&src, &p->open);
	}
	p->copied_ns = exact_mono_ns();
}

/*
 * collect
 *		Copy the aggregates, folding the rows of processes gone for a while.
 */
static void
collect(pset_inst *in)
{
	exact_priv *p = in->priv;

	if (p == NULL || p->skel == NULL)
		return;
	copy_waits(p);
	/* an empty copy is a round too (a reused pid's rows: none to fold here) */
	if (pid_retire_rows(&waits_retire(p), p->keys, p->vals, p->n) > 0)
		copy_waits(p);
	copy_rest(p);
	if (escalation_mode() == ESC_MODE_TIERED)
	{
		uint32_t	active;
		uint32_t	locked;

		sample_sessions(p, &active, &locked);
		(void) escalation_anomaly_sample(escalation_now_us(), active, locked);
	}
	in->events = 0;
	for (size_t k = 0; k < p->n; k++)
		in->events += p->vals[k].count;
	note_losses(in, p);
}

/*
 * put_wait
 *		Publish one (pid, query id, event) row of pub's cluster.
 */
static void
put_wait(pset_pub *pub, uint32_t pid, uint32_t event, uint64_t qid, uint64_t count,
		 uint64_t total_ns, uint64_t max_ns)
{
	struct pgt_exact_wait_entry e;

	memset(&e, 0, sizeof(e));
	e.pid = pset_pub_nspid(pub, pid);
	e.event = event;
	e.queryid = (int64_t) qid;
	e.count = count;
	e.total_ns = total_ns;
	e.max_ns = max_ns;
	(void) pset_pub_add_pid(pub, PGT_SEC_EXACT_WAITS, &e, sizeof(e), pid);
}

/*
 * publish_waits
 *		pub's rows of the aggregates, each with its wait in progress (one
 *		more wait, and its time so far: helper/exact_open.c), and a row for
 *		each wait in progress that has none yet.
 */
static void
publish_waits(exact_priv *p, pset_pub *pub)
{
	uint64_t	now = p->copied_ns;
	size_t		i;

	for (i = 0; i < p->open.n; i++)
		if (p->open.w[i].pm == pub->postmaster)
			p->open.w[i].matched = 0;
	for (i = 0; i < p->n; i++)
	{
		const struct pgt_exact_key *k = &p->keys[i];
		const struct pgt_exact_val *v = &p->vals[i];
		exact_open_wait *w;
		uint64_t	count = v->count;
		uint64_t	total = v->total_ns;
		uint64_t	max = v->max_ns;

		if (v->pm != pub->postmaster)
			continue;
		w = exact_open_find(&p->open, k->pid, k->event, k->queryid);
		if (w != NULL && w->pm == v->pm)
		{
			uint64_t	start = open_start(p, w);
			uint64_t	part = now > start ? now - start : 0;

			w->matched = 1;
			count++;
			total += part;
			max = part > max ? part : max;
		}
		put_wait(pub, k->pid, k->event, k->queryid, count, total, max);
	}
	for (i = 0; i < p->open.n; i++)
	{
		const exact_open_wait *w = &p->open.w[i];
		uint64_t	start = open_start(p, w);
		uint64_t	part = now > start ? now - start : 0;

		if (w->pm == pub->postmaster && !w->matched)
			put_wait(pub, w->pid, w->event, w->qid, 1, part, part);
	}
}

/*
 * publish
 *		Rows of pub's cluster: waits (pids as PostgreSQL knows them, with
 *		the waits in progress), histograms with their counts and totals
 *		(finished waits), the windows.
 */
static void
publish(pset_inst *in, pset_pub *pub)
{
	exact_priv *p = in->priv;
	struct pgt_exact_window_entry win[ESC_MAX_PUBLISHED];
	size_t		nwin;
	size_t		i;
	size_t		j;

	if (p == NULL)
		return;
	if (p->skel != NULL)
	{
		/* untracked tasks' cached "not tracked" expires (exact_waits.bpf.c) */
		__atomic_add_fetch(&p->skel->bss->exact_tick, 1, __ATOMIC_RELAXED);
		watch_tick(in, p);
		/* once a publication round (other clusters', collect's this tick) */
		if (__atomic_load_n(&p->skel->bss->exact_on, __ATOMIC_SEQ_CST) &&
			exact_mono_ns() - p->copied_ns > EXACT_RECOPY_NS)
		{
			copy_waits(p);
			copy_rest(p);
		}
	}
	publish_waits(p, pub);
	for (i = 0; i < p->nh; i++)
	{
		struct pgt_exact_hist_entry h;

		if (p->hkeys[i].pm != pub->postmaster)
			continue;
		memset(&h, 0, sizeof(h));
		h.event = p->hkeys[i].event;
		h.nslots = PGT_EXACT_HIST_SLOTS;
		for (j = 0; j < PGT_EXACT_HIST_SLOTS; j++)
		{
			h.slots[j] = p->hvals[i].slots[j];
			h.count += h.slots[j];
		}
		/* the total of the event, from the per-process rows */
		for (j = 0; j < p->n; j++)
			if (p->vals[j].pm == pub->postmaster && p->keys[j].event == h.event)
				h.total_ns += p->vals[j].total_ns;
		(void) pset_pub_add(pub, PGT_SEC_EXACT_HIST, &h, sizeof(h));
	}
	nwin = escalation_windows(win, ESC_MAX_PUBLISHED,
							  (esc_party) {pub->cluster_dev, pub->cluster_ino});
	for (i = 0; i < nwin; i++)
		(void) pset_pub_add(pub, PGT_SEC_EXACT_WINDOWS, &win[i], sizeof(win[i]));
}

static const probe_set exact_set = {
	.name = "exact",
	.description = "exact wait-event timing by system-call tagging (tiers, escalation windows)",
	.id = PGT_SET_EXACT,
	.order = 200,			/* after the kernel (10..60) and engine (100..) sets */
	.start = start,
	.stop = stop,
	.collect = collect,
	.publish = publish,
};

_Static_assert(PGT_EXACT_NSLOTS == PGT_EXACT_HIST_SLOTS, "histogram slots");

PGT_REGISTER_PROBE_SET(exact_set);
