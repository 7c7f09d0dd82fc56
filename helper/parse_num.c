/*
 * helper/parse_num.c
 *	  Strict decimal numbers (see parse_num.h).  strtol alone would take
 *	  leading blanks and a sign; every option and request field here is a
 *	  plain count of seconds, milliseconds or a pid.
 */
#include "parse_num.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * parse_decimal
 *		See parse_num.h.
 */
int
parse_decimal(const char *s, long lo, long hi, long *out)
{
	char	   *end;
	long		v;

	if (s == NULL || !isdigit((unsigned char) s[0]))
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/*
 * parse_choice
 *		See parse_num.h.
 */
int
parse_choice(const char *s, const char *first, const char *second, char *err,
			 size_t errlen)
{
	if (strcmp(s, first) == 0)
		return 0;
	if (strcmp(s, second) == 0)
		return 1;
	snprintf(err, errlen, "%s: use %s or %s", s, first, second);
	return -1;
}
