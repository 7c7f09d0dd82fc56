/*
 * helper/log.c
 *	  Leveled logging to stderr: "<UTC time> pg-tracer[<pid>] <LEVEL>: msg".
 *
 * The daemon runs in the foreground (systemd captures stderr), so there is
 * no syslog or log file handling here.  Messages below the configured level
 * cost one comparison.
 */
#include "log.h"

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
 * log_msg
 *		Format and write one line to stderr if `level` is enabled.  The
 *		line is built in one buffer and written with one write() so lines
 *		of concurrent writers do not interleave.
 */
void
log_msg(enum log_level level, const char *fmt, ...)
{
	char		line[2048];
	char		stamp[32];
	struct timespec ts;
	struct tm	tm;
	va_list		ap;
	int			n;
	int			m;
	ssize_t		w;

	if (level > current_level)
		return;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0 || gmtime_r(&ts.tv_sec, &tm) == NULL ||
		strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
		strcpy(stamp, "0000-00-00T00:00:00");
	n = snprintf(line, sizeof(line), "%s.%03ldZ pg-tracer[%d] %s: ",
				 stamp, ts.tv_nsec / 1000000, (int) getpid(),
				 level_names[level]);
	if (n < 0 || (size_t) n >= sizeof(line))
		return;
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	n += m;
	if ((size_t) n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	while (n > 0 && line[n - 1] == '\n')
		n--;
	line[n++] = '\n';
	w = write(STDERR_FILENO, line, n);
	(void) w;					/* nowhere left to report a failing stderr */
}
