/*
 * helper/discovery.c
 *	  Find postmasters by scanning /proc, and the children of one.
 *
 * A postmaster is a process running the postgres binary (comm or exe)
 * whose working directory (the data directory: the postmaster chdir()s
 * there) holds a postmaster.pid whose first line is that process's pid as
 * its own pid namespace sees it.  Files are reached through the
 * /proc/<pid>/cwd magic link, which lands in the process's mount namespace
 * without resolving any path (the same directory as /proc/<pid>/root +
 * the data directory path, minus the risk of following a symlink in a
 * container's tree with the helper's root), so containerized servers work.
 *
 * Children of a postgres process are skipped before any file is read, so a
 * scan costs one read of /proc/<pid>/stat per process plus one
 * postmaster.pid read per postmaster.  The daemon scans once, keeps the
 * scan's roots (postgres processes whose parent is not one: every
 * postmaster is among them) and from then on checks only those and the
 * processes that exec a postgres binary later (discovery_check_pids).
 */
#include "discovery.h"

#include "log.h"
#include "pidfile.h"
#include "procfs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A postgres process seen during a scan. */
typedef struct candidate
{
	pid_t		pid;
	pid_t		ppid;
} candidate;

/*
 * parse_pid_name
 *		A /proc entry name as a pid, or 0 when it is not one.
 */
static pid_t
parse_pid_name(const char *name)
{
	long		v = 0;
	const char *p;

	for (p = name; *p; p++)
	{
		if (!isdigit((unsigned char) *p) || v > 100000000)
			return 0;
		v = v * 10 + (*p - '0');
	}
	return p == name ? 0 : (pid_t) v;
}

/*
 * check_postmaster
 *		discovery_check_postmaster for a postgres process whose stat (ps) is
 *		read.
 */
/* check_postmaster's last failure was a permission denied (EACCES, EPERM) */
static int	check_denied;

static int
check_postmaster(pid_t pid, const proc_stat *ps, pm_info *out, char *err, size_t errlen)
{
	char		path[PATH_MAX];
	char		perr[256];
	pg_pidfile	pf;
	struct stat st;
	ssize_t		n;
	int			dirfd = -1;

	memset(out, 0, sizeof(*out));
	/*
	 * One handle on the working directory for its identity, its path and
	 * its postmaster.pid: resolving /proc/<pid>/cwd three times would let
	 * a process that changes directory in between claim another
	 * directory's identity with its own postmaster.pid.
	 */
	snprintf(path, sizeof(path), "/proc/%d/cwd", (int) pid);
	dirfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	check_denied = 0;
	if (dirfd < 0 || fstat(dirfd, &st) < 0)
	{
		check_denied = errno == EACCES || errno == EPERM;
		snprintf(err, errlen, "cannot open the working directory of %d: %s",
				 (int) pid, strerror(errno));
		goto fail;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", dirfd);
	n = readlink(path, out->data_dir, sizeof(out->data_dir) - 1);
	if (n <= 0)
	{
		snprintf(err, errlen, "cannot read the working directory of %d: %s",
				 (int) pid, strerror(errno));
		goto fail;
	}
	out->data_dir[n] = '\0';
	if (procfs_read_nspid(pid, &out->nspid) < 0)
		out->nspid = (int32_t) pid;

	if (pidfile_read_at(dirfd, "postmaster.pid", &pf, perr, sizeof(perr)) < 0)
	{
		check_denied = errno == EACCES || errno == EPERM;
		snprintf(err, errlen, "process %d: %s", (int) pid, perr);
		goto fail;
	}
	close(dirfd);
	dirfd = -1;
	if (pf.pid != out->nspid)
	{
		snprintf(err, errlen, "process %d is not the postmaster of %s (postmaster.pid says %d)",
				 (int) pid, out->data_dir, (int) pf.pid);
		return -1;
	}
	out->pid = pid;
	out->starttime = ps->starttime;
	out->dev = (uint64_t) st.st_dev;
	out->ino = (uint64_t) st.st_ino;
	out->uid = st.st_uid;
	out->gid = st.st_gid;
	out->start_us = pf.start_time * 1000000;
	/*
	 * A postmaster runs as the owner of its data directory (PostgreSQL
	 * refuses to start otherwise), and the helper reads its memory for the
	 * cluster only as that owner's plain process: a process that just sits
	 * in a directory someone else owns (root's /tmp) with a postmaster.pid
	 * naming it is no postmaster, and gets none of that owner's rights
	 * (its processes' memory, a system user's sampler reniced).  Both
	 * discovery paths (the /proc scan and the exec notes) come here.
	 */
	if (!procfs_plain_process(pid, out->uid))
	{
		snprintf(err, errlen, "process %d does not run as uid %u, the owner of %s "
				 "(or is set-uid, non-dumpable)", (int) pid, (unsigned) out->uid,
				 out->data_dir);
		return -1;
	}
	return 0;

fail:
	if (dirfd >= 0)
		close(dirfd);
	return -1;
}

/*
 * discovery_check_postmaster
 *		Is `pid` a postmaster?  When it is, fill out and return 0; else -1
 *		with the reason in err.
 */
int
discovery_check_postmaster(pid_t pid, pm_info *out, char *err, size_t errlen)
{
	proc_stat	ps;

	memset(out, 0, sizeof(*out));
	check_denied = 0;
	if (procfs_read_stat(pid, &ps) < 0)
	{
		snprintf(err, errlen, "no process %d", (int) pid);
		return -1;
	}
	if (!procfs_is_postgres(pid, &ps))
	{
		snprintf(err, errlen, "process %d (%s) is not a postgres process",
				 (int) pid, ps.comm);
		return -1;
	}
	if (check_postmaster(pid, &ps, out, err, errlen) < 0)
		return -1;
	return 0;
}

/*
 * room_for_one
 *		The growing array arr (*cap elements of size elem) with room for
 *		element n: arr itself, or arr reallocated to twice its capacity
 *		(first elements when it had none), *cap updated.  NULL out of
 *		memory (logged with what; arr still valid).
 */
static void *
room_for_one(void *arr, size_t n, size_t *cap, size_t elem, size_t first, const char *what)
{
	size_t		ncap;
	void	   *na;

	if (n < *cap)
		return arr;
	ncap = *cap ? *cap * 2 : first;
	na = realloc(arr, ncap * elem);
	if (na == NULL)
	{
		log_error("out of memory while %s", what);
		return NULL;
	}
	*cap = ncap;
	return na;
}

/*
 * add_pm
 *		Append pm to the growing array *pms (*n used of *cap).  Returns 0, or
 *		-1 out of memory (logged).
 */
static int
add_pm(pm_info **pms, size_t *n, size_t *cap, const pm_info *pm)
{
	pm_info    *grown = room_for_one(*pms, *n, cap, sizeof(**pms), 4, "looking for postmasters");

	if (grown == NULL)
		return -1;
	*pms = grown;
	(*pms)[(*n)++] = *pm;
	return 0;
}

/*
 * cmp_candidate
 *		bsearch/qsort comparator by pid.
 */
static int
cmp_candidate(const void *a, const void *b)
{
	pid_t		x = ((const candidate *) a)->pid;
	pid_t		y = ((const candidate *) b)->pid;

	return x < y ? -1 : x > y;
}

/* Which /proc entries scan_proc keeps. */
typedef struct proc_filter
{
	discovery_known_fn known;	/* passed over before any file is read */
	void	   *known_arg;
	pid_t		parent;			/* > 0: only the children of this pid */
	int			postgres_only;	/* only processes running postgres */
} proc_filter;

/*
 * append_candidate
 *		Append (pid, ppid) to the growing array *cands (*n used of *cap).
 *		Returns 0, or -1 out of memory (logged; *cands unchanged).
 */
static int
append_candidate(candidate **cands, size_t *n, size_t *cap, pid_t pid, pid_t ppid)
{
	candidate  *grown = room_for_one(*cands, *n, cap, sizeof(**cands), 64, "scanning /proc");

	if (grown == NULL)
		return -1;
	*cands = grown;
	(*cands)[*n].pid = pid;
	(*cands)[(*n)++].ppid = ppid;
	return 0;
}

/*
 * scan_proc
 *		Every process of the host that f keeps, sorted by pid, into *out
 *		(malloc'd, caller frees).  Returns 0, or -1 when /proc cannot be read
 *		or memory runs out.
 */
static int
scan_proc(const proc_filter *f, candidate **out, size_t *nout)
{
	candidate  *cands = NULL;
	size_t		ncands = 0;
	size_t		cap = 0;
	struct dirent *de;
	DIR		   *dir = opendir("/proc");

	*out = NULL;
	*nout = 0;
	if (dir == NULL)
	{
		log_error("cannot open /proc: %s", strerror(errno));
		return -1;
	}
	while ((de = readdir(dir)) != NULL)
	{
		pid_t		pid = parse_pid_name(de->d_name);
		proc_stat	ps;

		if (pid <= 0 || (f->known != NULL && f->known(pid, f->known_arg)) ||
			procfs_read_stat(pid, &ps) < 0 ||
			(f->parent > 0 && ps.ppid != f->parent) ||
			(f->postgres_only && !procfs_is_postgres(pid, &ps)))
			continue;
		if (append_candidate(&cands, &ncands, &cap, pid, ps.ppid) < 0)
		{
			closedir(dir);
			free(cands);
			return -1;
		}
	}
	closedir(dir);
	if (ncands > 1)
		qsort(cands, ncands, sizeof(*cands), cmp_candidate);
	*out = cands;
	*nout = ncands;
	return 0;
}

/*
 * discovery_scan
 *		Every postmaster on the host (when filter, only the one serving the
 *		data directory dev/ino).  *out is malloc'd (caller frees).  Returns
 *		0, or -1 when /proc cannot be read.
 *
 * known, when not NULL, names pids the caller already knows to be children
 * of a postmaster (its tracked backends): they are passed over before any
 * file is read, so a host with a thousand backends does not cost a thousand
 * reads of /proc/<pid>/stat a scan.
 *
 * roots, when not NULL, receives (malloc'd) the pids of the postgres
 * processes whose parent is not one, postmasters or not, for
 * discovery_check_pids.
 */
int
discovery_scan(pm_info **out, size_t *nout, int filter, uint64_t dev, uint64_t ino,
			   discovery_known_fn known, void *known_arg, pid_t **roots, size_t *nroots)
{
	candidate  *cands;
	size_t		ncands;
	pid_t	   *rs = NULL;
	size_t		nr = 0;
	pm_info    *pms = NULL;
	size_t		npms = 0;
	size_t		cappms = 0;
	size_t		i;
	int			denied = 0;
	int			ret = -1;
	static int	denied_told;

	*out = NULL;
	*nout = 0;
	if (scan_proc(&(proc_filter) {.known = known, .known_arg = known_arg, .postgres_only = 1},
				  &cands, &ncands) < 0)
		return -1;
	if (roots != NULL && (rs = calloc(ncands ? ncands : 1, sizeof(*rs))) == NULL)
	{
		log_error("out of memory while scanning /proc");
		goto cleanup;
	}
	for (i = 0; i < ncands; i++)
	{
		candidate	key = {.pid = cands[i].ppid};
		char		err[512];
		pm_info		pm;

		/* a child of a postgres process is a backend, not a postmaster */
		if (bsearch(&key, cands, ncands, sizeof(*cands), cmp_candidate) != NULL)
			continue;
		if (rs != NULL)
			rs[nr++] = cands[i].pid;
		if (discovery_check_postmaster(cands[i].pid, &pm, err, sizeof(err)) < 0)
		{
			log_debug("discovery: %s", err);
			denied += check_denied;
			continue;
		}
		if (filter && (pm.dev != dev || pm.ino != ino))
			continue;
		if (add_pm(&pms, &npms, &cappms, &pm) < 0)
			goto cleanup;
	}
	if (denied > 0 && !denied_told)
	{
		/* without it, "no server found" while servers run: say why, once */
		log_warn("discovery: %d postgres process%s could not be inspected (permission "
				 "denied): run as root, or as the cluster's owner", denied,
				 denied == 1 ? "" : "es");
		denied_told = 1;
	}
	if (roots != NULL)
	{
		*roots = rs;
		*nroots = nr;
		rs = NULL;
	}
	*out = pms;
	*nout = npms;
	pms = NULL;
	ret = 0;

cleanup:
	free(cands);
	free(rs);
	free(pms);
	return ret;
}

/*
 * discovery_check_pids
 *		discovery_scan's work for the processes pids[0..*npids) alone: those
 *		that are gone or do not run a postgres binary (any more) are dropped
 *		from the array (*npids shrinks), the postmasters among the others
 *		(when filter, only the one serving dev/ino) go into *out (malloc'd,
 *		caller frees).  Returns 0, or -1 out of memory.
 */
int
discovery_check_pids(pid_t *pids, size_t *npids, int filter, uint64_t dev, uint64_t ino,
					 pm_info **out, size_t *nout)
{
	pm_info    *pms = NULL;
	size_t		npms = 0;
	size_t		cappms = 0;
	size_t		kept = 0;
	size_t		i;

	*out = NULL;
	*nout = 0;
	for (i = 0; i < *npids; i++)
	{
		proc_stat	ps;
		char		err[512];
		pm_info		pm;

		if (procfs_read_stat(pids[i], &ps) < 0 || !procfs_is_postgres(pids[i], &ps))
			continue;
		pids[kept++] = pids[i];
		if (check_postmaster(pids[i], &ps, &pm, err, sizeof(err)) < 0)
		{
			log_debug("discovery: %s", err);
			continue;
		}
		if (filter && (pm.dev != dev || pm.ino != ino))
			continue;
		if (add_pm(&pms, &npms, &cappms, &pm) < 0)
		{
			free(pms);
			return -1;
		}
	}
	*npids = kept;
	*out = pms;
	*nout = npms;
	return 0;
}

/*
 * exe_of
 *		The device and inode of the file process pid runs (/proc/<pid>/exe).
 *		0, or -1 when it cannot be told (gone, a kernel thread).
 */
static int
exe_of(pid_t pid, struct stat *st)
{
	char		path[64];

	snprintf(path, sizeof(path), "/proc/%d/exe", (int) pid);
	return stat(path, st);
}

/*
 * discovery_children
 *		Pids of the processes whose parent is `pm` and that run pm's own
 *		executable (the same file: PostgreSQL forks its children and never
 *		execs them, so a child that runs another program, set-uid perhaps,
 *		is no PostgreSQL process to follow).  *out is malloc'd (caller
 *		frees).  Returns 0 or -1.
 */
int
discovery_children(pid_t pm, pid_t **out, size_t *nout)
{
	candidate  *kids;
	struct stat pm_exe;
	struct stat kid_exe;
	size_t		n;
	size_t		i;
	size_t		kept = 0;
	pid_t	   *pids;

	*out = NULL;
	*nout = 0;
	if (pm <= 0 || exe_of(pm, &pm_exe) < 0)
		return 0;				/* no postmaster: no children to look for */
	if (scan_proc(&(proc_filter) {.parent = pm}, &kids, &n) < 0)
		return -1;
	pids = malloc((n ? n : 1) * sizeof(*pids));
	if (pids == NULL)
	{
		log_error("out of memory while scanning /proc");
		free(kids);
		return -1;
	}
	for (i = 0; i < n; i++)
		if (exe_of(kids[i].pid, &kid_exe) == 0 && kid_exe.st_dev == pm_exe.st_dev &&
			kid_exe.st_ino == pm_exe.st_ino)
			pids[kept++] = kids[i].pid;
	free(kids);
	*out = pids;
	*nout = kept;
	return 0;
}

/*
 * discovery_still_child
 *		Whether pid is still what discovery_children found: a live child of
 *		pm (not a zombie) that runs pm's executable.  The caller checks
 *		after it put pid in the filter: a child that exec'd another program
 *		between the scan and the insert (the exec hook saw it untracked) or
 *		whose pid another process took meanwhile is taken out again.
 */
bool
discovery_still_child(pid_t pm, pid_t pid)
{
	struct stat pm_exe;
	struct stat kid_exe;
	proc_stat	ps;

	return procfs_read_stat(pid, &ps) == 0 && ps.ppid == (int32_t) pm && ps.state != 'Z' &&
		exe_of(pm, &pm_exe) == 0 && exe_of(pid, &kid_exe) == 0 &&
		kid_exe.st_dev == pm_exe.st_dev && kid_exe.st_ino == pm_exe.st_ino;
}

/*
 * discovery_pgdata
 *		See discovery.h.
 */
int
discovery_pgdata(const char *dir, pm_info **out, size_t *n, char *why, size_t whylen)
{
	char		path[PATH_MAX];
	struct stat st;

	*out = NULL;
	*n = 0;
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
	{
		snprintf(why, whylen, "%s is not a directory", dir);
		return -1;
	}
	if (discovery_scan(out, n, 1, (uint64_t) st.st_dev, (uint64_t) st.st_ino,
					   NULL, NULL, NULL, NULL) < 0)
	{
		snprintf(why, whylen, "cannot scan /proc for postmasters");
		return -1;
	}
	if (*n > 0)
		return 0;
	free(*out);
	*out = NULL;
	snprintf(path, sizeof(path), "%s/PG_VERSION", dir);
	if (access(path, F_OK) < 0 && (errno == EACCES || errno == EPERM))
		snprintf(why, whylen, "%s cannot be read (%s): run as root or as the cluster's "
				 "owner", dir, strerror(errno));
	else if (access(path, F_OK) < 0)
		snprintf(why, whylen, "%s is not a PostgreSQL data directory (no PG_VERSION)", dir);
	else
		snprintf(why, whylen, "no postmaster is running in %s", dir);
	return -1;
}
