/* The heap verifier: run with the world stopped, after a collection (the
 * "verify" config key or RHEAP_VERIFY=1) or on demand (rh_verify()).
 *
 * It checks that every region parses into valid objects (alloc.A1); that every object
 * reachable from the roots has a valid header; that every reference it
 * holds points to an object start inside an allocated region; and that every
 * cross-region reference from a non-eden source is in the target's
 * remembered set (rset.R1: card in the source queue, address in the target queue);
 * and that memory eden may reuse without zeroing it is zero.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc/bitmap.h"
#include "runtime/internal.h"

#define REPORT_MAX 20

typedef struct vctx {
	rh_heap *h;
	size_t bad;
	uintptr_t *stack;
	size_t n, cap;
	uint64_t *seen; /* h->mark_bits, reused */
} vctx;

static void report(vctx *v, const char *fmt, ...) RH_PRINTF(2, 3);
static void report(vctx *v, const char *fmt, ...)
{
	if (v->bad++ >= REPORT_MAX)
		return;
	va_list ap;
	va_start(ap, fmt);
	fputs("rheap: verify: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static void push(vctx *v, uintptr_t obj)
{
	size_t i = (obj - v->h->base) >> 3;
	if (rh_bit_get(v->seen, i))
		return;
	rh_bit_set(v->seen, i);
	if (v->n == v->cap) {
		v->cap = v->cap ? v->cap * 2 : 4096;
		v->stack = realloc(v->stack, v->cap * sizeof *v->stack);
		if (!v->stack)
			rh_panic("verify: out of memory");
	}
	v->stack[v->n++] = obj;
}

static rh_region *head_of(rh_heap *h, uintptr_t a)
{
	return rh_region_head(h, rh_region_of(h, a));
}

/* Is a an object start in an allocated part of the heap? */
static int object_start(rh_heap *h, uintptr_t a)
{
	rh_region *r = head_of(h, a);
	if (r->kind == RH_REGION_FREE || a >= r->top)
		return 0;
	return rh_bit_get(h->start_bits, (a - h->base) >> 3) &&
	       rh_hdr_type(rh_hdr((void *)a)) != RH_FILLER_TYPE;
}

static void check_ref(vctx *v, uintptr_t from, void **slot, const char *what)
{
	rh_heap *h = v->h;
	uintptr_t a = (uintptr_t)*slot;
	if (!rh_is_ref(h, a))
		return;
	if (!object_start(h, a)) {
		report(v,
		       "%s %p (in object %#lx) holds %#lx, which is not an object start in an "
		       "allocated region",
		       what, (void *)slot, (unsigned long)from, (unsigned long)a);
		return;
	}
	if (rh_in_heap(h, (uintptr_t)slot)) {
		rh_region *sr = rh_region_of(h, (uintptr_t)slot), *tr = head_of(h, a);
		if (sr->kind != RH_REGION_EDEN && sr->index != rh_region_index(h, a) &&
		    head_of(h, (uintptr_t)slot) != tr) {
			uint64_t card = rh_card_of(h, (uintptr_t)slot);
			if (!rh_remset_has_card(&tr->remset, card))
				report(v,
				       "slot %p -> %#lx crosses from region %u to %u but card %lu "
				       "is missing from the target's source queue",
				       (void *)slot, (unsigned long)a, sr->index, tr->index,
				       (unsigned long)card);
			else if (h->offload_on && /* rset.D3 */
			         !rh_remset_has_target(&tr->remset, (a - tr->start) >> 3))
				report(v,
				       "slot %p -> %#lx: target missing from region %u's target "
				       "queue",
				       (void *)slot, (unsigned long)a, tr->index);
		}
	}
	push(v, a);
}

static void root_slot(void *ctx, void **slot)
{
	check_ref(ctx, 0, slot, "root slot");
}

static void conservative_word(void *ctx, uintptr_t w)
{
	vctx *v = ctx;
	rh_heap *h = v->h;
	if (!rh_in_heap(h, w))
		return;
	rh_region *r = head_of(h, w);
	if (r->kind == RH_REGION_FREE)
		return;
	uintptr_t obj = rh_region_object_at(h, r, w);
	if (obj && rh_hdr_type(rh_hdr((void *)obj)) != RH_FILLER_TYPE)
		push(v, obj);
}

static uintptr_t cur_obj;
static void field(void *ctx, void **slot)
{
	check_ref(ctx, cur_obj, slot, "field");
}

/* evac.P9: an old region whose starts are marked valid has exactly its
 * objects' starts set (copies set them as they are made), before the
 * parse below rebuilds the bitmap its own way. */
static void check_starts(vctx *v, rh_region *r)
{
	rh_heap *h = v->h;
	size_t n = 0;
	for (uintptr_t p = r->start; p < r->top; n++) {
		if (!rh_object_valid(&h->types, (void *)p, r->top - p))
			return; /* the parse reports it */
		if (!rh_bit_get(h->start_bits, (p - h->base) >> 3))
			report(v, "region %u: object %p missing from the start bitmap (evac.P9)",
			       r->index, (void *)p);
		p += rh_hdr_bytes(rh_hdr((void *)p));
	}
	const uint64_t *w = rh_region_starts(h, r);
	size_t set = 0;
	for (size_t k = 0; k < h->region_size / 512; k++)
		set += (size_t)__builtin_popcountll(w[k]);
	if (set != n)
		report(v, "region %u: %zu start bits for %zu objects (evac.P9)", r->index, set, n);
}

static void parse_regions(vctx *v)
{
	rh_heap *h = v->h;
	for (uint32_t i = 0; i < h->n_regions; i++) {
		rh_region *r = &h->regions[i];
		if (r->kind == RH_REGION_OLD && r->starts_valid)
			check_starts(v, r);
		memset(rh_region_starts(h, r), 0, h->region_size / 64);
		if (r->kind == RH_REGION_FREE || r->kind == RH_REGION_HUMONGOUS_CONT)
			continue;
		uintptr_t end = r->kind == RH_REGION_HUMONGOUS ? r->start + r->span * h->region_size
		                                               : r->start + h->region_size;
		if (r->top < r->start || r->top > end) {
			report(v, "region %u: top %#lx outside the region", i,
			       (unsigned long)r->top);
			continue;
		}
		for (uintptr_t p = r->start; p < r->top;) {
			if (!rh_object_valid(&h->types, (void *)p, r->top - p)) {
				report(v, "region %u (kind %d): invalid header %#llx at %p", i,
				       r->kind, (unsigned long long)rh_hdr((void *)p), (void *)p);
				break;
			}
			if (rh_hdr(((void *)p)) & RH_GC_PINNED)
				report(v, "object %p still carries the pinned bit", (void *)p);
			rh_bit_set(h->start_bits, (p - h->base) >> 3);
			p += rh_hdr_bytes(rh_hdr((void *)p));
		}
	}
}

/* Past both its top and its dirty_end, a region holds only zeros: eden
 * takes a warm region as it is and zeroes each chunk it carves below
 * dirty_end (alloc.P1). Only
 * on a local heap: on a disaggregated one, reading would fault pages in
 * and change what the swap system holds. */
static void check_zero_tails(vctx *v)
{
	rh_heap *h = v->h;
	if (h->swap)
		return;
	for (uint32_t i = 0; i < h->n_regions; i++) {
		rh_region *r = &h->regions[i];
		bool mapped = r->kind == RH_REGION_EDEN || r->kind == RH_REGION_OLD ||
		              (r->kind == RH_REGION_FREE && r->warm);
		if (!mapped)
			continue;
		/* (A free region's top is its start.) */
		uintptr_t from = r->top > r->dirty_end ? r->top : r->dirty_end;
		for (uintptr_t p = from; p < r->start + h->region_size; p += 8) {
			if (*(const uint64_t *)p) {
				report(v,
				       "region %u (kind %d%s): word %#llx at %p, past its top %#lx "
				       "and dirty end %#lx, is not zero",
				       i, r->kind, r->warm ? ", warm" : "",
				       (unsigned long long)*(const uint64_t *)p, (void *)p,
				       (unsigned long)r->top, (unsigned long)r->dirty_end);
				break;
			}
		}
	}
}

size_t rh_verify_heap(rh_heap *h)
{
	vctx v = {.h = h, .seen = h->mark_bits};
	memset(h->mark_bits, 0, h->size / 64);
	parse_regions(&v);
	check_zero_tails(&v);
	for (rh_mutator *m = h->mutators; m; m = m->next)
		rh_stack_scan(m, conservative_word, root_slot, &v);
	for (size_t i = 0; i < h->n_globals; i++)
		root_slot(&v, h->globals[i]);
	while (v.n) {
		uintptr_t obj = v.stack[--v.n];
		cur_obj = obj;
		if (rh_object_slots(&h->types, (void *)obj, field, &v) < 0)
			report(&v, "object %p: header inconsistent with its type", (void *)obj);
	}
	free(v.stack);
	/* The start bitmap goes stale as soon as mutators allocate again. */
	for (uint32_t i = 0; i < h->n_regions; i++)
		h->regions[i].starts_valid = 0;
	if (v.bad > REPORT_MAX)
		fprintf(stderr, "rheap: verify: ... %zu problems in all\n", v.bad);
	return v.bad;
}
