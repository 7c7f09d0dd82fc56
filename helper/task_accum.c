/*
 * helper/task_accum.c
 *	  Reading tracked tasks' own aggregate rows through a task iterator and
 *	  merging them into a copy of the maps (see task_accum.h).
 *
 * The iterator's output is records of a struct pgt_tacc_rec and one row;
 * every record is checked (kind, size, a pid that is a process's) before
 * its row is used.  Single-threaded.
 */
#include "task_accum.h"

#include "kernel_sets.h"
#include "log.h"
#include "pid_retire.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * tacc_folds_read
 *		See task_accum.h.
 */
int
tacc_folds_read(int fd, struct pgt_tacc_folds *f)
{
	uint32_t	zero = 0;

	if (fd < 0 || bpf_map_lookup_elem(fd, &zero, f) != 0)
		return -1;
	return 0;
}

/*
 * buf_reserve
 *		Room for at least `more` bytes after b->len.
 */
static int
buf_reserve(tacc_buf *b, size_t more)
{
	size_t		cap = b->cap ? b->cap : 65536;
	unsigned char *d;

	while (cap - b->len < more)
		cap *= 2;
	if (cap == b->cap)
		return 0;
	d = realloc(b->data, cap);
	if (d == NULL)
		return -ENOMEM;
	b->data = d;
	b->cap = cap;
	return 0;
}

/*
 * tacc_read
 *		See task_accum.h.
 */
int
tacc_read(struct bpf_link *iter, tacc_buf *b)
{
	int			fd;
	int			err = 0;

	b->len = 0;
	if (iter == NULL)
		return -EINVAL;
	fd = bpf_iter_create(bpf_link__fd(iter));
	if (fd < 0)
		return -errno;
	for (;;)
	{
		ssize_t		r;

		if ((err = buf_reserve(b, 16384)) != 0)
			break;
		r = read(fd, b->data + b->len, b->cap - b->len);
		if (r == 0)
			break;
		if (r < 0)
		{
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		b->len += (size_t) r;
	}
	close(fd);
	if (err != 0)
		b->len = 0;
	return err;
}

/* The key size of the rows being sorted (qsort_r would be glibc's only) */
static size_t sort_ksize;

static int
cmp_key(const void *a, const void *b)
{
	return memcmp(a, b, sort_ksize);
}

/*
 * extract
 *		The rows of kind k in b, packed into a new array (*out, NULL when
 *		none).  Returns their number.
 */
static size_t
extract(const tacc_kind *k, const tacc_buf *b, unsigned char **out)
{
	static int	warned;
	size_t		off = 0;
	size_t		m = 0;
	size_t		cap = 0;

	*out = NULL;
	while (off + sizeof(struct pgt_tacc_rec) <= b->len)
	{
		struct pgt_tacc_rec h;
		uint32_t	pid;

		memcpy(&h, b->data + off, sizeof(h));
		off += sizeof(h);
		if (h.kind < PGT_TACC_KIO || h.kind > PGT_TACC_KHIST || h.size > b->len - off ||
			(h.kind == k->kind && h.size != k->rsize))
		{
			if (!warned++)
				log_warn("task accumulators: malformed record (kind %u, %u bytes) at %zu of %zu: "
						 "the rest is ignored", h.kind, h.size, off, b->len);
			break;
		}
		if (h.kind == k->kind)
		{
			memcpy(&pid, b->data + off + k->pid_off, sizeof(pid));
			if (pid != 0 && !PGT_IS_RETIRED(pid))
			{
				if (m == cap)
				{
					unsigned char *grown = realloc(*out, (cap ? 2 * cap : 64) * k->rsize);

					if (grown == NULL)
						break;
					*out = grown;
					cap = cap ? 2 * cap : 64;
				}
				memcpy(*out + m * k->rsize, b->data + off, k->rsize);
				m++;
			}
		}
		off += h.size;
	}
	return m;
}

/*
 * coalesce
 *		Sorted rows with equal keys (threads of one process) into one.
 *		Returns the rows left.
 */
static size_t
coalesce(const tacc_kind *k, unsigned char *rows, size_t m)
{
	size_t		out = 0;
	size_t		i;

	for (i = 0; i < m; i++)
	{
		unsigned char *r = rows + i * k->rsize;
		unsigned char *last = out > 0 ? rows + (out - 1) * k->rsize : NULL;

		if (last != NULL && memcmp(last, r, k->ksize) == 0)
			k->fold(last + k->ksize, r + k->ksize, k->fold_arg);
		else
		{
			if (out != i)
				memcpy(rows + out * k->rsize, r, k->rsize);
			out++;
		}
	}
	return out;
}

/*
 * same_pm
 *		Are rows a and b of one postmaster?
 */
static int
same_pm(const tacc_kind *k, const unsigned char *a, const unsigned char *b)
{
	return memcmp(a + k->pm_off, b + k->pm_off, sizeof(uint32_t)) == 0;
}

/*
 * tacc_merge
 *		See task_accum.h.  The task rows are sorted and each map row looks
 *		its key up among them: O(n log m), the (large) map copy not moved.
 */
size_t
tacc_merge(const tacc_kind *k, const tacc_buf *b, unsigned char **rows, size_t n,
		   size_t *cap)
{
	unsigned char *extra;
	unsigned char *used;
	size_t		m = extract(k, b, &extra);
	size_t		left;
	size_t		i;

	if (m == 0)
		return n;
	sort_ksize = k->ksize;
	qsort(extra, m, k->rsize, cmp_key);
	m = coalesce(k, extra, m);
	used = calloc(m, 1);
	if (used == NULL)
	{
		free(extra);
		return n;
	}
	left = m;
	for (i = 0; i < n; i++)
	{
		unsigned char *r = *rows + i * k->rsize;
		unsigned char *hit = bsearch(r, extra, m, k->rsize, cmp_key);
		size_t		j = hit != NULL ? (size_t) (hit - extra) / k->rsize : 0;

		/* a key twice in the copy: once; another cluster's row: not */
		if (hit != NULL && !used[j] && same_pm(k, r, hit))
		{
			k->fold(r + k->ksize, hit + k->ksize, k->fold_arg);
			used[j] = 1;
			left--;
		}
	}
	if (n + left > *cap || *rows == NULL)
	{
		/* never below *cap: the next map copy fills up to it (copy_map) */
		size_t		want = n + left > *cap ? n + left : *cap;
		unsigned char *grown = realloc(*rows, want * k->rsize);

		if (grown == NULL)
			left = 0;
		else
		{
			*rows = grown;
			*cap = want;
		}
	}
	for (i = 0; i < m && left > 0; i++)
		if (!used[i])
		{
			memcpy(*rows + n * k->rsize, extra + i * k->rsize, k->rsize);
			n++;
			left--;
		}
	free(used);
	free(extra);
	return n;
}

/*
 * tacc_buf_free
 *		See task_accum.h.
 */
void
tacc_buf_free(tacc_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}
