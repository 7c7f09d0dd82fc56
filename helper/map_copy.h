/*
 * helper/map_copy.h
 *	  Copying a BPF hash map into user memory: with BPF_MAP_LOOKUP_BATCH
 *	  (one system call per batch; kernels 5.6+), else entry by entry.
 *	  Every probe set copies its aggregates once per publication, and the
 *	  entry-by-entry walk costs two system calls per entry.
 */
#ifndef PGT_HELPER_MAP_COPY_H
#define PGT_HELPER_MAP_COPY_H

#include <stddef.h>
#include <stdint.h>

/*
 * Up to max entries into keys[] and vals[] (arrays of ksize and vsize
 * bytes per entry).  Returns the number copied; 0 for fd < 0.
 */
extern size_t map_copy(int fd, size_t ksize, size_t vsize, void *keys, void *vals,
					   size_t max);

/* The same into rows of key then value, packed; 0 when memory is short. */
extern size_t map_copy_rows(int fd, size_t ksize, size_t vsize, void *rows, size_t max);

/*
 * Delete the entries (up to max) whose __u32 postmaster, at pm_off in the
 * row of key then value, is pm, or 0 when shared.  Returns how many went.
 */
extern size_t map_delete_rows_of(int fd, size_t ksize, size_t vsize, size_t pm_off,
								 size_t max, uint32_t pm, int shared);

#endif							/* PGT_HELPER_MAP_COPY_H */
