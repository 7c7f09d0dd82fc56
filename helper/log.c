/*
 * helper/log.c
 *	  Leveled logging to stderr: "<UTC time> pg-tracer[<pid>] <LEVEL>: msg".
 *
 * The daemon runs in the foreground (systemd captures stderr), so there is
 * no syslog or log file handling here.  Messages below the configured level
 * cost one comparison.  Messages carry text other users choose (process
 * titles, data directory paths), so control bytes and bytes that are not
 * well-formed UTF-8 are written as \xNN: a terminal must not act on them.
 */
#include "log.h"

#include "pgt_utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static enum log_level current_level = LOG_LEVEL_INFO;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

/*
 * log_set_level
 *		Messages above `level` are dropped from now on.
 */
void
log_set_level(enum log_level level)
{
	current_level = level;
}

/*
 * log_get_level
 *		The level in force.
 */
enum log_level
log_get_level(void)
{
	return current_level;
}

/*
 * log_parse_level
 *		"error|warn|info|debug" -> level.  Returns 0, or -1 when unknown.
 */
int
log_parse_level(const char *name, enum log_level *level)
{
	size_t		i;

	for (i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
	{
		if (strcmp(name, level_names[i]) == 0)
		{
			*level = (enum log_level) i;
			return 0;
		}
	}
	return -1;
}

/*
 * append_escaped
 *		msg onto line at *n, controls (C0, DEL, C1) and stray bytes as \xNN,
 *		as far as `room` bytes go; a character or an escape is never cut.
 */
static void
append_escaped(char *line, size_t *n, size_t room, const char *msg)
{
	const unsigned char *p = (const unsigned char *) msg;
	size_t		left = strlen(msg);

	while (left > 0)
	{
		int			len = pgt_utf8_len(p, left);
		size_t		step = len > 0 ? (size_t) len : 1;

		if (len > 0 && !pgt_utf8_is_c1(p, len))
		{
			if (*n + step > room)
				return;
			memcpy(line + *n, p, step);
			*n += step;
		}
		else if (len == 0 && *p >= 0x20 && *p < 0x7f)
		{
			if (*n + 1 > room)
				return;
			line[(*n)++] = (char) *p;
		}
		else
		{
			if (*n + 4 > room)
				return;
			snprintf(line + *n, 5, "\\x%02x", *p);
			*n += 4;
			step = 1;
		}
		p += step;
		left -= step;
	}
}

/*
 * log_escape
 *		in, escaped as log lines are (see append_escaped), into out (outlen
 *		bytes, NUL-terminated): for other output a user's text reaches, such
 *		as the paths `inspect` prints.
 */
const char *
log_escape(char *out, size_t outlen, const char *in)
{
	size_t		n = 0;

	if (outlen == 0)
		return "";
	append_escaped(out, &n, outlen - 1, in);
	out[n] = '\0';
	return out;
}

/*
 * log_msg
 *		Format and write one line to stderr if `level` is enabled.  The
 *		line is built in one buffer and written with one write() so lines
 *		of concurrent writers do not interleave.  Trailing newlines of the
 *		message are dropped; others are escaped.
 */
void
log_msg(enum log_level level, const char *fmt, ...)
{
	char		msg[2048];
	char		line[2048 + 64];
	char		stamp[32];
	struct timespec ts;
	struct tm	tm;
	va_list		ap;
	size_t		n;
	int			m;
	ssize_t		w;

	if (level > current_level)
		return;
	va_start(ap, fmt);
	m = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	for (n = strlen(msg); n > 0 && msg[n - 1] == '\n'; n--)
		msg[n - 1] = '\0';
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0 || gmtime_r(&ts.tv_sec, &tm) == NULL ||
		strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
		strcpy(stamp, "0000-00-00T00:00:00");
	m = snprintf(line, sizeof(line), "%s.%03ldZ pg-tracer[%d] %s: ",
				 stamp, ts.tv_nsec / 1000000, (int) getpid(),
				 level_names[level]);
	if (m < 0 || (size_t) m >= sizeof(line))
		return;
	n = (size_t) m;
	append_escaped(line, &n, sizeof(line) - 1, msg);
	line[n++] = '\n';
	w = write(STDERR_FILENO, line, n);
	(void) w;					/* nowhere left to report a failing stderr */
}
