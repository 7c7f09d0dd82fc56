/*-------------------------------------------------------------------------
 *
 * control_client.c
 *	  Client side of the helper's control socket (see pgt_protocol.h): one
 *	  request line, one response line, one connection each.
 *
 * pgt_control_request() raises no error of its own: it returns a
 * PgtCtlResult and explains failures in the caller's buffer, so any process
 * may use it.  Only a pending cancel or termination is let through
 * (CHECK_FOR_INTERRUPTS, once its socket is closed).
 * pgt_control_request_or_error() is the SQL functions' wrapper that turns
 * every failure into an ereport(ERROR) with an errcode and a hint.
 *
 * The whole exchange is bounded by PGT_PROTO_TIMEOUT_MS.  The socket is
 * non-blocking and waited on with poll(); it is closed on every path
 * before returning, and nothing in between can raise an error, so no file
 * descriptor leaks on a longjmp.
 *
 * Locking: none.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "miscadmin.h"

#include "pg_tracer.h"
#include "pgt_protocol.h"

static int	ctl_remaining_ms(const struct timespec *deadline);
static bool ctl_request_is_valid(const char *verb);
static PgtCtlResult ctl_connect(int *fdp, const struct timespec *deadline,
								char *err, size_t errlen);
static PgtCtlResult ctl_connect_once(int *fdp, char *err, size_t errlen);
static bool ctl_cancelled(void);
static PgtCtlResult ctl_send(int fd, const char *line, size_t len,
							 const struct timespec *deadline,
							 char *err, size_t errlen);
static PgtCtlResult ctl_recv_line(int fd, char *buf, size_t bufsize,
								  size_t *lenp,
								  const struct timespec *deadline,
								  char *err, size_t errlen);
static PgtCtlResult ctl_parse(const char *buf, size_t len, char *out,
							  size_t outlen, char *err, size_t errlen);
static void ctl_sanitize(char *dst, size_t dstlen, const char *src,
						 size_t srclen);
static char *ctl_detail(const char *err);

/*
 * pgt_control_request
 *		Send "PGT/1 <verb>\n" to this cluster's helper and read its answer.
 *
 * `verb` is everything after the tag, e.g. "PING" or "ESCALATE 30".  On
 * PGT_CTL_OK and PGT_CTL_REFUSED `out` holds the text after "OK "/"ERR ";
 * on every other result `err` says what went wrong.
 */
PgtCtlResult
pgt_control_request(const char *verb, char *out, size_t outlen,
					char *err, size_t errlen)
{
	char		line[PGT_PROTO_MAX_REQUEST + 1];
	char		reply[PGT_PROTO_MAX_RESPONSE];
	size_t		reply_len = 0;
	struct timespec deadline;
	PgtCtlResult r;
	int			fd = -1;

	out[0] = '\0';
	err[0] = '\0';
	if (!ctl_request_is_valid(verb))
	{
		snprintf(err, errlen, "request is not a valid protocol line");
		return PGT_CTL_BAD_REQUEST;
	}
	snprintf(line, sizeof(line), "%s %s\n", PGT_PROTO_TAG, verb);

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += PGT_PROTO_TIMEOUT_MS / 1000;
	deadline.tv_nsec += (long) (PGT_PROTO_TIMEOUT_MS % 1000) * 1000000L;

	r = ctl_connect(&fd, &deadline, err, errlen);
	if (r == PGT_CTL_OK)
		r = ctl_send(fd, line, strlen(line), &deadline, err, errlen);
	if (r == PGT_CTL_OK)
		r = ctl_recv_line(fd, reply, sizeof(reply), &reply_len, &deadline,
						  err, errlen);
	if (fd >= 0)
		close(fd);
	CHECK_FOR_INTERRUPTS();		/* a cancel that cut the wait short */
	if (r != PGT_CTL_OK)
		return r;
	return ctl_parse(reply, reply_len, out, outlen, err, errlen);
}

/*
 * ctl_request_is_valid
 *		Printable ASCII, single spaces between words, short enough.
 */
static bool
ctl_request_is_valid(const char *verb)
{
	size_t		len = strlen(verb);
	size_t		i;

	/* "PGT/1" SP verb LF must fit */
	if (len == 0 || len + strlen(PGT_PROTO_TAG) + 2 > PGT_PROTO_MAX_REQUEST)
		return false;
	if (verb[0] == ' ' || verb[len - 1] == ' ')
		return false;
	for (i = 0; i < len; i++)
	{
		if (verb[i] < 0x20 || verb[i] > 0x7e)
			return false;
		if (verb[i] == ' ' && verb[i + 1] == ' ')
			return false;
	}
	return true;
}

/*
 * ctl_remaining_ms
 *		Milliseconds left until deadline, at least 0.
 */
static int
ctl_remaining_ms(const struct timespec *deadline)
{
	struct timespec now;
	int64		ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (int64) (deadline->tv_sec - now.tv_sec) * 1000 +
		(deadline->tv_nsec - now.tv_nsec) / 1000000;
	return ms > 0 ? (int) ms : 0;
}

/*
 * ctl_connect
 *		Connect a non-blocking unix socket to this cluster's ".sock".  A
 *		full listen backlog (EAGAIN: the helper is busy, or many backends
 *		ask at once) is tried again every 10 ms until the deadline or a
 *		cancel, so that waiting there counts within the request's time as
 *		waiting in the backlog does.
 */
static PgtCtlResult
ctl_connect(int *fdp, const struct timespec *deadline, char *err, size_t errlen)
{
	PgtCtlResult r;

	for (;;)
	{
		r = ctl_connect_once(fdp, err, errlen);
		if (r != PGT_CTL_TIMEOUT || ctl_remaining_ms(deadline) == 0 || ctl_cancelled())
			return r;
		close(*fdp);
		*fdp = -1;
		pg_usleep(10000);
	}
}

/*
 * ctl_connect_once
 *		One connect; PGT_CTL_TIMEOUT when the backlog is full.
 */
static PgtCtlResult
ctl_connect_once(int *fdp, char *err, size_t errlen)
{
	struct sockaddr_un addr;
	char		path[MAXPGPATH];

	if (!pgt_cluster_file(".sock", path, sizeof(path), err, errlen))
		return PGT_CTL_NO_HELPER;
	if (strlen(path) >= sizeof(addr.sun_path))
	{
		snprintf(err, errlen, "socket path \"%s\" is too long", path);
		return PGT_CTL_NO_HELPER;
	}
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	strlcpy(addr.sun_path, path, sizeof(addr.sun_path));

	*fdp = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (*fdp < 0)
	{
		snprintf(err, errlen, "could not create a unix socket: %m");
		return PGT_CTL_IO_ERROR;
	}
	/* a unix stream connect completes or fails at once (EAGAIN: backlog) */
	if (connect(*fdp, (struct sockaddr *) &addr, sizeof(addr)) != 0)
	{
		int			save_errno = errno;

		snprintf(err, errlen, "could not connect to \"%s\": %m", path);
		return save_errno == EAGAIN ? PGT_CTL_TIMEOUT : PGT_CTL_NO_HELPER;
	}
	return PGT_CTL_OK;
}

/*
 * ctl_cancelled
 *		Has the caller been asked to stop (query cancel, statement_timeout,
 *		termination) at a point where it may?  The request then gives up,
 *		its socket is closed, and CHECK_FOR_INTERRUPTS raises the error.
 */
static bool
ctl_cancelled(void)
{
	return (QueryCancelPending || ProcDiePending) && INTERRUPTS_CAN_BE_PROCESSED();
}

/*
 * ctl_wait
 *		Wait until fd is ready for `events`, or fail at the deadline with
 *		"<what> within N ms", or on a cancel (checked every CTL_SLICE_MS).
 */
#define CTL_SLICE_MS	100

static PgtCtlResult
ctl_wait(int fd, short events, const struct timespec *deadline, const char *what,
		 char *err, size_t errlen)
{
	for (;;)
	{
		struct pollfd pfd = {.fd = fd,.events = events};
		int			left = ctl_remaining_ms(deadline);
		int			rc = poll(&pfd, 1, Min(left, CTL_SLICE_MS));

		if (rc > 0)
			return PGT_CTL_OK;
		if (rc < 0 && errno != EINTR)
		{
			snprintf(err, errlen, "poll failed: %m");
			return PGT_CTL_IO_ERROR;
		}
		if (ctl_cancelled())
		{
			snprintf(err, errlen, "%s: interrupted", what);
			return PGT_CTL_TIMEOUT;
		}
		if (rc == 0 && left <= CTL_SLICE_MS)
		{
			snprintf(err, errlen, "%s within %d ms", what, PGT_PROTO_TIMEOUT_MS);
			return PGT_CTL_TIMEOUT;
		}
	}
}

/*
 * ctl_send
 *		Write the whole request before the deadline.
 */
static PgtCtlResult
ctl_send(int fd, const char *line, size_t len,
		 const struct timespec *deadline, char *err, size_t errlen)
{
	size_t		done = 0;

	while (done < len)
	{
		ssize_t		n;
		PgtCtlResult r = ctl_wait(fd, POLLOUT, deadline,
								  "the helper did not accept the request", err, errlen);

		if (r != PGT_CTL_OK)
			return r;
		n = send(fd, line + done, len - done, MSG_NOSIGNAL);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
		{
			snprintf(err, errlen, "could not send the request: %m");
			return PGT_CTL_IO_ERROR;
		}
		done += n;
	}
	return PGT_CTL_OK;
}

/*
 * ctl_recv_line
 *		Read until the first LF (kept in buf), EOF, a full buffer or the
 *		deadline.
 */
static PgtCtlResult
ctl_recv_line(int fd, char *buf, size_t bufsize, size_t *lenp,
			  const struct timespec *deadline, char *err, size_t errlen)
{
	size_t		len = 0;

	while (len < bufsize && (len == 0 || buf[len - 1] != '\n'))
	{
		ssize_t		n;
		PgtCtlResult r = ctl_wait(fd, POLLIN, deadline, "no complete answer", err, errlen);

		if (r != PGT_CTL_OK)
			return r;
		/* one byte at a time: the answer ends at the first LF */
		n = recv(fd, buf + len, 1, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
		{
			snprintf(err, errlen, "could not read the answer: %m");
			return PGT_CTL_IO_ERROR;
		}
		if (n == 0)
			break;
		len += n;
	}
	*lenp = len;
	if (len == 0)
	{
		snprintf(err, errlen, "the helper closed the connection without answering");
		return PGT_CTL_IO_ERROR;
	}
	return PGT_CTL_OK;
}

/*
 * ctl_parse
 *		Check the answer with pgt_parse_response and copy its text.
 */
static PgtCtlResult
ctl_parse(const char *buf, size_t len, char *out, size_t outlen,
		  char *err, size_t errlen)
{
	const char *text = NULL;
	size_t		text_len = 0;
	int			rc = pgt_parse_response(buf, len, &text, &text_len);

	if (rc < 0)
	{
		char		shown[128];

		ctl_sanitize(shown, sizeof(shown), buf, len);
		snprintf(err, errlen, "malformed answer \"%s\"", shown);
		return PGT_CTL_MALFORMED;
	}
	ctl_sanitize(out, outlen, text, text_len);
	return rc == 1 ? PGT_CTL_OK : PGT_CTL_REFUSED;
}

/*
 * ctl_sanitize
 *		Bounded copy, printable ASCII only, without the trailing LF.
 */
static void
ctl_sanitize(char *dst, size_t dstlen, const char *src, size_t srclen)
{
	size_t		i;

	if (srclen > 0 && src[srclen - 1] == '\n')
		srclen--;
	for (i = 0; i < srclen && i + 1 < dstlen; i++)
		dst[i] = (src[i] >= 0x20 && src[i] <= 0x7e) ? src[i] : '?';
	dst[i] = '\0';
}

/*
 * ctl_detail
 *		Turn a lower-case reason into an error-detail sentence (capital
 *		first letter, final period), in a palloc'd copy.
 */
static char *
ctl_detail(const char *err)
{
	char	   *s = psprintf("%s.", err);

	s[0] = pg_toupper((unsigned char) s[0]);
	return s;
}

/*
 * pgt_control_request_or_error
 *		pgt_control_request for SQL functions: returns only on OK, with the
 *		helper's text in out; raises an error otherwise.
 */
void
pgt_control_request_or_error(const char *verb, char *out, size_t outlen)
{
	char		err[PGT_REASON_LEN];
	PgtCtlResult r = pgt_control_request(verb, out, outlen, err, sizeof(err));

	switch (r)
	{
		case PGT_CTL_OK:
			return;
		case PGT_CTL_NO_HELPER:
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("could not connect to the pg_tracer helper"),
					 errdetail_internal("%s", ctl_detail(err)),
					 errhint("Start the helper: pg-tracer daemon --pgdata %s",
							 pgt_hide_data_dir(DataDir))));
			break;
		case PGT_CTL_TIMEOUT:
		case PGT_CTL_IO_ERROR:
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("the pg_tracer helper did not answer"),
					 errdetail_internal("%s", ctl_detail(err)),
					 errhint("Check that the helper is running and responsive; its log may say more.")));
			break;
		case PGT_CTL_MALFORMED:
			ereport(ERROR,
					(errcode(ERRCODE_PROTOCOL_VIOLATION),
					 errmsg("malformed answer from the pg_tracer helper"),
					 errdetail_internal("%s", ctl_detail(err)),
					 errhint("The helper and the extension may come from different versions of pg_tracer.")));
			break;
		case PGT_CTL_REFUSED:
			ereport(ERROR,
					(errcode(strncmp(out, "denied", 6) == 0 ?
							 ERRCODE_INSUFFICIENT_PRIVILEGE :
							 ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the pg_tracer helper refused the request"),
					 errdetail_internal("Request \"%s\", answer \"%s\".", verb, out),
					 errhint("The helper serves only root and the owner of the data directory; see its log for details.")));
			break;
		case PGT_CTL_BAD_REQUEST:
			elog(ERROR, "pg_tracer: invalid control request \"%s\"", verb);
			break;
	}
}
