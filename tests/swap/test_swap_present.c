/* Pages still mapped when their state says they are not stay consistent.
 *
 * Pinned: pages the kernel refuses to drop (mlock()ed, so MADV_DONTNEED
 * fails) stay resident, CLEAN and counted; a write to one goes through;
 * flushing their region reports them instead of pretending the memory
 * server is their only holder; once unlocked they evict and come back
 * intact.
 *
 * Zero runs: a write to a fresh page installs a run of pages in one
 * fault; a run that meets a page mapped against its state stops there,
 * keeps that page's bytes and counts it.
 *
 * Raced: a page found mapped when the fault thread installs it by
 * readahead (UFFDIO_COPY says EEXIST; made here by marking a resident page
 * EVICTED behind the swap system's back) ends DIRTY and counted, not
 * FETCHING forever: writes to it go through, and it is written back.
 *
 * usage: test-swap-present TRACERD PROVIDER
 */
#include <sys/syscall.h>

#include "runtime/internal.h"
#include "swap/internal.h"
#include "tests/common/check.h"
#include "tests/common/cluster.h"
#include "tests/swap/pages.h"

#define PAGES 16
#define LOCKED_FIRST 4
#define LOCKED_N 3

/* A write to a mapped page whose state says EVICTED or FETCHING takes
 * write-protect faults forever:
 * fail with a reason rather than by the harness's timeout. */
static void on_alarm(int sig)
{
	static const char msg[] =
	        "not ok: stuck (a fault retried forever on a page mapped against its state?)\n";
	ssize_t w = write(1, msg, sizeof msg - 1);
	(void)w;
	(void)sig;
	_exit(1);
}

static size_t count_state(rh_swap *s, uintptr_t a, size_t n, uint8_t st)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += rh_swap_page_state(s, a + i * RH_PAGE_SIZE) == st;
	return k;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGALRM, on_alarm);
	alarm(40);
	cluster_test ct = {.timeout_ms = 3000};
	int rc = cluster_test_begin(&ct, argc, argv, "");
	if (rc)
		return rc;
	rh_heap *h = ct.heap;
	rh_error err;
	rh_type_id t_bytes = swap_bytes_type(h, &err);
	static void *arr;
	rh_global_add(h, &arr);
	rh_mutator *m = rh_mutator_attach(h, &err);
	/* No allocation from here on and the mutator never parks: nothing
	 * collects, nothing moves. */
	uintptr_t p0 = swap_pattern_pages(m, t_bytes, &arr, PAGES);
	CHECK(p0 != 0, "allocate the array");
	if (!p0)
		goto out;
	uint8_t *pages = (uint8_t *)p0;
	uint32_t region = rh_region_index(h, p0);
	CHECK(rh_region_index(h, p0 + PAGES * RH_PAGE_SIZE - 1) == region,
	      "the pages lie in one region");
	uint8_t *locked = pages + LOCKED_FIRST * RH_PAGE_SIZE;
	/* The system calls themselves: AddressSanitizer makes mlock() a
	 * no-op. */
	if (syscall(SYS_mlock, locked, LOCKED_N * RH_PAGE_SIZE) != 0) {
		printf("# mlock: %s: skipped\n", strerror(errno));
		rh_mutator_detach(m);
		cluster_test_end(&ct);
		return 77;
	}
	rh_swap *s = h->swap;
	rh_swap_stats s0, s1;
	rh_swap_stats_get(s, &s0);

	rc = rh_swap_flush_region(s, region, &err);
	CHECK(rc != RH_OK && strstr(err.msg, "could not be dropped"),
	      "flushing a region with locked pages fails, saying so (%s)",
	      rc == RH_OK ? "it succeeded" : err.msg);
	rh_swap_stats_get(s, &s1);
	CHECK(s1.drop_failures >= s0.drop_failures + LOCKED_N,
	      "the %d locked pages are counted as not dropped (%llu)", LOCKED_N,
	      (unsigned long long)(s1.drop_failures - s0.drop_failures));
	CHECK(count_state(s, (uintptr_t)locked, LOCKED_N, RH_PAGE_CLEAN) == LOCKED_N,
	      "they are CLEAN, not EVICTED");
	CHECK(count_state(s, p0, LOCKED_FIRST, RH_PAGE_EVICTED) == LOCKED_FIRST &&
	              count_state(s, p0 + (LOCKED_FIRST + LOCKED_N) * RH_PAGE_SIZE,
	                          PAGES - LOCKED_FIRST - LOCKED_N,
	                          RH_PAGE_EVICTED) == PAGES - LOCKED_FIRST - LOCKED_N,
	      "the other pages were evicted");

	/* Write-protected and CLEAN: one write-protect fault makes it DIRTY.
	 * (Left EVICTED, the fault would be retried forever.) */
	locked[5] ^= 0xff;
	CHECK(rh_swap_page_state(s, (uintptr_t)locked) == RH_PAGE_DIRTY,
	      "a write to a kept page goes through and dirties it");

	CHECK(syscall(SYS_munlock, locked, LOCKED_N * RH_PAGE_SIZE) == 0, "munlock");
	rc = rh_swap_flush_region(s, region, &err);
	CHECK(rc == RH_OK, "unlocked, the region flushes (%s)", rc == RH_OK ? "" : err.msg);
	CHECK(count_state(s, p0, PAGES, RH_PAGE_EVICTED) == PAGES, "every page is evicted");
	rh_swap_stats_get(s, &s0);
	CHECK(s0.drop_failures == s1.drop_failures, "with no further drop failures");

	/* Fetched back: the written byte and the rest. */
	size_t bad = 0;
	for (size_t i = 0; i < PAGES * RH_PAGE_SIZE; i++) {
		uint8_t want = pattern(i);
		if (i == LOCKED_FIRST * RH_PAGE_SIZE + 5)
			want ^= 0xff;
		bad += pages[i] != want;
	}
	CHECK(bad == 0, "the pages read back intact (%zu bytes differ)", bad);

	/* Raced. B is resident, A before it evicted; then B is marked
	 * EVICTED (and uncounted) while still mapped, as if a drop had been
	 * lost. A's fault reads B ahead and finds it mapped. */
	CHECK(rh_swap_flush_region(s, region, &err) == RH_OK, "flush the region again");
	rh_swap_set_readahead(s, 4);
	uintptr_t a = p0 + 3 * RH_PAGE_SIZE, b = a + RH_PAGE_SIZE;
	size_t ib = 4 * RH_PAGE_SIZE;
	volatile uint8_t *vp = pages;
	CHECK(vp[ib] == pattern(ib), "B reads back");
	settle(s);
	CHECK(rh_swap_page_state(s, b) == RH_PAGE_CLEAN &&
	              rh_swap_page_state(s, a) == RH_PAGE_EVICTED,
	      "B fetched CLEAN, A still EVICTED (%u, %u)", rh_swap_page_state(s, b),
	      rh_swap_page_state(s, a));
	pthread_rwlock_wrlock(&s->fault_lock);
	rh_swap_set(s, rh_swap_page(s, b), RH_PAGE_EVICTED);
	atomic_fetch_sub(&s->resident, 1);
	pthread_rwlock_unlock(&s->fault_lock);
	CHECK(vp[3 * RH_PAGE_SIZE] == pattern(3 * RH_PAGE_SIZE), "A reads back");
	settle(s);
	CHECK(rh_swap_page_state(s, b) == RH_PAGE_DIRTY,
	      "B, found mapped by A's readahead, is DIRTY (state %u)", rh_swap_page_state(s, b));
	rh_swap_stats_get(s, &s1);
	size_t counted = count_resident(s);
	CHECK(s1.resident_pages == counted,
	      "the resident count matches the CLEAN and DIRTY pages (%llu, %zu)",
	      (unsigned long long)s1.resident_pages, counted);
	vp[ib + 9] ^= 0x5a;
	settle(s);
	CHECK(vp[ib] == pattern(ib) && vp[ib + 9] == (uint8_t)(pattern(ib + 9) ^ 0x5a),
	      "B keeps its bytes and takes a write");
	CHECK(rh_swap_flush_region(s, region, &err) == RH_OK &&
	              rh_swap_page_state(s, b) == RH_PAGE_EVICTED,
	      "B is written back and evicted");
	CHECK(vp[ib + 9] == (uint8_t)(pattern(ib + 9) ^ 0x5a) && vp[ib] == pattern(ib),
	      "and fetched back with the write");

	/* Zero runs: a write to a fresh page installs it and the fresh
	 * pages after it in its region, RH_ZERO_RUN in all, in one fault. */
	static void *fresh;
	rh_global_add(h, &fresh);
	fresh = rh_alloc_array(m, t_bytes, 2 * h->region_size);
	CHECK(fresh != NULL && h->region_size >= 64 * RH_PAGE_SIZE,
	      "allocate a fresh two-region array (regions of %zu pages)",
	      (size_t)(h->region_size / RH_PAGE_SIZE));
	if (!fresh)
		goto out;
	uintptr_t q = ((uintptr_t)fresh + h->region_size) & ~(uintptr_t)(h->region_size - 1);
	CHECK(count_state(s, q, 48, RH_PAGE_INIT) == 48, "its second region is untouched");
	volatile uint8_t *vq = (volatile uint8_t *)q;
	vq[0] = 0x77;
	settle(s);
	rh_swap_stats_get(s, &s1);
	/* Only page 0 was written: the others are DIRTY only if the run
	 * installed them (a page installed alone for a read is CLEAN). */
	CHECK(count_state(s, q, RH_ZERO_RUN, RH_PAGE_DIRTY) == RH_ZERO_RUN &&
	              rh_swap_page_state(s, q + RH_ZERO_RUN * RH_PAGE_SIZE) == RH_PAGE_INIT,
	      "it installed %u pages, DIRTY, and no more", RH_ZERO_RUN);
	CHECK(vq[0] == 0x77 && vq[1] == 0 && vq[RH_ZERO_RUN * RH_PAGE_SIZE - 1] == 0,
	      "the write landed and the run reads as zeros");
	CHECK(s1.resident_pages == count_resident(s), "the run is counted as resident");

	/* A run cut short: page 3 of it is mapped though its state says
	 * INIT (made behind the swap system's back, as above). */
	uintptr_t r = q + 20 * RH_PAGE_SIZE;
	volatile uint8_t *vr = (volatile uint8_t *)r;
	vr[3 * RH_PAGE_SIZE] = 0x66;
	settle(s);
	pthread_rwlock_wrlock(&s->fault_lock);
	rh_swap_set(s, rh_swap_page(s, r + 3 * RH_PAGE_SIZE), RH_PAGE_INIT);
	atomic_fetch_sub(&s->resident, 1);
	pthread_rwlock_unlock(&s->fault_lock);
	vr[0] = 0x55;
	settle(s);
	CHECK(count_state(s, r, 4, RH_PAGE_DIRTY) == 4,
	      "the pages before the mapped one and the mapped one end DIRTY");
	CHECK(vr[0] == 0x55 && vr[3 * RH_PAGE_SIZE] == 0x66,
	      "the mapped page keeps its bytes (not overwritten with zeros)");
	rh_swap_stats_get(s, &s1);
	CHECK(s1.resident_pages == count_resident(s), "and the resident count matches (%llu, %zu)",
	      (unsigned long long)s1.resident_pages, count_resident(s));
	CHECK(rh_swap_flush_region(s, rh_region_index(h, q), &err) == RH_OK, "the region flushes");
	CHECK(vq[0] == 0x77 && vr[0] == 0x55 && vr[3 * RH_PAGE_SIZE] == 0x66 && vq[5] == 0,
	      "and reads back from its memory server");
	fresh = NULL;
out:
	arr = NULL;
	rh_mutator_detach(m);
	return cluster_test_end(&ct);
}
