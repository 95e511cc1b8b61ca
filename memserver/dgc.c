/* Tracer-side marking, remark and evacuation (docs/distributed-gc.md).
 *
 * The partition's image is read in place: it is mapped at the heap's own
 * addresses. While the VM runs, the CPU server writes pages back into it at
 * any time, so concurrent marking trusts nothing it reads: a header that
 * does not parse is deferred, a mark that turns out not to be an object
 * start is dropped at the remark, and every page written back since a
 * region's marking began is rescanned then (its eviction log says which).
 * The remark runs with the world stopped and the region flushed, on a
 * current image; only from then on is the image trusted, and a region that
 * does not parse is a protocol error.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "gc/bitmap.h"
#include "gc/mark.h"
#include "gc/object.h"
#include "gc/region.h"
#include "memserver/dgc_int.h"

void rh_dgc_reset_region(rh_dgc *d, uint32_t l)
{
	treg *t = &d->r[l];
	free(t->order);
	free(t->deferred);
	t->order = t->deferred = NULL;
	t->n_order = t->n_deferred = 0;
	t->state = T_NONE;
	t->live = 0;
	t->busy = 0;
	memset(&d->marks[(rstart(d, l) - d->part.base) >> 9], 0, d->region_size / 64);
}

/* The region is free on the CPU server: nothing of it is kept. */
static void forget_region(rh_dgc *d, uint32_t l)
{
	rh_dgc_reset_region(d, l);
	d->r[l].kind = RH_REGION_FREE;
	d->r[l].top = 0;
	d->r[l].n_roots = 0;
	d->r[l].have_roots = 0;
	d->r[l].evacuated = 0;
}

/* Fail the thread: the protocol was broken. The ERROR goes to the CPU
 * server, which then treats this tracer as lost. */
int rh_dgc_fail(rh_dgc *d, const char *fmt, ...)
{
	char text[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	rh_log(RH_LOG_ERROR, "dgc", "%s", text);
	rh_msg m = {.type = RH_MSG_ERROR};
	m.u.error.code = RH_EPEER;
	snprintf(m.u.error.text, sizeof m.u.error.text, "%s", text);
	d->send(d->send_ctx, &m, NULL);
	pthread_mutex_lock(&d->lock);
	d->failed = RH_EPEER;
	rh_err_set(&d->fail_err, RH_EPEER, "%s", text);
	pthread_mutex_unlock(&d->lock);
	return -1;
}

/* ---------------------------------------------------------------- marking */

/* Concurrent marking: a header that parses inside the region's used part. */
static int valid_obj(void *ctx, uintptr_t obj)
{
	mctx *w = ctx;
	if (obj < w->cur_start || obj >= w->cur_end)
		return 0;
	if (w->cur_remark)
		return rh_bit_get(w->d->starts, (obj - w->cur_start) >> 3);
	uint64_t h = rh_hdr((void *)obj);
	return !rh_hdr_is_fwd(h) && rh_object_valid(&w->d->types, (void *)obj, w->cur_end - obj);
}

static void setup_marker(rh_dgc *d, mctx *w, uint32_t l)
{
	treg *t = &d->r[l];
	rh_marker *mk = &w->mk;
	rh_marker_reset(mk);
	mk->tt = &d->types;
	mk->heap_lo = d->part.base;
	mk->heap_size = d->part.size;
	mk->region_shift = d->region_shift;
	memset(w->in_set, 0, d->part.n_regions);
	w->in_set[l] = 1;
	mk->in_set = w->in_set;
	/* Partition-wide, but a marker only sets bits in its own region. */
	mk->mark_bits = d->marks;
	mk->order_kind = d->cfg->order;
	mk->live_bytes = w->live_tmp;
	mk->valid = valid_obj;
	mk->valid_ctx = w;
	w->cur_start = rstart(d, l);
	w->cur_end = w->cur_start + t->top;
}

static uint64_t live_of(mctx *w, const uintptr_t *objs, size_t n)
{
	uint64_t live = 0;
	for (size_t i = 0; i < n; i++) {
		uintptr_t o = objs[i];
		if (valid_obj(w, o) && rh_hdr_type(rh_hdr((void *)o)) != RH_FILLER_TYPE)
			live += rh_hdr_bytes(rh_hdr((void *)o));
	}
	return live;
}

static bool inbox_waiting(rh_dgc *d)
{
	return __atomic_load_n(&d->in_head, __ATOMIC_ACQUIRE) != NULL;
}

/* Mark region l with marker w: the collector thread's own, or a helper's
 * while the region is flagged `marking` (then only that helper touches the
 * region's state, and the collector thread handles no message until every
 * helper has handed its region back: docs/distributed-gc.md, "Tracer
 * threads"). */
static void mark_region(rh_dgc *d, mctx *w, uint32_t l)
{
	treg *t = &d->r[l];
	rh_region_meta *m = &d->meta[l];
	uint64_t t0 = rh_now_ns();
	/* An eviction batch is writing the region: come back later (swap.T1). */
	if (__atomic_load_n(&m->tag, __ATOMIC_ACQUIRE) & RH_TAG_DIRTY) {
		t->busy = 1;
		return;
	}
	uint64_t h0 = __atomic_load_n(&m->log_head, __ATOMIC_ACQUIRE);
	t->roots_new = 0;
	rh_dgc_reset_region(d, l);
	memset(w->live_tmp, 0, d->part.n_regions * sizeof *w->live_tmp);
	w->cur_remark = false;
	/* tracer.T3: this marker sets mark bits inside region l only. */
	setup_marker(d, w, l);
	for (size_t i = 0; i < t->n_roots; i++)
		rh_marker_root(&w->mk, w->cur_start + (uintptr_t)t->roots[i] * 8);
	while (rh_marker_drain_some(&w->mk, STEP)) {
		if (d->step_hook)
			d->step_hook(d->step_ctx);
		if (inbox_waiting(d)) {
			/* A pause or a new table: start this region over later. */
			rh_dgc_reset_region(d, l);
			return;
		}
	}
	/* msct.M1: marked, or logged after h0, or deferred. */
	t->h0 = h0;
	t->n_order = w->mk.n_order;
	t->order = malloc((t->n_order ? t->n_order : 1) * sizeof *t->order);
	t->n_deferred = w->mk.n_deferred;
	t->deferred = malloc((t->n_deferred ? t->n_deferred : 1) * sizeof *t->deferred);
	if (!t->order || !t->deferred)
		rh_panic("tracer: out of memory saving a region's marks");
	if (t->n_order)
		memcpy(t->order, w->mk.order, t->n_order * sizeof *t->order);
	if (t->n_deferred)
		memcpy(t->deferred, w->mk.deferred, t->n_deferred * sizeof *t->deferred);
	t->live = live_of(w, t->order, t->n_order);
	/* Marks from stale pages may overlap: an estimate, never above top.
	 * Objects on pages not written back yet could hold anything: with
	 * any deferred, the region is reported full, so that the CPU server
	 * does not choose it on a guess (it is marked again once its log
	 * has moved on). */
	if (t->live > t->top || t->n_deferred)
		t->live = t->top;
	t->state = T_MARKED;
	t->marked_ns = rh_now_ns();

	rh_marked_desc md = {.region = d->part.first_region + l,
	                     .ident = t->ident,
	                     .top = t->top,
	                     .objects = (uint32_t)t->n_order,
	                     .live_bytes = t->live};
	rh_msg msg = {.type = RH_MSG_MARKED};
	msg.u.marked.n = 1;
	msg.u.marked.ents = &md;
	rh_error e;
	if (d->send(d->send_ctx, &msg, &e) != RH_OK)
		rh_log(RH_LOG_WARN, "dgc", "sending MARKED: %s", e.msg);
	pthread_mutex_lock(&d->lock);
	d->st.bytes_traced += t->live;
	d->st.regions_marked++;
	d->st.mark_ns += rh_now_ns() - t0;
	pthread_mutex_unlock(&d->lock);
}

/* Old regions mostly evicted, fewest survivals first, then the most
 * evicted; a marked region whose log has advanced half a ring since is
 * marked afresh, so that its remark stays a partial rescan. */
static int64_t pick_pass(rh_dgc *d, bool idle_only, uint64_t now);
static int64_t pick(rh_dgc *d)
{
	uint64_t now = rh_now_ns();
	int64_t l = pick_pass(d, true, now);
	return l >= 0 ? l : pick_pass(d, false, now);
}

static int64_t pick_pass(rh_dgc *d, bool idle_only, uint64_t now)
{
	int64_t best = -1;
	for (uint32_t l = 0; l < d->part.n_regions; l++) {
		treg *t = &d->r[l];
		if (t->marking || t->kind != RH_REGION_OLD || !t->top || t->busy ||
		    t->evicted_pct < 50 || !t->have_roots)
			continue;
		if (t->state == T_MARKED && !t->roots_new) {
			/* Marked again when its roots changed (rset.T1: the CPU
			 * server rebuilt them without the references that
			 * died), when its log has moved half a ring, or,
			 * with nothing else to do, once its marking is two seconds
			 * old: garbage made since then is invisible to it. */
			uint64_t head = __atomic_load_n(&d->meta[l].log_head, __ATOMIC_ACQUIRE);
			if (head - t->h0 <= RH_LOG_ENTRIES / 2 &&
			    (idle_only || now - t->marked_ns < 2000000000ull))
				continue;
		}
		if (best < 0) {
			best = l;
			continue;
		}
		treg *b = &d->r[best];
		if ((t->state < b->state) ||
		    (t->state == b->state &&
		     (t->survivals < b->survivals ||
		      (t->survivals == b->survivals && t->evicted_pct > b->evicted_pct))))
			best = l;
	}
	return best;
}

/* ---------------------------------------------------------------- messages */

static int on_regions(rh_dgc *d, const rh_msg_regions *m)
{
	if (m->flags & RH_REGIONS_FIRST)
		for (uint32_t l = 0; l < d->part.n_regions; l++)
			d->r[l].seen = 0;
	for (uint32_t i = 0; i < m->n; i++) {
		rh_region_desc e;
		rh_msg_regions_get(m, i, &e);
		uint32_t l;
		if (local_of(d, e.region, &l) < 0 || e.top > d->region_size)
			return rh_dgc_fail(d, "REGIONS: region %u (top %u) is not in partition %u",
			                   e.region, e.top, d->part.index);
		treg *t = &d->r[l];
		/* fullconc.T5: the table before FULL END gives the tops the
		 * last pass walks to; the marks stay the full marking's. */
		if (!d->full && (t->ident != e.ident || t->top != e.top || t->kind != e.kind)) {
			rh_dgc_reset_region(d, l);
			t->n_roots = 0;
			t->have_roots = 0;
		}
		t->ident = e.ident;
		t->top = e.top;
		t->kind = e.kind;
		t->evicted_pct = e.evicted_pct;
		t->survivals = e.survivals;
		t->busy = 0;
		t->seen = 1;
	}
	if (m->flags & RH_REGIONS_LAST)
		for (uint32_t l = 0; l < d->part.n_regions; l++)
			if (!d->r[l].seen && d->r[l].kind != RH_REGION_FREE)
				forget_region(d, l);
	return 0;
}

static int on_roots(rh_dgc *d, const rh_msg_roots *m)
{
	uint32_t l;
	if (local_of(d, m->region, &l) < 0)
		return rh_dgc_fail(d, "ROOTS: region %u is not in partition %u", m->region,
		                   d->part.index);
	treg *t = &d->r[l];
	bool remark = m->flags & RH_ROOTS_REMARK;
	uint32_t **v = remark ? &t->rroots : &t->roots;
	size_t *n = remark ? &t->n_rroots : &t->n_roots;
	size_t *cap = remark ? &t->cap_rroots : &t->cap_roots;
	if (m->flags & RH_ROOTS_FIRST)
		*n = 0;
	/* Marking waits for them: without its roots a region would look
	 * empty, and the CPU server would choose it for nothing. */
	if (!remark) {
		t->have_roots = 1;
		t->roots_new = 1;
	}
	/* Appended batches are bounded by the region's words, so a peer
	 * cannot grow the list without end (security.M1). */
	if (*n + m->n > d->region_size / 8)
		return rh_dgc_fail(d, "ROOTS: more than %llu roots for region %u",
		                   (unsigned long long)(d->region_size / 8), m->region);
	*v = grow(*v, cap, *n + m->n, sizeof **v);
	for (uint32_t i = 0; i < m->n; i++) {
		uint32_t off = rh_msg_roots_get(m, i);
		if ((uint64_t)off * 8 >= d->region_size)
			return rh_dgc_fail(d, "ROOTS: offset %u words is outside region %u", off,
			                   m->region);
		(*v)[(*n)++] = off;
	}
	return 0;
}

/* ---------------------------------------------------------------- remark */

static int build_starts(rh_dgc *d, uint32_t l)
{
	uintptr_t s = rstart(d, l), end = s + d->r[l].top;
	memset(d->starts, 0, d->region_size / 64);
	for (uintptr_t p = s; p < end;) {
		uint64_t h = rh_hdr((void *)p);
		if (rh_hdr_is_fwd(h) || !rh_object_valid(&d->types, (void *)p, end - p))
			return rh_dgc_fail(
			        d,
			        "region %u is not parsable at +%#lx (header %#llx) after its "
			        "flush",
			        d->part.first_region + l, (unsigned long)(p - s),
			        (unsigned long long)h);
		rh_bit_set(d->starts, (p - s) >> 3);
		p += rh_hdr_bytes(h);
	}
	return 0;
}

static bool overlaps_logged(rh_dgc *d, uintptr_t obj)
{
	size_t first = (obj - d->mx.cur_start) >> RH_PAGE_SHIFT;
	size_t last =
	        (obj + rh_hdr_bytes(rh_hdr((void *)obj)) - 1 - d->mx.cur_start) >> RH_PAGE_SHIFT;
	for (size_t p = first; p <= last && p < d->pages; p++)
		if (d->logged[p])
			return true;
	return false;
}

/* Remark region l (docs/distributed-gc.md, "Remark"). Leaves its marks,
 * traversal order and live bytes in place for the evacuation. */
static int remark(rh_dgc *d, uint32_t l, bool no_remark, uint64_t *pages_rescanned)
{
	treg *t = &d->r[l];
	rh_marker *mk = &d->mx.mk;
	if (build_starts(d, l) < 0)
		return -1;
	bool was_marked = t->state == T_MARKED;
	if (!was_marked)
		rh_dgc_reset_region(d, l);
	d->mx.cur_remark = true;
	setup_marker(d, &d->mx, l);
	/* Marks made from stale pages may sit inside objects: keep those at
	 * object starts only (anything else was never an object). */
	size_t kept = 0;
	mk->order = grow(mk->order, &mk->cap_order, t->n_order, sizeof *mk->order);
	for (size_t i = 0; i < t->n_order; i++) {
		uintptr_t o = t->order[i];
		size_t bit = (o - d->part.base) >> 3;
		if (rh_bit_get(d->starts, (o - d->mx.cur_start) >> 3))
			mk->order[kept++] = o;
		else
			rh_bit_clear(d->marks, bit);
	}
	mk->n_order = kept;
	if (!no_remark && was_marked) {
		uint64_t head = __atomic_load_n(&d->meta[l].log_head, __ATOMIC_ACQUIRE);
		/* msct.M2, swap.T2: what was written back since h0 is rescanned. */
		bool all = head - t->h0 > RH_LOG_ENTRIES;
		memset(d->logged, 0, d->pages);
		for (uint64_t i = t->h0; !all && i < head; i++) {
			uint32_t pg = d->meta[l].log[i % RH_LOG_ENTRIES];
			if (pg >= d->pages)
				return rh_dgc_fail(d,
				                   "region %u's eviction log names page %u (of %u)",
				                   d->part.first_region + l, pg, d->pages);
			d->logged[pg] = 1;
		}
		for (size_t i = 0; i < kept; i++) {
			uintptr_t o = mk->order[i];
			if (all || overlaps_logged(d, o)) {
				rh_marker_rescan(mk, o);
				(*pages_rescanned)++;
			}
		}
		for (size_t i = 0; i < t->n_deferred; i++) {
			uintptr_t o = t->deferred[i];
			if (o >= d->mx.cur_start && o < d->mx.cur_end &&
			    rh_bit_get(d->starts, (o - d->mx.cur_start) >> 3) &&
			    rh_bit_get(d->marks, (o - d->part.base) >> 3))
				rh_marker_rescan(mk, o);
		}
	}
	/* Target-queue bits may be stale (docs/runtime.md, rset.R1): one that is no
	 * longer an object start is dropped. */
	for (size_t i = 0; i < t->n_rroots; i++) {
		uintptr_t o = d->mx.cur_start + (uintptr_t)t->rroots[i] * 8;
		if (o < d->mx.cur_end && rh_bit_get(d->starts, (o - d->mx.cur_start) >> 3))
			rh_marker_root(mk, o);
	}
	rh_marker_drain(mk);
	if (mk->n_deferred && !no_remark)
		return rh_dgc_fail(d, "region %u: a live reference to %#lx, inside an object",
		                   d->part.first_region + l, (unsigned long)mk->deferred[0]);
	/* A stale target bit may name a filler: fillers are not copied. */
	free(t->order);
	t->order = malloc((mk->n_order ? mk->n_order : 1) * sizeof *t->order);
	if (!t->order)
		rh_panic("tracer: out of memory");
	t->n_order = 0;
	for (size_t i = 0; i < mk->n_order; i++)
		if (rh_hdr_type(rh_hdr((void *)mk->order[i])) != RH_FILLER_TYPE)
			t->order[t->n_order++] = mk->order[i];
	t->live = live_of(&d->mx, t->order, t->n_order);
	d->mx.cur_remark = false;
	return 0;
}

/* ---------------------------------------------------------------- evacuation */

typedef struct evac {
	rh_dgc *d;
	dcur *dst;
	uint32_t n_dst, cur;
	rh_ref_pair *pairs;
	size_t n_pairs, cap_pairs;
	uint64_t dangling;
	bool no_remark;
	int error;
} evac;

/* Bump-allocate in the granted destinations; with `commit`, a filled
 * destination's top is recorded as the cursor leaves it. */
static uintptr_t bump(evac *e, uint32_t *cur, uint64_t *top, size_t bytes, bool commit)
{
	while (*cur < e->n_dst) {
		if (e->d->region_size - *top >= bytes) {
			uintptr_t p = e->d->part.base +
			              ((uintptr_t)(e->dst[*cur].region - e->d->part.first_region)
			               << e->d->region_shift) +
			              *top;
			*top += bytes;
			return p;
		}
		if (commit)
			e->dst[*cur].top = *top;
		(*cur)++;
		*top = *cur < e->n_dst ? e->dst[*cur].top : 0;
	}
	return 0;
}

static void fix_slot(void *ctx, void **slot)
{
	evac *e = ctx;
	rh_dgc *d = e->d;
	uintptr_t v = (uintptr_t)*slot;
	if ((v & 7) || v - d->cfg->heap_base >= d->cfg->heap_size)
		return;
	if (v - d->part.base < d->part.size && d->r[(v - d->part.base) >> d->region_shift].moved) {
		uint64_t h = rh_hdr((void *)v);
		if (rh_hdr_is_fwd(h)) {
			v = (uintptr_t)rh_hdr_fwd_addr(h);
			*slot = (void *)v;
		} else if (e->no_remark) {
			e->dangling++; /* the lost object the remark would have saved */
		} else if (!e->error) {
			e->error = 1;
			rh_dgc_fail(d,
			            "moved object field %p references %#lx, which was not marked",
			            (void *)slot, (unsigned long)v);
		}
	}
	if (((uintptr_t)slot >> d->region_shift) != (v >> d->region_shift)) {
		e->pairs = grow(e->pairs, &e->cap_pairs, e->n_pairs + 1, sizeof *e->pairs);
		e->pairs[e->n_pairs++] = (rh_ref_pair){(uint64_t)(uintptr_t)slot, v};
	}
}

int rh_dgc_send(rh_dgc *d, const rh_msg *m)
{
	rh_error err;
	if (d->send(d->send_ctx, m, &err) == RH_OK)
		return 0;
	pthread_mutex_lock(&d->lock);
	d->failed = err.code ? err.code : RH_EPEER;
	d->fail_err = err;
	pthread_mutex_unlock(&d->lock);
	return -1;
}

/* Check every region an EVACUATE names before any state changes
 * (security.M1): sources old and in use, destinations free, all in this
 * partition. The decoder already refused a region named twice (a source
 * evacuated twice would copy forwarding headers as objects). Fills src[]
 * with local indices. */
static int check_evacuate(rh_dgc *d, const rh_msg_evacuate *m, uint32_t *src, dcur *dst)
{
	for (uint32_t i = 0; i < m->n_src + m->n_dst; i++) {
		uint32_t l;
		uint32_t g = rh_msg_evacuate_region(m, i);
		bool is_src = i < m->n_src;
		if (local_of(d, g, &l) < 0)
			return rh_dgc_fail(d, "EVACUATE: region %u is not in partition %u", g,
			                   d->part.index);
		if (is_src ? d->r[l].kind != RH_REGION_OLD || !d->r[l].top
		           : d->r[l].kind != RH_REGION_FREE)
			return rh_dgc_fail(d, "EVACUATE: region %u is %s here, expected %s", g,
			                   d->r[l].kind == RH_REGION_FREE ? "free" : "in use",
			                   is_src ? "an old region" : "a free one");
		src[i] = l;
		if (!is_src)
			dst[i - m->n_src].region = g;
	}
	return 0;
}

static int on_evacuate(rh_dgc *d, const rh_msg_evacuate *m)
{
	uint64_t t0 = rh_now_ns();
	bool no_remark = m->flags & RH_EVAC_NO_REMARK;
	uint32_t *src = calloc(m->n_src + m->n_dst, sizeof *src);
	evac e = {.d = d, .no_remark = no_remark};
	e.dst = calloc(m->n_dst ? m->n_dst : 1, sizeof *e.dst);
	rh_evac_src *res = calloc(m->n_src, sizeof *res);
	uintptr_t *moved = NULL;
	size_t n_moved = 0, cap_moved = 0;
	/* Sources whose `moved` flag the cleanup resets: none until all are
	 * checked (security.M1). */
	uint32_t n_checked = 0;
	int rc = -1;
	if (!src || !e.dst || !res)
		rh_panic("tracer: out of memory for an EVACUATE");
	if (check_evacuate(d, m, src, e.dst) < 0)
		goto out;
	n_checked = m->n_src;
	e.n_dst = m->n_dst;

	uint64_t rescanned = 0;
	for (uint32_t i = 0; i < m->n_src; i++)
		if (remark(d, src[i], no_remark, &rescanned) < 0)
			goto out;
	uint64_t t1 = rh_now_ns();

	uint64_t copied = 0, objects = 0;
	uint64_t top = 0;
	for (uint32_t i = 0; i < m->n_src; i++) {
		treg *t = &d->r[src[i]];
		res[i].region = d->part.first_region + src[i];
		res[i].live_bytes = t->live;
		res[i].status = RH_EVAC_KEPT;
		/* All of a region moves or none of it: try the bumps first. */
		uint32_t c = e.cur;
		uint64_t tp = top;
		bool fits = true;
		for (size_t k = 0; k < t->n_order && fits; k++)
			fits = bump(&e, &c, &tp, rh_hdr_bytes(rh_hdr((void *)t->order[k])),
			            false) != 0;
		if (!fits)
			continue;
		moved = grow(moved, &cap_moved, n_moved + t->n_order, sizeof *moved);
		for (size_t k = 0; k < t->n_order; k++) {
			uintptr_t o = t->order[k];
			size_t bytes = rh_hdr_bytes(rh_hdr((void *)o));
			uintptr_t to = bump(&e, &e.cur, &top, bytes, true);
			memcpy((void *)to, (void *)o, bytes);
			*(uint64_t *)o = (uint64_t)to | RH_HDR_FWD;
			moved[n_moved++] = to;
			copied += bytes;
			objects++;
		}
		t->moved = 1;
		res[i].status = RH_EVAC_MOVED;
	}
	if (e.cur < e.n_dst)
		e.dst[e.cur].top = top;
	for (size_t k = 0; k < n_moved && !e.error; k++)
		if (rh_object_slots(&d->types, (void *)moved[k], fix_slot, &e) < 0) {
			rh_dgc_fail(d, "a moved object at %#lx does not parse",
			            (unsigned long)moved[k]);
			goto out;
		}
	if (e.error)
		goto out;
	if (e.dangling)
		rh_log(RH_LOG_WARN, "dgc",
		       "remark disabled: %llu references to unmarked objects left dangling",
		       (unsigned long long)e.dangling);

	for (size_t k = 0; k < e.n_pairs; k += RH_EVAC_REFS_MAX) {
		rh_msg r = {.type = RH_MSG_EVAC_REFS};
		r.u.evac_refs.id = m->id;
		r.u.evac_refs.n = (uint32_t)(e.n_pairs - k < RH_EVAC_REFS_MAX ? e.n_pairs - k
		                                                              : RH_EVAC_REFS_MAX);
		r.u.evac_refs.pairs = e.pairs + k;
		if (rh_dgc_send(d, &r) < 0)
			goto out;
	}
	rh_evac_dst *dres = calloc(m->n_dst ? m->n_dst : 1, sizeof *dres);
	if (!dres)
		rh_panic("tracer: out of memory");
	for (uint32_t i = 0; i < m->n_dst; i++)
		dres[i] = (rh_evac_dst){e.dst[i].region, (uint32_t)e.dst[i].top};
	rh_msg done = {.type = RH_MSG_EVACUATED};
	rh_msg_evacuated *ev = &done.u.evacuated;
	ev->id = m->id;
	ev->n_src = m->n_src;
	ev->n_dst = m->n_dst;
	ev->remark_ns = t1 - t0;
	ev->evac_ns = rh_now_ns() - t1;
	ev->bytes_copied = copied;
	ev->objects_copied = objects;
	ev->pages_rescanned = rescanned;
	ev->src = res;
	ev->dst = dres;
	rc = rh_dgc_send(d, &done);
	free(dres);
	pthread_mutex_lock(&d->lock);
	for (uint32_t i = 0; i < m->n_src; i++)
		if (res[i].status == RH_EVAC_MOVED)
			d->st.regions_evacuated++;
	d->st.bytes_copied += copied;
	pthread_mutex_unlock(&d->lock);
	/* Sources keep their forwarding headers until FREE; destinations are
	 * in use. The next REGIONS describes both. */
	for (uint32_t i = 0; i < m->n_src; i++) {
		treg *t = &d->r[src[i]];
		rh_dgc_reset_region(d, src[i]);
		t->n_rroots = 0;
		if (t->moved) {
			t->kind = RH_REGION_FREE;
			t->moved = 0;
			t->evacuated = 1;
		}
	}
	for (uint32_t i = 0; i < m->n_dst; i++) {
		treg *t = &d->r[src[m->n_src + i]];
		if (e.dst[i].top) {
			t->kind = RH_REGION_OLD;
			t->top = (uint32_t)e.dst[i].top;
			t->ident = 0;
		}
	}
out:
	for (uint32_t i = 0; i < n_checked; i++)
		d->r[src[i]].moved = 0;
	free(src);
	free(e.dst);
	free(e.pairs);
	free(res);
	free(moved);
	return rc;
}

int rh_dgc_handle(rh_dgc *d, const uint8_t *buf, size_t len)
{
	if (len && buf[0] == PSEUDO_TYPES) {
		rh_error err;
		rh_typetab_free(&d->types);
		rh_typetab_init(&d->types);
		if (rh_typetab_from_json(&d->types, (const char *)buf + 1, len - 1, &err) != RH_OK)
			return rh_dgc_fail(d, "type table: %s", err.msg);
		d->have_types = true;
		return 0;
	}
	rh_msg m;
	rh_error err;
	if (rh_msg_decode(buf, len, &m, &err) != RH_OK)
		return rh_dgc_fail(d, "%s", err.msg);
	switch (m.type) {
	case RH_MSG_REGIONS:
		return on_regions(d, &m.u.regions);
	case RH_MSG_ROOTS:
		return on_roots(d, &m.u.roots);
	case RH_MSG_FREE: {
		for (uint32_t i = 0; i < m.u.free.n; i++) {
			uint32_t l;
			if (local_of(d, rh_msg_free_region(&m.u.free, i), &l) == 0)
				forget_region(d, l);
		}
		/* flow.F1: the receiving thread freed the pages; the CPU
		 * server reuses the regions only after this. */
		rh_msg done = {.type = RH_MSG_FREE_OK, .seq = m.seq};
		return rh_dgc_send(d, &done);
	}
	case RH_MSG_PING: {
		rh_msg pong = m; /* flow.F1 */
		pong.type = RH_MSG_PONG;
		return rh_dgc_send(d, &pong);
	}
	case RH_MSG_EVACUATE:
		if (!d->have_types || d->full)
			return rh_dgc_fail(
			        d, "EVACUATE before the type table or during a full marking");
		return on_evacuate(d, &m.u.evacuate);
	case RH_MSG_FULL:
		if (!d->have_types)
			return rh_dgc_fail(d, "FULL before the type table");
		return m.u.full.phase == RH_FULL_END ? rh_dgc_full_end(d)
		                                     : rh_dgc_full_begin(d, &m.u.full);
	case RH_MSG_MARK_REFS:
		return rh_dgc_full_refs(d, &m.u.mark_refs);
	case RH_MSG_FIX_CARDS:
		if (!d->have_types || d->full)
			return rh_dgc_fail(
			        d, "FIX_CARDS before the type table or during a full marking");
		return rh_dgc_fix_cards(d, &m.u.fix_cards, m.seq);
	default:
		return rh_dgc_fail(d, "unexpected %s for the collector", rh_msg_type_name(m.type));
	}
}

/* True when no helper holds a region (called with lock held). */
static bool helpers_idle(rh_dgc *d)
{
	for (uint32_t i = 0; i < d->n_hx; i++)
		if (d->hx[i].region >= 0)
			return false;
	return true;
}

static void *helper_main(void *arg)
{
	mctx *w = arg;
	rh_dgc *d = w->d;
	pthread_mutex_lock(&d->lock);
	while (!d->hx_stop) {
		if (w->region < 0) {
			rh_cond_wait_ms(&d->cond, &d->lock, 100);
			continue;
		}
		uint32_t l = (uint32_t)w->region;
		pthread_mutex_unlock(&d->lock);
		mark_region(d, w, l);
		pthread_mutex_lock(&d->lock);
		/* tracer.T1: the flag is cleared under the lock it was set under. */
		d->r[l].marking = 0;
		w->region = -1;
		pthread_cond_broadcast(&d->cond);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

bool rh_dgc_mark_next(rh_dgc *d)
{
	int64_t l = d->have_types && !d->full ? pick(d) : -1;
	if (l >= 0)
		mark_region(d, &d->mx, (uint32_t)l);
	return l >= 0;
}

static void *dgc_main(void *arg)
{
	rh_dgc *d = arg;
	pthread_mutex_lock(&d->lock);
	while (!d->stop && !d->failed) {
		if (d->in_head) {
			/* Messages change region state: helpers give their regions
			 * back first (they stop at their next look at the inbox; tracer.T2). */
			if (!helpers_idle(d)) {
				rh_cond_wait_ms(&d->cond, &d->lock, 10);
				continue;
			}
			inmsg *in = d->in_head;
			d->in_head = in->next;
			if (!d->in_head)
				d->in_tail = NULL;
			pthread_mutex_unlock(&d->lock);
			rh_dgc_handle(d, in->buf, in->len);
			free(in);
			pthread_mutex_lock(&d->lock);
			continue;
		}
		if (d->full_conc && !d->failed) {
			/* fullconc.T3: one slice, then the inbox again. */
			pthread_mutex_unlock(&d->lock);
			bool worked = rh_dgc_full_step(d);
			pthread_mutex_lock(&d->lock);
			if (!worked)
				rh_cond_wait_ms(&d->cond, &d->lock, 100);
			continue;
		}
		bool can = d->have_types && !d->full;
		for (uint32_t i = 0; can && i < d->n_hx; i++) {
			if (d->hx[i].region >= 0)
				continue;
			int64_t hl = pick(d);
			if (hl < 0)
				break;
			/* tracer.T1: flagged under the lock; pick() skips it until cleared. */
			d->r[hl].marking = 1;
			d->hx[i].region = hl;
			pthread_cond_broadcast(&d->cond);
		}
		int64_t l = can ? pick(d) : -1;
		if (l < 0) {
			rh_cond_wait_ms(&d->cond, &d->lock, 100);
			continue;
		}
		pthread_mutex_unlock(&d->lock);
		mark_region(d, &d->mx, (uint32_t)l);
		pthread_mutex_lock(&d->lock);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

int rh_dgc_new(rh_dgc **out, const rh_config *cfg, const rh_partition *part, rh_region_meta *meta,
               rh_dgc_send_fn send, void *send_ctx, rh_error *err)
{
	rh_dgc *d = calloc(1, sizeof *d);
	if (!d)
		return rh_err_set(err, RH_ENOMEM, "tracer: out of memory");
	d->cfg = cfg;
	d->part = *part;
	d->meta = meta;
	d->region_size = cfg->region_size;
	d->region_shift = (uint32_t)__builtin_ctzll(cfg->region_size);
	d->pages = (uint32_t)(cfg->region_size / RH_PAGE_SIZE);
	d->send = send;
	d->send_ctx = send_ctx;
	d->r = calloc(part->n_regions, sizeof *d->r);
	d->marks = calloc(part->size / 64 / 8 + 1, 8);
	d->starts = calloc(cfg->region_size / 64 / 8 + 1, 8);
	d->n_hx = cfg->tracer_threads > 1 ? (uint32_t)cfg->tracer_threads - 1 : 0;
	d->hx = calloc(d->n_hx ? d->n_hx : 1, sizeof *d->hx);
	bool ok = d->hx != NULL;
	for (uint32_t i = 0; ok && i <= d->n_hx; i++) {
		mctx *w = i ? &d->hx[i - 1] : &d->mx;
		w->d = d;
		w->region = -1;
		w->in_set = calloc(part->n_regions, 1);
		w->live_tmp = calloc(part->n_regions, sizeof *w->live_tmp);
		rh_marker_init(&w->mk);
		ok = w->in_set && w->live_tmp;
	}
	d->logged = calloc(d->pages, 1);
	d->n_parts = (uint32_t)cfg->n_servers;
	d->parts = calloc(d->n_parts, sizeof *d->parts);
	d->out = calloc(d->n_parts, sizeof *d->out);
	d->n_out = calloc(d->n_parts, sizeof *d->n_out);
	d->cap_out = calloc(d->n_parts, sizeof *d->cap_out);
	d->tams = calloc(part->n_regions, sizeof *d->tams);
	for (uint32_t p = 0; d->parts && p < d->n_parts; p++)
		rh_partition_of(cfg, p, &d->parts[p]);
	rh_typetab_init(&d->types);
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	if (!ok || !d->r || !d->marks || !d->starts || !d->logged || !d->parts || !d->out ||
	    !d->n_out || !d->cap_out || !d->tams) {
		rh_dgc_close(d);
		return rh_err_set(err, RH_ENOMEM, "tracer: out of memory for marking state");
	}
	*out = d;
	return RH_OK;
}

int rh_dgc_open(rh_dgc **out, const rh_config *cfg, const rh_partition *part, rh_region_meta *meta,
                rh_dgc_send_fn send, void *send_ctx, rh_error *err)
{
	rh_dgc *d;
	int rc = rh_dgc_new(&d, cfg, part, meta, send, send_ctx, err);
	if (rc != RH_OK)
		return rc;
	if (pthread_create(&d->thr, NULL, dgc_main, d) != 0) {
		rh_dgc_close(d);
		return rh_err_set(err, RH_ENOMEM, "tracer: cannot start the marking thread");
	}
	d->started = true;
	for (uint32_t i = 0; i < d->n_hx; i++) {
		if (pthread_create(&d->hx[i].thr, NULL, helper_main, &d->hx[i]) != 0) {
			rh_dgc_close(d);
			return rh_err_set(err, RH_ENOMEM, "tracer: cannot start marking thread %u",
			                  i + 2);
		}
		d->hx[i].started = true;
	}
	*out = d;
	return RH_OK;
}

void rh_dgc_close(rh_dgc *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	d->stop = true;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
	if (d->started)
		pthread_join(d->thr, NULL);
	/* Helpers stop only now: the collector thread may have been waiting
	 * for them to hand their regions back. */
	pthread_mutex_lock(&d->lock);
	d->hx_stop = true;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
	for (uint32_t i = 0; d->hx && i < d->n_hx; i++)
		if (d->hx[i].started)
			pthread_join(d->hx[i].thr, NULL);
	while (d->in_head) {
		inmsg *n = d->in_head->next;
		free(d->in_head);
		d->in_head = n;
	}
	for (uint32_t l = 0; d->r && l < d->part.n_regions; l++) {
		free(d->r[l].order);
		free(d->r[l].deferred);
		free(d->r[l].roots);
		free(d->r[l].rroots);
	}
	for (uint32_t i = 0; i <= d->n_hx; i++) {
		mctx *w = i ? (d->hx ? &d->hx[i - 1] : NULL) : &d->mx;
		if (!w)
			break;
		rh_marker_free(&w->mk);
		free(w->in_set);
		free(w->live_tmp);
	}
	free(d->hx);
	rh_typetab_free(&d->types);
	for (uint32_t p = 0; d->out && p < d->n_parts; p++)
		free(d->out[p]);
	free(d->out);
	free(d->n_out);
	free(d->cap_out);
	free(d->tams);
	free(d->parts);
	free(d->r);
	free(d->marks);
	free(d->starts);
	free(d->logged);
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->cond);
	free(d);
}

static int post(rh_dgc *d, uint8_t first, const uint8_t *bytes, size_t len, rh_error *err)
{
	size_t total = len + (first ? 1 : 0);
	inmsg *in = malloc(sizeof *in + total);
	if (!in)
		return rh_err_set(err, RH_ENOMEM, "tracer: out of memory queueing a message");
	in->next = NULL;
	in->len = total;
	if (first)
		in->buf[0] = first;
	memcpy(in->buf + (first ? 1 : 0), bytes, len);
	pthread_mutex_lock(&d->lock);
	if (d->in_tail)
		d->in_tail->next = in;
	else
		__atomic_store_n(&d->in_head, in, __ATOMIC_RELEASE);
	d->in_tail = in;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
	return RH_OK;
}

int rh_dgc_post(rh_dgc *d, const uint8_t *msg, size_t len, rh_error *err)
{
	return post(d, 0, msg, len, err);
}

int rh_dgc_set_types(rh_dgc *d, const char *json, size_t len, rh_error *err)
{
	return post(d, PSEUDO_TYPES, (const uint8_t *)json, len, err);
}

int rh_dgc_status(rh_dgc *d, rh_error *err)
{
	pthread_mutex_lock(&d->lock);
	int rc = d->failed;
	if (rc && err)
		*err = d->fail_err;
	pthread_mutex_unlock(&d->lock);
	return rc;
}

void rh_dgc_stats_get(rh_dgc *d, rh_dgc_stats *out)
{
	pthread_mutex_lock(&d->lock);
	*out = d->st;
	pthread_mutex_unlock(&d->lock);
}
