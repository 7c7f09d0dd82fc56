/*
 * test/fuzz/fuzz_segment.c
 *	  The segment reader every backend runs (common/pgt_segment.c) on
 *	  damaged and foreign segments.
 *
 * The extension trusts no byte the helper writes: a truncated file, a
 * foreign one, a lying header must end in an error, never in a read
 * outside the copy.  An input is either a whole segment (raw bytes) or
 * byte patches and a truncation applied to a valid segment that the
 * helper's own writer builds at start-up (so most inputs get past the
 * magic and the header and reach the table checks).  It is read the ways
 * the extension reads a segment: validated in memory, or copied from a
 * file whole, header only, or header and the kernel tables.  A copy that
 * validates must keep every promise of pgt_segment.h: each table inside
 * the copy, rows at least as large as the struct this code knows, and
 * every row decodable into names.
 *
 * Input: byte 0 = mode (bits 0-1: 0 raw, else patched; bits 2-3: how it is
 * read), then for raw the segment; for patched two bytes of truncation
 * (little-endian, 0 = none, else the copy keeps that many 16-byte units)
 * and 5-byte patches (a little-endian u32 offset, taken modulo the size,
 * and the byte to write there).
 */
#include "fuzz.h"
#include "pgt_kernel.h"
#include "pgt_segment.h"
#include "pgt_utf8.h"
#include "segment_writer.h"

#include <fcntl.h>
#include <unistd.h>

static unsigned char *base;		/* a valid segment from the writer */
static size_t base_len;
static char seg_path[64];		/* where file-mode inputs are written */

/* Publish two marked rows in every table the writer knows. */
static void
publish_rows(seg_writer *w)
{
	static unsigned char rows[2 * 4096];
	seg_publish p;

	memset(&p, 0, sizeof(p));
	memset(rows, 0, sizeof(rows));
	memcpy(rows, "process", 8);
	p.state = PGT_WRITER_RUNNING;
	p.postmaster_pid = 4242;
	for (uint32_t i = 0; i < seg_ntables; i++)
	{
		FUZZ_EXPECT(2 * seg_tables[i].entry_size <= sizeof(rows));
		p.tables[seg_tables[i].kind] = (seg_rows) {rows, 2};
	}
	seg_writer_publish(w, &p);
}

/* The base segment: the writer's own, with a capacity of two rows a table. */
static void
build_base(void)
{
	char		dir[] = "/tmp/pgt_fuzz_seg.XXXXXX";
	char		path[96];
	char		err[256];
	seg_writer_opts o;
	seg_writer	w;
	int			fd;

	FUZZ_EXPECT(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/base.seg", dir);
	memset(&o, 0, sizeof(o));
	for (uint32_t i = 0; i < seg_ntables; i++)
		o.capacity[seg_tables[i].kind] = 2;
	o.gid = getgid();
	o.data_dir = "/var/lib/postgresql/15/main";
	o.helper_version = "fuzz";
	o.writer_pid = 1;
	FUZZ_EXPECT(seg_writer_create(&w, path, &o, err, sizeof(err)) == 0);
	publish_rows(&w);
	seg_writer_close(&w, PGT_WRITER_RUNNING);
	fd = open(path, O_RDONLY);
	FUZZ_EXPECT(fd >= 0);
	base_len = (size_t) lseek(fd, 0, SEEK_END);
	base = malloc(base_len);
	FUZZ_EXPECT(base != NULL && pread(fd, base, base_len, 0) == (ssize_t) base_len);
	close(fd);
	unlink(path);
	rmdir(dir);
}

/* At exit: the file-mode inputs' file goes. */
static void
remove_seg_file(void)
{
	unlink(seg_path);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	build_base();
	/* tmpfs where there is one: a file is written for every file-mode input */
	snprintf(seg_path, sizeof(seg_path), "%s/pgt_fuzz_%d.seg",
			 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (int) getpid());
	atexit(remove_seg_file);
	return 0;
}

/* The segment an input describes (malloc'd, exactly *len bytes). */
static unsigned char *
make_segment(const uint8_t *data, size_t size, size_t *len)
{
	unsigned char *seg;
	size_t		units;

	if ((data[0] & 3) == 0)
	{
		*len = size - 1;
		return fuzz_exact_copy(data + 1, *len);
	}
	seg = fuzz_exact_copy(base, base_len);
	*len = base_len;
	if (size >= 3 && (units = (size_t) data[1] | (size_t) data[2] << 8) != 0 &&
		units * 16 < base_len)
		*len = units * 16;
	for (size_t i = 3; i + 5 <= size; i += 5)
	{
		uint32_t	off = (uint32_t) data[i] | (uint32_t) data[i + 1] << 8 |
			(uint32_t) data[i + 2] << 16 | (uint32_t) data[i + 3] << 24;

		seg[off % base_len] = data[i + 4];
	}
	return seg;
}

/*
 * Is s (NUL-terminated) printable ASCII and well-formed UTF-8 characters
 * other than C1 controls, as pgt_copy_utf8 promises?
 */
static int
printable_utf8(const char *s)
{
	const unsigned char *p = (const unsigned char *) s;
	size_t		n = strlen(s);
	size_t		i = 0;

	while (i < n)
	{
		int			len = pgt_utf8_len(p + i, n - i);

		if (len > 0 && !pgt_utf8_is_c1(p + i, len))
			i += (size_t) len;
		else if (len == 0 && p[i] >= 0x20 && p[i] < 0x7f)
			i++;
		else
			return 0;
	}
	return 1;
}

/*
 * A fixed-size string field copied as the extension copies it: ASCII-only,
 * and keeping UTF-8 (into a roomy and a tight buffer: a character cut by
 * the end of either is dropped whole).
 */
static void
check_string(const char *field, size_t len)
{
	char		out[512];
	char		tight[6];

	pgt_copy_string(out, sizeof(out), field, len);
	FUZZ_EXPECT(fuzz_printable(out));
	pgt_copy_utf8(out, sizeof(out), field, len);
	FUZZ_EXPECT(printable_utf8(out));
	pgt_copy_utf8(tight, sizeof(tight), field, len);
	FUZZ_EXPECT(strlen(tight) < sizeof(tight) && printable_utf8(tight));
}

/* Decode a row of a kind the extension shows, as its SQL functions do. */
static void
decode_row(uint32_t kind, const void *row)
{
	switch (kind)
	{
		case PGT_SEC_PROBESETS:
			{
				const struct pgt_probeset_entry *p = row;

				check_string(p->name, sizeof(p->name));
				check_string(p->mechanism, sizeof(p->mechanism));
				check_string(p->reason, sizeof(p->reason));
				FUZZ_EXPECT(pgt_probe_state_name(p->state) != NULL);
				break;
			}
		case PGT_SEC_BACKENDS:
			{
				const struct pgt_backend_entry *b = row;

				check_string(b->backend_type, sizeof(b->backend_type));
				FUZZ_EXPECT(pgt_role_name(b->role) != NULL);
				break;
			}
		case PGT_SEC_KERNEL_IO:
			{
				const struct pgt_kernel_io_entry *k = row;

				FUZZ_EXPECT(pgt_klayer_name(k->layer) != NULL);
				FUZZ_EXPECT(pgt_kop_name(k->op) != NULL);
				FUZZ_EXPECT(pgt_kfile_name(k->file_class) != NULL);
				FUZZ_EXPECT(pgt_role_name(k->role) != NULL);
				break;
			}
		case PGT_SEC_KERNEL_HIST:
			FUZZ_EXPECT(pgt_khist_name(((const struct pgt_kernel_hist_entry *) row)->metric) != NULL);
			break;
		case PGT_SEC_ENGINE_EVENTS:
			{
				const struct pgt_engine_event_entry *e = row;

				check_string(e->probe_name, sizeof(e->probe_name));
				check_string(e->what, sizeof(e->what));
				break;
			}
		case PGT_SEC_ENGINE_STREAM:
			{
				const struct pgt_engine_stream_entry *s = row;

				check_string(s->probe_name, sizeof(s->probe_name));
				check_string(s->text, sizeof(s->text));
				break;
			}
		case PGT_SEC_EXACT_WINDOWS:
			{
				const struct pgt_exact_window_entry *w = row;

				check_string(w->reason, sizeof(w->reason));
				check_string(w->who, sizeof(w->who));
				check_string(w->end_reason, sizeof(w->end_reason));
				break;
			}
		default:
			break;
	}
}

/* Every promise a validated view makes about a copy of len bytes at buf. */
static void
check_view(const pgt_seg_view *v, const unsigned char *buf, size_t len)
{
	volatile unsigned char sink = 0;

	FUZZ_EXPECT(v->hdr != NULL && (const unsigned char *) v->hdr == buf);
	FUZZ_EXPECT(len >= sizeof(struct pgt_seg_header));
	check_string(v->hdr->helper_version, sizeof(v->hdr->helper_version));
	check_string(v->hdr->data_dir, sizeof(v->hdr->data_dir));
	for (uint32_t kind = 0; kind < PGT_SEC_KIND_MAX; kind++)
	{
		const pgt_seg_table *t = &v->tables[kind];
		size_t		known = pgt_section_entry_size(kind);

		if (t->rows == NULL)
		{
			FUZZ_EXPECT(t->count == 0);
			continue;
		}
		FUZZ_EXPECT(known != 0);	/* unknown kinds are skipped */
		FUZZ_EXPECT(t->stride >= known);
		FUZZ_EXPECT(t->rows >= buf && t->rows <= buf + len);
		FUZZ_EXPECT((size_t) (buf + len - t->rows) / t->stride >= t->count);
		for (uint32_t i = 0; i < t->count; i++)
		{
			const unsigned char *row = pgt_view_row(v, kind, i);

			for (size_t b = 0; b < t->stride; b++)
				sink ^= row[b];	/* ASan: every byte is inside the copy */
			decode_row(kind, row);
		}
	}
	(void) sink;
}

/* Read the segment from a file as the extension does (mode bits 2-3: 1..3). */
static void
read_from_file(int how, const unsigned char *seg, size_t len)
{
	static const uint64_t kernel_tables = PGT_SEG_TABLE(PGT_SEC_KERNEL_IO) |
		PGT_SEG_TABLE(PGT_SEC_KERNEL_PROC) | PGT_SEG_TABLE(PGT_SEC_KERNEL_HIST);
	pgt_seg_view v;
	pgt_seg_result r;
	char		err[512] = "";
	void	   *buf = NULL;
	size_t		got = 0;
	int			fd = open(seg_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	FUZZ_EXPECT(fd >= 0 && write(fd, seg, len) == (ssize_t) len);
	close(fd);
	if (how == 1)
		r = pgt_segment_snapshot(seg_path, pgt_alloc_malloc, NULL, &buf, &got, &v,
								 err, sizeof(err));
	else if (how == 2)
	{
		r = pgt_segment_snapshot_header(seg_path, pgt_alloc_malloc, NULL, &buf, &v,
										err, sizeof(err));
		got = len < sizeof(struct pgt_seg_header) ? len : sizeof(struct pgt_seg_header);
	}
	else
	{
		r = pgt_segment_snapshot_tables(seg_path, kernel_tables, pgt_alloc_malloc, NULL,
										&buf, &v, err, sizeof(err));
		got = len;
	}
	if (r == PGT_SEG_OK)
		check_view(&v, buf, got);
	else
		FUZZ_EXPECT(err[0] != '\0' && pgt_seg_result_name(r) != NULL);
	free(buf);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char *seg;
	size_t		len;
	int			how;

	if (size == 0)
		return 0;
	how = (data[0] >> 2) & 3;
	seg = make_segment(data, size, &len);
	/*
	 * An odd seq means "mid-update": the file readers then retry for some
	 * 40 ms before they give up, which would slow the search a
	 * thousandfold.  Unit tests cover that path; here seq is kept even.
	 */
	if (how != 0 && len >= offsetof(struct pgt_seg_header, seq) + 8)
		seg[offsetof(struct pgt_seg_header, seq)] &= ~1;
	if (how == 0)
	{
		pgt_seg_view v;
		char		err[512] = "";

		if (pgt_segment_validate(seg, len, &v, err, sizeof(err)) == PGT_SEG_OK)
			check_view(&v, seg, len);
		else
			FUZZ_EXPECT(err[0] != '\0');
	}
	else
		read_from_file(how, seg, len);
	free(seg);
	return 0;
}
