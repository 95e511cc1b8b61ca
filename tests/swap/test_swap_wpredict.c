/* Write prediction (docs/swap.md, "Write prediction", swap.W1-W5).
 *
 * - Written: a region whose pages are each written just after a read
 *   fault brought them in learns it. After the first writes that lift its
 *   score to RH_WSCORE_ON, read faults install every page of it writable
 *   and DIRTY and the writes after them take no protection fault. Evicted,
 *   those pages are found written (swap.W5) and the score stays up.
 * - Read: a region whose pages are only read keeps installing them CLEAN.
 * - Falls back: once the written region's pages are only read, its
 *   evictions find the predicted pages unwritten (swap.W5: no page of it
 *   comes in CLEAN, so nothing else could lower the score), and within the
 *   rounds the score's range allows its read faults install CLEAN again.
 * - Hinted: while the collector says it writes a region
 *   (rh_swap_region_writes on), every page of it comes in DIRTY, and
 *   evictions of unwritten pages do not end that; off, the region starts
 *   from nothing and installs CLEAN.
 * - Nothing is lost: pages installed DIRTY on a prediction, written or
 *   not, are written back on eviction, and every byte of both regions
 *   reads back as last written.
 *
 * usage: test-swap-wpredict TRACERD PROVIDER
 */
#include "runtime/internal.h"
#include "swap/internal.h"
#include "tests/common/check.h"
#include "tests/common/cluster.h"
#include "tests/swap/pages.h"

/* The byte at offset i of the array's bytes, whose first region starts at
 * offset off1: the pattern, with byte 1 of each written page bumped once
 * per write (bumps: per page from that region's start). */
static uint8_t expect(size_t i, size_t off1, const uint8_t *bumps)
{
	uint8_t b = pattern(i);
	return (i - off1) % RH_PAGE_SIZE == 1 ? (uint8_t)(b + bumps[(i - off1) / RH_PAGE_SIZE]) : b;
}

static void flush(rh_swap *s, uint32_t region)
{
	rh_error err;
	int rc = rh_swap_flush_region(s, region, &err);
	CHECK(rc == RH_OK, "flush region %u: %s", region, rc == RH_OK ? "" : err.msg);
}

/* Read, then write, every page of region `reg` (bytes at b): how the
 * pages came in, and the protection faults the writes took. */
typedef struct tally {
	uint32_t learn;       /* pages before the first predicted one */
	uint32_t clean_wrong; /* pages past learn that came in CLEAN */
	uint32_t wp_after;    /* protection faults of pages past learn */
} tally;

static tally read_write(rh_swap *s, uint8_t *b, uint32_t np, uint8_t *bumps)
{
	tally t = {.learn = UINT32_MAX};
	for (uint32_t i = 0; i < np; i++) {
		volatile uint8_t *p = b + (size_t)i * RH_PAGE_SIZE;
		(void)p[0];
		settle(s);
		uint8_t st = rh_swap_page_state(s, (uintptr_t)p);
		rh_swap_stats a, z;
		rh_swap_stats_get(s, &a);
		bumps[i]++;
		p[1] = (uint8_t)(p[1] + 1);
		settle(s);
		rh_swap_stats_get(s, &z);
		uint64_t wp = z.wp_faults - a.wp_faults;
		if (st == RH_PAGE_DIRTY && t.learn == UINT32_MAX)
			t.learn = i;
		if (t.learn == UINT32_MAX)
			continue;
		t.clean_wrong += st != RH_PAGE_DIRTY;
		t.wp_after += (uint32_t)wp;
	}
	return t;
}

/* Read every page of the region: the pages that came in DIRTY. */
static uint32_t read_only(rh_swap *s, const uint8_t *b, uint32_t np)
{
	uint32_t dirty = 0;
	for (uint32_t i = 0; i < np; i++) {
		const volatile uint8_t *p = b + (size_t)i * RH_PAGE_SIZE;
		(void)p[0];
		settle(s);
		dirty += rh_swap_page_state(s, (uintptr_t)p) == RH_PAGE_DIRTY;
	}
	return dirty;
}

static rh_swap_stats stats(rh_swap *s)
{
	rh_swap_stats st;
	rh_swap_stats_get(s, &st);
	return st;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	swap_deadline(50);
	cluster_test ct = {.timeout_ms = 3000};
	int rc = cluster_test_begin(&ct, argc, argv, "");
	if (rc)
		return rc;
	rh_heap *h = ct.heap;
	rh_error err;
	rh_swap *s = h->swap;
	rh_type_id t_bytes = swap_bytes_type(h, &err);
	static void *arr;
	rh_global_add(h, &arr);
	rh_mutator *m = rh_mutator_attach(h, &err);
	/* Humongous, so region-aligned: regions 1 and 2 of its span lie
	 * wholly inside it. Nothing allocates from here on: nothing moves. */
	size_t len = 4 * h->region_size;
	arr = rh_alloc_array(m, t_bytes, len);
	CHECK(arr != NULL, "allocate a four-region array");
	if (!arr)
		goto out;
	uint8_t *all = (uint8_t *)arr + 16;
	for (size_t i = 0; i < len; i++)
		all[i] = pattern(i);
	uintptr_t r1 = ((uintptr_t)arr & ~(uintptr_t)(h->region_size - 1)) + h->region_size;
	uint32_t reg1 = rh_region_index(h, r1), reg2 = reg1 + 1;
	size_t off1 = r1 - (uintptr_t)all, off2 = off1 + h->region_size;
	uint8_t *b1 = (uint8_t *)r1, *b2 = b1 + h->region_size;
	uint32_t np = (uint32_t)(h->region_size / RH_PAGE_SIZE);
	CHECK(np >= 64, "regions of at least 64 pages (%u)", np);
	if (np < 64)
		goto out;
	uint8_t *bumps = calloc(2 * np, 1); /* regions 1 and 2, per page */
	/* One page a fault, so that each page's state is its own fault's. */
	rh_swap_set_readahead(s, 0);

	/* Written. */
	flush(s, reg1);
	tally t = read_write(s, b1, np, bumps);
	uint32_t learn = (RH_WSCORE_ON + RH_WSCORE_WRITE - 1) / RH_WSCORE_WRITE;
	CHECK(t.learn == learn,
	      "written: read faults install DIRTY from page %u on, after %u first writes "
	      "(%u)",
	      learn, learn, t.learn);
	CHECK(t.clean_wrong == 0 && t.wp_after == 0,
	      "written: past them every page came in DIRTY (%u CLEAN) and its write took no "
	      "protection fault (%u)",
	      t.clean_wrong, t.wp_after);
	rh_swap_stats s0 = stats(s);
	flush(s, reg1);
	rh_swap_stats s1 = stats(s);
	uint64_t pw = s1.pred_written - s0.pred_written, pu = s1.pred_unwritten - s0.pred_unwritten;
	CHECK(pw == np - t.learn && pu == 0 && s->wscore[reg1] == RH_WSCORE_MAX,
	      "written: evicted, the %u predicted pages were found written (%llu, %llu "
	      "unwritten) and the score is at its top (%u)",
	      np - t.learn, (unsigned long long)pw, (unsigned long long)pu, s->wscore[reg1]);

	/* Read. */
	flush(s, reg2);
	uint32_t d2 = read_only(s, b2, np);
	CHECK(d2 == 0, "read: a region only read installs every page CLEAN (%u DIRTY)", d2);
	CHECK(s->wscore[reg2] == 0, "read: its score stays 0 (%u)", s->wscore[reg2]);

	/* Falls back: every page comes in DIRTY, so only swap.W5's finding
	 * them unwritten at their eviction lowers the score. */
	uint32_t rounds = RH_WSCORE_MAX / np + 2, k, d1 = 1;
	s0 = stats(s);
	for (k = 0; k < rounds && d1; k++) {
		flush(s, reg1);
		d1 = read_only(s, b1, np);
	}
	s1 = stats(s);
	CHECK(d1 == 0,
	      "falls back: read only, the region installs CLEAN again within %u rounds (%u; "
	      "%u DIRTY in the last, score %u)",
	      rounds, k, d1, s->wscore[reg1]);
	CHECK(s1.pred_unwritten > s0.pred_unwritten && s1.pred_written == s0.pred_written,
	      "falls back: its predicted pages were found unwritten (%llu) and none written "
	      "(%llu)",
	      (unsigned long long)(s1.pred_unwritten - s0.pred_unwritten),
	      (unsigned long long)(s1.pred_written - s0.pred_written));

	/* Hinted: region 2 learned nothing of writes. The flushes drop pages
	 * the reads left unwritten: found so, they must not end the hint. */
	rh_swap_region_writes(s, reg2, true);
	flush(s, reg2);
	uint32_t h1 = read_only(s, b2, np), h2;
	flush(s, reg2);
	uint32_t h1b = read_only(s, b2, np);
	CHECK(h1 == np && h1b == np,
	      "hinted: every page of the region comes in DIRTY (%u and %u of %u)", h1, h1b, np);
	rh_swap_region_writes(s, reg2, false);
	flush(s, reg2);
	h2 = read_only(s, b2, np);
	CHECK(h2 == 0, "hint off: the region installs CLEAN again (%u DIRTY)", h2);

	/* Nothing is lost. */
	flush(s, reg1);
	flush(s, reg2);
	size_t bad = 0;
	const volatile uint8_t *v = all;
	for (size_t i = off1; i < off2 + h->region_size; i++)
		bad += v[i] != expect(i, off1, bumps);
	CHECK(bad == 0, "both regions read back as last written after eviction (%zu bytes wrong)",
	      bad);
	free(bumps);
out:
	rh_mutator_detach(m);
	return cluster_test_end(&ct);
}
