/*
 * helper/parse_num.h
 *	  Strict decimal numbers from the command line and the control socket:
 *	  digits only (no sign, no blanks, no suffix), within a range.
 */
#ifndef PGT_HELPER_PARSE_NUM_H
#define PGT_HELPER_PARSE_NUM_H

/* 0 with *out when s is a decimal in [lo, hi] (lo >= 0), else -1. */
extern int	parse_decimal(const char *s, long lo, long hi, long *out);

#endif							/* PGT_HELPER_PARSE_NUM_H */
