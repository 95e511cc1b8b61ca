/* Evicted cards fixed where they live (docs/distributed-gc.md, "Fixing
 * external references").
 *
 * After an evacuation, fields elsewhere that refer to moved objects must be
 * redirected. The CPU server fixes the cards it holds; a card whose page
 * only this tracer holds is fixed here, so that the CPU server neither
 * fetches it nor writes it back. The world is stopped and every page the
 * CPU server sends is evicted, so the card's bytes here are current. The
 * region's earlier pages may be stale, but an object's header never
 * changes while its region keeps its layout, so parsing from the region's
 * start still finds the objects that overlap the card; anything that does
 * not parse goes back as FAILED and the CPU server does it instead. Only
 * fields in the card are written, and only with a forwarding address read
 * from this tracer's own image of a region it evacuated itself (cssc.F2).
 */
#include <string.h>

#include "gc/object.h"
#include "memserver/dgc_int.h"

typedef struct fixer {
	rh_dgc *d;
	uint8_t *moved; /* per heap region: evacuated in this CSSC */
	uint64_t n_heap_regions;
	rh_fix_ent *ents;
	size_t n, cap;
	int error;
} fixer;

static void add(fixer *f, uint32_t kind, uint32_t region, uint64_t addr, uint64_t value)
{
	f->ents = grow(f->ents, &f->cap, f->n + 1, sizeof *f->ents);
	f->ents[f->n++] = (rh_fix_ent){kind, region, addr, value};
}

static void fix_field(void *ctx, void **slot)
{
	fixer *f = ctx;
	rh_dgc *d = f->d;
	uintptr_t v = (uintptr_t)*slot;
	uint64_t off = v - d->cfg->heap_base;
	if ((v & 7) || off >= d->cfg->heap_size || !f->moved[off >> d->region_shift])
		return;
	uint32_t l;
	if (local_of(d, (uint32_t)(off >> d->region_shift), &l) < 0) {
		add(f, RH_FIX_UNRESOLVED, 0, (uint64_t)(uintptr_t)slot, v);
		return;
	}
	if (!d->r[l].evacuated) {
		if (!f->error)
			f->error = rh_dgc_fail(d,
			                       "FIX_CARDS: region %u is listed as moved, but this "
			                       "tracer did not evacuate it",
			                       d->part.first_region + l);
		return;
	}
	uint64_t h = rh_hdr((void *)v);
	if (!rh_hdr_is_fwd(h))
		return; /* a dead object's field refers to a dead object */
	uintptr_t to = (uintptr_t)rh_hdr_fwd_addr(h);
	uint32_t tl;
	if (local_of(d, (uint32_t)((to - d->cfg->heap_base) >> d->region_shift), &tl) < 0 ||
	    to - d->cfg->heap_base >= d->cfg->heap_size) {
		if (!f->error)
			f->error =
			        rh_dgc_fail(d, "object %#lx forwards to %#lx, outside partition %u",
			                    (unsigned long)v, (unsigned long)to, d->part.index);
		return;
	}
	*slot = (void *)to;
	/* The CPU server files it: the card in the target region's source
	 * queue, the target in its target queue. */
	add(f, RH_FIX_REF, d->part.first_region + tl, (uint64_t)(uintptr_t)slot, to);
}

/* The head of a humongous object covering region l, or -1. */
static int64_t humongous_head(rh_dgc *d, uint32_t l)
{
	while (d->r[l].kind == RH_REGION_HUMONGOUS_CONT && l > 0)
		l--;
	return d->r[l].kind == RH_REGION_HUMONGOUS ? (int64_t)l : -1;
}

/* Visit the card's fields; false if the region does not parse here. The
 * cursor (*resume, an object start in region l) lets sorted cards of one
 * region share a single parse. */
static bool fix_card(fixer *f, uint32_t l, uintptr_t lo, uintptr_t *resume)
{
	rh_dgc *d = f->d;
	uintptr_t hi = lo + ((uintptr_t)1 << RH_CARD_SHIFT);
	const treg *t = &d->r[l];
	if (t->kind == RH_REGION_HUMONGOUS || t->kind == RH_REGION_HUMONGOUS_CONT) {
		int64_t head = humongous_head(d, l);
		if (head < 0)
			return false;
		uintptr_t obj = rstart(d, (uint32_t)head);
		if (!rh_object_valid(&d->types, (void *)obj, d->part.base + d->part.size - obj) ||
		    obj + rh_hdr_bytes(rh_hdr((void *)obj)) < hi)
			return false;
		rh_object_slots_in(&d->types, obj, lo, hi, fix_field, f);
		return true;
	}
	if (t->kind != RH_REGION_OLD && t->kind != RH_REGION_EDEN)
		return false;
	uintptr_t s = rstart(d, l), end = s + t->top;
	if (hi > end)
		return false; /* past the top this tracer knows: the CPU server's */
	uintptr_t p = *resume >= s && *resume <= lo ? *resume : s;
	while (p < hi) {
		uint64_t h = rh_hdr((void *)p);
		if (rh_hdr_is_fwd(h) || !rh_object_valid(&d->types, (void *)p, end - p))
			return false;
		size_t bytes = rh_hdr_bytes(h);
		if (p + bytes > lo) {
			*resume = p;
			rh_object_slots_in(&d->types, p, lo, hi, fix_field, f);
		}
		p += bytes;
	}
	return true;
}

static int reply(rh_dgc *d, fixer *f, uint64_t id)
{
	size_t k = 0;
	do {
		size_t n = f->n - k < RH_CARDS_FIXED_MAX ? f->n - k : RH_CARDS_FIXED_MAX;
		rh_msg m = {.type = RH_MSG_CARDS_FIXED};
		/* An empty reply has no entries at all (NULL + 0 is undefined). */
		m.u.cards_fixed = (rh_msg_cards_fixed){id, k + n == f->n ? RH_CARDS_FIXED_LAST : 0,
		                                       (uint32_t)n, f->ents ? f->ents + k : NULL};
		if (rh_dgc_send(d, &m) < 0)
			return -1;
		k += n;
	} while (k < f->n);
	return 0;
}

int rh_dgc_fix_cards(rh_dgc *d, const rh_msg_fix_cards *m, uint32_t seq)
{
	(void)seq;
	fixer f = {.d = d, .n_heap_regions = d->cfg->heap_size >> d->region_shift};
	f.moved = calloc(f.n_heap_regions, 1);
	if (!f.moved)
		rh_panic("tracer: out of memory for FIX_CARDS");
	int rc = 0;
	for (uint32_t i = 0; i < m->n_moved && !rc; i++) {
		uint32_t r = rh_msg_fix_cards_moved(m, i);
		if (r >= f.n_heap_regions)
			rc = rh_dgc_fail(d, "FIX_CARDS: moved region %u is outside the heap", r);
		else
			f.moved[r] = 1;
	}
	uint32_t cur = UINT32_MAX;
	uintptr_t resume = 0;
	for (uint32_t i = 0; i < m->n_cards && !rc && !f.error; i++) {
		uint64_t c = rh_msg_fix_cards_card(m, i);
		uint32_t l;
		if (c - d->part.base >= d->part.size || (c & ((1u << RH_CARD_SHIFT) - 1))) {
			rc = rh_dgc_fail(d, "FIX_CARDS: card %#llx is not a card of partition %u",
			                 (unsigned long long)c, d->part.index);
			break;
		}
		l = (uint32_t)((c - d->part.base) >> d->region_shift);
		if (l != cur) {
			cur = l;
			resume = 0;
		}
		if (!fix_card(&f, l, (uintptr_t)c, &resume))
			add(&f, RH_FIX_FAILED, d->part.first_region + l, c, 0);
	}
	for (uint32_t i = 0; i < m->n_writes && !rc && !f.error; i++) {
		rh_slot_write w;
		rh_msg_fix_cards_write(m, i, &w);
		if (w.slot - d->part.base >= d->part.size) {
			rc = rh_dgc_fail(d, "FIX_CARDS: slot %#llx is outside partition %u",
			                 (unsigned long long)w.slot, d->part.index);
			break;
		}
		uint32_t l = (uint32_t)((w.slot - d->part.base) >> d->region_shift);
		uint64_t *slot = (uint64_t *)(uintptr_t)w.slot;
		/* cssc.F2: a conditional write, only if the slot is unchanged. */
		if (d->r[l].kind != RH_REGION_FREE && *slot == w.old)
			*slot = w.value;
		else
			add(&f, RH_FIX_FAILED, d->part.first_region + l, w.slot, w.old);
	}
	if (!rc && !f.error)
		rc = reply(d, &f, m->id);
	free(f.moved);
	free(f.ents);
	return rc ? rc : f.error;
}
