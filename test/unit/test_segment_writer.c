/*
 * test/unit/test_segment_writer.c
 *	  The segment writer (helper/segment_writer.c) against the reader the
 *	  extension uses (common/pgt_segment.c): every field round-trips, the
 *	  generation increments across re-creation, an existing file is never
 *	  truncated in place, overflow is counted, a publication too big grows
 *	  the segment (same generation), close marks STOPPED; only
 *	  the cluster owner may read the file (a new owner when the data
 *	  directory changes hands), whose blocks are allocated.
 */
#include "pgt_segment.h"
#include "segment_writer.h"
#include "unit.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <grp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[] = "/tmp/pgt_unit_seg.XXXXXX";

static void *
alloc_fn(size_t size, void *arg)
{
	return malloc(size);
}

/* Options for a test segment. */
static seg_writer_opts
opts_for(uint32_t backends_cap)
{
	seg_writer_opts o;

	memset(&o, 0, sizeof(o));
	o.capacity[PGT_SEC_BACKENDS] = backends_cap;
	o.uid = 4321;				/* the cluster owner */
	o.gid = getgid();
	o.cluster_dev = 0xfe01;
	o.cluster_ino = 0xabcdef;
	o.data_dir = "/var/lib/postgresql/15/main";
	o.helper_version = "9.8.7";
	o.writer_pid = 4242;
	return o;
}

/* n backend rows with recognizable contents. */
static struct pgt_backend_entry *
make_backends(uint32_t n)
{
	struct pgt_backend_entry *b = calloc(n ? n : 1, sizeof(*b));
	uint32_t	i;

	for (i = 0; i < n; i++)
	{
		b[i].pid = 1000 + i;
		b[i].role = i == 0 ? PGT_ROLE_POSTMASTER : PGT_ROLE_CLIENT_BACKEND;
		b[i].attached_us = 1700000000000000LL + i;
		b[i].started_us = 1690000000000000LL + i;
		b[i].syscalls = 10ULL * i;
		snprintf(b[i].backend_type, sizeof(b[i].backend_type), "%s",
				 pgt_role_name(b[i].role));
	}
	return b;
}

/*
 * can_read_as
 *		Whether a child process with this uid and (only) this gid can open
 *		path for reading (root only; -1 when it cannot switch).
 */
static int
can_read_as(const char *path, uid_t uid, gid_t gid)
{
	pid_t		pid = fork();
	int			status;

	if (pid == 0)
	{
		int			fd;

		if (setgroups(1, &gid) < 0 || setgid(gid) < 0 || setuid(uid) < 0)
			_exit(2);
		fd = open(path, O_RDONLY);
		_exit(fd >= 0 ? 0 : 1);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status) == 0 ? 1 : WEXITSTATUS(status) == 1 ? 0 : -1;
}

/*
 * check_readers
 *		The cluster owner may read a new segment, and nobody else: not a
 *		member of the file's group, not the data directory's group.  With
 *		ACLs (this test's file system has them) the file's group is root.
 */
static void
check_readers(const char *path, const struct stat *st, uid_t owner)
{
	CHECK_INT(st->st_gid, 0);
	if (geteuid() != 0)
		return;
	CHECK_INT(can_read_as(path, owner, 4321), 1);
	CHECK_INT(can_read_as(path, 5555, getgid()), 0);
	CHECK_INT(can_read_as(path, 5555, 0), 0);
	CHECK_INT(can_read_as(path, 5555, 5555), 0);
}

static void
test_roundtrip(const char *path)
{
	seg_writer	w;
	seg_writer_opts o = opts_for(0);
	struct pgt_probeset_entry ps[3];
	struct pgt_backend_entry *be = make_backends(5);
	seg_publish p;
	pgt_seg_view v;
	struct stat st;
	char		err[256];
	void	   *buf = NULL;
	size_t		len = 0;
	uint32_t	i;

	CHECK_INT(seg_writer_create(&w, path, &o, err, sizeof(err)), 0);
	CHECK_INT(seg_writer_generation(&w), 1);
	CHECK_INT(stat(path, &st), 0);
	CHECK_INT(st.st_mode & 07777, 0440);	/* the helper's: no chmod by the reader */
	CHECK_INT(st.st_uid, geteuid());
	CHECK_INT((size_t) st.st_size, seg_writer_size(&o));
	CHECK((size_t) st.st_blocks * 512 >= seg_writer_size(&o), "allocated at creation: %lld blocks",
		  (long long) st.st_blocks);
	check_readers(path, &st, o.uid);
	/*
	 * the data directory changes owner: a new file, of the next generation,
	 * the new owner reads it, the old not; a descriptor the old owner had
	 * open reads the old file, which the writer no longer touches
	 */
	{
		seg_writer_opts o2 = o;
		struct stat st2;
		int			old_fd = open(path, O_RDONLY);

		o2.uid = 5678;
		CHECK_INT(seg_writer_rebuild(&w, &o2, err, sizeof(err)), 0);
		CHECK_INT(seg_writer_generation(&w), 2);
		CHECK_INT(stat(path, &st2), 0);
		CHECK(st2.st_ino != st.st_ino, "a new file (inode %llu, was %llu)",
			  (unsigned long long) st2.st_ino, (unsigned long long) st.st_ino);
		CHECK_INT((size_t) st2.st_size, (size_t) st.st_size);
		if (geteuid() == 0)
		{
			CHECK_INT(can_read_as(path, 5678, 5678), 1);
			CHECK_INT(can_read_as(path, o.uid, o.uid), 0);
		}
		CHECK(old_fd >= 0 && fstat(old_fd, &st2) == 0 && st2.st_ino == st.st_ino &&
			  st2.st_nlink == 0, "the old file: unlinked, only open descriptors reach it");
		if (old_fd >= 0)
			close(old_fd);
		CHECK_INT(seg_writer_rebuild(&w, &o, err, sizeof(err)), 0);
		CHECK_INT(seg_writer_generation(&w), 3);
		CHECK_INT(stat(path, &st), 0);
	}

	/* freshly created: valid, WAITING, empty */
	CHECK_INT(pgt_segment_snapshot(path, alloc_fn, NULL, &buf, &len, &v, err, sizeof(err)),
			  PGT_SEG_OK);
	CHECK_INT(v.hdr->state, PGT_WRITER_WAITING);
	CHECK_INT(pgt_view_count(&v, PGT_SEC_BACKENDS), 0);
	CHECK_INT(pgt_view_count(&v, PGT_SEC_PROBESETS), 0);
	free(buf);

	memset(ps, 0, sizeof(ps));
	for (i = 0; i < 3; i++)
	{
		snprintf(ps[i].name, sizeof(ps[i].name), "set%u", i);
		ps[i].state = PGT_PROBE_AVAILABLE + i % 3;
		ps[i].events = 100 + i;
		snprintf(ps[i].mechanism, sizeof(ps[i].mechanism), "tp_btf/x%u", i);
		snprintf(ps[i].reason, sizeof(ps[i].reason), "because %u", i);
	}
	memset(&p, 0, sizeof(p));
	p.state = PGT_WRITER_RUNNING;
	p.postmaster_pid = 1000;
	p.postmaster_start_us = 1690000000000000LL;
	p.attached_us = 1700000000000001LL;
	p.tables[PGT_SEC_PROBESETS] = (seg_rows) {ps, 3};
	p.tables[PGT_SEC_BACKENDS] = (seg_rows) {be, 5};
	CHECK_INT(seg_writer_publish(&w, &p), 0);

	CHECK_INT(pgt_segment_snapshot(path, alloc_fn, NULL, &buf, &len, &v, err, sizeof(err)),
			  PGT_SEG_OK);
	CHECK_INT(len, st.st_size);
	CHECK(v.hdr->magic == PGT_SEG_MAGIC);
	CHECK_INT(v.hdr->layout_version, PGT_SEG_LAYOUT_VERSION);
	CHECK_INT(v.hdr->header_size, sizeof(struct pgt_seg_header));
	CHECK_INT(v.hdr->segment_size, st.st_size);
	CHECK_INT(v.hdr->generation, 3);	/* two owner changes above */
	CHECK_INT(v.hdr->seq % 2, 0);
	CHECK(v.hdr->seq >= 2);
	CHECK(v.hdr->last_update_us > 1600000000000000LL);
	CHECK_INT(v.hdr->attached_us, 1700000000000001LL);
	CHECK_INT(v.hdr->writer_pid, 4242);
	CHECK_INT(v.hdr->state, PGT_WRITER_RUNNING);
	CHECK_INT(v.hdr->postmaster_pid, 1000);
	CHECK_INT(v.hdr->postmaster_start_us, 1690000000000000LL);
	CHECK_INT(v.hdr->cluster_dev, 0xfe01);
	CHECK_INT(v.hdr->cluster_ino, 0xabcdef);
	CHECK_STR(v.hdr->helper_version, "9.8.7");
	CHECK_STR(v.hdr->data_dir, "/var/lib/postgresql/15/main");
	CHECK_INT(v.hdr->nsections, seg_ntables);	/* every table of seg_tables[] */
	CHECK_INT(pgt_view_count(&v, PGT_SEC_PROBESETS), 3);
	CHECK_INT(v.tables[PGT_SEC_PROBESETS].stride, sizeof(struct pgt_probeset_entry));
	CHECK_INT(pgt_view_count(&v, PGT_SEC_BACKENDS), 5);
	CHECK_INT(v.tables[PGT_SEC_BACKENDS].stride, sizeof(struct pgt_backend_entry));
	for (i = 0; i < 3; i++)
	{
		const struct pgt_probeset_entry *e = pgt_view_probeset(&v, i);

		CHECK(memcmp(e, &ps[i], sizeof(*e)) == 0);
	}
	for (i = 0; i < 5; i++)
	{
		const struct pgt_backend_entry *b = pgt_view_backend(&v, i);

		CHECK_INT(b->pid, 1000 + i);
		CHECK_INT(b->syscalls, 10 * i);
		CHECK_INT(b->attached_us, 1700000000000000LL + i);
		CHECK_INT(b->started_us, 1690000000000000LL + i);
		CHECK_STR(b->backend_type, i == 0 ? "postmaster" : "client backend");
	}
	free(buf);

	/* a smaller publication replaces the tables */
	p.tables[PGT_SEC_BACKENDS].count = 2;
	p.tables[PGT_SEC_PROBESETS].count = 1;
	p.generation = 7;
	CHECK_INT(seg_writer_publish(&w, &p), 0);
	CHECK_INT(pgt_segment_snapshot(path, alloc_fn, NULL, &buf, &len, &v, err, sizeof(err)),
			  PGT_SEG_OK);
	CHECK_INT(pgt_view_count(&v, PGT_SEC_BACKENDS), 2);
	CHECK_INT(pgt_view_count(&v, PGT_SEC_PROBESETS), 1);
	CHECK_INT(v.hdr->generation, 7);
	free(buf);

	/* close marks it STOPPED, keeps the file */
	seg_writer_close(&w, PGT_WRITER_STOPPED);
	CHECK_INT(pgt_segment_snapshot(path, alloc_fn, NULL, &buf, &len, &v, err, sizeof(err)),
			  PGT_SEG_OK);
	CHECK_INT(v.hdr->state, PGT_WRITER_STOPPED);
	CHECK_INT(pgt_view_count(&v, PGT_SEC_BACKENDS), 0);
	free(buf);
	free(be);
}

static void
test_recreate(const char *path)
{
	seg_writer	w;
	seg_writer_opts o = opts_for(0);
	pgt_seg_view v;
	struct stat st_old;
	struct stat st_new;
	struct pgt_seg_header h;
	char		err[256];
	void	   *buf = NULL;
	size_t		len = 0;
	int			oldfd;

	/* generation 7 was left by test_roundtrip: the next one is 8 */
	oldfd = open(path, O_RDONLY);
	CHECK(oldfd >= 0);
	CHECK_INT(fstat(oldfd, &st_old), 0);
	CHECK_INT(seg_writer_create(&w, path, &o, err, sizeof(err)), 0);
	CHECK_INT(seg_writer_generation(&w), 8);
	CHECK_INT(stat(path, &st_new), 0);
	CHECK(st_new.st_ino != st_old.st_ino);	/* a new file, renamed over */

	/* the old file, still open, was not truncated nor rewritten */
	CHECK_INT(fstat(oldfd, &st_old), 0);
	CHECK_INT(st_old.st_size, st_new.st_size);
	CHECK_INT(pread(oldfd, &h, sizeof(h), 0), sizeof(h));
	CHECK(h.magic == PGT_SEG_MAGIC);
	CHECK_INT(h.generation, 7);
	CHECK_INT(h.state, PGT_WRITER_STOPPED);
	close(oldfd);

	CHECK_INT(pgt_segment_snapshot(path, alloc_fn, NULL, &buf, &len, &v, err, sizeof(err)),
			  PGT_SEG_OK);
	CHECK_INT(v.hdr->generation, 8);
	free(buf);
	seg_writer_close(&w, PGT_WRITER_STOPPED);

	/* again: 9, and no temporary file is left behind */
	CHECK_INT(seg_writer_create(&w, path, &o, err, sizeof(err)), 0);
	CHECK_INT(seg_writer_generation(&w), 9);
	seg_writer_close(&w, PGT_WRITER_STOPPED);

	/* a writer killed mid-update (seq left odd): the generation goes on, 10 */
	{
		int			fd = open(path, O_WRONLY);
		uint64_t	odd = 1001;

		CHECK(fd >= 0);
		CHECK_INT(pwrite(fd, &odd, sizeof(odd), offsetof(struct pgt_seg_header, seq)),
				  sizeof(odd));
		close(fd);
	}
	CHECK_INT(seg_writer_create(&w, path, &o, err, sizeof(err)), 0);
	CHECK_INT(seg_writer_generation(&w), 10);
	seg_writer_close(&w, PGT_WRITER_STOPPED);

	/* a foreign file at the name: generation restarts at 1 */
	unlink(path);
	{
		int			fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		CHECK(fd >= 0);
		CHECK_INT(write(fd, "not a segment, definitely not", 29), 29);
		close(fd);
	}
	CHECK_INT(seg_writer_create(&w, path, &o, err, sizeof(err)), 0);
	CHECK_INT(seg_writer_generation(&w), 1);
	seg_writer_close(&w, PGT_WRITER_STOPPED);
}

static void
test_overflow(const char *path)
{
	seg_writer	w;
	seg_writer_opts o = opts_for(4);
	struct pgt_backend_entry *be = make_backends(10);
	seg_publish p;
	pgt_seg_view v;
	char		err[256];
	void	   *buf = NULL;
	size_t		len = 0;

	o.capacity[PGT_SEC_PROBESETS] = 2;
	CHECK_INT(seg_writer_create(&w, path, &o, err, sizeof(err)), 0);
	memset(&p, 0, sizeof(p));
	p.state = PGT_WRITER_RUNNING;
	p.tables[PGT_SEC_BACKENDS] = (seg_rows) {be, 10};
	CHECK_INT(seg_writer_publish(&w, &p), 6);
	CHECK_INT(w.tables[PGT_SEC_BACKENDS].overflow, 6);
	CHECK_INT(pgt_segment_snapshot(path, alloc_fn, NULL, &buf, &len, &v, err, sizeof(err)),
			  PGT_SEG_OK);
	CHECK_INT(pgt_view_count(&v, PGT_SEC_BACKENDS), 4);
	CHECK_INT(pgt_view_backend(&v, 3)->pid, 1003);
	CHECK_INT(len, seg_writer_size(&o));
	free(buf);
	p.tables[PGT_SEC_BACKENDS].count = 3;
	CHECK_INT(seg_writer_publish(&w, &p), 0);
	CHECK_INT(w.tables[PGT_SEC_BACKENDS].overflow, 0);
	seg_writer_close(&w, PGT_WRITER_STOPPED);
	free(be);
}

/*
 * read_backends
 *		Snapshot path; its backend rows' count, or -1.  *gen: its generation.
 */
static int
read_backends(const char *path, uint64_t *gen)
{
	pgt_seg_view v;
	char		err[256];
	void	   *buf = NULL;
	size_t		len = 0;
	int			n = -1;

	if (pgt_segment_snapshot(path, alloc_fn, NULL, &buf, &len, &v, err,
							 sizeof(err)) == PGT_SEG_OK)
	{
		n = (int) pgt_view_count(&v, PGT_SEC_BACKENDS);
		*gen = v.hdr->generation;
		if (n > 0)
			CHECK_INT(pgt_view_backend(&v, (uint32_t) n - 1)->pid, 1000 + n - 1);
	}
	free(buf);
	return n;
}

/*
 * test_grow
 *		A publication too big for a table grows the segment: a new file of
 *		the same generation, the old one whole for a reader that holds it,
 *		readable by the owner alone, the rows in it before its name; one
 *		it fits leaves it; past the limit it grows as far as it may, once;
 *		a file the file system refuses keeps the old segment, which still
 *		publishes (with its overflow).
 */
static void
test_grow(const char *path)
{
	seg_writer	w;
	seg_writer_opts o = opts_for(4);
	struct pgt_backend_entry *be = make_backends(30);
	seg_publish p;
	struct stat st_old;
	struct stat st_new;
	struct rlimit fsize;
	char		err[256];
	uint64_t	gen = 0;
	int			oldfd;

	CHECK_INT(seg_writer_create(&w, path, &o, err, sizeof(err)), 0);
	memset(&p, 0, sizeof(p));
	p.state = PGT_WRITER_RUNNING;
	p.tables[PGT_SEC_BACKENDS] = (seg_rows) {be, 4};
	CHECK_INT(seg_writer_publish(&w, &p), 0);
	oldfd = open(path, O_RDONLY);
	CHECK(oldfd >= 0);
	CHECK_INT(fstat(oldfd, &st_old), 0);

	/* 4 rows fit: nothing grows */
	CHECK_INT(seg_writer_grow(&w, &p, &o, err, sizeof(err)), 0);
	/* 10 do not: room for 12 (a quarter more), same generation */
	p.tables[PGT_SEC_BACKENDS].count = 10;
	CHECK_INT(seg_writer_grow(&w, &p, &o, err, sizeof(err)), 1);
	CHECK_INT(seg_writer_capacity(&w, PGT_SEC_BACKENDS), 12);
	CHECK_INT(seg_writer_capacity(&w, PGT_SEC_PROBESETS), PGT_DEFAULT_PROBESETS_CAP);
	/* the new file had the rows before its name: never empty to a reader */
	CHECK_INT(read_backends(path, &gen), 10);
	CHECK_INT(gen, seg_writer_generation(&w));
	CHECK_INT(seg_writer_publish(&w, &p), 0);
	CHECK_INT(stat(path, &st_new), 0);
	CHECK(st_new.st_ino != st_old.st_ino);
	CHECK_INT((size_t) st_new.st_size, w.size);
	CHECK((size_t) st_new.st_blocks * 512 >= w.size, "allocated: %lld blocks",
		  (long long) st_new.st_blocks);
	check_readers(path, &st_new, o.uid);
	{
		struct pgt_seg_header h;	/* the old file: whole, its 4 rows */

		CHECK_INT(pread(oldfd, &h, sizeof(h), 0), sizeof(h));
		CHECK_INT(h.seq % 2, 0);
		CHECK_INT(h.state, PGT_WRITER_RUNNING);
		CHECK_INT(h.sections[w.tables[PGT_SEC_BACKENDS].slot].count, 4);
	}
	close(oldfd);

	/* twice the table when that is more: 12 -> 24 for 13 rows */
	p.tables[PGT_SEC_BACKENDS].count = 13;
	CHECK_INT(seg_writer_grow(&w, &p, &o, err, sizeof(err)), 1);
	CHECK_INT(seg_writer_capacity(&w, PGT_SEC_BACKENDS), 24);

	/*
	 * more than the limit allows (here 1 MiB more): as far as it may, once;
	 * the rows beyond stay overflow, and the next publication does not
	 * build it again
	 */
	o.max_size = w.size + (1 << 20);
	p.tables[PGT_SEC_KERNEL_HIST].count = UINT32_C(1) << 30;
	CHECK_INT(seg_writer_grow(&w, &p, &o, err, sizeof(err)), 1);
	CHECK(w.size <= o.max_size && w.size > o.max_size - 2 * sizeof(struct pgt_kernel_hist_entry),
		  "%zu of %zu bytes", w.size, o.max_size);
	CHECK_INT(seg_writer_capacity(&w, PGT_SEC_KERNEL_HIST),
			  PGT_DEFAULT_KERNEL_HIST_CAP + (1 << 20) / sizeof(struct pgt_kernel_hist_entry));
	CHECK_INT(seg_writer_capacity(&w, PGT_SEC_BACKENDS), 24);
	CHECK_INT(seg_writer_grow(&w, &p, &o, err, sizeof(err)), 0);
	p.tables[PGT_SEC_KERNEL_HIST].count = 0;
	o.max_size = 0;

	/* a file system that refuses the bigger file: -1, the old one stays */
	p.tables[PGT_SEC_BACKENDS].count = 10;
	CHECK_INT(seg_writer_publish(&w, &p), 0);
	p.tables[PGT_SEC_BACKENDS].count = 30;
	CHECK_INT(getrlimit(RLIMIT_FSIZE, &fsize), 0);
	signal(SIGXFSZ, SIG_IGN);
	CHECK_INT(setrlimit(RLIMIT_FSIZE, &(struct rlimit) {w.size, fsize.rlim_max}), 0);
	CHECK_INT(seg_writer_grow(&w, &p, &o, err, sizeof(err)), -1);
	CHECK_CONTAINS(err, "cannot size");
	CHECK_INT(setrlimit(RLIMIT_FSIZE, &fsize), 0);
	CHECK_INT(seg_writer_capacity(&w, PGT_SEC_BACKENDS), 24);
	CHECK_INT(seg_writer_publish(&w, &p), 6);
	CHECK_INT(read_backends(path, &gen), 24);
	seg_writer_close(&w, PGT_WRITER_STOPPED);
	free(be);
}

/*
 * test_concurrent
 *		A reader copying while a writer publishes in a loop (another
 *		process) sees only whole publications: in each, the generation,
 *		the postmaster pid, the number of rows and every row's pid are the
 *		same publication's.
 */
static void
test_concurrent(const char *path)
{
	seg_writer	w;
	seg_writer_opts o = opts_for(64);
	struct pgt_backend_entry rows[64];
	struct timespec t0, t;
	int			ok = 0, busy = 0, torn = 0;
	uint32_t	i;
	pid_t		child;
	int			status;

	/* the other tables tiny: a copy takes microseconds, as the helper's do */
	for (i = 0; i < seg_ntables; i++)
		if (seg_tables[i].kind != PGT_SEC_BACKENDS)
			o.capacity[seg_tables[i].kind] = 1;
	CHECK_INT(seg_writer_create(&w, path, &o, (char[256]) {0}, 256), 0);
	child = fork();
	if (child == 0)
	{
		seg_publish p;
		uint64_t	k;
		int			r;

		memset(&p, 0, sizeof(p));
		p.state = PGT_WRITER_RUNNING;
		for (k = 1;; k++)		/* until the reader kills it */
		{
			for (r = 0; r < 64; r++)
				rows[r].pid = (uint32_t) k;
			p.generation = k;
			p.postmaster_pid = (uint32_t) k;
			p.tables[PGT_SEC_BACKENDS] = (seg_rows) {rows, (uint32_t) (1 + k % 64)};
			(void) seg_writer_publish(&w, &p);
			/* a pause, or no copy ever passes (the helper's is 250 ms) */
			if (k % 4 == 0)
				usleep(20);
		}
	}
	CHECK(child > 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
	{
		pgt_seg_view v;
		char		err[256];
		void	   *buf = NULL;
		size_t		len = 0;

		if (pgt_segment_snapshot(path, alloc_fn, NULL, &buf, &len, &v, err,
								 sizeof(err)) == PGT_SEG_OK)
		{
			uint64_t	g = v.hdr->generation;
			uint32_t	n = pgt_view_count(&v, PGT_SEC_BACKENDS);

			ok++;
			if (g > 1 && (v.hdr->postmaster_pid != (uint32_t) g || n != 1 + g % 64))
				torn++;
			for (i = 0; i < n && g > 1; i++)
				torn += pgt_view_backend(&v, i)->pid != (uint32_t) g;
		}
		else
			busy++;
		free(buf);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 1500000000L);
	kill(child, SIGKILL);		/* still publishing: every copy above raced it */
	CHECK_INT(waitpid(child, &status, 0), child);
	CHECK(WIFSIGNALED(status), "the writer published until the end");
	CHECK(ok > 100, "%d whole copies (%d busy)", ok, busy);
	CHECK_INT(torn, 0);
	seg_writer_close(&w, PGT_WRITER_STOPPED);
}

static void
test_bad_paths(void)
{
	seg_writer	w;
	seg_writer_opts o = opts_for(0);
	char		err[256];

	CHECK_INT(seg_writer_create(&w, "/nonexistent-dir/x.seg", &o, err, sizeof(err)), -1);
	CHECK_CONTAINS(err, "cannot create");
}

/* The directory holds nothing but what the tests expect. */
static void
test_no_leftovers(void)
{
	char		cmd[256];

	snprintf(cmd, sizeof(cmd), "test $(ls -A %s | wc -l) -eq 1", dir);
	CHECK_INT(system(cmd), 0);
}

/* a file named name in the test directory exists */
static bool
tmp_exists(const char *name)
{
	char		p[512];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

/* an empty file named name in the test directory */
static void
tmp_touch(const char *name)
{
	char		p[512];
	int			fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_CREAT | O_WRONLY | O_EXCL, 0600);
	CHECK(fd >= 0, "%s created", name);
	close(fd);
}

/*
 * A helper killed while it built a segment leaves "<seg>.tmp.<pid>.<nsec>":
 * the next start removes those of a pid that runs no more, and those of its
 * own pid older than itself (a containerised helper's pid at every start),
 * and keeps those of a process alive and newer ones of its own pid (another
 * helper may be building one; in another pid namespace, with our number).
 */
static void
test_remove_stale_tmp(void)
{
	char		mine[128], mine_new[128], dead[128];
	const char *alive = "pgt-fe01-abcdef.seg.tmp.1.2";	/* pid 1 always runs */
	pid_t		child = fork();

	if (child == 0)
		_exit(0);
	CHECK(child > 0 && waitpid(child, NULL, 0) == child, "a pid that ran and ended");
	snprintf(mine, sizeof(mine), "pgt-fe01-abcdef.seg.tmp.%d.1", (int) getpid());
	snprintf(mine_new, sizeof(mine_new), "pgt-fe01-abcdef.seg.tmp.%d.2", (int) getpid());
	snprintf(dead, sizeof(dead), "pgt-fe01-abcdef.seg.tmp.%d.3", (int) child);
	tmp_touch(mine);
	tmp_touch(mine_new);
	tmp_touch(dead);
	tmp_touch(alive);
	{
		/* an hour old: written before this process started */
		struct timespec old[2] = {{time(NULL) - 3600, 0}, {time(NULL) - 3600, 0}};
		char		p[512];

		snprintf(p, sizeof(p), "%s/%s", dir, mine);
		CHECK_INT(utimensat(AT_FDCWD, p, old, 0), 0);
	}
	CHECK_INT(seg_writer_remove_stale_tmp(dir), 2);
	CHECK(!tmp_exists(mine), "this pid's leftover from before this process removed");
	CHECK(tmp_exists(mine_new), "this pid's file written since kept (another pid namespace's)");
	CHECK(!tmp_exists(dead), "an ended process's leftover removed");
	CHECK(tmp_exists(alive), "a live process's file kept");
	{
		char		p[512];

		snprintf(p, sizeof(p), "%s/%s", dir, alive);
		unlink(p);
		snprintf(p, sizeof(p), "%s/%s", dir, mine_new);
		unlink(p);
	}
}

int
main(void)
{
	char		path[256];

	CHECK(mkdtemp(dir) != NULL);
	CHECK_INT(chmod(dir, 0755), 0);	/* as a runtime directory: others may look up */
	snprintf(path, sizeof(path), "%s/pgt-fe01-abcdef.seg", dir);
	test_roundtrip(path);
	test_recreate(path);
	test_no_leftovers();
	unlink(path);
	test_overflow(path);
	unlink(path);
	test_grow(path);
	test_no_leftovers();
	unlink(path);
	test_concurrent(path);
	test_bad_paths();
	unlink(path);
	test_remove_stale_tmp();
	rmdir(dir);
	return UNIT_DONE("test_segment_writer");
}
