/*
 * helper/sort_u32.h
 *	  The qsort/bsearch order of arrays whose elements begin with a
 *	  uint32_t key (pids, postmasters): one comparator for every such
 *	  array, so that a sort and the search over it cannot disagree.
 */
#ifndef PGT_HELPER_SORT_U32_H
#define PGT_HELPER_SORT_U32_H

#include <stdint.h>
#include <string.h>

/*
 * sort_cmp_u32
 *		Order of two elements by the uint32_t each begins with (read with
 *		memcpy: an element need not be aligned for it).
 */
static inline int
sort_cmp_u32(const void *a, const void *b)
{
	uint32_t	x;
	uint32_t	y;

	memcpy(&x, a, sizeof(x));
	memcpy(&y, b, sizeof(y));
	return x < y ? -1 : x > y;
}

#endif							/* PGT_HELPER_SORT_U32_H */
