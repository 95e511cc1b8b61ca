/* Eden's choice of free region (pretouch.P4, docs/collector.md): while no
 * more regions are warm than the next pause's copies need (warm_reserve),
 * eden takes a cold one, and the pause keeps the warm ones; past the
 * reserve it takes a warm one first. The free list's top is warm here, as
 * after a pause, which pushes the regions it releases there: taking the
 * top regardless (the bug this catches) spent the reserve on eden, and
 * listscan's pauses then copied into fresh pages, 3,600-5,600 faults
 * each. Driven through the region calls directly, on a heap with no
 * pretouch thread and no mutator, so nothing else moves the free list. */
#include "runtime/internal.h"
#include "th.h"

#define WARM 4

/* Whether eden's next region was a warm one; *i is its index. */
static int eden_took_warm(rh_heap *h, int64_t *i)
{
	pthread_mutex_lock(&h->alloc_lock);
	uint32_t before = h->n_warm;
	*i = rh_region_take_eden(h);
	int warm = h->n_warm < before;
	pthread_mutex_unlock(&h->alloc_lock);
	return warm;
}

int main(void)
{
	rh_config cfg;
	th_config(&cfg, 64, 256);
	cfg.pretouch = false;
	rh_heap *h = th_open(&cfg);

	/* WARM regions readied as the pretouch thread would, each put back
	 * on top of the free list. */
	pthread_mutex_lock(&h->alloc_lock);
	h->warm_limit = h->n_warm + WARM;
	uint32_t warm0 = h->n_warm;
	for (int k = 0; k < WARM; k++) {
		int64_t c = rh_region_claim_cold(h, 8);
		REQUIRE(c >= 0, "a cold region to ready");
		rh_region_touch(h, &h->regions[c]);
		rh_region_unclaim_warm(h, &h->regions[c]);
	}
	REQUIRE(h->n_warm == warm0 + WARM, "%u warm", h->n_warm);
	REQUIRE(h->regions[h->free_list[h->n_free - 1]].warm, "the free list's top is warm");
	h->warm_reserve = h->n_warm; /* every warm region is the pause's */
	pthread_mutex_unlock(&h->alloc_lock);

	int64_t a, b, c;
	CHECK(!eden_took_warm(h, &a), "at the reserve, eden takes a cold region");
	CHECK(!eden_took_warm(h, &b), "and again");
	CHECK(a >= 0 && b >= 0 && h->n_warm == warm0 + WARM,
	      "the pause's %u warm regions untouched", h->n_warm);

	pthread_mutex_lock(&h->alloc_lock);
	h->warm_reserve = warm0 + WARM - 1;
	pthread_mutex_unlock(&h->alloc_lock);
	CHECK(eden_took_warm(h, &c), "past the reserve, eden takes a warm region first");
	CHECK(h->n_warm == warm0 + WARM - 1, "one warm region fewer: %u", h->n_warm);

	pthread_mutex_lock(&h->alloc_lock);
	int64_t taken[] = {a, b, c};
	for (int k = 0; k < 3; k++)
		if (taken[k] >= 0)
			rh_region_release(h, &h->regions[taken[k]]);
	pthread_mutex_unlock(&h->alloc_lock);
	rh_heap_close(h);
	return check_done();
}
