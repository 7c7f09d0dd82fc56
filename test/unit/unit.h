/*
 * test/unit/unit.h
 *	  Tiny assertion macros shared by the C unit tests.  Each test program
 *	  counts checks, prints "<prog>: N passed, N failed" and exits non-zero
 *	  when anything failed (return UNIT_DONE(name), or UNIT_MAIN_END(name)
 *	  as the last statement of main).
 */
#ifndef PGT_UNIT_H
#define PGT_UNIT_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static int	unit_passed __attribute__((unused));
static int	unit_failed __attribute__((unused));

/*
 * unit_drop_root
 *		When root, become nobody (65534), dumpable again as an exec after su
 *		leaves a server: the helper reads only the memory of plain processes
 *		(procfs_plain_process), and PostgreSQL never runs as root.  For the
 *		tests that read the memory of their own children.  0, or -1.
 */
static int __attribute__((unused))
unit_drop_root(void)
{
	if (geteuid() != 0)
		return 0;
	if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0 ||
		prctl(PR_SET_DUMPABLE, 1) != 0)
		return -1;
	return 0;
}

/* The optional printf-style description of a CHECK (not format-checked). */
static void __attribute__((unused))
unit_describe(const char *fmt, ...)
{
	va_list		ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

/*
 * CHECK(cond) or CHECK(cond, "what %d", arg...): count a passed check, or
 * count a failure and print where, the condition and the description.
 */
#define CHECK(...) UNIT_CHECK_(__VA_ARGS__, "")
#define UNIT_CHECK_(cond, ...) \
	do { \
		if (cond) \
			unit_passed++; \
		else \
		{ \
			unit_failed++; \
			fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
			unit_describe(__VA_ARGS__); \
			fputc('\n', stderr); \
		} \
	} while (0)

#define CHECK_INT(a, b) \
	do { \
		long long _a = (long long) (a); \
		long long _b = (long long) (b); \
		if (_a == _b) \
			unit_passed++; \
		else \
		{ \
			unit_failed++; \
			fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", \
					__FILE__, __LINE__, #a, _a, #b, _b); \
		} \
	} while (0)

#define CHECK_STR(a, b) \
	do { \
		const char *_a = (a); \
		const char *_b = (b); \
		if (_a != NULL && _b != NULL && strcmp(_a, _b) == 0) \
			unit_passed++; \
		else \
		{ \
			unit_failed++; \
			fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n", \
					__FILE__, __LINE__, #a, _a ? _a : "(null)", _b ? _b : "(null)"); \
		} \
	} while (0)

/* Check that err mentions a substring (rejections say why). */
#define CHECK_CONTAINS(hay, needle) \
	do { \
		const char *_h = (hay); \
		if (_h != NULL && strstr(_h, (needle)) != NULL) \
			unit_passed++; \
		else \
		{ \
			unit_failed++; \
			fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", \
					__FILE__, __LINE__, _h ? _h : "(null)", (needle)); \
		} \
	} while (0)

#define UNIT_DONE(name) \
	(printf("%s: %d passed, %d failed\n", (name), unit_passed, unit_failed), \
	 unit_failed == 0 ? 0 : 1)

/* Last statement of a test's main(): print the counts and return. */
#define UNIT_MAIN_END(name) return UNIT_DONE(name)

#endif							/* PGT_UNIT_H */
