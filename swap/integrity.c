/* Per-page checksums of evicted pages (docs/swap.md, "Integrity"): the
 * arrays alone, and the two hooks the write-back and fetch paths call. */
#include <isa-l/crc.h>
#include <stdlib.h>
#include <string.h>

#include "swap/integrity.h"
#include "swap/internal.h"

/* CRC32C (Castagnoli): ISA-L picks the CPU's crc32 instruction at run
 * time, well under a microsecond a page against the several of a fault. */
uint32_t rh_integ_crc(const void *page)
{
	return crc32_iscsi((unsigned char *)(uintptr_t)page, RH_PAGE_SIZE, 0xffffffffu);
}

int rh_integ_init(rh_integ *ig, size_t n_pages)
{
	static const uint8_t zeros[RH_PAGE_SIZE];
	ig->n_pages = n_pages;
	ig->sum = malloc(n_pages * sizeof *ig->sum);
	ig->known = malloc(n_pages);
	if (!ig->sum || !ig->known) {
		rh_integ_free(ig);
		return -1;
	}
	ig->zero_sum = rh_integ_crc(zeros);
	rh_integ_zeroed(ig, 0, n_pages);
	return 0;
}

void rh_integ_free(rh_integ *ig)
{
	free(ig->sum);
	free(ig->known);
	ig->sum = NULL;
	ig->known = NULL;
}

void rh_integ_written(rh_integ *ig, size_t pg, const void *page)
{
	ig->sum[pg] = rh_integ_crc(page);
	ig->known[pg] = 1;
}

bool rh_integ_check(rh_integ *ig, size_t pg, const void *page, uint32_t *got, uint32_t *want)
{
	uint32_t c = rh_integ_crc(page);
	if (!ig->known[pg]) {
		/* swap.I3: a tracer wrote it last; from here the CPU server
		 * holds what this fetch read, and a later change is caught. */
		ig->sum[pg] = c;
		ig->known[pg] = 1;
		return true;
	}
	*got = c;
	*want = ig->sum[pg];
	return c == ig->sum[pg];
}

void rh_integ_zeroed(rh_integ *ig, size_t pg, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ig->sum[pg + i] = ig->zero_sum;
	memset(ig->known + pg, 1, n);
}

void rh_integ_forget(rh_integ *ig, size_t pg, size_t n)
{
	memset(ig->known + pg, 0, n);
}

/* ---- the swap system's hooks ---- */

void rh_swap_sum_written(rh_swap *s, uintptr_t a, const void *bytes)
{
	/* swap.I1: under evict_lock, the page EVICTING. */
	if (s->o.checksum)
		rh_integ_written(&s->integ, rh_swap_page(s, a), bytes);
}

bool rh_swap_sums_ok(rh_swap *s, const rh_swap_host *h, uintptr_t a, const uint8_t *buf, size_t n)
{
	if (!s->o.checksum)
		return true;
	size_t pg = rh_swap_page(s, a);
	for (size_t i = 0; i < n; i++) {
		uint32_t got, want;
		/* swap.I2: every fetched page is checked before it is installed. */
		if (rh_integ_check(&s->integ, pg + i, buf + i * RH_PAGE_SIZE, &got, &want))
			continue;
		uintptr_t p = a + i * RH_PAGE_SIZE;
		rh_error e;
		rh_err_set(&e, RH_EPEER,
		           "%s returned a corrupt page: %#lx (region %u, page %u) has CRC32C %#x, "
		           "but %#x was written back; the page was changed on the memory server "
		           "behind the CPU server's back, and is not installed",
		           h->name, (unsigned long)p, (unsigned)((p - s->base) >> s->region_shift),
		           (unsigned)((p & (s->region_size - 1)) >> RH_PAGE_SHIFT), got, want);
		rh_swap_fatal(s, &e);
		return false;
	}
	return true;
}
