/*
 * bench/syscall_cost.c
 *	  ns per system call of an ordinary process (not PostgreSQL's: what
 *	  pgbench and every other task on the host pay for host-wide hooks):
 *	  getppid (no probe set times it), read of an empty non-blocking pipe
 *	  (a file call the syscall set times) and recv on an empty non-blocking
 *	  socket (a socket call the network set times).  Prints the three means.
 *
 *	  syscall_cost [CALLS per kind (1000000)]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int
main(int argc, char **argv)
{
	long		n = argc > 1 ? atol(argv[1]) : 1000000;
	int			p[2];
	int			sv[2];
	char		buf[8];
	double		t0, t1, t2, t3;

	if (n <= 0 || pipe2(p, O_NONBLOCK) != 0 ||
		socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0)
	{
		perror("syscall_cost");
		return 1;
	}
	t0 = now_ns();
	for (long i = 0; i < n; i++)
		(void) syscall(SYS_getppid);
	t1 = now_ns();
	for (long i = 0; i < n; i++)
		if (read(p[0], buf, sizeof(buf)) >= 0)
			return 1;
	t2 = now_ns();
	for (long i = 0; i < n; i++)
		if (recv(sv[0], buf, sizeof(buf), 0) >= 0)
			return 1;
	t3 = now_ns();
	printf("%.1f %.1f %.1f\n", (t1 - t0) / n, (t2 - t1) / n, (t3 - t2) / n);
	return 0;
}
