/* The fault thread: installs pages on missing faults and tracks first writes
 * on write-protect faults (docs/swap.md, "Faults"). */
#include <errno.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "common/grow.h"
#include "swap/internal.h"

int rh_uffd_copy(rh_swap *s, uintptr_t dst, const void *src, size_t len, bool wp, bool wake,
                 size_t *done)
{
	size_t n = 0;
	int rc = 0;
	while (n < len) {
		struct uffdio_copy c = {.dst = dst + n,
		                        .src = (uintptr_t)src + n,
		                        .len = len - n,
		                        .mode = (wp ? UFFDIO_COPY_MODE_WP : 0) |
		                                (wake ? 0 : UFFDIO_COPY_MODE_DONTWAKE)};
		int r = ioctl(s->uffd, UFFDIO_COPY, &c);
		if (c.copy > 0)
			n += (size_t)c.copy;
		if (r == 0)
			break;
		if (errno != EAGAIN) {
			rc = -errno;
			break;
		}
		/* EAGAIN: the mm changed under us; go on from where it stopped. */
	}
	if (done)
		*done = n;
	return rc;
}

int rh_uffd_protect(rh_swap *s, uintptr_t a, size_t len, bool wp)
{
	struct uffdio_writeprotect w = {.range = {.start = a, .len = len},
	                                .mode = wp ? UFFDIO_WRITEPROTECT_MODE_WP : 0};
	return ioctl(s->uffd, UFFDIO_WRITEPROTECT, &w) == 0 ? 0 : -errno;
}

void rh_uffd_wake(rh_swap *s, uintptr_t a, size_t len)
{
	struct uffdio_range r = {.start = a, .len = len};
	ioctl(s->uffd, UFFDIO_WAKE, &r);
}

/* Wait until n more pages fit in the budget (the evictor makes room). */
static void budget_wait(rh_swap *s, size_t n)
{
	if (atomic_load(&s->resident) + n <= s->budget_pages)
		return;
	uint64_t t0 = rh_now_ns();
	pthread_mutex_lock(&s->lock);
	while (atomic_load(&s->resident) + n > s->budget_pages && !atomic_load(&s->stop) &&
	       !atomic_load(&s->failed)) {
		pthread_cond_broadcast(&s->cond);
		rh_cond_wait_ms(&s->cond, &s->lock, 50);
	}
	pthread_mutex_unlock(&s->lock);
	atomic_fetch_add(&s->st.budget_waits, 1);
	atomic_fetch_add(&s->st.budget_wait_ns, rh_now_ns() - t0);
}

/* n pages were just counted resident on top of `before`: start the evictor
 * ahead of need once the count passes the high mark, so faults rarely wait
 * for it. */
static void kick_evictor(rh_swap *s, size_t before, size_t n)
{
	if (before <= s->high_pages && before + n > s->high_pages) {
		pthread_mutex_lock(&s->lock);
		pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->lock);
	}
}

/* n claimed pages count as resident from their claim on (swap.C6). */
static void count_claimed(rh_swap *s, size_t n)
{
	kick_evictor(s, atomic_fetch_add(&s->resident, n), n);
}

/* Pages left FETCHING, or a fetch buffer came free: wake the faults that
 * wait for either (swap.C2). Under lock, after the state change, so a
 * waiter that saw FETCHING under lock is asleep by now. */
static void fetch_done(rh_swap *s)
{
	pthread_mutex_lock(&s->lock);
	if (s->fwaiters)
		pthread_cond_broadcast(&s->fcond);
	pthread_mutex_unlock(&s->lock);
}

/* swap.C2: a fault on a page another fault is installing waits for that
 * install; it never reads the page again nor installs it a second time. */
static void wait_fetch(rh_swap *s, size_t pg)
{
	pthread_mutex_lock(&s->lock);
	s->fwaiters++;
	while (rh_swap_get(s, pg) == RH_PAGE_FETCHING && !atomic_load(&s->failed))
		rh_cond_wait_ms(&s->fcond, &s->lock, 50);
	s->fwaiters--;
	pthread_mutex_unlock(&s->lock);
}

/* swap.C3: a fetch buffer of this fault's own, or NULL once the swap
 * system failed. All RH_FETCH_SLOTS in use: wait for one. */
static uint8_t *slot_get(rh_swap *s, uint32_t *idx)
{
	for (;;) {
		uint_fast32_t m = atomic_load(&s->fslots);
		while (m) {
			uint32_t i = (uint32_t)__builtin_ctz((unsigned)m);
			if (atomic_compare_exchange_weak(&s->fslots, &m, m & ~(1u << i))) {
				*idx = i;
				return s->fbuf + i * s->fslot_len;
			}
		}
		pthread_mutex_lock(&s->lock);
		s->fwaiters++;
		while (!atomic_load(&s->fslots) && !atomic_load(&s->failed))
			rh_cond_wait_ms(&s->fcond, &s->lock, 50);
		s->fwaiters--;
		pthread_mutex_unlock(&s->lock);
		if (atomic_load(&s->failed))
			return NULL;
	}
}

static void slot_put(rh_swap *s, uint32_t i)
{
	atomic_fetch_or(&s->fslots, 1u << i);
}

/* The CRC32C of page pg's bytes just fetched into, or written back from,
 * `bytes`: with checksums on, the integrity check has just computed it
 * (swap.I1, I2: after a fetch's check or a write-back, the sum is that of
 * the bytes that crossed). */
static uint32_t page_crc(rh_swap *s, size_t pg, const void *bytes)
{
	return s->o.checksum ? s->integ.sum[pg] : rh_integ_crc(bytes);
}

/* swap.W5: how the page pg came in, before its state is stored (release),
 * so that the evictor's claim sees this residency's flag and sum. */
static void note_pred(rh_swap *s, size_t pg, const void *src, bool pred)
{
	if (pred)
		s->wsum[pg] = page_crc(s, pg, src);
	s->wpred[pg] = pred;
}

/* Install one claimed page (swap.C1: this thread's CAS made it FETCHING,
 * so no other thread installs it); pred: writable on a prediction
 * (swap.W5). The caller counted it resident. */
static void install(rh_swap *s, uintptr_t a, const void *src, bool writable, bool pred, bool wake)
{
	size_t pg = rh_swap_page(s, a);
	uint8_t st = writable ? RH_PAGE_DIRTY : RH_PAGE_CLEAN;
	int rc = rh_uffd_copy(s, a, src, RH_PAGE_SIZE, !writable, wake, NULL);
	if (rc == -EEXIST) {
		/* A page is mapped there already, though this page's state
		 * said none was (no fault of this protocol installs a page
		 * twice, swap.C1); it still must leave FETCHING, or no fault
		 * on it would ever be served again nor the evictor take it.
		 * It is resident, counted like any installed page (the
		 * evictor subtracts it when it goes). DIRTY, not CLEAN: CLEAN
		 * would claim that its memory server holds the same bytes
		 * and that the page is write-protected, and neither is known
		 * for a page this thread did not install; a DIRTY page is
		 * protected and written back before it is dropped, so
		 * whatever threads saw or wrote in it is kept. The copy just
		 * fetched is discarded. */
		st = RH_PAGE_DIRTY;
		pred = false;
		atomic_fetch_add(&s->st.install_conflicts, 1);
		if (wake)
			rh_uffd_wake(s, a, RH_PAGE_SIZE);
	} else if (rc < 0) {
		rh_panic("swap: UFFDIO_COPY at %#lx failed: %s", (unsigned long)a, strerror(-rc));
	}
	note_pred(s, pg, src, pred);
	/* swap.P2: FETCHING -> CLEAN or DIRTY after a whole-page copy. */
	rh_swap_set(s, pg, st);
}

/* Install n claimed pages from a by one copy, the pages from pred_from on
 * writable on a prediction (swap.W5); each ioctl costs a system call,
 * which on this kind of virtual machine is a microsecond before any work.
 * From a page found mapped already (EEXIST) on, page by page. */
static void install_run(rh_swap *s, uintptr_t a, const uint8_t *src, size_t n, bool writable,
                        size_t pred_from, bool wake)
{
	size_t pg = rh_swap_page(s, a), bytes = 0;
	int rc = n > 1 ? rh_uffd_copy(s, a, src, n * RH_PAGE_SIZE, !writable, wake, &bytes) : 0;
	size_t done = bytes / RH_PAGE_SIZE;
	if (rc < 0 && rc != -EEXIST)
		rh_panic("swap: UFFDIO_COPY at %#lx failed: %s", (unsigned long)(a + bytes),
		         strerror(-rc));
	for (size_t i = 0; i < done; i++) {
		note_pred(s, pg + i, src + i * RH_PAGE_SIZE, i >= pred_from);
		/* swap.P2: FETCHING -> CLEAN or DIRTY after a whole-page copy. */
		rh_swap_set(s, pg + i, writable ? RH_PAGE_DIRTY : RH_PAGE_CLEAN);
	}
	/* The kernel woke the faulter if it copied the first page. */
	for (size_t i = done; i < n; i++)
		install(s, a + i * RH_PAGE_SIZE, src + i * RH_PAGE_SIZE, writable, i >= pred_from,
		        wake && i == 0);
}

/* A fault on a fresh (INIT) page. On a write: that page and the INIT pages
 * after it in its region, up to RH_ZERO_RUN, installed writable and DIRTY
 * by one ioctl. Fresh pages are written by bumping (TLABs, copy
 * destinations), so the next ones are written next; a fault each (one
 * round trip through the fault thread) cost most of a collection's copying
 * on a disaggregated heap. On a read: one page, protected and CLEAN. The
 * run is claimed INIT → FETCHING (swap.C1) after the budget wait, so it
 * cannot change under this thread. False: the page was not INIT any more
 * (another fault claimed it first), and the caller looks again. */
static bool zero_fault(rh_swap *s, uintptr_t a, bool write)
{
	uintptr_t region_end = (a & ~(uintptr_t)(s->region_size - 1)) + s->region_size;
	size_t pg = rh_swap_page(s, a), n = 1;
	/* swap.P3: the zero run counts against the budget like a window. */
	budget_wait(s, write ? RH_ZERO_RUN : 1);
	if (!rh_swap_cas(s, pg, RH_PAGE_INIT, RH_PAGE_FETCHING))
		return false;
	while (write && n < RH_ZERO_RUN && a + n * RH_PAGE_SIZE < region_end &&
	       rh_swap_cas(s, pg + n, RH_PAGE_INIT, RH_PAGE_FETCHING))
		n++;
	count_claimed(s, n);
	size_t bytes;
	int err = -rh_uffd_copy(s, a, s->zero, n * RH_PAGE_SIZE, !write, true, &bytes);
	size_t done = bytes / RH_PAGE_SIZE;
	for (size_t i = 0; i < done; i++) {
		note_pred(s, pg + i, NULL, false);
		/* swap.P2: FETCHING -> DIRTY (or CLEAN), zero pages installed whole. */
		rh_swap_set(s, pg + i, write ? RH_PAGE_DIRTY : RH_PAGE_CLEAN);
	}
	if (done == 0) {
		/* Not even the faulting page (EEXIST, or an error install
		 * reports): the one-page path handles both. */
		install(s, a, s->zero, write, false, true);
		done = 1;
	} else if (err && err != EEXIST) {
		rh_panic("swap: UFFDIO_COPY at %#lx failed: %s",
		         (unsigned long)(a + done * RH_PAGE_SIZE), strerror(err));
	} else if (done < n) {
		/* A run cut short by a page mapped already: that page is
		 * taken as install takes one (DIRTY and counted), the rest go
		 * back to INIT for their own faults, and the faulter is woken
		 * whatever the kernel did. */
		install(s, a + done * RH_PAGE_SIZE, s->zero, true, false, false);
		rh_uffd_wake(s, a, RH_PAGE_SIZE);
		done++;
	}
	for (size_t i = done; i < n; i++)
		rh_swap_set(s, pg + i, RH_PAGE_INIT);
	atomic_fetch_sub(&s->resident, n - done);
	atomic_fetch_add(&s->st.zero_faults, 1);
	fetch_done(s);
	return true;
}

static void park(rh_swap *s, uintptr_t a)
{
	/* A faulting thread serving its own fault is not blocked in the
	 * kernel: it retries, and waits for the batch in rh_swap_serve. */
	if (s->o.signal_faults)
		return;
	s->parked = rh_grow(s->parked, &s->cap_parked, s->n_parked + 1, sizeof *s->parked, 64,
	                    "swap: parking a fault");
	s->parked[s->n_parked++] = a;
}

/* Whether every page of region r from page `from` up to page `to`
 * (excluded) is resident: an access that ran through them took no fault. */
static bool resident_run(rh_swap *s, uint32_t r, uint32_t from, uint32_t to)
{
	size_t pg0 = (size_t)r * s->pages_per_region;
	for (uint32_t i = from; i < to; i++) {
		uint8_t st = rh_swap_get(s, pg0 + i);
		if (st != RH_PAGE_CLEAN && st != RH_PAGE_DIRTY)
			return false;
	}
	return true;
}

/* The readahead window for a fault at page q of region r (docs/swap.md,
 * "Readahead"). A fault at or past the region's last fetch, with only
 * resident pages in between, continues a sequential run: the window
 * doubles. Any other fault halves it: the pages read ahead of a random
 * access are seldom used, and each one costs a copy, a place in the cache
 * and, later, an eviction. The window and the end are hints (swap.C7):
 * two faults in one region may each update them from the same old value,
 * and one update is lost; the claims decide which pages each reads. */
static size_t ra_window(rh_swap *s, uint32_t r, uint32_t q)
{
	/* swap.R2, swap.R3: doubled or halved, as relaxed-atomic hints. */
	uint32_t max = __atomic_load_n(&s->readahead, __ATOMIC_RELAXED);
	if (!s->o.readahead_adaptive)
		return max;
	uint32_t w = __atomic_load_n(&s->ra_win[r], __ATOMIC_RELAXED);
	uint32_t end = __atomic_load_n(&s->ra_end[r], __ATOMIC_RELAXED);
	if (end) {
		if (q >= end && resident_run(s, r, end, q))
			w = w ? 2 * w : 1;
		else
			w /= 2;
	}
	if (w > max)
		w = max;
	__atomic_store_n(&s->ra_win[r], (uint8_t)w, __ATOMIC_RELAXED);
	return w;
}

/* swap.W1: pages of region r fetched on a read go in writable, and DIRTY,
 * when its pages were mostly written after their fetch lately: a first
 * write costs a protection fault, an ioctl and a TLB shootdown, far more
 * than writing back a page that stayed clean. swap.W5 keeps the score
 * current while it holds. */
bool rh_swap_wpredict(rh_swap *s, uint32_t r)
{
	return __atomic_load_n(&s->wscore[r], __ATOMIC_RELAXED) >= RH_WSCORE_ON;
}

/* swap.W3: a hint; two updates at once may lose one. */
void rh_swap_wscore_add(rh_swap *s, uint32_t region, int delta)
{
	int v = __atomic_load_n(&s->wscore[region], __ATOMIC_RELAXED);
	if (v == RH_WSCORE_ALL)
		return; /* swap.W4: the collector's hint holds until it ends */
	v += delta;
	v = v < 0 ? 0 : v > (int)RH_WSCORE_MAX ? (int)RH_WSCORE_MAX : v;
	__atomic_store_n(&s->wscore[region], (uint8_t)v, __ATOMIC_RELAXED);
}

/* swap.W5: the dirty pages of a batch, their bytes as written back: each
 * that went in on a prediction tells whether it was written meanwhile.
 * Under evict_lock, the pages EVICTING: the evictor's own. */
void rh_swap_wcheck(rh_swap *s, uint32_t region, const uintptr_t *addrs, const uint8_t *bytes,
                    size_t n)
{
	int written = 0, unwritten = 0;
	for (size_t i = 0; i < n; i++) {
		size_t pg = rh_swap_page(s, addrs[i]);
		if (!s->wpred[pg])
			continue;
		s->wpred[pg] = 0;
		if (page_crc(s, pg, bytes + i * RH_PAGE_SIZE) != s->wsum[pg])
			written++;
		else
			unwritten++;
	}
	if (!written && !unwritten)
		return;
	atomic_fetch_add(&s->st.pred_written, (uint64_t)written);
	atomic_fetch_add(&s->st.pred_unwritten, (uint64_t)unwritten);
	rh_swap_wscore_add(s, region, written * (int)RH_WSCORE_WRITE - unwritten);
}

/* red.R4: read sg (n_sge entries, `pages` pages of one partition, the
 * first at a) from the partition's owner, or from its copy while the owner
 * is lost; a host that fails the read is lost, and the read goes to the
 * other. *from: the host that served it. False: no host is left (the
 * fatal handler was called). */
static bool read_holders(rh_swap *s, uintptr_t a, const rh_tp_sge *sg, size_t n_sge, size_t pages,
                         const rh_swap_host **from)
{
	for (;;) {
		const rh_swap_host *h = rh_swap_reader(s, a);
		if (!h)
			return false;
		uint64_t id = rh_swap_wr_id(s);
		rh_error err;
		int rc = rh_tp_read(h->conn, sg, n_sge, id, &err);
		if (rc == RH_OK)
			rc = rh_tp_wait(h->conn, id, (int)s->o.timeout_ms, &err);
		if (rc == RH_OK) {
			if (h != rh_swap_host_of(s, a))
				atomic_fetch_add(&s->st.copy_reads, pages);
			*from = h;
			return true;
		}
		if (!rh_swap_host_failed(s, h, &err))
			return false;
	}
}

/* Read the claimed pages [a, a + n pages) from their holder into a buffer
 * of this fault's own and install them, the faulting page last (waking it
 * finds its neighbours in). No lock is held across the read (swap.C4):
 * other faults go on meanwhile, each with its own read in flight. */
static void fetch_claimed(rh_swap *s, uintptr_t a, size_t n, bool write)
{
	uint32_t slot;
	uint8_t *buf = slot_get(s, &slot);
	if (!buf)
		return; /* failed: the faulter stays blocked, the process ends */
	rh_tp_sge sg = {.local = buf, .remote = a, .len = (uint32_t)(n * RH_PAGE_SIZE)};
	const rh_swap_host *h;
	if (!read_holders(s, a, &sg, 1, n, &h))
		return; /* the fatal handler ends the process; the faulter stays blocked */
	if (!rh_swap_sums_ok(s, h, a, buf, n))
		return; /* swap.I2: a corrupt page is fatal, never installed */
	size_t pg = rh_swap_page(s, a);
	bool pred = rh_swap_wpredict(s, (uint32_t)(pg / s->pages_per_region));
	if (write && !pred && n > 1) {
		/* The readahead protected, the faulting page writable: two
		 * copies, the faulting page last (waking it finds its
		 * neighbours in). */
		install_run(s, a + RH_PAGE_SIZE, buf + RH_PAGE_SIZE, n - 1, false, n, false);
		install(s, a, buf, true, false, true);
	} else {
		/* One copy; the faulting page of a write is written, not
		 * predicted. */
		install_run(s, a, buf, n, write || pred, pred ? write : n, true);
	}
	slot_put(s, slot);
	fetch_done(s);
	atomic_fetch_add(&s->st.faults, 1);
	atomic_fetch_add(&s->st.readahead_pages, n - 1);
	atomic_fetch_add(&s->st.bytes_fetched, n * RH_PAGE_SIZE);
}

/* A fault on an evicted page: claim it and the readahead window's evicted
 * pages after it (swap.C1), then fetch them. False: the page was not
 * EVICTED any more, and the caller looks again. */
static bool fetch(rh_swap *s, uintptr_t a, bool write)
{
	const rh_swap_host *h = rh_swap_host_of(s, a);
	uintptr_t region_end = (a & ~(uintptr_t)(s->region_size - 1)) + s->region_size;
	size_t pg = rh_swap_page(s, a);
	if (!h) {
		rh_uffd_wake(s, a, RH_PAGE_SIZE);
		return true;
	}
	uint32_t r = (uint32_t)((a - s->base) >> s->region_shift);
	uint32_t q = (uint32_t)((a & (s->region_size - 1)) >> RH_PAGE_SHIFT);
	size_t ra = ra_window(s, r, q);
	/* Room first, then the claims: a fault never waits for the evictor
	 * holding pages that other faults wait for. */
	budget_wait(s, 1 + ra);
	/* swap.P2: EVICTED -> FETCHING; the read goes to a private buffer. */
	if (!rh_swap_cas(s, pg, RH_PAGE_EVICTED, RH_PAGE_FETCHING))
		return false;
	size_t n = 1;
	/* swap.R2: the window read ahead, EVICTED -> FETCHING. */
	while (n <= ra && a + n * RH_PAGE_SIZE < region_end &&
	       rh_swap_cas(s, pg + n, RH_PAGE_EVICTED, RH_PAGE_FETCHING))
		n++;
	__atomic_store_n(&s->ra_end[r], q + (uint32_t)n, __ATOMIC_RELAXED);
	count_claimed(s, n);
	fetch_claimed(s, a, n, write);
	return true;
}

/* ---------------------------------------------------------------- peeking */

/* Reads the claimed pages pages[0..n) (one partition's, n at most a fetch
 * buffer's) into out[at[i]] and hands each back EVICTED (swap.P6). */
static bool peek_read(rh_swap *s, const uintptr_t *pages, const size_t *at, size_t n, uint8_t *out)
{
	uint32_t slot;
	uint8_t *buf = slot_get(s, &slot);
	bool ok = buf != NULL;
	rh_tp_sge sg[RH_EVICT_BATCH];
	for (size_t i = 0; ok && i < n; i++)
		sg[i] = (rh_tp_sge){
		        .local = buf + i * RH_PAGE_SIZE, .remote = pages[i], .len = RH_PAGE_SIZE};
	const rh_swap_host *h = NULL;
	ok = ok && read_holders(s, pages[0], sg, n, n, &h);
	for (size_t i = 0; ok && i < n; i++) {
		/* swap.I2: a corrupt page is fatal, never used. */
		ok = rh_swap_sums_ok(s, h, pages[i], buf + i * RH_PAGE_SIZE, 1);
		memcpy(out + at[i] * RH_PAGE_SIZE, buf + i * RH_PAGE_SIZE, RH_PAGE_SIZE);
	}
	if (buf)
		slot_put(s, slot);
	for (size_t i = 0; i < n; i++)
		rh_swap_set(s, rh_swap_page(s, pages[i]), RH_PAGE_EVICTED);
	fetch_done(s); /* swap.C2: faults that waited retry, and fetch it */
	atomic_fetch_add(&s->st.pages_peeked, n);
	return ok;
}

bool rh_swap_peek(rh_swap *s, const uintptr_t *pages, size_t n, uint8_t *out)
{
	size_t cap = s->fslot_len / RH_PAGE_SIZE;
	cap = cap < RH_EVICT_BATCH ? cap : RH_EVICT_BATCH;
	uintptr_t grp[RH_EVICT_BATCH];
	size_t at[RH_EVICT_BATCH], k = 0;
	const rh_swap_host *gh = NULL;
	bool ok = true;
	uint8_t *from_mem = calloc(n ? n : 1, 1);
	if (!from_mem)
		rh_panic("swap: out of memory for a read");
	/* swap.C4: no region is freed or filled while the images are read. */
	pthread_rwlock_rdlock(&s->fault_lock);
	for (size_t i = 0; i < n; i++) {
		size_t pg = rh_swap_page(s, pages[i]);
		/* Grouped by partition: read_holders reads a group from one holder. */
		const rh_swap_host *h = rh_swap_host_of(s, pages[i]);
		/* swap.P6: the claim keeps faults and the evictor off the page
		 * while its copy is read; nothing writes an evicted page's copy. */
		if (!h || !rh_swap_reader(s, pages[i]) ||
		    !rh_swap_cas(s, pg, RH_PAGE_EVICTED, RH_PAGE_FETCHING)) {
			from_mem[i] = 1;
			continue;
		}
		if (k && (h != gh || k == cap)) {
			ok = peek_read(s, grp, at, k, out) && ok;
			k = 0;
		}
		gh = h;
		grp[k] = pages[i];
		at[k++] = i;
	}
	if (k)
		ok = peek_read(s, grp, at, k, out) && ok;
	pthread_rwlock_unlock(&s->fault_lock);
	/* Outside the lock: a copy that faults is served like any fault. */
	for (size_t i = 0; ok && i < n; i++) {
		if (!from_mem[i])
			continue;
		if (rh_swap_get(s, rh_swap_page(s, pages[i])) == RH_PAGE_INIT)
			memset(out + i * RH_PAGE_SIZE, 0, RH_PAGE_SIZE);
		else
			memcpy(out + i * RH_PAGE_SIZE, (const void *)pages[i], RH_PAGE_SIZE);
	}
	free(from_mem);
	return ok;
}

/* A missing fault, by the page's state; a claim lost to another fault
 * means the state moved on, so look again. */
static void on_missing(rh_swap *s, uintptr_t a, bool write)
{
	size_t pg = rh_swap_page(s, a);
	for (;;) {
		switch (rh_swap_get(s, pg)) {
		case RH_PAGE_INIT:
			if (zero_fault(s, a, write))
				return;
			continue;
		case RH_PAGE_EVICTED:
			if (fetch(s, a, write))
				return;
			continue;
		case RH_PAGE_FETCHING:
			/* swap.C2: another fault installs it; wait, then let
			 * the thread retry (a readahead page is installed
			 * without waking anyone). */
			wait_fetch(s, pg);
			rh_uffd_wake(s, a, RH_PAGE_SIZE);
			return;
		case RH_PAGE_EVICTING:
			/* swap.C5: its write-back runs; fetch the copy once written. */
			pthread_mutex_lock(&s->lock);
			if (rh_swap_get(s, pg) == RH_PAGE_EVICTING)
				park(s, a);
			else
				rh_uffd_wake(s, a, RH_PAGE_SIZE);
			pthread_mutex_unlock(&s->lock);
			return;
		default:
			/* Installed meanwhile (readahead): let the thread retry. */
			rh_uffd_wake(s, a, RH_PAGE_SIZE);
			return;
		}
	}
}

static void on_write_protect(rh_swap *s, uintptr_t a)
{
	size_t pg = rh_swap_page(s, a);
	/* A readahead page is mapped, protected, before its state leaves
	 * FETCHING: a write to it waits for its state (swap.C2). */
	if (rh_swap_get(s, pg) == RH_PAGE_FETCHING)
		wait_fetch(s, pg);
	/* Under the lock: the evictor claims and protects pages under it too,
	 * so a page cannot be unprotected after the evictor copied it (swap.P1). */
	pthread_mutex_lock(&s->lock);
	switch (rh_swap_get(s, pg)) {
	case RH_PAGE_CLEAN:
		/* swap.P1: CLEAN -> DIRTY under the lock the evictor claims with. */
		rh_swap_set(s, pg, RH_PAGE_DIRTY);
		atomic_fetch_add(&s->st.wp_faults, 1);
		rh_swap_wscore_add(s, (uint32_t)(pg / s->pages_per_region), RH_WSCORE_WRITE);
		/* fall through */
	case RH_PAGE_DIRTY:
		if (rh_uffd_protect(s, a, RH_PAGE_SIZE, false) < 0)
			rh_panic("swap: removing write protection at %#lx: %s", (unsigned long)a,
			         strerror(errno));
		break;
	case RH_PAGE_EVICTING:
		park(s, a);
		break;
	default:
		/* Gone since the fault was queued: retrying takes a missing fault. */
		rh_uffd_wake(s, a, RH_PAGE_SIZE);
		break;
	}
	pthread_mutex_unlock(&s->lock);
}

/* The process is going down (the fatal handler runs): a faulting thread
 * stays here, as a faulter stays blocked with a fault thread. */
static void hold_failed(rh_swap *s)
{
	while (atomic_load(&s->failed)) {
		pthread_mutex_lock(&s->lock);
		rh_cond_wait_ms(&s->cond, &s->lock, 1000);
		pthread_mutex_unlock(&s->lock);
	}
}

/* A fault served by the thread that took it (signal.c): the kernel sent
 * SIGBUS instead of queueing a message, so nobody is blocked on the page
 * and the thread retries its access when this returns. The kind of fault
 * is told by the page's state; `write` is 1 for a write, 0 for a read, -1
 * when the architecture does not say. Threads serve their faults at once,
 * each under fault_lock shared (swap.C4). */
void rh_swap_serve(rh_swap *s, uintptr_t a, int write)
{
	a &= ~(uintptr_t)(RH_PAGE_SIZE - 1);
	size_t pg = rh_swap_page(s, a);
	hold_failed(s);
	pthread_rwlock_rdlock(&s->fault_lock);
	/* swap.S1: no heap memory is touched while fault_lock is held. */
	switch (rh_swap_get(s, pg)) {
	case RH_PAGE_INIT:
		/* Unknown counts as a write: a zero run, DIRTY, which is
		 * right for a read too (only a needless write-back). */
		on_missing(s, a, write != 0);
		break;
	case RH_PAGE_EVICTED:
		on_missing(s, a, write == 1);
		break;
	case RH_PAGE_CLEAN:
	case RH_PAGE_DIRTY:
		/* A write to a protected page, or a page another thread
		 * installed meanwhile: a read just retries. */
		if (write != 0)
			on_write_protect(s, a);
		break;
	case RH_PAGE_FETCHING:
		wait_fetch(s, pg); /* swap.C2; then the access retries */
		break;
	case RH_PAGE_EVICTING:
		/* Wait for the evictor's batch, then retry (a missing fault
		 * then fetches the written-back copy). Not under fault_lock:
		 * a free of a region waits for no batch. */
		pthread_rwlock_unlock(&s->fault_lock);
		pthread_mutex_lock(&s->lock);
		while (rh_swap_get(s, pg) == RH_PAGE_EVICTING && !atomic_load(&s->failed))
			rh_cond_wait_ms(&s->cond, &s->lock, 50);
		pthread_mutex_unlock(&s->lock);
		return;
	default:
		break;
	}
	pthread_rwlock_unlock(&s->fault_lock);
}

/* Wait for fault messages: poll, unless a fault came less than
 * fault_spin_ns ago, in which case keep reading without sleeping. On a
 * virtual machine whose idle vCPUs halt, waking this thread from poll cost
 * hundreds of microseconds per fault (docs/swap.md, "Waiting"), far more
 * than the fault itself; faults come in bursts, so a short poll after each
 * catches the next one awake. Returns the bytes read, 0 to stop. */
static size_t next_msgs(rh_swap *s, struct uffd_msg *msgs, size_t cap, uint64_t spin_until)
{
	struct pollfd pfd[2] = {{.fd = s->uffd, .events = POLLIN},
	                        {.fd = s->wake_fd, .events = POLLIN}};
	while (!atomic_load(&s->stop)) {
		bool spin = spin_until && rh_now_ns() < spin_until;
		if (!spin) {
			if (poll(pfd, 2, -1) < 0 && errno != EINTR)
				rh_panic("swap: poll on userfaultfd: %s", strerror(errno));
			if (pfd[1].revents)
				return 0;
		}
		ssize_t n = read(s->uffd, msgs, cap * sizeof *msgs);
		if (n > 0)
			return (size_t)n;
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			rh_panic("swap: reading userfaultfd: %s", strerror(errno));
	}
	return 0;
}

/* One of the fault threads. With several, each reads one message at a
 * time (a batch read by one thread would wait behind its remote read while
 * another thread idles), and only the first spins after a fault: the
 * others would take a core each for it. */
void *rh_swap_fault_main(void *arg)
{
	rh_swap *s = arg;
	struct uffd_msg msgs[32];
	bool first = atomic_fetch_add(&s->fault_thr_seq, 1) == 0;
	size_t cap = s->o.fault_threads > 1 ? 1 : 32;
	uint64_t spin_until = 0;
	size_t n;
	while ((n = next_msgs(s, msgs, cap, spin_until)) > 0) {
		for (size_t i = 0; i < n / sizeof msgs[0]; i++) {
			if (msgs[i].event != UFFD_EVENT_PAGEFAULT)
				continue;
			uintptr_t a = (uintptr_t)msgs[i].arg.pagefault.address &
			              ~(uintptr_t)(RH_PAGE_SIZE - 1);
			uint64_t fl = msgs[i].arg.pagefault.flags;
			pthread_rwlock_rdlock(&s->fault_lock);
			if (atomic_load(&s->failed))
				; /* leave the thread blocked: the process is going down */
			else if (fl & UFFD_PAGEFAULT_FLAG_WP)
				on_write_protect(s, a);
			else
				on_missing(s, a, (fl & UFFD_PAGEFAULT_FLAG_WRITE) != 0);
			pthread_rwlock_unlock(&s->fault_lock);
		}
		spin_until = first && s->o.fault_spin_ns ? rh_now_ns() + s->o.fault_spin_ns : 0;
	}
	return NULL;
}
