/*
 * helper/task_accum.h
 *	  The rows tracked tasks keep in their own task storage (task
 *	  accumulators, bpf/kernel_tacc.bpf.h): read through an object's task
 *	  iterator and merged into the copy of its maps, so that the published
 *	  aggregates are the maps' rows plus every live task's own.
 *
 * A copy is consistent when no row moved between a task and the maps while
 * it was taken: tacc_folds' begun equal to done before the copy and begun
 * unchanged after it (kset_collect retries otherwise).
 *
 * Single-threaded (the daemon's or the trace loop).
 */
#ifndef PGT_HELPER_TASK_ACCUM_H
#define PGT_HELPER_TASK_ACCUM_H

#include <stddef.h>
#include <stdint.h>

struct bpf_link;
struct pgt_tacc_folds;

/* The iterator's output, as read */
typedef struct tacc_buf
{
	unsigned char *data;
	size_t		len;
	size_t		cap;
} tacc_buf;

/* How rows of one kind are keyed and folded */
typedef struct tacc_kind
{
	uint32_t	kind;			/* PGT_TACC_K* */
	size_t		ksize;			/* key bytes at the start of a row */
	size_t		rsize;			/* row bytes (key then value) */
	size_t		pid_off;		/* the __u32 pid within the key */
	size_t		pm_off;			/* the __u32 postmaster within the row */
	void		(*fold) (void *dst, const void *src, const void *arg);	/* values */
	const void *fold_arg;
} tacc_kind;

/* The counters of fd (`tacc_folds`) into *f; 0, or -1 when unreadable. */
extern int	tacc_folds_read(int fd, struct pgt_tacc_folds *f);

/*
 * Run the iterator iter once into *b (grown as needed).  Returns 0, or a
 * negative errno (b->len 0).
 */
extern int	tacc_read(struct bpf_link *iter, tacc_buf *b);

/*
 * Merge the rows of kind k found in b into *rows (n rows, room for *cap,
 * grown as needed): a row whose key is there already, of the same
 * postmaster, is folded into it, the others are appended (a pid's rows of
 * a cluster its new process is not in: a reused pid not folded yet).  Returns the rows now in *rows; a malformed
 * record in b ends the walk (logged once).
 */
extern size_t tacc_merge(const tacc_kind *k, const tacc_buf *b, unsigned char **rows,
						 size_t n, size_t *cap);

extern void tacc_buf_free(tacc_buf *b);

#endif							/* PGT_HELPER_TASK_ACCUM_H */
