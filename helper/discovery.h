/*
 * helper/discovery.h
 *	  Find PostgreSQL postmasters (and their children) in /proc.
 */
#ifndef PGT_HELPER_DISCOVERY_H
#define PGT_HELPER_DISCOVERY_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A running postmaster and the cluster it serves. */
typedef struct pm_info
{
	pid_t		pid;			/* host (helper namespace) pid */
	uint64_t	starttime;		/* /proc stat ticks: identity against reuse */
	int32_t		nspid;			/* pid in its own namespace (postmaster.pid) */
	uint64_t	dev;			/* data directory st_dev / st_ino */
	uint64_t	ino;
	uid_t		uid;			/* data directory owner */
	gid_t		gid;
	int64_t		start_us;		/* postmaster.pid line 3, microseconds */
	char		data_dir[PATH_MAX];	/* as the postmaster sees it */
} pm_info;

extern int	discovery_check_postmaster(pid_t pid, pm_info *out, char *err, size_t errlen);
/* Whether pid is a child of a postmaster the caller already serves. */
typedef int (*discovery_known_fn) (pid_t pid, void *arg);

extern int	discovery_scan(pm_info **out, size_t *n, int filter,
						   uint64_t dev, uint64_t ino,
						   discovery_known_fn known, void *known_arg,
						   pid_t **roots, size_t *nroots);
extern int	discovery_check_pids(pid_t *pids, size_t *npids, int filter,
								 uint64_t dev, uint64_t ino,
								 pm_info **out, size_t *nout);
extern int	discovery_children(pid_t pm, pid_t **out, size_t *n);
extern bool discovery_still_child(pid_t pm, pid_t pid);
/*
 * The postmasters running on data directory dir (matched by its device and
 * inode, never by postmaster.pid, which names a pid of the server's own
 * namespace and may be stale): 0 with *n >= 1, or -1 with why (not a
 * directory, not a data directory, not running, /proc unreadable).
 */
extern int	discovery_pgdata(const char *dir, pm_info **out, size_t *n,
							 char *why, size_t whylen);

#endif							/* PGT_HELPER_DISCOVERY_H */
