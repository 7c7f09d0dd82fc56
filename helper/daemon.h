/*
 * helper/daemon.h
 *	  `pg-tracer daemon`: the long-running helper.
 */
#ifndef PGT_HELPER_DAEMON_H
#define PGT_HELPER_DAEMON_H

#include <stdint.h>
#include <sys/types.h>

#include "log.h"

typedef struct daemon_opts
{
	const char *pgdata;			/* --pgdata, or NULL */
	pid_t		pid;			/* --pid, or 0 */
	const char *runtime_dir;
	enum log_level log_level;
	const char *probes;			/* --probes: always-on probe sets, NULL = all */
	int			kernel_escalated;	/* --kernel-sets escalated */
	int			forget_after_s;	/* --forget-after: host-wide mode drops a
								 * cluster whose postmaster is gone this long */
	int			max_clusters;	/* --max-clusters: host-wide mode serves no more */
	uint32_t	segment_rows;	/* --segment-rows: tables start at most this big */
} daemon_opts;

#define DAEMON_FORGET_AFTER_DEFAULT_S	60
#define DAEMON_FORGET_AFTER_MAX_S		86400
#define DAEMON_MAX_CLUSTERS_DEFAULT		64
/* the BPF postmaster filter holds PGT_BPF_MAX_POSTMASTERS (256): no more */
#define DAEMON_MAX_CLUSTERS_MAX			256
#define DAEMON_SEGMENT_ROWS_MIN			16
#define DAEMON_SEGMENT_ROWS_MAX			1048576
/* clusters served at once for one owner that is no system account */
#define DAEMON_MAX_USER_CLUSTERS		4

extern int	daemon_run(const daemon_opts *opts);
extern int	runtime_dir_check(const char *dir, int create, char *err, size_t errlen);

#endif							/* PGT_HELPER_DAEMON_H */
