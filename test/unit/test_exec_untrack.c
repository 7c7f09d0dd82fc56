/*
 * test/unit/test_exec_untrack.c
 *	  The foundation's exec program (bpf/pg_tracer.bpf.c), in the real
 *	  kernel: a tracked process that execs another program leaves the pid
 *	  filter before anything reads its new memory (it could be a set-uid
 *	  program, and the query-id slots point into the old one's), while a
 *	  tracked process that does not exec stays.  Needs root, for BPF:
 *	  without it the program says so and checks nothing.
 */
#include "bpf_probes.h"
#include "log.h"
#include "unit.h"

#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * in_filter
 *		Is pid in `tracked` now?
 */
static bool
in_filter(bpf_probes *p, pid_t pid)
{
	const tracked_row *rows = NULL;
	size_t		n = 0;
	size_t		i;

	if (bpf_probes_snapshot(p, &rows, &n) < 0)
		return false;
	for (i = 0; i < n; i++)
		if (rows[i].pid == (uint32_t) pid)
			return true;
	return false;
}

/*
 * child_waiting
 *		A child that waits for a byte on its own pipe, then execs sleep when
 *		exec_it, or just waits to be killed.  Returns its pid; *go, the
 *		pipe's write end.
 */
static pid_t
child_waiting(bool exec_it, int *go)
{
	int			fds[2];
	pid_t		pid;
	char		c;

	if (pipe(fds) != 0)
		return -1;
	pid = fork();
	if (pid == 0)
	{
		close(fds[1]);
		if (read(fds[0], &c, 1) == 1 && exec_it)
			execl("/bin/sleep", "sleep", "30", (char *) NULL);
		pause();
		_exit(0);
	}
	close(fds[0]);
	*go = fds[1];
	return pid;
}

/*
 * wait_not_in_filter
 *		Poll for up to 2 s until pid has left `tracked`.
 */
static bool
wait_not_in_filter(bpf_probes *p, pid_t pid)
{
	struct timespec ts = {0, 10 * 1000 * 1000};
	int			i;

	for (i = 0; i < 200; i++)
	{
		if (!in_filter(p, pid))
			return true;
		nanosleep(&ts, NULL);
	}
	return false;
}

int
main(void)
{
	bpf_probes p;
	pid_t		stays;
	pid_t		execs;
	int			go_stays = -1;
	int			go_execs = -1;
	uint64_t	now;

	if (geteuid() != 0)
	{
		printf("test_exec_untrack: skipped: loading BPF needs root\n");
		return 0;
	}
	log_set_level(LOG_LEVEL_ERROR);
	CHECK(bpf_probes_start(&p, 0, 0, 0) == 0, "the foundation loads");
	stays = child_waiting(false, &go_stays);
	execs = child_waiting(true, &go_execs);
	CHECK(stays > 0 && execs > 0, "two children");
	now = bpf_probes_boot_ns();
	CHECK_INT(bpf_probes_track(&p, (uint32_t) stays, (uint32_t) getpid(), 0, now), 1);
	CHECK_INT(bpf_probes_track(&p, (uint32_t) execs, (uint32_t) getpid(), 0, now), 1);
	CHECK(in_filter(&p, stays) && in_filter(&p, execs), "both are tracked");
	CHECK(write(go_execs, "x", 1) == 1 && write(go_stays, "x", 1) == 1, "go");
	CHECK(wait_not_in_filter(&p, execs), "the child that exec'd sleep left the filter");
	CHECK(in_filter(&p, stays), "the child that did not exec is still tracked");
	kill(stays, SIGKILL);
	kill(execs, SIGKILL);
	waitpid(stays, NULL, 0);
	waitpid(execs, NULL, 0);
	CHECK(wait_not_in_filter(&p, stays), "and leaves it at its exit");
	bpf_probes_stop(&p);
	return UNIT_DONE("test_exec_untrack");
}
