/* End-to-end integrity of evicted pages (docs/swap.md, "Integrity").
 *
 * The CPU server keeps a CRC32C of what each page's memory server holds:
 * set when it writes a page back, checked when it fetches one, and
 * forgotten when someone else (a tracer) may write the page. A fetched page
 * that fails its check was changed on the memory server behind the CPU
 * server's back; installing it would corrupt the heap silently.
 */
#ifndef RH_SWAP_INTEGRITY_H
#define RH_SWAP_INTEGRITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Per page: the CRC32C of the memory server's copy, and whether it is
 * known. Entries change only with the page's state protocol (swap.I1). */
typedef struct rh_integ {
	uint32_t *sum;
	uint8_t *known;
	size_t n_pages;
	uint32_t zero_sum; /* of a page of zeros: what INIT pages hold remotely */
} rh_integ;

/* Every page starts as INIT: its memory server holds zeros. */
int rh_integ_init(rh_integ *ig, size_t n_pages);
void rh_integ_free(rh_integ *ig);
uint32_t rh_integ_crc(const void *page);

/* The CPU server wrote `page` (its bytes as sent) back as page pg. */
void rh_integ_written(rh_integ *ig, size_t pg, const void *page);
/* `page` was just fetched as page pg: true if it matches (or nothing was
 * known, in which case it is known from now on); else false, with the
 * sums in *got and *want. */
bool rh_integ_check(rh_integ *ig, size_t pg, const void *page, uint32_t *got, uint32_t *want);
/* Pages [pg, pg + n) went back to INIT: their memory server holds zeros. */
void rh_integ_zeroed(rh_integ *ig, size_t pg, size_t n);
/* Pages [pg, pg + n) may be written by a tracer: nothing is known. */
void rh_integ_forget(rh_integ *ig, size_t pg, size_t n);

#endif
