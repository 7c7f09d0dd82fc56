/*
 * test/unit/test_control_server.c
 *	  The control socket (helper/control_server.c): responses to valid and
 *	  invalid requests (pure control_respond; PROBERESET with a stand-in
 *	  hook), then a real socket driven
 *	  through epoll: a PING round trip, an overlong request, a client that
 *	  never finishes its line (deadline), the connection limit, and the
 *	  socket file's mode.  Also the tracefs mount-table check.
 */
#include "control_server.h"
#include "pgt_protocol.h"
#include "tracefs.h"
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static control_info test_info = {
	.version = "1.2.3",.generation = 5,.writer_pid = 77,.attached = 1,
	.postmaster_pid = 4242,.postmaster_host_pid = 14242,.backends = 9,
	.peer_member = 1,.peer_pid = 14243
};

/* control_respond on a C string. */
static const char *
answer(const char *req)
{
	static char out[PGT_PROTO_MAX_RESPONSE + 1];

	control_respond(req, strlen(req), &test_info, out, sizeof(out));
	return out;
}

static void
test_respond(void)
{
	CHECK_STR(answer("PGT/1 PING\n"), "PGT/1 OK pong version=1.2.3 generation=5 pid=77\n");
	CHECK_STR(answer("PGT/1 STATUS\n"),
			  "PGT/1 OK attached=1 postmaster=4242 backends=9 generation=5\n");
	CHECK_STR(answer("PGT/1 PING extra\n"), "PGT/1 ERR bad-argument PING takes no arguments\n");
	CHECK_STR(answer("PGT/1 ESCALATE 10\n"),
			  "PGT/1 ERR bad-argument usage: ESCALATE <seconds> <who> [reason]\n");
	CHECK_STR(answer("PGT/1 FROBNICATE 10\n"), "PGT/1 ERR unknown-verb FROBNICATE\n");
	CHECK_CONTAINS(answer("PGT/2 PING\n"), "PGT/1 ERR bad-request ");
	CHECK_CONTAINS(answer("PGT/1 PING"), "PGT/1 ERR bad-request ");
	CHECK_CONTAINS(answer("PGT/1  PING\n"), "PGT/1 ERR bad-request ");
	CHECK_CONTAINS(answer("PGT/1 PI\x01NG\n"), "PGT/1 ERR bad-request ");
	/* every response is one line, parseable by the client side */
	{
		const char *r = answer("PGT/1 STATUS\n");
		const char *text;
		size_t		tlen;

		CHECK_INT(pgt_parse_response(r, strlen(r), &text, &tlen), 1);
		r = answer("garbage\n");
		CHECK_INT(pgt_parse_response(r, strlen(r), &text, &tlen), 0);
	}
}

/* a PROBERESET hook that records its argument */
static void *reset_seen;

static size_t
fake_reset(void *arg, int *nsets)
{
	reset_seen = arg;
	*nsets = 7;
	return 1234;
}

/* PROBERESET: arguments refused, a detached cluster refused, else the hook */
static void
test_probereset(void)
{
	static int	arg;
	control_info saved = test_info;

	CHECK_STR(answer("PGT/1 PROBERESET\n"),
			  "PGT/1 ERR unavailable the cluster is not attached\n");	/* no hook */
	test_info.reset = fake_reset;
	test_info.reset_arg = &arg;
	CHECK_STR(answer("PGT/1 PROBERESET now\n"),
			  "PGT/1 ERR bad-argument PROBERESET takes no arguments\n");
	CHECK(reset_seen == NULL);
	test_info.attached = 0;
	CHECK_STR(answer("PGT/1 PROBERESET\n"),
			  "PGT/1 ERR unavailable the cluster is not attached\n");
	CHECK(reset_seen == NULL);
	test_info.attached = 1;
	CHECK_STR(answer("PGT/1 PROBERESET\n"), "PGT/1 OK sets=7 rows=1234\n");
	CHECK(reset_seen == &arg);
	test_info = saved;
}

/*
 * Requests that change state come from root or the cluster's own processes
 * only; a peer of the owner's uid that is neither may still read.
 */
static void
test_membership(void)
{
	control_info saved = test_info;

	test_info.peer_member = 0;
	CHECK_STR(answer("PGT/1 PROBERESET\n"),
			  "PGT/1 ERR denied pid 14243 is not a process of this cluster "
			  "(PROBERESET takes root or the cluster's own processes)\n");
	CHECK_CONTAINS(answer("PGT/1 ESCALATE 10 alice\n"), "PGT/1 ERR denied pid 14243 ");
	CHECK_CONTAINS(answer("PGT/1 DEESCALATE alice\n"), "PGT/1 ERR denied pid 14243 ");
	CHECK_CONTAINS(answer("PGT/1 EXACTRESET\n"), "PGT/1 ERR denied pid 14243 ");
	CHECK_CONTAINS(answer("PGT/1 PING\n"), "PGT/1 OK pong");
	CHECK_CONTAINS(answer("PGT/1 STATUS\n"), "PGT/1 OK attached=1");
	CHECK(strstr(answer("PGT/1 BUDGET\n"), "not a process of this cluster") == NULL);

	/*
	 * Detached (a postmaster restarting): nobody but root is a member, as
	 * the server derives it, and each verb gives its own harmless answer
	 * rather than a denial the SQL functions would report as a privilege
	 * error.
	 */
	test_info.attached = 0;
	test_info.postmaster_host_pid = 0;
	test_info.peer_member = control_peer_member(1000, getpid(), 0);
	CHECK_STR(answer("PGT/1 PROBERESET\n"),
			  "PGT/1 ERR unavailable the cluster is not attached\n");
	CHECK_CONTAINS(answer("PGT/1 ESCALATE 10 alice\n"),
				   "PGT/1 ERR unavailable the cluster is not attached");
	CHECK_CONTAINS(answer("PGT/1 DEESCALATE alice\n"), "PGT/1 OK closed=0");
	CHECK_CONTAINS(answer("PGT/1 EXACTRESET\n"), "PGT/1 OK reset=0");
	test_info = saved;

	/* who is a member: root; the postmaster; its children; no one else */
	CHECK_INT(control_peer_member(0, 1, 0), 1);
	CHECK_INT(control_peer_member(1000, getpid(), (uint32_t) getpid()), 1);
	CHECK_INT(control_peer_member(1000, getpid(), (uint32_t) getppid()), 1);
	CHECK_INT(control_peer_member(1000, getpid(), 0), 0);
	if (getppid() != 1)
		CHECK_INT(control_peer_member(1000, getpid(), 1), 0);
	CHECK_INT(control_peer_member(1000, 0, (uint32_t) getppid()), 0);
}

static void
info_fn(void *arg, control_info *info)
{
	*info = test_info;
}

/* Connect a client to path. */
static int
client(const char *path)
{
	struct sockaddr_un a;
	int			fd = socket(AF_UNIX, SOCK_STREAM, 0);

	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (fd >= 0 && connect(fd, (struct sockaddr *) &a, sizeof(a)) < 0)
	{
		close(fd);
		return -1;
	}
	return fd;
}

/* Run the server's side of the epoll loop for a while. */
static void
pump(control_server *s, int epfd, int rounds)
{
	struct epoll_event ev[16];
	int			i;
	int			n;

	while (rounds-- > 0)
	{
		n = epoll_wait(epfd, ev, 16, 20);
		for (i = 0; i < n; i++)
		{
			ev_handle  *h = ev[i].data.ptr;

			if (h->kind == EV_CTL_LISTEN)
				control_server_on_listen(h->owner);
			else if (h->kind == EV_CTL_CONN)
				control_server_on_conn(h->owner, h->index, ev[i].events);
		}
	}
}

/* Read what the server answered on fd (non-blocking: whatever is there). */
static const char *
read_answer(int fd)
{
	static char buf[PGT_PROTO_MAX_RESPONSE + 1];
	ssize_t		n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);

	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/*
 * answer_to_nobody
 *		As root: what the server answers a PING from a process of another
 *		uid (nobody, 65534), connected from a child that dropped root
 *		before connect(), which is when SO_PEERCRED is taken.  The server
 *		runs here meanwhile.  The answer goes to ans (empty if none).
 */
static void
answer_to_nobody(control_server *s, int epfd, const char *path, char *ans, size_t anslen)
{
	int			p[2];
	pid_t		child;
	ssize_t		n;
	int			rounds;

	ans[0] = '\0';
	if (pipe(p) != 0 || (child = fork()) < 0)
		return;
	if (child == 0)
	{
		int			fd;
		char		buf[PGT_PROTO_MAX_RESPONSE + 1] = "";

		close(p[0]);
		if (unit_drop_root() == 0 && (fd = client(path)) >= 0 &&
			write(fd, "PGT/1 PING\n", 11) == 11)
		{
			n = read(fd, buf, sizeof(buf) - 1);	/* blocks until the answer */
			buf[n > 0 ? n : 0] = '\0';
		}
		else
			snprintf(buf, sizeof(buf), "no connection: %s", strerror(errno));
		_exit(write(p[1], buf, strlen(buf)) < 0);
	}
	close(p[1]);
	for (rounds = 0; rounds < 100 && waitpid(child, NULL, WNOHANG) == 0; rounds++)
		pump(s, epfd, 1);
	if (rounds == 100)
	{
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	n = read(p[0], ans, anslen - 1);
	ans[n > 0 ? n : 0] = '\0';
	close(p[0]);
}

static void
test_socket(void)
{
	char		dir[] = "/tmp/pgt_unit_ctl.XXXXXX";
	char		path[128];
	char		err[256];
	control_server s;
	struct stat st;
	int			epfd = epoll_create1(0);
	int			fds[CTL_MAX_CONNS + 2];
	int			fd;
	int			i;
	int			open_slots;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/pgt-1-2.sock", dir);
	CHECK_INT(control_server_open(&s, path, getuid(), getgid(), epfd, info_fn, NULL,
								  err, sizeof(err)), 0);
	CHECK_INT(stat(path, &st), 0);
	CHECK(S_ISSOCK(st.st_mode));
	CHECK_INT(st.st_mode & 0777, 0600);

	/* a round trip */
	fd = client(path);
	CHECK(fd >= 0);
	CHECK_INT(write(fd, "PGT/1 PING\n", 11), 11);
	pump(&s, epfd, 3);
	CHECK_STR(read_answer(fd), "PGT/1 OK pong version=1.2.3 generation=5 pid=77\n");
	close(fd);

	/* a request in two pieces */
	fd = client(path);
	CHECK_INT(write(fd, "PGT/1 STA", 9), 9);
	pump(&s, epfd, 2);
	CHECK_STR(read_answer(fd), "");
	CHECK_INT(write(fd, "TUS\n", 4), 4);
	pump(&s, epfd, 2);
	CHECK_STR(read_answer(fd), "PGT/1 OK attached=1 postmaster=4242 backends=9 generation=5\n");
	close(fd);

	/*
	 * A client that gave up (closed) before its request was read: dropped,
	 * not carried out.  One that only shut its writing side still gets its
	 * answer.
	 */
	fd = client(path);
	CHECK_INT(write(fd, "PGT/1 PROBERESET\n", 17), 17);
	close(fd);
	{
		uint64_t	served = s.served;

		pump(&s, epfd, 3);
		CHECK(s.served == served && s.abandoned == 1, "served %llu abandoned %llu",
			  (unsigned long long) (s.served - served), (unsigned long long) s.abandoned);
	}
	fd = client(path);
	CHECK_INT(write(fd, "PGT/1 PING\n", 11), 11);
	CHECK_INT(shutdown(fd, SHUT_WR), 0);
	pump(&s, epfd, 3);
	CHECK_STR(read_answer(fd), "PGT/1 OK pong version=1.2.3 generation=5 pid=77\n");
	close(fd);

	/* overlong: answered as soon as the buffer is full */
	fd = client(path);
	{
		char		big[600];

		memset(big, 'A', sizeof(big));
		CHECK_INT(write(fd, big, sizeof(big)), sizeof(big));
	}
	pump(&s, epfd, 3);
	CHECK_STR(read_answer(fd), "PGT/1 ERR bad-request request longer than 256 bytes\n");
	close(fd);

	/* a slow client is dropped at its deadline, others still served */
	fd = client(path);
	CHECK_INT(write(fd, "PGT/1 PI", 8), 8);
	pump(&s, epfd, 2);
	control_server_sweep(&s, control_now_ms() + PGT_PROTO_TIMEOUT_MS + 1);
	CHECK_CONTAINS(read_answer(fd), "ERR bad-request no request line within");
	close(fd);

	/*
	 * The connection limit: the connections past it wait in the backlog
	 * (the socket leaves the loop), and are served as slots free up.
	 */
	for (i = 0; i < CTL_MAX_CONNS + 2; i++)
		fds[i] = client(path);
	pump(&s, epfd, 3);
	open_slots = 0;
	for (i = 0; i < CTL_MAX_CONNS; i++)
		open_slots += s.conns[i].fd >= 0;
	CHECK_INT(open_slots, CTL_MAX_CONNS);
	CHECK_INT(s.paused, 1);
	CHECK_INT(write(fds[CTL_MAX_CONNS + 1], "PGT/1 PING\n", 11), 11);
	pump(&s, epfd, 2);
	CHECK_STR(read_answer(fds[CTL_MAX_CONNS + 1]), "");
	for (i = 0; i < CTL_MAX_CONNS + 2; i++)
	{
		if (i != CTL_MAX_CONNS + 1)
			CHECK_INT(write(fds[i], "PGT/1 PING\n", 11), 11);
		pump(&s, epfd, 2);
		CHECK_CONTAINS(read_answer(fds[i]), "PGT/1 OK pong");
	}
	CHECK_INT(s.paused, 0);
	for (i = 0; i < CTL_MAX_CONNS + 2; i++)
		close(fds[i]);
	pump(&s, epfd, 2);

	/*
	 * No descriptor left for accept(): the socket pauses instead of waking
	 * the loop again and again, and a sweep tries again once there are.
	 */
	{
		struct rlimit saved;
		struct rlimit low;
		int			spare = open("/dev/null", O_RDONLY);

		fd = client(path);
		CHECK(fd >= 0 && spare >= 0);
		CHECK_INT(getrlimit(RLIMIT_NOFILE, &saved), 0);
		low = saved;
		low.rlim_cur = (rlim_t) spare;	/* the lowest free descriptor and up */
		close(spare);
		CHECK_INT(setrlimit(RLIMIT_NOFILE, &low), 0);
		pump(&s, epfd, 2);
		CHECK_INT(s.fd_short, 1);
		CHECK_INT(s.paused, 1);
		CHECK_INT(setrlimit(RLIMIT_NOFILE, &saved), 0);
		control_server_sweep(&s, control_now_ms());
		CHECK_INT(write(fd, "PGT/1 PING\n", 11), 11);
		pump(&s, epfd, 3);
		CHECK_CONTAINS(read_answer(fd), "PGT/1 OK pong");
		CHECK_INT(s.fd_short, 0);
		close(fd);
	}

	/* a new owner: the old one is refused even when the chown fails */
	CHECK_INT(control_server_set_owner(&s, getuid() + 1, getgid()), getuid() == 0 ? 0 : -1);
	CHECK(s.owner_uid == getuid() + 1);
	if (getuid() != 0)
	{
		fd = client(path);
		CHECK_INT(write(fd, "PGT/1 PING\n", 11), 11);
		pump(&s, epfd, 3);
		CHECK_CONTAINS(read_answer(fd), "PGT/1 ERR denied uid");
		close(fd);
	}
	else
	{
		char		ans[PGT_PROTO_MAX_RESPONSE + 1];

		/*
		 * Root may always ask: a peer of a third uid instead, on a socket
		 * its owner opened to all (as a careless chmod would), so that
		 * only the credentials check stands between them.
		 */
		CHECK_INT(chmod(dir, 0711), 0);
		CHECK_INT(chmod(path, 0666), 0);
		answer_to_nobody(&s, epfd, path, ans, sizeof(ans));
		CHECK(strstr(ans, "PGT/1 ERR denied uid 65534") != NULL, "a foreign uid's PING: %s", ans);
		CHECK_INT(chmod(path, 0600), 0);
	}
	CHECK_INT(control_server_set_owner(&s, getuid(), getgid()), 0);

	/* a stale socket file is replaced, a regular file is not */
	control_server_close(&s);
	CHECK(access(path, F_OK) != 0);
	CHECK_INT(control_server_open(&s, path, getuid(), getgid(), epfd, info_fn, NULL,
								  err, sizeof(err)), 0);
	close(s.listen_fd);
	s.listen_fd = -1;
	CHECK_INT(control_server_open(&s, path, getuid(), getgid(), epfd, info_fn, NULL,
								  err, sizeof(err)), 0);
	control_server_close(&s);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	close(fd);
	CHECK_INT(control_server_open(&s, path, getuid(), getgid(), epfd, info_fn, NULL,
								  err, sizeof(err)), -1);
	CHECK_CONTAINS(err, "not a socket");
	unlink(path);
	rmdir(dir);
	close(epfd);
}

static void
test_tracefs_table(void)
{
	const char *m1 = "sysfs /sys sysfs rw 0 0\nnodev /sys/kernel/tracing tracefs rw 0 0\n";
	const char *m2 = "sysfs /sys sysfs rw 0 0\ndebugfs /sys/kernel/debug debugfs rw 0 0\n";
	const char *m3 = "nodev /sys/kernel/tracing/x tracefs rw 0 0\n";

	CHECK(tracefs_is_mounted(m1, "/sys/kernel/tracing"));
	CHECK(!tracefs_is_mounted(m2, "/sys/kernel/tracing"));
	CHECK(!tracefs_is_mounted(m3, "/sys/kernel/tracing"));
	CHECK(!tracefs_is_mounted("", "/sys/kernel/tracing"));
}

int
main(void)
{
	test_respond();
	test_probereset();
	test_membership();
	test_socket();
	test_tracefs_table();
	return UNIT_DONE("test_control_server");
}
