/*
 * helper/sampler_priority.h
 *	  The daemon raises the scheduling priority of each served cluster's
 *	  pg_tracer sampler (--sampler-nice), so that the sampler takes its
 *	  samples when its timer fires, not when a CPU frees up.
 */
#ifndef PGT_HELPER_SAMPLER_PRIORITY_H
#define PGT_HELPER_SAMPLER_PRIORITY_H

#include <stddef.h>
#include <stdint.h>

#include "privileges.h"

/* The sampler's bgw_name (src/sampler.c registers it) */
#define SAMPLER_PRIORITY_TITLE		"pg_tracer sampler"
#define SAMPLER_NICE_DEFAULT		(-15)

/* --sampler-nice N: -20..0, 0 leaves the sampler alone */
extern int	sampler_priority_configure(const char *arg, char *err, size_t errlen);

/* The configured nice value (0: none) */
extern int	sampler_priority_nice(void);

/*
 * Owners whose samplers may be raised: system accounts (PGT_SYSTEM_MAX_UID),
 * such as the packages' postgres.  A cluster a person runs under their own
 * account is served all the same, its sampler left at its nice value: a
 * raised priority is a privilege (CAP_SYS_NICE), and the title that names
 * the sampler is the process's own to write.
 */
#define SAMPLER_PRIORITY_MAX_OWNER	PGT_SYSTEM_MAX_UID

/* sampler_priority_apply's results */
#define SAMPLER_PRIORITY_RAISED		1	/* the nice value was set */
#define SAMPLER_PRIORITY_NONE		0	/* not the sampler, or none configured */
#define SAMPLER_PRIORITY_REFUSED	(-1)	/* the kernel refused: errno set */
#define SAMPLER_PRIORITY_NOT_SYSTEM	(-2)	/* owner is no system account */

/*
 * Give process pid, whose title (its /proc cmdline: buf, len) was just
 * read and whose cluster runs as owner, the configured nice value when it
 * is the sampler and owner a system account (SAMPLER_PRIORITY_MAX_OWNER).
 * Returns one of the results above.
 */
extern int	sampler_priority_apply(uint32_t pid, const char *buf, size_t len,
								   uint32_t owner);

#endif							/* PGT_HELPER_SAMPLER_PRIORITY_H */
