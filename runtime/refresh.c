/* Target queues rebuilt from their cards (runtime/refresh.h, rset.T1-T3 in
 * docs/distributed-gc.md). */
#include <stdlib.h>
#include <string.h>

#include "runtime/internal.h"
#include "swap/swap.h"

/* Pages of cards read a pause: an evicted page is one read from its
 * tracer's copy (a few microseconds over shm), a resident one a copy. */
#define RH_REFRESH_PAGES 512u
/* Pages read at once. */
#define CHUNK 64u

#define CARD_BYTES (1u << RH_CARD_SHIFT)
#define CARDS_PER_PAGE (RH_PAGE_SIZE / CARD_BYTES)

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The region's cards in address order, less those in free regions (their
 * words are gone: rset.S1 would purge them later). */
static uint64_t *cards_of(rh_heap *h, const rh_region *r, size_t *n)
{
	const rh_remset *rs = &r->remset;
	uint64_t *v = malloc((rs->n_cards ? rs->n_cards : 1) * sizeof *v);
	if (!v)
		rh_panic("collector: out of memory for a refresh");
	size_t k = 0;
	for (size_t i = 0; i < rs->cap; i++)
		if (rs->cards[i] &&
		    h->regions[rh_card_region(h, rs->cards[i] - 1)].kind != RH_REGION_FREE)
			v[k++] = rs->cards[i] - 1;
	qsort(v, k, sizeof *v, cmp_u64);
	*n = k;
	return v;
}

/* Distinct pages of the sorted cards. */
static size_t pages_of(const uint64_t *cards, size_t n)
{
	size_t p = 0;
	for (size_t i = 0; i < n; i++)
		p += i == 0 || cards[i] / CARDS_PER_PAGE != cards[i - 1] / CARDS_PER_PAGE;
	return p;
}

typedef struct scan {
	uintptr_t lo, hi;  /* the region's range */
	uint64_t *targets; /* the new queue */
	uint8_t *hit;      /* per card: some word refers into the region */
} scan;

/* rset.T1: every word of the card that holds an address in the region is
 * taken for a reference. That over-approximates (an integer may look like
 * one, a dead object's field counts) and never misses: a reference slot is
 * a word of its card. */
static bool scan_card(scan *sc, const uint64_t *w)
{
	bool any = false;
	for (size_t i = 0; i < CARD_BYTES / 8; i++) {
		uintptr_t a = (uintptr_t)w[i];
		if (a < sc->lo || a >= sc->hi || (a & 7))
			continue;
		size_t word = (a - sc->lo) >> 3;
		sc->targets[word / 64] |= 1ull << (word % 64);
		any = true;
	}
	return any;
}

typedef struct hits {
	uint64_t *v; /* sorted */
	size_t n;
} hits;

static int keep_hit(void *ctx, uint64_t card)
{
	const hits *hs = ctx;
	return bsearch(&card, hs->v, hs->n, sizeof *hs->v, cmp_u64) != NULL;
}

/* The n sorted cards' words, scanned into sc (rset.T1), CHUNK pages at a
 * time read into buf. */
static void scan_cards(rh_heap *h, scan *sc, const uint64_t *cards, size_t n, uint8_t *buf)
{
	uintptr_t pages[CHUNK];
	for (size_t i = 0, j; i < n; i = j) {
		/* The next CHUNK distinct pages, and the cards in them. */
		size_t np = 0;
		for (j = i; j < n; j++) {
			uintptr_t pg =
			        h->base + (uintptr_t)(cards[j] / CARDS_PER_PAGE) * RH_PAGE_SIZE;
			if (np == 0 || pages[np - 1] != pg) {
				if (np == CHUNK)
					break;
				pages[np++] = pg;
			}
		}
		/* rset.T2: the words where they are authoritative. */
		if (!rh_swap_peek(h->swap, pages, np, buf))
			rh_panic("collector: reading cards failed (the swap system failed)");
		h->refresh.pages_read += np;
		for (size_t c = i, p = 0; c < j; c++) {
			uintptr_t pg =
			        h->base + (uintptr_t)(cards[c] / CARDS_PER_PAGE) * RH_PAGE_SIZE;
			while (pages[p] != pg)
				p++;
			const uint8_t *at =
			        buf + p * RH_PAGE_SIZE + (cards[c] % CARDS_PER_PAGE) * CARD_BYTES;
			sc->hit[c] = scan_card(sc, (const uint64_t *)at);
		}
	}
}

static size_t bits_in(const uint64_t *v, size_t n_words)
{
	size_t b = 0;
	for (size_t w = 0; w < n_words; w++)
		b += (size_t)__builtin_popcountll(v[w]);
	return b;
}

/* r's queues become what sc found in the n cards. */
static void replace_queues(rh_heap *h, rh_region *r, const scan *sc, const uint64_t *cards,
                           size_t n)
{
	/* rset.T3: the cards that refer into r stay, the rest leave. */
	hits hs = {malloc((n ? n : 1) * sizeof *hs.v), 0};
	if (!hs.v)
		rh_panic("collector: out of memory for a refresh");
	for (size_t c = 0; c < n; c++)
		if (sc->hit[c])
			hs.v[hs.n++] = cards[c];
	size_t cards_before = r->remset.n_cards;
	rh_remset_filter(&r->remset, keep_hit, &hs);
	free(hs.v);
	h->remset_cards -= cards_before - r->remset.n_cards;
	h->refresh.cards_dropped += cards_before - r->remset.n_cards;
	size_t words = (h->region_size / 8 + 63) / 64;
	size_t before = bits_in(r->remset.targets, words), after = bits_in(sc->targets, words);
	memcpy(r->remset.targets, sc->targets, words * sizeof *sc->targets);
	/* Lookalike words may add bits; only a loss is news to the tracer. */
	if (after < before) {
		h->refresh.targets_dropped += before - after;
		r->roots_fresh = 1;
	}
	h->refresh.regions++;
}

/* Rebuild r's queues from its n sorted cards; buf holds CHUNK pages. */
static void rebuild(rh_heap *h, rh_region *r, const uint64_t *cards, size_t n, uint8_t *buf)
{
	size_t words = (h->region_size / 8 + 63) / 64;
	scan sc = {.lo = r->start, .hi = r->start + h->region_size};
	sc.targets = calloc(words, sizeof *sc.targets);
	sc.hit = calloc(n ? n : 1, 1);
	if (!sc.targets || !sc.hit)
		rh_panic("collector: out of memory for a refresh");
	scan_cards(h, &sc, cards, n, buf);
	replace_queues(h, r, &sc, cards, n);
	free(sc.hit);
	free(sc.targets);
}

/* The regions the tracers mark (docs/distributed-gc.md, MSCT). */
static bool marked_by_tracers(rh_heap *h, const rh_region *r)
{
	return r->kind == RH_REGION_OLD && r->top != r->start && r->remset.targets &&
	       rh_swap_region_evicted_pct(h->swap, r->index, r->top - r->start) >= 50;
}

void rh_refresh_pause(rh_heap *h)
{
	if (h->refresh.off || !h->swap || !h->n_regions)
		return;
	uint64_t t0 = rh_now_ns();
	uint8_t *buf = malloc((size_t)CHUNK * RH_PAGE_SIZE);
	if (!buf)
		rh_panic("collector: out of memory for a refresh");
	/* rset.T4: a clock over the regions, from where the last pause
	 * stopped; a region larger than the budget is taken alone. */
	size_t budget = RH_REFRESH_PAGES;
	uint32_t i = h->refresh.hand % h->n_regions;
	for (uint32_t seen = 0; seen < h->n_regions && budget; seen++) {
		rh_region *r = &h->regions[i];
		i = (i + 1) % h->n_regions;
		if (!marked_by_tracers(h, r))
			continue;
		size_t nc;
		uint64_t *cards = cards_of(h, r, &nc);
		size_t np = pages_of(cards, nc);
		if (np > budget && budget < RH_REFRESH_PAGES) {
			free(cards);
			i = r->index; /* first in the next pause */
			break;
		}
		rebuild(h, r, cards, nc, buf);
		budget -= np < budget ? np : budget;
		free(cards);
	}
	h->refresh.hand = i;
	free(buf);
	h->refresh.ns += rh_now_ns() - t0;
}
