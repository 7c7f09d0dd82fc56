/*
 * helper/fd_read.h
 *	  Read a small file whole: what the helper does with /proc files,
 *	  postmaster.pid and the cluster's layout file.
 */
#ifndef PGT_HELPER_FD_READ_H
#define PGT_HELPER_FD_READ_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Read fd until end of file or until len bytes are in buf, whichever comes
 * first (retrying interrupted reads).  Returns the bytes read, or -1 with
 * errno from the failing read.
 */
extern ssize_t fd_read_full(int fd, void *buf, size_t len);

#endif							/* PGT_HELPER_FD_READ_H */
