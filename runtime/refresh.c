/* Target queues rebuilt from their cards (runtime/refresh.h, rset.T1-T7 in
 * docs/distributed-gc.md). */
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/sort.h"
#include "runtime/internal.h"
#include "runtime/rootvals.h"
#include "swap/swap.h"

/* A pause spends between 1/RH_REFRESH_SHARE_MIN and 1/RH_REFRESH_SHARE_MAX
 * of gc.pause_budget_ms on rebuilding (rset.T4, rset.T6): an evicted page
 * of cards is one read from its tracer's copy (a few microseconds over
 * shm), a resident one a copy. */
#define RH_REFRESH_SHARE_MIN 20.0
#define RH_REFRESH_SHARE_MAX 4.0
/* rset.T6: the yields (bits dropped over bits held) under which the share
 * is the smallest, and from which it is the largest. */
#define RH_REFRESH_YIELD_LOW 0.05
#define RH_REFRESH_YIELD_HIGH 0.25
/* A region is rebuilt at most once in this many pauses: on a heap whose
 * old regions the clock goes round in one pause, it would otherwise spend
 * its whole share every pause rebuilding queues that did not change
 * (lru at 25 % cache: a fifth more GC time). */
#define RH_REFRESH_EVERY 4u
/* Pages read at once. */
#define CHUNK 64u

#define CARD_BYTES (1u << RH_CARD_SHIFT)
#define CARDS_PER_PAGE (RH_PAGE_SIZE / CARD_BYTES)

/* 64-bit words of a target queue (a bit per word of a region). */
static size_t queue_words(const rh_heap *h)
{
	return (h->region_size / 8 + 63) / 64;
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
	rh_sort_u64(v, k);
	*n = k;
	return v;
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

/* r's queues become what sc found in the n cards; true if its target
 * queue lost bits. */
static bool replace_queues(rh_heap *h, rh_region *r, const scan *sc, const uint64_t *cards,
                           size_t n)
{
	/* rset.T3: the cards that refer into r stay, the rest leave (those
	 * in free regions too: cards_of left them out). */
	uint64_t *keep = malloc((n ? n : 1) * sizeof *keep);
	if (!keep)
		rh_panic("collector: out of memory for a refresh");
	size_t n_keep = 0;
	for (size_t c = 0; c < n; c++)
		if (sc->hit[c])
			keep[n_keep++] = cards[c];
	size_t cards_before = r->remset.n_cards;
	rh_remset_keep(&r->remset, keep, n_keep);
	free(keep);
	h->remset_cards -= cards_before - r->remset.n_cards;
	h->refresh.cards_dropped += cards_before - r->remset.n_cards;
	size_t words = queue_words(h);
	h->refresh.regions++;
	if (!r->remset.targets)
		return false; /* no card ever: nothing refers into r from outside */
	size_t before = bits_in(r->remset.targets, words), after = bits_in(sc->targets, words);
	h->refresh.targets_held += before;
	memcpy(r->remset.targets, sc->targets, words * sizeof *sc->targets);
	/* Lookalike words may add bits; only a loss is news. */
	if (after >= before)
		return false;
	h->refresh.targets_dropped += before - after;
	return true;
}

/* Rebuild r's queues from its n sorted cards; buf holds CHUNK pages.
 * True if its target queue lost bits. */
static bool rebuild(rh_heap *h, rh_region *r, const uint64_t *cards, size_t n, uint8_t *buf)
{
	size_t words = queue_words(h);
	scan sc = {.lo = r->start, .hi = r->start + h->region_size};
	sc.targets = calloc(words, sizeof *sc.targets);
	sc.hit = calloc(n ? n : 1, 1);
	if (!sc.targets || !sc.hit)
		rh_panic("collector: out of memory for a refresh");
	scan_cards(h, &sc, cards, n, buf);
	bool lost = replace_queues(h, r, &sc, cards, n);
	free(sc.hit);
	free(sc.targets);
	return lost;
}

/* ---------------------------------------------------------------- live bytes */

typedef struct lmark {
	uintptr_t lo, top;
	const uint8_t *img; /* the region's bytes [lo, top), read with swap.P6 */
	uint64_t *seen;     /* a bit per word of the region */
	uintptr_t *stack;
	size_t n, cap;
} lmark;

static void lm_push(lmark *lm, uintptr_t v)
{
	if (v < lm->lo || v >= lm->top || (v & 7))
		return;
	size_t w = (v - lm->lo) >> 3;
	if (lm->seen[w / 64] >> (w % 64) & 1)
		return;
	lm->seen[w / 64] |= 1ull << (w % 64);
	lm->stack = rh_grow(lm->stack, &lm->cap, lm->n + 1, sizeof *lm->stack, 256,
	                    "collector: a region's marking");
	lm->stack[lm->n++] = v;
}

static void lm_slot(void *ctx, void **slot)
{
	lm_push(ctx, (uintptr_t)*slot);
}

/* rset.T5: the bytes of r reached from its rebuilt target queue and the
 * roots through references inside r, marked on a copy of r read as
 * swap.P6 reads (no page installed). An estimate for choosing r: a bit a
 * lookalike word set is taken for an object if a header parses there, and
 * an object a conservative word points into is missed. img holds a
 * region. */
static uint64_t live_from_queue(rh_heap *h, const rh_region *r, const rh_rootvals *rv, uint8_t *img)
{
	size_t words = queue_words(h);
	size_t np = (r->top - r->start + RH_PAGE_SIZE - 1) / RH_PAGE_SIZE;
	uintptr_t *pages = malloc(np * sizeof *pages);
	lmark lm = {.lo = r->start, .top = r->top, .img = img};
	lm.seen = calloc(words, sizeof *lm.seen);
	if (!pages || !lm.seen)
		rh_panic("collector: out of memory for a region's marking");
	for (size_t i = 0; i < np; i++)
		pages[i] = r->start + i * RH_PAGE_SIZE;
	if (!rh_swap_peek(h->swap, pages, np, img))
		rh_panic("collector: reading a region failed (the swap system failed)");
	free(pages);
	h->refresh.pages_read += np;
	for (size_t w = 0; r->remset.targets && w < words; w++)
		for (uint64_t b = r->remset.targets[w]; b; b &= b - 1)
			lm_push(&lm, r->start + (w * 64 + (size_t)__builtin_ctzll(b)) * 8);
	size_t n_roots;
	const uintptr_t *root = rh_rootvals_in(rv, r->start, r->top, &n_roots);
	for (size_t k = 0; k < n_roots; k++)
		lm_push(&lm, root[k]);
	uint64_t live = 0;
	while (lm.n) {
		uintptr_t a = lm.stack[--lm.n];
		void *o = (void *)(img + (a - r->start));
		uint64_t hd = rh_hdr(o);
		if (rh_hdr_is_fwd(hd) || !rh_object_valid(&h->types, o, r->top - a))
			continue;
		live += rh_hdr_bytes(hd);
		rh_object_slots(&h->types, o, lm_slot, &lm);
	}
	free(lm.stack);
	free(lm.seen);
	return live < r->top - r->start ? live : r->top - r->start;
}

/* ---------------------------------------------------------------- the clock */

enum { SKIP, TRACERS, CPU };

/* Whose r is: the tracers mark old regions at least half evicted (MSCT);
 * the CPU server collects the others, and estimates their live bytes
 * itself (rset.T5), except where it is still copying into them. */
static int owner(rh_heap *h, const rh_region *r)
{
	if (r->kind != RH_REGION_OLD || r->top == r->start)
		return SKIP;
	unsigned pct = rh_swap_region_evicted_pct(h->swap, r->index, r->top - r->start);
	if (pct >= 50)
		return r->remset.targets ? TRACERS : SKIP;
	return rh_is_dest(h, r->index) ? SKIP : CPU;
}

/* rset.T6: the share of the pause budget, from a twentieth to a quarter
 * as the recent rebuilds dropped more of their queues' bits. */
static double share(const rh_heap *h)
{
	double lo = 1.0 / RH_REFRESH_SHARE_MIN, hi = 1.0 / RH_REFRESH_SHARE_MAX;
	double y = (h->refresh.yield - RH_REFRESH_YIELD_LOW) /
	           (RH_REFRESH_YIELD_HIGH - RH_REFRESH_YIELD_LOW);
	return lo + (hi - lo) * (y < 0 ? 0 : y > 1 ? 1 : y);
}

/* The fraction of the bits a pause's rebuilds found in their queues that
 * they dropped, averaged over pauses (a pause that rebuilt no queue with
 * bits leaves it as it was). held and dropped: the totals before the
 * pause. */
static void learn(rh_heap *h, uint64_t held, uint64_t dropped)
{
	held = h->refresh.targets_held - held;
	dropped = h->refresh.targets_dropped - dropped;
	if (!held)
		return;
	h->refresh.yield = h->refresh.yield * 0.5 + (double)dropped / (double)held * 0.5;
}

void rh_refresh_pause(rh_heap *h)
{
	if (!h->cfg.refresh || !h->swap || !h->n_regions)
		return;
	if (!h->refresh.last) {
		h->refresh.last = calloc(h->n_regions, sizeof *h->refresh.last);
		if (!h->refresh.last)
			rh_panic("collector: out of memory for a refresh");
	}
	uint32_t now = h->refresh.pause;
	uint64_t t0 = rh_now_ns();
	uint64_t stop = t0 + (uint64_t)(share(h) * (double)h->cfg.pause_budget_us * 1000);
	/* rset.T7: and no later than the pause's budget, but one region. */
	uint64_t end = h->refresh.t0 + (uint64_t)h->cfg.pause_budget_us * 1000;
	if (h->refresh.t0 && end < stop)
		stop = end;
	uint64_t held = h->refresh.targets_held, dropped = h->refresh.targets_dropped;
	if (!h->refresh.buf) {
		h->refresh.buf = malloc((size_t)CHUNK * RH_PAGE_SIZE);
		h->refresh.img = malloc(h->region_size);
		if (!h->refresh.buf || !h->refresh.img)
			rh_panic("collector: out of memory for a refresh");
	}
	uint8_t *buf = h->refresh.buf, *img = h->refresh.img;
	/* The frames' and globals' references, conservative words among them:
	 * an object a word points at stays where it is, and its region's count
	 * must include it. */
	rh_rootvals rv = {0};
	bool have_roots = false; /* gathered at the first marking (rset.T5) */
	/* rset.T4: a clock over the regions, from where the last pause
	 * stopped, while the pause's share lasts. */
	uint32_t i = h->refresh.hand % h->n_regions;
	uint32_t done = 0;
	bool drained = false;
	for (uint32_t seen = 0; seen < h->n_regions && (!done || rh_now_ns() < stop); seen++) {
		rh_region *r = &h->regions[i];
		i = (i + 1) % h->n_regions;
		int who = owner(h, r);
		uint32_t *last = &h->refresh.last[r->index];
		if (who == SKIP || (*last && now - (*last - 1) < RH_REFRESH_EVERY))
			continue;
		/* rset.D2: a region with cards this pause listed is passed once;
		 * met so again, the pause files what it listed first (once a
		 * pause). */
		if (r->cards_pending == now && !drained) {
			if (!r->passed_pending) {
				r->passed_pending = 1;
				continue;
			}
			rh_barrier_drain(h);
			drained = true;
			h->refresh.drains++;
		}
		r->passed_pending = 0;
		*last = now + 1;
		done++;
		size_t nc;
		uint64_t *cards = cards_of(h, r, &nc);
		bool lost = rebuild(h, r, cards, nc, buf);
		free(cards);
		if (who == TRACERS)
			r->roots_fresh |= lost;
		/* A count that was right stays so while no reference into r
		 * dies: only then is r read and marked again. */
		if (who == CPU && (lost || !r->live_known)) {
			if (!have_roots)
				rh_rootvals_gather(h, &rv, true);
			have_roots = true;
			r->live_bytes = live_from_queue(h, r, &rv, img);
			r->live_known = 1;
			h->refresh.regions_marked++;
		}
	}
	h->refresh.hand = i;
	h->refresh.pauses += done != 0;
	learn(h, held, dropped);
	rh_rootvals_free(&rv);
	h->refresh.ns += rh_now_ns() - t0;
}

void rh_refresh_pause_begin(rh_heap *h, uint64_t t_start)
{
	/* rset.T4 counts pauses, not collections: a pause that runs two
	 * (a partial one, then a full one or a compaction) rebuilds a region
	 * at most once. */
	h->refresh.pause++;
	h->refresh.t0 = t_start;
}

void rh_refresh_fini(rh_heap *h)
{
	free(h->refresh.last);
	free(h->refresh.buf);
	free(h->refresh.img);
	h->refresh.last = NULL;
	h->refresh.buf = h->refresh.img = NULL;
}
