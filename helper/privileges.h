/*
 * helper/privileges.h
 *	  Does this process have what the daemon needs (and is it not setuid)?
 */
#ifndef PGT_HELPER_PRIVILEGES_H
#define PGT_HELPER_PRIVILEGES_H

#include <stddef.h>

/*
 * The highest uid of a system account: useradd gives people uids from
 * UID_MIN (1000 in login.defs on Debian and Red Hat alike) on, and the
 * packages' postgres is a system account.  The daemon serves the clusters
 * of any user of the host, but grants what costs the host (a raised
 * priority, many clusters) only to clusters system accounts run.
 */
#define PGT_SYSTEM_MAX_UID	999

extern int	privileges_not_setuid(char *err, size_t errlen);
extern int	privileges_check(const char *cmd, char *err, size_t errlen);
extern void privileges_warn_daemon(void);
extern void privileges_warn_trace(void);

#endif							/* PGT_HELPER_PRIVILEGES_H */
