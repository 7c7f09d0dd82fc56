/*
 * test/unit/test_parse_num.c
 *	  The command line's strict numbers (helper/parse_num.c): decimals in a
 *	  range, durations with their units, options a module parses for
 *	  itself, and the name of a rejected option as the user wrote it.
 */
#include "parse_num.h"
#include "unit.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void
test_decimal(void)
{
	long		v = 0;

	CHECK_INT(parse_decimal("42", 1, 100, &v), 0);
	CHECK_INT(v, 42);
	CHECK_INT(parse_decimal("0", 1, 100, &v), -1);
	CHECK_INT(parse_decimal("101", 1, 100, &v), -1);
	CHECK_INT(parse_decimal("+12", 1, 100, &v), -1);
	CHECK_INT(parse_decimal(" 12", 1, 100, &v), -1);
	CHECK_INT(parse_decimal("12 ", 1, 100, &v), -1);
	CHECK_INT(parse_decimal("0x10", 1, 100, &v), -1);
	CHECK_INT(parse_decimal("", 1, 100, &v), -1);
	CHECK_INT(parse_decimal("99999999999999999999999", 1, 100, &v), -1);
}

static void
test_duration(void)
{
	static const char *const bad[] = {
		"", "s", "-1s", "+1s", " 2s", "2s ", "0x10", "1e3", "2.s", ".5s", "1.2.3s",
		"0", "0ms", "0.0001ms", "0.4ms", "2h", "2 s", "2sec", "1000000001", "nan", "inf",
		"999999999min", "16666667m", "1000000000001ms"};
	static const struct
	{
		const char *in;
		int64_t		ms;
	}			good[] = {{"2", 2000}, {"2s", 2000}, {"250ms", 250}, {"0.5s", 500},
	{"1m", 60000}, {"3min", 180000}, {"1000000000", INT64_C(1000000000000)},
	{"16666666m", INT64_C(999999960000)}, {"1000000000000ms", INT64_C(1000000000000)},
	{"1.001s", 1001}, {"1.9ms", 2}, {"0.5ms", 1}};
	int64_t		ms = 0;
	size_t		i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		CHECK(parse_duration_ms(good[i].in, &ms) == 0 && ms == good[i].ms,
			  "\"%s\" is %lld ms", good[i].in, (long long) good[i].ms);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(parse_duration_ms(bad[i], &ms) == -1, "\"%s\" refused", bad[i]);
}

/* getopt_long over argv; the name parse_bad_option gives its first rejection */
static const char *
first_rejected(int argc, char **argv, char buf[3])
{
	static const struct option longopts[] = {{"pid", required_argument, NULL, 'p'},
	{NULL, 0, NULL, 0}};
	int			c;

	opterr = 0;
	optind = 0;					/* glibc: a full restart, as for a new argv */
	while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1)
		if (c == '?' || c == ':')
			return parse_bad_option(argv, buf);
	return "";
}

static void
test_bad_option(void)
{
	char	   *a1[] = {"trace", "-xh", NULL};
	char	   *a2[] = {"trace", "--probes", "syscall", NULL};
	char	   *a3[] = {"trace", "--pid", NULL};
	char		buf[3];

	CHECK_STR(first_rejected(2, a1, buf), "-x");
	CHECK_STR(first_rejected(3, a2, buf), "--probes");
	CHECK_STR(first_rejected(2, a3, buf), "--pid");
}

/* the words for getopt_long's rejection: ambiguous, a value it takes none of */
static const char *
explained(int argc, char **argv)
{
	static const struct option longopts[] = {{"probes", required_argument, NULL, 'P'},
	{"pid", required_argument, NULL, 'p'}, {"pgdata", required_argument, NULL, 'D'},
	{"stats", no_argument, NULL, 's'}, {NULL, 0, NULL, 0}};
	static char out[256];
	int			c;

	opterr = 0;
	optind = 0;
	out[0] = '\0';
	while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1)
		if (c == '?' || c == ':')
		{
			parse_explain_option(argv, longopts, c, out, sizeof(out));
			break;
		}
	return out;
}

static void
test_explain_option(void)
{
	char	   *a1[] = {"trace", "--p", "1", NULL};
	char	   *a2[] = {"trace", "--pg", "/x", NULL};
	char	   *a3[] = {"trace", "--stats=1", NULL};
	char	   *a4[] = {"trace", "--stat=yes", NULL};
	char	   *a5[] = {"trace", "--bogus", NULL};
	char	   *a6[] = {"trace", "--pid", NULL};
	char	   *a7[] = {"trace", "-x", NULL};

	CHECK_STR(explained(3, a1), "option --p is ambiguous: --probes, --pid, --pgdata");
	CHECK_STR(explained(3, a2), "");	/* a unique prefix is taken */
	CHECK_STR(explained(2, a3), "option --stats takes no value");
	CHECK_STR(explained(2, a4), "option --stats takes no value");
	CHECK_STR(explained(2, a5), "unknown option --bogus");
	CHECK_STR(explained(2, a6), "option --pid needs a value");
	CHECK_STR(explained(2, a7), "unknown option -x");
}

/* a module's configure function: takes "good", says what is wrong otherwise */
static int	configured;

static int
configure_good(const char *arg, char *err, size_t errlen)
{
	if (strcmp(arg, "good") != 0)
	{
		snprintf(err, errlen, "\"%s\": use good", arg);
		return -1;
	}
	configured++;
	return 0;
}

static void
test_module_option(void)
{
	static const module_option table[] = {{'a', "--alpha", configure_good},
	{'b', "--beta", configure_good}};
	char		msg[64] = "";

	CHECK_INT(parse_module_option(table, 2, 'b', "good", msg, sizeof(msg)), 0);
	CHECK_INT(configured, 1);
	CHECK_INT(parse_module_option(table, 2, 'a', "bad", msg, sizeof(msg)), -1);
	CHECK_STR(msg, "--alpha: \"bad\": use good");
	CHECK_INT(configured, 1);
	/* not a module's option (getopt's '?' among them): left to the caller */
	CHECK_INT(parse_module_option(table, 2, '?', NULL, msg, sizeof(msg)), 1);
	CHECK_INT(parse_module_option(table, 0, 'a', "good", msg, sizeof(msg)), 1);
	CHECK_INT(configured, 1);
}

int
main(void)
{
	test_decimal();
	test_duration();
	test_bad_option();
	test_explain_option();
	test_module_option();
	UNIT_MAIN_END("test_parse_num");
}
