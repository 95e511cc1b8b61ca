/* The scan of the collection set's remembered cards, a partial pause's
 * largest root set (docs/collector.md, rset.S2 and rset.S3).
 *
 * The cards of every region in the set are gathered into the heap-wide
 * card bitmap, then listed as runs of adjacent cards in one source region.
 * Each run's objects are walked with the source region's start bitmap, and
 * each slot in the run that refers into the set becomes a root slot. With
 * several copying threads and enough cards, the crew walks them: each
 * worker claims batches of runs that end at a source region's end, lists
 * its root slots apart, and the lists are joined before copying begins.
 */
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "runtime/gc_int.h"
#include "runtime/gcwork.h"

/* A remembered card's slot (in the heap, outside the set): a root if it
 * refers into the set. precise_root's test for slots outside the heap
 * does not apply. */
static inline __attribute__((always_inline)) void card_root(void *ctx, void **slot)
{
	rh_gc *g = ctx;
	if (rh_marker_in_set(&g->h->marker, (uintptr_t)*slot))
		rh_gc_root_slot_fast(g, slot);
}

/* Runs of adjacent cards in one source region, in address order: runs[i]
 * is (first card, count); a region's runs are contiguous. */
typedef struct card_runs {
	uint64_t (*runs)[2];
	size_t n, cap;
	uint64_t cards;
} card_runs;

static void add_run(card_runs *cr, uint64_t first, uint64_t n)
{
	cr->runs = rh_grow(cr->runs, &cr->cap, cr->n + 1, sizeof *cr->runs, 1024,
	                   "collector: card runs");
	cr->runs[cr->n][0] = first;
	cr->runs[cr->n][1] = n;
	cr->n++;
}

/* rset.S2: every card once, in address order, from the heap-wide bitmap
 * (cleared as it is read). */
static void gather(rh_heap *h, card_runs *cr)
{
	uint64_t *cb = h->card_bits;
	size_t lo = SIZE_MAX, hi = 0;
	for (uint32_t i = 0; i < h->n_regions; i++) {
		rh_region *r = &h->regions[i];
		if (!h->in_cset[i] || !r->remset.cap)
			continue;
		for (size_t k = 0; k < r->remset.cap; k++) {
			uint64_t card = r->remset.cards[k] - 1;
			/* Cards inside the set are traced with it. */
			if (!r->remset.cards[k] || h->in_cset[rh_card_region(h, card)])
				continue;
			cb[card >> 6] |= 1ull << (card & 63);
			lo = card >> 6 < lo ? card >> 6 : lo;
			hi = card >> 6 > hi ? card >> 6 : hi;
		}
	}
	uint64_t run = 0, n = 0; /* cards [run, run + n) */
	uint64_t per_region = h->region_size >> RH_CARD_SHIFT;
	for (size_t w = lo; lo != SIZE_MAX && w <= hi; w++) {
		for (uint64_t bits = cb[w]; bits; bits &= bits - 1) {
			uint64_t card = w * 64 + (uint64_t)__builtin_ctzll(bits);
			cr->cards++;
			if (n && card == run + n && card % per_region) {
				n++;
				continue;
			}
			if (n)
				add_run(cr, run, n);
			run = card;
			n = 1;
		}
		cb[w] = 0;
	}
	if (n)
		add_run(cr, run, n);
}

/* ---------------------------------------------------------------- in parallel */

/* Fewer cards than this are walked by the collecting thread alone: waking
 * the crew costs tens of microseconds, a card a fraction of one. */
#define PAR_CARDS 1024

struct scan {
	rh_gc *g;
	const card_runs *cr;
	size_t next; /* the next run to claim (atomic) */
	/* Per worker: its own rh_gc for the root list, so that card_root
	 * stays the sequential code. */
	rh_gc part[RH_COPY_THREADS_MAX];
};

/* Claim a batch of runs of at least CLAIM_CARDS cards that ends at a
 * source region's end (rset.S3): the region's start bitmap is then built,
 * if it must be, by one worker. */
#define CLAIM_CARDS 64
static bool claim(struct scan *s, size_t *from, size_t *to)
{
	const card_runs *cr = s->cr;
	uint32_t shift = s->g->h->region_shift - RH_CARD_SHIFT;
	for (;;) {
		size_t a = __atomic_load_n(&s->next, __ATOMIC_RELAXED);
		if (a >= cr->n)
			return false;
		size_t b = a;
		for (uint64_t cards = 0; b < cr->n && cards < CLAIM_CARDS; b++)
			cards += cr->runs[b][1];
		/* Extend to the end of the last run's region. */
		while (b < cr->n && cr->runs[b][0] >> shift == cr->runs[b - 1][0] >> shift)
			b++;
		if (__atomic_compare_exchange_n(&s->next, &a, b, false, __ATOMIC_RELAXED,
		                                __ATOMIC_RELAXED)) {
			*from = a;
			*to = b;
			return true;
		}
	}
}

static void scan_part(void *arg, unsigned id)
{
	struct scan *s = arg;
	rh_gc *p = &s->part[id];
	rh_heap *h = s->g->h;
	size_t from, to;
	while (claim(s, &from, &to))
		for (size_t i = from; i < to; i++)
			rh_cards_slots_inline(h, s->cr->runs[i][0], s->cr->runs[i][1], card_root,
			                      p);
}

/* The workers' root slots after the collecting thread's own. */
static void join(rh_gc *g, struct scan *s, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		rh_gc *p = &s->part[i];
		if (p->n_slots) {
			g->slots = rh_grow(g->slots, &g->cap_slots, g->n_slots + p->n_slots,
			                   sizeof *g->slots, 4096, "collector: work list");
			memcpy(g->slots + g->n_slots, p->slots, p->n_slots * sizeof *p->slots);
			g->n_slots += p->n_slots;
		}
		rh_scratch_put(&g->h->scratch, RH_SCR_CARD_PART + i, p->slots, p->cap_slots,
		               sizeof *p->slots);
	}
}

static void scan_parallel(rh_gc *g, const card_runs *cr, unsigned n)
{
	struct scan *s = calloc(1, sizeof *s);
	if (!s)
		rh_panic("collector: out of memory");
	s->g = g;
	s->cr = cr;
	for (unsigned i = 0; i < n; i++) {
		s->part[i].h = g->h;
		s->part[i].kind = g->kind;
		s->part[i].one_pass = true;
		s->part[i].slots = rh_scratch_take(&g->h->scratch, RH_SCR_CARD_PART + i,
		                                   &s->part[i].cap_slots);
	}
	rh_crew_run(g->h->crew, scan_part, s);
	join(g, s, n);
	free(s);
}

void rh_cards_scan(rh_gc *g)
{
	rh_heap *h = g->h;
	uint64_t t0 = rh_now_ns();
	card_runs cr = {0};
	cr.runs = rh_scratch_take(&h->scratch, RH_SCR_CARD_RUNS, &cr.cap); /* scratch.K1 */
	gather(h, &cr);
	g->cards += cr.cards;
	unsigned n = cr.cards >= PAR_CARDS && cr.n > 1 && g->one_pass ? rh_gc_workers(h) : 1;
	g->cards_workers = n;
	if (n > 1) {
		scan_parallel(g, &cr, n);
	} else {
		for (size_t i = 0; i < cr.n; i++)
			rh_cards_slots_inline(h, cr.runs[i][0], cr.runs[i][1], card_root, g);
	}
	rh_scratch_put(&h->scratch, RH_SCR_CARD_RUNS, cr.runs, cr.cap, sizeof *cr.runs);
	g->cards_ns = rh_now_ns() - t0;
}
