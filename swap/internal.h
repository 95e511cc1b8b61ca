/* Swap internals shared by swap.c, fault.c and evict.c.
 *
 * Locks, in order: fault_lock (a reader-writer lock: every fault holds it
 * shared while it is served, remote read included; freeing or filling a
 * region, changing the readahead window and waiting for the faults in hand
 * hold it exclusive, swap.C4) → evict_lock (held by the evictor while it
 * evicts one batch) → lock (page-state changes that go with a protection
 * change, the parked list, budget waits, waits for a fetch or a buffer).
 * Freeing a region takes all three, so it never races with a fetch or an
 * eviction in that region.
 */
#ifndef RH_SWAP_INTERNAL_H
#define RH_SWAP_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "common/common.h"
#include "swap/integrity.h"
#include "swap/swap.h"

#define RH_EVICT_BATCH 64u
/* Zero pages installed at once on a write to a fresh page (fault.c). */
#define RH_ZERO_RUN 16u
/* Fetch buffers: faults with a remote read in flight at once (swap.C3). */
#define RH_FETCH_SLOTS 16u

struct rh_swap {
	rh_swap_opts o;
	rh_swap_host *hosts;
	uintptr_t base;
	size_t size, region_size;
	uint32_t region_shift, pages_per_region, n_regions;
	size_t n_pages;
	uint8_t *state; /* enum rh_page_state per page, atomic */
	size_t budget_pages, high_pages, low_pages;
	uint32_t readahead; /* largest window, <= o.readahead */
	/* Adaptive readahead (fault.c), per region, hints read and written
	 * with relaxed atomics (swap.C7): the window, and the page just past
	 * the last fetch (+0; 0: none yet). */
	uint8_t *ra_win;
	uint32_t *ra_end;
	/* Write prediction (fault.c), per region, a relaxed-atomic hint
	 * (swap.W3): a score that first writes to fetched pages raise and
	 * clean evictions lower; high enough, fetched pages go in writable. */
	uint8_t *wscore;
	/* swap.W5, per page, the current residency's: 1 if the page went in
	 * writable on a read, and then the CRC32C of the bytes it came with. */
	uint8_t *wpred;
	uint32_t *wsum;
	atomic_size_t resident;

	int uffd, wake_fd;
	pthread_t *fault_thr, evict_thr;
	uint32_t n_fault_thr; /* started */
	atomic_uint fault_thr_seq;
	bool threads_started;
	atomic_bool stop;
	atomic_bool failed;
	atomic_bool drop_warned; /* a failed MADV_DONTNEED was logged */

	pthread_rwlock_t fault_lock;
	pthread_mutex_t evict_lock, lock;
	pthread_cond_t cond;  /* resident changed, or work for the evictor */
	pthread_cond_t fcond; /* a page left FETCHING or a fetch buffer came free */
	uint32_t fwaiters;    /* threads waiting on fcond, under lock */
	uintptr_t *parked;    /* faulting page addresses waiting for an eviction */
	size_t n_parked, cap_parked;
	uint32_t flush_region; /* region + 1 that rh_swap_flush_region wants evicted */

	uint64_t *tag, *log_head; /* per region: this side's view (sole writer) */
	uint8_t *fbuf;            /* RH_FETCH_SLOTS fetch buffers of fslot_len */
	size_t fslot_len;
	atomic_uint_fast32_t fslots; /* bit i: buffer i is free */
	uint8_t *ebuf;               /* evictor bounce: RH_EVICT_BATCH pages + log entries */
	size_t fbuf_len, ebuf_len;
	uint8_t *zero; /* RH_ZERO_RUN zero pages */
	atomic_uint_fast64_t wr_seq;
	uint32_t clock; /* evictor's next region */
	rh_integ integ; /* with o.checksum: what each page's memory server holds */
	/* hosts.c: per slot (a partition's index) its current host (hosts[i],
	 * or a spare's struct once it took over, red.S3) and its state
	 * (enum rh_host_state), changed under host_lock, read without it;
	 * n_lost counts losses. The spares' structs, kept until close. */
	_Atomic(rh_swap_host *) *cur;
	atomic_int *hstate;
	atomic_size_t n_lost;
	pthread_mutex_t host_lock;
	rh_swap_host **spares;
	size_t n_spares;
	uint64_t rebuilds, rebuild_ns; /* under host_lock */
	atomic_bool rebuild_cancel;    /* a rebuild under way stops between regions */

	struct {
		atomic_uint_fast64_t faults, zero_faults, wp_faults, readahead_pages, bytes_fetched,
		        bytes_evicted, pages_dropped, batches, drop_failures, drop_calls,
		        budget_waits, budget_wait_ns, pred_written, pred_unwritten, pages_peeked,
		        copy_reads;
		/* installs that found a page mapped (EEXIST): none unless a
		 * page was mapped behind the protocol's back (swap.C1) */
		atomic_uint_fast64_t install_conflicts;
	} st;
};

/* Write prediction (swap.W1-W5): a first write, or a predicted page found
 * written at its write-back, adds RH_WSCORE_WRITE to its region's score; a
 * page evicted clean, or predicted and found unwritten, takes one off;
 * within 0 and RH_WSCORE_MAX. At RH_WSCORE_ON or more the region's fetched
 * pages are installed writable. The score rises when more than one page in
 * 1 + RH_WSCORE_WRITE is written before its eviction. */
#define RH_WSCORE_WRITE 3u
#define RH_WSCORE_ON 16u
#define RH_WSCORE_MAX 64u
/* The collector's hint (swap.W4): every page writable, the score frozen. */
#define RH_WSCORE_ALL 255u

static inline size_t rh_swap_page(const rh_swap *s, uintptr_t a)
{
	return (a - s->base) >> RH_PAGE_SHIFT;
}
static inline uint8_t rh_swap_get(rh_swap *s, size_t pg)
{
	return __atomic_load_n(&s->state[pg], __ATOMIC_ACQUIRE);
}
static inline void rh_swap_set(rh_swap *s, size_t pg, uint8_t v)
{
	__atomic_store_n(&s->state[pg], v, __ATOMIC_RELEASE);
}
static inline bool rh_swap_cas(rh_swap *s, size_t pg, uint8_t from, uint8_t to)
{
	return __atomic_compare_exchange_n(&s->state[pg], &from, to, false, __ATOMIC_ACQ_REL,
	                                   __ATOMIC_ACQUIRE);
}
/* A slot's state (hosts.c): read from and written to; lost; or a spare's,
 * written to and not yet read from (red.S2). */
enum rh_host_state { RH_HOST_UP = 0, RH_HOST_DOWN = 1, RH_HOST_REBUILDING = 2 };
/* Slot i's current host. */
const rh_swap_host *rh_swap_slot(rh_swap *s, size_t i);
/* The current host of a's partition (whatever its state), or NULL. */
const rh_swap_host *rh_swap_host_of(rh_swap *s, uintptr_t a);
/* red.R4: the host to read a's page from: its owner while up, else the
 * host keeping its copy; NULL if neither is up (the loss was fatal). */
const rh_swap_host *rh_swap_reader(rh_swap *s, uintptr_t a);
/* Whether h is its slot's host and up (read from and written to), or
 * writable (up or rebuilding). */
bool rh_swap_host_up(rh_swap *s, const rh_swap_host *h);
bool rh_swap_host_writable(rh_swap *s, const rh_swap_host *h);
/* A remote operation on h failed (err): rh_swap_host_lost on it. True if
 * the heap goes on without it. */
bool rh_swap_host_failed(rh_swap *s, const rh_swap_host *h, const rh_error *err);
/* A remote operation on host h failed: the heap is lost. */
void rh_swap_fail(rh_swap *s, const rh_swap_host *h, const rh_error *err);
/* The heap is unusable (err says why): the fatal handler, once. */
void rh_swap_fatal(rh_swap *s, const rh_error *err);
uint64_t rh_swap_wr_id(rh_swap *s);

/* userfaultfd helpers (fault.c). rh_uffd_copy returns 0 or -errno (EEXIST:
 * a page there is mapped already); *done, if given, gets the bytes it
 * installed from the start of the range either way. */
int rh_uffd_copy(rh_swap *s, uintptr_t dst, const void *src, size_t len, bool wp, bool wake,
                 size_t *done);
int rh_uffd_protect(rh_swap *s, uintptr_t a, size_t len, bool wp);
void rh_uffd_wake(rh_swap *s, uintptr_t a, size_t len);
void *rh_swap_fault_main(void *arg);
void rh_swap_serve(rh_swap *s, uintptr_t a, int write);

/* The SIGBUS handler's registry of heaps (signal.c). */
int rh_swap_signal_add(rh_swap *s, rh_error *err);
void rh_swap_signal_remove(rh_swap *s);

/* Eviction (evict.c). */
void *rh_swap_evict_main(void *arg);
/* Evict up to RH_EVICT_BATCH resident pages of a region; the count, or -1.
 * Pages claimed but not dropped (MADV_DONTNEED failed) stay resident, CLEAN,
 * and are added to *kept. */
int rh_swap_evict_batch(rh_swap *s, uint32_t region, size_t *kept);
/* Write back up to one batch of the region's dirty pages, keeping them
 * resident and CLEAN; the number written, 0 when none is dirty, -1 when
 * the write failed (the swap system has failed then). */
int rh_swap_clean_batch(rh_swap *s, uint32_t region);

/* Write prediction (fault.c): whether pages of region r fetched on a read
 * go in writable; the score's updates; swap.W5's check of the n dirty
 * pages at addrs[i], copied to bytes + i pages for their write-back. */
bool rh_swap_wpredict(rh_swap *s, uint32_t r);
void rh_swap_wscore_add(rh_swap *s, uint32_t region, int delta);
void rh_swap_wcheck(rh_swap *s, uint32_t region, const uintptr_t *addrs, const uint8_t *bytes,
                    size_t n);

/* Checksums (integrity.c), no-ops without o.checksum. The write-back path
 * records the bytes it sends for page a; the fetch path checks the n pages
 * read into buf for page a onward before installing any, and on a mismatch
 * fails the swap system with an error naming host h and the page. */
void rh_swap_sum_written(rh_swap *s, uintptr_t a, const void *bytes);
bool rh_swap_sums_ok(rh_swap *s, const rh_swap_host *h, uintptr_t a, const uint8_t *buf, size_t n);

#endif
