/*
 * test/unit/test_pidfile.c
 *	  postmaster.pid parsing (helper/pidfile.c): real PostgreSQL formats,
 *	  missing lines, garbage, bad pids, no final newline, huge files, and
 *	  reading through pidfile_read().
 */
#include "pidfile.h"
#include "unit.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* Parse a C string; returns the parser's result. */
static int
parse(const char *text, pg_pidfile *pf, char *err, size_t errlen)
{
	return pidfile_parse(text, strlen(text), pf, err, errlen);
}

static void
test_pg15_format(void)
{
	/* what PostgreSQL 15 writes once the postmaster is ready */
	const char *text =
		"12345\n"
		"/var/lib/postgresql/15/main\n"
		"1700000000\n"
		"5432\n"
		"/var/run/postgresql\n"
		"*\n"
		"  5432001    819200\n"
		"ready   \n";
	pg_pidfile	pf;
	char		err[256] = "";

	CHECK_INT(parse(text, &pf, err, sizeof(err)), 0);
	CHECK_INT(pf.pid, 12345);
	CHECK_STR(pf.data_dir, "/var/lib/postgresql/15/main");
	CHECK_INT(pf.start_time, 1700000000);
	CHECK_INT(pf.port, 5432);
	CHECK_STR(pf.socket_dir, "/var/run/postgresql");
	CHECK_STR(pf.listen_addr, "*");
	CHECK_STR(pf.status, "ready");
	CHECK_INT(pf.nlines, 8);
}

static void
test_partial_formats(void)
{
	pg_pidfile	pf;
	char		err[256];

	/* right after creation: 5 lines, status not yet written */
	CHECK_INT(parse("77\n/data\n1700000001\n5433\n/tmp\n", &pf, err, sizeof(err)), 0);
	CHECK_INT(pf.pid, 77);
	CHECK_INT(pf.port, 5433);
	CHECK_STR(pf.status, "");
	CHECK_INT(pf.nlines, 5);

	/* only the three required lines, no final newline */
	CHECK_INT(parse("88\n/d\n1700000002", &pf, err, sizeof(err)), 0);
	CHECK_INT(pf.pid, 88);
	CHECK_INT(pf.start_time, 1700000002);
	CHECK_INT(pf.port, -1);

	/* "starting" and "stopping" states, trailing padding removed */
	CHECK_INT(parse("9\n/d\n1\n5432\n/tmp\n\n  1 2\nstopping\n", &pf, err, sizeof(err)), 0);
	CHECK_STR(pf.status, "stopping");
	CHECK_STR(pf.listen_addr, "");

	/* a garbage port on an optional line is tolerated */
	CHECK_INT(parse("9\n/d\n1\nxyz\n", &pf, err, sizeof(err)), 0);
	CHECK_INT(pf.port, -1);
}

static void
test_rejections(void)
{
	pg_pidfile	pf;
	char		err[256];
	char	   *huge;

	CHECK_INT(parse("", &pf, err, sizeof(err)), -1);
	CHECK_CONTAINS(err, "0 line");
	CHECK_INT(parse("123\n/data\n", &pf, err, sizeof(err)), -1);
	CHECK_CONTAINS(err, "at least 3");
	CHECK_INT(parse("hello world\n/data\n1\n", &pf, err, sizeof(err)), -1);
	CHECK_CONTAINS(err, "not a pid");
	CHECK_INT(parse("-4242\n/data\n1700000000\n", &pf, err, sizeof(err)), -1);
	CHECK_CONTAINS(err, "standalone backend");
	CHECK_INT(parse("0\n/data\n1\n", &pf, err, sizeof(err)), -1);
	CHECK_INT(parse("2147483648\n/data\n1\n", &pf, err, sizeof(err)), -1);
	CHECK_CONTAINS(err, "out of range");
	CHECK_INT(parse("99999999999999999999999\n/data\n1\n", &pf, err, sizeof(err)), -1);
	CHECK_INT(parse(" 123\n/data\n1\n", &pf, err, sizeof(err)), -1);
	CHECK_INT(parse("123 \n/data\n1\n", &pf, err, sizeof(err)), -1);
	CHECK_INT(parse("+123\n/data\n1\n", &pf, err, sizeof(err)), -1);
	CHECK_INT(parse("123\n\n1\n", &pf, err, sizeof(err)), -1);
	CHECK_CONTAINS(err, "data directory");
	CHECK_INT(parse("123\n/data\nnoon\n", &pf, err, sizeof(err)), -1);
	CHECK_CONTAINS(err, "start time");
	CHECK_INT(parse("123\n/data\n-5\n", &pf, err, sizeof(err)), -1);
	CHECK_INT(pidfile_parse("123\n/da\0ta\n1\n", 13, &pf, err, sizeof(err)), -1);

	/* larger than any real postmaster.pid */
	huge = malloc(PIDFILE_MAX_BYTES + 2);
	CHECK(huge != NULL);
	if (huge != NULL)
	{
		memset(huge, 'x', PIDFILE_MAX_BYTES + 1);
		memcpy(huge, "123\n/data\n1\n", 12);
		CHECK_INT(pidfile_parse(huge, PIDFILE_MAX_BYTES + 1, &pf, err, sizeof(err)), -1);
		CHECK_CONTAINS(err, "larger than");
		free(huge);
	}
	/* a long data directory line does not overflow the field */
	{
		char		buf[PIDFILE_FIELD_LEN + 64];

		memset(buf, 'a', sizeof(buf));
		memcpy(buf, "5\n/", 3);
		memcpy(buf + PIDFILE_FIELD_LEN + 40, "\n1\n", 3);
		CHECK_INT(pidfile_parse(buf, PIDFILE_FIELD_LEN + 43, &pf, err, sizeof(err)), -1);
	}
}

static void
test_read_file(void)
{
	char		dir[] = "/tmp/pgt_unit_pidfile.XXXXXX";
	char		path[256];
	char		link[256];
	char		big[300];
	pg_pidfile	pf;
	char		err[256];
	int			fd;
	size_t		i;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/postmaster.pid", dir);
	snprintf(link, sizeof(link), "%s/link.pid", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	CHECK(write(fd, "4321\n/srv/pg\n1700000003\n5432\n", 29) == 29);
	close(fd);
	CHECK_INT(pidfile_read(path, &pf, err, sizeof(err)), 0);
	CHECK_INT(pf.pid, 4321);
	CHECK_STR(pf.data_dir, "/srv/pg");

	/* symlinks are not followed */
	CHECK(symlink(path, link) == 0);
	CHECK_INT(pidfile_read(link, &pf, err, sizeof(err)), -1);
	/* missing file */
	unlink(path);
	CHECK_INT(pidfile_read(path, &pf, err, sizeof(err)), -1);
	CHECK_CONTAINS(err, "cannot open");
	/* a huge file is cut at the limit and rejected */
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	memset(big, '7', sizeof(big));
	{
		int			ok = 1;

		for (i = 0; i < 100; i++)
			ok &= write(fd, big, sizeof(big)) == (ssize_t) sizeof(big);
		CHECK(ok);
	}
	close(fd);
	CHECK_INT(pidfile_read(path, &pf, err, sizeof(err)), -1);
	/* a directory is not a pid file */
	CHECK_INT(pidfile_read(dir, &pf, err, sizeof(err)), -1);
	unlink(link);
	unlink(path);
	rmdir(dir);
}

int
main(void)
{
	test_pg15_format();
	test_partial_formats();
	test_rejections();
	test_read_file();
	return UNIT_DONE("test_pidfile");
}
