/*
 * helper/tracefs.h
 *	  Make sure tracefs is mounted at /sys/kernel/tracing.
 */
#ifndef PGT_HELPER_TRACEFS_H
#define PGT_HELPER_TRACEFS_H

#include <stddef.h>

#define TRACEFS_PATH	"/sys/kernel/tracing"

typedef enum tracefs_result
{
	TRACEFS_ALREADY_MOUNTED,
	TRACEFS_MOUNTED_BY_US,
	TRACEFS_FAILED
} tracefs_result;

extern int	tracefs_is_mounted(const char *mounts_text, const char *mountpoint);
extern tracefs_result tracefs_ensure(char *detail, size_t detaillen);

#endif							/* PGT_HELPER_TRACEFS_H */
