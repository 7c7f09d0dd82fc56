/*
 * test/unit/test_layout_parse.c
 *	  The layout-file parser and loader (helper/layout_file.c): a valid file
 *	  as the extension writes it, and every kind of rejection.
 */
#include "layout_file.h"
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static const char valid[] =
	"pg_tracer_layout 1\n"
	"pg_version_num 150018\n"
	"postmaster_pid 4242\n"
	"postmaster_start_us 1700000000123456\n"
	"proc_array 0x7f0a12345000 124 880\n"
	"proc_offsets pid=60 wait_event_info=824 backend_id=64\n"
	"beentry_array 0x7f0a12400000 130 432\n"
	"beentry_offsets procpid=4 query_id=424 backend_type=8\n"
	"bgworker_offsets type=96 notify_pid=536 size=544\n"
	"wait_event 0x0a000001 IO BufFileRead\n"
	"wait_event 0x01000000 LWLock ShmemIndex\n"
	"wait_event 0x07000000 Extension Extension\n"
	"wait_event 0x01000080 LWLock my extension tranche\n"
	"end\n";

/* Parse text (a C string); returns the parser's result. */
static int
parse(const char *text, pgt_layout *l, char *err, size_t errlen)
{
	err[0] = '\0';
	return layout_parse(text, strlen(text), l, err, errlen);
}

/* Replace the first occurrence of `from` in valid[] by `to`. */
static char *
variant(const char *from, const char *to)
{
	const char *at = strstr(valid, from);
	size_t		n;
	char	   *out;

	if (at == NULL)
		return NULL;
	n = strlen(valid) - strlen(from) + strlen(to) + 1;
	out = malloc(n);
	snprintf(out, n, "%.*s%s%s", (int) (at - valid), valid, to, at + strlen(from));
	return out;
}

/* Expect that variant(from, to) is rejected with a message containing why. */
static void
reject(const char *from, const char *to, const char *why)
{
	char	   *text = variant(from, to);
	pgt_layout	l;
	char		err[256];

	CHECK(text != NULL);
	if (text == NULL)
		return;
	CHECK_INT(parse(text, &l, err, sizeof(err)), -1);
	CHECK_CONTAINS(err, why);
	CHECK(l.events == NULL);
	free(text);
}

static void
test_valid(void)
{
	pgt_layout	l;
	char		err[256];

	CHECK_INT(parse(valid, &l, err, sizeof(err)), 0);
	CHECK_STR(err, "");
	CHECK_INT(l.pg_version_num, 150018);
	CHECK_INT(l.postmaster_pid, 4242);
	CHECK_INT(l.postmaster_start_us, 1700000000123456LL);
	CHECK(l.proc_array == 0x7f0a12345000ULL);
	CHECK_INT(l.proc_count, 124);
	CHECK_INT(l.proc_stride, 880);
	CHECK_INT(l.proc_off_pid, 60);
	CHECK_INT(l.proc_off_wait_event_info, 824);
	CHECK_INT(l.proc_off_backend_id, 64);
	CHECK(l.beentry_array == 0x7f0a12400000ULL);
	CHECK_INT(l.beentry_count, 130);
	CHECK_INT(l.beentry_stride, 432);
	CHECK_INT(l.beentry_off_procpid, 4);
	CHECK_INT(l.beentry_off_query_id, 424);
	CHECK_INT(l.beentry_off_backend_type, 8);
	CHECK_INT(l.bgw_off_type, 96);
	CHECK_INT(l.bgw_off_notify_pid, 536);
	CHECK_INT(l.bgw_size, 544);
	CHECK_INT(l.nevents, 4);
	/* sorted by id */
	CHECK_INT(l.events[0].info, 0x01000000);
	CHECK_STR(l.events[0].class_name, "LWLock");
	CHECK_STR(l.events[0].event_name, "ShmemIndex");
	CHECK_INT(l.events[1].info, 0x01000080);
	CHECK_STR(l.events[1].event_name, "my extension tranche");
	CHECK_INT(l.events[3].info, 0x0a000001);
	CHECK_STR(l.events[3].class_name, "IO");
	layout_free(&l);
	CHECK(l.events == NULL);

	/* offsets in another order, hex without 0x, no wait events */
	{
		char	   *t = variant("proc_offsets pid=60 wait_event_info=824 backend_id=64",
								"proc_offsets backend_id=64 pid=60 wait_event_info=824");

		CHECK_INT(parse(t, &l, err, sizeof(err)), 0);
		CHECK_INT(l.proc_off_wait_event_info, 824);
		layout_free(&l);
		free(t);
		t = variant("0x7f0a12345000", "7F0A12345000");
		CHECK_INT(parse(t, &l, err, sizeof(err)), 0);
		CHECK(l.proc_array == 0x7f0a12345000ULL);
		layout_free(&l);
		free(t);
		CHECK_INT(parse("pg_tracer_layout 1\npg_version_num 150018\npostmaster_pid 1\n"
						"postmaster_start_us 0\nproc_array 1 1 16\n"
						"proc_offsets pid=0 wait_event_info=4 backend_id=8\n"
						"beentry_array 2 1 16\n"
						"beentry_offsets procpid=0 query_id=8 backend_type=4\nend\n",
						&l, err, sizeof(err)), 0);
		CHECK_INT(l.nevents, 0);
		/* a file from before bgworker_offsets: parallel workers keep their ids */
		CHECK_INT(l.bgw_size, 0);
		CHECK_INT(l.bgw_off_notify_pid, 0);
		layout_free(&l);
	}
}

static void
test_rejections(void)
{
	pgt_layout	l;
	char		err[256];
	char	   *t;

	reject("pg_version_num 150018\n", "pg_version_num 150018\nfrobnicate 1\n", "unknown key");
	reject("postmaster_pid 4242\n", "postmaster_pid 4242\npostmaster_pid 4242\n", "duplicate key");
	reject("0x7f0a12345000", "0x7f0a1234500g", "bad hex");
	reject("0x7f0a12345000", "0x", "bad hex");
	reject("0x7f0a12345000", "0x17f0a12345000000000", "bad hex");
	reject("wait_event 0x0a000001", "wait_event 0x10a000001", "bad hex");
	reject("wait_event 0x0a000001", "wait_event zz", "bad hex");
	reject("end\n", "", "missing \"end\"");
	reject("end\n", "end\nend\n", "after \"end\"");
	reject("end\n", "end", "no final newline");
	reject("pg_tracer_layout 1\n", "pg_tracer_layout 2\n", "layout version");
	reject("pg_tracer_layout 1\n", "pg_tracer_layoutx 1\n", "not a pg_tracer layout");
	reject("pg_version_num 150018\n", "", "missing key pg_version_num");
	reject("beentry_offsets procpid=4 query_id=424 backend_type=8\n", "",
		   "missing key beentry_offsets");
	reject("pg_version_num 150018", "pg_version_num  150018", "spacing");
	reject("pg_version_num 150018", "pg_version_num 150018 ", "spacing");
	reject("pg_version_num 150018", "pg_version_num -150018", "bad pg_version_num");
	reject("pg_version_num 150018", "pg_version_num 0150018", "bad pg_version_num");
	reject("postmaster_pid 4242", "postmaster_pid 99999999999999999999999", "bad postmaster_pid");
	reject("postmaster_pid 4242", "postmaster_pid 0", "bad postmaster_pid");
	reject("proc_array 0x7f0a12345000 124 880", "proc_array 0x7f0a12345000 124", "expected");
	reject("proc_array 0x7f0a12345000 124 880", "proc_array 0x7f0a12345000 0 880", "count");
	reject("proc_array 0x7f0a12345000 124 880", "proc_array 0x0 124 880", "bad hex");
	/* 1,000,000 slots of 65,536 bytes: 62.5 GB to copy out of the postmaster */
	reject("beentry_array 0x7f0a12400000 130 432",
		   "beentry_array 0x7f0a12400000 1000000 65536", "larger than 64 MB");
	reject("proc_array 0x7f0a12345000 124 880", "proc_array 0x7f0a12345000 80000 880",
		   "larger than 64 MB");
	reject("pid=60 ", "pid=60 pid=61 ", "expected 3");
	reject("pid=60 wait", "pidx=60 wait", "unknown offset");
	reject("backend_id=64", "backend_id=", "bad offset");
	reject("pid=60 wait_event_info=824 backend_id=64",
		   "pid=60 pid=824 backend_id=64", "duplicate offset");
	reject("wait_event_info=824", "wait_event_info=878", "outside");
	reject("query_id=424", "query_id=428", "outside");
	reject("notify_pid=536", "notify_pid=541", "outside the 544-byte BackgroundWorker");
	reject("type=96", "type=529", "outside the 544-byte BackgroundWorker");
	reject("size=544", "size=0", "bgworker_offsets size 0");
	reject("bgworker_offsets type=96", "bgworker_offsets size=96", "duplicate offset");
	reject("size=544\n", "size=544\nbgworker_offsets type=96 notify_pid=536 size=544\n",
		   "duplicate key bgworker_offsets");
	reject("wait_event 0x0a000001 IO BufFileRead", "wait_event 0x0a000001 IO", "wait_event takes");
	/* a name with spaces has single ones, inside it */
	reject("wait_event 0x0a000001 IO BufFileRead", "wait_event 0x0a000001 IO  BufFileRead",
		   "bad spacing");
	reject("wait_event 0x0a000001 IO BufFileRead", "wait_event 0x0a000001 IO BufFileRead ",
		   "bad spacing");
	reject("wait_event 0x0a000001 IO BufFileRead", "wait_event 0x0a000001 IO Buf  FileRead",
		   "bad spacing");
	reject("wait_event 0x07000000 Extension Extension",
		   "wait_event 0x0a000001 IO Again", "duplicate wait event id");
	reject("IO BufFileRead", "IO BufFileRead\tx", "non-printable");
	reject("IO BufFileRead", "IO BufFile\x7fRead", "non-printable");
	reject("IO BufFileRead", "IO BufFile\xc3\xa9Read", "non-printable");
	reject("pg_version_num 150018\n", "pg_version_num 150018\r\n", "non-printable");
	reject("pg_version_num 150018\n", "pg_version_num 150018\n\n", "empty line");
	reject("IO BufFileRead",
		   "IO AVeryLongEventNameThatIsLongerThanSixtyThreeBytesWhichIsTheLimitX", "longer than");

	/* overlong line */
	{
		char		line[400];

		memset(line, 'a', sizeof(line));
		memcpy(line, "wait_event 0x0a000009 IO ", 25);
		line[sizeof(line) - 1] = '\0';
		reject("wait_event 0x0a000001 IO BufFileRead", line, "longer than 256");
	}
	/* NUL byte inside */
	CHECK_INT(layout_parse("pg_tracer_layout 1\0\n", 20, &l, err, sizeof(err)), -1);
	CHECK_CONTAINS(err, "non-printable");
	CHECK_INT(parse("", &l, err, sizeof(err)), -1);
	CHECK_CONTAINS(err, "empty");

	/* too many wait events */
	{
		size_t		cap = strlen(valid) + (PGT_LAYOUT_MAX_EVENTS + 2) * 40;
		char	   *big = malloc(cap);
		size_t		n;
		int			i;

		n = (size_t) snprintf(big, cap, "%.*s", (int) (strstr(valid, "\nwait_event ") + 1 - valid), valid);
		for (i = 0; i < PGT_LAYOUT_MAX_EVENTS; i++)
			n += (size_t) snprintf(big + n, cap - n, "wait_event 0x%08x IPC E%d\n",
								   0x08000000 + i, i);
		snprintf(big + n, cap - n, "end\n");
		CHECK_INT(parse(big, &l, err, sizeof(err)), 0);
		CHECK_INT(l.nevents, PGT_LAYOUT_MAX_EVENTS);
		layout_free(&l);
		snprintf(big + n, cap - n, "wait_event 0x09000000 Timeout T\nend\n");
		CHECK_INT(parse(big, &l, err, sizeof(err)), -1);
		CHECK_CONTAINS(err, "more than 4096 wait events");
		free(big);
	}
	/* larger than the limit */
	t = malloc(PGT_LAYOUT_MAX_BYTES + 2);
	memset(t, 'a', PGT_LAYOUT_MAX_BYTES + 1);
	CHECK_INT(layout_parse(t, PGT_LAYOUT_MAX_BYTES + 1, &l, err, sizeof(err)), -1);
	CHECK_CONTAINS(err, "at most");
	free(t);
}

static void
write_file(const char *path, const char *text, mode_t mode)
{
	int			fd;

	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, mode);
	CHECK(fd >= 0);
	CHECK_INT(write(fd, text, strlen(text)), strlen(text));
	CHECK_INT(fchmod(fd, mode), 0);
	close(fd);
}

static void
test_load(void)
{
	char		dir[] = "/tmp/pgt_unit_layout.XXXXXX";
	char		path[256];
	char		link[256];
	pgt_layout	l;
	struct stat st;
	char		err[512];

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/pg_tracer.layout", dir);
	snprintf(link, sizeof(link), "%s/link.layout", dir);

	write_file(path, valid, 0600);
	CHECK_INT(layout_load(path, getuid(), &l, &st, err, sizeof(err)), 0);
	CHECK_INT(l.nevents, 4);
	CHECK(st.st_size == (off_t) strlen(valid));
	layout_free(&l);

	/* the wrong owner */
	CHECK_INT(layout_load(path, getuid() + 1, &l, &st, err, sizeof(err)), -1);
	CHECK_CONTAINS(err, "owned by uid");
	/* group- or world-writable */
	CHECK_INT(chmod(path, 0620), 0);
	CHECK_INT(layout_load(path, getuid(), &l, &st, err, sizeof(err)), -1);
	CHECK_CONTAINS(err, "writable by group or others");
	CHECK_INT(chmod(path, 0602), 0);
	CHECK_INT(layout_load(path, getuid(), &l, &st, err, sizeof(err)), -1);
	CHECK_INT(chmod(path, 0644), 0);
	CHECK_INT(layout_load(path, getuid(), &l, &st, err, sizeof(err)), 0);
	layout_free(&l);
	/* a symlink is refused */
	CHECK_INT(symlink(path, link), 0);
	CHECK_INT(layout_load(link, getuid(), &l, &st, err, sizeof(err)), -1);
	CHECK_CONTAINS(err, "not a regular file");
	/* a directory, a missing file */
	CHECK_INT(layout_load(dir, getuid(), &l, &st, err, sizeof(err)), -1);
	unlink(path);
	CHECK_INT(layout_load(path, getuid(), &l, &st, err, sizeof(err)), -1);
	CHECK_INT(errno, ENOENT);
	/* content errors come through */
	write_file(path, "pg_tracer_layout 1\nend\n", 0600);
	CHECK_INT(layout_load(path, getuid(), &l, &st, err, sizeof(err)), -1);
	CHECK_CONTAINS(err, "missing key");
	unlink(path);
	unlink(link);
	rmdir(dir);
}

int
main(void)
{
	test_valid();
	test_rejections();
	test_load();
	return UNIT_DONE("test_layout_parse");
}
