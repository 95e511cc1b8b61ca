/* The CPU server's page cache of a disaggregated heap (docs/swap.md).
 *
 * The heap range is registered with userfaultfd; a fault thread installs
 * pages (zeros for INIT, fetched from the page's memory server for
 * EVICTED) and tracks writes with write protection; an evictor thread keeps
 * the resident set under the byte budget, writing dirty pages back per
 * region under the dirty/version tag protocol and logging them in the
 * region's eviction log on its host.
 */
#ifndef RH_SWAP_H
#define RH_SWAP_H

#include <stddef.h>
#include <stdint.h>

#include "gc/layout.h"
#include "rheap/rheap.h"
#include "transport/transport.h"

enum rh_page_state {
	RH_PAGE_INIT = 0,
	RH_PAGE_CLEAN = 1,
	RH_PAGE_DIRTY = 2,
	RH_PAGE_EVICTED = 3,
	RH_PAGE_FETCHING = 4,
	RH_PAGE_EVICTING = 5,
};

typedef struct rh_swap rh_swap;

/* One memory server: its partition and the connection to it. */
typedef struct rh_swap_host {
	char name[96]; /* "memory server N (host:port)", for error messages */
	rh_tp_conn *conn;
	rh_partition part; /* meta_base filled from HELLO_OK */
	int replica;       /* index of the host keeping the partition's copy; -1: none */
} rh_swap_host;

typedef struct rh_swap_opts {
	uintptr_t base;
	size_t size;
	size_t region_size;
	size_t budget;             /* bytes of heap resident at most */
	uint32_t readahead;        /* pages fetched after a faulting one, same region, at most */
	bool readahead_adaptive;   /* per region: grow on sequential faults, shrink on others */
	uint64_t fault_spin_ns;    /* fault thread polls this long after a fault */
	bool signal_faults;        /* each thread serves its own faults (SIGBUS) */
	uint32_t fault_threads;    /* without signal_faults: threads reading faults (0: 1) */
	uint32_t timeout_ms;       /* for each remote operation */
	bool checksum;             /* CRC32C of each page written back, checked at fetch */
	bool skip_copies;          /* debug: no writes to the copies (redundancy.write_copies) */
	const rh_swap_host *hosts; /* copied */
	size_t n_hosts;
	/* Called once, from a swap thread, when a remote operation fails: the
	 * heap is unusable from then on. */
	void (*fatal)(void *data, const rh_error *err);
	void *fatal_data;
} rh_swap_opts;

typedef struct rh_swap_stats {
	uint64_t faults;      /* missing faults on evicted pages */
	uint64_t zero_faults; /* missing faults on INIT pages */
	uint64_t wp_faults;   /* first write to a clean page */
	uint64_t readahead_pages;
	uint64_t bytes_fetched;
	uint64_t bytes_evicted; /* written back */
	uint64_t pages_dropped; /* evicted clean */
	uint64_t batches;       /* eviction batches that ran the tag protocol */
	uint64_t drop_failures; /* evicted pages MADV_DONTNEED failed to drop (kept) */
	uint64_t drop_calls;    /* MADV_DONTNEED calls by eviction batches (swap.P5) */
	uint64_t pages_peeked;  /* evicted pages read and left evicted (swap.P6) */
	uint64_t copy_reads;    /* pages read from a copy, their owner lost (red.R4) */
	uint64_t budget_waits;  /* faults that waited for the evictor to make room */
	uint64_t budget_wait_ns;
	/* Pages installed writable on a read, at their write-back (swap.W5):
	 * changed while resident, or not (a needless write-back). */
	uint64_t pred_written, pred_unwritten;
	uint64_t resident_pages;
	uint64_t budget_pages;
} rh_swap_stats;

/* The heap range must already be mapped (private, anonymous) and empty. */
int rh_swap_open(const rh_swap_opts *o, rh_swap **out, rh_error *err);
void rh_swap_close(rh_swap *s);

/* The collector freed a region: its pages become INIT here (the caller
 * tells the host to release them). Safe while the swap threads run. */
void rh_swap_region_freed(rh_swap *s, uint32_t region);

/* The collector is about to write most of what it reads in the region
 * (on: forwarding headers of the objects it evacuates, fillers where it
 * keeps it in place), or is done with it (off): while on, every page of
 * the region fetched goes in writable (swap.W4). Freeing ends it too. */
void rh_swap_region_writes(rh_swap *s, uint32_t region, bool on);

/* A tracer wrote [start, start + bytes) of a free region (an evacuation
 * destination): its pages are fetched from there on first touch. */
void rh_swap_region_filled(rh_swap *s, uint32_t region, size_t bytes);
/* A tracer writes [addr, addr + len) of evicted pages without the CPU
 * server (forwarding headers, fillers, cards it fixes): their checksums are
 * forgotten (swap.I3). Call before any of them is fetched again. */
void rh_swap_remote_writes(rh_swap *s, uintptr_t addr, size_t len);
/* Percentage of the region's first `bytes` held only by its host. */
unsigned rh_swap_region_evicted_pct(rh_swap *s, uint32_t region, size_t bytes);

/* Evict every resident page of a region (e.g. before handing the region to
 * its tracer). Blocks until done. */
int rh_swap_flush_region(rh_swap *s, uint32_t region, rh_error *err);

/* Write back every dirty page of a region and keep it resident (CLEAN):
 * afterwards the host's copy equals the resident pages, until one is
 * written again. Pages dirtied while it runs may stay dirty. */
int rh_swap_clean_region(rh_swap *s, uint32_t region, rh_error *err);

/* One batch of the region's dirty pages written back and kept (CLEAN),
 * for a caller that cleans a little at a time between pauses (preclean.P2
 * in docs/distributed-gc.md): the pages written, 0 once none is dirty, -1
 * (err set) if the write-back failed. Pages being faulted in are skipped. */
int rh_swap_clean_step(rh_swap *s, uint32_t region, rh_error *err);
/* Whether the region's pages are expected to be written while resident
 * (swap.W1's score at its threshold, or the collector's hint, swap.W4). */
bool rh_swap_region_write_hot(rh_swap *s, uint32_t region);

/* swap.P6: the bytes of n heap pages (page-aligned addresses) into out
 * (n pages), for a collector that reads them once: an evicted page is read
 * from its memory server's copy and stays evicted, a page never written
 * reads as zeros, any other is copied from memory (faulting it in only if
 * it was evicted meanwhile). False if a read failed: the swap system has
 * failed and the process is ending (docs/swap.md, "Reading without
 * installing"). */
bool rh_swap_peek(rh_swap *s, const uintptr_t *pages, size_t n, uint8_t *out);

/* Host i (an index into the hosts given at open) is lost: cause says how.
 * red.R5: nothing reads from or writes to it again. True if every partition
 * still has its pages on a host that is up (its owner or the copy's
 * holder, red.R4): the heap goes on. False if not: the fatal handler has
 * been called with a message naming every host lost. Safe from any
 * thread, more than once per host. */
bool rh_swap_host_lost(rh_swap *s, size_t i, const rh_error *cause);
/* Hosts lost so far (spares that took a lost host's place included). */
size_t rh_swap_hosts_lost(rh_swap *s);
/* Whether slot i's host is lost and not replaced yet. */
bool rh_swap_host_down(rh_swap *s, size_t i);
/* red.S1-S3: spare (its conn connected and HELLO done for partition i, its
 * part.meta_base from HELLO_OK, its replica as slot i's) takes lost slot i's
 * place: written to at once, its partition and the copy slot i kept copied
 * from their other holders region by region, then read from. The swap
 * system owns *spare from the call on (not its connection). RH_OK when
 * redundancy is restored; an error if the spare or a source was lost (it
 * then counts as lost too) or the swap system stopped. Blocks; one rebuild
 * at a time. */
int rh_swap_rebuild(rh_swap *s, size_t i, rh_swap_host *spare, rh_error *err);
/* A rebuild under way stops at its next region, with an error. */
void rh_swap_rebuild_cancel(rh_swap *s);
/* Rebuilds done, and the last one's time. */
void rh_swap_rebuild_stats(rh_swap *s, uint64_t *rebuilds, uint64_t *last_ns);

void rh_swap_stats_get(rh_swap *s, rh_swap_stats *out);
uint8_t rh_swap_page_state(rh_swap *s, uintptr_t addr);
/* Change the readahead window (pages after a faulting one; with adaptive
 * readahead the largest window, and every region starts over from it). */
void rh_swap_set_readahead(rh_swap *s, uint32_t pages);
/* Wait for the eviction batch in flight, if any, to finish. */
void rh_swap_quiesce(rh_swap *s);
/* The region's tag and log head as this side last wrote them. */
void rh_swap_region_tag(rh_swap *s, uint32_t region, uint64_t *tag, uint64_t *log_head);

#endif
