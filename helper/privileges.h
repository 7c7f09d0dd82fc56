/*
 * helper/privileges.h
 *	  Does this process have what the daemon needs (and is it not setuid)?
 */
#ifndef PGT_HELPER_PRIVILEGES_H
#define PGT_HELPER_PRIVILEGES_H

#include <stddef.h>

extern int	privileges_not_setuid(char *err, size_t errlen);
extern int	privileges_check(char *err, size_t errlen);

#endif							/* PGT_HELPER_PRIVILEGES_H */
