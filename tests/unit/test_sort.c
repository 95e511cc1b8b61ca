/* rh_sort_u64 (common/sort.c) against qsort on the same keys: small
 * arrays (insertion sort), keys of one to eight bytes (as many radix
 * passes), duplicates, already sorted and reversed input. And
 * rh_remset_keep (gc/remset.c): the set keeps exactly the cards named,
 * as rh_remset_filter with a predicate naming them does. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/common/check.h"
#include "tests/common/rng.h"
#include "common/sort.h"
#include "gc/remset.h"

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Sort n keys drawn with mask (and dup: from a few values) both ways. */
static void one(size_t n, uint64_t mask, int dup, int order, uint64_t seed)
{
	uint64_t *a = malloc((n ? n : 1) * sizeof *a), *b = malloc((n ? n : 1) * sizeof *b);
	REQUIRE(a && b, "out of memory");
	for (size_t i = 0; i < n; i++) {
		uint64_t k = rng_mix(seed + i) & mask;
		if (dup)
			k = (rng_mix(seed + i) % 5) * (mask / 7 + 1);
		if (order == 1)
			k = i & mask;
		if (order == 2)
			k = (n - i) & mask;
		a[i] = b[i] = k;
	}
	rh_sort_u64(a, n);
	qsort(b, n, sizeof *b, cmp);
	CHECK(memcmp(a, b, n * sizeof *a) == 0, "n %zu mask %#llx dup %d order %d: differs", n,
	      (unsigned long long)mask, dup, order);
	free(a);
	free(b);
}

static int names(void *ctx, uint64_t card)
{
	const uint64_t *keep = ctx;
	for (size_t i = 0; keep[i] != UINT64_MAX; i++)
		if (keep[i] == card)
			return 1;
	return 0;
}

static void keep_case(void)
{
	rh_remset a = {0}, b = {0};
	for (uint64_t c = 0; c < 300; c++) {
		CHECK(rh_remset_add(&a, c * 3 + 1000, c, 8192) == 1);
		CHECK(rh_remset_add(&b, c * 3 + 1000, c, 8192) == 1);
	}
	uint64_t keep[101];
	size_t n = 0;
	for (uint64_t c = 0; c < 300; c += 3)
		keep[n++] = c * 3 + 1000;
	keep[n] = UINT64_MAX;
	rh_remset_keep(&a, keep, n);
	rh_remset_filter(&b, names, keep);
	CHECK(a.n_cards == n && b.n_cards == n, "kept %zu and %zu cards of %zu", a.n_cards,
	      b.n_cards, n);
	for (uint64_t c = 0; c < 300; c++) {
		int want = c % 3 == 0;
		CHECK(rh_remset_has_card(&a, c * 3 + 1000) == want, "card %llu",
		      (unsigned long long)(c * 3 + 1000));
		CHECK(rh_remset_has_card(&b, c * 3 + 1000) == want);
		CHECK(rh_remset_has_target(&a, c), "target bits stay");
	}
	rh_remset_keep(&a, keep, 0);
	CHECK(a.n_cards == 0 && !rh_remset_has_card(&a, 1000), "keeping none empties the set");
	CHECK(rh_remset_add(&a, 1000, 0, 8192) == 1, "and it takes cards again");
	rh_remset_free(&a);
	rh_remset_free(&b);
	rh_remset empty = {0};
	rh_remset_keep(&empty, keep, 0); /* no table yet: nothing to do */
	CHECK(empty.cap == 0);
}

/* rset.D2: a target bit set alone, without its card, says whether it was
 * new, and a later rh_remset_add of the same reference adds the card. */
static void target_case(void)
{
	rh_remset a = {0};
	CHECK(rh_remset_set_target(&a, 77, 8192) == 1, "a new bit");
	CHECK(rh_remset_set_target(&a, 77, 8192) == 0, "the same bit again");
	CHECK(rh_remset_has_target(&a, 77) && !rh_remset_has_target(&a, 78));
	CHECK(a.n_cards == 0 && !rh_remset_has_card(&a, 5000), "no card with the bit");
	CHECK(rh_remset_add(&a, 5000, 77, 8192) == 1, "the card filed later is new");
	CHECK(rh_remset_has_card(&a, 5000) && rh_remset_has_target(&a, 77));
	rh_remset_free(&a);
}

int main(void)
{
	static const size_t sizes[] = {0, 1, 2, 47, 48, 49, 1000, 100003};
	static const uint64_t masks[] = {0xff, 0xffff, 0xffffffffull, 0xffffffffffffull,
	                                 UINT64_MAX};
	uint64_t seed = 1;
	for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
		for (size_t m = 0; m < sizeof masks / sizeof *masks; m++)
			for (int dup = 0; dup < 2; dup++)
				for (int order = 0; order < 3; order++)
					one(sizes[s], masks[m], dup, order, seed++ * 1000003);
	keep_case();
	target_case();
	return check_done();
}
