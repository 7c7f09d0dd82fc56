/*
 * helper/status_cmd.h
 *	  `pg-tracer status`: what the segments in the runtime directory say.
 */
#ifndef PGT_HELPER_STATUS_CMD_H
#define PGT_HELPER_STATUS_CMD_H

typedef struct status_opts
{
	const char *runtime_dir;
	int			json;
} status_opts;

extern int	status_run(const status_opts *opts);

#endif							/* PGT_HELPER_STATUS_CMD_H */
