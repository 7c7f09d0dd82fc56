/*
 * common/pgt_utf8.h
 *	  Telling well-formed UTF-8 from other bytes, for text the helper prints
 *	  or writes as JSON or into the segment (statement text, process titles,
 *	  paths, role names) and for text the extension shows in SQL: a
 *	  well-formed character passes through, anything else is replaced.
 *	  Plain C, no dependencies: the helper, the extension and the unit
 *	  tests include it.
 */
#ifndef PGT_UTF8_H
#define PGT_UTF8_H

#include <stddef.h>
#include <stdint.h>

/*
 * pgt_utf8_len
 *		The length (2..4) of the well-formed multi-byte character at p, of
 *		which n bytes are available: no overlong forms, no surrogates, no
 *		code point past U+10FFFF.  0 when p does not start one (including
 *		a plain ASCII byte); -1 when the n bytes are a well-formed start
 *		that was cut short.
 */
static inline int
pgt_utf8_len(const unsigned char *p, size_t n)
{
	int			len;
	unsigned char lo = 0x80;
	unsigned char hi = 0xbf;
	int			i;

	if (n == 0 || p[0] < 0xc2 || p[0] > 0xf4)
		return 0;
	len = p[0] < 0xe0 ? 2 : p[0] < 0xf0 ? 3 : 4;
	if (p[0] == 0xe0)
		lo = 0xa0;				/* overlong */
	else if (p[0] == 0xed)
		hi = 0x9f;				/* surrogates */
	else if (p[0] == 0xf0)
		lo = 0x90;				/* overlong */
	else if (p[0] == 0xf4)
		hi = 0x8f;				/* past U+10FFFF */
	for (i = 1; i < len; i++)
	{
		if ((size_t) i >= n)
			return -1;
		if (p[i] < (i == 1 ? lo : 0x80) || p[i] > (i == 1 ? hi : 0xbf))
			return 0;
	}
	return len;
}

/* Is the character of len bytes at p a C1 control (U+0080..U+009F)? */
static inline int
pgt_utf8_is_c1(const unsigned char *p, int len)
{
	return len == 2 && p[0] == 0xc2 && p[1] < 0xa0;
}

#endif							/* PGT_UTF8_H */
