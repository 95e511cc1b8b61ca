/* The evictor: keeps the resident set under budget, evicting per region in
 * batches under the dirty/version tag protocol (docs/swap.md, "Eviction"). */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "swap/internal.h"

static int wait_op(rh_swap *s, rh_tp_conn *c, uint64_t id, rh_error *err)
{
	return rh_tp_wait(c, id, (int)s->o.timeout_ms, err);
}

/* Steps 2.1-2.3 on the owner h: the pages sg[0..n) (in ebuf), then their
 * log entries, under the tag. */
static int write_home(rh_swap *s, const rh_swap_host *h, uint32_t region, const uintptr_t *pages,
                      rh_tp_sge *sg, size_t n, rh_error *err)
{
	rh_tp_conn *c = h->conn;
	uint32_t local = region - h->part.first_region;
	uint64_t meta = h->part.meta_base + (uint64_t)local * sizeof(rh_region_meta);
	uint64_t tag_addr = meta + offsetof(rh_region_meta, tag);
	uint64_t head_addr = meta + offsetof(rh_region_meta, log_head);
	uint64_t log_addr = meta + offsetof(rh_region_meta, log);
	uint64_t v = s->tag[region], old = 0;

	uint64_t id = rh_swap_wr_id(s);
	/* swap.T1: the dirty bit is set, by CAS, before any page is written. */
	int rc = rh_tp_cas(c, tag_addr, v, v + 3 /* <1, v+1> from <0, v> */, &old, id, err);
	if (rc == RH_OK)
		rc = wait_op(s, c, id, err);
	if (rc != RH_OK)
		return rc;
	if (old != v)
		return rh_err_set(err, RH_EPEER,
		                  "swap: region %u's tag is %#llx on its memory server, expected "
		                  "%#llx: another writer?",
		                  region, (unsigned long long)old, (unsigned long long)v);

	/* Pages, then the log entries; the ring may wrap once. */
	size_t k = n;
	uint32_t *ents = (uint32_t *)(void *)(s->ebuf + RH_EVICT_BATCH * RH_PAGE_SIZE);
	uint64_t head = s->log_head[region];
	uintptr_t rstart = s->base + ((uintptr_t)region << s->region_shift);
	for (size_t i = 0; i < n; i++)
		ents[i] = (uint32_t)((pages[i] - rstart) >> RH_PAGE_SHIFT);
	size_t slot = head % RH_LOG_ENTRIES, first = RH_LOG_ENTRIES - slot;
	if (first > n)
		first = n;
	sg[k++] = (rh_tp_sge){ents, log_addr + slot * 4, (uint32_t)(first * 4)};
	if (first < n)
		sg[k++] = (rh_tp_sge){ents + first, log_addr, (uint32_t)((n - first) * 4)};
	id = rh_swap_wr_id(s);
	if ((rc = rh_tp_write(c, sg, k, id, err)) != RH_OK ||
	    (rc = wait_op(s, c, id, err)) != RH_OK)
		return rc;
	/* The head moves only after the entries are in place (swap.T2). */
	id = rh_swap_wr_id(s);
	if ((rc = rh_tp_write8(c, head_addr, head + n, id, err)) != RH_OK ||
	    (rc = wait_op(s, c, id, err)) != RH_OK)
		return rc;
	id = rh_swap_wr_id(s);
	if ((rc = rh_tp_write8(c, tag_addr, v + 4 /* <0, v+2> */, id, err)) != RH_OK ||
	    (rc = wait_op(s, c, id, err)) != RH_OK)
		return rc;
	s->tag[region] = v + 4;
	s->log_head[region] = head + n;
	return RH_OK;
}

/* Step 2: write the dirty pages back to every host that is to hold them
 * and is up: the owner and, with replication, the copy's holder. red.R1:
 * the copy gets the same pages at the same addresses, with no tag or log
 * (nothing traces a copy); its write is posted first and waited for last,
 * so that on a provider with asynchronous writes it overlaps the owner's
 * tag protocol. A host that fails is lost (rh_swap_host_failed); the batch
 * succeeds while one holder is left (the pages are then on every host
 * that is up). */
static int write_back(rh_swap *s, uint32_t region, const uintptr_t *pages, size_t n, rh_error *err)
{
	const rh_swap_host *h = rh_swap_host_of(s, pages[0]);
	if (!h)
		return rh_err_set(err, RH_ERANGE, "swap: no memory server hosts %#lx",
		                  (unsigned long)pages[0]);
	rh_tp_sge sg[RH_EVICT_BATCH + 2];
	for (size_t i = 0; i < n; i++) {
		memcpy(s->ebuf + i * RH_PAGE_SIZE, (void *)pages[i], RH_PAGE_SIZE);
		rh_swap_sum_written(s, pages[i], s->ebuf + i * RH_PAGE_SIZE);
		sg[i] = (rh_tp_sge){s->ebuf + i * RH_PAGE_SIZE, pages[i], RH_PAGE_SIZE};
	}
	const rh_swap_host *copy = h->replica >= 0 ? rh_swap_slot(s, (size_t)h->replica) : NULL;
	if (copy && !rh_swap_host_writable(s, copy))
		copy = NULL;
	/* The debug switch skips only the second write, while the owner is up:
	 * once it is lost the copy is where pages go, as in any degraded run. */
	bool skipped = copy && s->o.skip_copies && rh_swap_host_writable(s, h);
	rh_error cerr;
	uint64_t cid = rh_swap_wr_id(s);
	int crc = copy && !skipped ? rh_tp_write(copy->conn, sg, n, cid, &cerr) : RH_OK;
	bool held = false;
	int rc = RH_OK;
	if (rh_swap_host_writable(s, h)) {
		rc = write_home(s, h, region, pages, sg, n, err);
		if (rc != RH_OK && !rh_swap_host_failed(s, h, err))
			return rc;
		held = rc == RH_OK;
	}
	if (skipped && !held)
		crc = rh_tp_write(copy->conn, sg, n, cid, &cerr);
	if (copy && (!skipped || !held)) {
		if (crc == RH_OK)
			crc = wait_op(s, copy->conn, cid, &cerr);
		if (crc != RH_OK && !rh_swap_host_failed(s, copy, &cerr)) {
			*err = cerr;
			return crc;
		}
		held |= crc == RH_OK;
	}
	if (!held) /* no holder left: rh_swap_host_failed called the fatal handler */
		return rh_err_set(err, RH_EPEER, "swap: no memory server left for region %u",
		                  region);
	atomic_fetch_add(&s->st.bytes_evicted, n * RH_PAGE_SIZE);
	atomic_fetch_add(&s->st.batches, 1);
	return RH_OK;
}

/* MADV_DONTNEED failed on a page: it stays mapped (and resident). Said
 * once per swap system: a cause such as an mlock()ed heap fails every page
 * from then on. */
static void drop_failed(rh_swap *s, uintptr_t a)
{
	int e = errno;
	bool expected = false;
	if (atomic_compare_exchange_strong(&s->drop_warned, &expected, true))
		rh_log(RH_LOG_ERROR, "swap",
		       "cannot drop the page at %#lx (madvise MADV_DONTNEED: %s): it stays "
		       "resident; the page cache may not keep to its budget (is the heap "
		       "mlock()ed?). Further failures are counted, not logged",
		       (unsigned long)a, strerror(e));
}

/* swap.P5: the unmapped pages between a batch's pages, claimed so that
 * one MADV_DONTNEED covers the batch from its first page to its last. */
typedef struct gaps {
	size_t n;
	uintptr_t addr[RH_EVICT_BATCH];
	uint8_t state[RH_EVICT_BATCH]; /* INIT or EVICTED, restored after */
} gaps;

/* Under lock, once the batch has a page: an INIT or EVICTED page, which
 * is not mapped, becomes EVICTING until the drop is done. A fault that
 * finds it so waits for the batch (swap.C5) and then finds it as it was.
 * A page in any other state (FETCHING: a fault is installing it) is left
 * alone and splits the drop there. */
static void gap_claim(rh_swap *s, gaps *g, size_t pg, uintptr_t a)
{
	uint8_t st = rh_swap_get(s, pg);
	if (g->n == RH_EVICT_BATCH || (st != RH_PAGE_INIT && st != RH_PAGE_EVICTED) ||
	    !rh_swap_cas(s, pg, st, RH_PAGE_EVICTING))
		return;
	g->addr[g->n] = a;
	g->state[g->n++] = st;
}

static void gap_restore(rh_swap *s, const gaps *g, size_t k)
{
	rh_swap_set(s, rh_swap_page(s, g->addr[k]), g->state[k]);
}

/* Under lock: gaps after the batch's last page cover nothing. */
static void gaps_trim(rh_swap *s, gaps *g, uintptr_t last)
{
	while (g->n && g->addr[g->n - 1] > last)
		gap_restore(s, g, --g->n);
}

/* Under lock, after the drop. */
static void gaps_release(rh_swap *s, gaps *g)
{
	for (size_t k = 0; k < g->n; k++)
		gap_restore(s, g, k);
	g->n = 0;
}

/* Step 3 of an eviction: drops the batch's pages, one call per run of
 * pages that are batch pages or claimed gaps. Returns how many batch
 * pages stay mapped (kept[i] set for them). */
static size_t drop_pages(rh_swap *s, const uintptr_t *batch, size_t n, const gaps *g, bool *kept)
{
	size_t n_kept = 0, gi = 0;
	for (size_t i = 0, j; i < n; i = j) {
		uintptr_t end = batch[i] + RH_PAGE_SIZE; /* of the run so far */
		for (j = i + 1; j < n; j++) {
			while (gi < g->n && g->addr[gi] < end)
				gi++;
			for (; gi < g->n && g->addr[gi] == end; gi++)
				end += RH_PAGE_SIZE;
			if (batch[j] != end)
				break;
			end += RH_PAGE_SIZE;
		}
		for (size_t k = i; k < j; k++)
			kept[k] = false;
		atomic_fetch_add(&s->st.drop_calls, 1);
		if (madvise((void *)batch[i], end - batch[i], MADV_DONTNEED) == 0)
			continue;
		/* A failed call may have dropped part of the run: page by page,
		 * to know which pages are still mapped. */
		for (size_t k = i; k < j; k++) {
			if (madvise((void *)batch[k], RH_PAGE_SIZE, MADV_DONTNEED) == 0)
				continue;
			drop_failed(s, batch[k]);
			kept[k] = true;
			n_kept++;
		}
	}
	return n_kept;
}

/* One batch of a region's pages: evicted (drop), or only written back and
 * kept resident, CLEAN (cleaning: the dirty pages alone are claimed). */
static int run_batch(rh_swap *s, uint32_t region, bool drop, size_t *kept_out)
{
	uintptr_t start = s->base + ((uintptr_t)region << s->region_shift);
	size_t pg0 = rh_swap_page(s, start);
	uintptr_t batch[RH_EVICT_BATCH], dirty[RH_EVICT_BATCH];
	bool was_dirty[RH_EVICT_BATCH], kept[RH_EVICT_BATCH];
	size_t n = 0, nd = 0;
	gaps g = {.n = 0};

	pthread_mutex_lock(&s->evict_lock);
	/* Step 1: claim and protect, under the lock the write-protect fault
	 * handler takes (swap.P1). */
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->pages_per_region && n < RH_EVICT_BATCH; i++) {
		uintptr_t a = start + i * RH_PAGE_SIZE;
		/* swap.P1: CLEAN or DIRTY -> EVICTING; nobody writes it from here. */
		if (drop && rh_swap_cas(s, pg0 + i, RH_PAGE_CLEAN, RH_PAGE_EVICTING)) {
			was_dirty[n] = false;
			batch[n++] = a;
		} else if (rh_swap_cas(s, pg0 + i, RH_PAGE_DIRTY, RH_PAGE_EVICTING)) {
			was_dirty[n] = true;
			batch[n++] = a;
			dirty[nd++] = a;
		} else if (drop && n) {
			gap_claim(s, &g, pg0 + i, a);
		}
	}
	gaps_trim(s, &g, n ? batch[n - 1] : start);
	/* Protect the dirty pages before copying them: one call from the
	 * first to the last (swap.P4), since each call costs a TLB
	 * shootdown, an interrupt to every CPU the heap's threads run on. */
	if (nd && rh_uffd_protect(s, dirty[0], dirty[nd - 1] + RH_PAGE_SIZE - dirty[0], true) < 0)
		rh_panic("swap: write-protecting %#lx: %s", (unsigned long)dirty[0],
		         strerror(errno));
	pthread_mutex_unlock(&s->lock);
	if (n == 0) {
		pthread_mutex_unlock(&s->evict_lock);
		return 0;
	}
	rh_error err;
	if (nd && write_back(s, region, dirty, nd, &err) != RH_OK) {
		rh_swap_fail(s, rh_swap_host_of(s, dirty[0]), &err);
		pthread_mutex_lock(&s->lock);
		gaps_release(s, &g);
		pthread_mutex_unlock(&s->lock);
		pthread_mutex_unlock(&s->evict_lock);
		return -1;
	}
	/* swap.W5: ebuf holds the bytes just written back. */
	rh_swap_wcheck(s, region, dirty, s->ebuf, nd);
	/* Step 3: drop; the memory server holds every byte now. One call per
	 * run of adjacent pages. Cleaning keeps them all: protected since
	 * step 1, equal to the memory server's copy, so CLEAN. */
	size_t n_kept = 0, n_clean = 0;
	for (size_t i = 0; !drop && i < n; i++) {
		kept[i] = true;
		n_kept++;
	}
	if (drop)
		n_kept = drop_pages(s, batch, n, &g, kept);
	pthread_mutex_lock(&s->lock);
	gaps_release(s, &g);
	for (size_t i = 0; i < n; i++) {
		/* A page still mapped must not be EVICTED: it would never
		 * fault again to be fetched, and a write to it would take
		 * write-protect faults forever. It is CLEAN: protected since
		 * step 1, and its memory server holds the same bytes. */
		/* swap.P1: EVICTING -> EVICTED once written back and dropped. */
		rh_swap_set(s, rh_swap_page(s, batch[i]),
		            kept[i] ? RH_PAGE_CLEAN : RH_PAGE_EVICTED);
		n_clean += !kept[i] && !was_dirty[i];
	}
	atomic_fetch_sub(&s->resident, n - n_kept);
	atomic_fetch_add(&s->st.pages_dropped, n_clean);
	/* swap.W1: pages that left clean count against write prediction
	 * (at most RH_EVICT_BATCH; the score keeps itself within bounds). */
	if (n_clean)
		rh_swap_wscore_add(s, region, -(int)n_clean);
	if (drop)
		atomic_fetch_add(&s->st.drop_failures, n_kept);
	/* Step 4: parked faults retry (and fetch what was just written). */
	size_t keep = 0;
	for (size_t i = 0; i < s->n_parked; i++) {
		uintptr_t a = s->parked[i];
		if (rh_swap_get(s, rh_swap_page(s, a)) == RH_PAGE_EVICTING)
			s->parked[keep++] = a;
		else
			rh_uffd_wake(s, a, RH_PAGE_SIZE);
	}
	s->n_parked = keep;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	pthread_mutex_unlock(&s->evict_lock);
	if (!drop)
		return (int)n;
	*kept_out += n_kept;
	return (int)(n - n_kept);
}

int rh_swap_evict_batch(rh_swap *s, uint32_t region, size_t *kept_out)
{
	return run_batch(s, region, true, kept_out);
}

int rh_swap_clean_batch(rh_swap *s, uint32_t region)
{
	return run_batch(s, region, false, NULL);
}

void *rh_swap_evict_main(void *arg)
{
	rh_swap *s = arg;
	uint32_t idle = 0;
	for (;;) {
		pthread_mutex_lock(&s->lock);
		while (!atomic_load(&s->stop) && !atomic_load(&s->failed) &&
		       atomic_load(&s->resident) <= s->high_pages)
			pthread_cond_wait(&s->cond, &s->lock);
		pthread_mutex_unlock(&s->lock);
		if (atomic_load(&s->stop) || atomic_load(&s->failed))
			break;
		/* Sweep regions round robin down to the low watermark. */
		while (atomic_load(&s->resident) > s->low_pages && !atomic_load(&s->stop)) {
			size_t kept = 0;
			int got = rh_swap_evict_batch(s, s->clock, &kept);
			if (got < 0)
				return NULL;
			if (got == 0) {
				s->clock = (s->clock + 1) % s->n_regions;
				if (++idle > s->n_regions) {
					/* Nothing evictable now (all in flight): back off. */
					usleep(1000);
					break;
				}
			} else {
				idle = 0;
			}
		}
		idle = 0;
	}
	return NULL;
}
