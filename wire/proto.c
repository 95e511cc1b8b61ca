/* The control-path codec (docs/protocol.md). Every message's byte layout
 * is declared once, in wire/table.h; rh_msg_encode, rh_msg_decode and the
 * element accessors all walk it, so they cannot disagree. What the
 * table cannot say (flag sets, kinds, alignment, distinct regions) is
 * checked per type after the layout, in check(). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "wire/proto.h"
#include "wire/table.h"

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}
static uint32_t get32(const uint8_t *p)
{
	uint32_t v = 0;
	for (int i = 3; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}
static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

const char *rh_msg_type_name(unsigned type)
{
	return type >= 1 && type <= RH_MSG_TYPE_MAX ? layouts[type].name : "?";
}

/* --- Walking it ------------------------------------------------------------- */

/* Host members are read and written with memcpy: the member may be any
 * of the four widths, and no alignment is assumed of the caller's arrays. */
static inline uint64_t host_get(const void *base, const field *f)
{
	const uint8_t *p = (const uint8_t *)base + f->off;
	uint8_t v8;
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;
	switch (f->host) {
	case 1:
		memcpy(&v8, p, 1);
		return v8;
	case 2:
		memcpy(&v16, p, 2);
		return v16;
	case 4:
		memcpy(&v32, p, 4);
		return v32;
	case 8:
		memcpy(&v64, p, 8);
		return v64;
	}
	return 0; /* RESERVED */
}

static inline void host_set(void *base, const field *f, uint64_t v)
{
	uint8_t *p = (uint8_t *)base + f->off;
	uint8_t v8 = (uint8_t)v;
	uint16_t v16 = (uint16_t)v;
	uint32_t v32 = (uint32_t)v;
	switch (f->host) {
	case 1:
		memcpy(p, &v8, 1);
		break;
	case 2:
		memcpy(p, &v16, 2);
		break;
	case 4:
		memcpy(p, &v32, 4);
		break;
	case 8:
		memcpy(p, &v, 8);
		break;
	}
}

static inline void wire_put(uint8_t *p, unsigned kind, uint64_t v)
{
	switch (WIDTH(kind)) {
	case 1:
		*p = (uint8_t)v;
		break;
	case 2:
		put16(p, (uint16_t)v);
		break;
	case 4:
		put32(p, kind == Z32 ? 0 : (uint32_t)v);
		break;
	case 8:
		put64(p, v);
		break;
	}
}

static inline uint64_t wire_get(const uint8_t *p, unsigned kind)
{
	switch (WIDTH(kind)) {
	case 1:
		return *p;
	case 2:
		return get16(p);
	case 4:
		return get32(p);
	}
	return get64(p);
}

/* Write fields from host struct s to p; returns the bytes written. */
static size_t put_fields(uint8_t *p, const field *f, unsigned n, const void *s)
{
	size_t off = 0;
	for (unsigned i = 0; i < n; i++) {
		wire_put(p + off, f[i].kind, host_get(s, &f[i]));
		off += WIDTH(f[i].kind);
	}
	return off;
}

/* Read fields from p into host struct s (if not NULL). The first reserved
 * field that is not zero is returned through *bad (its offset + 1). */
static size_t get_fields(const uint8_t *p, const field *f, unsigned n, void *s, size_t *bad)
{
	size_t off = 0;
	for (unsigned i = 0; i < n; i++) {
		uint64_t v = wire_get(p + off, f[i].kind);
		if (f[i].kind == Z32) {
			if (v && bad && !*bad)
				*bad = off + 1;
		} else if (s) {
			host_set(s, &f[i], v);
		}
		off += WIDTH(f[i].kind);
	}
	return off;
}

static uint64_t count_of(const void *s, const array *a)
{
	uint64_t n = *(const uint32_t *)(const void *)((const uint8_t *)s + a->count);
	if (a->count2 != NO_COUNT)
		n += *(const uint32_t *)(const void *)((const uint8_t *)s + a->count2);
	return n;
}

static const void *ptr_get(const void *s, const array *a)
{
	const void *v;
	memcpy(&v, (const uint8_t *)s + a->ptr, sizeof v);
	return v;
}

static void ptr_set(void *s, const array *a, const void *v)
{
	memcpy((uint8_t *)s + a->ptr, &v, sizeof v);
}

/* Element i of a decoded array into its host struct. A scalar's is read
 * directly: the full markings' MARK_REFS are read an address at a time. */
static inline void elem_get(const elem *e, const void *wire, uint32_t i, void *out)
{
	if (e->n == 1) {
		unsigned w = WIDTH(e->f[0].kind);
		host_set(out, &e->f[0], wire_get((const uint8_t *)wire + w * (size_t)i, w));
		return;
	}
	get_fields((const uint8_t *)wire + elem_size(e) * (size_t)i, e->f, e->n, out, NULL);
}

static int has_reserved(const elem *e)
{
	for (unsigned i = 0; i < e->n; i++)
		if (e->f[i].kind == Z32)
			return 1;
	return 0;
}

/* The payload a message needs, in 64 bits (counts are peer-controlled). */
static uint64_t payload_size(const layout *l, const void *s, size_t text)
{
	uint64_t want = fixed_size(l->f, l->n) + (l->text ? 4 + text : 0);
	for (unsigned k = 0; k < l->n_arrays; k++)
		want += count_of(s, &l->a[k]) * elem_size(l->a[k].e);
	return want;
}

size_t rh_msg_encode(const rh_msg *m, uint8_t *buf, size_t cap)
{
	if (m->type < 1 || m->type > RH_MSG_TYPE_MAX)
		return 0;
	const layout *l = &layouts[m->type];
	const void *s = &m->u;
	size_t text = l->text ? strnlen(m->u.error.text, sizeof m->u.error.text - 1) : 0;
	uint64_t len = payload_size(l, s, text);
	if (len > RH_PROTO_MAX - RH_PROTO_HDR || cap < RH_PROTO_HDR + len)
		return 0;
	if (m->type == RH_MSG_TYPES && m->u.types.len > RH_PROTO_CHUNK)
		return 0;
	uint8_t *p = buf + RH_PROTO_HDR;
	p += put_fields(p, l->f, l->n, s);
	if (l->text) {
		put32(p, (uint32_t)text);
		memcpy(p + 4, m->u.error.text, text);
	}
	for (unsigned k = 0; k < l->n_arrays; k++) {
		const array *a = &l->a[k];
		const uint8_t *h = ptr_get(s, a);
		for (uint64_t i = 0, n = count_of(s, a); i < n; i++)
			p += put_fields(p, a->e->f, a->e->n, h + a->e->stride * i);
	}
	put16(buf, RH_PROTO_MAGIC);
	buf[2] = RH_PROTO_VERSION;
	buf[3] = m->type;
	put32(buf + 4, (uint32_t)len);
	put32(buf + 8, m->seq);
	return RH_PROTO_HDR + (size_t)len;
}

#define BAD(...) rh_err_set(err, RH_EPEER, "protocol: " __VA_ARGS__)

/* "3 sources + 2 destinations", for the messages about counts. */
static const char *counts(const layout *l, const void *s, char *buf, size_t cap)
{
	size_t o = 0;
	buf[0] = 0;
	for (unsigned k = 0; k < l->n_arrays && o < cap; k++)
		o += (size_t)snprintf(buf + o, cap - o, "%s%llu %s", k ? " + " : "",
		                      (unsigned long long)count_of(s, &l->a[k]), l->a[k].noun);
	return buf;
}

/* The layout: sizes, reserved fields, where each array starts. */
static int decode_layout(const layout *l, const uint8_t *p, uint32_t plen, rh_msg *m, rh_error *err)
{
	size_t fixed = fixed_size(l->f, l->n), bad = 0;
	if (!l->n_arrays && !l->text && plen != fixed)
		return BAD("%s: payload %u bytes, expected %zu", l->name, plen, fixed);
	size_t head = fixed + (l->text ? 4 : 0);
	if (plen < head)
		return BAD("%s: payload %u bytes, need at least %zu", l->name, plen, head);
	void *s = &m->u;
	get_fields(p, l->f, l->n, s, &bad);
	if (bad)
		return BAD("%s: reserved field is %#x, not 0", l->name, get32(p + bad - 1));
	if (l->text) {
		uint32_t n = get32(p + fixed);
		if (n != plen - head || n >= sizeof m->u.error.text)
			return BAD("%s: text length %u inconsistent with payload %u", l->name, n,
			           plen);
		for (uint32_t i = 0; i < n; i++) { /* printable only: it ends up in logs */
			uint8_t c = p[head + i];
			m->u.error.text[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
		}
		return RH_OK;
	}
	char why[128];
	uint64_t want = payload_size(l, s, 0);
	if (want > RH_PROTO_MAX - RH_PROTO_HDR)
		return BAD("%s: %s inconsistent with payload %u: they exceed the %u bytes a "
		           "message may carry",
		           l->name, counts(l, s, why, sizeof why), plen,
		           RH_PROTO_MAX - RH_PROTO_HDR);
	if (want != plen)
		return BAD("%s: %s inconsistent with payload %u", l->name,
		           counts(l, s, why, sizeof why), plen);
	const uint8_t *q = p + fixed;
	for (unsigned k = 0; k < l->n_arrays; k++) {
		const array *a = &l->a[k];
		ptr_set(s, a, q);
		uint64_t n = count_of(s, a);
		size_t size = elem_size(a->e);
		if (!has_reserved(a->e)) {
			q += size * n;
			continue;
		}
		for (uint64_t i = 0; i < n; i++, q += size) {
			bad = 0;
			get_fields(q, a->e->f, a->e->n, NULL, &bad);
			if (bad)
				return BAD("%s: %s %llu: reserved field is %#x, not 0", l->name,
				           a->e->label,
				           (unsigned long long)wire_get(q, a->e->f[0].kind),
				           get32(q + bad - 1));
		}
	}
	return RH_OK;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* A region both evacuated and written to, or evacuated twice, would have
 * the tracer copy objects over themselves; refuse the EVACUATE instead. */
static int evacuate_distinct(const rh_msg_evacuate *e, rh_error *err)
{
	uint32_t n = e->n_src + e->n_dst; /* bounded by the message size already */
	uint32_t small[64];
	uint32_t *v = n <= 64 ? small : malloc(n * sizeof *v);
	if (!v)
		return rh_err_set(
		        err, RH_ENOMEM,
		        "protocol: EVACUATE: no memory to check %u regions for duplicates", n);
	for (uint32_t i = 0; i < n; i++)
		v[i] = rh_msg_evacuate_region(e, i);
	qsort(v, n, sizeof *v, cmp_u32);
	int rc = RH_OK;
	for (uint32_t i = 1; i < n; i++) {
		if (v[i] == v[i - 1]) {
			rc = BAD("EVACUATE: region %u listed twice", v[i]);
			break;
		}
	}
	if (v != small)
		free(v);
	return rc;
}

static int check_flags(const char *name, uint32_t flags, uint32_t known, rh_error *err)
{
	if (flags & ~known)
		return BAD("%s: unknown flags %#x", name, flags);
	return RH_OK;
}

/* What the layout cannot say, per type. */
static int check(rh_msg *m, rh_error *err)
{
	switch (m->type) {
	case RH_MSG_HELLO:
		if (m->u.hello.replica > RH_MAX_SERVERS)
			return BAD("HELLO: replica of partition %u, beyond the %d servers a config "
			           "may "
			           "name",
			           m->u.hello.replica - 1, RH_MAX_SERVERS);
		return RH_OK;
	case RH_MSG_TYPES: {
		const rh_msg_types *t = &m->u.types;
		if (t->len > RH_PROTO_CHUNK)
			return BAD("TYPES: chunk of %u bytes exceeds %u", t->len, RH_PROTO_CHUNK);
		if (t->offset > t->total || t->len > t->total - t->offset)
			return BAD("TYPES: chunk [%u, +%u) outside the table of %u bytes",
			           t->offset, t->len, t->total);
		return RH_OK;
	}
	case RH_MSG_REGIONS: {
		rh_msg_regions *r = &m->u.regions;
		if (check_flags("REGIONS", r->flags, RH_REGIONS_FIRST | RH_REGIONS_LAST, err))
			return RH_EPEER;
		for (uint32_t i = 0; i < r->n; i++) {
			rh_region_desc d;
			rh_msg_regions_get(r, i, &d);
			if (d.kind < RH_WIRE_KIND_FIRST || d.kind > RH_WIRE_KIND_LAST)
				return BAD("REGIONS: region %u: kind %u is not 1..4", d.region,
				           d.kind);
			if (d.evicted_pct > 100)
				return BAD("REGIONS: region %u: %u%% evicted", d.region,
				           d.evicted_pct);
		}
		return RH_OK;
	}
	case RH_MSG_ROOTS:
		return check_flags("ROOTS", m->u.roots.flags, RH_ROOTS_FIRST | RH_ROOTS_REMARK,
		                   err);
	case RH_MSG_MARKED:
		for (uint32_t i = 0; i < m->u.marked.n; i++) {
			rh_marked_desc d;
			rh_msg_marked_get(&m->u.marked, i, &d);
			if (d.live_bytes > d.top)
				return BAD("MARKED: region %u: %llu live bytes above top %u",
				           d.region, (unsigned long long)d.live_bytes, d.top);
		}
		return RH_OK;
	case RH_MSG_EVACUATE:
		if (check_flags("EVACUATE", m->u.evacuate.flags, RH_EVAC_NO_REMARK, err))
			return RH_EPEER;
		if (m->u.evacuate.n_src == 0)
			return BAD("EVACUATE: no source region");
		return evacuate_distinct(&m->u.evacuate, err);
	case RH_MSG_EVAC_REFS:
		for (uint32_t i = 0; i < m->u.evac_refs.n; i++) {
			rh_ref_pair pr;
			rh_msg_evac_refs_get(&m->u.evac_refs, i, &pr);
			if ((pr.slot | pr.value) & 7)
				return BAD("EVAC_REFS: pair %u: slot %#llx or value %#llx not "
				           "8-byte aligned",
				           i, (unsigned long long)pr.slot,
				           (unsigned long long)pr.value);
		}
		return RH_OK;
	case RH_MSG_EVACUATED:
		for (uint32_t i = 0; i < m->u.evacuated.n_src; i++) {
			rh_evac_src s;
			rh_msg_evacuated_src(&m->u.evacuated, i, &s);
			if (s.status != RH_EVAC_KEPT && s.status != RH_EVAC_MOVED)
				return BAD("EVACUATED: region %u: unknown status %u", s.region,
				           s.status);
		}
		return RH_OK;
	case RH_MSG_MARK_REFS: {
		rh_msg_mark_refs *r = &m->u.mark_refs;
		if (check_flags("MARK_REFS", r->flags, RH_MARK_ROOTS, err))
			return RH_EPEER;
		for (uint32_t i = 0; i < r->n; i++) {
			uint64_t a = rh_msg_mark_refs_get(r, i);
			/* Null is never an object, and no object starts off a word. */
			if (a == 0 || (a & 7))
				return BAD("MARK_REFS: address %u is %#llx, not a nonzero 8-byte "
				           "aligned address",
				           i, (unsigned long long)a);
		}
		return RH_OK;
	}
	case RH_MSG_MARK_ACK:
		/* An ack of nothing would let a broken peer look alive while the
		 * CPU server's count never moves. */
		if (m->u.mark_ack.batches == 0)
			return BAD("MARK_ACK: acknowledges 0 batches");
		return RH_OK;
	case RH_MSG_FULL:
		if (m->u.full.phase != RH_FULL_BEGIN && m->u.full.phase != RH_FULL_END &&
		    m->u.full.phase != RH_FULL_BEGIN_CONC)
			return BAD("FULL: unknown phase %u", m->u.full.phase);
		return RH_OK;
	case RH_MSG_FULL_DONE:
		return check_flags("FULL_DONE", m->u.full_done.flags,
		                   RH_FULL_DONE_FIRST | RH_FULL_DONE_LAST, err);
	case RH_MSG_FIX_CARDS: {
		rh_msg_fix_cards *f = &m->u.fix_cards;
		if (f->n_cards + (uint64_t)f->n_writes == 0)
			return BAD("FIX_CARDS: neither cards nor writes");
		if (f->n_cards && !f->n_moved)
			return BAD("FIX_CARDS: %u cards but no moved region", f->n_cards);
		for (uint32_t i = 0; i < f->n_cards; i++)
			if (rh_msg_fix_cards_card(f, i) & 7)
				return BAD("FIX_CARDS: card %u at %#llx not 8-byte aligned", i,
				           (unsigned long long)rh_msg_fix_cards_card(f, i));
		for (uint32_t i = 0; i < f->n_writes; i++) {
			rh_slot_write w;
			rh_msg_fix_cards_write(f, i, &w);
			if ((w.slot | w.old | w.value) & 7)
				return BAD("FIX_CARDS: write %u: slot %#llx, old %#llx or value "
				           "%#llx not 8-byte aligned",
				           i, (unsigned long long)w.slot, (unsigned long long)w.old,
				           (unsigned long long)w.value);
		}
		return RH_OK;
	}
	case RH_MSG_CARDS_FIXED: {
		rh_msg_cards_fixed *f = &m->u.cards_fixed;
		if (check_flags("CARDS_FIXED", f->flags, RH_CARDS_FIXED_LAST, err))
			return RH_EPEER;
		for (uint32_t i = 0; i < f->n; i++) {
			rh_fix_ent e;
			rh_msg_cards_fixed_get(f, i, &e);
			if (e.kind < RH_FIX_REF || e.kind > RH_FIX_FAILED)
				return BAD("CARDS_FIXED: entry %u: unknown kind %u", i, e.kind);
			if ((e.addr | e.value) & 7)
				return BAD("CARDS_FIXED: entry %u: address %#llx or value %#llx "
				           "not 8-byte aligned",
				           i, (unsigned long long)e.addr,
				           (unsigned long long)e.value);
		}
		return RH_OK;
	}
	}
	return RH_OK;
}

int rh_msg_decode(const uint8_t *buf, size_t len, rh_msg *m, rh_error *err)
{
	if (len > RH_PROTO_MAX)
		return BAD("message of %zu bytes exceeds %u", len, RH_PROTO_MAX);
	if (len < RH_PROTO_HDR)
		return BAD("message of %zu bytes is shorter than the %u-byte header", len,
		           RH_PROTO_HDR);
	if (get16(buf) != RH_PROTO_MAGIC)
		return BAD("bad magic %#x", get16(buf));
	if (buf[2] != RH_PROTO_VERSION)
		return BAD("version %u, this side speaks %u", buf[2], RH_PROTO_VERSION);
	uint32_t plen = get32(buf + 4);
	if (plen != len - RH_PROTO_HDR)
		return BAD("%s: header says %u payload bytes, message has %zu",
		           rh_msg_type_name(buf[3]), plen, len - RH_PROTO_HDR);
	memset(m, 0, sizeof *m);
	m->type = buf[3];
	m->seq = get32(buf + 8);
	if (m->type < 1 || m->type > RH_MSG_TYPE_MAX)
		return BAD("unknown message type %u", m->type);
	int rc = decode_layout(&layouts[m->type], buf + RH_PROTO_HDR, plen, m, err);
	return rc != RH_OK ? rc : check(m, err);
}

/* --- Accessors for decoded arrays ------------------------------------------ */

uint32_t rh_msg_free_region(const rh_msg_free *f, uint32_t i)
{
	uint32_t v;
	elem_get(&word32_elem, f->regions, i, &v);
	return v;
}

void rh_msg_regions_get(const rh_msg_regions *m, uint32_t i, rh_region_desc *out)
{
	elem_get(&rh_region_desc_elem, m->ents, i, out);
}

uint32_t rh_msg_roots_get(const rh_msg_roots *m, uint32_t i)
{
	uint32_t v;
	elem_get(&word32_elem, m->offs, i, &v);
	return v;
}

void rh_msg_marked_get(const rh_msg_marked *m, uint32_t i, rh_marked_desc *out)
{
	elem_get(&rh_marked_desc_elem, m->ents, i, out);
}

uint32_t rh_msg_evacuate_region(const rh_msg_evacuate *m, uint32_t i)
{
	uint32_t v;
	elem_get(&word32_elem, m->regions, i, &v);
	return v;
}

void rh_msg_evac_refs_get(const rh_msg_evac_refs *m, uint32_t i, rh_ref_pair *out)
{
	elem_get(&rh_ref_pair_elem, m->pairs, i, out);
}

void rh_msg_evacuated_src(const rh_msg_evacuated *m, uint32_t i, rh_evac_src *out)
{
	elem_get(&rh_evac_src_elem, m->src, i, out);
}

void rh_msg_evacuated_dst(const rh_msg_evacuated *m, uint32_t i, rh_evac_dst *out)
{
	elem_get(&rh_evac_dst_elem, m->dst, i, out);
}

uint64_t rh_msg_mark_refs_get(const rh_msg_mark_refs *m, uint32_t i)
{
	uint64_t v;
	elem_get(&word64_elem, m->addrs, i, &v);
	return v;
}

void rh_msg_full_done_get(const rh_msg_full_done *m, uint32_t i, rh_region_live *out)
{
	elem_get(&rh_region_live_elem, m->ents, i, out);
}

uint32_t rh_msg_fix_cards_moved(const rh_msg_fix_cards *m, uint32_t i)
{
	uint32_t v;
	elem_get(&word32_elem, m->moved, i, &v);
	return v;
}

uint64_t rh_msg_fix_cards_card(const rh_msg_fix_cards *m, uint32_t i)
{
	uint64_t v;
	elem_get(&word64_elem, m->cards, i, &v);
	return v;
}

void rh_msg_fix_cards_write(const rh_msg_fix_cards *m, uint32_t i, rh_slot_write *out)
{
	elem_get(&rh_slot_write_elem, m->writes, i, out);
}

void rh_msg_cards_fixed_get(const rh_msg_cards_fixed *m, uint32_t i, rh_fix_ent *out)
{
	elem_get(&rh_fix_ent_elem, m->ents, i, out);
}
