/*
 * helper/exact_open.c
 *	  Waits in progress of the exact set (bpf/exact_waits.bpf.c): read
 *	  where the running source keeps them, so that the publication can add
 *	  the part elapsed so far to the rows, and the end of a window can fold
 *	  the part it covered into the aggregates.
 *
 * Both sources record a wait when it ends.  A wait that outlasts its
 * window (a session idle in ClientRead, a lock wait) was counted by
 * neither: the window timed it as nothing, and the time model read a
 * session idle through a whole window as on CPU for all of it.  Now:
 * - while a window is open, a published row has the waits in progress
 *   of its (pid, query id, event): one more wait, and its time so far
 *   (exact_waits.c publish); a wait with no row yet gets one;
 * - when a window closes, after the programs are detached (nothing else
 *   writes the aggregates then), each wait in progress is added to its
 *   aggregate as one wait of the time it had run (exact_open_fold).  Its
 *   start is of the window's generation: seeded at the window's start
 *   when it began earlier, so the part is the window's part.
 * The log2 histograms hold finished waits only.
 *
 * The system-call source keeps a wait in progress in the task's
 * `exact_starts` storage (read through a pidfd: one per tracked process,
 * at each publication, 4 a second, while a window is open), the
 * watchpoint source in the `exact_watch` map.
 *
 * Single-threaded (the daemon's loop).
 */
#include "exact_open.h"

#include "map_copy.h"
#include "exact_waits.h"
#include "pg_tracer.h"

#include <bpf/bpf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * push
 *		Append a wait; false when memory is short (the wait is left out).
 */
static int
push(exact_open_set *set, uint32_t pid, uint32_t pm, uint32_t event, uint64_t qid,
	 uint64_t start_ns)
{
	exact_open_wait *w;

	if (set->n == set->cap)
	{
		size_t		cap = set->cap ? set->cap * 2 : 64;
		exact_open_wait *grown = realloc(set->w, cap * sizeof(*grown));

		if (grown == NULL)
			return 0;
		set->w = grown;
		set->cap = cap;
	}
	w = &set->w[set->n++];
	memset(w, 0, sizeof(*w));
	w->pid = pid;
	w->pm = pm;
	w->event = event;
	w->qid = qid;
	w->start_ns = start_ns;
	return 1;
}

/*
 * copy_by_pid
 *		A copy of a map keyed by pid (at most PGT_BPF_MAX_TRACKED entries of
 *		vsize bytes): *pids and *vals malloc'd, the caller frees both (also
 *		when 0 is returned).
 */
static size_t
copy_by_pid(int fd, size_t vsize, uint32_t **pids, void **vals)
{
	*pids = malloc(PGT_BPF_MAX_TRACKED * sizeof(**pids));
	*vals = malloc(PGT_BPF_MAX_TRACKED * vsize);
	if (*pids == NULL || *vals == NULL)
		return 0;
	return map_copy(fd, sizeof(**pids), vsize, *pids, *vals, PGT_BPF_MAX_TRACKED);
}

/*
 * collect_starts
 *		System-call source: each tracked process's task storage, through a
 *		pidfd (its main thread's: backends are single-threaded).  A start
 *		of an older generation is stale (a window that ended), one without
 *		a postmaster was never a timed wait.
 */
static void
collect_starts(const exact_open_src *src, exact_open_set *set)
{
	uint32_t   *pids;
	struct pgt_tracked *tr;
	size_t		n = copy_by_pid(src->tracked_fd, sizeof(*tr), &pids, (void **) &tr);
	size_t		i;

	for (i = 0; i < n; i++)
	{
		struct pgt_exact_start st;
		int			pidfd;
		int			rc;

		if (tr[i].flags & PGT_TRACKED_POSTMASTER)
			continue;			/* reports no wait events */
		pidfd = (int) syscall(SYS_pidfd_open, (pid_t) pids[i], 0);
		if (pidfd < 0)
			continue;			/* exited meanwhile */
		rc = bpf_map_lookup_elem(src->starts_fd, &pidfd, &st);
		close(pidfd);
		if (rc == 0 && st.ts != 0 && st.gen == src->gen && st.pm != 0 &&
			!push(set, pids[i], st.pm, st.event, st.qid, st.ts))
			break;
	}
	free(pids);
	free(tr);
}

/*
 * collect_watch
 *		Watchpoint source: the breakpoints' states, each with the event
 *		the process has now and since when.
 */
static void
collect_watch(const exact_open_src *src, exact_open_set *set)
{
	uint32_t   *pids;
	struct pgt_exact_watch *ws;
	size_t		n = copy_by_pid(src->watch_fd, sizeof(*ws), &pids, (void **) &ws);
	size_t		i;

	for (i = 0; i < n; i++)
	{
		struct pgt_tracked t;

		if (ws[i].event == 0 || ws[i].gen != src->gen ||
			bpf_map_lookup_elem(src->tracked_fd, &pids[i], &t) != 0)
			continue;
		if (!push(set, pids[i], t.postmaster, ws[i].event, ws[i].queryid, ws[i].since_ns))
			break;
	}
	free(pids);
	free(ws);
}

static int
cmp_wait(const void *a, const void *b)
{
	const exact_open_wait *x = a;
	const exact_open_wait *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->event != y->event)
		return x->event < y->event ? -1 : 1;
	return (x->qid > y->qid) - (x->qid < y->qid);
}

/*
 * exact_open_collect
 *		The waits in progress now, sorted for exact_open_find.
 */
void
exact_open_collect(const exact_open_src *src, exact_open_set *set)
{
	set->n = 0;
	if (src->tracked_fd < 0)
		return;
	if (src->watchpoints)
		collect_watch(src, set);
	else
		collect_starts(src, set);
	qsort(set->w, set->n, sizeof(*set->w), cmp_wait);
}

/*
 * exact_open_find
 *		The wait in progress of (pid, event, qid), NULL if none.
 */
exact_open_wait *
exact_open_find(exact_open_set *set, uint32_t pid, uint32_t event, uint64_t qid)
{
	exact_open_wait key;

	if (set->n == 0)
		return NULL;
	memset(&key, 0, sizeof(key));
	key.pid = pid;
	key.event = event;
	key.qid = qid;
	return bsearch(&key, set->w, set->n, sizeof(*set->w), cmp_wait);
}

/*
 * exact_open_fold
 *		Add each wait in progress, as one wait of the time it has run until
 *		now_ns, to its (pid, query id, event) aggregate.  Only while nothing
 *		else writes the map (the programs detached).  Returns how many
 *		could not be added (the map full).
 */
int
exact_open_fold(int waits_fd, const exact_open_set *set, uint64_t now_ns)
{
	int			lost = 0;
	size_t		i;

	for (i = 0; i < set->n; i++)
	{
		const exact_open_wait *w = &set->w[i];
		struct pgt_exact_key k;
		struct pgt_exact_val v;
		uint64_t	part = now_ns > w->start_ns ? now_ns - w->start_ns : 0;
		int			flags = BPF_EXIST;

		memset(&k, 0, sizeof(k));
		k.pid = w->pid;
		k.event = w->event;
		k.queryid = w->qid;
		if (bpf_map_lookup_elem(waits_fd, &k, &v) != 0)
		{
			memset(&v, 0, sizeof(v));
			v.pm = w->pm;
			flags = BPF_NOEXIST;
		}
		v.count++;
		v.total_ns += part;
		if (part > v.max_ns)
			v.max_ns = part;
		if (bpf_map_update_elem(waits_fd, &k, &v, flags) != 0)
			lost++;
	}
	return lost;
}

void
exact_open_free(exact_open_set *set)
{
	free(set->w);
	memset(set, 0, sizeof(*set));
}
