/*
 * helper/fd_read.c
 *	  Read a small file whole (see fd_read.h).
 *
 * One read(2) may return less than asked of a regular file only at its end,
 * but /proc files are generated per read and may come in pieces, and a
 * signal may interrupt any read: so the loop.  No locking: the caller owns
 * fd and buf.
 */
#include "fd_read.h"

#include <errno.h>
#include <unistd.h>

/*
 * fd_read_full
 *		See fd_read.h.
 */
ssize_t
fd_read_full(int fd, void *buf, size_t len)
{
	char	   *p = buf;
	size_t		got = 0;

	while (got < len)
	{
		ssize_t		r = read(fd, p + got, len - got);

		if (r < 0)
		{
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0)
			break;
		got += (size_t) r;
	}
	return (ssize_t) got;
}
