/*
 * helper/bpf_probes.c
 *	  Lifecycle of the daemon's BPF skeleton (open -> load -> attach, one
 *	  instance for all clusters), the maps API the rest of the helper uses,
 *	  and the available/unavailable state of each probe set with the real
 *	  reason from libbpf.
 *
 * Failure is never fatal: when the object does not load or a program does
 * not attach, the probe set says so (with libbpf's error string) and the
 * daemon keeps publishing segments without it.  The environment variable
 * PGT_HELPER_DISABLE_BPF forces that path (for tests).
 */
#include "bpf_probes.h"

#include "log.h"
#include "pg_tracer.skel.h"
#include "pgt_segment.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* see bpf_probes_libbpf_quiet */
static int	libbpf_quiet;

/*
 * libbpf_print
 *		Route libbpf's messages into our log (its debug chatter only at
 *		--log-level debug; its warnings too while libbpf_quiet is set).  A
 *		verifier log is one message, and its end says why a program was
 *		refused: a long one is printed whole, a log line per line.
 */
static int
libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char		buf[1024];
	char	   *whole = NULL;
	char	   *line;
	char	   *next;
	enum log_level ours;
	va_list		again;
	int			n;

	ours = level == LIBBPF_WARN && !libbpf_quiet ? LOG_LEVEL_WARN : LOG_LEVEL_DEBUG;
	if (ours > log_get_level())
		return 0;
	va_copy(again, ap);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	if (n >= (int) sizeof(buf) && (whole = malloc((size_t) n + 1)) != NULL)
		(void) vsnprintf(whole, (size_t) n + 1, fmt, again);
	va_end(again);
	if (n < 0)
		return 0;
	for (line = whole ? whole : buf; line != NULL && *line != '\0'; line = next)
	{
		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		log_msg(ours, "%s", line);
	}
	free(whole);
	return n;
}

/*
 * bpf_probes_libbpf_quiet
 *		While `on`, libbpf's warnings are logged at debug level: for an
 *		attempt that is known to fail on this kernel (a kprobe without the
 *		kprobe PMU), whose outcome the probe set's status reports with its
 *		reason, so the same failure is not also printed a dozen times.
 */
void
bpf_probes_libbpf_quiet(int on)
{
	libbpf_quiet = on;
}

/*
 * set_status
 *		Fill a probe_status.
 */
static void
set_status(probe_status *s, uint32_t state, const char *mechanism,
		   const char *fmt, ...)
{
	va_list		ap;

	s->state = state;
	snprintf(s->mechanism, sizeof(s->mechanism), "%s", mechanism);
	va_start(ap, fmt);
	vsnprintf(s->reason, sizeof(s->reason), fmt, ap);
	va_end(ap);
}

/*
 * errstr
 *		libbpf's string for a negative error code.
 */
static const char *
errstr(int err, char *buf, size_t buflen)
{
	if (libbpf_strerror(err, buf, buflen) != 0)
		snprintf(buf, buflen, "%s", strerror(-err));
	return buf;
}

/*
 * open_and_load
 *		Open and load the skeleton, with the hook chains' dispatchers when
 *		`chains` (else sys_enter without its tail calls and no other
 *		dispatcher).  Fills p->chain.  Returns 0 or a negative error.
 */
static int
open_and_load(bpf_probes *p, int chains, uint32_t exec_miss_every)
{
	struct pg_tracer_bpf *skel = pg_tracer_bpf__open();
	int			err;

	if (skel == NULL)
		return errno ? -errno : -EINVAL;
	skel->rodata->pgt_dispatch = (uint8_t) chains;
	skel->rodata->keep_exit_titles = p->exit_titles_max > 0;
	skel->rodata->exec_miss_every = exec_miss_every;
	skel->rodata->note_execs = p->exec_notes != 0;
	err = bpf_map__set_max_entries(skel->maps.exit_titles,
								   p->exit_titles_max > 0 ? p->exit_titles_max : 1);
	if (err != 0)
	{
		pg_tracer_bpf__destroy(skel);
		return err;
	}
	(void) bpf_program__set_autoload(skel->progs.pgt_sys_exit, chains);
	(void) bpf_program__set_autoload(skel->progs.pgt_sched_switch, chains);
	err = pg_tracer_bpf__load(skel);
	if (err != 0)
	{
		pg_tracer_bpf__destroy(skel);
		return err;
	}
	p->skel = skel;
	p->chain_ok = chains;
	p->exit_titles_fd = p->exit_titles_max > 0 ? bpf_map__fd(skel->maps.exit_titles) : -1;
	p->chain.map_fd[PGT_CHAIN_ENTER] = bpf_map__fd(skel->maps.pgt_chain_enter);
	p->chain.map_fd[PGT_CHAIN_EXIT] = bpf_map__fd(skel->maps.pgt_chain_exit);
	p->chain.map_fd[PGT_CHAIN_SWITCH] = bpf_map__fd(skel->maps.pgt_chain_switch);
	p->chain.dispatcher[PGT_CHAIN_ENTER] = skel->progs.pgt_sys_enter;
	p->chain.dispatcher[PGT_CHAIN_EXIT] = skel->progs.pgt_sys_exit;
	p->chain.dispatcher[PGT_CHAIN_SWITCH] = skel->progs.pgt_sched_switch;
	p->chain.switch_out_only = skel->bss != NULL ? &skel->bss->pgt_switch_out_only : NULL;
	return 0;
}

/*
 * attach_one
 *		Attach one program; returns 0 or a negative error code.
 */
static int
attach_one(struct bpf_program *prog, struct bpf_link **link)
{
	struct bpf_link *l = bpf_program__attach(prog);

	if (l == NULL)
		return errno ? -errno : -EINVAL;
	*link = l;
	return 0;
}

/*
 * attach_exec_notes
 *		Attach pgt_process_exec, which takes a tracked process that execs
 *		out of the pid filter (always) and notes the execs of server binaries
 *		(when the caller asked for exec notes: else, or when it does not
 *		attach, p->exec_reason says why).
 */
static void
attach_exec_notes(bpf_probes *p)
{
	char		ebuf[128];
	int			err;

	err = attach_one(p->skel->progs.pgt_process_exec, &p->skel->links.pgt_process_exec);
	if (err != 0)
	{
		snprintf(p->exec_reason, sizeof(p->exec_reason),
				 "sched_process_exec did not attach: %s", errstr(err, ebuf, sizeof(ebuf)));
		log_warn("BPF: sched_process_exec did not attach (%s): a tracked process that "
				 "execs stays in the pid filter until it exits (the helper's reads of its "
				 "memory are still checked)", ebuf);
		return;
	}
	if (!p->exec_notes)
	{
		snprintf(p->exec_reason, sizeof(p->exec_reason), "not asked for");
		return;
	}
	p->execs_fd = bpf_map__fd(p->skel->maps.pg_execs);
}

/*
 * mark_unusable
 *		Both foundation probes unavailable: "process" (on process_tp) with
 *		process_reason, "syscall-count" with syscall_reason.
 */
static void
mark_unusable(bpf_probes *p, const char *process_tp, const char *process_reason,
			  const char *syscall_reason)
{
	set_status(&p->process, PGT_PROBE_UNAVAILABLE, process_tp, "%s", process_reason);
	set_status(&p->syscall_count, PGT_PROBE_UNAVAILABLE, "tp_btf/sys_enter", "%s",
			   syscall_reason);
}

/*
 * load_foundation
 *		Open and load the skeleton, with the hook chains or, should that
 *		fail, without.  Returns 0, or marks both probes unusable and returns
 *		the error.
 */
static int
load_foundation(bpf_probes *p, uint32_t exec_miss_every)
{
	char		ebuf[128];
	char		reason[160];
	int			err;

	err = open_and_load(p, 1, exec_miss_every);
	if (err != 0)
	{
		log_warn("BPF: load with the hook chains failed (%s): retrying without",
				 errstr(err, ebuf, sizeof(ebuf)));
		err = open_and_load(p, 0, exec_miss_every);
	}
	if (err == 0)
		return 0;
	snprintf(reason, sizeof(reason), "BPF load failed: %s", errstr(err, ebuf, sizeof(ebuf)));
	mark_unusable(p, "tp_btf/sched_process_fork", reason, reason);
	log_error("BPF: load failed: %s (probe sets unavailable)", ebuf);
	return err;
}

/*
 * open_maps
 *		The foundation's maps and the buffers their copies are read into.
 *		Returns 0, or -1 (probes marked unusable, everything stopped) when
 *		out of memory.
 */
static int
open_maps(bpf_probes *p)
{
	p->postmasters_fd = bpf_map__fd(p->skel->maps.postmasters);
	p->tracked_fd = bpf_map__fd(p->skel->maps.tracked);
	p->keys = calloc(PGT_BPF_MAX_TRACKED, sizeof(*p->keys));
	p->values = calloc(PGT_BPF_MAX_TRACKED, sizeof(*p->values));
	p->rows = calloc(PGT_BPF_MAX_TRACKED, sizeof(*p->rows));
	if (p->keys == NULL || p->values == NULL || p->rows == NULL)
	{
		log_error("BPF: out of memory for map buffers");
		mark_unusable(p, "tp_btf/sched_process_fork", "out of memory", "out of memory");
		bpf_probes_stop(p);
		return -1;
	}
	p->maps_ok = 1;
	return 0;
}

/*
 * attach_process_probes
 *		"process": fork and exit, both or neither.
 */
static void
attach_process_probes(bpf_probes *p)
{
	char		ebuf[128];
	int			err;

	err = attach_one(p->skel->progs.pgt_process_fork, &p->skel->links.pgt_process_fork);
	if (err == 0)
		err = attach_one(p->skel->progs.pgt_process_exit, &p->skel->links.pgt_process_exit);
	if (err == 0)
	{
		set_status(&p->process, PGT_PROBE_AVAILABLE, "tp_btf/sched_process_fork+exit",
				   "processes enter at fork");
		return;
	}
	/* neither: a fork hook without its exit hook would track the dead */
	if (p->skel->links.pgt_process_fork != NULL)
	{
		bpf_link__destroy(p->skel->links.pgt_process_fork);
		p->skel->links.pgt_process_fork = NULL;
	}
	set_status(&p->process, PGT_PROBE_UNAVAILABLE, "tp_btf/sched_process_fork+exit",
			   "attach failed: %s (backends found by /proc scan only)",
			   errstr(err, ebuf, sizeof(ebuf)));
	log_warn("BPF: process probes did not attach: %s", ebuf);
}

/*
 * attach_syscall_count
 *		"syscall-count": the sys_enter dispatcher, the head of its chain.
 */
static void
attach_syscall_count(bpf_probes *p)
{
	char		ebuf[128];
	int			err;

	err = attach_one(p->skel->progs.pgt_sys_enter, &p->skel->links.pgt_sys_enter);
	if (err == 0)
	{
		set_status(&p->syscall_count, PGT_PROBE_AVAILABLE, "tp_btf/sys_enter",
				   "system calls counted per process");
		p->chain.link[PGT_CHAIN_ENTER] = p->skel->links.pgt_sys_enter;
		return;
	}
	set_status(&p->syscall_count, PGT_PROBE_UNAVAILABLE, "tp_btf/sys_enter",
			   "attach failed: %s", errstr(err, ebuf, sizeof(ebuf)));
	log_warn("BPF: sys_enter did not attach: %s", ebuf);
}

/*
 * bpf_probes_start
 *		Open, load and attach the skeleton, keeping the titles of up to
 *		exit_titles processes as they exit (0: none; see
 *		bpf_probes_exit_title), and with exec_notes noting the execs of
 *		postgres binaries (bpf_probes_drain_execs; exec_miss_every: see
 *		--miss-events).  Always fills the probe set states; returns 0 when
 *		the maps are usable, -1 otherwise.
 */
int
bpf_probes_start(bpf_probes *p, uint32_t exit_titles, int exec_notes,
				 uint32_t exec_miss_every)
{
	memset(p, 0, sizeof(*p));
	p->postmasters_fd = -1;
	p->tracked_fd = -1;
	p->exit_titles_fd = -1;
	p->execs_fd = -1;
	p->exit_titles_max = exit_titles;
	p->exec_notes = exec_notes;
	snprintf(p->exec_reason, sizeof(p->exec_reason), "BPF not loaded");
	libbpf_set_print(libbpf_print);

	/* for tests of the degraded path: behave as if BPF were missing */
	if (getenv("PGT_HELPER_DISABLE_BPF") != NULL)
	{
		mark_unusable(p, "tp_btf/sched_process_fork+exit",
					  "BPF disabled by PGT_HELPER_DISABLE_BPF (backends found by /proc scan)",
					  "BPF disabled by PGT_HELPER_DISABLE_BPF");
		log_warn("BPF disabled by PGT_HELPER_DISABLE_BPF");
		return -1;
	}
	if (load_foundation(p, exec_miss_every) != 0 || open_maps(p) != 0)
		return -1;
	attach_process_probes(p);
	attach_syscall_count(p);
	attach_exec_notes(p);
	log_info("BPF: loaded; process %s, syscall-count %s, hook chains %s",
			 pgt_probe_state_name(p->process.state),
			 pgt_probe_state_name(p->syscall_count.state),
			 bpf_probes_chain(p) ? "on" : "off (programs attached one by one)");
	return 0;
}

/*
 * bpf_probes_chain
 *		The hook chains the probe sets join, NULL when they cannot (the
 *		kernel refused the dispatchers' tail calls, or sys_enter's
 *		dispatcher is not attached): the sets then attach their programs
 *		on their own.
 */
hook_chain *
bpf_probes_chain(bpf_probes *p)
{
	return p->chain_ok && p->chain.link[PGT_CHAIN_ENTER] != NULL ? &p->chain : NULL;
}

/*
 * bpf_probes_stop
 *		Detach and unload everything (links go with the skeleton).
 */
void
bpf_probes_stop(bpf_probes *p)
{
	int			h;

	/* dispatchers a chain attached (sys_enter's goes with the skeleton) */
	for (h = 0; h < PGT_CHAIN_NHOOKS; h++)
		if (p->chain.owned[h])
			bpf_link__destroy(p->chain.link[h]);
	memset(&p->chain, 0, sizeof(p->chain));
	p->chain_ok = 0;
	if (p->skel != NULL)
		pg_tracer_bpf__destroy(p->skel);
	p->skel = NULL;
	p->maps_ok = 0;
	p->postmasters_fd = -1;
	p->tracked_fd = -1;
	p->exit_titles_fd = -1;
	p->execs_fd = -1;
	free(p->keys);
	free(p->values);
	free(p->rows);
	p->keys = NULL;
	p->values = NULL;
	p->rows = NULL;
}

/*
 * bpf_probes_exit_title
 *		The title pid had when it exited, if it was tracked and its title
 *		was kept: its bytes (NUL-padded) into buf.  Returns how many, or -1
 *		when there is none.
 */
int
bpf_probes_exit_title(bpf_probes *p, uint32_t pid, char *buf, size_t buflen)
{
	struct pgt_exit_title t;

	if (p->exit_titles_fd < 0 || buflen < sizeof(t.title) ||
		bpf_map_lookup_elem(p->exit_titles_fd, &pid, &t) != 0)
		return -1;
	memcpy(buf, t.title, sizeof(t.title));
	return (int) sizeof(t.title);
}

/*
 * bpf_probes_drain_execs
 *		The tgids pgt_process_exec noted since the last call (room for
 *		PGT_BPF_MAX_EXECS in pids), taken out of `pg_execs`.  Returns how
 *		many, or -1 when the notes cannot be trusted to be complete: none
 *		are taken (no exec notes: p->exec_reason says why), some were lost
 *		since the last call (the map was full), or the map failed.  The
 *		caller scans /proc then.  The lost count is read before the map, so
 *		a note lost meanwhile shows at the next call.
 */
int
bpf_probes_drain_execs(bpf_probes *p, uint32_t *pids)
{
	uint64_t	lost_now;
	uint32_t	key = 0;
	int			n = 0;
	int			i;
	int			ok;

	if (p->execs_fd < 0 || p->skel == NULL || p->skel->bss == NULL)
		return -1;
	lost_now = __atomic_load_n(&p->skel->bss->pgt_execs_lost, __ATOMIC_ACQUIRE);
	ok = lost_now == p->execs_lost_seen;
	p->execs_lost_seen = lost_now;
	while (n < PGT_BPF_MAX_EXECS &&
		   bpf_map_get_next_key(p->execs_fd, n ? &key : NULL, &pids[n]) == 0)
		key = pids[n++];
	for (i = 0; i < n; i++)
		if (bpf_map_delete_elem(p->execs_fd, &pids[i]) != 0 && errno != ENOENT)
			ok = 0;
	return ok ? n : -1;
}

/*
 * bpf_probes_add_postmaster
 *		Serve forks of `pm` from now on.  Returns 0 or -1 (errno set).
 */
int
bpf_probes_add_postmaster(bpf_probes *p, uint32_t pm)
{
	uint32_t	one = 1;

	if (!p->maps_ok)
		return 0;
	return bpf_map_update_elem(p->postmasters_fd, &pm, &one, BPF_ANY) == 0 ? 0 : -1;
}

/*
 * bpf_probes_remove_postmaster
 *		Stop serving forks of `pm` (absent is fine).
 */
int
bpf_probes_remove_postmaster(bpf_probes *p, uint32_t pm)
{
	if (!p->maps_ok)
		return 0;
	if (bpf_map_delete_elem(p->postmasters_fd, &pm) != 0 && errno != ENOENT)
		return -1;
	return 0;
}

/*
 * mark_tracked
 *		Mirror an insert into (or a removal from) `tracked` in the bitmap
 *		the dispatchers test (bpf/pg_tracer.bpf.c); the BPF side writes the
 *		same words with atomic or/and.
 */
static void
mark_tracked(bpf_probes *p, uint32_t pid, int on)
{
	uint64_t	bit = 1ULL << (pid & 63);
	__u64	   *word;

	if (pid / 64 >= PGT_TRACKED_WORDS)
		return;
	word = &p->skel->bss->pgt_tracked_bits[pid / 64];
	if (on)
		__atomic_fetch_or(word, bit, __ATOMIC_SEQ_CST);
	else
		__atomic_fetch_and(word, ~bit, __ATOMIC_SEQ_CST);
}

/*
 * bpf_probes_track
 *		Insert `pid` into `tracked` unless it is there already (an entry the
 *		fork program made is older and keeps its counters).  Returns 1 when
 *		inserted, 0 when it was there, -1 on error.
 */
int
bpf_probes_track(bpf_probes *p, uint32_t pid, uint32_t pm, uint32_t flags,
				 uint64_t attached_ns)
{
	struct pgt_tracked v;

	if (!p->maps_ok)
		return 0;
	memset(&v, 0, sizeof(v));
	v.postmaster = pm;
	v.flags = flags;
	v.attached_ns = attached_ns;
	if (bpf_map_update_elem(p->tracked_fd, &pid, &v, BPF_NOEXIST) == 0)
	{
		mark_tracked(p, pid, 1);
		return 1;
	}
	if (errno != EEXIST)
		return -1;
	mark_tracked(p, pid, 1);	/* the fork program's entry: set there too */
	return 0;
}

/*
 * bpf_probes_untrack
 *		Remove `pid` from `tracked` (absent is fine).
 */
int
bpf_probes_untrack(bpf_probes *p, uint32_t pid)
{
	if (!p->maps_ok)
		return 0;
	mark_tracked(p, pid, 0);
	if (bpf_map_delete_elem(p->tracked_fd, &pid) != 0 && errno != ENOENT)
		return -1;
	return 0;
}

/*
 * snapshot_iterate
 *		Fallback copy of `tracked` with get_next_key (kernels without batch
 *		ops).  Bounded: a concurrently changing map cannot loop forever.
 */
static size_t
snapshot_iterate(bpf_probes *p)
{
	uint32_t	key;
	uint32_t	next;
	size_t		n = 0;
	int			have = 0;
	int			guard = 2 * PGT_BPF_MAX_TRACKED;

	while (n < PGT_BPF_MAX_TRACKED && guard-- > 0 &&
		   bpf_map_get_next_key(p->tracked_fd, have ? &key : NULL, &next) == 0)
	{
		if (bpf_map_lookup_elem(p->tracked_fd, &next, &p->values[n]) == 0)
			p->keys[n++] = next;
		key = next;
		have = 1;
	}
	return n;
}

/*
 * bpf_probes_snapshot
 *		Copy the whole `tracked` map.  *rows points into a buffer owned by
 *		p, valid until the next call.  Returns 0 or -1.
 */
int
bpf_probes_snapshot(bpf_probes *p, const tracked_row **rows, size_t *nrows)
{
	tracked_row *out = p->rows;
	size_t		n = 0;
	size_t		i;

	*rows = NULL;
	*nrows = 0;
	if (!p->maps_ok)
		return 0;
	if (!p->batch_unsupported)
	{
		DECLARE_LIBBPF_OPTS(bpf_map_batch_opts, opts);
		uint32_t	in_batch = 0;
		uint32_t	out_batch = 0;
		int			first = 1;

		for (;;)
		{
			uint32_t	count = (uint32_t) (PGT_BPF_MAX_TRACKED - n);
			int			err;

			if (count == 0)
				break;
			err = bpf_map_lookup_batch(p->tracked_fd, first ? NULL : &in_batch,
									   &out_batch, p->keys + n, p->values + n,
									   &count, &opts);
			if (err != 0 && errno != ENOENT)
			{
				/*
				 * Only a kernel without batch lookups makes the walk the
				 * rule (each walk of a full map is thousands of calls); a
				 * passing error (ENOSPC as the map churns) walks this once.
				 */
				log_debug("BPF: batch lookup failed (%s), iterating instead",
						  strerror(errno));
				if (errno == EINVAL || errno == EOPNOTSUPP || errno == ENOSYS)
					p->batch_unsupported = 1;
				n = snapshot_iterate(p);
				goto done;
			}
			n += count;
			if (err != 0)
				break;			/* ENOENT: that was the last batch */
			in_batch = out_batch;
			first = 0;
		}
	}
	if (p->batch_unsupported)
		n = snapshot_iterate(p);
done:
	for (i = 0; i < n; i++)
	{
		out[i].pid = p->keys[i];
		out[i].v = p->values[i];
	}
	*rows = out;
	*nrows = n;
	return 0;
}

/*
 * bpf_probes_boot_ns
 *		CLOCK_BOOTTIME in ns: the clock of bpf_ktime_get_boot_ns().
 */
uint64_t
bpf_probes_boot_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_BOOTTIME, &ts) != 0)
		return 0;
	return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}
