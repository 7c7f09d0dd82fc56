/*
 * helper/bpf_probes.h
 *	  The BPF skeleton of the daemon (one per host) and the state of each
 *	  probe set it provides.
 */
#ifndef PGT_HELPER_BPF_PROBES_H
#define PGT_HELPER_BPF_PROBES_H

#include <stddef.h>
#include <stdint.h>

#include "hook_chain.h"
#include "pg_tracer.h"

struct pg_tracer_bpf;

/* One row of the `tracked` map. */
typedef struct tracked_row
{
	uint32_t	pid;
	struct pgt_tracked v;
} tracked_row;

/* State of one probe set, as it goes into a pgt_probeset_entry. */
typedef struct probe_status
{
	uint32_t	state;			/* PGT_PROBE_* */
	char		mechanism[32];
	char		reason[176];
} probe_status;

typedef struct bpf_probes
{
	struct pg_tracer_bpf *skel;
	int			maps_ok;		/* maps loaded: the helper can fill them */
	int			postmasters_fd;
	int			tracked_fd;
	int			exit_titles_fd; /* -1 unless titles are kept */
	uint32_t	exit_titles_max;	/* capacity asked for (0: none) */
	probe_status process;		/* sched_process_fork/exit */
	probe_status syscall_count; /* sys_enter */
	int			exec_notes;		/* pgt_process_exec asked for (daemon) */
	int			execs_fd;		/* `pg_execs`, -1 unless attached */
	uint64_t	execs_lost_seen;	/* pgt_execs_lost at the last drain */
	char		exec_reason[192];	/* why there are no exec notes */
	hook_chain	chain;			/* the dispatchers and their program arrays */
	int			chain_ok;		/* chain usable (tail calls loaded) */
	/* batch-lookup buffers (PGT_BPF_MAX_TRACKED entries) */
	uint32_t   *keys;
	struct pgt_tracked *values;
	struct tracked_row *rows;
	int			batch_unsupported;
} bpf_probes;

extern int	bpf_probes_start(bpf_probes *p, uint32_t exit_titles,
							 int exec_notes, uint32_t exec_miss_every);
extern int	bpf_probes_drain_execs(bpf_probes *p, uint32_t *pids);
extern void bpf_probes_stop(bpf_probes *p);
extern int	bpf_probes_add_postmaster(bpf_probes *p, uint32_t pm);
extern int	bpf_probes_remove_postmaster(bpf_probes *p, uint32_t pm);
extern int	bpf_probes_track(bpf_probes *p, uint32_t pid, uint32_t pm,
							 uint32_t flags, uint64_t attached_ns);
extern int	bpf_probes_untrack(bpf_probes *p, uint32_t pid);
extern int	bpf_probes_exit_title(bpf_probes *p, uint32_t pid, char *buf, size_t buflen);
extern int	bpf_probes_snapshot(bpf_probes *p, const tracked_row **rows, size_t *n);
extern uint64_t bpf_probes_boot_ns(void);
extern hook_chain *bpf_probes_chain(bpf_probes *p);
extern void bpf_probes_libbpf_quiet(int on);

#endif							/* PGT_HELPER_BPF_PROBES_H */
