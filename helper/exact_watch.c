/*
 * helper/exact_watch.c
 *	  The hardware-watchpoint source of exact wait timing: one write
 *	  breakpoint (perf_event_open PERF_TYPE_BREAKPOINT, HW_BREAKPOINT_W,
 *	  4 bytes) per tracked backend on its PGPROC.wait_event_info, with the
 *	  perf_event program pgt_exact_watch_hit (bpf/exact_waits.bpf.c)
 *	  attached; the self-test that says whether breakpoints fire here; the
 *	  choice of source (--exact-source auto|syscall|watchpoint).
 *
 * Races.  A breakpoint is created disabled; the process's `exact_watch`
 * state (current value, since = now, query id) is written BEFORE the
 * breakpoint is enabled, so the first hit already has an interval to close.
 * A write between our read and the enable would leave a stale value: after
 * enabling we read again and, if no hit was counted yet and the value
 * differs, seed again.  Backends forked later get their breakpoint when
 * exact_watch_sync() sees their `pgt_qid` slot (the cluster refresh maps
 * them within one publication interval, 250 ms); waits before that are
 * not seen.  Processes that exited, or whose pid a later process holds
 * (their `tracked` entry's attach time changed), lose their breakpoint and
 * state.  Only a tracked process of a served cluster, running as the
 * cluster's owner (procfs_plain_process), gets one.
 *
 * Limits: x86 has 4 debug registers per task; a debugger or another tool
 * holding them makes creation fail (ENOSPC), as do addresses the kernel
 * refuses (EINVAL) and missing rights (EACCES/EPERM): each failure is
 * counted, the last reason kept for the status row, and the process is not
 * retried.
 *
 * Single-threaded (the daemon's loop).
 */
#include "exact_watch.h"
#include "log.h"
#include "pm_owner.h"
#include "procfs.h"
#include "exact_waits.h"
#include "pg_tracer.h"
#include "pgt_trace.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define WATCH_MAX	4096		/* processes watched at once */

typedef struct watch_ent
{
	uint32_t	pid;			/* tgid, helper's namespace */
	uint64_t	addr;			/* watched address */
	uint64_t	tracked_ns;		/* its `tracked` entry's attached_ns: the process */
	struct bpf_link *link;		/* NULL: creation failed, not retried */
} watch_ent;

struct exact_watch
{
	struct bpf_program *prog;
	int			state_fd;		/* `exact_watch` */
	int			qid_fd;			/* `pgt_qid` */
	int			tracked_fd;		/* `tracked`: each process's postmaster */
	watch_ent  *ents;
	size_t		n;
	unsigned	failed;
	unsigned	over_limit;		/* at the last sync: mapped, not watched (WATCH_MAX) */
	char		last_error[96];
};

static int	source_req = EXACT_SOURCE_SYSCALL;

/*
 * exact_configure_source
 *		--exact-source auto|syscall|watchpoint.
 */
int
exact_configure_source(const char *s, char *err, size_t errlen)
{
	if (strcmp(s, "auto") == 0)
		source_req = EXACT_SOURCE_AUTO;
	else if (strcmp(s, "syscall") == 0)
		source_req = EXACT_SOURCE_SYSCALL;
	else if (strcmp(s, "watchpoint") == 0)
		source_req = EXACT_SOURCE_WATCHPOINT;
	else
	{
		snprintf(err, errlen, "%s: use auto, syscall or watchpoint", s);
		return -1;
	}
	return 0;
}

int
exact_source_requested(void)
{
	return source_req;
}

const char *
exact_source_name(int source)
{
	switch (source)
	{
		case EXACT_SOURCE_AUTO:
			return "auto";
		case EXACT_SOURCE_WATCHPOINT:
			return "watchpoint";
		default:
			return "syscall";
	}
}

/*
 * open_bp
 *		A disabled 4-byte write breakpoint on addr in process pid (0: the
 *		calling process), user-space writes only; fd or -errno (-EPERM: pid
 *		is not a plain process of owner, procfs_plain_process).
 *
 * The breakpoint goes away when the process execs (remove_on_exec, from
 * Linux 5.13; older kernels refuse the flag and get the breakpoint without
 * it, where the BPF program's `tracked` test, which an exec fails, stands
 * in), and pid is checked after the open: a process that ran a set-uid
 * program before it is refused, one that runs it after loses the
 * breakpoint.
 */
static int
open_bp(pid_t pid, uid_t owner, uint64_t addr)
{
	struct perf_event_attr attr;
	int			fd;

	memset(&attr, 0, sizeof(attr));
	attr.type = PERF_TYPE_BREAKPOINT;
	attr.size = sizeof(attr);
	attr.bp_type = HW_BREAKPOINT_W;
	attr.bp_addr = addr;
	attr.bp_len = HW_BREAKPOINT_LEN_4;
	attr.sample_period = 1;
	attr.disabled = 1;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	attr.remove_on_exec = 1;
	fd = (int) syscall(SYS_perf_event_open, &attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0 && errno == EINVAL)
	{
		attr.remove_on_exec = 0;
		fd = (int) syscall(SYS_perf_event_open, &attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	}
	if (fd < 0)
		return -errno;
	if (pid != 0 && !procfs_plain_process(pid, owner))
	{
		close(fd);
		return -EPERM;
	}
	return fd;
}

static volatile sig_atomic_t selftest_traps;

/*
 * selftest_trap
 *		SIGTRAP during the self-test: a guest that lost the trap's DR6 (the
 *		kernel cannot tell it was our breakpoint, README "Debug traps no
 *		breakpoint claims").  Counted; the store is done (a data
 *		breakpoint traps after it), so returning goes on.
 */
static void
selftest_trap(int sig)
{
	(void) sig;
	selftest_traps++;
}

/*
 * exact_watch_selftest
 *		Does a write breakpoint on one of our own variables fire?  1 when
 *		it does; reason says what was seen.  x86 only: there a watchpoint
 *		reports after the store, so the hit program reads the new wait
 *		event.  On arm64 it reports before the store (the program would read
 *		the old one, every wait timed as the run after it), and kernels
 *		before 6.6 do not step over the store when a BPF program handles
 *		the breakpoint (the backend would trap on it forever).
 */
int
exact_watch_selftest(char *reason, size_t len)
{
	static volatile uint32_t target;
	struct sigaction trap = {.sa_handler = selftest_trap};
	struct sigaction old_trap;
	sigset_t	unblock;
	sigset_t	old_mask;
	uint64_t	hits = 0;
	int			fd;
	int			i;

#if !defined(__x86_64__)
	snprintf(reason, len, "watchpoints unavailable: x86-64 only (elsewhere a watchpoint "
			 "reports before the store, with the old wait event)");
	return 0;
#endif
	fd = open_bp(0, 0, (uint64_t) (uintptr_t) &target);
	if (fd < 0)
	{
		snprintf(reason, len, "watchpoints unavailable: perf_event_open(BREAKPOINT): %s",
				 strerror(-fd));
		return 0;
	}
	/*
	 * A handler, and SIGTRAP not blocked: a forced SIGTRAP that is blocked
	 * or ignored gets the default action (the helper would end)
	 */
	selftest_traps = 0;
	sigemptyset(&trap.sa_mask);
	sigemptyset(&unblock);
	sigaddset(&unblock, SIGTRAP);
	if (sigaction(SIGTRAP, &trap, &old_trap) < 0)
	{
		snprintf(reason, len, "watchpoints unavailable: sigaction(SIGTRAP): %s",
				 strerror(errno));
		close(fd);
		return 0;
	}
	(void) sigprocmask(SIG_UNBLOCK, &unblock, &old_mask);
	(void) ioctl(fd, PERF_EVENT_IOC_RESET, 0);
	(void) ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	for (i = 0; i < 100; i++)
		target = (uint32_t) i;
	(void) ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	(void) sigprocmask(SIG_SETMASK, &old_mask, NULL);
	(void) sigaction(SIGTRAP, &old_trap, NULL);
	if (read(fd, &hits, sizeof(hits)) != (ssize_t) sizeof(hits))
		hits = 0;
	close(fd);
	if (selftest_traps > 0)
	{
		snprintf(reason, len, "watchpoints unavailable: %d of 100 writes raised SIGTRAP "
				 "(a guest that loses the trap's DR6: every backend would get them)",
				 (int) selftest_traps);
		return 0;
	}
	if (hits == 0)
	{
		snprintf(reason, len,
				 "watchpoints unavailable: breakpoint opened but never fired (0/100 writes)");
		return 0;
	}
	snprintf(reason, len, "watchpoints fire (%llu/100 writes)", (unsigned long long) hits);
	return 1;
}

/*
 * exact_mono_ns
 *		CLOCK_MONOTONIC in nanoseconds, the clock of bpf_ktime_get_ns().
 */
uint64_t
exact_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

/*
 * seed_state
 *		The process's current value as the open interval, from now.
 */
static int
seed_state(exact_watch *w, uint32_t pid, uid_t owner, const struct pgt_qid_slot *slot,
		   uint32_t gen)
{
	struct pgt_exact_watch st;
	int32_t		procpid = 0;
	procfs_span spans[3];

	memset(&st, 0, sizeof(st));
	st.wait_addr = slot->wait_addr;
	st.gen = gen;
	/* one gather, one plain-process check, for the three */
	spans[0] = (procfs_span) {.addr = slot->wait_addr, .buf = &st.event, .len = sizeof(st.event)};
	spans[1] = (procfs_span) {.addr = slot->procpid_addr, .buf = &procpid, .len = sizeof(procpid)};
	spans[2] = (procfs_span) {.addr = slot->queryid_addr, .buf = &st.queryid,
		.len = sizeof(st.queryid)};
	if (procfs_mem_gather(pid, owner, spans, 3) <= 0 || !spans[0].ok)
		return -1;
	if (st.event == 0 || !spans[1].ok || !spans[2].ok || (uint32_t) procpid != slot->nspid)
		st.queryid = 0;			/* no wait, or a status entry that is not the process's */
	st.since_ns = exact_mono_ns();
	return bpf_map_update_elem(w->state_fd, &pid, &st, BPF_ANY);
}

exact_watch *
exact_watch_new(struct bpf_program *prog, int state_fd, int qid_fd, int tracked_fd)
{
	exact_watch *w = calloc(1, sizeof(*w));

	if (w == NULL)
		return NULL;
	w->ents = calloc(WATCH_MAX, sizeof(*w->ents));
	if (w->ents == NULL)
	{
		free(w);
		return NULL;
	}
	w->prog = prog;
	w->state_fd = state_fd;
	w->qid_fd = qid_fd;
	w->tracked_fd = tracked_fd;
	return w;
}

static watch_ent *
find_ent(exact_watch *w, uint32_t pid)
{
	size_t		i;

	for (i = 0; i < w->n; i++)
		if (w->ents[i].pid == pid)
			return &w->ents[i];
	return NULL;
}

/*
 * tracked_owner
 *		Is pid tracked, and of a served cluster?  Then its `tracked` entry's
 *		attached_ns (which tells this process from a later one with its pid)
 *		into *tracked_ns and its cluster's owner into *owner.
 */
static bool
tracked_owner(const exact_watch *w, uint32_t pid, uint64_t *tracked_ns, uid_t *owner)
{
	struct pgt_tracked t;

	if (bpf_map_lookup_elem(w->tracked_fd, &pid, &t) != 0 ||
		!pm_owner_get(t.postmaster, owner))
		return false;
	*tracked_ns = t.attached_ns;
	return true;
}

/*
 * add_watch
 *		Breakpoint for pid: open disabled, seed, enable (attach), re-check.
 *		Only for a tracked process of a served cluster, and only when it
 *		runs as the cluster's owner (open_bp).
 */
static void
add_watch(exact_watch *w, uint32_t pid, const struct pgt_qid_slot *slot, uint32_t gen)
{
	watch_ent  *e = &w->ents[w->n];
	struct pgt_exact_watch st;
	uint32_t	now_val = 0;
	uint64_t	tracked_ns;
	uid_t		owner;
	int			fd;
	int			err;

	if (!tracked_owner(w, pid, &tracked_ns, &owner))
		return;					/* exited, or execed: not a backend any more */
	memset(e, 0, sizeof(*e));
	e->pid = pid;
	e->addr = slot->wait_addr;
	e->tracked_ns = tracked_ns;
	w->n++;
	fd = open_bp((pid_t) pid, owner, slot->wait_addr);
	if (fd < 0)
	{
		if (fd == -ESRCH)
		{
			w->n--;				/* exited meanwhile: nothing to report */
			return;
		}
		w->failed++;
		snprintf(w->last_error, sizeof(w->last_error), "pid %u: %s",
				 pid, strerror(-fd));
		log_warn("exact: no watchpoint on pid %u: %s", pid, strerror(-fd));
		return;
	}
	if (seed_state(w, pid, owner, slot, gen) != 0)
	{
		close(fd);
		w->n--;					/* gone (or unreadable): the next sync retries */
		return;
	}
	e->link = bpf_program__attach_perf_event(w->prog, fd);	/* enables it */
	if (e->link == NULL)
	{
		err = errno;
		close(fd);
		(void) bpf_map_delete_elem(w->state_fd, &pid);
		w->failed++;
		snprintf(w->last_error, sizeof(w->last_error), "pid %u: attach: %s", pid,
				 strerror(err));
		log_warn("exact: cannot attach the watchpoint program to pid %u: %s", pid,
				 strerror(err));
		return;
	}
	log_debug("exact: pid %u: watchpoint on 0x%llx", pid, (unsigned long long) slot->wait_addr);
	/* a write between the seed and the enable was not seen: seed again */
	if (procfs_mem_read(pid, owner, slot->wait_addr, &now_val, sizeof(now_val)) == 0 &&
		bpf_map_lookup_elem(w->state_fd, &pid, &st) == 0 && st.hits == 0 &&
		st.event != now_val)
		(void) seed_state(w, pid, owner, slot, gen);
}

/*
 * drop_at
 *		Close entry i (breakpoint and state) and remove it from the list.
 */
static void
drop_at(exact_watch *w, size_t i)
{
	watch_ent  *e = &w->ents[i];

	bpf_link__destroy(e->link);	/* disables and closes the perf fd */
	(void) bpf_map_delete_elem(w->state_fd, &e->pid);
	w->ents[i] = w->ents[w->n - 1];
	w->n--;
}

/*
 * exact_watch_sync
 *		Breakpoints for the processes `pgt_qid` maps with a wait_event_info
 *		address and that have none yet (at most WATCH_MAX: those past it are
 *		counted, exact_watch_over_limit); close those of processes that
 *		left it or exited.  gen: exact_gen of the seeds.  Returns the
 *		number watched.
 */
size_t
exact_watch_sync(exact_watch *w, uint32_t gen)
{
	uint32_t	key;
	uint32_t	next;
	uint32_t   *prev = NULL;
	unsigned	over = 0;
	size_t		i;

	for (i = 0; i < w->n;)
	{
		struct pgt_qid_slot slot;
		watch_ent  *e = &w->ents[i];
		uint64_t	tracked_ns;
		uid_t		owner;

		/*
		 * A live process keeps its PGPROC: only its exit, its pid now
		 * another process's (tracked since another time, or not at all: a
		 * new backend on the same PGPROC must get a breakpoint of its own),
		 * or a different address ends the watch.  A slot briefly without an
		 * address (refresh in progress) does not.
		 */
		if ((kill((pid_t) e->pid, 0) != 0 && errno == ESRCH) ||
			!tracked_owner(w, e->pid, &tracked_ns, &owner) || tracked_ns != e->tracked_ns ||
			(bpf_map_lookup_elem(w->qid_fd, &e->pid, &slot) == 0 &&
			 slot.wait_addr != 0 && slot.wait_addr != e->addr))
		{
			log_debug("exact: pid %u: watchpoint closed", e->pid);
			drop_at(w, i);
		}
		else
			i++;
	}
	while (bpf_map_get_next_key(w->qid_fd, prev, &next) == 0)
	{
		struct pgt_qid_slot slot;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(w->qid_fd, &key, &slot) != 0 || slot.wait_addr == 0 ||
			(slot.flags & PGT_QID_INDIRECT) || find_ent(w, key) != NULL)
			continue;
		if (w->n >= WATCH_MAX)
			over++;				/* counted for the status row, tried at the next sync */
		else
			add_watch(w, key, &slot, gen);
	}
	w->over_limit = over;
	return exact_watch_count(w);
}

/*
 * exact_watch_clear
 *		Close every breakpoint and forget every state (end of a window).
 */
void
exact_watch_clear(exact_watch *w)
{
	if (w == NULL)
		return;
	while (w->n > 0)
		drop_at(w, w->n - 1);
}

size_t
exact_watch_count(const exact_watch *w)
{
	size_t		i;
	size_t		n = 0;

	for (i = 0; w != NULL && i < w->n; i++)
		if (w->ents[i].link != NULL)
			n++;
	return n;
}

/*
 * exact_watch_over_limit
 *		Processes the last sync found to watch and could not: WATCH_MAX
 *		were watched already.
 */
unsigned
exact_watch_over_limit(const exact_watch *w)
{
	return w == NULL ? 0 : w->over_limit;
}

/*
 * exact_watch_failures
 *		Creation failures so far; the last one's text in buf.
 */
unsigned
exact_watch_failures(const exact_watch *w, char *buf, size_t len)
{
	if (w == NULL)
		return 0;
	snprintf(buf, len, "%s", w->last_error);
	return w->failed;
}

void
exact_watch_free(exact_watch *w)
{
	if (w == NULL)
		return;
	exact_watch_clear(w);
	free(w->ents);
	free(w);
}
