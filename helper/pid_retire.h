/*
 * helper/pid_retire.h
 *	  Rows of exited processes: kept under their pid for a while, then
 *	  folded into one row per cluster and key ("exited processes").
 *
 * The in-kernel aggregates (kernel sets, exact waits) are keyed by pid.
 * Without retirement every process that ever ran leaves its rows behind:
 * with connection churn the maps fill up (then the BPF side cannot create
 * a row for a new backend and its numbers are lost) and the segment tables
 * overflow.  A daemon set calls pid_retire_rows() on the rows it has just
 * copied: a row whose pid left `tracked` at least --keep-exited seconds ago
 * (default 60; 200 ms when the map is half full: heavy connection churn
 * must not fill it; never sooner, see due() in pid_retire.c) is added into
 * the row with the same key but the pid replaced by
 * PGT_RETIRED_PID(postmaster), then deleted.  Totals per query
 * id, event, layer... survive; only the pid is forgotten.  The publishers
 * show a retired row with pid PGT_PID_EXITED (pgt_segment.h), NULL in SQL.
 * Maps with role_in_key (the kernel sets') keep the process's backend role
 * in the folded pid as well, PGT_RETIRED_PID_ROLE: the I/O of a query's
 * parallel workers stays apart from its leader's.
 *
 * Roles: the table also remembers each pid's backend role (PGT_ROLE_*),
 * asked of the daemon's role_of callback while the process runs and once
 * more when it is found gone (the daemon then classifies the title the
 * process had as it exited), so that rows of exited processes still name
 * it: pid_retire_role().
 *
 * A pid that is taken by a new process of the cluster within the period
 * does not continue the old rows: they fold at once (with the old process's
 * role), so that a session of another role never sees them as its own.
 *
 * `trace` folds too (its printer shows folded rows as pid=exited,
 * trace_out.h); when it follows one backend (--pid), all but that
 * backend's and its workers' rows (pid_retire_keep).
 *
 * Threading: single-threaded (the daemon's loop, or trace's).
 */
#ifndef PGT_HELPER_PID_RETIRE_H
#define PGT_HELPER_PID_RETIRE_H

#include <stddef.h>
#include <stdint.h>

/*
 * The pid of a folded row inside the BPF maps: bit 31 (never set in a pid:
 * the kernel's PID_MAX_LIMIT is 2^22) plus the postmaster, so clusters keep
 * apart and the row still says whose it is.
 */
#define PGT_RETIRED_FLAG		0x80000000u
#define PGT_RETIRED_PID(pm)		(PGT_RETIRED_FLAG | (uint32_t) (pm))
#define PGT_IS_RETIRED(pid)		(((pid) & PGT_RETIRED_FLAG) != 0)

/*
 * With role_in_key, bits 22-29 of a folded pid hold the role (the
 * postmaster's pid is below 2^22 too).
 */
#define PGT_RETIRED_ROLE_SHIFT	22
#define PGT_RETIRED_ROLE_MASK	0xFFu
#define PGT_RETIRED_PID_ROLE(pm, role) \
	(PGT_RETIRED_PID(pm) | (((uint32_t) (role) & PGT_RETIRED_ROLE_MASK) << PGT_RETIRED_ROLE_SHIFT))
#define PGT_RETIRED_ROLE(pid) \
	(((uint32_t) (pid) >> PGT_RETIRED_ROLE_SHIFT) & PGT_RETIRED_ROLE_MASK)

#define PID_RETIRE_DEFAULT_S	60
#define PID_RETIRE_MAX_S		86400

/* How one map's rows are laid out and folded. */
typedef struct retire_map
{
	const char *name;			/* for the log */
	int			fd;				/* the BPF hash map */
	size_t		max_entries;	/* its capacity: from half full on, exited
								 * pids fold without waiting --keep-exited */
	size_t		ksize;			/* key bytes */
	size_t		vsize;			/* value bytes */
	size_t		kstride;		/* bytes from one copied key to the next */
	size_t		vstride;		/* the same for values */
	size_t		pid_off;		/* offset of the __u32 pid within the key */
	size_t		pm_off;			/* offset of the __u32 postmaster in the value,
								 * or in the key when pm_in_key */
	int			pm_in_key;
	int			role_in_key;	/* folded rows per role (PGT_RETIRED_PID_ROLE) */
	/* dst += src (sums; maxima as maxima) */
	void		(*fold) (void *dst, const void *src, const void *arg);
	const void *fold_arg;
} retire_map;

/* --keep-exited S: 0 .. PID_RETIRE_MAX_S.  Returns -1 with err on bad input. */
extern int	pid_retire_configure(const char *arg, char *err, size_t errlen);

/* The pid filter (`tracked`); -1: ask /proc.  Enables retirement. */
/* The role (PGT_ROLE_*) of a tracked process, or of one just gone; 0 unknown. */
typedef uint32_t (*pid_role_fn) (void *arg, uint32_t pid, int alive);

extern void pid_retire_setup(int tracked_fd, pid_role_fn role_of, void *role_arg);

/*
 * Whether pid's rows stay under its pid whatever becomes of it: a trace
 * of one backend keeps the backend's and its parallel workers' (it prints
 * those, and a folded row is no one's), and folds the other processes'
 * (the children it lets go, and those gone before it could look).
 */
typedef int (*pid_keep_fn) (void *arg, uint32_t pid);

extern void pid_retire_keep(pid_keep_fn keep, void *keep_arg);

/*
 * Fold and delete the due rows among the n rows just copied from the map
 * (keys and values laid out as m says).  Returns how many were retired:
 * when any, the caller copies the map again.
 */
extern size_t pid_retire_rows(const retire_map *m, const void *keys, const void *vals,
							  size_t n);

/*
 * Is pid known to have exited (its rows not folded yet)?  From the last
 * checks, no kernel call.  Publishers add such rows after all others, so a
 * segment table too small for a burst of exits loses those first.
 */
extern int	pid_retire_exiting(uint32_t pid);

extern uint32_t pid_retire_role(uint32_t pid);

/*
 * The role of a running process now, from the callback given to
 * pid_retire_setup (the served clusters' records), whether or not the
 * table has it; 0 when not known (not classified yet, or no callback).
 */
extern uint32_t pid_retire_live_role(uint32_t pid);

/*
 * May the rows under pid still be those of another process than the one
 * holding it now (ident: its `tracked` entry's attached_ns)?  True while
 * the last check found another process there, or a reused pid's rows are
 * still to fold: the publishers show such rows as exited meanwhile.
 */
extern int	pid_retire_rows_of_other(uint32_t pid, uint64_t ident);

/*
 * A process the daemon stops tracking (it exited) had this role and this
 * pid in its cluster's pid namespace (nspid; 0 when not known): kept for
 * its rows until they fold, the role unless a check already noted one.
 * The checks alone can miss the role of a process that lived less than two
 * of them: found before the daemon knew it, and after the daemon forgot it.
 */
extern void pid_retire_note_exit(uint32_t pid, uint32_t role, uint32_t nspid);

/*
 * The pid an exited process had in its cluster's pid namespace, as
 * pid_retire_note_exit noted it; 0 when not known.
 */
extern uint32_t pid_retire_nspid(uint32_t pid);

/* Fold helpers for value structs made of __u64 counters. */
typedef struct retire_u64_layout
{
	size_t		nwords;			/* __u64 counters at the start of the value */
	uint64_t	max_mask;		/* bit i: word i is a maximum, not a sum */
	uint64_t	last_mask;		/* bit i: word i is a current value: keep src */
	size_t		last_guard;		/* 1 + the word src must have non-zero for its
								 * current values to be kept (a row that never
								 * set one has 0 there); 0: always kept */
} retire_u64_layout;

extern void pid_retire_fold_u64(void *dst, const void *src, const void *layout);

#endif							/* PGT_HELPER_PID_RETIRE_H */
