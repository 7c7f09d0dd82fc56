/*
 * unit.h — the smallest test harness that does the job.
 *
 * CHECK(cond, ...) records one test case and prints the failing condition;
 * UNIT_MAIN_END prints "<program>: N passed, N failed" and sets the exit
 * status, the line scripts/test.sh adds up.
 */
#ifndef PGT_UNIT_H
#define PGT_UNIT_H

#include <stdio.h>

static int	unit_passed;
static int	unit_failed;

#define CHECK(cond, ...) \
	do { \
		if (cond) \
			unit_passed++; \
		else \
		{ \
			unit_failed++; \
			fprintf(stderr, "%s:%d: FAILED: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__); \
			fputc('\n', stderr); \
		} \
	} while (0)

#define UNIT_MAIN_END(name) \
	do { \
		printf("%s: %d passed, %d failed\n", (name), unit_passed, unit_failed); \
		return unit_failed == 0 ? 0 : 1; \
	} while (0)

#endif
