/*
 * helper/daemon.c
 *	  The daemon's main loop: validate the target, take the locks, load
 *	  BPF, then serve clusters from one epoll loop until SIGTERM/SIGINT.
 *
 * One thread, one epoll set:
 *	  - a signalfd (SIGTERM/SIGINT: clean exit; SIGHUP: rescan now and
 *		re-read layout files),
 *	  - a 250 ms timerfd: snapshot the BPF map, publish every segment,
 *		expire slow control clients,
 *	  - a 1 s timerfd: discovery (postmasters appearing, exiting,
 *		restarting: find_postmasters), per-cluster upkeep, and in host-wide
 *		mode opening and closing clusters,
 *	  - each cluster's listening socket and control connections.
 * Modes: host-wide (no target: every cluster found, a cluster another
 * helper holds is skipped with a warning), --pgdata DIR and --pid PID (one
 * cluster; its lock is taken before anything else, a second helper exits 1).
 */
#include "daemon.h"

#include "bpf_probes.h"
#include "cluster.h"
#include "cluster_psets.h"
#include "control_server.h"
#include "discovery.h"
#include "escalation.h"
#include "evhandle.h"
#include "kernel_set.h"
#include "pid_retire.h"
#include "privileges.h"
#include "probe_set.h"
#include "procfs.h"
#include "segment_writer.h"
#include "syscall_exit.h"
#include "tracefs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#define PUBLISH_INTERVAL_MS		250
/* publications between two trims of the heap (give_back_heap): a minute */
#define HEAP_TRIM_TICKS			(60 * 1000 / PUBLISH_INTERVAL_MS)
#define DISCOVERY_INTERVAL_MS	1000
#define MAX_EVENTS				64
/*
 * Titles of exited processes the BPF side keeps (an LRU): pid_retire reads
 * one within a publication or two of the exit, to name its rows' role.
 */
#define DAEMON_EXIT_TITLES		4096

/*
 * A cluster not served (host-wide mode: another helper holds it, or it is
 * over the limits): warned about once, forgotten with its postmaster.
 */
typedef struct skipped
{
	uint64_t	dev;
	uint64_t	ino;
	pid_t		pm_pid;			/* the postmaster last found */
	uint64_t	pm_starttime;
	int			seen;
	int			failures;		/* cluster_open failures in a row */
	int64_t		retry_at_ms;	/* after a failure: not tried before */
} skipped;

/* After cluster_open failed: 2 s, doubling with each failure, at most 64 s. */
#define OPEN_RETRY_FIRST_MS		2000
#define OPEN_RETRY_MAX_SHIFT	5

typedef struct daemon_state
{
	const daemon_opts *opts;
	int			target_mode;	/* --pgdata or --pid */
	uint64_t	target_dev;
	uint64_t	target_ino;
	/* follow_pgdata: the identity last refused, and when to try again */
	uint64_t	refused_dev;
	uint64_t	refused_ino;
	int64_t		refused_retry_ms;
	cluster_env env;
	bpf_probes	bpf;
	int			epfd;
	int			sigfd;
	int			pubfd;
	int			discfd;
	ev_handle	sig_ev;
	ev_handle	pub_ev;
	ev_handle	disc_ev;
	cluster   **clusters;
	size_t		nclusters;
	size_t		capclusters;
	skipped    *skips;
	size_t		nskips;
	int			stop;
	pset_runtime psets;			/* always-on probe sets */
	unsigned	publish_ticks;
	/* find_postmasters: what the last scan of /proc left to look at */
	pid_t	   *roots;
	size_t		nroots;
	int			roots_valid;	/* 0: scan /proc at the next tick */
	uint32_t	execs[PGT_BPF_MAX_EXECS];
} daemon_state;

/* every served cluster's postmaster must fit the BPF filter's map */
_Static_assert(DAEMON_MAX_CLUSTERS_MAX <= PGT_BPF_MAX_POSTMASTERS,
			   "--max-clusters beyond the postmasters map");

/*
 * make_dirs
 *		mkdir -p dir (absolute): each directory it makes gets mode 0755.
 *		0, or -1 with the reason in err.
 */
static int
make_dirs(const char *dir, char *err, size_t errlen)
{
	char		tmp[PATH_MAX];
	char	   *p;
	char		saved;

	if (snprintf(tmp, sizeof(tmp), "%s", dir) >= (int) sizeof(tmp))
	{
		snprintf(err, errlen, "runtime directory path too long");
		return -1;
	}
	for (p = tmp + 1;; p++)
	{
		if (*p != '/' && *p != '\0')
			continue;
		saved = *p;
		*p = '\0';
		/* umask(077) is in force: a directory made here is chmod'ed 0755 */
		if (mkdir(tmp, 0755) == 0)
		{
			if (chmod(tmp, 0755) < 0)
			{
				snprintf(err, errlen, "cannot chmod %s: %s", tmp, strerror(errno));
				return -1;
			}
		}
		else if (errno != EEXIST)
		{
			snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
			return -1;
		}
		*p = saved;
		if (saved == '\0')
			return 0;
	}
}

/*
 * runtime_dir_check
 *		The runtime directory must be a real directory (no symlink), not
 *		writable by its group or the world (/run/postgresql is 2775:
 *		every member of its group could plant segments and sockets).  Another owner than root is allowed (test suites
 *		give each cluster its own directory) with a warning: the files in
 *		it are opened defensively (O_NOFOLLOW, O_EXCL, checks on the lock
 *		file) so its owner cannot turn the helper against other files.
 *		With create, a missing one is made 0755 (parents too).  Returns 0
 *		or -1 with err.
 */
int
runtime_dir_check(const char *dir, int create, char *err, size_t errlen)
{
	struct stat st;

	if (dir[0] != '/')
	{
		snprintf(err, errlen, "runtime directory %s must be an absolute path", dir);
		return -1;
	}
	if (lstat(dir, &st) < 0)
	{
		if (errno != ENOENT || !create)
		{
			snprintf(err, errlen, "runtime directory %s: %s", dir, strerror(errno));
			return -1;
		}
		if (make_dirs(dir, err, errlen) < 0)
			return -1;
		log_info("created runtime directory %s (0755)", dir);
		if (lstat(dir, &st) < 0)
		{
			snprintf(err, errlen, "runtime directory %s: %s", dir, strerror(errno));
			return -1;
		}
	}
	if (!S_ISDIR(st.st_mode))
	{
		snprintf(err, errlen, "runtime directory %s is not a directory (or is a symlink)", dir);
		return -1;
	}
	if (st.st_mode & (S_IWOTH | S_IWGRP))
	{
		snprintf(err, errlen, "runtime directory %s is %s-writable (mode %04o): refusing "
				 "(its other writers could replace segments and sockets of clusters not "
				 "theirs); use a directory of its own, such as /run/pg_tracer",
				 dir, (st.st_mode & S_IWOTH) ? "world" : "group",
				 (unsigned) (st.st_mode & 07777));
		return -1;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid())
		log_warn("runtime directory %s belongs to uid %d: that user can replace "
				 "pg-tracer's segments and sockets", dir, (int) st.st_uid);
	return 0;
}

/*
 * add_fd
 *		Register fd in the epoll set with tag h.
 */
static int
add_fd(daemon_state *d, int fd, ev_handle *h, ev_kind kind)
{
	struct epoll_event ev;

	h->kind = kind;
	h->owner = d;
	h->index = -1;
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.ptr = h;
	return epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev);
}

/*
 * make_timer
 *		A periodic CLOCK_MONOTONIC timerfd; the first expiry comes soon.
 */
static int
make_timer(int interval_ms)
{
	struct itimerspec its;
	int			fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);

	if (fd < 0)
		return -1;
	memset(&its, 0, sizeof(its));
	its.it_interval.tv_sec = interval_ms / 1000;
	its.it_interval.tv_nsec = (long) (interval_ms % 1000) * 1000000L;
	its.it_value = its.it_interval;
	if (timerfd_settime(fd, 0, &its, NULL) < 0)
	{
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * detect_kprobes
 *		Capability row "kprobes": can kprobes attach?
 */
static void
detect_kprobes(probe_status *s)
{
	snprintf(s->mechanism, sizeof(s->mechanism), "perf_event kprobe");
	s->state = pset_kprobes_usable(s->reason, sizeof(s->reason)) ?
		PGT_PROBE_AVAILABLE : PGT_PROBE_UNAVAILABLE;
}

/*
 * detect_tracefs
 *		Capability row "tracefs": mount it when missing, say what happened.
 */
static void
detect_tracefs(probe_status *s)
{
	tracefs_result r = tracefs_ensure(s->reason, sizeof(s->reason));

	snprintf(s->mechanism, sizeof(s->mechanism), "tracefs");
	s->state = r == TRACEFS_FAILED ? PGT_PROBE_UNAVAILABLE : PGT_PROBE_AVAILABLE;
	if (r == TRACEFS_FAILED)
		log_warn("tracefs: %s", s->reason);
	else
		log_info("tracefs: %s", s->reason);
}

/*
 * add_cluster
 *		Remember an open cluster.
 */
static int
add_cluster(daemon_state *d, cluster *c)
{
	if (d->nclusters == d->capclusters)
	{
		size_t		ncap = d->capclusters ? d->capclusters * 2 : 4;
		cluster   **n = realloc(d->clusters, ncap * sizeof(*n));

		if (n == NULL)
			return -1;
		d->clusters = n;
		d->capclusters = ncap;
	}
	d->clusters[d->nclusters++] = c;
	d->env.nclusters = d->nclusters;
	return 0;
}

/*
 * find_cluster
 *		The open cluster of data directory dev/ino, or NULL.
 */
static cluster *
find_cluster(daemon_state *d, uint64_t dev, uint64_t ino)
{
	size_t		i;

	for (i = 0; i < d->nclusters; i++)
		if (d->clusters[i]->dev == dev && d->clusters[i]->ino == ino)
			return d->clusters[i];
	return NULL;
}

/*
 * find_skip
 *		The skipped-cluster record of dev/ino, or NULL.
 */
static skipped *
find_skip(daemon_state *d, uint64_t dev, uint64_t ino)
{
	size_t		i;

	for (i = 0; i < d->nskips; i++)
		if (d->skips[i].dev == dev && d->skips[i].ino == ino)
			return &d->skips[i];
	return NULL;
}

/*
 * note_skip
 *		A found cluster is not served, for reason: warn once per cluster
 *		(until it is served).
 */
static void
note_skip(daemon_state *d, const pm_info *pm, const char *reason)
{
	skipped    *sk = find_skip(d, pm->dev, pm->ino);

	if (sk == NULL)
	{
		skipped    *n = realloc(d->skips, (d->nskips + 1) * sizeof(*n));

		if (n == NULL)
			return;
		d->skips = n;
		sk = &d->skips[d->nskips++];
		sk->dev = pm->dev;
		sk->ino = pm->ino;
		sk->seen = 0;
		sk->failures = 0;
		sk->retry_at_ms = 0;
	}
	sk->pm_pid = pm->pid;
	sk->pm_starttime = pm->starttime;
	if (!sk->seen)
		log_warn("not serving %s: %s", pm->data_dir, reason);
	sk->seen = 1;
}

/*
 * forget_skips
 *		Drop the records of skipped clusters whose postmaster is gone: a
 *		host where clusters come and go (tests, CI) would otherwise keep
 *		one for each forever.  A cluster found again is warned about again.
 */
static void
forget_skips(daemon_state *d)
{
	size_t		i = 0;

	while (i < d->nskips)
	{
		if (!procfs_alive(d->skips[i].pm_pid, d->skips[i].pm_starttime))
			d->skips[i] = d->skips[--d->nskips];
		else
			i++;
	}
}

/*
 * over_cluster_limits
 *		Would serving one more cluster of owner uid pass --max-clusters, or
 *		DAEMON_MAX_USER_CLUSTERS for an owner that is no system account?
 *		Each cluster costs a segment in the runtime directory (a tmpfs,
 *		shared with the host's other services) and three descriptors, and
 *		any user of the host can start clusters.  1 with the reason in why.
 */
static int
over_cluster_limits(const daemon_state *d, uid_t uid, char *why, size_t whylen)
{
	size_t		same = 0;
	size_t		i;

	if (d->nclusters >= (size_t) d->opts->max_clusters)
	{
		snprintf(why, whylen, "%zu clusters are served already (--max-clusters)",
				 d->nclusters);
		return 1;
	}
	for (i = 0; i < d->nclusters; i++)
		same += d->clusters[i]->uid == uid;
	if (uid > PGT_SYSTEM_MAX_UID && same >= DAEMON_MAX_USER_CLUSTERS)
	{
		snprintf(why, whylen, "uid %u, not a system account, has %d served already",
				 (unsigned) uid, DAEMON_MAX_USER_CLUSTERS);
		return 1;
	}
	return 0;
}

/*
 * open_failed
 *		cluster_open failed for pm's data directory (a full runtime file
 *		system, say): it is tried again after a delay that doubles with
 *		each failure, and the failure is logged when it changes or at most
 *		once per try, not each tick: each try builds a segment.
 */
static void
open_failed(daemon_state *d, const pm_info *pm, const char *err)
{
	skipped    *sk;
	int			shift;

	note_skip(d, pm, err);
	sk = find_skip(d, pm->dev, pm->ino);
	if (sk == NULL)
		return;
	shift = sk->failures < OPEN_RETRY_MAX_SHIFT ? sk->failures : OPEN_RETRY_MAX_SHIFT;
	sk->failures++;
	sk->retry_at_ms = control_now_ms() + ((int64_t) OPEN_RETRY_FIRST_MS << shift);
	log_error("cannot serve %s: %s (try %d; the next in %lld s)", pm->data_dir, err,
			  sk->failures, (long long) (((int64_t) OPEN_RETRY_FIRST_MS << shift) / 1000));
}

/*
 * open_found_cluster
 *		Host-wide mode: a postmaster of a cluster we do not serve yet.
 *		Within the limits (over_cluster_limits), take its lock (skip it,
 *		warning once, when another helper has it) and open it.
 */
static cluster *
open_found_cluster(daemon_state *d, const pm_info *pm)
{
	char		err[512];
	char		why[600];
	skipped    *sk;
	cluster    *c;
	pid_t		holder;
	int			lock_fd;
	int			r;

	sk = find_skip(d, pm->dev, pm->ino);
	if (sk != NULL && control_now_ms() < sk->retry_at_ms)
		return NULL;			/* cluster_open failed lately: back off */
	if (over_cluster_limits(d, pm->uid, why, sizeof(why)))
	{
		note_skip(d, pm, why);
		return NULL;
	}
	r = cluster_lock(d->opts->runtime_dir, pm->dev, pm->ino, &lock_fd, &holder,
					 err, sizeof(err));
	if (r != 0)
	{
		if (r == 1)
			snprintf(why, sizeof(why), "another pg-tracer (pid %d) serves it", (int) holder);
		else
			snprintf(why, sizeof(why), "%s", err);
		note_skip(d, pm, why);
		return NULL;
	}
	c = cluster_open(&d->env, pm->dev, pm->ino, pm->uid, pm->gid, pm->data_dir,
					 lock_fd, err, sizeof(err));
	if (c == NULL)
	{
		open_failed(d, pm, err);
		return NULL;
	}
	sk = find_skip(d, pm->dev, pm->ino);
	if (sk != NULL)
	{
		log_info("%s: serving it now", pm->data_dir);
		*sk = d->skips[--d->nskips];
	}
	if (add_cluster(d, c) < 0)
	{
		log_error("out of memory");
		cluster_close(c, PGT_WRITER_STOPPED);
		return NULL;
	}
	return c;
}

/*
 * escalating_clusters
 *		How many served clusters could ask for a window: those with a
 *		postmaster whose extension published its layout.  They share the
 *		escalation budget; a cluster without pg_tracer loaded (say, the
 *		administrator's own "main") has no control socket client and
 *		takes no share.
 */
static int
escalating_clusters(const daemon_state *d)
{
	size_t		i;
	int			n = 0;

	for (i = 0; i < d->nclusters; i++)
		n += d->clusters[i]->attached != 0 && d->clusters[i]->layout_loaded != 0;
	return n;
}

/*
 * give_back_heap
 *		Hand the kernel back the heap's free pages.  The per-second copies
 *		of the maps are large buffers, allocated and freed each second, and
 *		glibc serves them from the heap once libbpf's freeing of the
 *		kernel's BTF (some 5 MB) has raised its mmap threshold: what they
 *		leave free between two seconds stays resident (46.8 MB held against
 *		37 MB in use over an hour's soak, bench/RESULTS.md).  Trimming once a
 *		minute costs a walk of the heap and, the next second, the page
 *		faults of the buffers touched again; a fixed mmap threshold instead,
 *		tried, doubled the helper's CPU (a map and an unmap of every copy).
 */
static void
give_back_heap(void)
{
	(void) malloc_trim(0);		/* 1 when it gave back memory: either is fine */
}

/*
 * publish_all
 *		Expiry of escalation windows, one snapshot of the map, one
 *		publication per cluster, and expiry of slow control clients.
 */
static void
publish_all(daemon_state *d)
{
	const tracked_row *rows = NULL;
	size_t		n = 0;
	int64_t		now = control_now_ms();
	size_t		i;

	/* windows end on time even when no cluster publishes or asks */
	escalation_set_clusters(escalating_clusters(d));
	escalation_tick(escalation_now_us());
	if (bpf_probes_snapshot(&d->bpf, &rows, &n) < 0)
		log_warn("BPF: cannot read the tracked map");
	/* probe-set aggregates are copied once a second, not every 250 ms */
	if (d->publish_ticks++ % (1000 / PUBLISH_INTERVAL_MS) == 0)
		pset_runtime_collect(&d->psets);
	for (i = 0; i < d->nclusters; i++)
	{
		cluster_publish(d->clusters[i], rows, n);
		control_server_sweep(&d->clusters[i]->ctl, now);
	}
	if (d->publish_ticks % HEAP_TRIM_TICKS == 0)
		give_back_heap();
}

/*
 * known_child
 *		discovery_known_fn: pid is a tracked child of a served postmaster.
 */
static int
known_child(pid_t pid, void *arg)
{
	const daemon_state *d = arg;
	size_t		i;

	for (i = 0; i < d->nclusters; i++)
		if (cluster_knows_child(d->clusters[i], (uint32_t) pid))
			return 1;
	return 0;
}

/*
 * targets_served
 *		With --pgdata: every target cluster is attached to a postmaster that
 *		is still alive.  No other postmaster can own its data directory
 *		meanwhile (postmaster.pid is its lock), so a scan of /proc could find
 *		nothing new.
 */
static int
targets_served(const daemon_state *d)
{
	size_t		i;

	if (!d->target_mode || d->nclusters == 0)
		return 0;
	for (i = 0; i < d->nclusters; i++)
		if (!d->clusters[i]->attached ||
			!procfs_alive(d->clusters[i]->pm.pid, d->clusters[i]->pm.starttime))
			return 0;
	return 1;
}

/*
 * cmp_pid
 *		qsort comparator of pids.
 */
static int
cmp_pid(const void *a, const void *b)
{
	pid_t		x = *(const pid_t *) a;
	pid_t		y = *(const pid_t *) b;

	return x < y ? -1 : x > y;
}

/*
 * add_roots
 *		The n pids of execs join d->roots (each once).  Returns 0, or -1 out
 *		of memory.
 */
static int
add_roots(daemon_state *d, const uint32_t *execs, size_t n)
{
	pid_t	   *r;
	size_t		i;
	size_t		k = 0;

	if (n == 0)
		return 0;
	r = realloc(d->roots, (d->nroots + n) * sizeof(*r));
	if (r == NULL)
		return -1;
	for (i = 0; i < n; i++)
		r[d->nroots + i] = (pid_t) execs[i];
	d->roots = r;
	d->nroots += n;
	qsort(r, d->nroots, sizeof(*r), cmp_pid);
	for (i = 0; i < d->nroots; i++)
		if (k == 0 || r[i] != r[k - 1])
			r[k++] = r[i];
	d->nroots = k;
	return 0;
}

/*
 * find_postmasters
 *		The running postmasters (with --pgdata, only the target's) into
 *		*pms (malloc'd), for discover.  Every postmaster was started by an
 *		exec of a postgres binary, which the BPF side notes (bpf_probes_
 *		drain_execs).  So /proc is scanned in full only the first time, after
 *		SIGHUP, and when notes were lost or there are none; the scan keeps
 *		its roots (postgres processes whose parent is not one), and later
 *		ticks look at those and the newly exec'd alone, not at a /proc file
 *		of every process of the host.  Returns 0 or -1.
 */
static int
find_postmasters(daemon_state *d, pm_info **pms, size_t *npms)
{
	int			n = bpf_probes_drain_execs(&d->bpf, d->execs);
	int			notes = d->bpf.execs_fd >= 0;

	if (n >= 0 && d->roots_valid)
	{
		if (add_roots(d, d->execs, (size_t) n) == 0)
			return discovery_check_pids(d->roots, &d->nroots, d->target_mode,
										d->target_dev, d->target_ino, pms, npms);
		log_warn("discovery: out of memory: scanning /proc");
	}
	else if (notes && d->roots_valid)
		log_info("discovery: exec notes were lost (over %d execs of postgres binaries "
				 "since the last look): scanning /proc", PGT_BPF_MAX_EXECS);
	free(d->roots);
	d->roots = NULL;
	d->nroots = 0;
	d->roots_valid = 0;
	if (discovery_scan(pms, npms, d->target_mode, d->target_dev, d->target_ino,
					   known_child, d, notes ? &d->roots : NULL, &d->nroots) < 0)
		return -1;
	d->roots_valid = notes;
	return 0;
}

/*
 * found_pm
 *		The first of pms[0..n) that serves c's data directory, or NULL.
 *		The first, as open_found_cluster takes it: two postmasters on one
 *		data directory (containers sharing a volume) must not make the
 *		cluster move between them each tick.
 */
static const pm_info *
found_pm(const cluster *c, const pm_info *pms, size_t n)
{
	size_t		j;

	for (j = 0; j < n; j++)
		if (pms[j].dev == c->dev && pms[j].ino == c->ino)
			return &pms[j];
	return NULL;
}

/*
 * retire_postmaster
 *		Detach c from its postmaster when that exited or another one owns
 *		the data directory (found), and drop the old postmaster's rows.
 */
static void
retire_postmaster(cluster *c, const pm_info *found)
{
	uint32_t	pm = (uint32_t) c->pm.pid;

	if (!c->attached)
		return;
	if (!procfs_alive(c->pm.pid, c->pm.starttime))
		cluster_detach(c, "postmaster exited");
	else if (found != NULL &&
			 (found->pid != c->pm.pid || found->starttime != c->pm.starttime))
		cluster_detach(c, "another postmaster owns the data directory");
	else
		return;
	cluster_psets_forget(c, pm);
}

/*
 * resolve_pgdata
 *		The data directory the path pgdata names now: its real path into
 *		data_dir, its stat into *st.  Returns 0, or -1 with err set when it
 *		is missing or not a PostgreSQL data directory.
 */
static int
resolve_pgdata(const char *pgdata, char *data_dir, size_t dlen, struct stat *st,
			   char *err, size_t errlen)
{
	char		real[PATH_MAX];
	char		ver[PATH_MAX + 16];
	struct stat vst;

	if (realpath(pgdata, real) == NULL)
	{
		snprintf(err, errlen, "--pgdata %s: %s", pgdata, strerror(errno));
		return -1;
	}
	if (stat(real, st) < 0 || !S_ISDIR(st->st_mode))
	{
		snprintf(err, errlen, "--pgdata %s is not a directory", pgdata);
		return -1;
	}
	snprintf(ver, sizeof(ver), "%s/PG_VERSION", real);
	if (stat(ver, &vst) < 0 || !S_ISREG(vst.st_mode))
	{
		snprintf(err, errlen, "--pgdata %s is not a PostgreSQL data directory "
				 "(no PG_VERSION file)", pgdata);
		return -1;
	}
	snprintf(data_dir, dlen, "%s", real);
	return 0;
}

/*
 * follow_pgdata
 *		--pgdata, while its cluster has no postmaster: when the path names
 *		another data directory now (an upgrade that moved a symlink, a
 *		restore renamed into place, initdb after rm -rf), serve that one.
 *		The cluster is keyed by the directory's identity, not its path, and
 *		its extension looks for the segment of the new identity: without
 *		this the helper would wait for the old directory for ever.  The
 *		old identity's segment, socket and lock go (nothing will read
 *		them); the new one's lock is taken and its segment built.  Nothing
 *		changes while the path names no data directory (a restore under
 *		way).  A new directory another helper serves, or whose segment
 *		cannot be built, is logged and tried again a minute later.
 */
#define FOLLOW_RETRY_MS			60000

static void
follow_pgdata(daemon_state *d)
{
	char		data_dir[PATH_MAX];
	char		err[1024];
	struct stat st;
	cluster    *c;
	pid_t		holder;
	int			lock_fd;
	int			r;

	if (d->opts->pgdata == NULL || d->nclusters != 1 || d->clusters[0]->attached ||
		resolve_pgdata(d->opts->pgdata, data_dir, sizeof(data_dir), &st,
					   err, sizeof(err)) < 0 ||
		((uint64_t) st.st_dev == d->target_dev && (uint64_t) st.st_ino == d->target_ino))
		return;
	if ((uint64_t) st.st_dev == d->refused_dev && (uint64_t) st.st_ino == d->refused_ino &&
		control_now_ms() < d->refused_retry_ms)
		return;
	r = cluster_lock(d->opts->runtime_dir, st.st_dev, st.st_ino, &lock_fd, &holder,
					 err, sizeof(err));
	if (r == 1)
		snprintf(err, sizeof(err), "another pg-tracer (pid %d) serves it", (int) holder);
	c = r == 0 ? cluster_open(&d->env, st.st_dev, st.st_ino, st.st_uid, st.st_gid,
							  data_dir, lock_fd, err, sizeof(err)) : NULL;
	if (c == NULL)
	{
		log_error("--pgdata %s names another data directory now (%s), not served: %s "
				  "(tried again in %d s)", d->opts->pgdata, data_dir, err,
				  FOLLOW_RETRY_MS / 1000);
		d->refused_dev = (uint64_t) st.st_dev;
		d->refused_ino = (uint64_t) st.st_ino;
		d->refused_retry_ms = control_now_ms() + FOLLOW_RETRY_MS;
		return;
	}
	log_info("--pgdata %s names another data directory now (%s, was %s): serving it",
			 d->opts->pgdata, data_dir, d->clusters[0]->data_dir);
	cluster_forget(d->clusters[0]);
	d->clusters[0] = c;
	d->target_dev = (uint64_t) st.st_dev;
	d->target_ino = (uint64_t) st.st_ino;
	d->roots_valid = 0;			/* the new postmaster: look in /proc again */
}

/*
 * discover
 *		Match running postmasters with clusters: detach from exited ones,
 *		attach to new or restarted ones, open/forget clusters in host-wide
 *		mode.
 */
static void
discover(daemon_state *d)
{
	pm_info    *pms = NULL;
	size_t		npms = 0;
	size_t		i;
	size_t		j;
	int64_t		now = control_now_ms();

	if (targets_served(d))
	{
		for (i = 0; i < d->nclusters; i++)
			cluster_tick(d->clusters[i]);
		return;
	}
	follow_pgdata(d);
	if (find_postmasters(d, &pms, &npms) < 0)
		return;

	/*
	 * Every detach before any attach: a postmaster that exited may have
	 * left its pid to another cluster's new one within the tick, and a
	 * later detach would take that pid out of the filter again.
	 */
	for (i = 0; i < d->nclusters; i++)
		retire_postmaster(d->clusters[i], found_pm(d->clusters[i], pms, npms));
	for (i = 0; i < d->nclusters; i++)
	{
		cluster    *c = d->clusters[i];
		const pm_info *found = found_pm(c, pms, npms);

		if (!c->attached && found != NULL)
			cluster_attach(c, found);
		cluster_tick(c);
	}

	if (!d->target_mode)
	{
		forget_skips(d);
		for (j = 0; j < npms; j++)
		{
			cluster    *c;

			if (find_cluster(d, pms[j].dev, pms[j].ino) != NULL)
				continue;
			c = open_found_cluster(d, &pms[j]);
			if (c != NULL)
			{
				cluster_attach(c, &pms[j]);
				cluster_tick(c);
			}
		}
		/* forget clusters whose postmaster has been gone for a while */
		for (i = 0; i < d->nclusters;)
		{
			cluster    *c = d->clusters[i];

			if (!c->attached &&
				now - c->waiting_since_ms > (int64_t) d->opts->forget_after_s * 1000)
			{
				log_info("%s: postmaster gone for %d s, forgetting it and its segment",
						 c->data_dir, d->opts->forget_after_s);
				d->clusters[i] = d->clusters[--d->nclusters];
				d->env.nclusters = d->nclusters;
				cluster_forget(c);
				continue;
			}
			i++;
		}
	}
	free(pms);
}

/*
 * drain_fd
 *		Read a timerfd's expiration count (ignored).
 */
static void
drain_fd(int fd)
{
	uint64_t	v;
	ssize_t		r = read(fd, &v, sizeof(v));

	(void) r;
}

/*
 * on_signal
 *		Handle what the signalfd delivered.
 */
static void
on_signal(daemon_state *d)
{
	struct signalfd_siginfo si;
	size_t		i;

	while (read(d->sigfd, &si, sizeof(si)) == (ssize_t) sizeof(si))
	{
		if (si.ssi_signo == SIGHUP)
		{
			log_info("SIGHUP: rescanning and re-reading layout files");
			for (i = 0; i < d->nclusters; i++)
				cluster_force_layout_reload(d->clusters[i]);
			d->roots_valid = 0;
			discover(d);
			publish_all(d);
		}
		else
		{
			log_info("%s from pid %d: stopping", strsignal((int) si.ssi_signo),
					 (int) si.ssi_pid);
			d->stop = 1;
		}
	}
}

/*
 * resolve_target
 *		--pgdata / --pid: check the target and find its data directory
 *		identity.  Returns 0 or -1 with err set.
 */
static int
resolve_target(daemon_state *d, char *data_dir, size_t dlen, uid_t *uid, gid_t *gid,
			   char *err, size_t errlen)
{
	const daemon_opts *o = d->opts;
	struct stat st;

	if (o->pgdata != NULL)
	{
		if (resolve_pgdata(o->pgdata, data_dir, dlen, &st, err, errlen) < 0)
			return -1;
		d->target_dev = (uint64_t) st.st_dev;
		d->target_ino = (uint64_t) st.st_ino;
		*uid = st.st_uid;
		*gid = st.st_gid;
		return 0;
	}
	else
	{
		pm_info		pm;
		char		why[512];

		if (discovery_check_postmaster(o->pid, &pm, why, sizeof(why)) < 0)
		{
			snprintf(err, errlen, "--pid %d is not a PostgreSQL postmaster: %s",
					 (int) o->pid, why);
			return -1;
		}
		snprintf(data_dir, dlen, "%s", pm.data_dir);
		d->target_dev = pm.dev;
		d->target_ino = pm.ino;
		*uid = pm.uid;
		*gid = pm.gid;
		return 0;
	}
}

/* The daemon's probe sets, for the escalation switch of held kernel sets. */
static pset_runtime *held_sets;

/* The state the held sets are to take (1 attached, 0 held), -1: as they are */
static int	kernel_window_pending = -1;

/*
 * kernel_window_switch
 *		--kernel-sets escalated: an escalation window opened (on) or closed.
 *		Only noted here: the request that opened or closed it is answered
 *		first, and apply_kernel_window does the attaching or detaching
 *		before the loop waits again.  Detaching a few dozen programs is
 *		quick on hardware, but each fexit link rewrites kernel text, and on
 *		an emulated CPU (test/oldkernel) that took longer than the 2 s a
 *		backend waits for an answer: pg_tracer_deescalate() failed though
 *		the window had closed.
 */
static int
kernel_window_switch(int on)
{
	kernel_window_pending = on;
	return 0;
}

/*
 * apply_kernel_window
 *		Attach or hold the kernel sets as the last window switch asked
 *		(a window opened and closed since gives nothing to do: holding is
 *		idempotent).
 */
static void
apply_kernel_window(void)
{
	int			on = kernel_window_pending;
	int			n;

	if (on < 0)
		return;
	kernel_window_pending = -1;
	n = held_sets ? pset_runtime_hold(held_sets, !on) : 0;
	if (n > 0)
		log_info("kernel sets: %d %s", n, on ? "attached for an escalation window" : "held");
}

/*
 * hold_kernel_sets
 *		--kernel-sets escalated: from now on the kernel sets run only inside
 *		escalation windows (held at once unless one is open).  Without a
 *		running kernel set there is nothing to hold, and the windows must
 *		not be granted on their behalf.
 */
static void
hold_kernel_sets(daemon_state *d)
{
	if (pset_runtime_hold(&d->psets, 1) == 0)
	{
		log_info("--kernel-sets escalated: no kernel set runs, nothing to hold");
		return;
	}
	held_sets = &d->psets;
	escalation_attach_kernel(kernel_window_switch);
}

/*
 * release_kernel_sets
 *		Undo hold_kernel_sets before the sets stop.
 */
static void
release_kernel_sets(void)
{
	if (held_sets == NULL)
		return;
	escalation_detach_kernel();
	held_sets = NULL;
}

/*
 * role_of_pid
 *		pid_retire's source of roles: a served cluster's record of the
 *		process, else, for one that is gone, the title it had as it exited
 *		(exit_titles).  0 when neither tells.
 */
static uint32_t
role_of_pid(void *arg, uint32_t pid, int alive)
{
	daemon_state *d = arg;
	char		title[PGT_EXIT_TITLE_LEN];
	int			n;
	size_t		i;

	for (i = 0; i < d->nclusters; i++)
	{
		const cluster_proc *p = cluster_find_proc(d->clusters[i], pid);

		if (p != NULL && p->role != PGT_ROLE_UNKNOWN)
			return p->role;
	}
	if (alive || (n = bpf_probes_exit_title(&d->bpf, pid, title, sizeof(title))) <= 0)
		return 0;
	return procfs_classify_title(title, (size_t) n);
}

/*
 * start_probe_sets
 *		Start the always-on probe sets named by --probes (default all; none
 *		for none) on the daemon's pid filter.  Returns -1 on a bad list.
 */
static int
start_probe_sets(daemon_state *d)
{
	const probe_set *sets[64];
	size_t		n = 0;
	char		err[512];
	const char *list = d->opts->probes ? d->opts->probes : "all";

	if (strcmp(list, "none") != 0 &&
		pset_parse_list(list, sets, 64, &n, err, sizeof(err)) < 0)
	{
		log_error("--probes: %s", err);
		return -1;
	}
	pid_retire_setup(d->bpf.maps_ok ? d->bpf.tracked_fd : -1, role_of_pid, d);
	if (pset_runtime_start(&d->psets, PSET_MODE_DAEMON, 0,
						   d->bpf.maps_ok ? d->bpf.tracked_fd : -1,
						   bpf_probes_chain(&d->bpf), sets, n) < 0)
	{
		log_error("probe sets: out of memory");
		return -1;
	}
	if (d->opts->kernel_escalated)
		hold_kernel_sets(d);
	return 0;
}

/*
 * claim_target
 *		What is checked before anything is set up: the privileges, the
 *		runtime directory and, with --pgdata or --pid, the data directory to
 *		serve (data_dir, its owner in *uid and *gid); then that directory's
 *		lock, which makes this helper its only one (*lock_fd, for the caller
 *		to hand on or close).  Returns 0, or -1 after logging why.
 */
static int
claim_target(daemon_state *d, char *data_dir, size_t dlen, uid_t *uid, gid_t *gid,
			 int *lock_fd)
{
	const daemon_opts *opts = d->opts;
	char		err[1024];
	pid_t		holder;
	int			r;

	if (privileges_check("daemon", err, sizeof(err)) < 0 ||
		(d->target_mode &&
		 resolve_target(d, data_dir, dlen, uid, gid, err, sizeof(err)) < 0) ||
		runtime_dir_check(opts->runtime_dir, 1, err, sizeof(err)) < 0)
	{
		log_error("%s", err);
		return -1;
	}
	privileges_warn_daemon();
	(void) seg_writer_remove_stale_tmp(opts->runtime_dir);
	if (!d->target_mode)
		return 0;
	r = cluster_lock(opts->runtime_dir, d->target_dev, d->target_ino,
					 lock_fd, &holder, err, sizeof(err));
	if (r == 1)
		log_error("another pg-tracer (pid %d) already serves %s", (int) holder, data_dir);
	else if (r < 0)
		log_error("%s", err);
	return r == 0 ? 0 : -1;
}

/*
 * open_event_loop
 *		Block the signals the daemon handles (read from a signalfd), and
 *		put that fd and the publication and discovery timers on the epoll
 *		set.  Returns 0, or -1 after logging why.
 */
static int
open_event_loop(daemon_state *d)
{
	sigset_t	mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0 ||
		(d->sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC)) < 0)
	{
		log_error("signalfd: %s", strerror(errno));
		return -1;
	}
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
		log_warn("cannot ignore SIGPIPE");
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	d->pubfd = make_timer(PUBLISH_INTERVAL_MS);
	d->discfd = make_timer(DISCOVERY_INTERVAL_MS);
	if (d->epfd < 0 || d->pubfd < 0 || d->discfd < 0 ||
		add_fd(d, d->sigfd, &d->sig_ev, EV_SIGNAL) < 0 ||
		add_fd(d, d->pubfd, &d->pub_ev, EV_PUBLISH_TIMER) < 0 ||
		add_fd(d, d->discfd, &d->disc_ev, EV_DISCOVERY_TIMER) < 0)
	{
		log_error("cannot set up the event loop: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * start_probes
 *		Look at what this kernel offers, load the foundation's programs and
 *		start the probe sets --probes names.  A foundation that cannot load
 *		is reported in the segment, not fatal.  Returns -1 on a bad list.
 */
static int
start_probes(daemon_state *d)
{
	detect_tracefs(&d->env.tracefs);
	detect_kprobes(&d->env.kprobes);
	syscall_exit_detect(&d->env.fexit);
	(void) bpf_probes_start(&d->bpf, DAEMON_EXIT_TITLES, 1, (uint32_t) kset_miss_events);
	if (d->bpf.execs_fd >= 0)
		log_info("discovery: /proc is scanned once; then only the processes that exec "
				 "a postgres binary are looked at (sched_process_exec)");
	else
		log_info("discovery: no exec notes (%s): /proc is scanned every second",
				 d->bpf.exec_reason);
	if (start_probe_sets(d) < 0)
		return -1;
	d->env.psets = &d->psets;
	d->env.runtime_dir = d->opts->runtime_dir;
	d->env.epfd = d->epfd;
	d->env.segment_rows = d->opts->segment_rows;
	d->env.bpf = &d->bpf;
	return 0;
}

/*
 * serve_target
 *		With --pgdata or --pid, open the one cluster to serve; it takes
 *		over lock_fd (and closes it on failure).  Returns 0, or -1 after
 *		logging why.
 */
static int
serve_target(daemon_state *d, const char *data_dir, uid_t uid, gid_t gid, int lock_fd)
{
	char		err[1024];
	cluster    *c = cluster_open(&d->env, d->target_dev, d->target_ino, uid, gid,
								 data_dir, lock_fd, err, sizeof(err));

	if (c == NULL)
	{
		log_error("cannot serve %s: %s", data_dir, err);
		return -1;
	}
	if (add_cluster(d, c) < 0)
	{
		log_error("out of memory");
		cluster_close(c, PGT_WRITER_STOPPED);
		return -1;
	}
	return 0;
}

/*
 * dispatch_event
 *		Handle one ready fd of the event loop.  Returns 1 when the events
 *		after it in this round may be stale (clusters closed), else 0.
 */
static int
dispatch_event(daemon_state *d, ev_handle *h, uint32_t events)
{
	switch (h->kind)
	{
		case EV_SIGNAL:
			on_signal(d);
			return 1;			/* SIGHUP discovers: clusters may have closed */
		case EV_PUBLISH_TIMER:
			drain_fd(d->pubfd);
			publish_all(d);
			return 0;
		case EV_DISCOVERY_TIMER:
			drain_fd(d->discfd);
			discover(d);
			publish_all(d);
			return 1;			/* clusters may have closed */
		case EV_CTL_LISTEN:
			control_server_on_listen(h->owner);
			return 0;
		case EV_CTL_CONN:
			control_server_on_conn(h->owner, h->index, events);
			return 0;
	}
	return 0;
}

/*
 * run_event_loop
 *		Serve until a signal stops the daemon.  Returns 0, or -1 when
 *		epoll_wait fails.
 */
static int
run_event_loop(daemon_state *d)
{
	struct epoll_event events[MAX_EVENTS];

	while (!d->stop)
	{
		int			n;
		int			k;

		apply_kernel_window();	/* after the answers of the last round */
		n = epoll_wait(d->epfd, events, MAX_EVENTS, -1);
		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			log_error("epoll_wait: %s", strerror(errno));
			return -1;
		}
		for (k = 0; k < n && !d->stop; k++)
			if (dispatch_event(d, events[k].data.ptr, events[k].events))
				break;
	}
	return 0;
}

/*
 * close_daemon
 *		Undo what daemon_run set up, in reverse: the clusters (their
 *		segments say the writer stopped), the probe sets, the programs,
 *		the fds.
 */
static void
close_daemon(daemon_state *d, int lock_fd)
{
	size_t		i;

	for (i = 0; i < d->nclusters; i++)
		cluster_close(d->clusters[i], PGT_WRITER_STOPPED);
	free(d->clusters);
	free(d->skips);
	free(d->roots);
	release_kernel_sets();
	pset_runtime_stop(&d->psets);
	bpf_probes_stop(&d->bpf);
	if (lock_fd >= 0)
		close(lock_fd);
	if (d->pubfd >= 0)
		close(d->pubfd);
	if (d->discfd >= 0)
		close(d->discfd);
	if (d->sigfd >= 0)
		close(d->sigfd);
	if (d->epfd >= 0)
		close(d->epfd);
}

/*
 * raise_fd_limit
 *		Lift the soft open-file limit to the hard one: the watchpoint mode
 *		holds a perf event (and a link) per watched backend, and the
 *		default soft limit of 1024 is below what a cluster of a few hundred
 *		backends needs.  A failure is logged; the limit then stays.
 */
static void
raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
	{
		log_warn("getrlimit(RLIMIT_NOFILE): %s", strerror(errno));
		return;
	}
	if (rl.rlim_cur >= rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		log_warn("cannot raise the open-file limit to %llu: %s",
				 (unsigned long long) rl.rlim_max, strerror(errno));
}

/*
 * daemon_run
 *		`pg-tracer daemon`.  Returns the process exit status: 0 after a
 *		clean stop, 1 when it could not start.
 */
int
daemon_run(const daemon_opts *opts)
{
	daemon_state d;
	char		data_dir[PATH_MAX];
	uid_t		uid = 0;
	gid_t		gid = 0;
	int			lock_fd = -1;
	int			ret = 1;

	memset(&d, 0, sizeof(d));
	d.opts = opts;
	d.epfd = d.sigfd = d.pubfd = d.discfd = -1;
	d.bpf.postmasters_fd = d.bpf.tracked_fd = -1;
	pset_runtime_init(&d.psets);
	d.target_mode = opts->pgdata != NULL || opts->pid != 0;
	log_set_level(opts->log_level);
	umask(077);
	raise_fd_limit();

	if (claim_target(&d, data_dir, sizeof(data_dir), &uid, &gid, &lock_fd) < 0)
		return 1;
	/* signals before anything that must be undone */
	if (open_event_loop(&d) < 0)
		goto cleanup;
	log_info("pg-tracer %s starting (%s, runtime directory %s)", PGT_VERSION,
			 opts->pgdata ? "--pgdata" : opts->pid ? "--pid" : "host-wide",
			 opts->runtime_dir);
	if (start_probes(&d) < 0)
		goto cleanup;
	if (d.target_mode)
	{
		int			r = serve_target(&d, data_dir, uid, gid, lock_fd);

		lock_fd = -1;			/* the cluster owns (or released) it now */
		if (r < 0)
			goto cleanup;
	}
	discover(&d);
	publish_all(&d);
	if (d.target_mode && !d.clusters[0]->attached)
		log_info("%s: postmaster not running, waiting for it", data_dir);
	if (run_event_loop(&d) == 0)
		ret = 0;

cleanup:
	close_daemon(&d, lock_fd);
	log_info("pg-tracer stopped%s", ret == 0 ? "" : " after an error");
	return ret;
}
