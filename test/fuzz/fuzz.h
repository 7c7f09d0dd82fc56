/*
 * test/fuzz/fuzz.h
 *	  What every fuzz target shares: the property check that fails a run,
 *	  and the checks of what a parser hands back (strings terminated inside
 *	  their fields, error text printable).
 *
 * The targets are libFuzzer programs built with AddressSanitizer and
 * UndefinedBehaviorSanitizer (Makefile: fuzz), so a read past the input,
 * an overflow or a leak fails a run by itself; the checks here add what a
 * sanitizer cannot see: a parser that returns success with a result its
 * callers cannot trust.
 */
#ifndef PGT_TEST_FUZZ_H
#define PGT_TEST_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fail the run (libFuzzer saves the input as a crash) when cond is false. */
#define FUZZ_EXPECT(cond) \
	do { \
		if (!(cond)) \
		{ \
			fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #cond); \
			abort(); \
		} \
	} while (0)

/* Is field (len bytes) a C string that ends inside it? */
static inline int
fuzz_terminated(const char *field, size_t len)
{
	return memchr(field, '\0', len) != NULL;
}

/*
 * Is the NUL-terminated s printable ASCII throughout?  Error text and names
 * a parser returns end up in the helper's log and in SQL results: a byte of
 * the input that is a terminal escape or a newline must not get there raw.
 */
static inline int
fuzz_printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char) *s < 0x20 || (unsigned char) *s > 0x7e)
			return 0;
	return 1;
}

/* A NUL-terminated malloc'd copy of data, for parsers that take C strings. */
static inline char *
fuzz_cstring(const uint8_t *data, size_t size)
{
	char	   *s = malloc(size + 1);

	if (s == NULL)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/*
 * A malloc'd copy of data of exactly size bytes, with no terminating NUL
 * (one byte is allocated for an empty input), for parsers that take a
 * buffer and a length: AddressSanitizer then faults a read one past its
 * end, which a NUL-terminated copy would hide.
 */
static inline void *
fuzz_exact_copy(const uint8_t *data, size_t size)
{
	void	   *copy = malloc(size ? size : 1);

	if (copy == NULL)
		abort();
	memcpy(copy, data, size);
	return copy;
}

#endif							/* PGT_TEST_FUZZ_H */
