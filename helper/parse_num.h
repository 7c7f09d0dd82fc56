/*
 * helper/parse_num.h
 *	  Strict values from the command line and the control socket: decimal
 *	  numbers (digits only: no sign, no blanks, no suffix) within a range,
 *	  durations with a unit, two-way keyword options (on|off, auto|ktime),
 *	  and the name of an option getopt_long rejected.
 */
#ifndef PGT_HELPER_PARSE_NUM_H
#define PGT_HELPER_PARSE_NUM_H

#include <stddef.h>
#include <stdint.h>

/* 0 with *out when s is a decimal in [lo, hi] (lo >= 0), else -1. */
extern int	parse_decimal(const char *s, long lo, long hi, long *out);

/*
 * 0 when s is `first`, 1 when it is `second`; else -1 with "S: use FIRST or
 * SECOND" in err.
 */
extern int	parse_choice(const char *s, const char *first, const char *second,
						 char *err, size_t errlen);

/*
 * 0 with *ms when s is a duration: digits, optionally a decimal point and
 * more digits, then ms, s, m or min (none: seconds); > 0 and at most a
 * billion seconds.  Else -1.
 */
extern int	parse_duration_ms(const char *s, int64_t *ms);

/*
 * The option getopt_long just rejected, as the user wrote it (a short one
 * inside a cluster of them as "-x", spelled into buf).
 */
extern const char *parse_bad_option(char **argv, char buf[3]);

#endif							/* PGT_HELPER_PARSE_NUM_H */
