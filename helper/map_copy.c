/*
 * helper/map_copy.c
 *	  Copying a BPF hash map into user memory (see map_copy.h).  The map
 *	  may change during the copy: BPF programs add entries at any time, so
 *	  the entry-by-entry walk is bounded, and an entry deleted between
 *	  finding its key and reading it is skipped.
 *
 * Threading: none of its own; callers are single-threaded.
 */
#include "map_copy.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#define MAX_KEY		64

/*
 * copy_batch
 *		Batches of BPF_MAP_LOOKUP_BATCH; -1 when the kernel has none.
 */
static ssize_t
copy_batch(int fd, size_t ksize, size_t vsize, unsigned char *keys, unsigned char *vals,
		   size_t max)
{
	DECLARE_LIBBPF_OPTS(bpf_map_batch_opts, opts);
	uint64_t	in_batch = 0;
	uint64_t	out_batch = 0;
	size_t		n = 0;
	int			first = 1;

	while (n < max)
	{
		uint32_t	count = (uint32_t) (max - n);
		int			err = bpf_map_lookup_batch(fd, first ? NULL : &in_batch, &out_batch,
											   keys + n * ksize, vals + n * vsize,
											   &count, &opts);

		if (err != 0 && errno != ENOENT)
			return first ? -1 : (ssize_t) n;
		n += count;
		if (err != 0)
			break;				/* ENOENT: that was the last batch */
		in_batch = out_batch;
		first = 0;
	}
	return (ssize_t) n;
}

/*
 * copy_walk
 *		Entry by entry, at most 2 * max steps.
 */
static size_t
copy_walk(int fd, size_t ksize, size_t vsize, unsigned char *keys, unsigned char *vals,
		  size_t max)
{
	unsigned char cur[MAX_KEY];
	unsigned char next[MAX_KEY];
	size_t		guard = 2 * max;
	size_t		n = 0;
	int			have = 0;

	if (ksize > MAX_KEY)
		return 0;
	while (n < max && guard-- > 0 &&
		   bpf_map_get_next_key(fd, have ? cur : NULL, next) == 0)
	{
		memcpy(cur, next, ksize);
		have = 1;
		if (bpf_map_lookup_elem(fd, cur, vals + n * vsize) == 0)
		{
			memcpy(keys + n * ksize, cur, ksize);
			n++;
		}
	}
	return n;
}

/*
 * map_copy
 *		See map_copy.h.
 */
size_t
map_copy(int fd, size_t ksize, size_t vsize, void *keys, void *vals, size_t max)
{
	ssize_t		n;

	if (fd < 0 || max == 0)
		return 0;
	n = copy_batch(fd, ksize, vsize, keys, vals, max);
	if (n >= 0)
		return (size_t) n;
	return copy_walk(fd, ksize, vsize, keys, vals, max);
}

/*
 * map_copy_rows
 *		See map_copy.h.
 */
size_t
map_copy_rows(int fd, size_t ksize, size_t vsize, void *rows, size_t max)
{
	unsigned char *keys = malloc(max * ksize);
	unsigned char *vals = malloc(max * vsize);
	unsigned char *r = rows;
	size_t		n = 0;
	size_t		i;

	if (keys != NULL && vals != NULL)
		n = map_copy(fd, ksize, vsize, keys, vals, max);
	for (i = 0; i < n; i++)
	{
		memcpy(r + i * (ksize + vsize), keys + i * ksize, ksize);
		memcpy(r + i * (ksize + vsize) + ksize, vals + i * vsize, vsize);
	}
	free(keys);
	free(vals);
	return n;
}

/*
 * map_delete_rows_of
 *		See map_copy.h.  The entries are found in one copy (batched where
 *		the kernel can): walking the keys and deleting as it goes would
 *		restart the walk, and a walk entry by entry costs two system calls
 *		per entry, which a client asking for resets in a loop would make
 *		the daemon's loop pay for every cluster.
 */
size_t
map_delete_rows_of(int fd, size_t ksize, size_t vsize, size_t pm_off, size_t max,
				   uint32_t pm, int shared)
{
	size_t		row = ksize + vsize;
	unsigned char *rows;
	size_t		n;
	size_t		gone = 0;

	if (fd < 0 || pm_off + sizeof(pm) > row)
		return 0;
	rows = malloc(max * row);
	if (rows == NULL)
		return 0;
	n = map_copy_rows(fd, ksize, vsize, rows, max);
	for (size_t i = 0; i < n; i++)
	{
		uint32_t	rpm;

		memcpy(&rpm, rows + i * row + pm_off, sizeof(rpm));
		if ((rpm == pm || (shared && rpm == 0)) && bpf_map_delete_elem(fd, rows + i * row) == 0)
			gone++;
	}
	free(rows);
	return gone;
}
