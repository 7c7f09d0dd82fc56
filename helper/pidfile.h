/*
 * helper/pidfile.h
 *	  Parsing of PostgreSQL's postmaster.pid (the data directory lock file).
 */
#ifndef PGT_HELPER_PIDFILE_H
#define PGT_HELPER_PIDFILE_H

#include <stddef.h>
#include <stdint.h>

/* A postmaster.pid larger than this is not one. */
#define PIDFILE_MAX_BYTES	8192
#define PIDFILE_FIELD_LEN	1024

typedef struct pg_pidfile
{
	int32_t		pid;			/* line 1: postmaster pid (its namespace) */
	char		data_dir[PIDFILE_FIELD_LEN];	/* line 2 */
	int64_t		start_time;		/* line 3: unix seconds */
	int32_t		port;			/* line 4, -1 when absent */
	char		socket_dir[PIDFILE_FIELD_LEN];	/* line 5, "" when absent */
	char		listen_addr[PIDFILE_FIELD_LEN]; /* line 6, "" when absent */
	char		status[16];		/* line 8 trimmed ("ready"...), "" if absent */
	int			nlines;			/* lines present */
} pg_pidfile;

extern int	pidfile_parse(const char *buf, size_t len, pg_pidfile *out,
						  char *err, size_t errlen);
extern int	pidfile_read(const char *path, pg_pidfile *out,
						 char *err, size_t errlen);
extern int	pidfile_read_at(int dirfd, const char *path, pg_pidfile *out,
							char *err, size_t errlen);

#endif							/* PGT_HELPER_PIDFILE_H */
