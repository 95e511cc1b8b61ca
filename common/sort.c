/* Sorting unsigned 64-bit keys (common/sort.h). */
#include "common/sort.h"

#include <stdlib.h>
#include <string.h>

/* Below this many keys, insertion sort: the passes' counting costs more. */
#define SMALL 48

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void insertion(uint64_t *v, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		uint64_t k = v[i];
		size_t j = i;
		for (; j > 0 && v[j - 1] > k; j--)
			v[j] = v[j - 1];
		v[j] = k;
	}
}

/* One stable pass on the byte at `shift`, from src into dst. */
static void pass(const uint64_t *src, uint64_t *dst, size_t n, unsigned shift)
{
	size_t at[256] = {0};
	for (size_t i = 0; i < n; i++)
		at[(src[i] >> shift) & 0xff]++;
	size_t sum = 0;
	for (unsigned b = 0; b < 256; b++) {
		size_t c = at[b];
		at[b] = sum;
		sum += c;
	}
	for (size_t i = 0; i < n; i++)
		dst[at[(src[i] >> shift) & 0xff]++] = src[i];
}

void rh_sort_u64(uint64_t *v, size_t n)
{
	if (n < SMALL) {
		insertion(v, n);
		return;
	}
	uint64_t max = 0;
	for (size_t i = 0; i < n; i++)
		max |= v[i];
	unsigned passes = 0;
	while (passes < 8 && (max >> (8 * passes)))
		passes++;
	uint64_t *tmp = malloc(n * sizeof *tmp);
	if (!tmp) {
		qsort(v, n, sizeof *v, cmp_u64);
		return;
	}
	uint64_t *src = v, *dst = tmp;
	for (unsigned p = 0; p < passes; p++) {
		pass(src, dst, n, 8 * p);
		uint64_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof *v);
	free(tmp);
}
