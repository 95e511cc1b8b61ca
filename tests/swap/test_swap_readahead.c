/* Adaptive readahead (docs/swap.md, "Readahead").
 *
 * Sequential: reading an evicted region page by page keeps the window at
 * its largest, so the region comes back in one fault per window.
 * Random: reading it in a scattered order shrinks the window at every
 * fault, so at most 8 + 4 + 2 + 1 pages are read ahead in all; the same
 * order with a fixed window reads ahead several times more.
 * Sequential reads after scattered ones double the window back.
 * A new window (rh_swap_set_readahead) starts every region over.
 * Every read returns the bytes written before the eviction.
 *
 * usage: test-swap-readahead TRACERD PROVIDER
 */
#include "runtime/internal.h"
#include "swap/internal.h"
#include "tests/common/check.h"
#include "tests/common/cluster.h"
#include "tests/swap/pages.h"

#define WINDOW 8

typedef struct pass {
	uint64_t faults, ra_pages;
	size_t bad; /* bytes read back wrong */
} pass;

/* Evict region `region` (whose bytes start at `base`, offset `off` in the
 * pattern), then read one byte of every page in `order`. */
static pass read_pages(rh_swap *s, uint32_t region, const uint8_t *base, size_t off,
                       const uint32_t *order, size_t n)
{
	pass p = {0};
	rh_error err;
	CHECK(rh_swap_flush_region(s, region, &err) == RH_OK, "flush region %u", region);
	rh_swap_stats s0, s1;
	rh_swap_stats_get(s, &s0);
	const volatile uint8_t *v = base;
	for (size_t k = 0; k < n; k++) {
		size_t i = (size_t)order[k] * RH_PAGE_SIZE + 17;
		p.bad += v[i] != pattern(off + i);
	}
	settle(s);
	rh_swap_stats_get(s, &s1);
	p.faults = s1.faults - s0.faults;
	p.ra_pages = s1.readahead_pages - s0.readahead_pages;
	return p;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	swap_deadline(40);
	cluster_test ct = {.timeout_ms = 3000};
	int rc = cluster_test_begin(&ct, argc, argv, "");
	if (rc)
		return rc;
	rh_heap *h = ct.heap;
	rh_error err;
	rh_swap *s = h->swap;
	CHECK(s->o.readahead_adaptive && s->readahead == WINDOW,
	      "the default is adaptive, at most %d pages (%d, %u)", WINDOW,
	      (int)s->o.readahead_adaptive, s->readahead);
	rh_type_id t_bytes = swap_bytes_type(h, &err);
	static void *arr;
	rh_global_add(h, &arr);
	rh_mutator *m = rh_mutator_attach(h, &err);
	/* Humongous, so region-aligned: regions 1 and 2 of its span lie
	 * wholly inside it. Nothing allocates from here on: nothing moves. */
	arr = rh_alloc_array(m, t_bytes, 4 * h->region_size);
	CHECK(arr != NULL, "allocate a four-region array");
	if (!arr)
		goto out;
	uint8_t *all = (uint8_t *)arr + 16;
	size_t len = 4 * h->region_size;
	for (size_t i = 0; i < len; i++)
		all[i] = pattern(i);
	uintptr_t r1 = ((uintptr_t)arr & ~(uintptr_t)(h->region_size - 1)) + h->region_size;
	uint32_t reg1 = rh_region_index(h, r1), reg2 = reg1 + 1;
	size_t off1 = r1 - (uintptr_t)all, off2 = off1 + h->region_size;
	const uint8_t *b1 = (const uint8_t *)r1, *b2 = b1 + h->region_size;
	uint32_t np = (uint32_t)(h->region_size / RH_PAGE_SIZE);
	CHECK(np >= 64, "regions of at least 64 pages (%u)", np);
	if (np < 64)
		goto out;

	uint32_t *seq = malloc(np * sizeof *seq), *scat = malloc(np * sizeof *scat);
	for (uint32_t i = 0; i < np; i++) {
		seq[i] = i;
		/* 23 is odd, so i * 23 mod np (a power of two) visits every
		 * page; consecutive pages lie 23 apart. */
		scat[i] = (uint32_t)((uint64_t)i * 23 % np);
	}
	uint64_t best = (np + WINDOW) / (WINDOW + 1);

	pass p = read_pages(s, reg1, b1, off1, seq, np);
	CHECK(p.bad == 0, "sequential: every byte reads back (%zu wrong)", p.bad);
	CHECK(p.faults == best, "sequential: %llu faults for %u pages, one per window of %d",
	      (unsigned long long)p.faults, np, WINDOW + 1);

	p = read_pages(s, reg2, b2, off2, scat, np);
	CHECK(p.bad == 0, "scattered: every byte reads back (%zu wrong)", p.bad);
	CHECK(p.ra_pages <= 8 + 4 + 2 + 1,
	      "scattered: the window shrinks at each fault (%llu pages read ahead)",
	      (unsigned long long)p.ra_pages);
	uint64_t adaptive_ra = p.ra_pages;

	/* The same order with the window fixed. */
	pthread_rwlock_wrlock(&s->fault_lock);
	s->o.readahead_adaptive = false;
	pthread_rwlock_unlock(&s->fault_lock);
	p = read_pages(s, reg2, b2, off2, scat, np);
	CHECK(p.bad == 0, "scattered, fixed window: every byte reads back (%zu wrong)", p.bad);
	CHECK(p.ra_pages >= 3 * adaptive_ra && p.ra_pages >= np / 2,
	      "scattered, fixed window: %llu pages read ahead, against %llu adaptive",
	      (unsigned long long)p.ra_pages, (unsigned long long)adaptive_ra);
	pthread_rwlock_wrlock(&s->fault_lock);
	s->o.readahead_adaptive = true;
	pthread_rwlock_unlock(&s->fault_lock);

	/* Region 2's window is small now; reading it in order doubles it
	 * back (1, 2, 4, 8: four faults more than from the start), and a new
	 * window starts it over at once. */
	p = read_pages(s, reg2, b2, off2, scat, np);
	CHECK(s->ra_win[reg2] <= 1, "after scattered reads region %u's window is %u", reg2,
	      s->ra_win[reg2]);
	p = read_pages(s, reg2, b2, off2, seq, np);
	CHECK(p.bad == 0, "sequential after scattered: every byte reads back (%zu wrong)", p.bad);
	CHECK(p.faults > best && p.faults <= best + 4,
	      "sequential after scattered: the window grows back (%llu faults, %llu from the "
	      "start)",
	      (unsigned long long)p.faults, (unsigned long long)best);
	p = read_pages(s, reg2, b2, off2, scat, np);
	rh_swap_set_readahead(s, WINDOW);
	p = read_pages(s, reg2, b2, off2, seq, np);
	CHECK(p.bad == 0, "sequential again: every byte reads back (%zu wrong)", p.bad);
	CHECK(p.faults == best, "set_readahead starts the region over: %llu faults",
	      (unsigned long long)p.faults);
	free(seq);
	free(scat);
out:
	rh_mutator_detach(m);
	return cluster_test_end(&ct);
}
