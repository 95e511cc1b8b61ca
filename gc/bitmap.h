/* Word bitmaps over address ranges: one bit per 8-byte heap word. */
#ifndef RH_GC_BITMAP_H
#define RH_GC_BITMAP_H

#include <stddef.h>
#include <stdint.h>

static inline int rh_bit_get(const uint64_t *bm, size_t i)
{
	return (bm[i >> 6] >> (i & 63)) & 1;
}
static inline void rh_bit_set(uint64_t *bm, size_t i)
{
	bm[i >> 6] |= 1ull << (i & 63);
}
static inline void rh_bit_clear(uint64_t *bm, size_t i)
{
	bm[i >> 6] &= ~(1ull << (i & 63));
}
/* Largest set bit index <= i, at or above lo; SIZE_MAX if none. */
static inline size_t rh_bit_prev(const uint64_t *bm, size_t i, size_t lo)
{
	for (;;) {
		uint64_t w = bm[i >> 6] & (~0ull >> (63 - (i & 63)));
		if (w) {
			size_t b = (i & ~(size_t)63) + 63 - (size_t)__builtin_clzll(w);
			return b >= lo ? b : SIZE_MAX;
		}
		if ((i & ~(size_t)63) <= lo)
			return SIZE_MAX;
		i = (i & ~(size_t)63) - 1;
	}
}

#endif
