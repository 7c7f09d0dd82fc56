/*
 * helper/trace_cmd.h
 *	  `pg-tracer trace`: interactive tracing with the registered probe sets
 *	  (probe_set.h), without the extension.
 */
#ifndef PGT_HELPER_TRACE_CMD_H
#define PGT_HELPER_TRACE_CMD_H

extern int	trace_main(int argc, char **argv);

#endif							/* PGT_HELPER_TRACE_CMD_H */
