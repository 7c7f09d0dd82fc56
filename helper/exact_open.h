/*
 * helper/exact_open.h
 *	  Waits in progress of the exact set (helper/exact_open.c).
 */
#ifndef PGT_HELPER_EXACT_OPEN_H
#define PGT_HELPER_EXACT_OPEN_H

#include <stddef.h>
#include <stdint.h>

/* One wait in progress: whose, which, since when (bpf_ktime_get_ns clock). */
typedef struct exact_open_wait
{
	uint32_t	pid;
	uint32_t	pm;				/* its postmaster */
	uint32_t	event;
	uint32_t	matched;		/* publish: a row of the aggregates took it */
	uint64_t	qid;
	uint64_t	start_ns;
} exact_open_wait;

/* Where the running source keeps its waits in progress. */
typedef struct exact_open_src
{
	int			watchpoints;	/* 1: exact_watch map, 0: exact_starts storage */
	int			starts_fd;		/* exact_starts (task storage) */
	int			watch_fd;		/* exact_watch (hash by tgid) */
	int			tracked_fd;		/* the foundation's tracked processes */
	uint32_t	gen;			/* exact_gen of the current window */
} exact_open_src;

/* A growing array of waits, sorted by (pid, event, qid) once collected. */
typedef struct exact_open_set
{
	exact_open_wait *w;
	size_t		n;
	size_t		cap;
} exact_open_set;

extern void exact_open_collect(const exact_open_src *src, exact_open_set *set);
extern exact_open_wait *exact_open_find(exact_open_set *set, uint32_t pid,
										uint32_t event, uint64_t qid);
extern int	exact_open_fold(int waits_fd, const exact_open_set *set, uint64_t now_ns);
extern void exact_open_free(exact_open_set *set);

#endif							/* PGT_HELPER_EXACT_OPEN_H */
