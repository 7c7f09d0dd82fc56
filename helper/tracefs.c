/*
 * helper/tracefs.c
 *	  Mount tracefs at /sys/kernel/tracing when it is missing, and say what
 *	  happened (for the "tracefs" capability row).
 *
 * Tracepoints attached through SEC("tp/...") need tracefs for their ids;
 * tp_btf programs do not.  Fresh VMs often boot without it mounted.  The
 * helper mounts it (never unmounts it: others may use it) and reports
 * whether it was already there, mounted now, or could not be mounted.
 */
#include "tracefs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

/*
 * tracefs_is_mounted
 *		True when the /proc/self/mounts text lists a tracefs at mountpoint.
 */
int
tracefs_is_mounted(const char *mounts_text, const char *mountpoint)
{
	const char *p = mounts_text;
	size_t		mlen = strlen(mountpoint);

	while (p && *p)
	{
		const char *nl = strchr(p, '\n');
		const char *sp = strchr(p, ' ');

		/* "<source> <mountpoint> <fstype> ..." */
		if (sp && (!nl || sp < nl) &&
			strncmp(sp + 1, mountpoint, mlen) == 0 && sp[1 + mlen] == ' ' &&
			strncmp(sp + 2 + mlen, "tracefs ", 8) == 0)
			return 1;
		p = nl ? nl + 1 : NULL;
	}
	return 0;
}

/*
 * read_mounts
 *		Whole /proc/self/mounts into a malloc'd NUL-terminated buffer.
 */
static char *
read_mounts(void)
{
	size_t		cap = 65536;
	size_t		len = 0;
	char	   *buf = malloc(cap);
	int			fd;

	if (buf == NULL)
		return NULL;
	fd = open("/proc/self/mounts", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
	{
		free(buf);
		return NULL;
	}
	for (;;)
	{
		ssize_t		r;

		if (len + 1 >= cap)
		{
			char	   *n = cap < (16u << 20) ? realloc(buf, cap * 2) : NULL;

			if (n == NULL)
				break;
			buf = n;
			cap *= 2;
		}
		r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t) r;
	}
	close(fd);
	buf[len] = '\0';
	return buf;
}

/*
 * tracefs_ensure
 *		Mount tracefs at TRACEFS_PATH unless it is there.  Writes a one-line
 *		description into detail.
 */
tracefs_result
tracefs_ensure(char *detail, size_t detaillen)
{
	char	   *mounts = read_mounts();
	int			mounted = mounts ? tracefs_is_mounted(mounts, TRACEFS_PATH) : 0;

	free(mounts);
	if (mounted)
	{
		snprintf(detail, detaillen, "already mounted at %s", TRACEFS_PATH);
		return TRACEFS_ALREADY_MOUNTED;
	}
	if (mount("nodev", TRACEFS_PATH, "tracefs", 0, NULL) < 0)
	{
		snprintf(detail, detaillen, "mount -t tracefs nodev %s failed: %s",
				 TRACEFS_PATH, strerror(errno));
		return TRACEFS_FAILED;
	}
	snprintf(detail, detaillen, "mounted by pg-tracer at %s", TRACEFS_PATH);
	return TRACEFS_MOUNTED_BY_US;
}
