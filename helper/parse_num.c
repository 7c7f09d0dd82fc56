/*
 * helper/parse_num.c
 *	  Strict decimal numbers and durations (see parse_num.h).  strtol and
 *	  strtod alone would take leading blanks, a sign, hexadecimal and
 *	  exponents; every option and request field here is a plain count of
 *	  seconds, milliseconds or a pid.
 */
#include "parse_num.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
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
 * parse_duration_ms
 *		See parse_num.h.
 */
int
parse_duration_ms(const char *s, int64_t *ms)
{
	static const struct
	{
		const char *unit;
		double		ms;
	}			units[] = {{"", 1000}, {"ms", 1}, {"s", 1000}, {"m", 60000}, {"min", 60000}};
	const char *p = s;
	double		v;
	size_t		i;

	if (s == NULL || !isdigit((unsigned char) *p))
		return -1;
	while (isdigit((unsigned char) *p))
		p++;
	if (*p == '.')
	{
		if (!isdigit((unsigned char) p[1]))
			return -1;
		for (p++; isdigit((unsigned char) *p); p++)
			;
	}
	errno = 0;
	v = strtod(s, NULL);		/* only digits and one point: plain decimal */
	if (errno != 0)
		return -1;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(p, units[i].unit) == 0)
		{
			/* the limit on the time, whatever its unit says */
			if (v * units[i].ms > 1e12)
				return -1;
			/* to the nearest: 1.001s is 1001 * 0.001 * 1000 = 1000.99... */
			*ms = (int64_t) (v * units[i].ms + 0.5);
			return *ms > 0 ? 0 : -1;
		}
	return -1;
}

/*
 * parse_module_option
 *		See parse_num.h.
 */
int
parse_module_option(const module_option *table, size_t n, int opt, const char *arg,
					char *msg, size_t msglen)
{
	char		err[512];
	size_t		i;

	for (i = 0; i < n; i++)
	{
		if (table[i].opt != opt)
			continue;
		if (table[i].configure(arg, err, sizeof(err)) < 0)
		{
			snprintf(msg, msglen, "%s: %s", table[i].name, err);
			return -1;
		}
		return 0;
	}
	return 1;
}

/*
 * parse_bad_option
 *		See parse_num.h.  getopt_long sets optopt to the short option it
 *		rejected (0 for a long one); argv[optind - 1] is the word it was in.
 */
const char *
parse_bad_option(char **argv, char buf[3])
{
	const char *word = optind > 0 ? argv[optind - 1] : NULL;

	buf[0] = '-';
	buf[1] = (char) optopt;
	buf[2] = '\0';
	if (word == NULL || (optopt != 0 && strncmp(word, "--", 2) != 0))
		return buf;
	return word;
}

/*
 * parse_explain_option
 *		See parse_num.h.  glibc's getopt_long reports an ambiguous prefix and
 *		a value given to an option that takes none as it does an unknown
 *		option ('?'), so the word is looked at again against longopts.
 */
void
parse_explain_option(char **argv, const struct option *longopts, int c, char *out,
					 size_t outlen)
{
	char		buf[3];
	const char *word = parse_bad_option(argv, buf);
	const char *name = word + 2;
	size_t		len = strcspn(name, "=");
	size_t		used = 0;
	int			matches = 0;
	const struct option *o;

	if (c == ':')
	{
		snprintf(out, outlen, "option %s needs a value", word);
		return;
	}
	if (strncmp(word, "--", 2) != 0 || len == 0)
	{
		snprintf(out, outlen, "unknown option %s", word);
		return;
	}
	const struct option *only = NULL;

	int			exact = 0;

	for (o = longopts; o->name != NULL; o++)
		if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
		{
			only = o;			/* exact: never ambiguous */
			exact = 1;
		}
	for (o = longopts; !exact && o->name != NULL; o++)
	{
		if (strncmp(o->name, name, len) != 0)
			continue;
		if (matches++ == 0)
			used = (size_t) snprintf(out, outlen, "option --%.*s is ambiguous: --%s",
									 (int) len, name, o->name);
		else if (used < outlen)
			used += (size_t) snprintf(out + used, outlen - used, ", --%s", o->name);
		only = o;
	}
	if (matches > 1)
		return;
	if (only != NULL && only->has_arg == no_argument && name[len] == '=')
		snprintf(out, outlen, "option --%s takes no value", only->name);
	else
		snprintf(out, outlen, "unknown option %s", word);
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
