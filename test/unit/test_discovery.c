/*
 * test/unit/test_discovery.c
 *	  Is a process a postmaster (helper/discovery.c,
 *	  discovery_check_postmaster, and discovery_check_pids, the path of
 *	  the exec notes)?  With a real process: a child named
 *	  "postgres" that sits in a directory holding a postmaster.pid naming
 *	  it.  It is one only while it runs as the directory's owner, as
 *	  PostgreSQL does: in a directory someone else owns (root, here) it
 *	  would otherwise be served with that owner's rights.  Needs root (to
 *	  own the directory and to become nobody in the child).
 */
#include "discovery.h"
#include "unit.h"

#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOBODY	65534

/*
 * write_pidfile
 *		dir/postmaster.pid as PostgreSQL 15 writes it, naming pid.  0, or -1.
 */
static int
write_pidfile(const char *dir, pid_t pid)
{
	char		path[256];
	FILE	   *f;

	snprintf(path, sizeof(path), "%s/postmaster.pid", dir);
	f = fopen(path, "w");
	if (f == NULL)
		return -1;
	fprintf(f, "%d\n%s\n1700000000\n5432\n/tmp\n*\n  5432001    819200\nready   \n",
			(int) pid, dir);
	return fclose(f);
}

/*
 * pretender
 *		The child: named "postgres", working in dir, then nobody; waits for a
 *		byte on `go` (acknowledging each step on `ack`).
 */
static void
pretender(const char *dir, int go, int ack)
{
	char		c;

	if (prctl(PR_SET_NAME, "postgres") != 0 || chdir(dir) != 0 || unit_drop_root() != 0)
		_exit(1);
	(void) write(ack, "r", 1);
	(void) read(go, &c, 1);
	_exit(0);
}

/*
 * check_pids_finds
 *		How many postmasters discovery_check_pids finds among { pid }.
 */
static size_t
check_pids_finds(pid_t pid)
{
	pid_t		pids[1] = {pid};
	size_t		npids = 1;
	pm_info    *pms = NULL;
	size_t		npms = 0;

	if (discovery_check_pids(pids, &npids, 0, 0, 0, &pms, &npms) < 0)
		return (size_t) -1;
	free(pms);
	return npms;
}

static void
test_owner_must_run_it(void)
{
	char		dir[] = "/tmp/pgt_discovery.XXXXXX";
	char		err[512] = "";
	char		c = 0;
	pm_info		pm;
	int			go[2];
	int			ack[2];
	pid_t		child;

	CHECK(mkdtemp(dir) != NULL && chmod(dir, 0755) == 0 && pipe(go) == 0 && pipe(ack) == 0,
		  "set up");
	child = fork();
	if (child == 0)
		pretender(dir, go[0], ack[1]);
	CHECK(read(ack[0], &c, 1) == 1 && c == 'r', "the child is nobody, in %s", dir);
	CHECK(write_pidfile(dir, child) == 0, "postmaster.pid names it");

	/* root's directory, nobody's process: not a postmaster */
	CHECK(discovery_check_postmaster(child, &pm, err, sizeof(err)) == -1 &&
		  strstr(err, "does not run as uid 0") != NULL, "refused: %s", err);
	/* nor on the exec notes' path, which checks only the processes named */
	CHECK(check_pids_finds(child) == 0, "the exec notes' path refuses it too");

	/* its own directory: a postmaster, of its owner */
	CHECK(chown(dir, NOBODY, NOBODY) == 0, "the directory is nobody's");
	err[0] = '\0';
	CHECK(discovery_check_postmaster(child, &pm, err, sizeof(err)) == 0, "accepted: %s", err);
	CHECK(pm.pid == child && pm.uid == NOBODY && strcmp(pm.data_dir, dir) == 0,
		  "pid %d, uid %u, %s", (int) pm.pid, (unsigned) pm.uid, pm.data_dir);
	CHECK(check_pids_finds(child) == 1, "and the exec notes' path accepts it");

	(void) write(go[1], "x", 1);
	(void) waitpid(child, NULL, 0);
	snprintf(err, sizeof(err), "%s/postmaster.pid", dir);
	(void) unlink(err);
	(void) rmdir(dir);
}

int
main(void)
{
	if (geteuid() != 0)
	{
		printf("test_discovery: skipped, needs root\n");
		return 0;
	}
	test_owner_must_run_it();
	return UNIT_DONE("test_discovery");
}
