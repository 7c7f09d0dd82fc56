/*
 * test/unit/test_task_accum.c
 *	  Merging tasks' own rows (helper/task_accum.c) into a copy of a map:
 *	  a task row whose key the copy has is folded into it (sums added,
 *	  maximum kept) when both are of one postmaster, the others are appended, two threads' rows of one key
 *	  become one, rows of other kinds are skipped, and the iterator's
 *	  output is checked record by record: a wrong size or kind, a record
 *	  running past the end, a pid 0 or a retired pid is not taken.
 */
#include "task_accum.h"
#include "kernel_sets.h"
#include "pid_retire.h"
#include "unit.h"

#include <stddef.h>
#include <stdlib.h>

static const retire_u64_layout kio_layout = {.nwords = 5, .max_mask = 1ULL << 4};

static const tacc_kind kio_kind = {
	.kind = PGT_TACC_KIO, .ksize = sizeof(struct pgt_kio_key),
	.rsize = sizeof(struct pgt_kio_row), .pid_off = offsetof(struct pgt_kio_row, k.pid),
	.pm_off = offsetof(struct pgt_kio_row, v.pm), .fold = pid_retire_fold_u64, .fold_arg = &kio_layout};

static struct pgt_kio_row
row(uint32_t pid, uint64_t qid, uint64_t calls, uint64_t max_ns)
{
	struct pgt_kio_row r;

	memset(&r, 0, sizeof(r));
	r.k.pid = pid;
	r.k.queryid = qid;
	r.k.op = 2;
	r.v.calls = calls;
	r.v.bytes = 100 * calls;
	r.v.max_ns = max_ns;
	r.v.pm = 7;
	return r;
}

/* Append a record (header with kind and size, then size bytes of data). */
static void
put(tacc_buf *b, uint32_t kind, uint32_t size, const void *data, size_t len)
{
	struct pgt_tacc_rec h = {.kind = kind, .size = size};

	b->data = realloc(b->data, b->len + sizeof(h) + len);
	memcpy(b->data + b->len, &h, sizeof(h));
	memcpy(b->data + b->len + sizeof(h), data, len);
	b->len += sizeof(h) + len;
}

static void
put_kio(tacc_buf *b, struct pgt_kio_row r)
{
	put(b, PGT_TACC_KIO, sizeof(r), &r, sizeof(r));
}

static struct pgt_kio_row *
find(struct pgt_kio_row *rows, size_t n, uint32_t pid, uint64_t qid)
{
	size_t		i;

	for (i = 0; i < n; i++)
		if (rows[i].k.pid == pid && rows[i].k.queryid == qid)
			return &rows[i];
	return NULL;
}

static void
test_merge(void)
{
	tacc_buf	b = {0};
	struct pgt_kproc_row other;
	struct pgt_kio_row *rows = malloc(2 * sizeof(*rows));
	struct pgt_kio_row *r;
	size_t		cap = 2;
	size_t		n;

	rows[0] = row(10, 1, 5, 300);
	rows[1] = row(11, 1, 2, 50);
	rows[1].v.pm = 8;			/* pid 11's rows not folded yet: another cluster's process */
	memset(&other, 0, sizeof(other));
	other.k.pid = 10;
	put_kio(&b, row(10, 1, 3, 900));	/* folds into rows[0] */
	put_kio(&b, row(11, 1, 4, 40));		/* pid 11 of cluster 7 now: appended */
	put(&b, PGT_TACC_KPROC, sizeof(other), &other, sizeof(other));	/* not kio: skipped */
	put_kio(&b, row(12, 4, 1, 10));		/* new */
	put_kio(&b, row(12, 4, 2, 20));		/* the same key from a second thread */
	put_kio(&b, row(0, 9, 1, 1));		/* pid 0 is the kernel's, never a task's */
	put_kio(&b, row(PGT_RETIRED_PID(7), 9, 1, 1));

	n = tacc_merge(&kio_kind, &b, (unsigned char **) &rows, 2, &cap);
	CHECK_INT(n, 4);
	CHECK(cap >= 4, "the copy grew: %zu", cap);
	r = find(rows, n, 10, 1);
	CHECK(r != NULL && r->v.calls == 8 && r->v.bytes == 800 && r->v.max_ns == 900,
		  "task row folded into the map's: sums added, maximum kept");
	r = find(rows, n, 11, 1);
	CHECK(r != NULL && r->v.calls == 2 && r->v.pm == 8,
		  "a map row with task rows of another cluster only is untouched");
	CHECK(n == 4 && rows[2].k.pid == 11 && rows[2].v.calls == 4 && rows[2].v.pm == 7,
		  "and those are a row of their own");
	r = find(rows, n, 12, 4);
	CHECK(r != NULL && r->v.calls == 3 && r->v.max_ns == 20 && r->v.pm == 7,
		  "two threads' rows of one key appended as one");
	free(rows);
	free(b.data);
}

static void
test_malformed(void)
{
	tacc_buf	b = {0};
	struct pgt_kio_row good = row(20, 2, 1, 1);
	struct pgt_kio_row *rows = NULL;
	size_t		cap = 0;
	size_t		n;

	put_kio(&b, good);
	put(&b, PGT_TACC_KIO, sizeof(good) - 8, &good, sizeof(good) - 8);	/* wrong size */
	put_kio(&b, row(21, 2, 1, 1));		/* after the bad one: not read */
	n = tacc_merge(&kio_kind, &b, (unsigned char **) &rows, 0, &cap);
	CHECK_INT(n, 1);
	CHECK(rows != NULL && rows[0].k.pid == 20, "rows before a malformed record are kept");
	free(rows);
	free(b.data);

	memset(&b, 0, sizeof(b));
	rows = NULL;
	cap = 0;
	put(&b, 99, sizeof(good), &good, sizeof(good));	/* unknown kind */
	CHECK_INT(tacc_merge(&kio_kind, &b, (unsigned char **) &rows, 0, &cap), 0);
	free(b.data);

	memset(&b, 0, sizeof(b));
	put_kio(&b, good);
	b.len -= 1;							/* truncated: the record runs past the end */
	CHECK_INT(tacc_merge(&kio_kind, &b, (unsigned char **) &rows, 0, &cap), 0);
	free(b.data);
	free(rows);

	memset(&b, 0, sizeof(b));
	rows = NULL;
	CHECK_INT(tacc_merge(&kio_kind, &b, (unsigned char **) &rows, 0, &cap), 0);
	CHECK(rows == NULL, "nothing read: nothing allocated");
}

/*
 * A map copy that could not allocate leaves no rows but the capacity it
 * asked for: the merge must allocate that much, since the next map copy
 * fills the buffer up to it.
 */
static void
test_keeps_capacity(void)
{
	tacc_buf	b = {0};
	struct pgt_kio_row *rows = NULL;
	size_t		cap = 1000;
	size_t		n;

	put_kio(&b, row(30, 2, 1, 1));
	n = tacc_merge(&kio_kind, &b, (unsigned char **) &rows, 0, &cap);
	CHECK_INT(n, 1);
	CHECK(cap >= 1000, "the capacity the map copy fills is kept: %zu", cap);
	if (rows != NULL)
		memset(rows, 0, cap * sizeof(*rows));	/* ASan: the whole capacity is there */
	free(rows);
	free(b.data);
}

int
main(void)
{
	test_merge();
	test_malformed();
	test_keeps_capacity();
	UNIT_MAIN_END("test_task_accum");
}
