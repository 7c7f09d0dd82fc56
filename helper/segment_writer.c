/*
 * helper/segment_writer.c
 *	  Create and update one cluster's segment file (the helper -> extension
 *	  shared memory, layout in common/pgt_segment.h).
 *
 * Creation builds a complete new file under a temporary name in the same
 * directory (O_CREAT|O_EXCL|O_NOFOLLOW, sized with ftruncate, filled through
 * a shared mapping) and rename()s it over the final name, so a file at the
 * final name is never shrunk or rewritten from scratch: a reader holding the
 * old file keeps a whole, consistent (if stale) copy.  The generation is the
 * previous valid segment's + 1.  The file stays the helper's (root's, group
 * root), and a POSIX ACL lets the cluster owner read it: the cluster's
 * processes may read it, nobody else may, since it carries query text (not
 * the data directory's group either: PostgreSQL may keep that group out).
 * On a file system without ACLs the file falls back to the data directory's
 * group, mode 0440, and the log says so.  The cluster owner is not the
 * file's owner so that it cannot chmod and truncate the file under the
 * helper's mapping (the next write would raise SIGBUS in the helper, which
 * serves every cluster of the host); for the same reason the file's blocks
 * are allocated at creation, so that a full file system fails the creation
 * instead of a later write.
 *
 * A publication with more rows than a table holds grows the segment: a new
 * file, the same generation, renamed over the old one the same way
 * (seg_writer_grow).  The tables' sizes follow the helper's maps, which
 * libbpf may enlarge at load (LRU maps get room for every CPU's free list)
 * and to which live tasks add rows of their own, so no fixed size fits
 * every host.
 *
 * Updates go through the seqlock of pgt_segment.h: seq odd, barrier,
 * tables and header, barrier, seq even.  Only the daemon's single thread
 * writes.
 */
#include "segment_writer.h"

#include "log.h"
#include "procfs.h"

#include <endian.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define SECTION_ALIGN	64

/*
 * A segment grows (seg_writer_grow) up to half of what readers accept
 * (PGT_SEG_MAX_SIZE), so that a reader never meets one it refuses.
 */
#define SEG_GROW_MAX_SIZE	(PGT_SEG_MAX_SIZE / 2)

/*
 * A POSIX access ACL as the kernel takes it in the system.posix_acl_access
 * attribute (linux/posix_acl_xattr.h): a version, then entries sorted by
 * tag, little-endian.
 */
#define ACL_XATTR_NAME		"system.posix_acl_access"
#define ACL_XATTR_VERSION	2
#define ACL_TAG_USER_OBJ	0x01
#define ACL_TAG_USER		0x02
#define ACL_TAG_GROUP_OBJ	0x04
#define ACL_TAG_MASK		0x10
#define ACL_TAG_OTHER		0x20
#define ACL_NO_ID			0xFFFFFFFFu
#define ACL_READ			4

struct acl_xattr_entry
{
	uint16_t	tag;
	uint16_t	perm;
	uint32_t	id;
};

struct acl_xattr_owner_read
{
	uint32_t	version;
	struct acl_xattr_entry e[5];
};

_Static_assert(sizeof(struct acl_xattr_owner_read) == 44, "ACL attribute layout");

/*
 * acl_entry
 *		One ACL entry in the attribute's byte order.
 */
static struct acl_xattr_entry
acl_entry(uint16_t tag, uint16_t perm, uint32_t id)
{
	struct acl_xattr_entry e;

	e.tag = htole16(tag);
	e.perm = htole16(perm);
	e.id = htole32(id);
	return e;
}

/*
 * restrict_read
 *		Let the cluster owner (and root) read the file, nobody else: group
 *		root, no group or other bits, and an ACL entry for the owner.
 *		Without ACLs on the file system, the data directory's group reads it
 *		instead (logged).  Returns 0 or -1 with err set.
 */
static int
restrict_read(int fd, const char *path, uid_t uid, gid_t gid, char *err, size_t errlen)
{
	struct acl_xattr_owner_read acl;

	acl.version = htole32(ACL_XATTR_VERSION);
	acl.e[0] = acl_entry(ACL_TAG_USER_OBJ, ACL_READ, ACL_NO_ID);
	acl.e[1] = acl_entry(ACL_TAG_USER, ACL_READ, (uint32_t) uid);
	acl.e[2] = acl_entry(ACL_TAG_GROUP_OBJ, 0, ACL_NO_ID);
	acl.e[3] = acl_entry(ACL_TAG_MASK, ACL_READ, ACL_NO_ID);
	acl.e[4] = acl_entry(ACL_TAG_OTHER, 0, ACL_NO_ID);
	if (fchown(fd, (uid_t) -1, 0) < 0)
	{
		snprintf(err, errlen, "cannot give %s to group root: %s", path, strerror(errno));
		return -1;
	}
	if (fsetxattr(fd, ACL_XATTR_NAME, &acl, sizeof(acl), 0) == 0)
		return 0;
	if (errno != EOPNOTSUPP)
	{
		snprintf(err, errlen, "cannot set the ACL of %s: %s", path, strerror(errno));
		return -1;
	}
	log_warn("%s: no POSIX ACLs on this file system: the segment is readable "
			 "by group %d, the data directory's", path, (int) gid);
	if (fchown(fd, (uid_t) -1, gid) < 0)
	{
		snprintf(err, errlen, "cannot give %s to group %d: %s", path,
				 (int) gid, strerror(errno));
		return -1;
	}
	if (fchmod(fd, 0440) < 0)
	{
		snprintf(err, errlen, "cannot chmod %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * align_up
 *		Round v up to a multiple of a (a power of two).
 */
static size_t
align_up(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* The tables of a segment, in file order. */
const seg_table_spec seg_tables[] = {
	{PGT_SEC_PROBESETS, sizeof(struct pgt_probeset_entry), PGT_DEFAULT_PROBESETS_CAP, "probe sets"},
	{PGT_SEC_BACKENDS, sizeof(struct pgt_backend_entry), PGT_DEFAULT_BACKENDS_CAP, "backends"},
	{PGT_SEC_ENGINE_EVENTS, sizeof(struct pgt_engine_event_entry), PGT_DEFAULT_ENGINE_EVENTS_CAP, "engine events"},
	{PGT_SEC_ENGINE_HIST, sizeof(struct pgt_engine_hist_entry), 16, "engine histograms"},
	{PGT_SEC_ENGINE_STREAM, sizeof(struct pgt_engine_stream_entry), PGT_DEFAULT_ENGINE_STREAM_CAP, "engine stream"},
	{PGT_SEC_KERNEL_IO, sizeof(struct pgt_kernel_io_entry), PGT_DEFAULT_KERNEL_IO_CAP, "kernel io"},
	{PGT_SEC_KERNEL_PROC, sizeof(struct pgt_kernel_proc_entry), PGT_DEFAULT_KERNEL_PROC_CAP, "kernel proc"},
	{PGT_SEC_KERNEL_HIST, sizeof(struct pgt_kernel_hist_entry), PGT_DEFAULT_KERNEL_HIST_CAP, "kernel histograms"},
	{PGT_SEC_EXACT_WAITS, sizeof(struct pgt_exact_wait_entry), PGT_DEFAULT_EXACT_WAITS_CAP, "exact waits"},
	{PGT_SEC_EXACT_HIST, sizeof(struct pgt_exact_hist_entry), PGT_DEFAULT_EXACT_HIST_CAP, "exact histograms"},
	{PGT_SEC_EXACT_WINDOWS, sizeof(struct pgt_exact_window_entry), PGT_DEFAULT_EXACT_WINDOWS_CAP, "exact windows"},
};
const uint32_t seg_ntables = sizeof(seg_tables) / sizeof(seg_tables[0]);

_Static_assert(sizeof(seg_tables) / sizeof(seg_tables[0]) <= PGT_MAX_SECTIONS,
			   "more tables than section slots");

/*
 * table_capacity
 *		Capacity of table t under opts: the override, else the default.
 */
static uint32_t
table_capacity(const seg_writer_opts *opts, const seg_table_spec *t)
{
	uint32_t	cap = opts ? opts->capacity[t->kind] : 0;

	return cap ? cap : t->default_capacity;
}

/*
 * seg_writer_size
 *		File size for opts: header, then each table aligned.
 */
size_t
seg_writer_size(const seg_writer_opts *opts)
{
	size_t		off = align_up(sizeof(struct pgt_seg_header), SECTION_ALIGN);
	uint32_t	i;

	for (i = 0; i < seg_ntables; i++)
		off = align_up(off + (size_t) table_capacity(opts, &seg_tables[i]) *
					   seg_tables[i].entry_size, SECTION_ALIGN);
	return off;
}

/*
 * seg_writer_capacity
 *		Rows a table of this writer holds (0 for a kind it does not carry).
 */
uint32_t
seg_writer_capacity(const seg_writer *w, uint32_t kind)
{
	return kind < PGT_SEC_KIND_MAX ? w->tables[kind].capacity : 0;
}

/*
 * previous_generation
 *		Generation of the valid segment at path, or 0 when there is none
 *		(missing, foreign, corrupt: then we start over at 1).  A segment
 *		its writer left in the middle of an update (killed there) counts:
 *		its header is whole but for seq, and readers must see the
 *		generation move on.
 */
static uint64_t
previous_generation(const char *path)
{
	pgt_seg_view view;
	pgt_seg_result r;
	char		err[256];
	void	   *buf = NULL;
	size_t		len = 0;
	uint64_t	gen = 0;

	r = pgt_segment_snapshot(path, pgt_alloc_malloc, NULL, &buf, &len, &view,
							 err, sizeof(err));
	if (r == PGT_SEG_OK)
		gen = view.hdr->generation;
	else if (r == PGT_SEG_ABANDONED && buf != NULL && len >= sizeof(struct pgt_seg_header))
	{
		struct pgt_seg_header h;

		memcpy(&h, buf, sizeof(h));
		gen = h.generation;
		log_info("previous segment %s was left mid-update (%s); generation %" PRIu64
				 " continues", path, err, gen + 1);
	}
	else if (r != PGT_SEG_MISSING)
		log_warn("previous segment %s unusable (%s: %s), generation restarts at 1",
				 path, pgt_seg_result_name(r), err);
	free(buf);
	return gen;
}

/*
 * copy_str
 *		strncpy that always terminates and zero-fills the field.
 */
static void
copy_str(char *dst, size_t dstlen, const char *src)
{
	size_t		l = src ? strlen(src) : 0;

	memset(dst, 0, dstlen);
	if (l >= dstlen)
		l = dstlen - 1;
	if (l > 0)
		memcpy(dst, src, l);
}

/*
 * create_sized_file
 *		Create tmp (it must not exist), readable by the cluster's owner
 *		only, with size bytes allocated (zeros).  Returns the fd, or -1 with
 *		err set; *created says whether tmp exists to be removed.
 */
static int
create_sized_file(const char *tmp, size_t size, const seg_writer_opts *opts,
				  int *created, char *err, size_t errlen)
{
	int			fd;
	int			rc;

	*created = 0;
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400);
	if (fd < 0)
	{
		snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
		return -1;
	}
	*created = 1;
	if (restrict_read(fd, tmp, opts->uid, opts->gid, err, errlen) < 0)
		goto fail;
	if (ftruncate(fd, (off_t) size) < 0)
	{
		snprintf(err, errlen, "cannot size %s to %zu bytes: %s", tmp, size,
				 strerror(errno));
		goto fail;
	}
	if ((rc = posix_fallocate(fd, 0, (off_t) size)) != 0)
	{
		snprintf(err, errlen, "cannot allocate %zu bytes for %s: %s", size, tmp,
				 strerror(rc));
		goto fail;
	}
	return fd;

fail:
	close(fd);
	return -1;
}

/*
 * init_header
 *		Write the header of a new, zero-filled segment: only the fields
 *		that are not zero.  The tables are laid out by lay_out_tables().
 */
static void
init_header(struct pgt_seg_header *h, const seg_writer_opts *opts, size_t size,
			uint64_t gen)
{
	h->magic = PGT_SEG_MAGIC;
	h->layout_version = PGT_SEG_LAYOUT_VERSION;
	h->header_size = sizeof(struct pgt_seg_header);
	h->segment_size = size;
	h->generation = gen;
	h->last_update_us = procfs_realtime_us();
	h->writer_pid = opts->writer_pid;
	h->state = PGT_WRITER_WAITING;
	h->cluster_dev = opts->cluster_dev;
	h->cluster_ino = opts->cluster_ino;
	copy_str(h->helper_version, sizeof(h->helper_version), opts->helper_version);
	copy_str(h->data_dir, sizeof(h->data_dir), opts->data_dir);
}

/*
 * lay_out_tables
 *		Give each table its section after the header (SECTION_ALIGN apart,
 *		seg_writer_size()'s arithmetic), in the header and in the writer.
 */
static void
lay_out_tables(seg_writer *w, struct pgt_seg_header *h, const seg_writer_opts *opts)
{
	size_t		off = align_up(sizeof(struct pgt_seg_header), SECTION_ALIGN);
	uint32_t	i;

	for (i = 0; i < seg_ntables; i++)
	{
		const seg_table_spec *t = &seg_tables[i];
		uint32_t	cap = table_capacity(opts, t);

		h->sections[i].kind = t->kind;
		h->sections[i].entry_size = t->entry_size;
		h->sections[i].offset = off;
		h->sections[i].capacity = cap;
		w->tables[t->kind].entry_size = t->entry_size;
		w->tables[t->kind].capacity = cap;
		w->tables[t->kind].slot = i;
		w->tables[t->kind].rows = (unsigned char *) h + off;
		off = align_up(off + (size_t) cap * t->entry_size, SECTION_ALIGN);
	}
	h->nsections = seg_ntables;
}

/*
 * build_segment
 *		Build a new segment of generation gen for a cluster and rename it
 *		over `path`.  On success w owns a mapping of the new file, whose
 *		header says WAITING with empty tables until the first publish, or
 *		holds `first` when given (published before the rename: a reader
 *		never sees the new file empty).  Returns 0 or -1 with err set
 *		(nothing is left behind on failure, and w is untouched).
 */
static int
build_segment(seg_writer *w, const char *path, const seg_writer_opts *opts,
			  uint64_t gen, const seg_publish *first, char *err, size_t errlen)
{
	seg_writer	nw;
	char		tmp[4096 + 64];
	size_t		size = seg_writer_size(opts);
	int			fd;
	void	   *map = MAP_FAILED;
	int			created = 0;
	struct timespec ts;

	memset(&nw, 0, sizeof(nw));
	if (strlen(path) >= sizeof(nw.path))
	{
		snprintf(err, errlen, "segment path too long");
		return -1;
	}
	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		ts.tv_nsec = 0;
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d.%ld", path, (int) getpid(), ts.tv_nsec);
	fd = create_sized_file(tmp, size, opts, &created, err, errlen);
	if (fd < 0)
		goto cleanup;
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
	{
		snprintf(err, errlen, "cannot map %s: %s", tmp, strerror(errno));
		goto cleanup;
	}
	init_header(map, opts, size, gen);
	lay_out_tables(&nw, map, opts);
	nw.hdr = map;
	if (first != NULL)
		(void) seg_writer_publish(&nw, first);
	if (rename(tmp, path) < 0)
	{
		snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, path,
				 strerror(errno));
		goto cleanup;
	}

	snprintf(nw.path, sizeof(nw.path), "%s", path);
	nw.fd = fd;
	nw.map = map;
	nw.size = size;
	*w = nw;
	log_debug("segment %s created: generation %llu, %zu bytes",
			  path, (unsigned long long) gen, size);
	return 0;

cleanup:
	if (map != MAP_FAILED && munmap(map, size) < 0)
		log_warn("munmap of %s failed: %s", tmp, strerror(errno));
	if (fd >= 0)
		close(fd);
	if (created && unlink(tmp) < 0)
		log_warn("cannot remove %s: %s", tmp, strerror(errno));
	return -1;
}

/*
 * seg_writer_create
 *		Build a new segment for a cluster (build_segment), its generation
 *		the previous valid segment's + 1.  Returns 0 or -1 with err set.
 */
int
seg_writer_create(seg_writer *w, const char *path, const seg_writer_opts *opts,
				  char *err, size_t errlen)
{
	memset(w, 0, sizeof(*w));
	w->fd = -1;
	return build_segment(w, path, opts, previous_generation(path) + 1, NULL, err, errlen);
}

/*
 * grown_capacity
 *		Rows for a table of cap rows that must take need: twice its size,
 *		or a quarter more than need when that is more, within 2^31.
 */
static uint32_t
grown_capacity(uint32_t cap, uint32_t need)
{
	uint64_t	c = (uint64_t) cap * 2;
	uint64_t	n = (uint64_t) need + need / 4;

	if (n > c)
		c = n;
	return c > (UINT32_C(1) << 31) ? UINT32_C(1) << 31 : (uint32_t) c;
}

/*
 * fitting_capacity
 *		The most rows table kind may have in opts (up to want) with the
 *		segment within its limit.
 */
static uint32_t
fitting_capacity(seg_writer_opts *opts, uint32_t kind, uint32_t entry_size,
				 uint32_t want)
{
	size_t		limit = opts->max_size && opts->max_size < SEG_GROW_MAX_SIZE ?
		opts->max_size : SEG_GROW_MAX_SIZE;
	size_t		rest;
	uint64_t	fit;

	opts->capacity[kind] = 1;	/* 0 would be the default */
	rest = seg_writer_size(opts);
	if (rest >= limit)
		return 1;
	fit = 1 + (limit - rest) / entry_size;
	fit = fit > want ? want : fit;
	for (;;)
	{
		opts->capacity[kind] = (uint32_t) fit;
		if (fit <= 1 || seg_writer_size(opts) <= limit)
			return (uint32_t) fit;
		fit--;					/* the table's alignment: a row or so */
	}
}

/*
 * plan_growth
 *		Capacities in opts for the tables of w and the rows p brings: a
 *		table that p overflows grows (grown_capacity), or as far as the
 *		segment may within SEG_GROW_MAX_SIZE when that is not far enough
 *		(so that the next few rows do not build it again).  Returns how
 *		many tables grow.  The limit is opts->max_size, or
 *		SEG_GROW_MAX_SIZE.
 */
static int
plan_growth(const seg_writer *w, const seg_publish *p, seg_writer_opts *opts)
{
	int			grown = 0;
	uint32_t	i;

	for (i = 0; i < seg_ntables; i++)
		opts->capacity[seg_tables[i].kind] = w->tables[seg_tables[i].kind].capacity;
	for (i = 0; i < seg_ntables; i++)
	{
		uint32_t	kind = seg_tables[i].kind;
		uint32_t	cap = w->tables[kind].capacity;
		uint32_t	need = p->tables[kind].count;

		if (need <= cap)
			continue;
		opts->capacity[kind] = fitting_capacity(opts, kind, seg_tables[i].entry_size,
												grown_capacity(cap, need));
		if (opts->capacity[kind] <= cap)
			opts->capacity[kind] = cap; /* no room: it keeps its overflow */
		else
			grown++;
	}
	return grown;
}

/*
 * release_old
 *		Unmap and close a segment that a new file has replaced.
 */
static void
release_old(const seg_writer *old)
{
	if (munmap(old->map, old->size) < 0)
		log_warn("munmap of the old %s failed: %s", old->path, strerror(errno));
	if (close(old->fd) < 0)
		log_warn("close of the old %s failed: %s", old->path, strerror(errno));
}

/*
 * seg_writer_grow
 *		When p brings a table more rows than it holds, build the segment
 *		again with room for them (plan_growth), the same generation and
 *		p published, renamed over the old one, whose mapping goes.  A reader
 *		that opened the old file copies it whole (stale by one
 *		publication); the next opens the new one, whose header gives the
 *		new capacities.  opts: the cluster's (its capacities are replaced).
 *		Returns 1 when the segment grew (p is published), 0 when no table
 *		needed it or could have it, -1 with err set when the new one could
 *		not be built (w keeps the old one).
 */
int
seg_writer_grow(seg_writer *w, const seg_publish *p, seg_writer_opts *opts,
				char *err, size_t errlen)
{
	seg_writer	old = *w;

	if (w->hdr == NULL || plan_growth(w, p, opts) == 0)
		return 0;
	if (build_segment(w, old.path, opts, old.hdr->generation, p, err, errlen) < 0)
		return -1;
	release_old(&old);
	return 1;
}

/*
 * seg_writer_rebuild
 *		The data directory changed owner (a cluster attached again under
 *		another uid): a new, empty segment of the next generation, readable
 *		by the new owner alone, renamed over the old one, whose mapping
 *		goes.  Not the old file's permissions changed: a process of the old
 *		owner that opened it would read on through its descriptor, and the
 *		old file keeps the old owner's rows past each table's count (query
 *		texts among them).  The old file ends STOPPED, with no processes.
 *		opts: the cluster's, with the new uid and gid; the capacities stay
 *		w's.  Returns 0, or -1 with err set (w keeps the old one).
 */
int
seg_writer_rebuild(seg_writer *w, seg_writer_opts *opts, char *err, size_t errlen)
{
	seg_writer	old = *w;
	uint32_t	i;

	if (w->hdr == NULL)
	{
		snprintf(err, errlen, "no segment open");
		return -1;
	}
	for (i = 0; i < seg_ntables; i++)
		opts->capacity[seg_tables[i].kind] = w->tables[seg_tables[i].kind].capacity;
	if (build_segment(w, old.path, opts, old.hdr->generation + 1, NULL, err, errlen) < 0)
		return -1;
	seg_writer_close(&old, PGT_WRITER_STOPPED);	/* what a reader of it still sees */
	return 0;
}

/*
 * seg_writer_publish
 *		Replace every table and the header's live fields under the seqlock.
 *		Rows beyond a table's capacity are dropped and counted in that
 *		table's overflow; returns the rows dropped over all tables.
 */
uint64_t
seg_writer_publish(seg_writer *w, const seg_publish *p)
{
	struct pgt_seg_header *h = w->hdr;
	uint64_t	dropped = 0;
	uint32_t	i;

	if (h == NULL)
		return 0;
	__atomic_store_n(&h->seq, h->seq + 1, __ATOMIC_RELAXED);	/* odd */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__sync_synchronize();

	for (i = 0; i < seg_ntables; i++)
	{
		seg_writer_table *t = &w->tables[seg_tables[i].kind];
		const seg_rows *r = &p->tables[seg_tables[i].kind];
		uint32_t	n = r->count < t->capacity ? r->count : t->capacity;

		if (n > 0 && r->rows != NULL)
			memcpy(t->rows, r->rows, (size_t) n * t->entry_size);
		else
			n = 0;
		h->sections[t->slot].count = n;
		t->overflow = r->count - n;
		dropped += t->overflow;
	}
	h->state = p->state;
	h->postmaster_pid = p->postmaster_pid;
	h->postmaster_start_us = p->postmaster_start_us;
	h->attached_us = p->attached_us;
	if (p->generation != 0)
		h->generation = p->generation;
	h->last_update_us = procfs_realtime_us();

	__atomic_thread_fence(__ATOMIC_RELEASE);
	__sync_synchronize();
	__atomic_store_n(&h->seq, h->seq + 1, __ATOMIC_RELAXED);	/* even */
	return dropped;
}

/*
 * seg_writer_overflow
 *		Rows the last publication dropped, over all tables; list names the
 *		tables that overflowed ("kernel io: 517 over 4096, ...").
 */
uint64_t
seg_writer_overflow(const seg_writer *w, char *list, size_t len)
{
	uint64_t	total = 0;
	size_t		used = 0;
	uint32_t	i;

	if (len > 0)
		list[0] = '\0';
	for (i = 0; i < seg_ntables; i++)
	{
		const seg_writer_table *t = &w->tables[seg_tables[i].kind];

		if (t->overflow == 0)
			continue;
		total += t->overflow;
		if (used < len)
			used += (size_t) snprintf(list + used, len - used, "%s%s: %llu over %u",
									  used ? ", " : "", seg_tables[i].name,
									  (unsigned long long) t->overflow, t->capacity);
	}
	return total;
}

/*
 * seg_writer_generation
 *		Generation currently in the header.
 */
uint64_t
seg_writer_generation(const seg_writer *w)
{
	return w->hdr ? w->hdr->generation : 0;
}

/*
 * seg_writer_close
 *		Mark the segment with final_state (PGT_WRITER_STOPPED on a clean
 *		exit) under the seqlock, then unmap and close it.  The file stays:
 *		readers see "helper stopped", not a missing file.
 */
void
seg_writer_close(seg_writer *w, uint32_t final_state)
{
	struct pgt_seg_header *h = w->hdr;

	if (h != NULL)
	{
		__atomic_store_n(&h->seq, h->seq + 1, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		__sync_synchronize();
		h->state = final_state;
		h->sections[w->tables[PGT_SEC_BACKENDS].slot].count = 0;
		h->postmaster_pid = 0;
		h->last_update_us = procfs_realtime_us();
		__atomic_thread_fence(__ATOMIC_RELEASE);
		__sync_synchronize();
		__atomic_store_n(&h->seq, h->seq + 1, __ATOMIC_RELAXED);
	}
	if (w->map != NULL && munmap(w->map, w->size) < 0)
		log_warn("munmap of %s failed: %s", w->path, strerror(errno));
	if (w->fd >= 0 && close(w->fd) < 0)
		log_warn("close of %s failed: %s", w->path, strerror(errno));
	w->map = NULL;
	w->hdr = NULL;
	w->fd = -1;
}

/*
 * seg_writer_remove_stale_tmp
 *		Remove, from the runtime directory dir, the temporary segments
 *		("<segment>.tmp.<pid>.<nsec>", as build_segment names them) that
 *		a helper killed while building one left behind: regular files of
 *		this euid whose pid runs no more, or is this process's and older
 *		than it.  They sit in a tmpfs, that is in memory, until the host
 *		restarts otherwise.  Called at the daemon's start, before it builds
 *		any: an older file of its own pid is an earlier helper's (one in a
 *		container gets the same pid at every start).  Returns how many.
 */
int
seg_writer_remove_stale_tmp(const char *dir)
{
	DIR		   *d = opendir(dir);
	struct dirent *e;
	proc_stat	self;
	int64_t		self_start_us = -1;	/* unknown: no file of our pid goes */
	int			removed = 0;

	if (d == NULL)
		return 0;
	if (procfs_read_stat(getpid(), &self) == 0)
		self_start_us = procfs_start_us(&self);
	while ((e = readdir(d)) != NULL)
	{
		const char *t = strstr(e->d_name, ".seg.tmp.");
		struct stat st;
		char	   *end;
		long		pid;

		if (strncmp(e->d_name, "pgt-", 4) != 0 || t == NULL)
			continue;
		errno = 0;
		pid = strtol(t + strlen(".seg.tmp."), &end, 10);
		if (errno != 0 || pid <= 0 || pid > INT32_MAX || *end != '.')
			continue;
		if ((pid_t) pid != getpid() && (kill((pid_t) pid, 0) == 0 || errno != ESRCH))
			continue;			/* its writer may still be at work */
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
			!S_ISREG(st.st_mode) || st.st_uid != geteuid())
			continue;
		/*
		 * of our pid: written before we started (a helper of another pid
		 * namespace sharing the directory may have our number and be at
		 * work)
		 */
		if ((pid_t) pid == getpid() &&
			(self_start_us < 0 ||
			 (int64_t) st.st_mtim.tv_sec * 1000000 + st.st_mtim.tv_nsec / 1000 >= self_start_us))
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) == 0)
		{
			log_info("removed %s/%s, a segment a stopped helper was building", dir,
					 e->d_name);
			removed++;
		}
	}
	closedir(d);
	return removed;
}
