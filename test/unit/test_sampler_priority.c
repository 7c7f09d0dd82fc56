/*
 * test/unit/test_sampler_priority.c
 *	  --sampler-nice (helper/sampler_priority.c): the values it accepts,
 *	  which titles name the sampler (procfs_title_is), and the priority it
 *	  gives a real process, a child of this test, whose title is the
 *	  sampler's.  As root the child's nice value must change; otherwise
 *	  the kernel must refuse and the call must say so.
 */
#include "procfs.h"
#include "sampler_priority.h"
#include "unit.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* title: the text plus the NUL bytes /proc/<pid>/cmdline would end with */
static bool
title_is(const char *text, const char *what)
{
	char		buf[256];
	size_t		l = strlen(text);

	memset(buf, 0, sizeof(buf));
	memcpy(buf, text, l);
	return procfs_title_is(buf, l + 8, what);
}

static void
test_titles(void)
{
	CHECK(title_is("postgres: pg_tracer sampler", "pg_tracer sampler"));
	CHECK(title_is("postgres: pg_tracer sampler ", "pg_tracer sampler"));
	CHECK(title_is("postgres: main: pg_tracer sampler", "pg_tracer sampler"));
	CHECK(title_is("postgres: a: b: pg_tracer sampler", "pg_tracer sampler"));
	CHECK(!title_is("postgres: pg_tracer helper link", "pg_tracer sampler"));
	CHECK(!title_is("postgres: pg_tracer sampler 2", "pg_tracer sampler"));
	CHECK(!title_is("postgres: xpg_tracer sampler", "pg_tracer sampler"));
	CHECK(!title_is("postgres: main:pg_tracer sampler", "pg_tracer sampler"));
	CHECK(!title_is("pg_tracer sampler", "pg_tracer sampler"));	/* not a server's child */
	CHECK(!title_is("postgres: ", "pg_tracer sampler"));
	CHECK(!title_is("", "pg_tracer sampler"));
}

static void
test_configure(void)
{
	char		err[128];

	CHECK_INT(sampler_priority_nice(), SAMPLER_NICE_DEFAULT);
	CHECK_INT(sampler_priority_configure("-20", err, sizeof(err)), 0);
	CHECK_INT(sampler_priority_nice(), -20);
	CHECK_INT(sampler_priority_configure("0", err, sizeof(err)), 0);
	CHECK_INT(sampler_priority_nice(), 0);
	CHECK_INT(sampler_priority_configure("-5", err, sizeof(err)), 0);
	CHECK_INT(sampler_priority_nice(), -5);
	CHECK_INT(sampler_priority_configure("-21", err, sizeof(err)), -1);
	CHECK(strstr(err, "-21") != NULL && strstr(err, "-20 to 0") != NULL, "%s", err);
	CHECK_INT(sampler_priority_configure("5", err, sizeof(err)), -1);
	CHECK_INT(sampler_priority_configure("-", err, sizeof(err)), -1);
	CHECK_INT(sampler_priority_configure("--3", err, sizeof(err)), -1);
	CHECK_INT(sampler_priority_configure("", err, sizeof(err)), -1);
	CHECK_INT(sampler_priority_nice(), -5);	/* a refused value changes nothing */
}

static void
test_apply(void)
{
	static const char sampler[] = "postgres: pg_tracer sampler\0";
	static const char other[] = "postgres: checkpointer\0";
	char		err[128];
	pid_t		child = fork();
	int			r;

	if (child == 0)
	{
		pause();
		_exit(0);
	}
	CHECK(child > 0, "fork");
	CHECK_INT(sampler_priority_configure("-7", err, sizeof(err)), 0);
	CHECK_INT(sampler_priority_apply((uint32_t) child, other, sizeof(other), 104),
			  SAMPLER_PRIORITY_NONE);
	/* a cluster a person runs (uid 1000 and up): left alone */
	CHECK_INT(sampler_priority_apply((uint32_t) child, sampler, sizeof(sampler), 1000),
			  SAMPLER_PRIORITY_NOT_SYSTEM);
	/* nor one of root's, which cannot be a real cluster */
	CHECK_INT(sampler_priority_apply((uint32_t) child, sampler, sizeof(sampler), 0),
			  SAMPLER_PRIORITY_NOT_SYSTEM);
	errno = 0;
	CHECK_INT(getpriority(PRIO_PROCESS, (id_t) child), 0);
	r = sampler_priority_apply((uint32_t) child, sampler, sizeof(sampler), 104);
	if (geteuid() == 0)
	{
		CHECK_INT(r, 1);
		CHECK_INT(getpriority(PRIO_PROCESS, (id_t) child), -7);
	}
	else
		CHECK(r == -1 && (errno == EACCES || errno == EPERM), "refused: %d", r);
	CHECK_INT(sampler_priority_configure("0", err, sizeof(err)), 0);
	CHECK_INT(sampler_priority_apply((uint32_t) child, sampler, sizeof(sampler), 104),
			  SAMPLER_PRIORITY_NONE);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

int
main(void)
{
	test_titles();
	test_configure();
	test_apply();
	return UNIT_DONE("test_sampler_priority");
}
