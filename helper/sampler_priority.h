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

/* The sampler's bgw_name (src/sampler.c registers it) */
#define SAMPLER_PRIORITY_TITLE		"pg_tracer sampler"
#define SAMPLER_NICE_DEFAULT		(-15)

/* --sampler-nice N: -20..0, 0 leaves the sampler alone */
extern int	sampler_priority_configure(const char *arg, char *err, size_t errlen);

/* The configured nice value (0: none) */
extern int	sampler_priority_nice(void);

/*
 * Give process pid, whose title (its /proc cmdline: buf, len) was just
 * read, the configured nice value when it is the sampler.  Returns 1 when
 * it was set, 0 when pid is not the sampler or nothing is configured, -1
 * (errno set) when the kernel refused.
 */
extern int	sampler_priority_apply(uint32_t pid, const char *buf, size_t len);

#endif							/* PGT_HELPER_SAMPLER_PRIORITY_H */
