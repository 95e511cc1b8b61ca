/* The CPU server's side of a CSSC (docs/distributed-gc.md): choosing the
 * regions tracers evacuate, shipping their roots, fixing every reference to
 * what they moved, and keeping tracers' region tables current.
 *
 * A pause runs the local collector first (eden and mostly cached regions),
 * with the tracers' candidates outside its set: it records every root slot
 * and every field of a surviving object that points into a candidate. Then
 * the candidates are flushed, their roots (those slots' targets and the
 * target queues) go out with EVACUATE, and the tracers remark and copy. The
 * references to moved objects outside the moved objects themselves are
 * fixed here from the forwarding headers the tracers left in the source
 * images, read through the page cache: the recorded slots, the cards of the
 * candidates' source queues, and the cross-region fields the tracers
 * reported (EVAC_REFS) whose targets another tracer moved.
 */
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "gc/bitmap.h"
#include "runtime/internal.h"
#include "runtime/rootvals.h"

/* A CSSC's time per byte moved is averaged: each new measure weighs half. */
#define NS_PER_BYTE_WEIGHT 0.5

void rh_cssc_init(rh_heap *h)
{
	memset(&h->cssc, 0, sizeof h->cssc);
	/* Until measured: a CSSC took 3-13 ns per byte moved in listscan at 25 %
	 * cache, 27-77 in lru (docs/distributed-gc.md, CSSC step 2). */
	h->cssc.ns_per_byte = 20.0;
}

void rh_cssc_fini(rh_heap *h)
{
	free(h->cssc.tslots);
	h->cssc.tslots = NULL;
	h->cssc.n_tslots = h->cssc.cap_tslots = 0;
}

void rh_cssc_note(rh_heap *h, void **slot)
{
	if (h->cssc.n_tslots == h->cssc.cap_tslots) {
		size_t cap = h->cssc.cap_tslots ? h->cssc.cap_tslots * 2 : 1024;
		void ***s = realloc(h->cssc.tslots, cap * sizeof *s);
		if (!s)
			rh_panic("collector: out of memory recording slots");
		h->cssc.tslots = s;
		h->cssc.cap_tslots = cap;
	}
	h->cssc.tslots[h->cssc.n_tslots++] = slot;
}

void rh_cssc_drop(rh_heap *h, uint32_t region)
{
	h->offload[region] = RH_OFF_NONE;
}

static unsigned evicted_pct(rh_heap *h, const rh_region *r)
{
	return rh_swap_region_evicted_pct(h->swap, r->index, r->top - r->start);
}

/* The tracer's marking still describes the region as it is now. */
static bool marked_now(rh_heap *h, const rh_region *r, rh_marked_desc *md)
{
	return rh_remote_marked(h->remote, r->index, md) && md->ident == r->ident &&
	       md->top == r->top - r->start;
}

/* ---------------------------------------------------------------- choosing */

typedef struct cand {
	uint32_t region;
	uint64_t garbage, live;
} cand;

static int by_garbage(const void *a, const void *b)
{
	const cand *x = a, *y = b;
	return x->garbage < y->garbage ? 1 : x->garbage > y->garbage ? -1 : 0;
}

void rh_cssc_choose(rh_heap *h)
{
	h->offload_active = false;
	h->cssc.n_tslots = 0;
	if (!h->offload_on || h->cssc.compacting)
		return;
	cand *c = malloc(h->n_regions * sizeof *c);
	if (!c)
		return;
	size_t n = 0;
	for (uint32_t i = 0; i < h->n_regions; i++) {
		rh_region *r = &h->regions[i];
		rh_marked_desc md;
		uint64_t used = r->top - r->start;
		if (r->kind != RH_REGION_OLD || !used || rh_is_dest(h, i) ||
		    !marked_now(h, r, &md) || evicted_pct(h, r) < 50)
			continue;
		/* As for the local collector: a region with little garbage
		 * costs more to copy than it frees. */
		if ((used - md.live_bytes) * 100 < used * 35)
			continue;
		c[n++] = (cand){i, used - md.live_bytes, md.live_bytes};
	}
	qsort(c, n, sizeof *c, by_garbage);
	size_t n_hosts;
	rh_remote_hosts(h->remote, &n_hosts);
	uint64_t *room = calloc(n_hosts, sizeof *room);
	if (!room) {
		free(c);
		return;
	}
	/* Room: free regions per partition, less what the local collector
	 * may take for its own copies in this pause. */
	for (uint32_t k = 0; k < h->n_free; k++) {
		size_t host = rh_remote_host_of(h->remote, h->free_list[k]);
		if (host < n_hosts && !h->regions[h->free_list[k]].warm)
			room[host] += h->region_size;
	}
	for (size_t i = 0; i < n_hosts; i++)
		room[i] = room[i] / 2;
	/* Half of the pause budget, at what a CSSC took per byte moved (the
	 * tracers' remark and copy, and the CPU server's flushes, fixing and
	 * filing, which grow with the bytes moved and can outweigh the
	 * tracers' part: it is measured whole, end to end). */
	double budget = rh_sizing_cssc_budget_ns(h->cfg.pause_budget_us), spent = 0;
	for (size_t k = 0; k < n; k++) {
		size_t host = rh_remote_host_of(h->remote, c[k].region);
		double cst = (double)c[k].live * h->cssc.ns_per_byte;
		if (host >= n_hosts || spent + cst > budget || c[k].live > room[host])
			continue;
		spent += cst;
		room[host] -= c[k].live;
		h->offload[c[k].region] = RH_OFF_CAND;
		h->offload_active = true;
	}
	free(c);
	free(room);
}

/* ---------------------------------------------------------------- fixing */

/* The new address of v if a tracer moved it; v otherwise. A `live` slot
 * (a root, a field of a survivor or of a moved object) must not refer to an
 * object left behind; a card's slot may belong to a dead object, whose
 * referents may be dead too. */
static uintptr_t forward(rh_heap *h, uintptr_t v, void **slot, bool live)
{
	if (!rh_is_ref(h, v) || h->offload[rh_region_index(h, v)] != RH_OFF_MOVED)
		return v;
	uint64_t hd = rh_hdr((void *)v);
	if (rh_hdr_is_fwd(hd))
		return (uintptr_t)rh_hdr_fwd_addr(hd);
	/* Only with the remark disabled (a test shows what it prevents): the
	 * object was not marked, so it was left behind. The verifier reports
	 * the dangling reference. */
	if (live && h->cfg.remark)
		rh_panic("collector: slot %p refers to %p in region %u, which its tracer did not "
		         "move (not marked)",
		         (void *)slot, (void *)v, rh_region_index(h, v));
	return v;
}

static void remember(rh_heap *h, void **slot, uintptr_t v)
{
	if (!rh_is_ref(h, v) || !rh_in_heap(h, (uintptr_t)slot))
		return;
	uint32_t si = rh_region_index(h, (uintptr_t)slot);
	/* Survivor (eden) regions are traced at every pause: no entries. */
	if (si != rh_region_index(h, v) && h->regions[si].kind != RH_REGION_EDEN)
		rh_remember(h, (uintptr_t)slot, v);
}

static _Thread_local uint64_t fixed;

static void fix_slot(rh_heap *h, void **slot, bool live)
{
	uintptr_t v = (uintptr_t)*slot, to = forward(h, v, slot, live);
	if (to != v) {
		*slot = (void *)to;
		fixed++;
	}
	remember(h, slot, to);
}

static void fix_visit(void *ctx, void **slot)
{
	rh_heap *h = ctx;
	uintptr_t v = (uintptr_t)*slot;
	if (rh_is_ref(h, v) && h->offload[rh_region_index(h, v)] == RH_OFF_MOVED)
		fix_slot(h, slot, false);
}

/* A card a tracer could not fix, in fix_remote's sorted per-host lists.
 * Flagged in the address's low bit rather than cleared, so the list stays
 * sorted for the searches after it; card addresses are card-aligned, so
 * the bit is free. */
#define CARD_GIVEN_BACK ((uint64_t)1)
_Static_assert(RH_CARD_SHIFT >= 1, "CARD_GIVEN_BACK needs a free low bit");

static int cmp_card(const void *key, const void *elem)
{
	uint64_t a = *(const uint64_t *)key, b = *(const uint64_t *)elem & ~CARD_GIVEN_BACK;
	return (a > b) - (a < b);
}

/* Per host, the evicted cards sent to its tracer (FIX_CARDS) and the
 * conditional writes of its second round. */
typedef struct card_fix {
	size_t n_hosts;
	uint64_t **cards;
	size_t *n_cards, *cap;
	rh_slot_write **wr;
	size_t *n_wr, *cap_wr;
	uint64_t refs, unresolved, failed; /* for the debug log */
} card_fix;

static void card_fix_init(card_fix *cf, size_t n_hosts)
{
	memset(cf, 0, sizeof *cf);
	cf->n_hosts = n_hosts;
	cf->cards = calloc(n_hosts, sizeof *cf->cards);
	cf->n_cards = calloc(n_hosts, sizeof *cf->n_cards);
	cf->cap = calloc(n_hosts, sizeof *cf->cap);
	cf->wr = calloc(n_hosts, sizeof *cf->wr);
	cf->n_wr = calloc(n_hosts, sizeof *cf->n_wr);
	cf->cap_wr = calloc(n_hosts, sizeof *cf->cap_wr);
	if (!cf->cards || !cf->n_cards || !cf->cap || !cf->wr || !cf->n_wr || !cf->cap_wr)
		rh_panic("collector: out of memory");
}

static void card_fix_free(card_fix *cf)
{
	for (size_t k = 0; k < cf->n_hosts; k++) {
		free(cf->cards[k]);
		free(cf->wr[k]);
	}
	free(cf->cards);
	free(cf->n_cards);
	free(cf->cap);
	free(cf->wr);
	free(cf->n_wr);
	free(cf->cap_wr);
}

/* The regions tracers moved in this CSSC; NULL when none, or too many
 * for one FIX_CARDS. */
static uint32_t *moved_regions(rh_heap *h, size_t *n_moved)
{
	uint32_t *moved = NULL;
	size_t cap_moved = 0;
	*n_moved = 0;
	for (uint32_t i = 0; i < h->n_regions; i++)
		if (h->offload[i] == RH_OFF_MOVED) {
			moved = rh_grow(moved, &cap_moved, *n_moved + 1, sizeof *moved, 64,
			                "collector");
			moved[(*n_moved)++] = i;
		}
	if (!*n_moved || *n_moved > 4096) {
		free(moved);
		return NULL;
	}
	return moved;
}

/* The moved regions' remembered cards whose page only a tracer holds
 * (EVICTED), outside moved regions, by host; returns how many. */
static size_t evicted_cards(rh_heap *h, card_fix *cf, const uint32_t *moved, size_t n_moved)
{
	size_t total = 0;
	for (size_t j = 0; j < n_moved; j++) {
		rh_region *r = &h->regions[moved[j]];
		for (size_t k = 0; k < r->remset.cap; k++) {
			if (!r->remset.cards[k])
				continue;
			uint64_t card = r->remset.cards[k] - 1;
			uint32_t cr = rh_card_region(h, card);
			uintptr_t a = h->base + (card << RH_CARD_SHIFT);
			if (h->offload[cr] == RH_OFF_MOVED ||
			    rh_swap_page_state(h->swap, a) != RH_PAGE_EVICTED)
				continue;
			size_t host = rh_remote_host_of(h->remote, cr);
			if (host >= cf->n_hosts)
				continue;
			cf->cards[host] =
			        rh_grow(cf->cards[host], &cf->cap[host], cf->n_cards[host] + 1,
			                sizeof **cf->cards, 1024, "collector");
			cf->cards[host][cf->n_cards[host]++] = a;
			/* swap.I3: its tracer writes the card, before it is fetched. */
			rh_swap_remote_writes(h->swap, a, (size_t)1 << RH_CARD_SHIFT);
			total++;
		}
	}
	return total;
}

/* First round: each host's cards, sorted and deduplicated, to its tracer. */
static void send_cards(rh_heap *h, card_fix *cf, const uint32_t *moved, size_t n_moved)
{
	rh_error e;
	for (size_t k = 0; k < cf->n_hosts; k++) {
		if (!cf->n_cards[k])
			continue;
		uint64_t *c = cf->cards[k];
		qsort(c, cf->n_cards[k], sizeof *c, rh_cmp_addr);
		size_t u = 0;
		for (size_t i = 0; i < cf->n_cards[k]; i++)
			if (!u || c[i] != c[u - 1])
				c[u++] = c[i];
		cf->n_cards[k] = u;
		if (rh_remote_fix_cards(h->remote, k, ++h->cssc.id, moved, (uint32_t)n_moved, c, u,
		                        NULL, 0, &e) != RH_OK)
			rh_heap_fail(h, &e);
	}
}

/* Host k's CARDS_FIXED: a field it rewrote is filed; one whose target
 * another tracer moved is resolved here and queued for the second round;
 * a card it could not do is given back to the CPU server's own pass. */
static void take_fixed(rh_heap *h, card_fix *cf, size_t k, const rh_remote_fix *fx,
                       const char *host)
{
	rh_error e;
	for (size_t i = 0; i < fx->n; i++) {
		const rh_fix_ent *fe = &fx->ents[i];
		if (fe->kind == RH_FIX_REF) {
			if (rh_region_index(h, fe->value) != fe->region) {
				rh_err_set(&e, RH_EPEER,
				           "%s fixed a field to %#llx, outside region %u it named",
				           host, (unsigned long long)fe->value, fe->region);
				rh_heap_fail(h, &e);
			}
			remember(h, (void **)(uintptr_t)fe->addr, fe->value);
			cf->refs++;
		} else if (fe->kind == RH_FIX_UNRESOLVED) {
			void **slot = (void **)(uintptr_t)fe->addr;
			uintptr_t to = forward(h, fe->value, slot, false);
			cf->unresolved++;
			if (to == fe->value)
				continue;
			remember(h, slot, to);
			cf->wr[k] = rh_grow(cf->wr[k], &cf->cap_wr[k], cf->n_wr[k] + 1,
			                    sizeof **cf->wr, 256, "collector");
			cf->wr[k][cf->n_wr[k]++] = (rh_slot_write){fe->addr, fe->value, to};
		} else {
			/* The CPU server's own pass will do it. */
			uint64_t c = fe->addr & ~(uint64_t)((1u << RH_CARD_SHIFT) - 1);
			uint64_t *at = bsearch(&c, cf->cards[k], cf->n_cards[k], sizeof **cf->cards,
			                       cmp_card);
			if (at)
				*at |= CARD_GIVEN_BACK;
			cf->failed++;
		}
	}
}

/* Second round: slots whose targets another tracer moved, written by
 * their own tracer only if unchanged; those it could not write are
 * fixed here. */
static void send_writes(rh_heap *h, card_fix *cf, const uint32_t *moved)
{
	rh_error e;
	for (size_t k = 0; k < cf->n_hosts; k++)
		if (cf->n_wr[k] && rh_remote_fix_cards(h->remote, k, ++h->cssc.id, moved, 0, NULL,
		                                       0, cf->wr[k], cf->n_wr[k], &e) != RH_OK)
			rh_heap_fail(h, &e);
	for (size_t k = 0; k < cf->n_hosts; k++) {
		if (!cf->n_wr[k])
			continue;
		rh_remote_fix *fx;
		if (rh_remote_fix_wait(h->remote, k, &fx, &e) != RH_OK)
			rh_heap_fail(h, &e);
		for (size_t i = 0; i < fx->n; i++)
			if (fx->ents[i].kind == RH_FIX_FAILED)
				fix_slot(h, (void **)(uintptr_t)fx->ents[i].addr, false);
	}
}

/* Cards of moved regions' source queues whose pages only their host
 * tracer holds are fixed there (docs/distributed-gc.md, "Fixing external
 * references"): the CPU server would otherwise fetch each page to change a
 * few words and write it back later. Returns the cards the tracers took,
 * sorted, for the CPU server's own pass to skip. Nothing here faults a card
 * page in before its tracer is done with it: only forwarding headers in
 * moved regions are read through the page cache. */
static uint64_t *fix_remote(rh_heap *h, const rh_swap_host *hosts, size_t n_hosts, size_t *n_out)
{
	*n_out = 0;
	size_t n_moved;
	uint32_t *moved = moved_regions(h, &n_moved);
	if (!moved)
		return NULL;
	/* cssc.F1: from here no sent card's page is faulted in. */
	/* Evictions in flight finish first: a page being written back is
	 * still the CPU server's. */
	rh_swap_quiesce(h->swap);
	card_fix cf;
	card_fix_init(&cf, n_hosts);
	size_t total = evicted_cards(h, &cf, moved, n_moved);
	uint64_t *taken = total ? malloc(total * sizeof *taken) : NULL;
	if (total && !taken)
		rh_panic("collector: out of memory for %zu cards", total);
	send_cards(h, &cf, moved, n_moved);
	rh_error e;
	for (size_t k = 0; k < n_hosts; k++) {
		if (!cf.n_cards[k])
			continue;
		rh_remote_fix *fx;
		if (rh_remote_fix_wait(h->remote, k, &fx, &e) != RH_OK)
			rh_heap_fail(h, &e);
		take_fixed(h, &cf, k, fx, hosts[k].name);
	}
	send_writes(h, &cf, moved);
	size_t n = 0;
	for (size_t k = 0; k < n_hosts; k++)
		for (size_t i = 0; i < cf.n_cards[k]; i++)
			if (!(cf.cards[k][i] & CARD_GIVEN_BACK))
				taken[n++] = cf.cards[k][i];
	if (n)
		qsort(taken, n, sizeof *taken, rh_cmp_addr);
	rh_log(RH_LOG_DEBUG, "cssc",
	       "tracers fixed %zu evicted cards (%llu refilings, %llu fields resolved here, "
	       "%llu cards left to the CPU server)",
	       n, (unsigned long long)cf.refs, (unsigned long long)cf.unresolved,
	       (unsigned long long)cf.failed);
	card_fix_free(&cf);
	free(moved);
	*n_out = n;
	return taken;
}

static bool taken_by_tracer(const uint64_t *taken, size_t n, uint64_t a)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (taken[mid] < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && taken[lo] == a;
}

/* Order one tracer's sources so that regions linked by references are
 * copied one after the other: destinations fill in source order, so linked
 * objects then share a destination region (and its pages). Greedy: after
 * each region, the remaining one with the most cards linking the two. */
static void colocate(rh_heap *h, uint32_t *src, uint32_t n)
{
	if (n < 3 || n > 256)
		return;
	uint32_t *w = calloc((size_t)n * n, sizeof *w);
	int32_t *pos = malloc(h->n_regions * sizeof *pos);
	if (!w || !pos) {
		free(w);
		free(pos);
		return;
	}
	for (uint32_t i = 0; i < h->n_regions; i++)
		pos[i] = -1;
	for (uint32_t j = 0; j < n; j++)
		pos[src[j]] = (int32_t)j;
	for (uint32_t j = 0; j < n; j++) {
		const rh_remset *rs = &h->regions[src[j]].remset;
		for (size_t k = 0; k < rs->cap; k++) {
			if (!rs->cards[k])
				continue;
			int32_t a = pos[rh_card_region(h, rs->cards[k] - 1)];
			if (a >= 0 && (uint32_t)a != j) {
				w[(size_t)a * n + j]++;
				w[(size_t)j * n + (uint32_t)a]++;
			}
		}
	}
	uint32_t *out = malloc(n * sizeof *out);
	uint8_t *used = calloc(n, 1);
	if (out && used) {
		uint32_t cur = 0;
		used[0] = 1;
		out[0] = src[0];
		for (uint32_t m = 1; m < n; m++) {
			uint32_t best = UINT32_MAX, bw = 0;
			for (uint32_t j = 0; j < n; j++)
				if (!used[j] &&
				    (best == UINT32_MAX || w[(size_t)cur * n + j] > bw)) {
					best = j;
					bw = w[(size_t)cur * n + j];
				}
			used[best] = 1;
			out[m] = src[best];
			cur = best;
		}
		memcpy(src, out, n * sizeof *src);
	}
	free(out);
	free(used);
	free(w);
	free(pos);
}

/* ---------------------------------------------------------------- shipping */

static void send_or_fail(rh_heap *h, size_t host, rh_msg *m)
{
	rh_error e;
	if (rh_remote_send(h->remote, host, m, &e) != RH_OK)
		rh_heap_fail(h, &e);
}

/* Word offsets of r's roots: its target queue and `extra` addresses. */
static uint32_t *roots_of(rh_heap *h, rh_region *r, const uintptr_t *extra, size_t n_extra,
                          size_t *n)
{
	size_t words = h->region_size / 8, cap = n_extra + 64, k = 0;
	uint32_t *v = malloc(cap * sizeof *v);
	if (!v)
		rh_panic("collector: out of memory for roots");
	for (size_t i = 0; i < n_extra; i++)
		v[k++] = (uint32_t)((extra[i] - r->start) >> 3);
	const uint64_t *t = r->remset.targets;
	for (size_t w = 0; t && w < words / 64; w++)
		for (uint64_t b = t[w]; b; b &= b - 1) {
			if (k == cap) {
				cap *= 2;
				v = realloc(v, cap * sizeof *v);
				if (!v)
					rh_panic("collector: out of memory for roots");
			}
			v[k++] = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(b));
		}
	*n = k;
	return v;
}

static void send_roots(rh_heap *h, size_t host, rh_region *r, uint32_t flags,
                       const uintptr_t *extra, size_t n_extra)
{
	size_t n;
	uint32_t *v = roots_of(h, r, extra, n_extra, &n);
	size_t off = 0;
	do {
		rh_msg m = {.type = RH_MSG_ROOTS};
		size_t k = n - off < RH_ROOTS_MAX ? n - off : RH_ROOTS_MAX;
		m.u.roots = (rh_msg_roots){r->index, flags | (off == 0 ? RH_ROOTS_FIRST : 0),
		                           (uint32_t)k, v + off};
		send_or_fail(h, host, &m);
		off += k;
	} while (off < n);
	free(v);
}

/* Each tracer's region table, and roots for marking the regions it will
 * mark in the coming epoch: the target queue and the precise frame and
 * global slots into the region (an object only a root holds would look
 * dead to the marking, and the region would be chosen for nothing). */
static void publish(rh_heap *h, bool roots)
{
	rh_rootvals rv = {0};
	if (roots)
		rh_rootvals_gather(h, &rv, false);
	size_t n_hosts;
	const rh_swap_host *hosts = rh_remote_hosts(h->remote, &n_hosts);
	rh_region_desc *ents = malloc(RH_REGIONS_MAX * sizeof *ents);
	if (!ents)
		rh_panic("collector: out of memory");
	uint8_t *pct = malloc(h->n_regions);
	if (!pct)
		rh_panic("collector: out of memory");
	uint64_t epoch = h->stats.collections + h->stats.full_collections;
	for (size_t k = 0; k < n_hosts; k++) {
		const rh_partition *p = &hosts[k].part;
		uint32_t n = 0;
		bool first = true;
		for (uint32_t i = p->first_region; i < p->first_region + p->n_regions; i++) {
			rh_region *r = &h->regions[i];
			/* One figure for the table and the roots decision below:
			 * the tracer marks only regions it was given roots for. */
			pct[i] = r->kind == RH_REGION_FREE ? 0 : (uint8_t)evicted_pct(h, r);
			if (r->kind != RH_REGION_FREE) {
				/* A humongous head's top is past its region: tracers
				 * only need to know the region is taken. */
				uint64_t used =
				        r->kind == RH_REGION_OLD || r->kind == RH_REGION_EDEN
				                ? r->top - r->start
				                : 0;
				ents[n++] = (rh_region_desc){
				        .region = i,
				        .ident = r->ident,
				        .top = (uint32_t)used,
				        .kind = r->kind,
				        .evicted_pct = pct[i],
				        .survivals = (uint16_t)(r->survivals < 65535 ? r->survivals
				                                                     : 65535)};
			}
			bool last = i + 1 == p->first_region + p->n_regions;
			if (n == RH_REGIONS_MAX || last) {
				rh_msg m = {.type = RH_MSG_REGIONS};
				m.u.regions = (rh_msg_regions){epoch,
				                               (first ? RH_REGIONS_FIRST : 0) |
				                                       (last ? RH_REGIONS_LAST : 0),
				                               n, ents};
				send_or_fail(h, k, &m);
				first = false;
				n = 0;
			}
		}
		/* Roots for what the tracer will mark next: mostly evicted old
		 * regions it has no current marking of. */
		for (uint32_t i = p->first_region; roots && i < p->first_region + p->n_regions;
		     i++) {
			rh_region *r = &h->regions[i];
			rh_marked_desc md;
			/* rset.T1: a marked region whose queue lost bits gets
			 * them again, for its next marking. */
			if (r->kind != RH_REGION_OLD || r->top == r->start || pct[i] < 50 ||
			    (marked_now(h, r, &md) && !r->roots_fresh))
				continue;
			/* Sent again only when they may have changed: the remark
			 * uses the current ones anyway. */
			uint32_t top = (uint32_t)(r->top - r->start);
			size_t n_extra;
			const uintptr_t *extra = rh_rootvals_in(&rv, r->start, r->top, &n_extra);
			uint64_t hash = n_extra;
			for (size_t j = 0; j < n_extra; j++)
				hash = hash * 31 + extra[j];
			if (!r->roots_fresh && r->roots_ident == r->ident && r->roots_top == top &&
			    r->roots_cards == r->remset.n_cards && r->roots_hash == hash)
				continue;
			send_roots(h, k, r, 0, extra, n_extra);
			r->roots_fresh = 0;
			r->roots_ident = r->ident;
			r->roots_top = top;
			r->roots_cards = r->remset.n_cards;
			r->roots_hash = hash;
		}
	}
	free(pct);
	free(ents);
	rh_rootvals_free(&rv);
}

/* ---------------------------------------------------------------- the pause */

/* One CSSC's evacuation by the tracers, from the sources each is sent to
 * what came back. */
typedef struct cssc_run {
	const rh_swap_host *hosts;
	size_t n_hosts;
	uint32_t **src, **dst; /* per host: regions to evacuate, and into */
	uint32_t *n_src, *n_dst;
	bool *sent;         /* per host: an EVACUATE went out */
	uintptr_t *targets; /* targets of the recorded slots, sorted */
	size_t n_targets;
	rh_remote_evac **res; /* per host: its EVACUATED */
	uint64_t moved, copied, pairs, tracer_ns;
} cssc_run;

static void run_init(rh_heap *h, cssc_run *x)
{
	memset(x, 0, sizeof *x);
	x->hosts = rh_remote_hosts(h->remote, &x->n_hosts);
	size_t n = x->n_hosts;
	x->src = calloc(n, sizeof *x->src);
	x->dst = calloc(n, sizeof *x->dst);
	x->n_src = calloc(n, sizeof *x->n_src);
	x->n_dst = calloc(n, sizeof *x->n_dst);
	x->sent = calloc(n, sizeof *x->sent);
	x->res = calloc(n, sizeof *x->res);
	x->targets = malloc((h->cssc.n_tslots ? h->cssc.n_tslots : 1) * sizeof *x->targets);
	if (!x->src || !x->dst || !x->n_src || !x->n_dst || !x->sent || !x->res || !x->targets)
		rh_panic("collector: out of memory for a CSSC");
	/* The extra roots per region: what the recorded slots refer to. */
	for (size_t i = 0; i < h->cssc.n_tslots; i++) {
		uintptr_t v = (uintptr_t)*h->cssc.tslots[i];
		if (rh_cssc_cand(h, v))
			x->targets[x->n_targets++] = v;
	}
	qsort(x->targets, x->n_targets, sizeof *x->targets, rh_cmp_addr);
}

static void run_free(cssc_run *x)
{
	for (size_t k = 0; k < x->n_hosts; k++) {
		free(x->src[k]);
		free(x->dst[k]);
	}
	free(x->src);
	free(x->dst);
	free(x->n_src);
	free(x->n_dst);
	free(x->sent);
	free(x->res);
	free(x->targets);
}

/* Host k's candidates that its tracer has marked; the rest stop being
 * candidates. Returns their live bytes. */
static uint64_t pick_sources(rh_heap *h, cssc_run *x, size_t k)
{
	const rh_partition *p = &x->hosts[k].part;
	uint64_t live = 0;
	x->src[k] = malloc(p->n_regions * sizeof **x->src);
	x->dst[k] = malloc(p->n_regions * sizeof **x->dst);
	if (!x->src[k] || !x->dst[k])
		rh_panic("collector: out of memory for a CSSC");
	for (uint32_t i = p->first_region; i < p->first_region + p->n_regions; i++) {
		rh_marked_desc md;
		if (h->offload[i] != RH_OFF_CAND)
			continue;
		if (!marked_now(h, &h->regions[i], &md)) {
			h->offload[i] = RH_OFF_NONE;
			continue;
		}
		x->src[k][x->n_src[k]++] = i;
		live += md.live_bytes;
	}
	return live;
}

/* Free regions of host k's partition for the tracer to copy into: room
 * for what the marking found live plus what the remark may add, and the
 * tails copying leaves unused. */
static void take_destinations(rh_heap *h, cssc_run *x, size_t k, uint64_t live)
{
	const rh_partition *p = &x->hosts[k].part;
	uint64_t want = (live + live / 4) / h->region_size + 2;
	pthread_mutex_lock(&h->alloc_lock);
	while (x->n_dst[k] < want) {
		int64_t r = rh_region_take_in(h, p->first_region, p->n_regions, RH_REGION_OLD);
		if (r < 0)
			break;
		x->dst[k][x->n_dst[k]++] = (uint32_t)r;
		h->offload[r] = RH_OFF_DEST;
	}
	pthread_mutex_unlock(&h->alloc_lock);
}

/* Each source's targets of recorded slots, as its REMARK roots. */
static void send_remark_roots(rh_heap *h, cssc_run *x, size_t k)
{
	for (uint32_t j = 0; j < x->n_src[k]; j++) {
		rh_region *r = &h->regions[x->src[k][j]];
		uintptr_t key = r->start;
		uintptr_t *lo = x->targets, *hi = x->targets + x->n_targets;
		while (lo < hi) { /* first target at or past the region's start */
			uintptr_t *mid = lo + (hi - lo) / 2;
			if (*mid < key)
				lo = mid + 1;
			else
				hi = mid;
		}
		size_t cnt = 0;
		while (lo + cnt < x->targets + x->n_targets && lo[cnt] < r->start + h->region_size)
			cnt++;
		send_roots(h, k, r, RH_ROOTS_REMARK, lo, cnt);
	}
}

/* Host k's tracer gets its sources' current images, their remark roots,
 * and the EVACUATE naming sources and destinations. */
static void send_evacuation(rh_heap *h, cssc_run *x, size_t k)
{
	rh_error e;
	uint64_t live = pick_sources(h, x, k);
	if (!x->n_src[k])
		return;
	colocate(h, x->src[k], x->n_src[k]);
	take_destinations(h, x, k, live);
	for (uint32_t j = 0; j < x->n_src[k]; j++)
		if (rh_swap_flush_region(h->swap, x->src[k][j], &e) != RH_OK)
			rh_heap_fail(h, &e);
	/* swap.I3: a moved source gets forwarding headers from its tracer. */
	for (uint32_t j = 0; j < x->n_src[k]; j++)
		rh_swap_remote_writes(h->swap, h->regions[x->src[k][j]].start, h->region_size);
	send_remark_roots(h, x, k);
	/* cssc.C2: sources and destinations agreed before any copy. */
	if (rh_remote_evacuate(h->remote, k, ++h->cssc.id, h->cfg.remark ? 0 : RH_EVAC_NO_REMARK,
	                       x->src[k], x->n_src[k], x->dst[k], x->n_dst[k], &e) != RH_OK)
		rh_heap_fail(h, &e);
	x->sent[k] = true;
}

/* Host k's EVACUATED: which sources moved, and how full it left each
 * destination (an unused one goes back, cold). */
static void adopt_result(rh_heap *h, cssc_run *x, size_t k)
{
	rh_error e;
	if (rh_remote_evac_wait(h->remote, k, &x->res[k], &e) != RH_OK)
		rh_heap_fail(h, &e);
	rh_remote_evac *ev = x->res[k];
	for (uint32_t j = 0; j < ev->n_src; j++) {
		rh_marked_desc md = {0};
		rh_remote_marked(h->remote, ev->src[j].region, &md);
		rh_log(RH_LOG_DEBUG, "cssc",
		       "region %u: %u KiB used, %llu KiB live when marked, %llu KiB after "
		       "the remark, %s",
		       ev->src[j].region, md.top >> 10, (unsigned long long)(md.live_bytes >> 10),
		       (unsigned long long)(ev->src[j].live_bytes >> 10),
		       ev->src[j].status == RH_EVAC_MOVED ? "moved" : "kept");
		h->offload[ev->src[j].region] =
		        ev->src[j].status == RH_EVAC_MOVED ? RH_OFF_MOVED : RH_OFF_NONE;
		x->moved += ev->src[j].status == RH_EVAC_MOVED;
		rh_remote_forget_marked(h->remote, ev->src[j].region);
	}
	pthread_mutex_lock(&h->alloc_lock);
	for (uint32_t j = 0; j < ev->n_dst; j++) {
		rh_region *r = &h->regions[ev->dst[j].region];
		if (!ev->dst[j].top) {
			rh_region_release_cold(h, r);
			continue;
		}
		r->top = r->old_top = r->start + ev->dst[j].top;
		r->starts_valid = 0; /* its tracer wrote the objects */
		r->live_bytes = ev->dst[j].top;
		r->live_known = 1;
		r->ident++;
		rh_swap_region_filled(h->swap, r->index, ev->dst[j].top);
	}
	pthread_mutex_unlock(&h->alloc_lock);
	x->copied += ev->bytes_copied;
	if (ev->remark_ns + ev->evac_ns > x->tracer_ns)
		x->tracer_ns = ev->remark_ns + ev->evac_ns;
}

/* The moved regions' remembered cards outside moved regions and not
 * fixed by a tracer: fixed here, through the page cache. */
static void fix_remembered_cards(rh_heap *h, const uint64_t *taken, size_t n_taken)
{
	for (uint32_t i = 0; i < h->n_regions; i++) {
		rh_region *r = &h->regions[i];
		if (h->offload[i] != RH_OFF_MOVED || !r->remset.cap)
			continue;
		for (size_t k = 0; k < r->remset.cap; k++) {
			uint64_t card = r->remset.cards[k] - 1;
			/* Moved sources' fields were fixed by their tracers (or
			 * come back in EVAC_REFS). */
			if (r->remset.cards[k] &&
			    h->offload[rh_card_region(h, card)] != RH_OFF_MOVED &&
			    !taken_by_tracer(taken, n_taken, h->base + (card << RH_CARD_SHIFT)))
				rh_card_slots(h, card, fix_visit, h);
		}
	}
}

/* The moved objects' cross-region references (EVAC_REFS): each slot must
 * lie in a destination its own tracer filled; filed, or fixed if it
 * still refers into a moved region. */
static void file_moved_refs(rh_heap *h, cssc_run *x)
{
	rh_error e;
	for (size_t k = 0; k < x->n_hosts; k++)
		for (size_t j = 0; x->res[k] && j < x->res[k]->n_pairs; j++) {
			void **slot = (void **)(uintptr_t)x->res[k]->pairs[j].slot;
			uint32_t si = rh_region_index(h, (uintptr_t)slot);
			if (!rh_in_heap(h, (uintptr_t)slot) || h->offload[si] != RH_OFF_DEST ||
			    rh_remote_host_of(h->remote, si) != k ||
			    (uintptr_t)slot >= h->regions[si].top) {
				rh_err_set(
				        &e, RH_EPEER,
				        "%s reported a moved field at %p, outside the regions it "
				        "filled",
				        x->hosts[k].name, (void *)slot);
				rh_heap_fail(h, &e);
			}
			uintptr_t v = (uintptr_t)x->res[k]->pairs[j].value;
			if (rh_is_ref(h, v) && h->offload[rh_region_index(h, v)] == RH_OFF_MOVED)
				fix_slot(h, slot, true);
			else
				remember(h, slot, v);
			x->pairs++;
		}
}

/* The moved regions are freed on this side; every region stops being a
 * candidate, source or destination. Returns the bytes freed. */
static uint64_t free_moved(rh_heap *h)
{
	pthread_mutex_lock(&h->alloc_lock);
	uint64_t freed = 0;
	for (uint32_t i = 0; i < h->n_regions; i++) {
		if (h->offload[i] == RH_OFF_MOVED) {
			rh_region_release_cold(h, &h->regions[i]);
			freed += h->region_size;
		}
		h->offload[i] = RH_OFF_NONE;
	}
	pthread_mutex_unlock(&h->alloc_lock);
	rh_remsets_drop_freed(h);
	rh_region_flush_freed(h);
	return freed;
}

static void account(rh_heap *h, const cssc_run *x, uint64_t ns, uint64_t freed)
{
	if (x->copied > 65536)
		h->cssc.ns_per_byte = (1 - NS_PER_BYTE_WEIGHT) * h->cssc.ns_per_byte +
		                      NS_PER_BYTE_WEIGHT * (double)ns / (double)x->copied;
	rh_log(RH_LOG_DEBUG, "cssc",
	       "tracers moved %llu regions (%llu KiB), %llu references fixed, %llu reported, "
	       "%.1f ms in all (%.1f ns per byte moved; the slowest tracer's remark and copy "
	       "%.1f ms)",
	       (unsigned long long)x->moved, (unsigned long long)(x->copied >> 10),
	       (unsigned long long)fixed, (unsigned long long)x->pairs, (double)ns / 1e6,
	       x->copied ? (double)ns / (double)x->copied : 0.0, (double)x->tracer_ns / 1e6);
	pthread_mutex_lock(&h->stats_lock);
	h->stats.csscs++;
	h->stats.regions_evacuated_remote += x->moved;
	h->stats.bytes_copied_remote += x->copied;
	h->stats.remote_refs_fixed += fixed;
	h->stats.bytes_freed += freed;
	pthread_mutex_unlock(&h->stats_lock);
}

/* The CSSC proper (docs/distributed-gc.md, steps 3-8): tracers remark and
 * evacuate their chosen regions, every reference to what they moved is
 * fixed, and the moved regions are freed. */
static void run(rh_heap *h)
{
	uint64_t t0 = rh_now_ns();
	cssc_run x;
	run_init(h, &x);
	for (size_t k = 0; k < x.n_hosts; k++)
		send_evacuation(h, &x, k);
	for (size_t k = 0; k < x.n_hosts; k++)
		if (x.sent[k])
			adopt_result(h, &x, k);
	/* References from outside the moved objects (cssc.C3). */
	fixed = 0;
	size_t n_taken = 0;
	uint64_t *taken = fix_remote(h, x.hosts, x.n_hosts, &n_taken);
	for (size_t i = 0; i < h->cssc.n_tslots; i++)
		fix_slot(h, h->cssc.tslots[i], true);
	fix_remembered_cards(h, taken, n_taken);
	file_moved_refs(h, &x);
	free(taken);
	uint64_t freed = free_moved(h);
	account(h, &x, rh_now_ns() - t0, freed);
	run_free(&x);
}

bool rh_cssc_full_by_tracers(const rh_heap *h, rh_gc_kind kind)
{
	return kind == RH_GC_FULL && h->offload_on && !h->cssc.full_on_cpu;
}

void rh_cssc_finish(rh_heap *h, rh_gc_kind kind)
{
	rh_emit(h, kind, RH_PHASE_REMOTE, 1);
	/* fullconc.T6: while the tracers mark the heap, nothing below a TAMS
	 * moves and their region tables stay the snapshot's. */
	if (rh_fullmark_active(h)) {
		h->offload_active = false;
		h->cssc.n_tslots = 0;
		rh_emit(h, kind, RH_PHASE_REMOTE, 0);
		return;
	}
	/* cssc.C1: inside the pause; no mutator runs until it returns. */
	if (h->offload_active)
		run(h);
	h->offload_active = false;
	h->cssc.n_tslots = 0;
	if (h->offload_on) {
		rh_refresh_pause(h);
		publish(h, true);
		uint64_t marked = rh_remote_marked_total(h->remote);
		pthread_mutex_lock(&h->stats_lock);
		h->stats.regions_marked_remote = marked;
		pthread_mutex_unlock(&h->stats_lock);
	}
	rh_emit(h, kind, RH_PHASE_REMOTE, 0);
}

void rh_cssc_publish(rh_heap *h, bool roots)
{
	publish(h, roots);
}
