/*
 * helper/parse_num.h
 *	  Strict decimal numbers from the command line and the control socket:
 *	  digits only (no sign, no blanks, no suffix), within a range; and
 *	  two-way keyword options (on|off, auto|ktime).
 */
#ifndef PGT_HELPER_PARSE_NUM_H
#define PGT_HELPER_PARSE_NUM_H

#include <stddef.h>

/* 0 with *out when s is a decimal in [lo, hi] (lo >= 0), else -1. */
extern int	parse_decimal(const char *s, long lo, long hi, long *out);

/*
 * 0 when s is `first`, 1 when it is `second`; else -1 with "S: use FIRST or
 * SECOND" in err.
 */
extern int	parse_choice(const char *s, const char *first, const char *second,
						 char *err, size_t errlen);

#endif							/* PGT_HELPER_PARSE_NUM_H */
