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
 * previous valid segment's + 1.  The file belongs to the data directory's
 * owner with mode 0400: the cluster owner may read it, nobody may write it
 * but root, and it is not world-readable because it will carry query text.
 *
 * Updates go through the seqlock of pgt_segment.h: seq odd, barrier,
 * tables and header, barrier, seq even.  Only the daemon's single thread
 * writes.
 */
#include "segment_writer.h"

#include "log.h"
#include "procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SECTION_ALIGN	64

/*
 * align_up
 *		Round v up to a multiple of a (a power of two).
 */
static size_t
align_up(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/*
 * seg_writer_size
 *		File size for the given capacities: header, then each table aligned.
 */
size_t
seg_writer_size(uint32_t probesets_cap, uint32_t backends_cap)
{
	size_t		off = align_up(sizeof(struct pgt_seg_header), SECTION_ALIGN);

	off = align_up(off + (size_t) probesets_cap * sizeof(struct pgt_probeset_entry),
				   SECTION_ALIGN);
	off = align_up(off + (size_t) backends_cap * sizeof(struct pgt_backend_entry),
				   SECTION_ALIGN);
	return off;
}

/*
 * previous_generation
 *		Generation of the valid segment at path, or 0 when there is none
 *		(missing, foreign, corrupt: then we start over at 1).
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
 * seg_writer_create
 *		Build a new segment for a cluster and rename it over `path`.  On
 *		success the writer owns a mapping of the new file; the header says
 *		WAITING with empty tables until the first publish.  Returns 0 or -1
 *		with err set (nothing is left behind on failure).
 */
int
seg_writer_create(seg_writer *w, const char *path, const seg_writer_opts *opts,
				  char *err, size_t errlen)
{
	char		tmp[4096 + 64];
	struct pgt_seg_header *h;
	size_t		size;
	size_t		off;
	uint64_t	gen;
	int			fd = -1;
	void	   *map = MAP_FAILED;
	int			created = 0;
	struct timespec ts;

	memset(w, 0, sizeof(*w));
	w->fd = -1;
	if (strlen(path) >= sizeof(w->path))
	{
		snprintf(err, errlen, "segment path too long");
		return -1;
	}
	w->probesets_cap = opts->probesets_cap ? opts->probesets_cap : PGT_DEFAULT_PROBESETS_CAP;
	w->backends_cap = opts->backends_cap ? opts->backends_cap : PGT_DEFAULT_BACKENDS_CAP;
	size = seg_writer_size(w->probesets_cap, w->backends_cap);
	gen = previous_generation(path) + 1;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		ts.tv_nsec = 0;
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d.%ld", path, (int) getpid(), ts.tv_nsec);
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400);
	if (fd < 0)
	{
		snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
		goto cleanup;
	}
	created = 1;
	if (fchown(fd, opts->uid, opts->gid) < 0)
	{
		snprintf(err, errlen, "cannot chown %s to %d:%d: %s", tmp,
				 (int) opts->uid, (int) opts->gid, strerror(errno));
		goto cleanup;
	}
	if (fchmod(fd, 0400) < 0)
	{
		snprintf(err, errlen, "cannot chmod %s: %s", tmp, strerror(errno));
		goto cleanup;
	}
	if (ftruncate(fd, (off_t) size) < 0)
	{
		snprintf(err, errlen, "cannot size %s to %zu bytes: %s", tmp, size,
				 strerror(errno));
		goto cleanup;
	}
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
	{
		snprintf(err, errlen, "cannot map %s: %s", tmp, strerror(errno));
		goto cleanup;
	}

	/* ftruncate zero-filled the file: only non-zero fields are written */
	h = map;
	h->magic = PGT_SEG_MAGIC;
	h->layout_version = PGT_SEG_LAYOUT_VERSION;
	h->header_size = sizeof(struct pgt_seg_header);
	h->segment_size = size;
	h->generation = gen;
	h->seq = 0;
	h->last_update_us = procfs_realtime_us();
	h->attached_us = 0;
	h->writer_pid = opts->writer_pid;
	h->state = PGT_WRITER_WAITING;
	h->postmaster_pid = 0;
	h->cluster_dev = opts->cluster_dev;
	h->cluster_ino = opts->cluster_ino;
	copy_str(h->helper_version, sizeof(h->helper_version), opts->helper_version);
	copy_str(h->data_dir, sizeof(h->data_dir), opts->data_dir);

	off = align_up(sizeof(struct pgt_seg_header), SECTION_ALIGN);
	h->sections[0].kind = PGT_SEC_PROBESETS;
	h->sections[0].entry_size = sizeof(struct pgt_probeset_entry);
	h->sections[0].offset = off;
	h->sections[0].capacity = w->probesets_cap;
	h->sections[0].count = 0;
	off = align_up(off + (size_t) w->probesets_cap * sizeof(struct pgt_probeset_entry),
				   SECTION_ALIGN);
	h->sections[1].kind = PGT_SEC_BACKENDS;
	h->sections[1].entry_size = sizeof(struct pgt_backend_entry);
	h->sections[1].offset = off;
	h->sections[1].capacity = w->backends_cap;
	h->sections[1].count = 0;
	h->nsections = 2;

	if (rename(tmp, path) < 0)
	{
		snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, path,
				 strerror(errno));
		goto cleanup;
	}
	created = 0;

	snprintf(w->path, sizeof(w->path), "%s", path);
	w->fd = fd;
	w->map = map;
	w->size = size;
	w->hdr = h;
	w->probesets = (unsigned char *) map + h->sections[0].offset;
	w->backends = (unsigned char *) map + h->sections[1].offset;
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
 * seg_writer_publish
 *		Replace the tables and the header's live fields under the seqlock.
 *		Rows beyond a table's capacity are dropped; returns how many backend
 *		rows were dropped (also kept in w->backends_overflow).
 */
uint64_t
seg_writer_publish(seg_writer *w, const seg_publish *p)
{
	struct pgt_seg_header *h = w->hdr;
	uint32_t	nps = p->nprobesets < w->probesets_cap ? p->nprobesets : w->probesets_cap;
	uint32_t	nbe = p->nbackends < w->backends_cap ? p->nbackends : w->backends_cap;

	if (h == NULL)
		return 0;
	__atomic_store_n(&h->seq, h->seq + 1, __ATOMIC_RELAXED);	/* odd */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__sync_synchronize();

	if (nps > 0)
		memcpy(w->probesets, p->probesets, (size_t) nps * sizeof(struct pgt_probeset_entry));
	if (nbe > 0)
		memcpy(w->backends, p->backends, (size_t) nbe * sizeof(struct pgt_backend_entry));
	h->sections[0].count = nps;
	h->sections[1].count = nbe;
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

	w->backends_overflow = p->nbackends - nbe;
	return w->backends_overflow;
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
		h->sections[1].count = 0;
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
