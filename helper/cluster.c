/*
 * helper/cluster.c
 *	  One served cluster from lock to close: its per-cluster lock, segment
 *	  and control socket, attaching to and detaching from its postmaster,
 *	  the table of its processes (from the BPF `tracked` map, or from /proc
 *	  when BPF is unavailable), its layout file, and each publication.
 *
 * Attach order matters: the postmaster enters `postmasters` (so its forks
 * are caught in the kernel from now on) and `tracked` first, then /proc is
 * scanned for the children it already has.  A child forked in between is
 * found by both, and the kernel's (older) entry wins (BPF_NOEXIST).
 *
 * Pids published in the segment are the ones the cluster sees (the
 * innermost pid namespace), so they join pg_stat_activity.pid even when the
 * server runs in a container; the map keys stay host pids.
 */
#include "cluster.h"

#include "engine_probes.h"
#include "layout_file.h"
#include "log.h"
#include "pid_retire.h"
#include "pm_owner.h"
#include "procfs.h"
#include "sampler_priority.h"
#include "cluster_psets.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#ifndef PGT_VERSION
#define PGT_VERSION "unknown"
#endif

/* Unknown-role processes are re-read every tick for this long after start. */
#define CLASSIFY_GRACE_US	(5 * 1000000LL)
#define RECLASSIFY_MS		10000

/*
 * copy_trunc
 *		Copy src into dst (dstlen bytes), truncating, always terminated,
 *		the rest of dst zeroed (segment fields carry no stale bytes).
 */
static void
copy_trunc(char *dst, size_t dstlen, const char *src)
{
	size_t		l = strlen(src);

	if (l >= dstlen)
		l = dstlen - 1;
	memcpy(dst, src, l);
	memset(dst + l, 0, dstlen - l);
}

/*
 * set_probe
 *		Fill a probe_status.
 */
static void
set_probe(probe_status *s, uint32_t state, const char *mechanism, const char *reason)
{
	s->state = state;
	copy_trunc(s->mechanism, sizeof(s->mechanism), mechanism);
	copy_trunc(s->reason, sizeof(s->reason), reason);
}

/*
 * lock_file_current
 *		Does path still name the open file fd?
 */
static int
lock_file_current(const char *path, int fd)
{
	struct stat by_path;
	struct stat by_fd;

	return stat(path, &by_path) == 0 && fstat(fd, &by_fd) == 0 &&
		by_path.st_dev == by_fd.st_dev && by_path.st_ino == by_fd.st_ino;
}

/*
 * lock_file_ours
 *		Is the file open at fd a plain file with one link, owned by us?
 *		Never write through a file someone else planted (a hard link, a
 *		FIFO).
 */
static int
lock_file_ours(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
		st.st_uid == geteuid();
}

/*
 * lock_holder
 *		The pid the helper holding the lock file at fd wrote into it, 0 if
 *		none can be read.
 */
static pid_t
lock_holder(int fd)
{
	char		buf[32];
	ssize_t		n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return (pid_t) strtol(buf, NULL, 10);
}

/*
 * record_pid
 *		Write our pid into the lock file we hold (for `status` and for a
 *		helper that finds it locked); a failure is only logged.
 */
static void
record_pid(int fd, const char *path)
{
	char		buf[32];
	int			n = snprintf(buf, sizeof(buf), "%d\n", (int) getpid());

	if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t) n, 0) != n)
		log_warn("cannot record our pid in %s: %s", path, strerror(errno));
}

/*
 * cluster_lock_try
 *		cluster_lock, with retries_left more tries when the file is
 *		replaced while we lock it.
 */
static int
cluster_lock_try(const char *runtime_dir, uint64_t dev, uint64_t ino,
				 int *lock_fd, pid_t *holder, char *err, size_t errlen,
				 int retries_left)
{
	char		path[PATH_MAX];
	struct stat st;
	int			fd;

	*lock_fd = -1;
	*holder = 0;
	if (pgt_cluster_path(path, sizeof(path), runtime_dir, dev, ino, ".lock") < 0)
	{
		snprintf(err, errlen, "runtime directory path too long");
		return -1;
	}
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
	if (fd < 0)
	{
		snprintf(err, errlen, "cannot open lock file %s: %s", path, strerror(errno));
		return -1;
	}
	/* unlinked since we opened it (cluster_forget): the path has a new one */
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 0 && retries_left > 0)
	{
		close(fd);
		return cluster_lock_try(runtime_dir, dev, ino, lock_fd, holder, err, errlen,
								retries_left - 1);
	}
	if (!lock_file_ours(fd))
	{
		snprintf(err, errlen, "lock file %s is not a plain file of ours: refusing to use it",
				 path);
		close(fd);
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
	{
		if (errno == EWOULDBLOCK)
		{
			*holder = lock_holder(fd);
			close(fd);
			return 1;
		}
		snprintf(err, errlen, "cannot lock %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	/*
	 * A helper forgetting the cluster unlinks the file while it holds the
	 * lock (cluster_forget): a lock taken on the unlinked file after that
	 * guards nothing, as a third helper would create and lock a new one.
	 */
	if (!lock_file_current(path, fd))
	{
		close(fd);
		if (retries_left > 0)
			return cluster_lock_try(runtime_dir, dev, ino, lock_fd, holder, err, errlen,
									retries_left - 1);
		snprintf(err, errlen, "lock file %s keeps being replaced", path);
		return -1;
	}
	record_pid(fd, path);
	*lock_fd = fd;
	return 0;
}

/*
 * cluster_lock
 *		Take the per-cluster lock (flock on <runtime>/pgt-<dev>-<ino>.lock,
 *		LOCK_EX|LOCK_NB) and write our pid into it.  Returns 0 with *lock_fd
 *		set, 1 when another process holds it (*holder = its pid, 0 when
 *		unknown), -1 on error.
 */
int
cluster_lock(const char *runtime_dir, uint64_t dev, uint64_t ino,
			 int *lock_fd, pid_t *holder, char *err, size_t errlen)
{
	return cluster_lock_try(runtime_dir, dev, ino, lock_fd, holder, err, errlen, 3);
}

/*
 * info_cb
 *		control_server callback: the state PING/STATUS report.
 */
static void
info_cb(void *arg, control_info *info)
{
	cluster    *c = arg;

	info->version = PGT_VERSION;
	info->generation = seg_writer_generation(&c->seg);
	info->writer_pid = (uint32_t) getpid();
	info->attached = c->attached;
	info->postmaster_pid = c->attached ? (uint32_t) c->pm.nspid : 0;
	info->postmaster_host_pid = c->attached ? (uint32_t) c->pm.pid : 0;
	info->postmaster_start = c->attached ? c->pm.starttime : 0;
	info->cluster_dev = c->dev;
	info->cluster_ino = c->ino;
	info->backends = (uint32_t) c->nprocs;
	info->reset = cluster_psets_reset;
	info->reset_arg = c;
}

/*
 * segment_opts
 *		The options of c's segment: each table at its default size, or at
 *		--segment-rows when that is smaller (it grows as publications need).
 */
static void
segment_opts(const cluster *c, seg_writer_opts *opts)
{
	uint32_t	i;

	memset(opts, 0, sizeof(*opts));
	for (i = 0; i < seg_ntables && c->env->segment_rows != 0; i++)
		if (seg_tables[i].default_capacity > c->env->segment_rows)
			opts->capacity[seg_tables[i].kind] = c->env->segment_rows;
	opts->uid = c->uid;
	opts->gid = c->gid;
	opts->cluster_dev = c->dev;
	opts->cluster_ino = c->ino;
	opts->data_dir = c->data_dir;
	opts->helper_version = PGT_VERSION;
	opts->writer_pid = (uint32_t) getpid();
}

/*
 * cluster_open
 *		Create the segment and the control socket of a cluster whose lock
 *		we hold (lock_fd becomes the cluster's).  The cluster starts
 *		detached (WAITING).  Returns NULL with err set on failure (the lock
 *		is released then).
 */
cluster *
cluster_open(cluster_env *env, uint64_t dev, uint64_t ino, uid_t uid, gid_t gid,
			 const char *data_dir, int lock_fd, char *err, size_t errlen)
{
	seg_writer_opts opts;
	cluster    *c;
	char		sock[PATH_MAX];

	c = calloc(1, sizeof(*c));
	if (c == NULL)
	{
		snprintf(err, errlen, "out of memory");
		close(lock_fd);
		return NULL;
	}
	c->env = env;
	c->dev = dev;
	c->ino = ino;
	c->uid = uid;
	c->gid = gid;
	c->lock_fd = lock_fd;
	c->seg.fd = -1;
	c->ctl.listen_fd = -1;
	c->waiting_since_ms = control_now_ms();
	snprintf(c->data_dir, sizeof(c->data_dir), "%s", data_dir);
	set_probe(&c->layout_status, PGT_PROBE_UNAVAILABLE, "layout file",
			  "postmaster not running");
	if (pgt_cluster_path(c->seg_path, sizeof(c->seg_path), env->runtime_dir,
						 dev, ino, ".seg") < 0 ||
		pgt_cluster_path(sock, sizeof(sock), env->runtime_dir, dev, ino, ".sock") < 0)
	{
		snprintf(err, errlen, "runtime directory path too long");
		goto fail;
	}
	snprintf(c->sock_path, sizeof(c->sock_path), "%s", sock);

	segment_opts(c, &opts);
	if (seg_writer_create(&c->seg, c->seg_path, &opts, err, errlen) < 0)
		goto fail;
	if (control_server_open(&c->ctl, c->sock_path, uid, gid, env->epfd, info_cb, c,
							err, errlen) < 0)
		goto fail;
	c->ctl_ok = 1;
	log_info("serving %s: segment %s (generation %llu), socket %s",
			 data_dir, c->seg_path,
			 (unsigned long long) seg_writer_generation(&c->seg), c->sock_path);
	cluster_publish(c, NULL, 0);
	return c;

fail:
	if (c->seg.hdr != NULL)
		seg_writer_close(&c->seg, PGT_WRITER_STOPPED);
	close(c->lock_fd);
	free(c);
	return NULL;
}

/*
 * find_proc
 *		Index of pid in the sorted procs array, or -1.
 */
static ssize_t
find_proc(const cluster *c, uint32_t pid)
{
	size_t		lo = 0;
	size_t		hi = c->nprocs;

	while (lo < hi)
	{
		size_t		mid = (lo + hi) / 2;

		if (c->procs[mid].pid == pid)
			return (ssize_t) mid;
		if (c->procs[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/*
 * cluster_find_proc
 *		The process pid (a host pid) of this cluster, or NULL.
 */
const cluster_proc *
cluster_find_proc(const cluster *c, uint32_t pid)
{
	ssize_t		k = find_proc(c, pid);

	return k >= 0 ? &c->procs[k] : NULL;
}

/*
 * cluster_knows_child
 *		Whether pid is one of the attached postmaster's tracked children.
 */
int
cluster_knows_child(const cluster *c, uint32_t pid)
{
	return c->attached && pid != (uint32_t) c->pm.pid && find_proc(c, pid) >= 0;
}

/*
 * cmp_proc
 *		qsort comparator of procs by pid.
 */
static int
cmp_proc(const void *a, const void *b)
{
	uint32_t	x = ((const cluster_proc *) a)->pid;
	uint32_t	y = ((const cluster_proc *) b)->pid;

	return x < y ? -1 : x > y;
}

/*
 * prioritize_sampler
 *		When p, a background worker whose title is buf (len), is the
 *		cluster's pg_tracer sampler, raise its priority (--sampler-nice,
 *		helper/sampler_priority.c says why and for whom).  Once per
 *		process, whatever the outcome, and one process of the cluster at a
 *		time: a second that calls itself the sampler while the first lives
 *		is left as it is.
 */
static void
prioritize_sampler(cluster *c, cluster_proc *p, const char *buf, size_t len)
{
	int			r;

	p->prioritized = 1;
	if (c->sampler_pid != 0 && c->sampler_pid != p->pid &&
		procfs_title_is(buf, len, SAMPLER_PRIORITY_TITLE) &&
		procfs_alive((pid_t) c->sampler_pid, c->sampler_start))
	{
		log_warn("%s: pid %u calls itself the sampler while pid %u is raised already: "
				 "its priority is left as it is", c->data_dir, p->nspid, c->sampler_pid);
		return;
	}
	r = sampler_priority_apply(p->pid, buf, len, (uint32_t) c->uid);
	if (r == SAMPLER_PRIORITY_RAISED)
	{
		c->sampler_pid = p->pid;
		c->sampler_start = p->starttime;
		log_info("%s: the sampler (pid %u) runs at nice %d", c->data_dir, p->nspid,
				 sampler_priority_nice());
	}
	else if (r == SAMPLER_PRIORITY_NOT_SYSTEM)
		log_info("%s: the sampler (pid %u) keeps its priority: the cluster runs as uid %u, "
				 "not a system account (uid %d at most); its samples may lean towards the "
				 "starts of blocking waits on a busy host", c->data_dir, p->nspid,
				 (unsigned) c->uid, SAMPLER_PRIORITY_MAX_OWNER);
	else if (r == SAMPLER_PRIORITY_REFUSED)
		log_warn("%s: cannot raise the sampler's priority (pid %u, nice %d): %s; its "
				 "samples lean towards the starts of blocking waits on a busy host",
				 c->data_dir, p->nspid, sampler_priority_nice(), strerror(errno));
}

/*
 * classify
 *		(Re)read a process's title and set its role.
 */
static void
classify(cluster *c, cluster_proc *p, int64_t now_ms, int64_t now_us)
{
	char		buf[PROCFS_CMDLINE_MAX];
	size_t		len = 0;
	uint32_t	role;

	if (p->pid == (uint32_t) c->pm.pid)
	{
		p->role = PGT_ROLE_POSTMASTER;
		p->next_classify_ms = INT64_MAX;
		return;
	}
	if (procfs_read_cmdline((pid_t) p->pid, buf, sizeof(buf), &len) < 0)
	{
		p->next_classify_ms = now_ms + 1000;
		return;
	}
	role = procfs_classify_title(buf, len);
	if (role == PGT_ROLE_UNKNOWN)
	{
		/* no title yet: keep looking, and call it "other" after a while */
		if (now_us - p->started_us > CLASSIFY_GRACE_US)
		{
			p->role = PGT_ROLE_OTHER;
			p->next_classify_ms = now_ms + 1000;
		}
		else
			p->next_classify_ms = now_ms;	/* next tick */
		return;
	}
	if (role != p->role && p->role != PGT_ROLE_UNKNOWN)
		log_debug("%s: pid %u is now %s (was %s)", c->data_dir, p->nspid,
				  pgt_role_name(role), pgt_role_name(p->role));
	p->role = role;
	p->next_classify_ms = now_ms + RECLASSIFY_MS;
	if (role == PGT_ROLE_BGWORKER && !p->prioritized)
		prioritize_sampler(c, p, buf, len);
}

/*
 * new_proc
 *		Start tracking a process seen for the first time.  Returns 0, or -1
 *		when it is already gone.
 */
static int
new_proc(cluster *c, cluster_proc *out, const tracked_row *r, int64_t now_ms, int64_t now_us)
{
	cluster_proc p;
	proc_stat	ps;
	int32_t		nspid;

	if (procfs_read_stat((pid_t) r->pid, &ps) < 0)
		return -1;
	memset(&p, 0, sizeof(p));
	p.pid = r->pid;
	p.attached_ns = r->v.attached_ns;
	p.starttime = ps.starttime;
	p.started_us = procfs_start_us(&ps);
	p.syscalls = r->v.syscalls;
	p.role = PGT_ROLE_UNKNOWN;
	if (procfs_read_nspid((pid_t) r->pid, &nspid) < 0)
		nspid = (int32_t) r->pid;
	p.nspid = (uint32_t) nspid;
	classify(c, &p, now_ms, now_us);
	*out = p;
	c->processes_seen++;
	return 0;
}

/*
 * update_known
 *		Row r is of the known process procs[k]: take its counters, or, when
 *		the pid was reused, retire the old process and start anew.
 */
static void
update_known(cluster *c, size_t k, const tracked_row *r, int64_t now_ms, int64_t now_us)
{
	cluster_proc *p = &c->procs[k];

	if (p->attached_ns != r->v.attached_ns)
	{
		c->retired_syscalls += p->syscalls;
		p->syscalls = 0;
		if (new_proc(c, p, r, now_ms, now_us) == 0)
			p->seen = 1;		/* else gone again: the stale entry is dropped */
		return;
	}
	if (r->v.syscalls >= p->syscalls)
		p->syscalls = r->v.syscalls;
	p->seen = 1;
	if (now_ms >= p->next_classify_ms)
		classify(c, p, now_ms, now_us);
}

/*
 * append_proc
 *		Start a process for row r at procs[nprocs + added], past the sorted
 *		part (invisible to find_proc until sorted in).  Returns 1 when it
 *		was added, 0 when the process is gone, -1 when out of memory.
 */
static int
append_proc(cluster *c, size_t added, const tracked_row *r, int64_t now_ms, int64_t now_us)
{
	cluster_proc *p;

	if (c->nprocs + added == c->capprocs)
	{
		size_t		ncap = c->capprocs ? c->capprocs * 2 : 64;
		cluster_proc *np = realloc(c->procs, ncap * sizeof(*np));

		if (np == NULL)
		{
			log_error("out of memory tracking processes of %s", c->data_dir);
			return -1;
		}
		c->procs = np;
		c->capprocs = ncap;
	}
	p = &c->procs[c->nprocs + added];
	if (new_proc(c, p, r, now_ms, now_us) != 0)
		return 0;
	p->seen = 1;
	log_debug("%s: tracking pid %u (%s)", c->data_dir, p->nspid, pgt_role_name(p->role));
	return 1;
}

/*
 * drop_unseen
 *		Retire the processes (of the first nprocs + added) that no row named
 *		(exited: their syscalls stay in the cumulative total) and close the
 *		gaps.  Leaves nprocs at what is kept, the new ones still unsorted.
 */
static void
drop_unseen(cluster *c, size_t added)
{
	size_t		i;
	size_t		j;

	for (i = 0, j = 0; i < c->nprocs + added; i++)
	{
		if (!c->procs[i].seen)
		{
			c->retired_syscalls += c->procs[i].syscalls;
			pid_retire_note_exit(c->procs[i].pid, c->procs[i].role, c->procs[i].nspid);
			log_debug("%s: pid %u (%s) left", c->data_dir, c->procs[i].nspid,
					  pgt_role_name(c->procs[i].role));
			continue;
		}
		if (i != j)
			c->procs[j] = c->procs[i];
		j++;
	}
	c->nprocs = j;
}

/*
 * sort_procs
 *		Sort the table by pid, keeping one entry of each (a map read racing
 *		with updates may list a key twice).
 */
static void
sort_procs(cluster *c)
{
	size_t		i;
	size_t		j;

	qsort(c->procs, c->nprocs, sizeof(*c->procs), cmp_proc);
	for (i = 1, j = 1; i < c->nprocs; i++)
		if (c->procs[i].pid != c->procs[j - 1].pid)
			c->procs[j++] = c->procs[i];
	if (c->nprocs > 0)
		c->nprocs = j;
}

/*
 * sync_procs
 *		Bring the procs table in line with the rows of our postmaster in
 *		`rows` (a map snapshot or the /proc fallback): new pids start,
 *		known ones get their counters, missing ones retire (their syscalls
 *		stay in the cumulative total).
 */
static void
sync_procs(cluster *c, const tracked_row *rows, size_t n)
{
	int64_t		now_ms = control_now_ms();
	int64_t		now_us = procfs_realtime_us();
	size_t		added = 0;
	size_t		i;

	for (i = 0; i < c->nprocs; i++)
		c->procs[i].seen = 0;
	for (i = 0; i < n; i++)
	{
		const tracked_row *r = &rows[i];
		ssize_t		k;
		int			rc;

		if (r->v.postmaster != (uint32_t) c->pm.pid)
			continue;
		k = find_proc(c, r->pid);
		if (k >= 0)
		{
			update_known(c, (size_t) k, r, now_ms, now_us);
			continue;
		}
		rc = append_proc(c, added, r, now_ms, now_us);
		if (rc < 0)
			break;
		added += (size_t) rc;
	}
	drop_unseen(c, added);
	if (added > 0)
		sort_procs(c);
}

/*
 * scan_children
 *		Fallback process table without BPF: the postmaster and its
 *		children from /proc, as pseudo map rows.
 */
static void
scan_children(cluster *c)
{
	pid_t	   *pids = NULL;
	size_t		n = 0;
	size_t		i;
	tracked_row *rows;

	if (discovery_children(c->pm.pid, &pids, &n) < 0)
		return;
	rows = calloc(n + 1, sizeof(*rows));
	if (rows == NULL)
	{
		free(pids);
		return;
	}
	rows[0].pid = (uint32_t) c->pm.pid;
	rows[0].v.postmaster = (uint32_t) c->pm.pid;
	for (i = 0; i < n; i++)
	{
		ssize_t		k = find_proc(c, (uint32_t) pids[i]);

		rows[i + 1].pid = (uint32_t) pids[i];
		rows[i + 1].v.postmaster = (uint32_t) c->pm.pid;
		rows[i + 1].v.flags = PGT_TRACKED_SCANNED;
		/* keep the identity of a known process */
		rows[i + 1].v.attached_ns = k >= 0 ? c->procs[k].attached_ns : bpf_probes_boot_ns();
	}
	if (c->nprocs > 0 && c->procs[0].pid == (uint32_t) c->pm.pid)
		rows[0].v.attached_ns = c->procs[0].attached_ns;
	else
	{
		ssize_t		k = find_proc(c, (uint32_t) c->pm.pid);

		rows[0].v.attached_ns = k >= 0 ? c->procs[k].attached_ns : bpf_probes_boot_ns();
	}
	free(c->fallback_rows);
	c->fallback_rows = rows;
	c->nfallback = n + 1;
	free(pids);
}

/*
 * forget_layout
 *		Drop the loaded layout, if any.
 */
static void
forget_layout(cluster *c)
{
	if (c->layout_loaded)
		layout_free(&c->layout);
	c->layout_loaded = 0;
}

/*
 * layout_unchanged
 *		Whether the file st describes is the one last looked at, for the
 *		same postmaster: same inode, size and modification time.
 */
static int
layout_unchanged(const cluster *c, const struct stat *st)
{
	return c->layout_checked && c->layout_pm == c->pm.pid &&
		st->st_ino == c->layout_st.st_ino && st->st_dev == c->layout_st.st_dev &&
		st->st_size == c->layout_st.st_size &&
		st->st_mtim.tv_sec == c->layout_st.st_mtim.tv_sec &&
		st->st_mtim.tv_nsec == c->layout_st.st_mtim.tv_nsec;
}

/*
 * layout_stale
 *		Whether a well-formed layout file is not this postmaster's: another
 *		pid's, or the same pid's from an earlier start (a postmaster that is
 *		pid 1 of its container at every start, or a file copied from another
 *		server), whose addresses are not this one's.  The file's time
 *		(PgStartTime, the end of startup) is never before postmaster.pid's
 *		(the process's start, in whole seconds).  Says why in reason.
 */
static int
layout_stale(const cluster *c, const pgt_layout *l, char *reason, size_t len)
{
	if (l->postmaster_pid != (uint32_t) c->pm.nspid)
	{
		snprintf(reason, len,
				 "stale %s (postmaster_pid %u, running %d): extension not preloaded "
				 "or not started yet", PGT_LAYOUT_FILENAME, l->postmaster_pid,
				 (int) c->pm.nspid);
		return 1;
	}
	if (c->pm.start_us > 0 && l->postmaster_start_us > 0 &&
		l->postmaster_start_us < c->pm.start_us)
	{
		snprintf(reason, len,
				 "stale %s (written by an earlier start of postmaster %u, %.0f s before "
				 "this one): extension not started yet", PGT_LAYOUT_FILENAME,
				 l->postmaster_pid, (double) (c->pm.start_us - l->postmaster_start_us) / 1e6);
		return 1;
	}
	return 0;
}

/*
 * check_layout
 *		(Re)load the layout file when the postmaster or the file changed;
 *		keep layout_status saying why it is not usable otherwise.
 */
static void
check_layout(cluster *c)
{
	char		path[PATH_MAX];
	char		err[512];
	char		reason[PATH_MAX + 1024];
	struct stat st;
	pgt_layout	l;

	if (!c->attached)
	{
		forget_layout(c);
		c->layout_checked = 0;
		set_probe(&c->layout_status, PGT_PROBE_UNAVAILABLE, "layout file",
				  "postmaster not running");
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/cwd/%s", (int) c->pm.pid, PGT_LAYOUT_FILENAME);
	if (lstat(path, &st) < 0)
	{
		forget_layout(c);
		c->layout_checked = 0;
		if (errno == ENOENT)
			snprintf(reason, sizeof(reason),
					 "no %s/%s: extension not preloaded", c->data_dir,
					 PGT_LAYOUT_FILENAME);
		else
			snprintf(reason, sizeof(reason), "cannot stat %s/%s: %s", c->data_dir,
					 PGT_LAYOUT_FILENAME, strerror(errno));
		set_probe(&c->layout_status, PGT_PROBE_UNAVAILABLE, "layout file", reason);
		return;
	}
	if (layout_unchanged(c, &st))
		return;

	forget_layout(c);
	c->layout_checked = 1;
	c->layout_pm = c->pm.pid;
	c->layout_st = st;
	if (layout_load(path, c->uid, &l, &st, err, sizeof(err)) < 0)
	{
		/* err names the /proc path; say the data directory instead */
		const char *tail = strstr(err, PGT_LAYOUT_FILENAME);

		if (tail != NULL)
			snprintf(reason, sizeof(reason), "%s/%s", c->data_dir, tail);
		else
			snprintf(reason, sizeof(reason), "%s/%s: %s", c->data_dir,
					 PGT_LAYOUT_FILENAME, err);
		set_probe(&c->layout_status, PGT_PROBE_DEGRADED, "layout file", reason);
		log_warn("%s: layout file rejected: %s", c->data_dir, reason);
		return;
	}
	if (layout_stale(c, &l, reason, sizeof(reason)))
	{
		set_probe(&c->layout_status, PGT_PROBE_DEGRADED, "layout file", reason);
		log_info("%s: %s", c->data_dir, reason);
		layout_free(&l);
		return;
	}
	c->layout = l;
	c->layout_loaded = 1;
	snprintf(reason, sizeof(reason), "pg %u, %u wait events",
			 l.pg_version_num, l.nevents);
	set_probe(&c->layout_status, PGT_PROBE_AVAILABLE, "layout file", reason);
	log_info("%s: layout loaded: %s", c->data_dir, reason);
}

/*
 * change_owner
 *		The data directory changed owner since the cluster was opened (it
 *		attaches again under another uid): the layout file must be the new
 *		owner's, the segment a new one readable by it alone
 *		(seg_writer_rebuild), the socket answer it alone.  What cannot be
 *		changed is logged: the old owner keeps that access until the
 *		helper restarts.
 */
static void
change_owner(cluster *c, uid_t uid, gid_t gid)
{
	seg_writer_opts opts;
	char		err[256];

	log_info("%s: the data directory is now %d:%d (was %d:%d)", c->data_dir,
			 (int) uid, (int) gid, (int) c->uid, (int) c->gid);
	c->uid = uid;
	c->gid = gid;
	segment_opts(c, &opts);
	if (seg_writer_rebuild(&c->seg, &opts, err, sizeof(err)) < 0)
		log_error("%s: the segment stays the old owner's: %s", c->data_dir, err);
	if (c->ctl_ok && control_server_set_owner(&c->ctl, uid, gid) < 0)
		log_error("%s: the socket stays the old owner's: %s", c->data_dir, strerror(errno));
}

/*
 * cluster_force_layout_reload
 *		Re-read the layout file at the next tick even if it looks unchanged.
 */
void
cluster_force_layout_reload(cluster *c)
{
	c->layout_checked = 0;
}

/*
 * cluster_attach
 *		Start serving postmaster pm: kernel filter first, then the children
 *		it already has; bump the generation for every attach after the
 *		first of this segment.
 */
void
cluster_attach(cluster *c, const pm_info *pm)
{
	bpf_probes *bpf = c->env->bpf;
	pid_t	   *pids = NULL;
	size_t		n = 0;
	size_t		i;
	uint64_t	now_ns;
	uint64_t	gen = 0;
	size_t		inserted = 0;

	c->pm = *pm;
	c->attached = 1;
	c->attach_count++;
	c->attached_us = procfs_realtime_us();
	c->retired_syscalls = 0;
	c->processes_seen = 0;
	c->overflow = 0;
	c->overflow_logged = 0;
	c->nprocs = 0;
	if (pm->uid != c->uid || pm->gid != c->gid)
		change_owner(c, pm->uid, pm->gid);
	if (pm_owner_set((uint32_t) pm->pid, pm->uid) < 0)
		log_error("%s: out of memory: its processes' memory will not be read",
				  c->data_dir);

	now_ns = bpf_probes_boot_ns();
	if (bpf_probes_add_postmaster(bpf, (uint32_t) pm->pid) < 0)
		log_error("%s: cannot add postmaster %d to the BPF filter: %s",
				  c->data_dir, (int) pm->pid, strerror(errno));
	if (bpf_probes_track(bpf, (uint32_t) pm->pid, (uint32_t) pm->pid,
						 PGT_TRACKED_POSTMASTER | PGT_TRACKED_SCANNED, now_ns) < 0)
		log_error("%s: cannot track postmaster %d: %s", c->data_dir,
				  (int) pm->pid, strerror(errno));
	if (discovery_children(pm->pid, &pids, &n) == 0)
	{
		for (i = 0; i < n; i++)
		{
			int			r = bpf_probes_track(bpf, (uint32_t) pids[i], (uint32_t) pm->pid,
											 PGT_TRACKED_SCANNED, now_ns);

			if (r < 0)
				log_warn("%s: cannot track pid %d: %s", c->data_dir, (int) pids[i],
						 strerror(errno));
			else if (r == 1)
			{
				inserted++;
				/*
				 * It may have exited (and missed the exit hook), exec'd
				 * (missed the exec hook) or left its pid to another
				 * process since the scan: the hooks see it from now on,
				 * so one look after the insert settles it.
				 */
				if (!discovery_still_child(pm->pid, pids[i]))
					(void) bpf_probes_untrack(bpf, (uint32_t) pids[i]);
			}
		}
	}
	free(pids);
	if (!bpf->maps_ok)
		scan_children(c);
	if (inserted > 0 && c->env->psets != NULL)
		pset_runtime_tracked(c->env->psets);	/* sets with per-task state */

	if (c->attach_count > 1)
		gen = seg_writer_generation(&c->seg) + 1;
	c->pending_generation = gen;
	c->layout_checked = 0;
	check_layout(c);
	engine_core_target((uint32_t) pm->pid);
	log_info("%s: attached to postmaster %d (pid %d in its namespace), "
			 "generation %llu, %zu existing children",
			 c->data_dir, (int) pm->pid, (int) pm->nspid,
			 (unsigned long long) (gen ? gen : seg_writer_generation(&c->seg)), n);
	log_debug("%s: %zu children inserted by the scan", c->data_dir, inserted);
}

/*
 * cluster_detach
 *		Stop serving the current postmaster: out of the BPF filter, all its
 *		processes out of `tracked`, the table emptied; state WAITING.
 */
void
cluster_detach(cluster *c, const char *why)
{
	bpf_probes *bpf = c->env->bpf;
	const tracked_row *rows;
	size_t		n = 0;
	size_t		i;

	if (!c->attached)
		return;
	pm_owner_forget((uint32_t) c->pm.pid);
	if (bpf_probes_remove_postmaster(bpf, (uint32_t) c->pm.pid) < 0)
		log_warn("%s: cannot remove postmaster %d from the BPF filter: %s",
				 c->data_dir, (int) c->pm.pid, strerror(errno));
	if (bpf_probes_snapshot(bpf, &rows, &n) == 0)
	{
		for (i = 0; i < n; i++)
			if (rows[i].v.postmaster == (uint32_t) c->pm.pid &&
				bpf_probes_untrack(bpf, rows[i].pid) < 0)
				log_warn("%s: cannot untrack pid %u: %s", c->data_dir,
						 rows[i].pid, strerror(errno));
	}
	log_info("%s: detached from postmaster %d (%s)", c->data_dir, (int) c->pm.pid, why);
	engine_core_untarget((uint32_t) c->pm.pid);
	c->attached = 0;
	c->nprocs = 0;
	c->nfallback = 0;
	c->waiting_since_ms = control_now_ms();
	check_layout(c);
	cluster_publish(c, NULL, 0);
}

/*
 * cluster_tick
 *		Once a second: drop dead processes the kernel did not report (they
 *		died between our scan and our insert; a process is checked until it
 *		is found alive once), refresh the /proc fallback, look at the layout
 *		file.
 */
void
cluster_tick(cluster *c)
{
	size_t		i;

	if (!c->attached)
		return;
	if (c->env->bpf->maps_ok && c->env->bpf->process.state != PGT_PROBE_AVAILABLE)
	{
		/* no fork hook: new children enter the map from /proc instead */
		pid_t	   *pids = NULL;
		size_t		n = 0;

		if (discovery_children(c->pm.pid, &pids, &n) == 0)
			for (i = 0; i < n; i++)
				(void) bpf_probes_track(c->env->bpf, (uint32_t) pids[i],
										(uint32_t) c->pm.pid, PGT_TRACKED_SCANNED,
										bpf_probes_boot_ns());
		free(pids);
	}
	if (c->env->bpf->maps_ok)
	{
		/*
		 * A process found alive after it entered the map will leave it by
		 * the exit program: with that program attached, one check each.
		 */
		int			exit_hook = c->env->bpf->process.state == PGT_PROBE_AVAILABLE;

		for (i = 0; i < c->nprocs; i++)
		{
			cluster_proc *p = &c->procs[i];

			if (p->alive_checked && exit_hook)
				continue;
			if (procfs_alive((pid_t) p->pid, p->starttime))
				p->alive_checked = 1;
			else if (bpf_probes_untrack(c->env->bpf, p->pid) < 0)
				log_warn("%s: cannot untrack pid %u: %s", c->data_dir,
						 p->pid, strerror(errno));
		}
	}
	else
		scan_children(c);
	check_layout(c);
	cluster_psets_tick(c);
}

/*
 * fill_probe
 *		One probe-set row.
 */
static void
fill_probe(struct pgt_probeset_entry *e, const char *name, const probe_status *s,
		   uint64_t events, const char *reason_override)
{
	memset(e, 0, sizeof(*e));
	copy_trunc(e->name, sizeof(e->name), name);
	e->state = s->state;
	e->events = events;
	copy_trunc(e->mechanism, sizeof(e->mechanism), s->mechanism[0] ? s->mechanism : "none");
	copy_trunc(e->reason, sizeof(e->reason), reason_override ? reason_override : s->reason);
}

/*
 * report_overflow
 *		After a publication: log the tables whose rows did not all fit in the
 *		segment (again each time the number doubles), and remember it for the
 *		"process" row's reason.  procs_dropped: processes left out before.
 */
static void
report_overflow(cluster *c, uint64_t procs_dropped)
{
	char		list[512];
	uint64_t	dropped = seg_writer_overflow(&c->seg, list, sizeof(list));
	size_t		l = strlen(list);

	if (procs_dropped > 0 && l < sizeof(list))
		snprintf(list + l, sizeof(list) - l, "%sprocesses: %llu", l ? ", " : "",
				 (unsigned long long) procs_dropped);
	dropped += procs_dropped;

	c->overflow = dropped;
	if (dropped == 0)
		c->overflow_logged = 0;	/* a later episode is logged again */
	if (dropped == 0 ||
		(c->overflow_logged && dropped < 2 * (uint64_t) c->overflow_logged))
		return;
	log_warn("%s: %llu rows do not fit in the segment and are not shown (%s)",
			 c->data_dir, (unsigned long long) dropped, list);
	c->overflow_logged = (int) dropped;
}

/*
 * grow_rows
 *		Make room in c->rows for every process tracked (it stays smaller
 *		when memory is short: the rows that do not fit are reported).
 */
static void
grow_rows(cluster *c)
{
	size_t		ncap = c->nprocs + 64;
	struct pgt_backend_entry *nr;

	if (c->caprows >= c->nprocs)
		return;
	nr = realloc(c->rows, ncap * sizeof(*nr));
	if (nr != NULL)
	{
		c->rows = nr;
		c->caprows = ncap;
	}
}

/*
 * fill_backend_rows
 *		The segment's backend rows in c->rows, the postmaster first, then
 *		by pid, as many as fit.  Returns their count; *syscalls gets the
 *		system calls of every process tracked, those that exited included.
 */
static size_t
fill_backend_rows(cluster *c, uint64_t *syscalls)
{
	int64_t		boot_to_real = procfs_boot_to_real_us();
	size_t		nrows = 0;
	size_t		i;

	*syscalls = c->retired_syscalls;
	for (i = 0; c->attached && i < c->nprocs && nrows < c->caprows; i++)
	{
		cluster_proc *pr = &c->procs[i];
		struct pgt_backend_entry *e;
		size_t		slot;

		*syscalls += pr->syscalls;
		if (pr->role == PGT_ROLE_POSTMASTER && nrows > 0)
		{
			memmove(&c->rows[1], &c->rows[0], nrows * sizeof(*c->rows));
			slot = 0;
		}
		else
			slot = nrows;
		e = &c->rows[slot];
		nrows++;
		memset(e, 0, sizeof(*e));
		e->pid = pr->nspid;
		e->role = pr->role;
		e->attached_us = pr->attached_ns ? boot_to_real + (int64_t) (pr->attached_ns / 1000)
			: c->attached_us;
		e->started_us = pr->started_us;
		e->syscalls = pr->syscalls;
		snprintf(e->backend_type, sizeof(e->backend_type), "%s", pgt_role_name(pr->role));
	}
	return nrows;
}

/*
 * fill_probe_rows
 *		The segment's probe-set rows into ps (room for 8 + PSET_MAX_ROWS):
 *		the foundation's, the host's mechanisms, the layout, then every
 *		probe set's.  Returns their count.
 */
static int
fill_probe_rows(cluster *c, struct pgt_probeset_entry *ps, uint64_t syscalls)
{
	bpf_probes *bpf = c->env->bpf;
	char		reason[PATH_MAX + 256];
	int			nps = 0;

	if (c->attached)
	{
		snprintf(reason, sizeof(reason), "%s; tracking %zu processes%s",
				 bpf->process.reason, c->nprocs,
				 c->overflow ? "; some rows not published (segment tables full: "
				 "see the helper's log)" : "");
		fill_probe(&ps[nps++], "process", &bpf->process, c->processes_seen,
				   bpf->process.state == PGT_PROBE_AVAILABLE ? reason : NULL);
	}
	else
		fill_probe(&ps[nps++], "process", &bpf->process, c->processes_seen,
				   bpf->process.state == PGT_PROBE_AVAILABLE ?
				   "waiting for the postmaster" : NULL);
	fill_probe(&ps[nps++], "syscall-count", &bpf->syscall_count,
			   bpf->syscall_count.state == PGT_PROBE_AVAILABLE ? syscalls : 0, NULL);
	fill_probe(&ps[nps++], "kprobes", &c->env->kprobes, 0, NULL);
	fill_probe(&ps[nps++], "fexit", &c->env->fexit, 0, NULL);
	fill_probe(&ps[nps++], "tracefs", &c->env->tracefs, 0, NULL);
	fill_probe(&ps[nps++], "layout", &c->layout_status,
			   c->layout_loaded ? c->layout.nevents : 0, NULL);
	nps += (int) cluster_psets_rows(c, &ps[nps], PSET_MAX_ROWS);
	return nps;
}

/*
 * grow_segment
 *		Give the segment room for p's rows (seg_writer_grow, which
 *		publishes p then) and log what grew; 1 when it did.  A failure (a
 *		full runtime directory) is logged and tried again a minute later at
 *		the earliest: meanwhile rows are dropped and counted as before.
 */
#define GROW_RETRY_MS	60000

static int
grow_segment(cluster *c, const seg_publish *p)
{
	seg_writer_opts opts;
	uint32_t	before[PGT_SEC_KIND_MAX];
	char		err[512];
	uint32_t	i;
	uint32_t	k;
	int64_t		now = control_now_ms();

	if (c->grow_failed_ms != 0 && now - c->grow_failed_ms < GROW_RETRY_MS)
		return 0;
	for (k = 0; k < PGT_SEC_KIND_MAX; k++)
		before[k] = seg_writer_capacity(&c->seg, k);
	segment_opts(c, &opts);
	switch (seg_writer_grow(&c->seg, p, &opts, err, sizeof(err)))
	{
		case -1:
			log_warn("%s: cannot grow the segment: %s", c->data_dir, err);
			c->grow_failed_ms = now;
			return 0;
		case 0:
			return 0;
	}
	c->grow_failed_ms = 0;
	for (i = 0; i < seg_ntables; i++)
	{
		k = seg_tables[i].kind;
		if (seg_writer_capacity(&c->seg, k) != before[k])
			log_info("%s: segment table \"%s\" grown from %u to %u rows (%zu bytes in all)",
					 c->data_dir, seg_tables[i].name, before[k],
					 seg_writer_capacity(&c->seg, k), c->seg.size);
	}
	return 1;
}

/*
 * cluster_publish
 *		Update the process table from a map snapshot (rows, n; ignored when
 *		BPF is unavailable) and write everything into the segment.
 */
void
cluster_publish(cluster *c, const tracked_row *rows, size_t n)
{
	struct pgt_probeset_entry ps[8 + PSET_MAX_ROWS];
	seg_publish p;
	uint64_t	syscalls;
	size_t		nrows;
	int			nps;

	if (c->attached)
	{
		if (c->env->bpf->maps_ok)
			sync_procs(c, rows, n);
		else
			sync_procs(c, c->fallback_rows, c->nfallback);
	}
	grow_rows(c);
	nrows = fill_backend_rows(c, &syscalls);
	nps = fill_probe_rows(c, ps, syscalls);

	memset(&p, 0, sizeof(p));
	p.state = c->attached ? PGT_WRITER_RUNNING : PGT_WRITER_WAITING;
	p.postmaster_pid = c->attached ? (uint32_t) c->pm.nspid : 0;
	p.postmaster_start_us = c->attached ? c->pm.start_us : 0;
	p.attached_us = c->attached ? c->attached_us : 0;
	p.generation = c->pending_generation;
	c->pending_generation = 0;
	p.tables[PGT_SEC_PROBESETS] = (seg_rows) {ps, (uint32_t) nps};
	p.tables[PGT_SEC_BACKENDS] = (seg_rows) {c->rows, (uint32_t) nrows};
	cluster_psets_publish(c, &p);
	if (!grow_segment(c, &p))
		(void) seg_writer_publish(&c->seg, &p);
	report_overflow(c, c->nprocs - nrows);
}

/*
 * forget_lock_file
 *		Remove the cluster's lock file while we still hold its lock, last of
 *		its files: once the path is free another helper may serve the
 *		cluster, and its socket and segment must not be ours to remove.
 */
static void
forget_lock_file(const cluster *c)
{
	char		lock_path[PATH_MAX];

	if (pgt_cluster_path(lock_path, sizeof(lock_path), c->env->runtime_dir,
						 c->dev, c->ino, ".lock") == 0 &&
		unlink(lock_path) < 0 && errno != ENOENT)
		log_warn("cannot remove %s: %s", lock_path, strerror(errno));
}

/*
 * cluster_forget
 *		Close a cluster whose postmaster is gone for good (host-wide mode),
 *		and remove its segment and lock file: nothing will read them, and a
 *		later postmaster of the data directory gets a new segment when it is
 *		found.  The lock file goes while we still hold the lock; a helper
 *		that opened it before then sees the file replaced (cluster_lock).
 */
void
cluster_forget(cluster *c)
{
	if (c == NULL)
		return;
	if (unlink(c->seg_path) < 0 && errno != ENOENT)
		log_warn("cannot remove %s: %s", c->seg_path, strerror(errno));
	c->forget_lock = 1;			/* by cluster_close, after the socket */
	cluster_close(c, PGT_WRITER_STOPPED);
}

/*
 * cluster_close
 *		Detach, mark the segment final_state, remove the socket, release the
 *		lock, free.
 */
void
cluster_close(cluster *c, uint32_t final_state)
{
	if (c == NULL)
		return;
	cluster_detach(c, "helper stopping");
	if (c->ctl_ok)
		control_server_close(&c->ctl);
	seg_writer_close(&c->seg, final_state);
	forget_layout(c);
	if (c->forget_lock)
		forget_lock_file(c);
	if (c->lock_fd >= 0)
		close(c->lock_fd);
	log_info("%s: no longer served", c->data_dir);
	free(c->procs);
	free(c->fallback_rows);
	free(c->rows);
	free(c);
}
