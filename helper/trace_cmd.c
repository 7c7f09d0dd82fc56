/*
 * helper/trace_cmd.c
 *	  `pg-tracer trace --probes LIST [--pid PID | --pgdata DIR] [--stats]
 *	  [--histogram] [--interval 2s] [--duration 30s] [--format text|json]
 *	  [--log-level LEVEL]`.
 *
 * Finds the PostgreSQL processes itself (every postmaster on the host, the
 * cluster of --pgdata, a postmaster given with --pid and its children, or a
 * single backend given with --pid; without --pid it looks again each second,
 * for a cluster that restarts or a new one), loads the foundation's pid filter and
 * the selected probe sets, and then either streams every event (default) or,
 * with --stats / --histogram, prints cumulative summaries every --interval.
 * At the end (--duration, SIGINT, SIGTERM) it prints a final summary.  The
 * extension is not needed; with its layout file present, events carry query
 * ids.  One thread, one epoll loop.  Logs go to stderr, records to stdout.
 */
#include "trace_cmd.h"

#include "bpf_probes.h"
#include "discovery.h"
#include "engine_probes.h"
#include "kernel_btf.h"
#include "kernel_sched.h"
#include "layout_file.h"
#include "log.h"
#include "parse_num.h"
#include "pid_retire.h"
#include "privileges.h"
#include "pm_owner.h"
#include "probe_set.h"
#include "procfs.h"
#include "syscall_exit.h"
#include "trace_out.h"
#include "tracefs.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#define EXIT_USAGE		2
#define MAX_SETS		64
#define REFRESH_MS		1000
#define MIN_INTERVAL_MS	100
/* A trace asked to stop (or past --duration) whose output blocks ends this long after. */
#define STOP_GRACE_S	10
/* the stop signals' pipe and count (on_stop_signal) */
static int	stop_pipe_w = -1;
static volatile sig_atomic_t stops_seen;
/*
 * Whether a stop signal arms the STOP_GRACE_S alarm: only while the loop
 * writes output.  Loading the programs may take longer than the grace on a
 * slow host, and a stop then must still end with the summary; once the
 * summary is out, detaching ends with exit 0 whatever arrives.
 */
static volatile sig_atomic_t grace_armable;
/* an --interval tick this close to the end leaves its summary to the final one */
#define END_SLACK_MS	50
/*
 * Records one drain of the stream prints at most before the loop looks at
 * signals and timers again: libbpf's consume reads for as long as records
 * arrive, and a stream busier than the output would never return.
 */
#define DRAIN_BUDGET	4096
/* titles of exited processes kept for their records' backend types */
#define TRACE_EXIT_TITLES	16384

static const char trace_usage[] =
"Usage: pg-tracer trace --probes SET[,SET...]|all [--pid PID | --pgdata DIR]\n"
"                       [--stats] [--histogram] [--interval 2s] [--duration 30s]\n"
"                       [--format text|json] [--log-level error|warn|info|debug]\n"
"                       [--sched-clock auto|ktime] [--query-id on|off]\n"
"                       [--syscall-exit auto|fexit|tracepoint] [--assume-fexit]\n"
"                       [--hide-tracepoint NAME] [--no-storage-in-switch]\n"
"                       [--buffer SIZE] [--keep-exited S]\n"
"\n"
"Trace PostgreSQL processes with probe sets, without the extension.  By\n"
"default every event is printed as it happens; with --stats and/or\n"
"--histogram, cumulative per-process summaries and log2 histograms are\n"
"printed every --interval instead.  A final summary is printed at the end\n"
"(--duration elapsed, Ctrl-C, SIGTERM, or the process of --pid gone), in\n"
"place of the periodic one when the end falls on a tick.\n"
"Without --pid, postmasters that start meanwhile (a restart) are traced\n"
"too, and the trace waits while none runs.  Query ids are filled in when the\n"
"cluster preloads pg_tracer (its layout file), 0 otherwise.\n"
"\n"
"Options:\n"
"  --probes LIST      comma-separated probe sets, or all (--probes help lists them)\n"
"  --pid PID          a postmaster (its cluster) or one backend (with its\n"
"                     parallel workers)\n"
"  --pgdata DIR       the cluster running in DIR\n"
"                     (neither: every PostgreSQL cluster on the host)\n"
"  --stats            periodic per-process summaries instead of events\n"
"  --histogram        periodic log2 histograms instead of events\n"
"  --interval TIME    summary period, with --stats or --histogram (default 2s,\n"
"                     at least 100ms; units ms, s, m)\n"
"  --duration TIME    stop after TIME (default: until Ctrl-C)\n"
"  --buffer SIZE      the event stream's ring buffer, without --stats and\n"
"                     --histogram (default 4m; 4k..1g,\n"
"                     rounded up to a power of two): events that find it\n"
"                     full are lost, counted and reported\n"
"  --keep-exited S    summary rows of an exited process keep its pid S seconds\n"
"                     (0..86400, default 60), then fold into its cluster's\n"
"                     rows of exited processes of its backend type (pid null\n"
"                     in JSON, pid=exited in text); sooner when the in-kernel\n"
"                     tables are half full.  Not with --pid of a backend\n"
"  --format FORMAT    text (default) or json (JSON Lines: every record has\n"
"                     ts, set, event, pid, backend_type, queryid)\n"
"  --log-level LEVEL  error, warn (default), info or debug (stderr)\n"
"  --sched-clock CLK  sched set: auto (default: the run queue's clock, and\n"
"                     run-queue latency where the kernel keeps it) or ktime\n"
"                     (the monotonic clock, no run-queue latency)\n"
"  --query-id on|off  read each event's query id (on, default), or not (off:\n"
"                     every queryid is 0, the probes cost less)\n"
SYSCALL_EXIT_HELP
"  --assume-fexit     testing: take a failed test of fexit for a passed one,\n"
"                     so that the fallback to sys_exit after the fexit\n"
"                     programs fail to load runs\n"
"  --hide-tracepoint NAME  testing: act as if the kernel lacked tracepoint\n"
"                     NAME (block_io_start or block_rq_merge; repeatable), so\n"
"                     that the block set's fallback for older kernels runs\n"
"  --no-storage-in-switch  testing: the sched set makes a task's storage at\n"
"                     fork and in its task iterator only, as before 6.4\n"

"  -h, --help         show this help\n";

typedef struct trace_opts
{
	const char *probes;
	const char *pgdata;
	pid_t		pid;
	int			stats;
	int			histogram;
	int64_t		interval_ms;
	int64_t		duration_ms;
	int			json;
	enum log_level log_level;
	int			interval_set;	/* --interval given */
	int			buffer_set;		/* --buffer given */
	int			keep_exited_set;	/* --keep-exited given */
} trace_opts;

/* One target cluster (or the parent of a single traced backend). */
typedef struct trace_target
{
	pm_info		pm;
	int			single;			/* only `pid` is traced, not the cluster */
	pid_t		pid;
	uint64_t	pid_starttime;	/* `pid`'s /proc stat ticks (single) */
	uint32_t	nspid;			/* `pid` in its cluster's pid namespace (single):
								 * what its parallel workers' titles name */
	pgt_layout	layout;
	int			layout_ok;
	int			layout_said;	/* why it is not usable, logged once */
	int			started;		/* put into the pid filter already */
	int			gone;			/* its postmaster exited (not single) */
} trace_target;

typedef struct trace_state
{
	trace_opts	o;
	trace_out	out;
	bpf_probes	bpf;
	pset_runtime rt;
	trace_target *targets;
	size_t		ntargets;
	int			had_targets;	/* a cluster was traced (all may be gone now) */
	uint32_t   *pm_pids;
	struct ring_buffer *rb;
	uint64_t	bad_records;
	uint64_t	bad_reported;	/* of bad_records, said on stderr */
	uint32_t	drained;		/* records of the current drain */
	int			discarding;		/* the end: records are counted, not printed */
	uint64_t	unprinted;		/* records so counted */
	int			sigfd;			/* read end of the stop pipe (on_stop_signal) */
	uint64_t	lost_reported;	/* stream records lost, as last reported */
	uint64_t	started_ns;		/* CLOCK_BOOTTIME when tracing began */
	uint64_t	summaries;		/* summary blocks printed so far */
	int			waiting_logged;	/* "every traced postmaster has exited" said */
} trace_state;

/*
 * usage_error
 *		Message + usage on stderr, exit status 2.
 */
static int
usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "pg-tracer trace: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n\n%s", trace_usage);
	return EXIT_USAGE;
}

/*
 * list_sets
 *		--probes help.
 */
static void
list_sets(void)
{
	size_t		i;

	printf("Probe sets:\n");
	for (i = 0; i < pset_count(); i++)
		printf("  %-14s %s\n", pset_get(i)->name, pset_get(i)->description);
}

/*
 * add_target
 *		Remember a cluster (or a single backend's parent) to trace.
 */
static int
add_target(trace_state *t, const pm_info *pm, int single, pid_t pid)
{
	trace_target *n = realloc(t->targets, (t->ntargets + 1) * sizeof(*n));

	if (n == NULL)
		return -1;
	t->targets = n;
	if (pm_owner_set((uint32_t) pm->pid, pm->uid) < 0)
		return -1;
	memset(&n[t->ntargets], 0, sizeof(n[0]));
	n[t->ntargets].pm = *pm;
	n[t->ntargets].single = single;
	n[t->ntargets].pid = pid;
	t->ntargets++;
	t->had_targets = 1;
	return 0;
}

/*
 * single_nspid
 *		The pid PostgreSQL knows backend pid by (its cluster may run in a pid
 *		namespace of its own): a parallel worker's title names its leader so.
 */
static uint32_t
single_nspid(pid_t pid)
{
	int32_t		ns = 0;

	return procfs_read_nspid(pid, &ns) == 0 && ns > 0 ? (uint32_t) ns : (uint32_t) pid;
}

/*
 * find_targets
 *		What to trace, from --pid / --pgdata / the whole host.  Returns 0 or
 *		-1 with a message logged.
 */
static int
find_targets(trace_state *t)
{
	pm_info    *pms = NULL;
	size_t		n = 0;
	size_t		i;
	char		why[512];

	if (t->o.pid != 0)
	{
		pm_info		pm;
		proc_stat	st;
		char		why_self[512];

		if (discovery_check_postmaster(t->o.pid, &pm, why_self, sizeof(why_self)) == 0)
			return add_target(t, &pm, 0, 0);
		if (procfs_read_stat(t->o.pid, &st) < 0)
		{
			log_error("--pid %d: no such process", (int) t->o.pid);
			return -1;
		}
		if (discovery_check_postmaster(st.ppid, &pm, why, sizeof(why)) < 0)
		{
			/* both reasons: a postmaster can fail its own check (no postmaster.pid) */
			log_error("--pid %d is neither a PostgreSQL postmaster (%s) nor a child of one "
					  "(its parent: %s)", (int) t->o.pid, why_self, why);
			return -1;
		}
		if (add_target(t, &pm, 1, t->o.pid) < 0)
			return -1;
		t->targets[t->ntargets - 1].pid_starttime = st.starttime;
		t->targets[t->ntargets - 1].nspid = single_nspid(t->o.pid);
		return 0;
	}
	if (t->o.pgdata != NULL)
	{
		if (discovery_pgdata(t->o.pgdata, &pms, &n, why, sizeof(why)) < 0)
		{
			log_error("--pgdata: %s", why);
			return -1;
		}
	}
	else if (discovery_scan(&pms, &n, 0, 0, 0, NULL, NULL, NULL, NULL) < 0)
		return -1;
	for (i = 0; i < n; i++)
		if (add_target(t, &pms[i], 0, 0) < 0)
		{
			free(pms);
			return -1;
		}
	free(pms);
	if (t->ntargets == 0)
		log_warn("no PostgreSQL cluster is running yet: tracing any that starts");
	return 0;
}

/*
 * load_layout
 *		The extension's layout file of a target, when it has one and it
 *		belongs to the running postmaster.  Tried again at each look while it
 *		is not usable: the extension's worker writes it once the cluster is
 *		consistent, after the postmaster (a restart, crash recovery) is
 *		found, and until then the previous postmaster's file is there.
 */
static void
load_layout(trace_target *tg)
{
	char		path[PATH_MAX];
	char		err[512];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/cwd/%s", (int) tg->pm.pid, PGT_LAYOUT_FILENAME);
	if (layout_load(path, tg->pm.uid, &tg->layout, &st, err, sizeof(err)) < 0)
	{
		if (!tg->layout_said)
			log_info("%s: no usable layout file (%s): query ids are 0 until there is one",
					 tg->pm.data_dir, err);
		tg->layout_said = 1;
		return;
	}
	if (tg->layout.postmaster_pid != (uint32_t) tg->pm.nspid)
	{
		if (!tg->layout_said)
			log_info("%s: the layout file is the previous postmaster's: query ids are 0 "
					 "until the extension writes it again", tg->pm.data_dir);
		tg->layout_said = 1;
		layout_free(&tg->layout);
		return;
	}
	if (tg->layout_said)
		log_info("%s: layout file written: query ids from now on", tg->pm.data_dir);
	tg->layout_ok = 1;
}

/*
 * note_postmasters
 *		Tell the printer every target's postmaster (the backend types of
 *		processes gone before they are printed come from their parent).
 */
static int
note_postmasters(trace_state *t)
{
	uint32_t   *pids = realloc(t->pm_pids, (t->ntargets ? t->ntargets : 1) * sizeof(uint32_t));
	size_t		i;

	if (pids == NULL)
		return -1;
	t->pm_pids = pids;
	t->out.npostmasters = 0;
	for (i = 0; i < t->ntargets; i++)
		if (!t->targets[i].gone)	/* its pid may be another process's now */
			t->pm_pids[t->out.npostmasters++] = (uint32_t) t->targets[i].pm.pid;
	t->out.postmasters = t->pm_pids;
	return 0;
}

/*
 * scan_postmasters
 *		The postmasters running now: of --pgdata's cluster, else of the
 *		host.  Returns 0 or -1.
 */
static int
scan_postmasters(const trace_state *t, pm_info **pms, size_t *n)
{
	struct stat st;

	*pms = NULL;
	*n = 0;
	if (t->o.pgdata == NULL)
		return discovery_scan(pms, n, 0, 0, 0, NULL, NULL, NULL, NULL);
	if (stat(t->o.pgdata, &st) < 0 || !S_ISDIR(st.st_mode))
		return 0;				/* moved away meanwhile: nothing runs there */
	return discovery_scan(pms, n, 1, (uint64_t) st.st_dev, (uint64_t) st.st_ino,
						  NULL, NULL, NULL, NULL);
}

/*
 * find_new_targets
 *		A cluster is whatever postmaster runs in it: with --pgdata, or on
 *		the whole host, a postmaster that started (or restarted) since the
 *		last look is traced from now on.  Not with --pid, which names one.
 */
static void
find_new_targets(trace_state *t)
{
	pm_info    *pms;
	size_t		n;
	size_t		i;
	size_t		j;

	if (t->o.pid != 0 || scan_postmasters(t, &pms, &n) < 0)
		return;
	for (i = 0; i < n; i++)
	{
		for (j = 0; j < t->ntargets; j++)
			if (t->targets[j].pm.pid == pms[i].pid &&
				t->targets[j].pm.starttime == pms[i].starttime)
				break;
		/* one let go is forgotten: a zombie must not come back as new */
		if (j < t->ntargets || !procfs_alive(pms[i].pid, pms[i].starttime) ||
			add_target(t, &pms[i], 0, 0) < 0)
			continue;
		load_layout(&t->targets[t->ntargets - 1]);
		if (note_postmasters(t) < 0)
			break;
		log_info("%s: postmaster %d started: tracing it", pms[i].data_dir, (int) pms[i].pid);
	}
	free(pms);
}

/*
 * tracked_children
 *		The pids in the pid filter whose postmaster is pm, but pm itself.
 */
static int
tracked_children(trace_state *t, pid_t pm, pid_t **out, size_t *n)
{
	const tracked_row *rows;
	size_t		nrows;
	size_t		i;

	*out = NULL;
	*n = 0;
	if (bpf_probes_snapshot(&t->bpf, &rows, &nrows) < 0)
		return -1;
	*out = malloc((nrows ? nrows : 1) * sizeof(pid_t));
	if (*out == NULL)
		return -1;
	for (i = 0; i < nrows; i++)
		if (rows[i].v.postmaster == (uint32_t) pm && rows[i].pid != (uint32_t) pm)
			(*out)[(*n)++] = (pid_t) rows[i].pid;
	return 0;
}

/*
 * single_kids
 *		The processes the trace of one backend follows: the backend and its
 *		parallel workers (their title names it as leader).  Every child the
 *		postmaster forks enters the pid filter (a worker is traced from its
 *		start, having lived a second perhaps); each pass lets go of those
 *		whose title says they are something else, so the other backends
 *		cost no more than their first second.  The first pass looks among
 *		all children for workers that run already.
 */
static int
single_kids(trace_state *t, trace_target *tg, int first, pid_t **out, size_t *n)
{
	pid_t	   *cand = NULL;
	size_t		ncand = 0;
	size_t		m = 0;
	size_t		i;

	if ((first ? discovery_children(tg->pm.pid, &cand, &ncand)
		 : tracked_children(t, tg->pm.pid, &cand, &ncand)) < 0)
		ncand = 0;
	*out = malloc((ncand + 1) * sizeof(pid_t));
	if (*out == NULL)
	{
		free(cand);
		return -1;
	}
	(*out)[m++] = tg->pid;
	for (i = 0; i < ncand; i++)
	{
		char		buf[PROCFS_CMDLINE_MAX];
		size_t		len = 0;

		if (cand[i] == tg->pid ||
			procfs_read_cmdline(cand[i], buf, sizeof(buf), &len) < 0 || len == 0)
			continue;			/* gone, or no title yet: the next pass */
		if (procfs_parallel_leader(buf, len) == tg->nspid)
			(*out)[m++] = cand[i];
		else if (!first && procfs_classify_title(buf, len) != PGT_ROLE_UNKNOWN)
			(void) bpf_probes_untrack(&t->bpf, (uint32_t) cand[i]);
	}
	free(cand);
	*n = m;
	return 0;
}

/*
 * track_targets
 *		Put the target processes into the pid filter: whole clusters enter
 *		through their postmaster (children at fork) plus a scan of the
 *		children that exist; a single backend with its parallel workers
 *		(single_kids; each target from its first pass on).  Also refreshes
 *		the query-id slots, and tells the sets when processes came in.
 */
static void
track_targets(trace_state *t)
{
	uint64_t	now = bpf_probes_boot_ns();
	int			took_in = 0;
	size_t		i;

	for (i = 0; i < t->ntargets; i++)
	{
		trace_target *tg = &t->targets[i];
		pid_t	   *kids = NULL;
		size_t		nk = 0;
		size_t		k;
		uint32_t   *pids;
		uint32_t   *nspids;
		size_t		np = 0;
		int			first = !tg->started;

		if (tg->gone)
			continue;
		tg->started = 1;
		if (tg->single)
		{
			if (first)
			{
				/* its forks enter the filter: the backend's workers among them */
				(void) bpf_probes_add_postmaster(&t->bpf, (uint32_t) tg->pm.pid);
				engine_core_target((uint32_t) tg->pm.pid);	/* engine sets: its binary */
			}
			if (single_kids(t, tg, first, &kids, &nk) < 0)
				continue;
		}
		else
		{
			if (first)
			{
				(void) bpf_probes_add_postmaster(&t->bpf, (uint32_t) tg->pm.pid);
				took_in |= bpf_probes_track(&t->bpf, (uint32_t) tg->pm.pid, (uint32_t) tg->pm.pid,
											PGT_TRACKED_POSTMASTER | PGT_TRACKED_SCANNED, now) == 1;
				engine_core_target((uint32_t) tg->pm.pid);	/* engine sets: its binary */
			}
			if (discovery_children(tg->pm.pid, &kids, &nk) < 0)
				continue;
		}
		pids = calloc(nk ? nk : 1, sizeof(*pids));
		nspids = calloc(nk ? nk : 1, sizeof(*nspids));
		for (k = 0; pids && nspids && k < nk; k++)
		{
			int32_t		ns = 0;

			if (first || t->bpf.process.state != PGT_PROBE_AVAILABLE)
				took_in |= bpf_probes_track(&t->bpf, (uint32_t) kids[k], (uint32_t) tg->pm.pid,
											PGT_TRACKED_SCANNED, now) == 1;
			if (procfs_read_nspid(kids[k], &ns) < 0)
				continue;
			pids[np] = (uint32_t) kids[k];
			nspids[np++] = (uint32_t) ns;
		}
		if (!tg->layout_ok)
			load_layout(tg);
		if (tg->layout_ok && pids && nspids)
			(void) pset_qid_refresh(&t->rt, tg->pm.pid, &tg->layout, pids, nspids, np);
		free(pids);
		free(nspids);
		free(kids);
	}
	if (took_in)
		pset_runtime_tracked(&t->rt);
}

/*
 * target_alive
 *		Does tg's process (the backend of --pid, else the postmaster) still
 *		run?  A zombie does not; a pid now someone else's (another start
 *		time) neither.
 */
static int
target_alive(const trace_target *tg)
{
	pid_t		pid = tg->single ? tg->pid : tg->pm.pid;
	uint64_t	start = tg->single ? tg->pid_starttime : tg->pm.starttime;
	proc_stat	st;

	if (procfs_read_stat(pid, &st) < 0)
		return 0;
	return st.state != 'Z' && st.state != 'X' && st.starttime == start;
}

/*
 * let_go_exited
 *		Let go of the clusters whose postmaster exited (its children go with
 *		it): out of the engine sets' and the pid filter's postmasters, and
 *		out of the targets.
 *		Returns how many targets are left alive.
 */
static size_t
let_go_exited(trace_state *t)
{
	size_t		alive = 0;
	size_t		let_go = 0;
	size_t		kept;
	size_t		i;

	for (i = 0; i < t->ntargets; i++)
	{
		trace_target *tg = &t->targets[i];

		if (tg->gone)
			continue;
		if (target_alive(tg))
		{
			alive++;
			continue;
		}
		if (tg->single)
			continue;			/* the trace ends: see look_again */
		tg->gone = 1;
		if (tg->layout_ok)
			layout_free(&tg->layout);
		tg->layout_ok = 0;
		log_info("%s: postmaster %d exited", tg->pm.data_dir, (int) tg->pm.pid);
		engine_core_untarget((uint32_t) tg->pm.pid);
		(void) bpf_probes_remove_postmaster(&t->bpf, (uint32_t) tg->pm.pid);
		pm_owner_forget((uint32_t) tg->pm.pid);
		let_go++;
	}
	if (let_go == 0)
		return alive;
	/* forgotten: a long trace of the host sees many clusters come and go */
	for (i = kept = 0; i < t->ntargets; i++)
		if (!t->targets[i].gone)
			t->targets[kept++] = t->targets[i];
	t->ntargets = kept;
	/* the printer no longer calls whoever has that pid next a postmaster */
	if (note_postmasters(t) < 0)
		log_warn("out of memory noting the postmasters");
	return alive;
}

/*
 * look_again
 *		The once-a-second look at the targets (and at the query-id slots of
 *		exited processes); returns 1 when the trace is
 *		to end (the process of --pid exited: nothing more can come of it).
 *		A cluster whose postmaster exited is waited for: one that starts
 *		again (crash recovery, a restart) is traced from its new postmaster.
 */
static int
look_again(trace_state *t)
{
	size_t		alive = let_go_exited(t);
	size_t		i;

	trace_out_resync_clock(&t->out);

	/*
	 * Rows of exited processes fold as the daemon's do, at each second's
	 * copy: with connection churn the in-kernel tables would otherwise fill
	 * with them and evict the oldest, uncounted, between two summaries (or
	 * before the only one of a streaming trace).  With --pid of a backend
	 * all but its own and its workers' fold (pid_retire_keep).  The copy
	 * also sweeps the query-id slots of exited backends.
	 */
	pset_runtime_collect(&t->rt);
	if (t->o.pid != 0)
	{
		if (alive == 0)
		{
			log_warn("--pid %d has exited: ending the trace", (int) t->o.pid);
			return 1;
		}
		track_targets(t);
		return 0;
	}
	find_new_targets(t);
	for (i = alive = 0; i < t->ntargets; i++)
		alive += !t->targets[i].gone;
	if (alive == 0 && t->had_targets && !t->waiting_logged)
		log_warn("every traced postmaster has exited: waiting for %s to start "
				 "(--duration, Ctrl-C or SIGTERM end the trace)",
				 t->o.pgdata ? "the cluster" : "one");
	t->waiting_logged = alive == 0 && t->had_targets;
	track_targets(t);
	return 0;
}

/*
 * on_record
 *		ring_buffer__poll callback: check the record and hand it to its set
 *		(at the end, once discarding, only count it).
 */
static int
on_record(void *arg, void *data, size_t len)
{
	trace_state *t = arg;
	const struct pgt_event_hdr *h = data;
	pset_inst  *in;

	if (len < sizeof(*h) || h->size < sizeof(*h) || h->size > len)
	{
		t->bad_records++;
		return 0;
	}
	if (t->discarding)
	{
		t->unprinted++;
		return ++t->drained >= DRAIN_BUDGET ? -EAGAIN : 0;
	}
	in = pset_runtime_find(&t->rt, h->set);
	if (in == NULL || in->set->event == NULL)
	{
		t->bad_records++;
		return 0;
	}
	if (in->set->event(in, &t->out, h, (const unsigned char *) data + sizeof(*h),
					   h->size - sizeof(*h)) < 0)
		t->bad_records++;
	/* libbpf has consumed the record already: a negative return only stops */
	return ++t->drained >= DRAIN_BUDGET ? -EAGAIN : 0;
}

/*
 * drain
 *		Print what the stream holds, at most DRAIN_BUDGET records, and flush.
 *		Returns 0, or -1 when the output failed (logged).
 */
static int
drain(trace_state *t)
{
	int			err;

	if (t->rb != NULL)
	{
		t->drained = 0;
		err = ring_buffer__consume(t->rb);
		if (err < 0 && err != -EAGAIN)
			log_debug("ring buffer: %s", strerror(-err));
	}
	if (trace_out_flush(&t->out) < 0)
	{
		log_error("cannot write the output: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * print_status
 *		One "status" record per selected set (and query-id tagging), so the
 *		output says which sets run and why others do not.
 */
static void
print_status(trace_state *t)
{
	struct pgt_probeset_entry rows[MAX_SETS + 1];
	size_t		n = pset_runtime_status_rows(&t->rt, rows, MAX_SETS + 1);
	size_t		i;

	/* the set column fits "queryid-tagging" too */
	for (i = 0; i < n; i++)
		if ((int) strnlen(rows[i].name, sizeof(rows[i].name)) > t->out.set_width)
			t->out.set_width = (int) strnlen(rows[i].name, sizeof(rows[i].name));
	for (i = 0; i < n; i++)
	{
		trace_rec_begin(&t->out, rows[i].name, "status", TRACE_PID_NONE, 0, 0);
		trace_rec_str(&t->out, "state", pgt_probe_state_name(rows[i].state));
		trace_rec_str(&t->out, "mechanism", rows[i].mechanism);
		trace_rec_str(&t->out, "reason", rows[i].reason);
		trace_rec_end(&t->out);
		if (rows[i].state != PGT_PROBE_AVAILABLE)
			log_warn("%s: %s: %s", rows[i].name, pgt_probe_state_name(rows[i].state),
					 rows[i].reason);
	}
}

/*
 * print_summary
 *		Stats and/or histograms of every running set, after a `summary`
 *		record that opens the block: its number, whether it is the final
 *		one, and the seconds since tracing began (the counters are
 *		cumulative over that span).
 */
static void
print_summary(trace_state *t, int stats, int hist, int final)
{
	size_t		i;

	engine_core_read_next();	/* not the once-a-second copy's, maybe 0.5 s old */
	pset_runtime_collect(&t->rt);
	trace_rec_begin(&t->out, "trace", "summary", TRACE_PID_NONE, 0, 0);
	trace_rec_u64(&t->out, "seq", ++t->summaries);
	trace_rec_bool(&t->out, "final", final);
	trace_rec_f64(&t->out, "elapsed_s", (double) (bpf_probes_boot_ns() - t->started_ns) / 1e9);
	if (t->rb != NULL)
		trace_rec_u64(&t->out, "lost_events", pset_runtime_lost_events(&t->rt));
	trace_rec_end(&t->out);
	for (i = 0; i < t->rt.ninsts; i++)
	{
		pset_inst  *in = &t->rt.insts[i];

		if (in->status.state == PGT_PROBE_UNAVAILABLE)
			continue;
		if (stats && in->set->stats)
			in->set->stats(in, &t->out);
		if (hist && in->set->histograms)
			in->set->histograms(in, &t->out);
	}
}

/*
 * report_lost_events
 *		Say on stderr when the stream lost records since the last report
 *		(its ring buffer was full: the output could not keep up).
 */
static void
report_lost_events(trace_state *t)
{
	uint64_t	lost;

	if (t->rb == NULL)
		return;
	lost = pset_runtime_lost_events(&t->rt);
	if (lost <= t->lost_reported)
		return;
	log_warn("%llu events lost (%llu in all): the stream's %u kB ring buffer was full; "
			 "the summaries still count them (use a larger --buffer, fewer sets, or --stats)",
			 (unsigned long long) (lost - t->lost_reported), (unsigned long long) lost,
			 pset_stream_bytes / 1024);
	t->lost_reported = lost;
}

/*
 * report_bad_records
 *		Say on stderr, once a second, when records were malformed since the
 *		last report (programs and helper of different builds): a stream
 *		that prints nothing must not keep quiet about why until it ends.
 */
static void
report_bad_records(trace_state *t)
{
	if (t->bad_records <= t->bad_reported)
		return;
	log_warn("%llu malformed ring-buffer records ignored (%llu in all): the BPF objects and "
			 "this helper disagree on a record's layout",
			 (unsigned long long) (t->bad_records - t->bad_reported),
			 (unsigned long long) t->bad_records);
	t->bad_reported = t->bad_records;
}

/*
 * make_timer
 *		Periodic timerfd (ms).
 */
static int
make_timer(int64_t ms, int periodic)
{
	struct itimerspec its;
	int			fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);

	if (fd < 0)
		return -1;
	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = ms / 1000;
	its.it_value.tv_nsec = (long) (ms % 1000) * 1000000L;
	if (periodic)
		its.it_interval = its.it_value;
	if (timerfd_settime(fd, 0, &its, NULL) < 0)
	{
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * ends_now
 *		Does the trace end with this batch of events (a signal, --duration),
 *		or within END_SLACK_MS?  A --duration that is a multiple of
 *		--interval runs out a moment after its last tick: that tick's
 *		summary would repeat the final one.
 */
static int
ends_now(const struct epoll_event *evs, int n, int sigfd, int endfd)
{
	struct itimerspec left;
	int			k;

	for (k = 0; k < n; k++)
		if (evs[k].data.fd == sigfd || evs[k].data.fd == endfd)
			return 1;
	if (endfd < 0 || timerfd_gettime(endfd, &left) < 0)
		return 0;
	/* a one-shot timer that has run out reads 0: the end is in the next batch */
	return left.it_value.tv_sec == 0 && left.it_value.tv_nsec < END_SLACK_MS * 1000000L;
}

/*
 * watch
 *		Add fd to the loop's epoll set.  Returns 0 or -1 (errno set).
 */
static int
watch(int epfd, int fd)
{
	struct epoll_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.fd = fd;
	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

/*
 * read_timer
 *		Consume a timerfd's expirations.
 */
static void
read_timer(int fd)
{
	uint64_t	v;

	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_debug("timerfd: %s", strerror(errno));
}

/*
 * handle_ready
 *		The fds epoll_wait returned: a signal or the --duration timer ends
 *		the trace (*stop), the interval timer asks for a summary (*tick),
 *		the refresh timer looks at the processes again (and ends the trace
 *		when the --pid process is gone).
 */
static void
handle_ready(trace_state *t, const struct epoll_event *evs, int n, int ivfd,
			 int reffd, int endfd, int *stop, int *tick)
{
	int			k;

	for (k = 0; k < n; k++)
	{
		int			fd = evs[k].data.fd;

		if (fd == t->sigfd || fd == endfd)
			*stop = 1;
		else if (fd == ivfd)
		{
			read_timer(ivfd);
			*tick = 1;
		}
		else if (fd == reffd)
		{
			read_timer(reffd);
			report_lost_events(t);
			report_bad_records(t);
			if (look_again(t))
				*stop = 1;
		}
	}
}

/*
 * finish_trace
 *		One more batch, then the final summary.  What a reader slower than
 *		the stream leaves queued is counted, not printed: the end comes on
 *		time.  (At most as many records as the ring buffer holds: the
 *		programs still run, so "until empty" might not end.)  Returns 0, or
 *		-1 when the stream or the output fails.
 */
static int
finish_trace(trace_state *t)
{
	size_t		rounds;

	if (drain(t) < 0)
		return -1;
	t->discarding = 1;
	for (rounds = pset_stream_bytes / (sizeof(struct pgt_event_hdr) + 8) / DRAIN_BUDGET + 1;
		 rounds > 0 && t->drained >= DRAIN_BUDGET; rounds--)
		(void) drain(t);
	if (t->unprinted > 0)
		log_warn("%llu events still queued at the end were not printed (the output could not "
				 "keep up); the final summary counts them",
				 (unsigned long long) t->unprinted);
	report_lost_events(t);
	/* what the periodic summaries show; a stream's ends with its stats */
	print_summary(t, t->o.stats || !t->o.histogram, t->o.histogram, 1);
	report_bad_records(t);
	if (trace_out_flush(&t->out) < 0)
	{
		log_error("cannot write the output: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * run_loop
 *		Events, summaries and refreshes until the end.  Each pass drains a
 *		bounded batch of the stream, so signals and timers are seen within
 *		a batch's time however busy the stream is.
 */
static int
run_loop(trace_state *t)
{
	int			epfd = -1;
	int			ivfd = -1;
	int			endfd = -1;
	int			reffd = -1;
	int			streaming = !t->o.stats && !t->o.histogram;
	int			ret = 1;
	int			stop = 0;

	if ((epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
		(ivfd = make_timer(t->o.interval_ms, 1)) < 0 ||
		(reffd = make_timer(REFRESH_MS, 1)) < 0 ||
		(t->o.duration_ms > 0 && (endfd = make_timer(t->o.duration_ms, 0)) < 0) ||
		watch(epfd, t->sigfd) < 0 || watch(epfd, ivfd) < 0 || watch(epfd, reffd) < 0 ||
		(endfd >= 0 && watch(epfd, endfd) < 0) ||
		(t->rb != NULL && watch(epfd, ring_buffer__epoll_fd(t->rb)) < 0))
	{
		log_error("cannot set up the event loop: %s", strerror(errno));
		goto cleanup;
	}
	/*
	 * Output that blocks (see on_stop_signal) must not outlast --duration
	 * either, nor the end a stop signal during the start asked for.
	 */
	grace_armable = 1;
	if (stops_seen)
		alarm(STOP_GRACE_S);
	else if (t->o.duration_ms > 0)
		alarm((unsigned int) ((t->o.duration_ms + 999) / 1000) + STOP_GRACE_S);

	while (!stop)
	{
		struct epoll_event evs[8];
		int			n = epoll_wait(epfd, evs, 8, 500);
		int			tick = 0;

		if (n < 0 && errno != EINTR)
		{
			log_error("epoll_wait: %s", strerror(errno));
			goto cleanup;
		}
		if (drain(t) < 0)
			goto cleanup;
		handle_ready(t, evs, n, ivfd, reffd, endfd, &stop, &tick);
		/* after the look: a tick with the --pid process gone is the final one */
		if (tick && !streaming && !stop && !ends_now(evs, n, t->sigfd, endfd))
		{
			print_summary(t, t->o.stats, t->o.histogram, 0);
			if (trace_out_flush(&t->out) < 0)
			{
				log_error("cannot write the output: %s", strerror(errno));
				goto cleanup;
			}
		}
	}
	if (finish_trace(t) == 0)
		ret = 0;

cleanup:
	grace_armable = 0;
	alarm(0);					/* printed or failed: detaching may take its time */
	if (epfd >= 0)
		close(epfd);
	if (ivfd >= 0)
		close(ivfd);
	if (reffd >= 0)
		close(reffd);
	if (endfd >= 0)
		close(endfd);
	return ret;
}

/*
 * exit_title
 *		trace_out's source of the titles of exited processes: the
 *		foundation's exit_titles map.
 */
static int
exit_title(void *arg, uint32_t pid, char *buf, size_t buflen)
{
	return bpf_probes_exit_title(arg, pid, buf, buflen);
}

/*
 * retired_role
 *		pid_retire's source of roles: what the printer knows of the
 *		process, from its title then or at its exit.
 */
static uint32_t
retired_role(void *arg, uint32_t pid, int alive)
{
	return trace_role(arg, pid, alive);
}

/*
 * focus_kept
 *		pid_retire's keep test with --pid of a backend: the rows printed.
 */
static int
focus_kept(void *arg, uint32_t pid)
{
	return trace_wanted(arg, pid);
}

/*
 * report_exit_titles
 *		Whether the records of processes gone before they are printed can
 *		name their type: the exit program reads the title while the process
 *		still has its memory, which kernels give it since sched_process_exit
 *		moved before exit_mm() and gained its group_dead argument.
 */
static void
report_exit_titles(void)
{
	if (kernel_btf_tp_args("sched_process_exit") >= 2)
		log_info("backend types of exited processes: from their titles at exit");
	else
		log_info("backend types of exited processes: unknown (this kernel reports an exit "
				 "after releasing the process's memory, where its title is)");
}

/*
 * on_stop_signal
 *		SIGINT, SIGTERM, SIGHUP.  The first asks the loop to end (a byte on
 *		the stop pipe, which it watches), and it prints its final summary.
 *		Output that blocks (a reader that stopped reading: a pager, a slow
 *		consumer) would hold the trace forever, in a write no signal
 *		interrupts: a second signal ends the process at once, and so does
 *		an alarm STOP_GRACE_S after the first (while the loop writes).
 */
static void
on_stop_signal(int sig)
{
	int			saved = errno;

	if (stops_seen++ > 0)
	{
		signal(sig, SIG_DFL);
		raise(sig);				/* delivered as the handler returns */
	}
	else
	{
		if (grace_armable)
			alarm(STOP_GRACE_S);
		if (write(stop_pipe_w, "s", 1) < 0)
		{
			/* the pipe holds a byte already: the loop will see it */
		}
	}
	errno = saved;
}

/*
 * stop_on
 *		Make sig end the trace, unless the caller set it to be ignored
 *		(nohup's SIGHUP, a background job's SIGINT).  SA_RESTART: no other
 *		system call sees EINTR.
 */
static int
stop_on(int sig)
{
	struct sigaction sa;

	if (sigaction(sig, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	return sigaction(sig, &sa, NULL);
}

/*
 * catch_stop_signals
 *		SIGINT, SIGTERM and SIGHUP end the trace through a self-pipe, whose
 *		read end the loop watches (t->sigfd).  Returns 0, or -1 after logging
 *		why.
 */
static int
catch_stop_signals(trace_state *t)
{
	int			stop_pipe[2];

	if (pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
	{
		log_error("cannot set up signals: %s", strerror(errno));
		return -1;
	}
	t->sigfd = stop_pipe[0];
	stop_pipe_w = stop_pipe[1];
	if (stop_on(SIGINT) < 0 || stop_on(SIGTERM) < 0 || stop_on(SIGHUP) < 0)
	{
		log_error("cannot set up signals: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * prepare_output
 *		The output's settings: format, the width of the set column, how an
 *		exited process is named, and with --pid of a backend the one process
 *		(and its parallel workers) whose records are printed.
 */
static void
prepare_output(trace_state *t, const probe_set *const *sets, size_t nsets)
{
	size_t		i;

	trace_out_init(&t->out, stdout, t->o.json);
	for (i = 0; i < nsets; i++)
		if ((int) strlen(sets[i]->name) > t->out.set_width)
			t->out.set_width = (int) strlen(sets[i]->name);
	t->out.exit_title = exit_title;
	t->out.exit_title_arg = &t->bpf;
	if (t->ntargets == 1 && t->targets[0].single)
	{
		t->out.focus = (uint32_t) t->targets[0].pid;
		t->out.focus_nspid = t->targets[0].nspid;
	}
}

/*
 * start_sets
 *		Load the pid filter, start the sets on it and track the targets;
 *		when streaming, open the event ring buffer.  Returns 0, or -1 after
 *		logging why.
 */
static int
start_sets(trace_state *t, const probe_set *const *sets, size_t nsets, int streaming)
{
	if (bpf_probes_start(&t->bpf, TRACE_EXIT_TITLES, 0, 0) < 0)
	{
		log_error("cannot load the BPF pid filter: %s", t->bpf.process.reason);
		return -1;
	}
	/*
	 * One backend (--pid): its rows stay its own, under its pid or its
	 * parallel workers' (folded rows would be no one's, and not printed).
	 * The other children, each tracked from its fork until a look lets it
	 * go, fold: with connection churn their rows would fill the tables,
	 * and the kernel's LRU would evict the backend's own.
	 */
	pid_retire_setup(t->bpf.tracked_fd, retired_role, &t->out);
	if (t->out.focus != 0)
		pid_retire_keep(focus_kept, &t->out);
	if (pset_runtime_start(&t->rt, PSET_MODE_TRACE, streaming, t->bpf.tracked_fd,
						   bpf_probes_chain(&t->bpf), sets, nsets) < 0)
	{
		log_error("out of memory");
		return -1;
	}
	track_targets(t);
	t->started_ns = bpf_probes_boot_ns();
	if (streaming)
	{
		t->rb = ring_buffer__new(t->rt.ctx.events_fd, on_record, t, NULL);
		if (t->rb == NULL)
		{
			log_error("cannot open the event ring buffer: %s", strerror(errno));
			return -1;
		}
	}
	return 0;
}

/*
 * trace_run
 *		Everything after option parsing.
 */
static int
trace_run(trace_state *t, const probe_set *const *sets, size_t nsets)
{
	char		err[512];
	char		detail[256];
	int			streaming = !t->o.stats && !t->o.histogram;
	int			ret = 1;
	size_t		i;

	t->sigfd = -1;
	log_set_level(t->o.log_level);
	pset_runtime_init(&t->rt);
	if (privileges_check("trace", err, sizeof(err)) < 0)
	{
		log_error("%s", err);
		return 1;
	}
	privileges_warn_trace();
	/* before the slow start: a Ctrl-C meanwhile still ends it cleanly */
	if (catch_stop_signals(t) < 0)
		goto cleanup;
	if (tracefs_ensure(detail, sizeof(detail)) == TRACEFS_FAILED)
		log_warn("tracefs: %s", detail);
	if (find_targets(t) < 0)
		goto cleanup;
	if (t->o.keep_exited_set && t->ntargets == 1 && t->targets[0].single)
	{
		/* known only now: --pid named a backend, not a postmaster */
		log_error("--keep-exited does nothing with --pid of a backend: its rows keep "
				  "its pid (see --help)");
		ret = 2;
		goto cleanup;
	}
	for (i = 0; i < t->ntargets; i++)
		load_layout(&t->targets[i]);
	prepare_output(t, sets, nsets);
	if (note_postmasters(t) < 0)
		goto cleanup;
	report_exit_titles();
	if (start_sets(t, sets, nsets, streaming) < 0)
		goto cleanup;
	print_status(t);
	(void) trace_out_flush(&t->out);	/* a failure shows at the loop's first drain */
	ret = run_loop(t);

cleanup:
	/* the stop pipe stays open: a late signal's handler writes to it */
	if (t->rb != NULL)
		ring_buffer__free(t->rb);
	pset_runtime_stop(&t->rt);
	bpf_probes_stop(&t->bpf);
	for (i = 0; i < t->ntargets; i++)
		if (t->targets[i].layout_ok)
			layout_free(&t->targets[i].layout);
	free(t->targets);
	free(t->pm_pids);
	return ret;
}

/*
 * named_in
 *		Is name one of the comma-separated items of list?
 */
static int
named_in(const char *list, const char *name)
{
	size_t		l = strlen(name);
	const char *p = list;

	while ((p = strstr(p, name)) != NULL)
	{
		if ((p == list || p[-1] == ',' || p[-1] == ' ') && (p[l] == ',' || p[l] == '\0'))
			return 1;
		p += l;
	}
	return 0;
}

/*
 * drop_daemon_only
 *		`all` means the sets a trace can show: one with no events, stats
 *		or histograms (exact timing, which runs in the daemon only) stays
 *		only where the list names it (then it says why it is unavailable).
 *		Returns the new count.
 */
static size_t
drop_daemon_only(const char *list, const probe_set **sets, size_t n)
{
	size_t		kept = 0;
	size_t		i;

	for (i = 0; i < n; i++)
		if (sets[i]->event || sets[i]->stats || sets[i]->histograms ||
			named_in(list, sets[i]->name))
			sets[kept++] = sets[i];
	return kept;
}

/*
 * trace's options that configure one module each: the module parses the
 * value and says what is wrong with it.
 */
static const module_option trace_module_options[] = {
	{'c', "--sched-clock", kernel_sched_configure_clock},
	{'q', "--query-id", pset_configure_query_ids},
	{'x', "--syscall-exit", syscall_exit_configure},
	{'T', "--hide-tracepoint", kernel_btf_hide_tp},
	{'b', "--buffer", pset_configure_stream_bytes},
};
#define N_TRACE_MODULE_OPTIONS \
	(sizeof(trace_module_options) / sizeof(trace_module_options[0]))

static const struct option trace_longopts[] = {
	{"probes", required_argument, NULL, 'P'},
	{"pid", required_argument, NULL, 'p'},
	{"pgdata", required_argument, NULL, 'D'},
	{"stats", no_argument, NULL, 's'},
	{"histogram", no_argument, NULL, 'H'},
	{"interval", required_argument, NULL, 'i'},
	{"duration", required_argument, NULL, 'd'},
	{"format", required_argument, NULL, 'f'},
	{"log-level", required_argument, NULL, 'l'},
	{"sched-clock", required_argument, NULL, 'c'},
	{"query-id", required_argument, NULL, 'q'},
	{"syscall-exit", required_argument, NULL, 'x'},
	{"assume-fexit", no_argument, NULL, 'F'},
	{"hide-tracepoint", required_argument, NULL, 'T'},
	{"no-storage-in-switch", no_argument, NULL, 'S'},
	{"buffer", required_argument, NULL, 'b'},
	{"keep-exited", required_argument, NULL, 'K'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0}
};

/*
 * trace_option
 *		Apply the `trace` option getopt_long returned as c (its value in
 *		optarg) to o, or to the module it configures.  -1: go on parsing;
 *		otherwise the exit status (0 after --help, 2 for a bad option or
 *		value).
 */
static int
trace_option(trace_opts *o, int c, char **argv)
{
	char		err[600];
	long		v;
	int			r;

	switch (c)
	{
		case 'P':
			o->probes = optarg;
			return -1;
		case 'p':
			if (parse_decimal(optarg, 1, INT_MAX, &v) < 0)
				return usage_error("--pid %s is not a pid", optarg);
			o->pid = (pid_t) v;
			return -1;
		case 'D':
			if (optarg[0] == '\0')
				return usage_error("--pgdata needs a directory%s", "");
			o->pgdata = optarg;
			return -1;
		case 's':
			o->stats = 1;
			return -1;
		case 'H':
			o->histogram = 1;
			return -1;
		case 'i':
			/* a summary copies every map: not more often than 10 times a second */
			if (parse_duration_ms(optarg, &o->interval_ms) < 0 ||
				o->interval_ms < MIN_INTERVAL_MS)
				return usage_error("--interval %s: use e.g. 500ms, 2s, 1m (100ms at least)", optarg);
			o->interval_set = 1;
			return -1;
		case 'd':
			if (parse_duration_ms(optarg, &o->duration_ms) < 0)
				return usage_error("--duration %s: use e.g. 500ms, 30s, 1m", optarg);
			return -1;
		case 'f':
			if (trace_parse_format(optarg, &o->json) < 0)
				return usage_error("--format %s: use text or json", optarg);
			return -1;
		case 'l':
			if (log_parse_level(optarg, &o->log_level) < 0)
				return usage_error("--log-level %s: use error, warn, info or debug", optarg);
			return -1;
		case 'F':
			syscall_exit_assume_fexit();
			return -1;
		case 'S':
			kernel_sched_no_storage_in_switch();
			return -1;
		case 'K':
			if (pid_retire_configure(optarg, err, sizeof(err)) < 0)
				return usage_error("--keep-exited: %s", err);
			o->keep_exited_set = 1;
			return -1;
		case 'h':
			fputs(trace_usage, stdout);
			return 0;
		case ':':
			parse_explain_option(argv, trace_longopts, c, err, sizeof(err));
			return usage_error("%s", err);
	}
	if (c == 'b')
		o->buffer_set = 1;
	r = parse_module_option(trace_module_options, N_TRACE_MODULE_OPTIONS, c,
							optarg, err, sizeof(err));
	if (r < 0)
		return usage_error("%s", err);
	if (r > 0)
	{
		parse_explain_option(argv, trace_longopts, c, err, sizeof(err));
		return usage_error("%s", err);
	}
	return -1;
}

/*
 * trace_main
 *		Parse `trace` options and run it.
 */
int
trace_main(int argc, char **argv)
{
	static trace_state t;
	const probe_set *sets[MAX_SETS];
	size_t		nsets = 0;
	char		err[600];
	int			c;
	int			r;

	memset(&t, 0, sizeof(t));
	t.o.interval_ms = 2000;
	t.o.log_level = LOG_LEVEL_WARN;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:h", trace_longopts, NULL)) != -1)
		if ((r = trace_option(&t.o, c, argv)) >= 0)
			return r;
	if (optind < argc)
		return usage_error("unexpected argument %s", argv[optind]);
	if (t.o.probes == NULL)
		return usage_error("--probes is required%s", "");
	if (strcmp(t.o.probes, "help") == 0)
	{
		list_sets();
		return 0;
	}
	if (t.o.pid != 0 && t.o.pgdata != NULL)
		return usage_error("--pid and --pgdata are exclusive%s", "");
	/* options that would do nothing are refused, not ignored */
	if (t.o.interval_set && !t.o.stats && !t.o.histogram)
		return usage_error("--interval needs --stats or --histogram (a stream prints each "
						   "event as it comes)%s", "");
	if (t.o.buffer_set && (t.o.stats || t.o.histogram))
		return usage_error("--buffer sizes the event stream, which --stats and --histogram "
						   "do not open%s", "");
	if (pset_parse_list(t.o.probes, sets, MAX_SETS, &nsets, err, sizeof(err)) < 0)
		return usage_error("--probes: %s", err);
	nsets = drop_daemon_only(t.o.probes, sets, nsets);
	return trace_run(&t, sets, nsets);
}
