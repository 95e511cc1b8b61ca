/* Full-heap marking on the tracers (docs/distributed-gc.md, "Full-heap
 * marking"): every tracer marks its partition from the CPU server's roots,
 * sends references into other partitions to their owners in MARK_REFS
 * batches relayed by the CPU server, and acknowledges each batch it
 * received once its own outgoing references are sent; at FULL END dead
 * objects become fillers and live bytes per region go back in FULL_DONE.
 */
#include <stdio.h>
#include <string.h>

#include "gc/bitmap.h"
#include "gc/object.h"
#include "memserver/dgc_int.h"

/* A humongous region's TAMS: its object is the snapshot's, at its start. */
#define TAMS_HUGE UINT32_MAX

/* Full marking runs on a current image (the CPU server flushed every page
 * first): a header that does not parse is a protocol error, not a page
 * still on its way. A concurrent marking (fullconc.T2) accepts only the
 * snapshot: objects below their region's TAMS in a region that was old or
 * humongous at BEGIN; what lies above is live and is not scanned. */
static int valid_full(void *ctx, uintptr_t obj)
{
	rh_dgc *d = ctx;
	if (obj - d->part.base >= d->part.size)
		return 0;
	uint32_t l = (uint32_t)((obj - d->part.base) >> d->region_shift);
	const treg *t = &d->r[l];
	uintptr_t s = rstart(d, l);
	uint64_t h = rh_hdr((void *)obj);
	if (rh_hdr_is_fwd(h))
		return 0;
	if (d->full_conc) {
		if (d->tams[l] == TAMS_HUGE)
			return obj == s && rh_object_valid(&d->types, (void *)obj,
			                                   d->part.base + d->part.size - obj);
		return obj < s + d->tams[l] &&
		       rh_object_valid(&d->types, (void *)obj, s + d->tams[l] - obj);
	}
	if (t->kind == RH_REGION_HUMONGOUS)
		return obj == s &&
		       rh_object_valid(&d->types, (void *)obj, d->part.base + d->part.size - obj);
	if (t->kind != RH_REGION_OLD && t->kind != RH_REGION_EDEN)
		return 0;
	return obj < s + t->top && rh_object_valid(&d->types, (void *)obj, s + t->top - obj);
}

static int send_out(rh_dgc *d, uint32_t p)
{
	for (size_t k = 0; k < d->n_out[p]; k += RH_MARK_REFS_MAX) {
		rh_msg m = {.type = RH_MSG_MARK_REFS};
		size_t n = d->n_out[p] - k < RH_MARK_REFS_MAX ? d->n_out[p] - k : RH_MARK_REFS_MAX;
		m.u.mark_refs = (rh_msg_mark_refs){p, 0, (uint32_t)n, d->out[p] + k};
		if (rh_dgc_send(d, &m) < 0)
			return -1;
	}
	d->n_out[p] = 0;
	return 0;
}

/* A reference into another partition: batched to its owner, through the
 * CPU server. */
static void out_ref(void *ctx, uintptr_t ref)
{
	rh_dgc *d = ctx;
	for (uint32_t p = 0; p < d->n_parts; p++)
		if (ref - d->parts[p].base < d->parts[p].size) {
			/* Concurrent: a reference into this partition outside the
			 * snapshot's regions (young, or taken since) is live and
			 * not the marking's (fullconc.T2). Stopped, it would be a
			 * dangling reference: the CPU server refuses the batch. */
			if (p == d->part.index && d->full_conc)
				return;
			d->out[p] =
			        grow(d->out[p], &d->cap_out[p], d->n_out[p] + 1, sizeof **d->out);
			d->out[p][d->n_out[p]++] = ref;
			return;
		}
}

int rh_dgc_full_begin(rh_dgc *d, const rh_msg_full *m)
{
	if (d->full)
		return rh_dgc_fail(d, "FULL BEGIN while a full marking is in progress");
	bool conc = m->phase == RH_FULL_BEGIN_CONC;
	for (uint32_t l = 0; l < d->part.n_regions; l++) {
		rh_dgc_reset_region(d, l);
		d->r[l].n_roots = d->r[l].n_rroots = 0;
		d->r[l].have_roots = 0;
	}
	rh_marker *mk = &d->mx.mk;
	rh_marker_reset(mk);
	mk->tt = &d->types;
	mk->heap_lo = d->part.base;
	mk->heap_size = d->part.size;
	mk->region_shift = d->region_shift;
	for (uint32_t l = 0; l < d->part.n_regions; l++) {
		uint8_t k = d->r[l].kind;
		/* fullconc.T2: the snapshot is the old generation as the last
		 * REGIONS gave it; young regions are the CPU server's roots. */
		d->mx.in_set[l] = k == RH_REGION_OLD || k == RH_REGION_HUMONGOUS ||
		                  (!conc && k == RH_REGION_EDEN);
		d->tams[l] = !conc                      ? 0
		             : k == RH_REGION_OLD       ? d->r[l].top
		             : k == RH_REGION_HUMONGOUS ? TAMS_HUGE
		                                        : 0;
	}
	mk->in_set = d->mx.in_set;
	mk->mark_bits = d->marks;
	mk->order_kind = RH_ORDER_DFS;
	memset(d->mx.live_tmp, 0, d->part.n_regions * sizeof *d->mx.live_tmp);
	mk->live_bytes = d->mx.live_tmp;
	mk->valid = valid_full;
	mk->valid_ctx = d;
	mk->outside = out_ref;
	mk->ext_lo = d->cfg->heap_base;
	mk->ext_size = d->cfg->heap_size;
	d->full = true;
	d->full_conc = conc;
	d->full_pending = 0;
	d->full_ignored = 0;
	d->full_id = m->id;
	d->full_t0 = rh_now_ns();
	return 0;
}

/* What the batches taken so far caused goes out, then their
 * acknowledgement: the CPU server counts the former before it sees the
 * latter (termination). */
static int ack_pending(rh_dgc *d)
{
	for (uint32_t p = 0; p < d->n_parts; p++)
		if (d->n_out[p] && send_out(d, p) < 0)
			return -1;
	if (!d->full_pending)
		return 0;
	rh_msg ack = {.type = RH_MSG_MARK_ACK};
	ack.u.mark_ack.batches = d->full_pending;
	d->full_pending = 0;
	return rh_dgc_send(d, &ack);
}

bool rh_dgc_full_step(rh_dgc *d)
{
	rh_marker *mk = &d->mx.mk;
	if (!d->full_conc || (!mk->work_n && !d->full_pending))
		return false;
	int more = rh_marker_drain_some(mk, STEP);
	/* fullconc.T2: what the snapshot does not hold is left alone (an
	 * object above TAMS, or a word read while a write-back rewrote it:
	 * SATB logged the value it replaced). */
	d->full_ignored += mk->n_deferred;
	mk->n_deferred = 0;
	if (mk->error) {
		rh_dgc_fail(d, "full marking met a corrupt object header");
		return true;
	}
	if (!more)
		ack_pending(d);
	return true;
}

int rh_dgc_full_refs(rh_dgc *d, const rh_msg_mark_refs *m)
{
	if (!d->full)
		return rh_dgc_fail(d, "MARK_REFS outside a full marking");
	if (m->partition != d->part.index)
		return rh_dgc_fail(d, "MARK_REFS for partition %u sent to partition %u",
		                   m->partition, d->part.index);
	for (uint32_t i = 0; i < m->n; i++) {
		uintptr_t a = (uintptr_t)rh_msg_mark_refs_get(m, i);
		if (!valid_full(d, a)) {
			/* A concurrent marking's roots may lie outside the
			 * snapshot (a relayed field read above TAMS): live,
			 * not the marking's (fullconc.T2). */
			if (d->full_conc) {
				d->full_ignored++;
				continue;
			}
			return rh_dgc_fail(d, "MARK_REFS: %#lx is not an object in partition %u",
			                   (unsigned long)a, d->part.index);
		}
		rh_marker_root(&d->mx.mk, a);
	}
	/* fullconc.T3: traced in slices between messages, acknowledged when
	 * the work list runs dry. */
	if (d->full_conc) {
		d->full_pending++;
		return 0;
	}
	rh_marker_drain(&d->mx.mk);
	if (d->mx.mk.n_deferred) {
		uintptr_t o = d->mx.mk.deferred[0];
		const treg *t = &d->r[(o - d->part.base) >> d->region_shift];
		return rh_dgc_fail(
		        d,
		        "full marking met %#lx (header %#llx), which does not parse in its "
		        "region (kind %u, top %#x)",
		        (unsigned long)o, (unsigned long long)rh_hdr((void *)o), t->kind, t->top);
	}
	d->full_pending = 1;
	return ack_pending(d);
}

typedef struct full_refs_ctx {
	rh_dgc *d;
	rh_ref_pair *pairs;
	size_t n, cap;
} full_refs_ctx;

static void cross_ref(void *vctx, void **slot)
{
	full_refs_ctx *c = vctx;
	uintptr_t v = (uintptr_t)*slot;
	if ((v & 7) || v - c->d->cfg->heap_base >= c->d->cfg->heap_size ||
	    ((uintptr_t)slot >> c->d->region_shift) == (v >> c->d->region_shift))
		return;
	c->pairs = grow(c->pairs, &c->cap, c->n + 1, sizeof *c->pairs);
	c->pairs[c->n++] = (rh_ref_pair){(uint64_t)(uintptr_t)slot, v};
}

/* After termination: dead objects become fillers, live ones report their
 * cross-region references, and the CPU server learns each region's live
 * bytes. */
int rh_dgc_full_end(rh_dgc *d)
{
	if (!d->full)
		return rh_dgc_fail(d, "FULL END without a full marking");
	full_refs_ctx c = {.d = d};
	uint64_t t0 = rh_now_ns();
	rh_region_live *ents = malloc(d->part.n_regions * sizeof *ents);
	if (!ents)
		rh_panic("tracer: out of memory");
	uint32_t n = 0;
	uint64_t total = 0;
	for (uint32_t l = 0; l < d->part.n_regions; l++) {
		treg *t = &d->r[l];
		uintptr_t s = rstart(d, l);
		if (t->kind == RH_REGION_HUMONGOUS) {
			/* fullconc.T5: one taken since a concurrent BEGIN is live. */
			bool snap = !d->full_conc || d->tams[l] == TAMS_HUGE;
			uint64_t live = 0;
			if (!snap || rh_bit_get(d->marks, (s - d->part.base) >> 3)) {
				live = rh_hdr_bytes(rh_hdr((void *)s));
				rh_object_slots(&d->types, (void *)s, cross_ref, &c);
			}
			ents[n++] = (rh_region_live){d->part.first_region + l, live};
			total += live;
			continue;
		}
		/* fullconc.T5: young regions stay the CPU server's. */
		if (t->kind != RH_REGION_OLD && (d->full_conc || t->kind != RH_REGION_EDEN))
			continue;
		uint64_t live = 0;
		uintptr_t dead = 0, end = s + t->top;
		/* Marks decide below here; what lies above was allocated since
		 * a concurrent BEGIN and is live. */
		uintptr_t lim = d->full_conc ? s + d->tams[l] : end;
		for (uintptr_t p = s; p < end;) {
			uint64_t h = rh_hdr((void *)p);
			if (rh_hdr_is_fwd(h) || !rh_object_valid(&d->types, (void *)p, end - p)) {
				free(ents);
				free(c.pairs);
				return rh_dgc_fail(
				        d, "region %u does not parse at +%#lx after a full marking",
				        d->part.first_region + l, (unsigned long)(p - s));
			}
			size_t bytes = rh_hdr_bytes(h);
			bool alive = (p >= lim || rh_bit_get(d->marks, (p - d->part.base) >> 3)) &&
			             rh_hdr_type(h) != RH_FILLER_TYPE;
			if (alive) {
				if (dead)
					rh_fill((void *)dead, p - dead);
				dead = 0;
				live += bytes;
				rh_object_slots(&d->types, (void *)p, cross_ref, &c);
			} else if (!dead) {
				dead = p;
			}
			p += bytes;
		}
		if (dead)
			rh_fill((void *)dead, end - dead);
		ents[n++] = (rh_region_live){d->part.first_region + l, live};
		total += live;
	}
	int rc = 0;
	uint64_t t1 = rh_now_ns();
	for (size_t k = 0; k < c.n && rc == 0; k += RH_EVAC_REFS_MAX) {
		rh_msg r = {.type = RH_MSG_EVAC_REFS};
		r.u.evac_refs.id = d->full_id;
		r.u.evac_refs.n =
		        (uint32_t)(c.n - k < RH_EVAC_REFS_MAX ? c.n - k : RH_EVAC_REFS_MAX);
		r.u.evac_refs.pairs = c.pairs + k;
		rc = rh_dgc_send(d, &r);
	}
	uint64_t ns = rh_now_ns() - d->full_t0;
	uint32_t off = 0;
	do {
		uint32_t k = n - off < RH_FULL_DONE_MAX ? n - off : RH_FULL_DONE_MAX;
		rh_msg m = {.type = RH_MSG_FULL_DONE};
		m.u.full_done = (rh_msg_full_done){
		        d->full_id,
		        total,
		        ns,
		        (off == 0 ? RH_FULL_DONE_FIRST : 0) | (off + k == n ? RH_FULL_DONE_LAST : 0),
		        k,
		        ents + off};
		if (rc == 0)
			rc = rh_dgc_send(d, &m);
		off += k;
	} while (off < n);
	/* Which part of the CPU server's wait this pass was, for the debug
	 * log: the walk (fillers, references) or the messages. */
	rh_log(RH_LOG_DEBUG, "tracer",
	       "full marking's end: walked in %.1f ms, %zu cross-region references sent in %.1f ms",
	       (double)(t1 - t0) / 1e6, c.n, (double)(rh_now_ns() - t1) / 1e6);
	pthread_mutex_lock(&d->lock);
	d->st.bytes_traced += total;
	d->st.mark_ns += ns;
	pthread_mutex_unlock(&d->lock);
	/* Every layout changed (fillers): the next REGIONS brings new idents. */
	for (uint32_t l = 0; l < d->part.n_regions; l++)
		rh_dgc_reset_region(d, l);
	d->mx.mk.outside = NULL;
	if (d->full_conc)
		rh_log(RH_LOG_DEBUG, "tracer",
		       "concurrent full marking: %llu references outside the snapshot left alone",
		       (unsigned long long)d->full_ignored);
	d->full = false;
	d->full_conc = false;
	free(ents);
	free(c.pairs);
	return rc;
}

/* ---------------------------------------------------------------- thread */
