/* Arrays grown by doubling, for the many growing lists of rheap. Header
 * only: every user links common/ already, and the calls sit on paths that
 * are hot while the array is small. */
#ifndef RH_GROW_H
#define RH_GROW_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/common.h"

/* p, an array of *cap elements of elem bytes (NULL when *cap is 0), with
 * room for at least need elements: the same pointer if it had room, else
 * the array reallocated to `first` elements doubled as often as needed, and
 * *cap updated. NULL only when out of memory (or the size overflows); p and
 * *cap are then left as they were. A NULL array is allocated even for need
 * 0, so that NULL always means failure. */
static inline void *rh_grow_try(void *p, size_t *cap, size_t need, size_t elem, size_t first)
{
	if (need == 0)
		need = 1;
	if (need <= *cap)
		return p;
	size_t n = *cap ? *cap : first ? first : 1;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return NULL;
		n *= 2;
	}
	if (elem && n > SIZE_MAX / elem)
		return NULL;
	void *q = realloc(p, n * elem);
	if (!q)
		return NULL;
	*cap = n;
	return q;
}

/* As rh_grow_try, for callers that cannot go on without the memory: out of
 * memory ends the process with a message naming who ran out (what, e.g.
 * "collector"). */
static inline void *rh_grow(void *p, size_t *cap, size_t need, size_t elem, size_t first,
                            const char *what)
{
	void *q = rh_grow_try(p, cap, need, elem, first);
	if (!q)
		rh_panic("%s: out of memory growing an array to %zu entries of %zu bytes", what,
		         need, elem);
	return q;
}

#endif
