/*
 * helper/pidfile.c
 *	  Parse PostgreSQL's postmaster.pid, the file that tells which process
 *	  owns a data directory and when it started.
 *
 * Format (PostgreSQL 10+, see miscinit.c / pidfile.h), one field per line:
 *	  1 pid (negative for a standalone backend)   5 unix socket directory
 *	  2 data directory                            6 first listen address
 *	  3 start time, unix seconds                  7 shared memory key
 *	  4 port                                      8 postmaster status
 * Lines 1-5 are written when the lock file is created, 6-8 later, so only
 * 1-3 are required.  The parser is a pure function (no I/O) so it can be
 * tested on any input; the file is untrusted (it lives in a directory the
 * cluster owner controls).
 */
#include "pidfile.h"

#include "fd_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * parse_decimal
 *		Strict decimal: optional '-', 1-19 digits, nothing else.  Returns 0
 *		and *out, or -1 (empty, junk, overflow).
 */
static int
parse_decimal(const char *s, size_t len, int64_t *out)
{
	int			neg = 0;
	uint64_t	v = 0;
	size_t		i = 0;

	if (len > 0 && s[0] == '-')
	{
		neg = 1;
		i = 1;
	}
	if (i == len || len - i > 19)
		return -1;
	for (; i < len; i++)
	{
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (uint64_t) (s[i] - '0');
	}
	if (v > (uint64_t) INT64_MAX)
		return -1;
	*out = neg ? -(int64_t) v : (int64_t) v;
	return 0;
}

/*
 * copy_field
 *		Copy a line into a fixed field; -1 when it does not fit or holds a
 *		NUL byte.
 */
static int
copy_field(char *dst, size_t dstlen, const char *s, size_t len)
{
	if (len >= dstlen || memchr(s, '\0', len) != NULL)
		return -1;
	memcpy(dst, s, len);
	dst[len] = '\0';
	return 0;
}

/*
 * split_lines
 *		Point lines[] and lens[] at the first (at most max) lines of buf,
 *		without their newlines.  Returns how many there are.
 */
static int
split_lines(const char *buf, size_t len, const char **lines, size_t *lens, int max)
{
	size_t		pos = 0;
	int			n = 0;

	while (pos < len && n < max)
	{
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t		l = nl ? (size_t) (nl - (buf + pos)) : len - pos;

		lines[n] = buf + pos;
		lens[n] = l;
		n++;
		pos += l + (nl ? 1 : 0);
	}
	return n;
}

/*
 * parse_pid_line
 *		The postmaster's pid from postmaster.pid's first line: a positive
 *		32-bit number (a standalone backend writes its pid negated).
 *		Returns 0, or -1 with err set.
 */
static int
parse_pid_line(const char *line, size_t len, int32_t *pid, char *err, size_t errlen)
{
	int64_t		v;

	if (parse_decimal(line, len, &v) < 0)
	{
		snprintf(err, errlen, "postmaster.pid line 1 is not a pid");
		return -1;
	}
	if (v < 0)
	{
		snprintf(err, errlen, "postmaster.pid belongs to a standalone backend (pid %lld)",
				 (long long) -v);
		return -1;
	}
	if (v == 0 || v > INT32_MAX)
	{
		snprintf(err, errlen, "postmaster.pid line 1: pid %lld out of range",
				 (long long) v);
		return -1;
	}
	*pid = (int32_t) v;
	return 0;
}

/*
 * pidfile_parse
 *		Parse the contents of a postmaster.pid (buf, len bytes).  Returns 0
 *		and fills out, or -1 with a one-line reason in err.
 */
int
pidfile_parse(const char *buf, size_t len, pg_pidfile *out, char *err, size_t errlen)
{
	const char *lines[8] = {0};
	size_t		lens[8] = {0};
	int			n;
	int64_t		v;

	memset(out, 0, sizeof(*out));
	out->port = -1;
	if (len > PIDFILE_MAX_BYTES)
	{
		snprintf(err, errlen, "postmaster.pid is %zu bytes, larger than %d",
				 len, PIDFILE_MAX_BYTES);
		return -1;
	}
	n = split_lines(buf, len, lines, lens, 8);
	out->nlines = n;
	if (n < 3)
	{
		snprintf(err, errlen, "postmaster.pid has %d line(s), need at least 3", n);
		return -1;
	}
	if (parse_pid_line(lines[0], lens[0], &out->pid, err, errlen) < 0)
		return -1;
	if (lens[1] == 0 || copy_field(out->data_dir, sizeof(out->data_dir),
								   lines[1], lens[1]) < 0)
	{
		snprintf(err, errlen, "postmaster.pid line 2 is not a data directory");
		return -1;
	}
	if (parse_decimal(lines[2], lens[2], &v) < 0 || v < 0 || v > INT64_MAX / 1000000)
	{
		snprintf(err, errlen, "postmaster.pid line 3 is not a start time");
		return -1;
	}
	out->start_time = v;
	/* Optional lines: tolerate what a newer server may put there. */
	if (n >= 4 && parse_decimal(lines[3], lens[3], &v) == 0 && v >= 0 && v <= 65535)
		out->port = (int32_t) v;
	if (n >= 5)
		(void) copy_field(out->socket_dir, sizeof(out->socket_dir), lines[4], lens[4]);
	if (n >= 6)
		(void) copy_field(out->listen_addr, sizeof(out->listen_addr), lines[5], lens[5]);
	if (n >= 8)
	{
		size_t		l = lens[7];

		while (l > 0 && lines[7][l - 1] == ' ')
			l--;
		(void) copy_field(out->status, sizeof(out->status), lines[7], l);
	}
	return 0;
}

/*
 * pidfile_read
 *		Read and parse the postmaster.pid at path (a bounded read; the
 *		file must be a regular file, symlinks are not followed).
 */
int
pidfile_read(const char *path, pg_pidfile *out, char *err, size_t errlen)
{
	return pidfile_read_at(AT_FDCWD, path, out, err, errlen);
}

/*
 * pidfile_read_at
 *		The same, path relative to the directory dirfd (the directory
 *		already identified: nothing can be swapped between the two).
 */
int
pidfile_read_at(int dirfd, const char *path, pg_pidfile *out, char *err, size_t errlen)
{
	char		buf[PIDFILE_MAX_BYTES + 1];
	struct stat st;
	ssize_t		len;
	int			fd;
	int			ret = -1;

	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
	{
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
	{
		snprintf(err, errlen, "%s is not a regular file", path);
		goto cleanup;
	}
	len = fd_read_full(fd, buf, sizeof(buf));
	if (len < 0)
	{
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		goto cleanup;
	}
	ret = pidfile_parse(buf, (size_t) len, out, err, errlen);

cleanup:
	close(fd);
	return ret;
}
