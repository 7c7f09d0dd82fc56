/*
 * helper/parse_num.h
 *	  Strict values from the command line and the control socket: decimal
 *	  numbers (digits only: no sign, no blanks, no suffix) within a range,
 *	  durations with a unit, two-way keyword options (on|off, auto|ktime),
 *	  the options a module parses for itself, and the name of an option
 *	  getopt_long rejected.
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
 * more digits, then ms, s, m or min (none: seconds), rounded to the nearest
 * millisecond; > 0 and at most a billion seconds.  Else -1.
 */
extern int	parse_duration_ms(const char *s, int64_t *ms);

/*
 * An option whose value one module parses; its configure function says
 * what is wrong with a bad one.  A command keeps a table of them.
 */
typedef struct module_option
{
	int			opt;			/* getopt_long's value */
	const char *name;			/* as the user writes it: "--sched-clock" */
	int			(*configure) (const char *arg, char *err, size_t errlen);
} module_option;

/*
 * Hand arg to the module of option opt in table (n entries): 0, 1 when opt
 * is not in the table, or -1 with "NAME: what is wrong" in msg.
 */
extern int	parse_module_option(const module_option *table, size_t n, int opt,
								const char *arg, char *msg, size_t msglen);

/*
 * The option getopt_long just rejected, as the user wrote it (a short one
 * inside a cluster of them as "-x", spelled into buf).
 */
extern const char *parse_bad_option(char **argv, char buf[3]);

/*
 * Why getopt_long rejected an option (c is ':' or '?'), in words: a missing
 * value, a value given to an option that takes none, an ambiguous prefix
 * (naming the options it could be), or an unknown option.
 */
struct option;
extern void parse_explain_option(char **argv, const struct option *longopts, int c,
								 char *out, size_t outlen);

#endif							/* PGT_HELPER_PARSE_NUM_H */
