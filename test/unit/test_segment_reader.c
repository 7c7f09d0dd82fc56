/*
 * test_segment_reader.c — the reader's validation of helper segments, the
 * code every backend runs before it trusts a byte (common/pgt_segment.c).
 *
 * Segments are built by hand here, independently of the helper's writer, so
 * a bug shared by writer and reader cannot hide.  Each damaged form must be
 * classified, and none may make the reader touch memory outside the copy
 * (run under valgrind to see that too).
 */
#include "unit.h"
#include "pgt_segment.h"

#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NPROBES	2
#define NBACK	3

static size_t
build(unsigned char **out)
{
	size_t		off_p = sizeof(struct pgt_seg_header);
	size_t		off_b = off_p + 4 * sizeof(struct pgt_probeset_entry);
	size_t		len = off_b + 8 * sizeof(struct pgt_backend_entry);
	unsigned char *buf = calloc(1, len);
	struct pgt_seg_header *h = (struct pgt_seg_header *) buf;
	struct pgt_probeset_entry *p = (struct pgt_probeset_entry *) (buf + off_p);
	struct pgt_backend_entry *b = (struct pgt_backend_entry *) (buf + off_b);

	h->magic = PGT_SEG_MAGIC;
	h->layout_version = PGT_SEG_LAYOUT_VERSION;
	h->header_size = sizeof(*h);
	h->segment_size = len;
	h->generation = 7;
	h->seq = 42;
	h->state = PGT_WRITER_RUNNING;
	h->writer_pid = 1234;
	h->nsections = 2;
	strcpy(h->helper_version, "0.1.0");
	h->sections[0] = (struct pgt_section) {PGT_SEC_PROBESETS, sizeof(*p), off_p, 4, NPROBES, 0};
	h->sections[1] = (struct pgt_section) {PGT_SEC_BACKENDS, sizeof(*b), off_b, 8, NBACK, 0};
	strcpy(p[0].name, "process");
	p[0].state = PGT_PROBE_AVAILABLE;
	strcpy(p[1].name, "kprobes");
	p[1].state = PGT_PROBE_UNAVAILABLE;
	for (int i = 0; i < NBACK; i++)
	{
		b[i].pid = 100 + i;
		b[i].role = PGT_ROLE_CLIENT_BACKEND;
		b[i].syscalls = 1000 * i;
	}
	*out = buf;
	return len;
}

static pgt_seg_result
check(const unsigned char *buf, size_t len, pgt_seg_view *v)
{
	char		err[256];

	return pgt_segment_validate(buf, len, v, err, sizeof(err));
}

static void
test_valid(void)
{
	unsigned char *buf;
	size_t		len = build(&buf);
	pgt_seg_view v;

	CHECK(check(buf, len, &v) == PGT_SEG_OK, "valid segment accepted");
	CHECK(v.hdr != NULL && v.hdr->generation == 7, "header visible");
	CHECK(pgt_view_count(&v, PGT_SEC_PROBESETS) == NPROBES && pgt_view_count(&v, PGT_SEC_BACKENDS) == NBACK, "counts");
	CHECK(strcmp(pgt_view_probeset(&v, 1)->name, "kprobes") == 0, "probe row 1");
	CHECK(pgt_view_backend(&v, 2)->pid == 102 && pgt_view_backend(&v, 2)->syscalls == 2000,
		  "backend row 2");
	free(buf);
}

static void
test_damaged(void)
{
	unsigned char *buf;
	size_t		len = build(&buf);
	struct pgt_seg_header *h = (struct pgt_seg_header *) buf;
	pgt_seg_view v;
	unsigned char *zero = calloc(1, len);

	CHECK(check(buf, 0, &v) == PGT_SEG_TRUNCATED, "empty");
	CHECK(check(buf, 700, &v) == PGT_SEG_TRUNCATED, "shorter than the header");
	CHECK(check(buf, len - 1, &v) == PGT_SEG_TRUNCATED, "shorter than segment_size");
	CHECK(check(zero, len, &v) == PGT_SEG_BAD_MAGIC, "zeroed");
	CHECK(v.hdr == NULL && v.tables[PGT_SEC_BACKENDS].rows == NULL, "no view on failure");
	free(zero);

#define MUTATE(field, value, expect, what) \
	do { \
		__typeof__(field) saved = (field); \
		(field) = (value); \
		CHECK(check(buf, len, &v) == (expect), what); \
		(field) = saved; \
	} while (0)

	MUTATE(h->magic, 0x1234, PGT_SEG_BAD_MAGIC, "foreign magic");
	MUTATE(h->layout_version, 2, PGT_SEG_BAD_VERSION, "other layout version");
	MUTATE(h->header_size, 512, PGT_SEG_CORRUPT, "header size");
	MUTATE(h->segment_size, (uint64_t) 1 << 40, PGT_SEG_CORRUPT, "absurd size");
	MUTATE(h->segment_size, 10, PGT_SEG_CORRUPT, "size below header");
	MUTATE(h->nsections, 17, PGT_SEG_CORRUPT, "too many sections");
	MUTATE(h->state, 9, PGT_SEG_CORRUPT, "unknown state");
	MUTATE(h->seq, 43, PGT_SEG_BUSY, "odd seq = mid-write");
	MUTATE(h->sections[1].count, 9, PGT_SEG_CORRUPT, "count above capacity");
	MUTATE(h->sections[1].capacity, 0xffffffffu, PGT_SEG_CORRUPT, "capacity beyond the file");
	MUTATE(h->sections[1].offset, len - 8, PGT_SEG_CORRUPT, "table past the end");
	MUTATE(h->sections[1].offset, UINT64_MAX - 16, PGT_SEG_CORRUPT, "offset overflow");
	MUTATE(h->sections[1].offset, 8, PGT_SEG_CORRUPT, "table inside the header");
	MUTATE(h->sections[1].offset, h->sections[1].offset + 4, PGT_SEG_CORRUPT, "misaligned");
	MUTATE(h->sections[1].entry_size, 8, PGT_SEG_CORRUPT, "entry smaller than known struct");
	{
		/* a stride that is no multiple of 8 puts every other row's u64s off line */
		char		err[256];
		uint32_t	saved = h->sections[0].entry_size;

		h->sections[0].entry_size = sizeof(struct pgt_probeset_entry) + 4;
		CHECK(pgt_segment_validate(buf, len, &v, err, sizeof(err)) == PGT_SEG_CORRUPT &&
			  strstr(err, "misaligned rows") != NULL, "entry size not a multiple of 8");
		h->sections[0].entry_size = saved;
	}
	MUTATE(h->sections[1].kind, PGT_SEC_PROBESETS, PGT_SEG_CORRUPT, "known kind twice");
	/* an unknown kind is a newer helper's table: skipped, not an error */
	MUTATE(h->sections[1].kind, 999, PGT_SEG_OK, "unknown kind skipped");
	free(buf);
}

static void
test_random(void)
{
	unsigned char *buf;
	size_t		len = build(&buf);
	unsigned char *noise = malloc(len);
	pgt_seg_view v;
	int			rejected = 0;

	srand(7);
	for (int round = 0; round < 2000; round++)
	{
		for (size_t i = 0; i < len; i++)
			noise[i] = rand() & 0xff;
		if (round % 2)
			memcpy(noise, buf, 16);	/* valid magic and version: deeper paths */
		if (check(noise, len, &v) != PGT_SEG_OK)
			rejected++;
	}
	CHECK(rejected == 2000, "random bytes never validate (%d/2000 rejected)", rejected);
	free(noise);
	free(buf);
}

/* A good segment (build) written to a new temporary file at path. */
static int
temp_segment(char *path, unsigned char **buf, size_t *len)
{
	int			fd = mkstemp(path);

	*len = build(buf);
	CHECK(fd >= 0 && write(fd, *buf, *len) == (ssize_t) *len, "temp file written");
	return fd;
}

static void
test_snapshot_file(void)
{
	unsigned char *buf;
	size_t		len;
	char		path[] = "/tmp/pgt_unit_segXXXXXX";
	int			fd = temp_segment(path, &buf, &len);
	void	   *copy;
	size_t		clen;
	pgt_seg_view v;
	char		err[256];

	CHECK(pgt_segment_snapshot(path, pgt_alloc_malloc, NULL, &copy, &clen, &v, err, sizeof(err))
		  == PGT_SEG_OK && clen == len, "snapshot of a good file: %s", err);
	CHECK(pgt_view_count(&v, PGT_SEC_BACKENDS) == NBACK, "snapshot view");
	free(copy);

	/* seq left odd, as by a writer killed mid-update: stale, not busy */
	{
		uint64_t	odd = 43;

		CHECK(pwrite(fd, &odd, sizeof(odd), offsetof(struct pgt_seg_header, seq)) ==
			  (ssize_t) sizeof(odd), "seq made odd");
		CHECK(pgt_segment_snapshot(path, pgt_alloc_malloc, NULL, &copy, &clen, &v, err,
								   sizeof(err)) == PGT_SEG_ABANDONED && clen == len,
			  "a segment left mid-update is abandoned: %s", err);
		CHECK(strcmp(pgt_seg_result_name(PGT_SEG_ABANDONED), "stale") == 0);
		CHECK(strstr(err, "stopped in the middle of an update") != NULL, "says why: %s", err);
		free(copy);
	}

	CHECK(ftruncate(fd, 900) == 0, "truncate");
	CHECK(pgt_segment_snapshot(path, pgt_alloc_malloc, NULL, &copy, &clen, &v, err, sizeof(err))
		  == PGT_SEG_TRUNCATED, "truncated file reported: %s", err);
	free(copy);
	close(fd);
	unlink(path);
	CHECK(pgt_segment_snapshot(path, pgt_alloc_malloc, NULL, &copy, &clen, &v, err, sizeof(err))
		  == PGT_SEG_MISSING, "missing file reported");
	free(copy);
	CHECK(pgt_segment_snapshot("/tmp", pgt_alloc_malloc, NULL, &copy, &clen, &v, err, sizeof(err))
		  == PGT_SEG_IO_ERROR, "a directory is not a segment");
	free(copy);
	free(buf);
}

/*
 * The header-only copy the background worker polls: a kilobyte, the writer's
 * state, no tables; the section descriptors still checked against the file.
 */
static void
test_snapshot_header(void)
{
	unsigned char *buf;
	size_t		len;
	char		path[] = "/tmp/pgt_unit_segXXXXXX";
	int			fd = temp_segment(path, &buf, &len);
	struct pgt_seg_header *h = (struct pgt_seg_header *) buf;
	void	   *copy;
	pgt_seg_view v;
	char		err[256];

	CHECK(pgt_segment_snapshot_header(path, pgt_alloc_malloc, NULL, &copy, &v, err,
									  sizeof(err)) == PGT_SEG_OK, "header of a good file: %s", err);
	CHECK(v.hdr != NULL && v.hdr->generation == 7 && v.hdr->writer_pid == 1234,
		  "header fields read");
	CHECK(pgt_view_count(&v, PGT_SEC_BACKENDS) == 0 && pgt_view_count(&v, PGT_SEC_PROBESETS) == 0,
		  "no tables in a header-only view");
	free(copy);

	/* a section that would end past the file, and one listed twice */
	h->sections[1].offset = len;
	CHECK(pwrite(fd, buf, sizeof(*h), 0) == (ssize_t) sizeof(*h), "bad offset written");
	CHECK(pgt_segment_snapshot_header(path, pgt_alloc_malloc, NULL, &copy, &v, err,
									  sizeof(err)) == PGT_SEG_CORRUPT && v.hdr == NULL,
		  "section past the end found from the header: %s", err);
	free(copy);
	h->sections[1] = h->sections[0];
	CHECK(pwrite(fd, buf, sizeof(*h), 0) == (ssize_t) sizeof(*h), "twin section written");
	CHECK(pgt_segment_snapshot_header(path, pgt_alloc_malloc, NULL, &copy, &v, err,
									  sizeof(err)) == PGT_SEG_CORRUPT && strstr(err, "twice"),
		  "a section twice found from the header: %s", err);
	free(copy);

	/* the file shorter than the header says, then shorter than a header */
	free(buf);
	len = build(&buf);
	CHECK(pwrite(fd, buf, len, 0) == (ssize_t) len && ftruncate(fd, len - 1) == 0, "cut");
	CHECK(pgt_segment_snapshot_header(path, pgt_alloc_malloc, NULL, &copy, &v, err,
									  sizeof(err)) == PGT_SEG_TRUNCATED, "one byte short: %s", err);
	free(copy);
	CHECK(ftruncate(fd, 900) == 0, "truncate");
	CHECK(pgt_segment_snapshot_header(path, pgt_alloc_malloc, NULL, &copy, &v, err,
									  sizeof(err)) == PGT_SEG_TRUNCATED, "no whole header: %s", err);
	free(copy);
	close(fd);
	unlink(path);
	CHECK(pgt_segment_snapshot_header(path, pgt_alloc_malloc, NULL, &copy, &v, err,
									  sizeof(err)) == PGT_SEG_MISSING, "missing file reported");
	free(copy);
	free(buf);
}

/*
 * The copy the SQL functions make: the header and the tables they read,
 * each where the file has it; the others' rows neither read nor in the view.
 */
/* malloc that remembers the size of its last allocation */
static size_t sized_alloc_last;

static void *
sized_alloc(size_t size, void *arg)
{
	(void) arg;
	sized_alloc_last = size;
	return malloc(size);
}

static void
test_snapshot_tables(void)
{
	unsigned char *buf;
	size_t		len;
	char		path[] = "/tmp/pgt_unit_segXXXXXX";
	int			fd = temp_segment(path, &buf, &len);
	struct pgt_seg_header *h = (struct pgt_seg_header *) buf;
	void	   *copy;
	pgt_seg_view v;
	char		err[256];
	const struct pgt_backend_entry *b;

	CHECK(pgt_segment_snapshot_tables(path, PGT_SEG_TABLE(PGT_SEC_BACKENDS), sized_alloc,
									  NULL, &copy, &v, err, sizeof(err)) == PGT_SEG_OK,
		  "backends of a good file: %s", err);
	CHECK(v.hdr != NULL && v.hdr->generation == 7, "header read");
	CHECK(pgt_view_count(&v, PGT_SEC_BACKENDS) == NBACK, "the table asked for");
	b = pgt_view_row(&v, PGT_SEC_BACKENDS, NBACK - 1);
	CHECK(b != NULL && b->pid == 100 + NBACK - 1 && b->syscalls == 1000 * (NBACK - 1),
		  "its last row, as written");
	CHECK(pgt_view_count(&v, PGT_SEC_PROBESETS) == 0, "no other table");
	CHECK(sized_alloc_last == sizeof(*h) + 8 * sizeof(struct pgt_backend_entry) &&
		  sized_alloc_last < len,
		  "room for the header and the table's capacity, not the file: %zu of %zu bytes",
		  sized_alloc_last, len);
	CHECK((const unsigned char *) b == (const unsigned char *) copy + sizeof(*h) +
		  (NBACK - 1) * sizeof(*b), "the table right after the header");
	free(copy);

	/* the second table of the file alone: packed after the header too */
	CHECK(pgt_segment_snapshot_tables(path, PGT_SEG_TABLE(PGT_SEC_PROBESETS) |
									  PGT_SEG_TABLE(PGT_SEC_BACKENDS), sized_alloc,
									  NULL, &copy, &v, err, sizeof(err)) == PGT_SEG_OK &&
		  sized_alloc_last == len, "two tables: room for both: %s", err);
	b = pgt_view_row(&v, PGT_SEC_BACKENDS, 0);
	CHECK(pgt_view_count(&v, PGT_SEC_PROBESETS) == NPROBES &&
		  strcmp(pgt_view_probeset(&v, 1)->name, "kprobes") == 0 &&
		  b->pid == 100 && pgt_view_backend(&v, NBACK - 1)->pid == 100 + NBACK - 1,
		  "both read as written");
	free(copy);

	/* a capacity past the file: room for the file at most, and refused */
	h->sections[1].capacity = UINT32_MAX;
	CHECK(pwrite(fd, buf, sizeof(*h), 0) == (ssize_t) sizeof(*h), "capacity written");
	CHECK(pgt_segment_snapshot_tables(path, PGT_SEG_TABLE(PGT_SEC_BACKENDS), sized_alloc,
									  NULL, &copy, &v, err, sizeof(err)) == PGT_SEG_CORRUPT &&
		  sized_alloc_last == len, "a table larger than the file: %s (%zu bytes)",
		  err, sized_alloc_last);
	free(copy);
	h->sections[1].capacity = 8;
	CHECK(pwrite(fd, buf, sizeof(*h), 0) == (ssize_t) sizeof(*h), "capacity restored");
	CHECK(pgt_segment_snapshot_tables(path, PGT_SEG_ALL_TABLES, pgt_alloc_malloc, NULL, &copy,
									  &v, err, sizeof(err)) == PGT_SEG_OK &&
		  pgt_view_count(&v, PGT_SEC_PROBESETS) == NPROBES &&
		  pgt_view_count(&v, PGT_SEC_BACKENDS) == NBACK, "all tables: %s", err);
	free(copy);

	/* a table cut short by the file, though the header fits */
	CHECK(ftruncate(fd, (off_t) (h->sections[1].offset + 8)) == 0, "cut in the table");
	CHECK(pgt_segment_snapshot_tables(path, PGT_SEG_TABLE(PGT_SEC_PROBESETS), pgt_alloc_malloc,
									  NULL, &copy, &v, err, sizeof(err)) == PGT_SEG_TRUNCATED,
		  "another table cut: the header says so: %s", err);
	free(copy);
	close(fd);
	unlink(path);
	free(buf);
}

static void
test_strings_and_names(void)
{
	char		field[8] = {'a', 'b', '\x01', 'c', 'd', 'e', 'f', 'g'};	/* no NUL */
	char		dst[32];
	char		path[64];

	pgt_copy_string(dst, sizeof(dst), field, sizeof(field));
	CHECK(strcmp(dst, "ab?cdefg") == 0, "unterminated field bounded, control byte replaced: %s", dst);
	pgt_copy_string(dst, 4, field, sizeof(field));
	CHECK(strcmp(dst, "ab?") == 0, "destination bound respected");
	CHECK(strcmp(pgt_role_name(PGT_ROLE_CHECKPOINTER), "checkpointer") == 0, "role name");
	CHECK(strcmp(pgt_role_name(12345), "unknown") == 0, "unknown role");
	CHECK(strcmp(pgt_probe_state_name(PGT_PROBE_DEGRADED), "degraded") == 0, "state name");
	CHECK(pgt_cluster_path(path, sizeof(path), "/run/pg_tracer", 0x803, 0x1a2b, ".seg") == 0 &&
		  strcmp(path, "/run/pg_tracer/pgt-803-1a2b.seg") == 0, "cluster path: %s", path);
	CHECK(pgt_cluster_path(path, 16, "/run/pg_tracer", 1, 2, ".sock") == -1, "path overflow refused");
}

/* Coverage of a window entry, and of the span of the earlier ones. */
static void
test_window_covered(void)
{
	struct pgt_exact_window_entry w;
	const int64_t S = 1000000;
	const int64_t T = INT64_C(1800000000) * S;

	memset(&w, 0, sizeof(w));
	w.start_us = T;
	w.end_us = T + 60 * S;
	CHECK(pgt_window_covered(&w, T - 100 * S, T + 200 * S, T + 200 * S) == 60 * S, "a whole window");
	CHECK(pgt_window_covered(&w, T + 20 * S, T + 200 * S, T + 200 * S) == 40 * S, "the part after since");
	CHECK(pgt_window_covered(&w, T + 70 * S, T + 200 * S, T + 200 * S) == 0, "since after it");
	w.end_us = 0;				/* open */
	CHECK(pgt_window_covered(&w, T - 100 * S, T + 30 * S, T + 30 * S) == 30 * S, "open: until now");

	/* 100 s covered in the span T .. T + 1000 s (an empty window to old readers) */
	w.flags = PGT_EXACT_WINDOW_EARLIER;
	w.start_us = T + 1000 * S;
	w.end_us = T + 1000 * S;
	w.granted_s = 1000;
	w.planned_end_us = 100 * S;
	CHECK(pgt_window_covered(&w, T - S, T + 5000 * S, T + 5000 * S) == 100 * S, "earlier: all of it");
	CHECK(pgt_window_covered(&w, T + 750 * S, T + 5000 * S, T + 5000 * S) == 25 * S, "earlier: its share");
	CHECK(pgt_window_covered(&w, T + 1000 * S, T + 5000 * S, T + 5000 * S) == 0, "earlier: none after");
	/* until inside its span: the share of the span before until */
	CHECK(pgt_window_covered(&w, T - S, T + 500 * S, T + 5000 * S) == 50 * S, "earlier: up to until");
	CHECK(pgt_window_covered(&w, T + 250 * S, T + 500 * S, T + 5000 * S) == 25 * S,
		  "earlier: between since and until");
	CHECK(pgt_window_covered(&w, T - 2 * S, T - S, T + 5000 * S) == 0, "earlier: none before");
	w.planned_end_us = 2000 * S;	/* more than its span: damage */
	CHECK(pgt_window_covered(&w, T - S, T + 5000 * S, T + 5000 * S) == 0, "earlier: nonsense refused");
	w.planned_end_us = 100 * S;
	w.start_us = w.end_us = T + 6000 * S;	/* ends in the future: damage */
	CHECK(pgt_window_covered(&w, T - S, T + 5000 * S, T + 5000 * S) == 0, "earlier: future refused");
}

int
main(void)
{
	test_valid();
	test_damaged();
	test_random();
	test_snapshot_file();
	test_snapshot_header();
	test_snapshot_tables();
	test_strings_and_names();
	test_window_covered();
	UNIT_MAIN_END("test_segment_reader");
}
