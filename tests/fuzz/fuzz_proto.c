/* libFuzzer harness for the control-path message decoder (wire/proto.c).
 *
 * Both ends of the control path decode whatever arrives, so the decoder
 * must reject malformed messages with RH_EPEER and accept only canonical
 * ones: re-encoding a decoded message must give back the input bytes. The
 * one sanctioned difference is ERROR text, where the decoder replaces bytes
 * outside printable ASCII with '?' (the text ends up in logs).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "wire/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int printable(uint8_t c)
{
	return c >= 0x20 && c < 0x7f;
}

/* The decoder points into the buffer (little-endian wire layout); the
 * encoder wants host-order arrays of the structs in proto.h. Replaces the
 * pointers in *m with such arrays (*a, *b to free). Nonzero: out of memory. */
static int to_host(rh_msg *m, void **a, void **b)
{
	switch (m->type) {
	case RH_MSG_FREE: {
		uint32_t *r = *a = malloc(((size_t)m->u.free.n + 1) * sizeof *r);
		if (!r)
			return -1;
		for (uint32_t i = 0; i < m->u.free.n; i++)
			r[i] = rh_msg_free_region(&m->u.free, i);
		m->u.free.regions = (const uint8_t *)r;
		return 0;
	}
	case RH_MSG_REGIONS: {
		rh_region_desc *d = *a = malloc(((size_t)m->u.regions.n + 1) * sizeof *d);
		if (!d)
			return -1;
		for (uint32_t i = 0; i < m->u.regions.n; i++)
			rh_msg_regions_get(&m->u.regions, i, &d[i]);
		m->u.regions.ents = d;
		return 0;
	}
	case RH_MSG_ROOTS: {
		uint32_t *o = *a = malloc(((size_t)m->u.roots.n + 1) * sizeof *o);
		if (!o)
			return -1;
		for (uint32_t i = 0; i < m->u.roots.n; i++)
			o[i] = rh_msg_roots_get(&m->u.roots, i);
		m->u.roots.offs = o;
		return 0;
	}
	case RH_MSG_MARKED: {
		rh_marked_desc *d = *a = malloc(((size_t)m->u.marked.n + 1) * sizeof *d);
		if (!d)
			return -1;
		for (uint32_t i = 0; i < m->u.marked.n; i++)
			rh_msg_marked_get(&m->u.marked, i, &d[i]);
		m->u.marked.ents = d;
		return 0;
	}
	case RH_MSG_EVACUATE: {
		size_t n = (size_t)m->u.evacuate.n_src + m->u.evacuate.n_dst;
		uint32_t *r = *a = malloc((n + 1) * sizeof *r);
		if (!r)
			return -1;
		for (size_t i = 0; i < n; i++)
			r[i] = rh_msg_evacuate_region(&m->u.evacuate, (uint32_t)i);
		m->u.evacuate.regions = r;
		return 0;
	}
	case RH_MSG_EVAC_REFS: {
		rh_ref_pair *p = *a = malloc(((size_t)m->u.evac_refs.n + 1) * sizeof *p);
		if (!p)
			return -1;
		for (uint32_t i = 0; i < m->u.evac_refs.n; i++)
			rh_msg_evac_refs_get(&m->u.evac_refs, i, &p[i]);
		m->u.evac_refs.pairs = p;
		return 0;
	}
	case RH_MSG_EVACUATED: {
		rh_msg_evacuated *e = &m->u.evacuated;
		rh_evac_src *s = *a = malloc(((size_t)e->n_src + 1) * sizeof *s);
		rh_evac_dst *d = *b = malloc(((size_t)e->n_dst + 1) * sizeof *d);
		if (!s || !d)
			return -1;
		for (uint32_t i = 0; i < e->n_src; i++)
			rh_msg_evacuated_src(e, i, &s[i]);
		for (uint32_t i = 0; i < e->n_dst; i++)
			rh_msg_evacuated_dst(e, i, &d[i]);
		e->src = s;
		e->dst = d;
		return 0;
	}
	case RH_MSG_MARK_REFS: {
		uint64_t *v = *a = malloc(((size_t)m->u.mark_refs.n + 1) * sizeof *v);
		if (!v)
			return -1;
		for (uint32_t i = 0; i < m->u.mark_refs.n; i++)
			v[i] = rh_msg_mark_refs_get(&m->u.mark_refs, i);
		m->u.mark_refs.addrs = v;
		return 0;
	}
	case RH_MSG_FULL_DONE: {
		rh_region_live *e = *a = malloc(((size_t)m->u.full_done.n + 1) * sizeof *e);
		if (!e)
			return -1;
		for (uint32_t i = 0; i < m->u.full_done.n; i++)
			rh_msg_full_done_get(&m->u.full_done, i, &e[i]);
		m->u.full_done.ents = e;
		return 0;
	}
	case RH_MSG_FIX_CARDS: {
		/* One block for the three arrays, the 8-byte aligned ones first. */
		rh_msg_fix_cards *f = &m->u.fix_cards;
		size_t nw = f->n_writes, nc = f->n_cards, nm = f->n_moved;
		uint8_t *blk = *a = malloc(nw * sizeof(rh_slot_write) + nc * 8 + nm * 4 + 1);
		if (!blk)
			return -1;
		rh_slot_write *w = (rh_slot_write *)(void *)blk;
		uint64_t *c = (uint64_t *)(void *)(blk + nw * sizeof *w);
		uint32_t *mv = (uint32_t *)(void *)(blk + nw * sizeof *w + nc * 8);
		for (uint32_t i = 0; i < f->n_writes; i++)
			rh_msg_fix_cards_write(f, i, &w[i]);
		for (uint32_t i = 0; i < f->n_cards; i++)
			c[i] = rh_msg_fix_cards_card(f, i);
		for (uint32_t i = 0; i < f->n_moved; i++)
			mv[i] = rh_msg_fix_cards_moved(f, i);
		f->writes = w;
		f->cards = c;
		f->moved = mv;
		return 0;
	}
	case RH_MSG_CARDS_FIXED: {
		rh_fix_ent *e = *a = malloc(((size_t)m->u.cards_fixed.n + 1) * sizeof *e);
		if (!e)
			return -1;
		for (uint32_t i = 0; i < m->u.cards_fixed.n; i++)
			rh_msg_cards_fixed_get(&m->u.cards_fixed, i, &e[i]);
		m->u.cards_fixed.ents = e;
		return 0;
	}
	default:
		return 0;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	rh_msg m;
	rh_error err = {0};
	int rc = rh_msg_decode(data, size, &m, &err);
	if (rc != RH_OK) {
		if (rc != RH_EPEER || err.code != rc || strncmp(err.msg, "protocol: ", 10) != 0)
			rh_panic("fuzz_proto: rejected with status %d and message \"%s\"", rc,
			         err.msg);
		return 0;
	}
	if (m.type == 0 || m.type > RH_MSG_TYPE_MAX)
		rh_panic("fuzz_proto: accepted unknown type %u", m.type);

	void *host = NULL, *host2 = NULL;
	if (to_host(&m, &host, &host2) != 0) {
		free(host);
		free(host2);
		return 0;
	}
	/* Room to spare, so an encoding longer than the input shows as such. */
	size_t cap = size + 64;
	uint8_t *out = malloc(cap);
	if (!out)
		rh_panic("fuzz_proto: out of memory");
	size_t n = rh_msg_encode(&m, out, cap);
	if (n != size)
		rh_panic("fuzz_proto: decoded %s of %zu bytes re-encodes to %zu bytes",
		         rh_msg_type_name(m.type), size, n);
	size_t text = m.type == RH_MSG_ERROR ? RH_PROTO_HDR + 8 : size;
	if (memcmp(out, data, text) != 0)
		rh_panic("fuzz_proto: decoded %s re-encodes to different bytes",
		         rh_msg_type_name(m.type));
	for (size_t i = text; i < size; i++) {
		if (out[i] != (printable(data[i]) ? data[i] : '?'))
			rh_panic("fuzz_proto: ERROR text byte %zu: sent 0x%02x, re-encoded 0x%02x",
			         i - text, data[i], out[i]);
	}
	free(out);
	free(host);
	free(host2);
	return 0;
}
