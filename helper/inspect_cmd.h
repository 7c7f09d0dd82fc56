/*
 * helper/inspect_cmd.h
 *	  `pg-tracer inspect`: a PostgreSQL server's processes and roles, its
 *	  executable (build id, debuglink, PIE, DWARF, USDT probes, symbols)
 *	  and the mechanism each engine probe set would use.
 */
#ifndef PGT_HELPER_INSPECT_CMD_H
#define PGT_HELPER_INSPECT_CMD_H

#include <sys/types.h>

typedef struct inspect_opts
{
	pid_t		pid;			/* 0: not given */
	const char *pgdata;			/* NULL: not given */
	const char *binary;			/* NULL: not given (file only, no processes) */
	int			json;
} inspect_opts;

extern int	inspect_run(const inspect_opts *opts);

#endif							/* PGT_HELPER_INSPECT_CMD_H */
