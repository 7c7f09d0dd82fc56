/*
 * helper/status_cmd.c
 *	  `pg-tracer status [--runtime-dir DIR] [--format text|json]`: read
 *	  every segment in the runtime directory with the same reader the
 *	  extension uses, show each cluster's helper, postmaster, processes and
 *	  probe sets, and ping its control socket.
 *
 * Exit status: 0 when at least one segment belongs to a live helper
 * (RUNNING/WAITING, writer alive, updated within STALE_US either way of
 * the clock), 4 when none does but some segment could not be read (a user
 * neither root nor the cluster's owner: the segments are theirs alone, so
 * there is no telling), 3 otherwise.
 */
#include "status_cmd.h"
#include "trace_out.h"

#include "pgt_protocol.h"
#include "pgt_segment.h"
#include "procfs.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define STALE_US	(5 * 1000000LL)

/* Result of pinging a control socket. */
typedef struct ping_result
{
	int			ok;				/* 1 OK, 0 ERR, -1 failed */
	double		rtt_ms;
	char		text[PGT_PROTO_MAX_RESPONSE + 1];
} ping_result;

/*
 * mono_ms
 *		CLOCK_MONOTONIC in (fractional) milliseconds.
 */
static double
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec * 1000.0 + (double) ts.tv_nsec / 1e6;
}

/*
 * connect_socket
 *		A stream socket connected to the unix socket at path.  Returns it,
 *		or -1 with the reason in res->text.
 */
static int
connect_socket(const char *path, ping_result *res)
{
	struct sockaddr_un addr;
	int			fd;

	if (strlen(path) >= sizeof(addr.sun_path))
	{
		snprintf(res->text, sizeof(res->text), "socket path too long");
		return -1;
	}
	/* non-blocking: a full backlog (a daemon stuck) fails at once */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
	{
		snprintf(res->text, sizeof(res->text), "socket: %s", strerror(errno));
		return -1;
	}
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	memcpy(addr.sun_path, path, strlen(path) + 1);
	if (connect(fd, (struct sockaddr *) &addr, sizeof(addr)) < 0)
	{
		snprintf(res->text, sizeof(res->text), "cannot connect: %s",
				 errno == EAGAIN ? "the daemon's backlog is full (is it stuck?)" :
				 strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * read_answer
 *		Read from fd into buf (cap bytes, one kept free) until a newline,
 *		the end of the stream or the deadline (mono_ms).  Returns the bytes
 *		read, or -1 with the reason in res->text.
 */
static ssize_t
read_answer(int fd, char *buf, size_t cap, double deadline, ping_result *res)
{
	size_t		len = 0;
	int			r;

	while (len < cap - 1 && memchr(buf, '\n', len) == NULL)
	{
		struct pollfd pfd = {.fd = fd,.events = POLLIN};
		double		left = deadline - mono_ms();
		ssize_t		n;

		if (left <= 0 || (r = poll(&pfd, 1, (int) left + 1)) == 0)
		{
			snprintf(res->text, sizeof(res->text), "no answer within %d ms",
					 PGT_PROTO_TIMEOUT_MS);
			return -1;
		}
		if (r < 0)
		{
			if (errno == EINTR)
				continue;
			snprintf(res->text, sizeof(res->text), "poll: %s", strerror(errno));
			return -1;
		}
		n = read(fd, buf + len, cap - 1 - len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
		len += (size_t) n;
	}
	return (ssize_t) len;
}

/*
 * ping
 *		Send "PGT/1 PING" to the socket at path and wait up to the protocol
 *		timeout for the answer.
 */
static void
ping(const char *path, ping_result *res)
{
	static const char req[] = PGT_PROTO_TAG " PING\n";
	char		buf[PGT_PROTO_MAX_RESPONSE + 1];
	const char *text;
	size_t		tlen;
	ssize_t		len;
	double		t0 = mono_ms();
	int			fd;
	int			r;

	memset(res, 0, sizeof(*res));
	res->ok = -1;
	fd = connect_socket(path, res);
	if (fd < 0)
		return;
	if (send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) != (ssize_t) (sizeof(req) - 1))
	{
		snprintf(res->text, sizeof(res->text), "cannot send: %s", strerror(errno));
		goto cleanup;
	}
	len = read_answer(fd, buf, sizeof(buf), t0 + PGT_PROTO_TIMEOUT_MS, res);
	if (len < 0)
		goto cleanup;
	res->rtt_ms = mono_ms() - t0;
	r = pgt_parse_response(buf, (size_t) len, &text, &tlen);
	if (r < 0)
	{
		snprintf(res->text, sizeof(res->text), "malformed answer (%zd bytes)", len);
		goto cleanup;
	}
	res->ok = r;
	snprintf(res->text, sizeof(res->text), "%.*s", (int) tlen, text);

cleanup:
	close(fd);
}

/* Print s as a JSON string literal (UTF-8 kept, controls escaped). */
static void
json_str(const char *s)
{
	trace_json_string(stdout, s);
}

/*
 * writer_alive
 *		Does the writer pid exist (in our pid namespace) and is it not a
 *		zombie?
 */
static int
writer_alive(uint32_t pid)
{
	proc_stat	ps;

	if (pid == 0 || pid > INT32_MAX)
		return 0;
	if (kill((pid_t) pid, 0) < 0 && errno != EPERM)
		return 0;
	if (procfs_read_stat((pid_t) pid, &ps) == 0 && (ps.state == 'Z' || ps.state == 'X'))
		return 0;
	return 1;
}

/*
 * state_name
 *		Header state as a word.
 */
static const char *
state_name(uint32_t s)
{
	switch (s)
	{
		case PGT_WRITER_RUNNING:
			return "running";
		case PGT_WRITER_STOPPED:
			return "stopped";
		case PGT_WRITER_WAITING:
			return "waiting";
	}
	return "unknown";
}

/*
 * cmp_str
 *		qsort comparator of C strings.
 */
static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* What show_one() found of one segment, for the printers. */
typedef struct segment_status
{
	const char *path;
	const struct pgt_seg_header *hdr;
	pgt_seg_view view;
	char		sock[PATH_MAX];
	char		data_dir[PGT_DATADIR_LEN];
	char		version[PGT_VERSION_LEN];
	ping_result ping;
	double		age;			/* seconds since the helper's last copy */
	int			alive;			/* the writer process exists */
	int			live;			/* ... and publishes */
} segment_status;

/*
 * print_unreadable
 *		A segment that could not be read: its path, the result and why.
 */
static void
print_unreadable(const status_opts *o, const char *path, int first,
				 pgt_seg_result r, const char *err)
{
	if (o->json)
	{
		printf("%s\n    {\"segment\": ", first ? "" : ",");
		json_str(path);
		printf(", \"error\": ");
		json_str(pgt_seg_result_name(r));
		printf(", \"detail\": ");
		json_str(err);
		printf("}");
	}
	else
		printf("segment %s: %s: %s\n\n", path, pgt_seg_result_name(r), err);
}

/* A probe-set row's text fields, each NUL-terminated. */
typedef struct probeset_strings
{
	char		name[sizeof(((struct pgt_probeset_entry *) 0)->name) + 1];
	char		mech[sizeof(((struct pgt_probeset_entry *) 0)->mechanism) + 1];
	char		reason[sizeof(((struct pgt_probeset_entry *) 0)->reason) + 1];
} probeset_strings;

/*
 * copy_probeset_strings
 *		The row's fixed-width fields as C strings (the segment's may fill
 *		their field without a NUL).
 */
static void
copy_probeset_strings(const struct pgt_probeset_entry *e, probeset_strings *t)
{
	pgt_copy_string(t->name, sizeof(t->name), e->name, sizeof(e->name));
	pgt_copy_string(t->mech, sizeof(t->mech), e->mechanism, sizeof(e->mechanism));
	pgt_copy_string(t->reason, sizeof(t->reason), e->reason, sizeof(e->reason));
}

/*
 * print_probesets_json
 *		The segment's probe-set table as a JSON array.
 */
static void
print_probesets_json(const pgt_seg_view *v)
{
	uint32_t	i;

	printf("[");
	for (i = 0; i < pgt_view_count(v, PGT_SEC_PROBESETS); i++)
	{
		const struct pgt_probeset_entry *e = pgt_view_probeset(v, i);
		probeset_strings t;

		copy_probeset_strings(e, &t);
		printf("%s{\"name\": ", i ? ", " : "");
		json_str(t.name);
		printf(", \"state\": \"%s\", \"events\": %" PRIu64 ", \"mechanism\": ",
			   pgt_probe_state_name(e->state), e->events);
		json_str(t.mech);
		printf(", \"reason\": ");
		json_str(t.reason);
		printf("}");
	}
	printf("]");
}

/*
 * print_backends_json
 *		The segment's backend table as a JSON array.
 */
static void
print_backends_json(const pgt_seg_view *v)
{
	uint32_t	i;

	printf("[");
	for (i = 0; i < pgt_view_count(v, PGT_SEC_BACKENDS); i++)
	{
		const struct pgt_backend_entry *b = pgt_view_backend(v, i);
		char		type[sizeof(b->backend_type) + 1];

		pgt_copy_string(type, sizeof(type), b->backend_type, sizeof(b->backend_type));
		printf("%s{\"pid\": %u, \"role\": %u, \"backend_type\": ", i ? ", " : "",
			   b->pid, b->role);
		json_str(type);
		printf(", \"started_us\": %" PRId64 ", \"attached_us\": %" PRId64
			   ", \"syscalls\": %" PRIu64 "}",
			   b->started_us, b->attached_us, b->syscalls);
	}
	printf("]");
}

/*
 * print_json
 *		One segment as a JSON object (an element of status's array).
 */
static void
print_json(const segment_status *s, int first)
{
	const struct pgt_seg_header *h = s->hdr;

	printf("%s\n    {\"segment\": ", first ? "" : ",");
	json_str(s->path);
	printf(", \"data_dir\": ");
	json_str(s->data_dir);
	printf(", \"helper_version\": ");
	json_str(s->version);
	printf(", \"writer_pid\": %u, \"writer_alive\": %s, \"live\": %s, \"state\": \"%s\"",
		   h->writer_pid, s->alive ? "true" : "false", s->live ? "true" : "false",
		   state_name(h->state));
	printf(", \"generation\": %" PRIu64 ", \"last_update_age_s\": %.3f"
		   ", \"attached_us\": %" PRId64 ", \"postmaster_pid\": %u"
		   ", \"postmaster_start_us\": %" PRId64,
		   h->generation, s->age, h->attached_us, h->postmaster_pid,
		   h->postmaster_start_us);
	printf(", \"ping\": {\"ok\": %s, \"rtt_ms\": %.3f, \"text\": ",
		   s->ping.ok == 1 ? "true" : "false", s->ping.rtt_ms);
	json_str(s->ping.text);
	printf("}, \"probe_sets\": ");
	print_probesets_json(&s->view);
	printf(", \"backends\": ");
	print_backends_json(&s->view);
	printf("}");
}

/*
 * print_tables_text
 *		The segment's probe sets and backends, a line each.
 */
static void
print_tables_text(const pgt_seg_view *v)
{
	uint32_t	i;

	printf("  probe sets\n");
	for (i = 0; i < pgt_view_count(v, PGT_SEC_PROBESETS); i++)
	{
		const struct pgt_probeset_entry *e = pgt_view_probeset(v, i);
		probeset_strings t;

		copy_probeset_strings(e, &t);
		printf("    %-15s %-11s events %-10" PRIu64 " %s\n", t.name,
			   pgt_probe_state_name(e->state), e->events, t.reason);
	}
	printf("  backends     %u\n", pgt_view_count(v, PGT_SEC_BACKENDS));
	for (i = 0; i < pgt_view_count(v, PGT_SEC_BACKENDS); i++)
	{
		const struct pgt_backend_entry *b = pgt_view_backend(v, i);
		char		type[sizeof(b->backend_type) + 1];

		pgt_copy_string(type, sizeof(type), b->backend_type, sizeof(b->backend_type));
		printf("    %8u  %-28s syscalls %" PRIu64 "\n", b->pid, type, b->syscalls);
	}
}

/*
 * print_text
 *		One segment as a block of text, a blank line after it.
 */
static void
print_text(const segment_status *s)
{
	const struct pgt_seg_header *h = s->hdr;

	printf("cluster %s\n", s->data_dir);
	printf("  segment      %s\n", s->path);
	printf("  helper       pid %u (%s), version %s, state %s, generation %" PRIu64 "\n",
		   h->writer_pid, s->alive ? "alive" : "not running", s->version,
		   state_name(h->state), h->generation);
	printf("  last update  %.1f s ago%s\n", s->age, s->live ? "" : " (not live)");
	if (h->postmaster_pid != 0)
		printf("  postmaster   pid %u\n", h->postmaster_pid);
	else
		printf("  postmaster   none\n");
	if (s->ping.ok == 1)
		printf("  socket       %s: OK %s (%.2f ms)\n", s->sock, s->ping.text,
			   s->ping.rtt_ms);
	else
		printf("  socket       %s: %s%s\n", s->sock, s->ping.ok == 0 ? "ERR " : "",
			   s->ping.text);
	print_tables_text(&s->view);
	printf("\n");
}

/*
 * show_one
 *		Read and print one segment.  Returns 1 when it belongs to a live
 *		helper, -1 when it could not be read (open or read failed: whether
 *		its helper lives is unknown), else 0.
 */
static int
show_one(const status_opts *o, const char *path, int first)
{
	segment_status s;
	pgt_seg_result r;
	char		err[512];
	void	   *buf = NULL;
	size_t		len = 0;
	const struct pgt_seg_header *h;

	memset(&s, 0, sizeof(s));
	r = pgt_segment_snapshot(path, pgt_alloc_malloc, NULL, &buf, &len, &s.view,
							 err, sizeof(err));
	if (r != PGT_SEG_OK)
	{
		print_unreadable(o, path, first, r, err);
		free(buf);
		return r == PGT_SEG_IO_ERROR ? -1 : 0;
	}
	h = s.hdr = s.view.hdr;
	s.path = path;
	pgt_copy_utf8(s.data_dir, sizeof(s.data_dir), h->data_dir, sizeof(h->data_dir));
	pgt_copy_string(s.version, sizeof(s.version), h->helper_version,
					sizeof(h->helper_version));
	s.alive = writer_alive(h->writer_pid);
	s.age = (double) (procfs_realtime_us() - h->last_update_us) / 1e6;
	s.live = s.alive &&
		(h->state == PGT_WRITER_RUNNING || h->state == PGT_WRITER_WAITING) &&
		s.age * 1e6 < STALE_US && s.age * 1e6 > -STALE_US;
	s.ping.ok = -1;
	snprintf(s.sock, sizeof(s.sock), "%.*s.sock", (int) (strlen(path) - 4), path);
	if (s.alive && h->state != PGT_WRITER_STOPPED)
		ping(s.sock, &s.ping);
	else
		snprintf(s.ping.text, sizeof(s.ping.text), "helper not running");

	if (o->json)
		print_json(&s, first);
	else
		print_text(&s);
	free(buf);
	return s.live;
}

/*
 * print_no_dir
 *		Say that the runtime directory cannot be read (errno tells why).
 */
static void
print_no_dir(const status_opts *o)
{
	const char *e = strerror(errno);

	if (o->json)
	{
		printf("{\"runtime_dir\": ");
		json_str(o->runtime_dir);
		printf(", \"clusters\": [], \"live_helpers\": 0, \"error\": ");
		json_str(e);
		printf("}\n");
	}
	else
		printf("no pg-tracer runtime directory %s: %s\n", o->runtime_dir, e);
}

/*
 * list_segments
 *		The paths of the segments (pgt-*.seg) in dir, sorted, into *names.
 *		Returns their count (as many as memory allowed).
 */
static size_t
list_segments(DIR *dir, const char *runtime_dir, char ***names)
{
	struct dirent *de;
	size_t		n = 0;
	size_t		cap = 0;

	*names = NULL;
	while ((de = readdir(dir)) != NULL)
	{
		size_t		l = strlen(de->d_name);
		char		path[PATH_MAX];

		if (l < 5 || strcmp(de->d_name + l - 4, ".seg") != 0 ||
			strncmp(de->d_name, "pgt-", 4) != 0)
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", runtime_dir, de->d_name) >= (int) sizeof(path))
			continue;
		if (n == cap)
		{
			size_t		ncap = cap ? cap * 2 : 8;
			char	  **nn = realloc(*names, ncap * sizeof(*nn));

			if (nn == NULL)
				break;
			*names = nn;
			cap = ncap;
		}
		(*names)[n] = strdup(path);
		if ((*names)[n] != NULL)
			n++;
	}
	if (n > 1)
		qsort(*names, n, sizeof(**names), cmp_str);
	return n;
}

/*
 * status_run
 *		`pg-tracer status`.  Returns the exit status: 0 when a helper is
 *		live, 4 when none is but a segment could not be read, 3 when none
 *		is (or the runtime directory cannot be read).
 */
int
status_run(const status_opts *o)
{
	char	  **names;
	size_t		n;
	DIR		   *dir;
	int			live = 0;
	int			unreadable = 0;
	size_t		i;

	dir = opendir(o->runtime_dir);
	if (dir == NULL)
	{
		print_no_dir(o);
		return 3;
	}
	n = list_segments(dir, o->runtime_dir, &names);
	closedir(dir);

	if (o->json)
	{
		printf("{\"runtime_dir\": ");
		json_str(o->runtime_dir);
		printf(", \"clusters\": [");
	}
	else if (n == 0)
		printf("no segments in %s: no pg-tracer daemon has run here\n", o->runtime_dir);
	for (i = 0; i < n; i++)
	{
		int			one = show_one(o, names[i], i == 0);

		live += one > 0;
		unreadable += one < 0;
		free(names[i]);
	}
	free(names);
	if (o->json)
		printf("%s], \"live_helpers\": %d, \"unreadable\": %d}\n", n ? "\n  " : "",
			   live, unreadable);
	if (live == 0 && unreadable > 0)
		fprintf(stderr, "pg-tracer status: %d segment%s could not be read: run as root or "
				"as the cluster's owner\n", unreadable, unreadable == 1 ? "" : "s");
	return live > 0 ? 0 : unreadable > 0 ? 4 : 3;
}
