/*-------------------------------------------------------------------------
 *
 * pgt_segment.c
 *	  Reader side of the helper's shared-memory segment: copy it
 *	  consistently and validate every field before anyone looks at a table.
 *
 * Shared by the extension (backends and the background worker), the
 * helper's `status` command and the unit tests, so it is plain C with no
 * PostgreSQL or libbpf dependency and allocates only through the caller's
 * allocator.
 *
 * Why copy with pread() instead of mapping the file: a mapping of a file
 * that someone truncates raises SIGBUS on access, which in a backend would
 * take the postmaster into crash recovery.  pread() of a shortened file only
 * returns fewer bytes.  The segment is a few megabytes with the default
 * table sizes: a millisecond's copy for a SQL call, which wants the
 * tables; the background worker, which polls only the writer's state,
 * copies the one-kilobyte header (pgt_segment_snapshot_header).
 *
 * Locking: none.  Consistency comes from the writer's seqlock (see
 * pgt_segment.h); a copy is accepted only when `seq` was even and the same
 * before and after.
 *
 *-------------------------------------------------------------------------
 */
#include "pgt_segment.h"
#include "pgt_utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define SNAPSHOT_RETRIES	50

/*
 * pgt_seg_result_name
 *		Short stable name of a reader result, for SQL columns and logs.
 */
const char *
pgt_seg_result_name(pgt_seg_result r)
{
	switch (r)
	{
		case PGT_SEG_OK:
			return "ok";
		case PGT_SEG_MISSING:
			return "missing";
		case PGT_SEG_IO_ERROR:
			return "io error";
		case PGT_SEG_TRUNCATED:
			return "truncated";
		case PGT_SEG_BAD_MAGIC:
			return "bad magic";
		case PGT_SEG_BAD_VERSION:
			return "other layout version";
		case PGT_SEG_CORRUPT:
			return "corrupt";
		case PGT_SEG_BUSY:
			return "busy";
		case PGT_SEG_NO_MEMORY:
			return "out of memory";
		case PGT_SEG_ABANDONED:
			return "stale";
	}
	return "unknown";
}

/*
 * pgt_section_entry_size
 *		The struct size this code knows for each section kind.
 */
size_t
pgt_section_entry_size(uint32_t kind)
{
	switch (kind)
	{
		case PGT_SEC_PROBESETS:
			return sizeof(struct pgt_probeset_entry);
		case PGT_SEC_BACKENDS:
			return sizeof(struct pgt_backend_entry);
		case PGT_SEC_ENGINE_EVENTS:
			return sizeof(struct pgt_engine_event_entry);
		case PGT_SEC_ENGINE_HIST:
			return sizeof(struct pgt_engine_hist_entry);
		case PGT_SEC_ENGINE_STREAM:
			return sizeof(struct pgt_engine_stream_entry);
		case PGT_SEC_EXACT_WAITS:
			return sizeof(struct pgt_exact_wait_entry);
		case PGT_SEC_EXACT_HIST:
			return sizeof(struct pgt_exact_hist_entry);
		case PGT_SEC_EXACT_WINDOWS:
			return sizeof(struct pgt_exact_window_entry);
		case PGT_SEC_KERNEL_IO:
			return sizeof(struct pgt_kernel_io_entry);
		case PGT_SEC_KERNEL_PROC:
			return sizeof(struct pgt_kernel_proc_entry);
		case PGT_SEC_KERNEL_HIST:
			return sizeof(struct pgt_kernel_hist_entry);
	}
	return 0;
}

/*
 * pgt_alloc_malloc
 *		The allocator the helper and the unit tests give the reader.
 */
void *
pgt_alloc_malloc(size_t size, void *arg)
{
	(void) arg;
	return malloc(size);
}

/*
 * check_section
 *		Validate one section descriptor against the copied length and the
 *		minimum entry size the reader needs.  Returns 0 or -1 with err set.
 */
static int
check_section(const struct pgt_section *s, size_t len, size_t min_entry,
			  char *err, size_t errlen)
{
	uint64_t	bytes;

	if (s->entry_size < min_entry || s->entry_size > 65536)
	{
		snprintf(err, errlen, "section kind %u: entry size %u, need %zu..65536",
				 s->kind, s->entry_size, min_entry);
		return -1;
	}
	if (s->count > s->capacity)
	{
		snprintf(err, errlen, "section kind %u: count %u exceeds capacity %u",
				 s->kind, s->count, s->capacity);
		return -1;
	}
	/* capacity < 2^32 and entry_size <= 2^16: the product cannot overflow */
	bytes = (uint64_t) s->capacity * s->entry_size;
	if (s->offset < sizeof(struct pgt_seg_header) || s->offset > len ||
		bytes > len - s->offset)
	{
		snprintf(err, errlen,
				 "section kind %u: offset %" PRIu64 " + %" PRIu64
				 " bytes outside the %zu-byte segment",
				 s->kind, s->offset, bytes, len);
		return -1;
	}
	/* rows are read in place as structs of 8-byte fields: each must be aligned */
	if (s->offset % 8 != 0 || s->entry_size % 8 != 0)
	{
		snprintf(err, errlen, "section kind %u: misaligned rows (offset %" PRIu64
				 ", entry size %u: both must be multiples of 8)",
				 s->kind, s->offset, s->entry_size);
		return -1;
	}
	return 0;
}

/*
 * check_header
 *		Validate the fixed header of a copied segment.
 */
static pgt_seg_result
check_header(const struct pgt_seg_header *h, size_t len, char *err, size_t errlen)
{
	if (h->magic != PGT_SEG_MAGIC)
	{
		snprintf(err, errlen, "not a pg_tracer segment (magic 0x%016" PRIx64 ")",
				 h->magic);
		return PGT_SEG_BAD_MAGIC;
	}
	if (h->layout_version != PGT_SEG_LAYOUT_VERSION)
	{
		snprintf(err, errlen, "segment layout version %u, this reader knows %u",
				 h->layout_version, PGT_SEG_LAYOUT_VERSION);
		return PGT_SEG_BAD_VERSION;
	}
	if (h->header_size != sizeof(struct pgt_seg_header))
	{
		snprintf(err, errlen, "header size %u, expected %zu",
				 h->header_size, sizeof(struct pgt_seg_header));
		return PGT_SEG_CORRUPT;
	}
	if (h->segment_size > PGT_SEG_MAX_SIZE ||
		h->segment_size < sizeof(struct pgt_seg_header))
	{
		snprintf(err, errlen, "impossible segment size %" PRIu64, h->segment_size);
		return PGT_SEG_CORRUPT;
	}
	if (h->segment_size > len)
	{
		snprintf(err, errlen, "segment is %zu bytes, header says %" PRIu64,
				 len, h->segment_size);
		return PGT_SEG_TRUNCATED;
	}
	if (h->nsections > PGT_MAX_SECTIONS)
	{
		snprintf(err, errlen, "%u sections, at most %d", h->nsections,
				 PGT_MAX_SECTIONS);
		return PGT_SEG_CORRUPT;
	}
	if (h->state != PGT_WRITER_RUNNING && h->state != PGT_WRITER_STOPPED &&
		h->state != PGT_WRITER_WAITING)
	{
		snprintf(err, errlen, "unknown writer state %u", h->state);
		return PGT_SEG_CORRUPT;
	}
	if (h->seq & 1)
	{
		snprintf(err, errlen, "writer is in the middle of an update");
		return PGT_SEG_BUSY;
	}
	return PGT_SEG_OK;
}

/*
 * validate_layout
 *		Check the header and every section descriptor of a copy of `len`
 *		bytes taken from a file of `file_len` bytes; fill `view`.
 *
 * A whole copy has len == file_len and gets its tables in the view.  A
 * header-only copy (len == the header's size) is checked against the file's
 * size and gets view->hdr only: its tables are not in the buffer.
 *
 * Unknown section kinds are skipped (a newer helper may add tables); a
 * known kind appearing twice is corrupt.  Kind 0 marks an unused slot.
 */
static pgt_seg_result
validate_layout(const void *buf, size_t len, size_t file_len, pgt_seg_view *view,
				char *err, size_t errlen)
{
	const struct pgt_seg_header *h = buf;
	bool		whole = len == file_len;
	bool		seen[PGT_SEC_KIND_MAX] = {false};
	pgt_seg_result r;
	uint32_t	i;

	memset(view, 0, sizeof(*view));
	if (buf == NULL || len < sizeof(struct pgt_seg_header))
	{
		snprintf(err, errlen, "segment is %zu bytes, shorter than its %zu-byte header",
				 len, sizeof(struct pgt_seg_header));
		/* a short file that does not even start with the magic is foreign */
		if (buf != NULL && len >= sizeof(uint64_t) &&
			memcmp(buf, &(uint64_t) {PGT_SEG_MAGIC}, sizeof(uint64_t)) != 0)
			return PGT_SEG_BAD_MAGIC;
		return PGT_SEG_TRUNCATED;
	}
	r = check_header(h, file_len, err, errlen);
	if (r != PGT_SEG_OK)
		return r;

	for (i = 0; i < h->nsections; i++)
	{
		const struct pgt_section *s = &h->sections[i];
		size_t		known = pgt_section_entry_size(s->kind);

		if (known == 0 || s->kind >= PGT_SEC_KIND_MAX)
			continue;			/* a table from a newer helper, or unused */
		if (seen[s->kind])
		{
			snprintf(err, errlen, "section kind %u appears twice", s->kind);
			memset(view, 0, sizeof(*view));
			return PGT_SEG_CORRUPT;
		}
		if (check_section(s, h->segment_size, known, err, errlen) < 0)
		{
			memset(view, 0, sizeof(*view));
			return PGT_SEG_CORRUPT;
		}
		seen[s->kind] = true;
		if (!whole)
			continue;
		view->tables[s->kind].rows = (const unsigned char *) buf + s->offset;
		view->tables[s->kind].count = s->count;
		view->tables[s->kind].stride = s->entry_size;
	}
	view->hdr = h;
	return PGT_SEG_OK;
}

/*
 * pgt_segment_validate
 *		Check a copied segment completely; fill `view` on success.
 */
pgt_seg_result
pgt_segment_validate(const void *buf, size_t len, pgt_seg_view *view,
					 char *err, size_t errlen)
{
	return validate_layout(buf, len, len, view, err, errlen);
}

/*
 * read_full
 *		pread() until len bytes or EOF.  Returns bytes read or -1.
 */
static ssize_t
read_full(int fd, void *buf, size_t len, off_t off)
{
	size_t		done = 0;

	while (done < len)
	{
		ssize_t		n = pread(fd, (char *) buf + done, len - done, off + done);

		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0)
			break;
		done += n;
	}
	return done;
}

/*
 * read_seq
 *		Read the header's seq field as it is in the file now.
 */
static int
read_seq(int fd, uint64_t *seq)
{
	return read_full(fd, seq, sizeof(*seq), offsetof(struct pgt_seg_header, seq))
		== (ssize_t) sizeof(*seq) ? 0 : -1;
}

/*
 * wanted_section
 *		Is s a table of a kind this code knows and `kinds` (bit 1 << kind)
 *		asks for?
 */
static bool
wanted_section(const struct pgt_section *s, uint64_t kinds)
{
	return s->kind < PGT_SEC_KIND_MAX && pgt_section_entry_size(s->kind) != 0 &&
		(kinds & (UINT64_C(1) << s->kind)) != 0;
}

/*
 * align8
 *		n rounded up to a multiple of 8 (rows are read as structs of
 *		64-bit fields).
 */
static uint64_t
align8(uint64_t n)
{
	return (n + 7) & ~UINT64_C(7);
}

/*
 * read_tables
 *		Into buf (cap bytes), after the validated header it holds, the rows
 *		in use of the tables of the kinds in `kinds` (bit 1 << kind), one
 *		after the other; point view's tables at them.  Returns PGT_SEG_OK,
 *		or PGT_SEG_IO_ERROR / PGT_SEG_TRUNCATED, or PGT_SEG_CORRUPT when
 *		they do not fit the room snapshot_open made from the capacities
 *		(which a writer never changes in a file: a new size is a new file).
 */
static pgt_seg_result
read_tables(int fd, uint64_t kinds, unsigned char *buf, size_t cap, size_t file_len,
			pgt_seg_view *view, char *err, size_t errlen)
{
	const struct pgt_seg_header *h = (const struct pgt_seg_header *) buf;
	size_t		at = (size_t) align8(sizeof(struct pgt_seg_header));
	uint32_t	i;

	for (i = 0; i < h->nsections; i++)
	{
		const struct pgt_section *sec = &h->sections[i];
		size_t		bytes;
		ssize_t		n;

		if (!wanted_section(sec, kinds))
			continue;
		/* validated: offset + capacity * entry_size lies within file_len */
		bytes = (size_t) sec->count * sec->entry_size;
		if (bytes > cap - at)
		{
			snprintf(err, errlen, "table %u outgrew the capacities the segment opened with",
					 sec->kind);
			return PGT_SEG_CORRUPT;
		}
		n = read_full(fd, buf + at, bytes, (off_t) sec->offset);
		if (n < 0)
		{
			snprintf(err, errlen, "cannot read a table: %s", strerror(errno));
			return PGT_SEG_IO_ERROR;
		}
		if ((size_t) n < bytes || sec->offset + bytes > file_len)
		{
			snprintf(err, errlen, "segment shrank while it was read");
			return PGT_SEG_TRUNCATED;
		}
		view->tables[sec->kind].rows = buf + at;
		view->tables[sec->kind].count = sec->count;
		view->tables[sec->kind].stride = sec->entry_size;
		at = align8(at + bytes) > cap ? cap : (size_t) align8(at + bytes);
	}
	return PGT_SEG_OK;
}

/*
 * tables_room
 *		Bytes a copy of the header and of the tables of the kinds in `kinds`
 *		needs, by the capacities in the file's header as it reads now (not
 *		yet validated: every term is bounded by the file's size, and so is
 *		the sum).  The header alone when it cannot be read.
 */
static size_t
tables_room(int fd, uint64_t kinds, size_t file_len)
{
	struct pgt_seg_header h;
	uint64_t	room = align8(sizeof(h));
	uint32_t	i;

	if (read_full(fd, &h, sizeof(h), 0) != (ssize_t) sizeof(h))
		return sizeof(h);
	for (i = 0; i < h.nsections && i < PGT_MAX_SECTIONS; i++)
	{
		const struct pgt_section *s = &h.sections[i];

		if (!wanted_section(s, kinds))
			continue;
		/* 32-bit factors: the product fits; a term past the file ends it */
		room = align8(room + (uint64_t) s->capacity * s->entry_size);
		if (room > file_len)
			return file_len;
	}
	return (size_t) room;
}

/* The open segment file and the buffer snapshot copies it into */
typedef struct snap_file
{
	int			fd;				/* -1: not open */
	void	   *buf;			/* NULL: not allocated */
	size_t		file_len;		/* the file's size, at most PGT_SEG_MAX_SIZE */
	size_t		cap;			/* the buffer's size */
	size_t		read_len;		/* what an attempt reads first */
} snap_file;

/*
 * snapshot_open
 *		Open the segment at path and allocate the buffer for a copy of the
 *		parts kinds asks for (see snapshot).  The sizes come from the file
 *		(fstat), never from its header.  PGT_SEG_OK, or the error with err
 *		set; f->fd is -1 when the file could not be opened.
 */
static pgt_seg_result
snapshot_open(const char *path, uint64_t kinds, pgt_alloc_fn alloc_fn, void *alloc_arg,
			  snap_file *f, char *err, size_t errlen)
{
	bool		whole = kinds == PGT_SEG_ALL_TABLES;
	struct stat st;
	int			open_errno;

	f->buf = NULL;
	f->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (f->fd < 0)
	{
		open_errno = errno;
		snprintf(err, errlen, "cannot open \"%s\": %s", path, strerror(open_errno));
		return open_errno == ENOENT ? PGT_SEG_MISSING : PGT_SEG_IO_ERROR;
	}
	if (fstat(f->fd, &st) < 0 || !S_ISREG(st.st_mode))
	{
		snprintf(err, errlen, "\"%s\" is not a regular file", path);
		return PGT_SEG_IO_ERROR;
	}
	f->file_len = (uint64_t) st.st_size > PGT_SEG_MAX_SIZE ?
		PGT_SEG_MAX_SIZE : (size_t) st.st_size;
	f->cap = f->file_len;
	if (kinds == 0 && f->cap > sizeof(struct pgt_seg_header))
		f->cap = sizeof(struct pgt_seg_header);
	else if (!whole && f->cap > sizeof(struct pgt_seg_header))
		f->cap = tables_room(f->fd, kinds, f->file_len);	/* tables packed */
	f->read_len = whole || f->cap < sizeof(struct pgt_seg_header) ?
		f->cap : sizeof(struct pgt_seg_header);
	f->buf = alloc_fn(f->cap > 0 ? f->cap : 1, alloc_arg);
	if (f->buf == NULL)
	{
		snprintf(err, errlen, "cannot allocate %zu bytes for the segment copy", f->cap);
		return PGT_SEG_NO_MEMORY;
	}
	return PGT_SEG_OK;
}

/*
 * snapshot
 *		Copy the segment at path consistently and validate it: the whole
 *		file (kinds PGT_SEG_ALL_TABLES), its fixed header alone (kinds 0),
 *		or the header and the tables of some kinds (see
 *		pgt_segment_snapshot, pgt_segment_snapshot_header and
 *		pgt_segment_snapshot_tables).
 *
 * The size to copy comes from the file (fstat), capped at PGT_SEG_MAX_SIZE,
 * never from the header, so a lying header cannot make us allocate or read
 * more than is there.
 *
 * A segment whose seq stays at the same odd value through every attempt
 * was left in the middle of an update (its writer was killed there, or
 * hangs): PGT_SEG_ABANDONED, with *lenp the bytes of the last copy, whose
 * header passed every check but seq's.
 */
static pgt_seg_result
snapshot(const char *path, uint64_t kinds, pgt_alloc_fn alloc_fn,
		 void *alloc_arg, void **bufp, size_t *lenp, pgt_seg_view *view,
		 char *err, size_t errlen)
{
	bool		whole = kinds == PGT_SEG_ALL_TABLES;
	pgt_seg_result r;
	snap_file	f;
	int			attempt;
	int			stuck = 0;		/* attempts that saw the same odd seq */
	uint64_t	stuck_seq = 0;
	ssize_t		last_n = 0;

	*bufp = NULL;
	*lenp = 0;
	memset(view, 0, sizeof(*view));
	r = snapshot_open(path, kinds, alloc_fn, alloc_arg, &f, err, errlen);
	if (f.fd < 0)
		return r;
	if (r != PGT_SEG_OK)
		goto cleanup;

	for (attempt = 0; attempt < SNAPSHOT_RETRIES; attempt++)
	{
		uint64_t	seq_before = 1;	/* odd: no copy passes without it */
		uint64_t	seq_after;
		uint64_t	seq_now = 0;
		ssize_t		n;

		/*
		 * seq first, on its own: one pread copies the header in no set
		 * order, so the generation before seq could be read mid-update
		 */
		(void) read_seq(f.fd, &seq_before);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		n = read_full(f.fd, f.buf, f.read_len, 0);
		if (n < 0)
		{
			snprintf(err, errlen, "cannot read \"%s\": %s", path, strerror(errno));
			r = PGT_SEG_IO_ERROR;
			goto cleanup;
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		/* a file that shrank since fstat is judged by what was read */
		r = validate_layout(f.buf, n, (size_t) n < f.read_len ? (size_t) n : f.file_len,
							view, err, errlen);
		if (r == PGT_SEG_OK && !whole && kinds != 0)
			r = read_tables(f.fd, kinds, f.buf, f.cap, f.file_len, view, err, errlen);
		if (r == PGT_SEG_BUSY)
		{
			/* the same odd seq at every attempt: nobody is writing */
			if (read_seq(f.fd, &seq_now) == 0 && (seq_now & 1) &&
				(attempt == 0 || seq_now == stuck_seq))
				stuck++;
			else
				stuck = 0;
			stuck_seq = seq_now;
			last_n = n;
			goto retry;
		}
		if (r != PGT_SEG_OK)
			goto cleanup;		/* damaged, not merely mid-write */
		/* the tables' loads before the second seq's (a seqlock reader) */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (read_seq(f.fd, &seq_after) < 0)
		{
			snprintf(err, errlen, "segment shrank while it was read");
			r = PGT_SEG_TRUNCATED;
			goto cleanup;
		}
		if (seq_after == view->hdr->seq && seq_after == seq_before)
		{
			*bufp = f.buf;
			*lenp = n;
			close(f.fd);
			return PGT_SEG_OK;
		}
retry:
		memset(view, 0, sizeof(*view));
		usleep(attempt < 10 ? 100 : 1000);
	}
	if (stuck == SNAPSHOT_RETRIES)
	{
		snprintf(err, errlen, "writer stopped in the middle of an update (seq %" PRIu64
				 " for %d attempts): it exited or hangs", stuck_seq, SNAPSHOT_RETRIES);
		r = PGT_SEG_ABANDONED;
		*lenp = (size_t) last_n;
		goto cleanup;
	}
	snprintf(err, errlen, "writer kept updating the segment during %d attempts",
			 SNAPSHOT_RETRIES);
	r = PGT_SEG_BUSY;

cleanup:
	memset(view, 0, sizeof(*view));
	close(f.fd);
	*bufp = f.buf;				/* the caller frees it, success or not */
	return r;
}

/*
 * pgt_segment_snapshot
 *		Copy the whole segment at path consistently and validate it.
 */
pgt_seg_result
pgt_segment_snapshot(const char *path, pgt_alloc_fn alloc_fn, void *alloc_arg,
					 void **bufp, size_t *lenp, pgt_seg_view *view,
					 char *err, size_t errlen)
{
	return snapshot(path, PGT_SEG_ALL_TABLES, alloc_fn, alloc_arg, bufp, lenp, view,
					err, errlen);
}

/*
 * pgt_segment_snapshot_header
 *		Copy only the segment's fixed header consistently and validate it,
 *		with every section descriptor, against the file's size.
 *
 * For a reader that needs the writer's state and not the tables (the
 * extension's background worker, four times a second): a kilobyte read
 * instead of the whole segment, which holds megabytes on a busy host.
 */
pgt_seg_result
pgt_segment_snapshot_header(const char *path, pgt_alloc_fn alloc_fn,
							void *alloc_arg, void **bufp, pgt_seg_view *view,
							char *err, size_t errlen)
{
	size_t		len;

	return snapshot(path, 0, alloc_fn, alloc_arg, bufp, &len, view,
					err, errlen);
}

/*
 * pgt_segment_snapshot_tables
 *		Copy the segment's header and the rows in use of the tables of the
 *		kinds in `kinds` consistently, and validate them.
 *
 * For the SQL functions, which each read one or two tables: the copy is
 * what they read (a kilobyte of header and the rows of their table), not
 * the whole segment, megabytes on a busy host, most of it other tables'
 * room.  The tables follow the header in the buffer one after the other,
 * which has room for their capacities, not for the file: a SQL call under
 * vm.overcommit_memory=2 is charged for what it may copy, not for every
 * table of the segment.
 */
pgt_seg_result
pgt_segment_snapshot_tables(const char *path, uint64_t kinds, pgt_alloc_fn alloc_fn,
							void *alloc_arg, void **bufp, pgt_seg_view *view,
							char *err, size_t errlen)
{
	size_t		len;

	/* kind 0 is no table: without its bit a choice is never "all" */
	return snapshot(path, kinds == PGT_SEG_ALL_TABLES ? kinds : kinds & ~UINT64_C(1),
					alloc_fn, alloc_arg, bufp, &len, view, err, errlen);
}

/*
 * pgt_copy_string
 *		Bounded, sanitized copy of a fixed-size string field.
 */
void
pgt_copy_string(char *dst, size_t dstlen, const char *field, size_t fieldlen)
{
	size_t		i;

	if (dstlen == 0)
		return;
	for (i = 0; i < fieldlen && i + 1 < dstlen && field[i] != '\0'; i++)
	{
		unsigned char c = (unsigned char) field[i];

		dst[i] = (c >= 0x20 && c < 0x7f) ? (char) c : '?';
	}
	dst[i] = '\0';
}

/*
 * pgt_copy_utf8
 *		See pgt_segment.h.
 */
void
pgt_copy_utf8(char *dst, size_t dstlen, const char *src, size_t srclen)
{
	const unsigned char *p = (const unsigned char *) src;
	size_t		avail = strnlen(src, srclen);	/* up to a NUL or the bound */
	size_t		n = 0;
	size_t		i = 0;

	if (dstlen == 0)
		return;
	while (i < avail && n + 1 < dstlen)
	{
		int			len = pgt_utf8_len(p + i, avail - i);

		if (len < 0)
			break;				/* a character cut by the record's bound */
		if (len > 0 && !pgt_utf8_is_c1(p + i, len))
		{
			if (n + (size_t) len >= dstlen)
				break;			/* no room for all of it: none of it */
			memcpy(dst + n, p + i, (size_t) len);
			n += (size_t) len;
			i += (size_t) len;
			continue;
		}
		if (len == 0 && (p[i] == '\n' || p[i] == '\r' || p[i] == '\t'))
			dst[n++] = ' ';
		else if (len > 0 || p[i] < 0x20 || p[i] > 0x7e)
			dst[n++] = '?';
		else
			dst[n++] = (char) p[i];
		i += len > 0 ? (size_t) len : 1;
	}
	dst[n] = '\0';
}

int64_t
pgt_window_covered(const struct pgt_exact_window_entry *w, int64_t since_us,
				   int64_t until_us, int64_t now_us)
{
	int64_t		span;
	int64_t		covered;
	int64_t		s;
	int64_t		e;

	if (w->flags & PGT_EXACT_WINDOW_EARLIER)
	{
		span = (int64_t) w->granted_s * 1000000;
		covered = w->planned_end_us;
		if (w->end_us <= span || w->end_us > now_us || span <= 0 ||
			covered <= 0 || covered > span)
			return 0;
		/* spread evenly over the span: the windows' own times are gone */
		s = w->end_us - span > since_us ? w->end_us - span : since_us;
		e = w->end_us < until_us ? w->end_us : until_us;
		if (e <= s)
			return 0;
		if (e - s == span)
			return covered;
		return (int64_t) ((double) covered * (double) (e - s) / (double) span);
	}
	if (w->flags & PGT_EXACT_WINDOW_NO_EXACT)
		return 0;
	s = w->start_us > since_us ? w->start_us : since_us;
	e = w->end_us != 0 && w->end_us < until_us ? w->end_us : until_us;
	return e > s ? e - s : 0;
}

const char *
pgt_probe_state_name(uint32_t state)
{
	switch (state)
	{
		case PGT_PROBE_AVAILABLE:
			return "available";
		case PGT_PROBE_UNAVAILABLE:
			return "unavailable";
		case PGT_PROBE_DEGRADED:
			return "degraded";
	}
	return "unknown";
}

/*
 * pgt_role_name
 *		PostgreSQL's own name for a backend role (pg_stat_activity.backend_type).
 */
const char *
pgt_role_name(uint32_t role)
{
	static const char *const names[] = {
		[PGT_ROLE_UNKNOWN] = "unknown",
		[PGT_ROLE_POSTMASTER] = "postmaster",
		[PGT_ROLE_CLIENT_BACKEND] = "client backend",
		[PGT_ROLE_CHECKPOINTER] = "checkpointer",
		[PGT_ROLE_BGWRITER] = "background writer",
		[PGT_ROLE_WALWRITER] = "walwriter",
		[PGT_ROLE_AUTOVAC_LAUNCHER] = "autovacuum launcher",
		[PGT_ROLE_AUTOVAC_WORKER] = "autovacuum worker",
		[PGT_ROLE_LOGREP_LAUNCHER] = "logical replication launcher",
		[PGT_ROLE_LOGREP_WORKER] = "logical replication worker",
		[PGT_ROLE_WALSENDER] = "walsender",
		[PGT_ROLE_WALRECEIVER] = "walreceiver",
		[PGT_ROLE_PARALLEL_WORKER] = "parallel worker",
		[PGT_ROLE_ARCHIVER] = "archiver",
		[PGT_ROLE_STARTUP] = "startup",
		[PGT_ROLE_BGWORKER] = "background worker",
		[PGT_ROLE_OTHER] = "other",
	};

	if (role < sizeof(names) / sizeof(names[0]) && names[role] != NULL)
		return names[role];
	return "unknown";
}

/*
 * pgt_cluster_path
 *		"<dir>/pgt-<dev>-<ino><suffix>": the per-cluster file names.
 */
int
pgt_cluster_path(char *out, size_t outlen, const char *runtime_dir,
				 uint64_t dev, uint64_t ino, const char *suffix)
{
	int			n;

	n = snprintf(out, outlen, "%s/pgt-%" PRIx64 "-%" PRIx64 "%s",
				 runtime_dir, dev, ino, suffix);
	return (n < 0 || (size_t) n >= outlen) ? -1 : 0;
}
