/*
 * helper/cluster.h
 *	  State and lifecycle of one served PostgreSQL cluster: lock, segment,
 *	  control socket, attached postmaster, its processes, layout file.
 */
#ifndef PGT_HELPER_CLUSTER_H
#define PGT_HELPER_CLUSTER_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "bpf_probes.h"
#include "control_server.h"
#include "discovery.h"
#include "pgt_layout.h"
#include "pgt_segment.h"
#include "segment_writer.h"

/* What all clusters of one daemon share. */
typedef struct cluster_env
{
	const char *runtime_dir;
	int			epfd;
	bpf_probes *bpf;
	probe_status kprobes;
	probe_status fexit;			/* syscall_exit.h */
	probe_status tracefs;
	struct pset_runtime *psets;	/* always-on probe sets (probe_set.h) */
	size_t		nclusters;		/* clusters served, kept by the daemon */
	uint32_t	segment_rows;	/* a segment's tables start at most this big; 0: their defaults */
} cluster_env;

/* One process of the cluster (the postmaster or a child). */
typedef struct cluster_proc
{
	uint32_t	pid;			/* host pid (map key) */
	uint32_t	nspid;			/* pid as the cluster sees it */
	uint64_t	attached_ns;	/* identity with pid: a reused pid differs */
	uint64_t	starttime;		/* /proc ticks */
	int64_t		started_us;
	uint32_t	role;
	int64_t		next_classify_ms;
	uint64_t	syscalls;
	int			seen;
	int			alive_checked;	/* found alive after it entered the map */
	int			prioritized;	/* prioritize_sampler looked at it */
} cluster_proc;

typedef struct cluster
{
	cluster_env *env;
	uint64_t	dev;
	uint64_t	ino;
	uid_t		uid;
	gid_t		gid;
	char		data_dir[PATH_MAX];
	char		seg_path[PATH_MAX];
	char		sock_path[PATH_MAX];
	int			forget_lock;	/* cluster_close removes the lock file */
	int			lock_fd;
	seg_writer	seg;
	control_server ctl;
	int			ctl_ok;

	/* postmaster */
	int			attached;
	int			attach_count;
	pm_info		pm;
	int64_t		attached_us;
	uint32_t	sampler_pid;	/* the process prioritize_sampler raised, 0: none */
	uint64_t	sampler_start;	/* its start time (/proc ticks) */
	int64_t		waiting_since_ms;
	uint64_t	pending_generation; /* to publish with the next update */

	/* processes, sorted by pid */
	cluster_proc *procs;
	size_t		nprocs;
	size_t		capprocs;
	uint64_t	retired_syscalls;
	uint64_t	processes_seen;
	uint64_t	overflow;
	int			overflow_logged;
	int64_t		grow_failed_ms;	/* when the segment last failed to grow */
	tracked_row *fallback_rows; /* /proc children when BPF is unavailable */
	size_t		nfallback;
	struct pgt_backend_entry *rows;
	size_t		caprows;

	/* layout file */
	probe_status layout_status;
	pgt_layout	layout;
	int			layout_loaded;
	int			layout_checked;
	struct stat layout_st;
	pid_t		layout_pm;
} cluster;

extern int	cluster_lock(const char *runtime_dir, uint64_t dev, uint64_t ino,
						 int *lock_fd, pid_t *holder, char *err, size_t errlen);
extern cluster *cluster_open(cluster_env *env, uint64_t dev, uint64_t ino,
							 uid_t uid, gid_t gid, const char *data_dir,
							 int lock_fd, char *err, size_t errlen);
extern void cluster_attach(cluster *c, const pm_info *pm);
extern void cluster_detach(cluster *c, const char *why);
extern void cluster_tick(cluster *c);
extern int	cluster_knows_child(const cluster *c, uint32_t pid);
extern const cluster_proc *cluster_find_proc(const cluster *c, uint32_t pid);
extern void cluster_publish(cluster *c, const tracked_row *rows, size_t n);
extern void cluster_close(cluster *c, uint32_t final_state);
extern void cluster_forget(cluster *c);
extern void cluster_force_layout_reload(cluster *c);

#endif							/* PGT_HELPER_CLUSTER_H */
