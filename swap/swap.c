/* Setting up and tearing down the swap system; region frees; stats. */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "swap/internal.h"

uint64_t rh_swap_wr_id(rh_swap *s)
{
	return atomic_fetch_add(&s->wr_seq, 1);
}

void rh_swap_fail(rh_swap *s, const rh_swap_host *h, const rh_error *cause)
{
	rh_error e;
	rh_err_set(&e, cause->code == RH_OK ? RH_EPEER : cause->code, "%s lost: %s",
	           h ? h->name : "a memory server", cause->msg);
	rh_swap_fatal(s, &e);
}

void rh_swap_fatal(rh_swap *s, const rh_error *err)
{
	bool expected = false;
	if (!atomic_compare_exchange_strong(&s->failed, &expected, true))
		return;
	pthread_mutex_lock(&s->lock);
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	if (s->o.fatal)
		s->o.fatal(s->o.fatal_data, err);
}

static int open_uffd(rh_swap *s, rh_error *err)
{
	s->uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (s->uffd < 0)
		return rh_err_errno(
		        err, RH_EIO,
		        "swap: userfaultfd (needs root or vm.unprivileged_userfaultfd=1)");
	uint64_t want =
	        UFFD_FEATURE_PAGEFAULT_FLAG_WP | (s->o.signal_faults ? UFFD_FEATURE_SIGBUS : 0);
	struct uffdio_api api = {.api = UFFD_API, .features = want};
	if (ioctl(s->uffd, UFFDIO_API, &api) < 0)
		return rh_err_errno(err, RH_EIO,
		                    s->o.signal_faults
		                            ? "swap: userfaultfd write-protect and SIGBUS support"
		                            : "swap: userfaultfd write-protect support");
	struct uffdio_register reg = {.range = {.start = s->base, .len = s->size},
	                              .mode = UFFDIO_REGISTER_MODE_MISSING |
	                                      UFFDIO_REGISTER_MODE_WP};
	if (ioctl(s->uffd, UFFDIO_REGISTER, &reg) < 0)
		return rh_err_errno(err, RH_EIO, "swap: registering the heap with userfaultfd");
	if (!(reg.ioctls & (1ull << _UFFDIO_WRITEPROTECT)) ||
	    !(reg.ioctls & (1ull << _UFFDIO_COPY)))
		return rh_err_set(err, RH_EIO, "swap: the kernel lacks UFFDIO_COPY/WRITEPROTECT");
	s->wake_fd = eventfd(0, EFD_CLOEXEC);
	if (s->wake_fd < 0)
		return rh_err_errno(err, RH_EIO, "swap: eventfd");
	return RH_OK;
}

static void *map_buf(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* Several fault threads serve several faults at once, each with its own
 * remote read in flight (docs/swap.md, "Concurrent faults"). */
static int start_fault_threads(rh_swap *s, rh_error *err)
{
	uint32_t n = s->o.fault_threads ? s->o.fault_threads : 1;
	if (n > RH_FETCH_SLOTS)
		return rh_err_set(err, RH_EINVAL, "swap: %u fault threads, at most %u", n,
		                  RH_FETCH_SLOTS);
	s->fault_thr = calloc(n, sizeof *s->fault_thr);
	if (!s->fault_thr)
		return rh_err_set(err, RH_ENOMEM, "swap: out of memory");
	for (; s->n_fault_thr < n; s->n_fault_thr++)
		if (pthread_create(&s->fault_thr[s->n_fault_thr], NULL, rh_swap_fault_main, s) != 0)
			return rh_err_set(err, RH_EIO, "swap: cannot start its fault threads");
	return RH_OK;
}

int rh_swap_open(const rh_swap_opts *o, rh_swap **out, rh_error *err)
{
	rh_swap *s = calloc(1, sizeof *s);
	if (!s)
		return rh_err_set(err, RH_ENOMEM, "swap: out of memory");
	s->o = *o;
	if (o->readahead > UINT8_MAX) {
		free(s);
		return rh_err_set(err, RH_EINVAL, "swap: a readahead of %u pages is over %u",
		                  o->readahead, UINT8_MAX);
	}
	s->readahead = o->readahead;
	s->uffd = s->wake_fd = -1;
	s->base = o->base;
	s->size = o->size;
	s->region_size = o->region_size;
	s->region_shift = (uint32_t)__builtin_ctzll(o->region_size);
	s->pages_per_region = (uint32_t)(o->region_size >> RH_PAGE_SHIFT);
	s->n_regions = (uint32_t)(o->size / o->region_size);
	s->n_pages = o->size >> RH_PAGE_SHIFT;
	s->budget_pages = o->budget >> RH_PAGE_SHIFT;
	/* Room for a fault with its readahead, and a batch of slack. */
	size_t slack = RH_EVICT_BATCH + s->o.readahead + 1;
	if (s->budget_pages < 4 * slack)
		s->budget_pages = 4 * slack;
	s->high_pages = s->budget_pages - slack;
	s->low_pages = s->budget_pages - 2 * slack;
	/* Writer-preferring: a stream of faults, each holding it shared, must
	 * not starve a region's free (swap.C4). */
	pthread_rwlockattr_t ra;
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&s->fault_lock, &ra);
	pthread_rwlockattr_destroy(&ra);
	pthread_mutex_init(&s->evict_lock, NULL);
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->host_lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	pthread_cond_init(&s->fcond, NULL);
	s->hosts = calloc(o->n_hosts, sizeof *s->hosts);
	size_t nh = o->n_hosts ? o->n_hosts : 1;
	s->cur = calloc(nh, sizeof *s->cur);
	s->hstate = calloc(nh, sizeof *s->hstate);
	s->spares = calloc(RH_MAX_SPARES, sizeof *s->spares);
	s->state = calloc(s->n_pages, 1);
	s->tag = calloc(s->n_regions, sizeof *s->tag);
	s->log_head = calloc(s->n_regions, sizeof *s->log_head);
	s->ra_win = malloc(s->n_regions);
	s->ra_end = calloc(s->n_regions, sizeof *s->ra_end);
	s->wscore = calloc(s->n_regions, 1);
	s->wpred = calloc(s->n_pages, 1);
	s->wsum = malloc(s->n_pages * sizeof *s->wsum);
	if (s->ra_win)
		memset(s->ra_win, (int)s->readahead, s->n_regions);
	s->fslot_len = (1 + (size_t)o->readahead) * RH_PAGE_SIZE;
	s->fbuf_len = RH_FETCH_SLOTS * s->fslot_len;
	atomic_store(&s->fslots, (1u << RH_FETCH_SLOTS) - 1);
	s->ebuf_len = RH_EVICT_BATCH * RH_PAGE_SIZE + RH_EVICT_BATCH * 4 + RH_PAGE_SIZE;
	s->fbuf = map_buf(s->fbuf_len);
	s->ebuf = map_buf(s->ebuf_len);
	s->zero = map_buf(RH_ZERO_RUN * RH_PAGE_SIZE);
	int rc = RH_OK;
	if (o->checksum && rh_integ_init(&s->integ, s->n_pages) != 0)
		rc = rh_err_set(err, RH_ENOMEM, "swap: out of memory for %zu page checksums",
		                s->n_pages);
	if (rc == RH_OK && (!s->hosts || !s->cur || !s->hstate || !s->spares || !s->state ||
	                    !s->tag || !s->log_head || !s->ra_win || !s->ra_end || !s->wscore ||
	                    !s->wpred || !s->wsum || !s->fbuf || !s->ebuf || !s->zero))
		rc = rh_err_set(err, RH_ENOMEM, "swap: out of memory for %zu page states",
		                s->n_pages);
	if (rc == RH_OK)
		memcpy(s->hosts, o->hosts, o->n_hosts * sizeof *s->hosts);
	for (size_t i = 0; rc == RH_OK && i < o->n_hosts; i++)
		atomic_store(&s->cur[i], &s->hosts[i]);
	for (size_t i = 0; rc == RH_OK && i < o->n_hosts; i++) {
		rh_tp_conn *c = s->hosts[i].conn;
		if ((rc = rh_tp_reg(c, s->fbuf, s->fbuf_len, -1, 0, RH_TP_LOCAL, err)) == RH_OK)
			rc = rh_tp_reg(c, s->ebuf, s->ebuf_len, -1, 0, RH_TP_LOCAL, err);
	}
	if (rc == RH_OK)
		rc = open_uffd(s, err);
	if (rc == RH_OK && o->signal_faults)
		rc = rh_swap_signal_add(s, err);
	if (rc == RH_OK && !o->signal_faults)
		rc = start_fault_threads(s, err);
	if (rc == RH_OK) {
		if (pthread_create(&s->evict_thr, NULL, rh_swap_evict_main, s) != 0)
			rc = rh_err_set(err, RH_EIO, "swap: cannot start its evictor");
		else
			s->threads_started = true;
	}
	if (rc != RH_OK) {
		rh_swap_close(s);
		return rc;
	}
	*out = s;
	return RH_OK;
}

void rh_swap_close(rh_swap *s)
{
	if (!s)
		return;
	atomic_store(&s->stop, true);
	if (s->n_fault_thr) {
		/* Never read: it stays readable and stops every fault thread. */
		uint64_t one = 1;
		ssize_t w = write(s->wake_fd, &one, sizeof one);
		(void)w;
		for (uint32_t i = 0; i < s->n_fault_thr; i++)
			pthread_join(s->fault_thr[i], NULL);
	}
	if (s->threads_started) {
		pthread_mutex_lock(&s->lock);
		pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->evict_thr, NULL);
	}
	if (s->o.signal_faults)
		rh_swap_signal_remove(s); /* a no-op if it was never added */
	if (s->uffd >= 0) {
		struct uffdio_range r = {.start = s->base, .len = s->size};
		ioctl(s->uffd, UFFDIO_UNREGISTER, &r);
		close(s->uffd);
	}
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	for (size_t i = 0; s->hosts && i < s->o.n_hosts; i++) {
		rh_tp_dereg(s->hosts[i].conn, s->fbuf, s->fbuf_len, NULL);
		rh_tp_dereg(s->hosts[i].conn, s->ebuf, s->ebuf_len, NULL);
	}
	if (s->fbuf)
		munmap(s->fbuf, s->fbuf_len);
	if (s->ebuf)
		munmap(s->ebuf, s->ebuf_len);
	if (s->zero)
		munmap(s->zero, RH_ZERO_RUN * RH_PAGE_SIZE);
	free(s->parked);
	free(s->fault_thr);
	for (size_t i = 0; s->spares && i < s->n_spares; i++) {
		rh_tp_dereg(s->spares[i]->conn, s->fbuf, s->fbuf_len, NULL);
		rh_tp_dereg(s->spares[i]->conn, s->ebuf, s->ebuf_len, NULL);
		free(s->spares[i]);
	}
	free(s->spares);
	free(s->hosts);
	free((void *)s->cur);
	free(s->hstate);
	pthread_mutex_destroy(&s->host_lock);
	free(s->state);
	free(s->tag);
	free(s->log_head);
	free(s->ra_win);
	free(s->wscore);
	free(s->wpred);
	free(s->wsum);
	free(s->ra_end);
	rh_integ_free(&s->integ);
	free(s);
}

void rh_swap_region_freed(rh_swap *s, uint32_t region)
{
	uintptr_t start = s->base + ((uintptr_t)region << s->region_shift);
	size_t pg0 = rh_swap_page(s, start);
	/* Exclusive: no fault is in service, so no page is FETCHING (swap.C4). */
	pthread_rwlock_wrlock(&s->fault_lock);
	pthread_mutex_lock(&s->evict_lock);
	pthread_mutex_lock(&s->lock);
	size_t dropped = 0;
	for (size_t i = 0; i < s->pages_per_region; i++) {
		uint8_t st = rh_swap_get(s, pg0 + i);
		dropped += st == RH_PAGE_CLEAN || st == RH_PAGE_DIRTY;
		/* swap.P1: -> INIT under evict_lock, so never mid-eviction. */
		rh_swap_set(s, pg0 + i, RH_PAGE_INIT);
	}
	atomic_fetch_sub(&s->resident, dropped);
	/* swap.I4: INIT, so its host holds zeros once FREE_OK is in. */
	if (s->o.checksum)
		rh_integ_zeroed(&s->integ, pg0, s->pages_per_region);
	/* New contents: their access pattern is not the old one's (swap.R1). */
	__atomic_store_n(&s->ra_win[region],
	                 (uint8_t)__atomic_load_n(&s->readahead, __ATOMIC_RELAXED),
	                 __ATOMIC_RELAXED);
	__atomic_store_n(&s->ra_end[region], 0, __ATOMIC_RELAXED);
	/* swap.W2: nor its writes. */
	__atomic_store_n(&s->wscore[region], 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&s->lock);
	/* INIT promises zeros on the next touch, and the collector reuses
	 * the region as zeroed memory while its host releases its copy:
	 * pages left mapped would show the dead objects' bytes as fields of
	 * new ones. They cannot be zeroed here either (touching them may
	 * fault, and this thread holds fault_lock). */
	if (madvise((void *)start, s->region_size, MADV_DONTNEED) != 0)
		rh_panic("swap: cannot drop the pages of freed region %u (madvise "
		         "MADV_DONTNEED: %s; is the heap mlock()ed?)",
		         region, strerror(errno));
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->evict_lock);
	pthread_rwlock_unlock(&s->fault_lock);
}

/* Wait for the faults being handled, if any: a faulting thread is woken
 * by the page's install, before the page's state is set, so a caller that
 * just touched a page could otherwise find it INIT or FETCHING, skip it,
 * and leave the page out of a flush (handing its region over with the page
 * mapped) or of a write-back (DIRTY after the pass). */
static void finish_fault(rh_swap *s)
{
	pthread_rwlock_wrlock(&s->fault_lock);
	pthread_rwlock_unlock(&s->fault_lock);
}

/* swap.I3: under fault_lock exclusive; every check holds it shared
 * (swap.C4), on a page its fault claimed (swap.C1). */
void rh_swap_remote_writes(rh_swap *s, uintptr_t addr, size_t len)
{
	if (!s->o.checksum || !len)
		return;
	size_t pg = rh_swap_page(s, addr);
	size_t end = rh_swap_page(s, addr + len - 1) + 1;
	pthread_rwlock_wrlock(&s->fault_lock);
	rh_integ_forget(&s->integ, pg, end - pg);
	pthread_rwlock_unlock(&s->fault_lock);
}

int rh_swap_flush_region(rh_swap *s, uint32_t region, rh_error *err)
{
	int got;
	size_t kept = 0;
	finish_fault(s);
	while ((got = rh_swap_evict_batch(s, region, &kept)) > 0)
		;
	if (got < 0 || atomic_load(&s->failed))
		return rh_err_set(err, RH_EPEER, "swap: flushing region %u failed", region);
	if (kept) {
		/* The caller hands the region to its tracer next, which
		 * changes the host's copy under any page still mapped here.
		 * Pages that failed once may have gone in a later batch. */
		uintptr_t start = s->base + ((uintptr_t)region << s->region_shift);
		size_t pg0 = rh_swap_page(s, start), left = 0;
		for (size_t i = 0; i < s->pages_per_region; i++) {
			uint8_t st = rh_swap_get(s, pg0 + i);
			left += st == RH_PAGE_CLEAN || st == RH_PAGE_DIRTY;
		}
		if (left)
			return rh_err_set(err, RH_EIO,
			                  "swap: flushing region %u: %zu pages could not be "
			                  "dropped (madvise failed, see the log)",
			                  region, left);
	}
	return RH_OK;
}

int rh_swap_clean_region(rh_swap *s, uint32_t region, rh_error *err)
{
	finish_fault(s);
	/* Each batch takes the first dirty pages left; cleaned pages are CLEAN,
	 * so the passes end, even with writers re-dirtying pages meanwhile. */
	uint32_t passes = (s->pages_per_region + RH_EVICT_BATCH - 1) / RH_EVICT_BATCH + 1;
	int got = 1;
	for (uint32_t k = 0; k < passes && got > 0; k++)
		got = rh_swap_clean_batch(s, region);
	if (got < 0 || atomic_load(&s->failed))
		return rh_err_set(err, RH_EPEER, "swap: writing back region %u failed", region);
	return RH_OK;
}

int rh_swap_clean_step(rh_swap *s, uint32_t region, rh_error *err)
{
	/* No finish_fault: a page being installed now is left for the next
	 * step or the full marking's own clean, which waits for it. */
	int got = rh_swap_clean_batch(s, region);
	if (got < 0 || atomic_load(&s->failed)) {
		rh_err_set(err, RH_EPEER, "swap: writing back region %u failed", region);
		return -1;
	}
	return got;
}

bool rh_swap_region_write_hot(rh_swap *s, uint32_t region)
{
	/* swap.W3: a hint, read relaxed. */
	return __atomic_load_n(&s->wscore[region], __ATOMIC_RELAXED) >= RH_WSCORE_ON;
}

void rh_swap_stats_get(rh_swap *s, rh_swap_stats *out)
{
	out->faults = atomic_load(&s->st.faults);
	out->zero_faults = atomic_load(&s->st.zero_faults);
	out->wp_faults = atomic_load(&s->st.wp_faults);
	out->readahead_pages = atomic_load(&s->st.readahead_pages);
	out->bytes_fetched = atomic_load(&s->st.bytes_fetched);
	out->bytes_evicted = atomic_load(&s->st.bytes_evicted);
	out->pages_dropped = atomic_load(&s->st.pages_dropped);
	out->batches = atomic_load(&s->st.batches);
	out->drop_failures = atomic_load(&s->st.drop_failures);
	out->drop_calls = atomic_load(&s->st.drop_calls);
	out->pages_peeked = atomic_load(&s->st.pages_peeked);
	out->copy_reads = atomic_load(&s->st.copy_reads);
	out->budget_waits = atomic_load(&s->st.budget_waits);
	out->budget_wait_ns = atomic_load(&s->st.budget_wait_ns);
	out->pred_written = atomic_load(&s->st.pred_written);
	out->pred_unwritten = atomic_load(&s->st.pred_unwritten);
	out->resident_pages = atomic_load(&s->resident);
	out->budget_pages = s->budget_pages;
}

uint8_t rh_swap_page_state(rh_swap *s, uintptr_t addr)
{
	return rh_swap_get(s, rh_swap_page(s, addr));
}

void rh_swap_region_tag(rh_swap *s, uint32_t region, uint64_t *tag, uint64_t *log_head)
{
	pthread_mutex_lock(&s->evict_lock);
	*tag = s->tag[region];
	*log_head = s->log_head[region];
	pthread_mutex_unlock(&s->evict_lock);
}

void rh_swap_quiesce(rh_swap *s)
{
	pthread_mutex_lock(&s->evict_lock);
	pthread_mutex_unlock(&s->evict_lock);
}

void rh_swap_set_readahead(rh_swap *s, uint32_t pages)
{
	/* The bounce buffer was sized for the window given at open. */
	uint32_t max = (uint32_t)(s->fslot_len / RH_PAGE_SIZE) - 1;
	pages = pages < max ? pages : max;
	/* Exclusive: no fault is reading the hints meanwhile (swap.C7). */
	pthread_rwlock_wrlock(&s->fault_lock);
	__atomic_store_n(&s->readahead, pages, __ATOMIC_RELAXED);
	/* swap.R1: every window starts over at the new largest. */
	memset(s->ra_win, (int)pages, s->n_regions);
	memset(s->ra_end, 0, s->n_regions * sizeof *s->ra_end);
	pthread_rwlock_unlock(&s->fault_lock);
}

void rh_swap_region_writes(rh_swap *s, uint32_t region, bool on)
{
	/* swap.W4: a hint like the score it replaces (swap.W3); off, the
	 * region learns its mutators' writes from nothing. */
	__atomic_store_n(&s->wscore[region], (uint8_t)(on ? RH_WSCORE_ALL : 0), __ATOMIC_RELAXED);
}

void rh_swap_region_filled(rh_swap *s, uint32_t region, size_t bytes)
{
	uintptr_t start = s->base + ((uintptr_t)region << s->region_shift);
	size_t pg0 = rh_swap_page(s, start);
	size_t n = (bytes + RH_PAGE_SIZE - 1) / RH_PAGE_SIZE;
	/* As in rh_swap_region_freed: no fault may be between reading INIT
	 * and installing zeros over what the tracer wrote (swap.C4). */
	pthread_rwlock_wrlock(&s->fault_lock);
	pthread_mutex_lock(&s->evict_lock);
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < n && i < s->pages_per_region; i++) {
		uint8_t st = rh_swap_get(s, pg0 + i);
		/* swap.I3: the tracer wrote it; no sum of the CPU server's holds. */
		if (s->o.checksum)
			rh_integ_forget(&s->integ, pg0 + i, 1);
		if (st == RH_PAGE_INIT) {
			/* swap.P1: INIT -> EVICTED, the tracer's copy is the only one. */
			rh_swap_set(s, pg0 + i, RH_PAGE_EVICTED);
			continue;
		}
		/* Destinations are taken cold (rh_region_take_in), so nothing
		 * here holds a copy. One that did would write its stale bytes
		 * over the tracer's objects at its next eviction: stop loudly
		 * rather than corrupt the heap quietly. */
		if (st != RH_PAGE_EVICTED)
			rh_panic("swap: region %u page %zu is cached here (state %u) while "
			         "its tracer filled it",
			         region, i, (unsigned)st);
	}
	pthread_mutex_unlock(&s->lock);
	pthread_mutex_unlock(&s->evict_lock);
	pthread_rwlock_unlock(&s->fault_lock);
}

unsigned rh_swap_region_evicted_pct(rh_swap *s, uint32_t region, size_t bytes)
{
	uintptr_t start = s->base + ((uintptr_t)region << s->region_shift);
	size_t pg0 = rh_swap_page(s, start);
	size_t n = (bytes + RH_PAGE_SIZE - 1) / RH_PAGE_SIZE, ev = 0;
	if (n > s->pages_per_region)
		n = s->pages_per_region;
	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		uint8_t st = rh_swap_get(s, pg0 + i);
		ev += st == RH_PAGE_EVICTED || st == RH_PAGE_EVICTING;
	}
	return (unsigned)(ev * 100 / n);
}
