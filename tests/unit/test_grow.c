/* rh_grow_try / rh_grow (common/grow.h): capacities double from the first
 * size, contents survive a reallocation, and sizes that cannot be
 * allocated fail without touching the array. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/common/check.h"
#include "common/grow.h"

int main(void)
{
	size_t cap = 0;
	uint32_t *a = rh_grow_try(NULL, &cap, 0, sizeof *a, 16);
	CHECK(a && cap == 16, "need 0 still allocates the first size (cap %zu)", cap);
	uint32_t *same = rh_grow_try(a, &cap, 16, sizeof *a, 16);
	CHECK(same == a && cap == 16, "room already: same array, same capacity (cap %zu)", cap);
	for (uint32_t i = 0; i < 16; i++)
		a[i] = i * 7;
	a = rh_grow_try(a, &cap, 17, sizeof *a, 16);
	CHECK(a && cap == 32, "one past: doubled to 32 (cap %zu)", cap);
	a = rh_grow_try(a, &cap, 200, sizeof *a, 16);
	CHECK(a && cap == 256, "200 needs three doublings: 256 (cap %zu)", cap);
	int kept = 1;
	for (uint32_t i = 0; a && i < 16; i++)
		kept &= a[i] == i * 7;
	CHECK(kept, "the contents moved with the array");

	/* Too large: the element count overflows the doubling, or the byte
	 * size overflows size_t. */
	size_t before = cap;
	CHECK(rh_grow_try(a, &cap, SIZE_MAX, sizeof *a, 16) == NULL);
	CHECK(cap == before, "cap unchanged on failure (%zu)", cap);
	CHECK(rh_grow_try(a, &cap, SIZE_MAX / 2, sizeof *a, 16) == NULL);
	CHECK(cap == before && a[15] == 15 * 7, "and the array is still usable");

	/* A first size of 0 is taken as 1. */
	size_t c1 = 0;
	uint64_t *b = rh_grow(NULL, &c1, 3, sizeof *b, 0, "test");
	CHECK(b && c1 == 4, "first 0: 1, 2, 4 (cap %zu)", c1);
	free(b);
	free(a);
	return check_done();
}
