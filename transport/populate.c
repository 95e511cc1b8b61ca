/* transport.P1: the shm provider copies into the peer's memfd through its
 * own mapping of it, and tcp's receive thread reads the peer's WRITEs into
 * the registered range: the first copy into each page faults, once to
 * allocate the page and once more per process that maps it. A fault costs
 * 10-11 us on this machine's hypervisor; mapping a run of pages with one
 * madvise costs about 1 us a page the first time and 0.1 us a page after
 * (docs/transport.md, "Populating targets"). A memory server writes the
 * same pages for the whole session: the CPU server's eviction batches are
 * runs of a region's pages, so one call a batch. Mapping never changes
 * what a copy does, only whether it faults: the advice may fail (kernel
 * older than 5.14, a range the kernel will not populate) and the copy
 * then faults as before. */
#include <sys/mman.h>

#include "transport/populate.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14 */
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define PAGE 4096u

static void populate(const rh_tp_run *r)
{
	/* Runs shorter than a page (a batch's log entries, on the memory
	 * server's metadata pages, written at every batch) would cost a
	 * call each for pages mapped long ago. */
	if (r->hi - r->lo < PAGE)
		return;
	uintptr_t lo = r->lo & ~(uintptr_t)(PAGE - 1);
	uintptr_t hi = (r->hi + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
	(void)madvise((void *)lo, hi - lo, r->write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
}

void rh_tp_run_add(rh_tp_run *r, uintptr_t addr, size_t len)
{
	if (addr == r->hi && r->hi > r->lo) {
		r->hi += len;
		return;
	}
	populate(r);
	r->lo = addr;
	r->hi = addr + len;
}

void rh_tp_run_end(rh_tp_run *r)
{
	populate(r);
	r->lo = r->hi = 0;
}
