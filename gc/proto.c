#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "gc/proto.h"
#include "gc/region.h"

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
	static const char *const names[] = {
	        "?",      "HELLO",     "TYPES",     "HELLO_OK",   "ERROR",     "FREE",
	        "PING",   "PONG",      "BYE",       "FREE_OK",    "REGIONS",   "ROOTS",
	        "MARKED", "EVACUATE",  "EVAC_REFS", "EVACUATED",  "MARK_REFS", "MARK_ACK",
	        "FULL",   "FULL_DONE", "FIX_CARDS", "CARDS_FIXED"};
	_Static_assert(sizeof names / sizeof names[0] == RH_MSG_TYPE_MAX + 1,
	               "a name for every message type");
	return type <= RH_MSG_TYPE_MAX ? names[type] : "?";
}

size_t rh_msg_encode(const rh_msg *m, uint8_t *buf, size_t cap)
{
	uint8_t *p = buf + RH_PROTO_HDR;
	size_t len;
	switch (m->type) {
	case RH_MSG_HELLO:
		len = 48;
		if (cap < RH_PROTO_HDR + len)
			return 0;
		put32(p, m->u.hello.partition);
		put32(p + 4, m->u.hello.types_len);
		put64(p + 8, m->u.hello.heap_base);
		put64(p + 16, m->u.hello.heap_size);
		put64(p + 24, m->u.hello.region_size);
		put64(p + 32, m->u.hello.part_base);
		put64(p + 40, m->u.hello.part_size);
		break;
	case RH_MSG_TYPES:
		len = 12 + (size_t)m->u.types.len;
		if (cap < RH_PROTO_HDR + len || m->u.types.len > RH_PROTO_CHUNK)
			return 0;
		put32(p, m->u.types.offset);
		put32(p + 4, m->u.types.total);
		put32(p + 8, m->u.types.len);
		memcpy(p + 12, m->u.types.bytes, m->u.types.len);
		break;
	case RH_MSG_HELLO_OK:
		len = 20;
		if (cap < RH_PROTO_HDR + len)
			return 0;
		put64(p, m->u.hello_ok.meta_base);
		put64(p + 8, m->u.hello_ok.meta_size);
		put32(p + 16, m->u.hello_ok.pid);
		break;
	case RH_MSG_ERROR: {
		size_t n = strnlen(m->u.error.text, sizeof m->u.error.text - 1);
		len = 8 + n;
		if (cap < RH_PROTO_HDR + len)
			return 0;
		put32(p, m->u.error.code);
		put32(p + 4, (uint32_t)n);
		memcpy(p + 8, m->u.error.text, n);
		break;
	}
	case RH_MSG_FREE: {
		if (m->u.free.n > RH_PROTO_MAX_FREE)
			return 0;
		len = 4 + 4 * (size_t)m->u.free.n;
		if (cap < RH_PROTO_HDR + len)
			return 0;
		put32(p, m->u.free.n);
		const uint32_t *r = (const uint32_t *)(const void *)m->u.free.regions;
		for (uint32_t i = 0; i < m->u.free.n; i++)
			put32(p + 4 + 4 * i, r[i]);
		break;
	}
	case RH_MSG_PING:
	case RH_MSG_PONG:
		len = 16;
		if (cap < RH_PROTO_HDR + len)
			return 0;
		put64(p, m->u.ping.seq);
		put64(p + 8, m->u.ping.time_ns);
		break;
	case RH_MSG_BYE:
	case RH_MSG_FREE_OK:
		len = 0;
		if (cap < RH_PROTO_HDR)
			return 0;
		break;
	case RH_MSG_REGIONS: {
		const rh_msg_regions *r = &m->u.regions;
		if (r->n > RH_REGIONS_MAX)
			return 0;
		len = 16 + 16 * (size_t)r->n;
		if (cap < RH_PROTO_HDR + len)
			return 0;
		put64(p, r->epoch);
		put32(p + 8, r->flags);
		put32(p + 12, r->n);
		const rh_region_desc *d = r->ents;
		for (uint32_t i = 0; i < r->n; i++) {
			uint8_t *q = p + 16 + 16 * (size_t)i;
			put32(q, d[i].region);
			put32(q + 4, d[i].ident);
			put32(q + 8, d[i].top);
			q[12] = d[i].kind;
			q[13] = d[i].evicted_pct;
			put16(q + 14, d[i].survivals);
		}
		break;
	}
	case RH_MSG_ROOTS: {
		const rh_msg_roots *r = &m->u.roots;
		if (r->n > RH_ROOTS_MAX)
			return 0;
		len = 12 + 4 * (size_t)r->n;
		if (cap < RH_PROTO_HDR + len)
			return 0;
		put32(p, r->region);
		put32(p + 4, r->flags);
		put32(p + 8, r->n);
		const uint32_t *o = r->offs;
		for (uint32_t i = 0; i < r->n; i++)
			put32(p + 12 + 4 * (size_t)i, o[i]);
		break;
	}
	case RH_MSG_MARKED: {
		const rh_msg_marked *k = &m->u.marked;
		if (k->n > RH_MARKED_MAX)
			return 0;
		len = 4 + 24 * (size_t)k->n;
		if (cap < RH_PROTO_HDR + len)
			return 0;
		put32(p, k->n);
		const rh_marked_desc *d = k->ents;
		for (uint32_t i = 0; i < k->n; i++) {
			uint8_t *q = p + 4 + 24 * (size_t)i;
			put32(q, d[i].region);
			put32(q + 4, d[i].ident);
			put32(q + 8, d[i].top);
			put32(q + 12, d[i].objects);
			put64(q + 16, d[i].live_bytes);
		}
		break;
	}
	case RH_MSG_EVACUATE: {
		const rh_msg_evacuate *e = &m->u.evacuate;
		uint64_t n = (uint64_t)e->n_src + e->n_dst;
		if (n > RH_EVACUATE_MAX)
			return 0;
		len = 20 + 4 * (size_t)n;
		if (cap < RH_PROTO_HDR + len)
			return 0;
		put64(p, e->id);
		put32(p + 8, e->flags);
		put32(p + 12, e->n_src);
		put32(p + 16, e->n_dst);
		const uint32_t *r = e->regions;
		for (size_t i = 0; i < n; i++)
			put32(p + 20 + 4 * i, r[i]);
		break;
	}
	case RH_MSG_EVAC_REFS: {
		const rh_msg_evac_refs *x = &m->u.evac_refs;
		if (x->n > RH_EVAC_REFS_MAX)
			return 0;
		len = 12 + 16 * (size_t)x->n;
		if (cap < RH_PROTO_HDR + len)
			return 0;
		put64(p, x->id);
		put32(p + 8, x->n);
		const rh_ref_pair *pr = x->pairs;
		for (uint32_t i = 0; i < x->n; i++) {
			put64(p + 12 + 16 * (size_t)i, pr[i].slot);
			put64(p + 20 + 16 * (size_t)i, pr[i].value);
		}
		break;
	}
	case RH_MSG_EVACUATED: {
		const rh_msg_evacuated *e = &m->u.evacuated;
		uint64_t want = 56 + 16 * (uint64_t)e->n_src + 8 * (uint64_t)e->n_dst;
		if (want > RH_PROTO_MAX - RH_PROTO_HDR)
			return 0;
		len = (size_t)want;
		if (cap < RH_PROTO_HDR + len)
			return 0;
		put64(p, e->id);
		put32(p + 8, e->n_src);
		put32(p + 12, e->n_dst);
		put64(p + 16, e->remark_ns);
		put64(p + 24, e->evac_ns);
		put64(p + 32, e->bytes_copied);
		put64(p + 40, e->objects_copied);
		put64(p + 48, e->pages_rescanned);
		const rh_evac_src *s = e->src;
		for (uint32_t i = 0; i < e->n_src; i++) {
			uint8_t *q = p + 56 + 16 * (size_t)i;
			put32(q, s[i].region);
			put32(q + 4, s[i].status);
			put64(q + 8, s[i].live_bytes);
		}
		const rh_evac_dst *d = e->dst;
		uint8_t *dp = p + 56 + 16 * (size_t)e->n_src;
		for (uint32_t i = 0; i < e->n_dst; i++) {
			put32(dp + 8 * (size_t)i, d[i].region);
			put32(dp + 8 * (size_t)i + 4, d[i].top);
		}
		break;
	}
	case RH_MSG_MARK_REFS: {
		const rh_msg_mark_refs *r = &m->u.mark_refs;
		if (r->n > RH_MARK_REFS_MAX)
			return 0;
		len = 12 + 8 * (size_t)r->n;
		if (cap < RH_PROTO_HDR + len)
			return 0;
		put32(p, r->partition);
		put32(p + 4, r->flags);
		put32(p + 8, r->n);
		const uint64_t *a = r->addrs;
		for (uint32_t i = 0; i < r->n; i++)
			put64(p + 12 + 8 * (size_t)i, a[i]);
		break;
	}
	case RH_MSG_MARK_ACK:
		len = 4;
		if (cap < RH_PROTO_HDR + len)
			return 0;
		put32(p, m->u.mark_ack.batches);
		break;
	case RH_MSG_FULL:
		len = 16;
		if (cap < RH_PROTO_HDR + len)
			return 0;
		put64(p, m->u.full.id);
		put32(p + 8, m->u.full.phase);
		put32(p + 12, 0);
		break;
	case RH_MSG_FULL_DONE: {
		const rh_msg_full_done *f = &m->u.full_done;
		if (f->n > RH_FULL_DONE_MAX)
			return 0;
		len = 32 + 16 * (size_t)f->n;
		if (cap < RH_PROTO_HDR + len)
			return 0;
		put64(p, f->id);
		put64(p + 8, f->bytes_marked);
		put64(p + 16, f->mark_ns);
		put32(p + 24, f->flags);
		put32(p + 28, f->n);
		const rh_region_live *e = f->ents;
		for (uint32_t i = 0; i < f->n; i++) {
			uint8_t *q = p + 32 + 16 * (size_t)i;
			put32(q, e[i].region);
			put32(q + 4, 0);
			put64(q + 8, e[i].live_bytes);
		}
		break;
	}
	case RH_MSG_FIX_CARDS: {
		const rh_msg_fix_cards *f = &m->u.fix_cards;
		uint64_t want = RH_FIX_CARDS_HDR + 4 * (uint64_t)f->n_moved +
		                8 * (uint64_t)f->n_cards + 24 * (uint64_t)f->n_writes;
		if (want > RH_PROTO_MAX - RH_PROTO_HDR)
			return 0;
		len = (size_t)want;
		if (cap < RH_PROTO_HDR + len)
			return 0;
		put64(p, f->id);
		put32(p + 8, f->n_moved);
		put32(p + 12, f->n_cards);
		put32(p + 16, f->n_writes);
		put32(p + 20, 0);
		uint8_t *q = p + RH_FIX_CARDS_HDR;
		const uint64_t *c = f->cards;
		for (uint32_t i = 0; i < f->n_cards; i++, q += 8)
			put64(q, c[i]);
		const rh_slot_write *w = f->writes;
		for (uint32_t i = 0; i < f->n_writes; i++, q += 24) {
			put64(q, w[i].slot);
			put64(q + 8, w[i].old);
			put64(q + 16, w[i].value);
		}
		const uint32_t *mv = f->moved;
		for (uint32_t i = 0; i < f->n_moved; i++, q += 4)
			put32(q, mv[i]);
		break;
	}
	case RH_MSG_CARDS_FIXED: {
		const rh_msg_cards_fixed *f = &m->u.cards_fixed;
		if (f->n > RH_CARDS_FIXED_MAX)
			return 0;
		len = 16 + 24 * (size_t)f->n;
		if (cap < RH_PROTO_HDR + len)
			return 0;
		put64(p, f->id);
		put32(p + 8, f->flags);
		put32(p + 12, f->n);
		const rh_fix_ent *e = f->ents;
		for (uint32_t i = 0; i < f->n; i++) {
			uint8_t *q = p + 16 + 24 * (size_t)i;
			put32(q, e[i].kind);
			put32(q + 4, e[i].region);
			put64(q + 8, e[i].addr);
			put64(q + 16, e[i].value);
		}
		break;
	}
	default:
		return 0;
	}
	put16(buf, RH_PROTO_MAGIC);
	buf[2] = RH_PROTO_VERSION;
	buf[3] = m->type;
	put32(buf + 4, (uint32_t)len);
	put32(buf + 8, m->seq);
	return RH_PROTO_HDR + len;
}

#define BAD(...) rh_err_set(err, RH_EPEER, "protocol: " __VA_ARGS__)

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* A region both evacuated and written to, or evacuated twice, would have
 * the tracer copy objects over themselves; refuse the EVACUATE instead. */
static int evacuate_distinct(const rh_msg_evacuate *e, rh_error *err)
{
	uint32_t n = e->n_src + e->n_dst; /* bounded by RH_EVACUATE_MAX already */
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
	const uint8_t *p = buf + RH_PROTO_HDR;
	const char *name = rh_msg_type_name(m->type);
	switch (m->type) {
	case RH_MSG_HELLO:
		if (plen != 48)
			return BAD("HELLO: payload %u bytes, expected 48", plen);
		m->u.hello.partition = get32(p);
		m->u.hello.types_len = get32(p + 4);
		m->u.hello.heap_base = get64(p + 8);
		m->u.hello.heap_size = get64(p + 16);
		m->u.hello.region_size = get64(p + 24);
		m->u.hello.part_base = get64(p + 32);
		m->u.hello.part_size = get64(p + 40);
		if (m->u.hello.types_len > (64u << 20))
			return BAD("HELLO: type table of %u bytes exceeds 64 MiB",
			           m->u.hello.types_len);
		return RH_OK;
	case RH_MSG_TYPES:
		if (plen < 12)
			return BAD("TYPES: payload %u bytes, need at least 12", plen);
		m->u.types.offset = get32(p);
		m->u.types.total = get32(p + 4);
		m->u.types.len = get32(p + 8);
		if (m->u.types.len > RH_PROTO_CHUNK)
			return BAD("TYPES: chunk of %u bytes exceeds %u", m->u.types.len,
			           RH_PROTO_CHUNK);
		if (m->u.types.len != plen - 12)
			return BAD("TYPES: chunk length %u but %u bytes follow", m->u.types.len,
			           plen - 12);
		if (m->u.types.offset > m->u.types.total ||
		    m->u.types.len > m->u.types.total - m->u.types.offset)
			return BAD("TYPES: chunk [%u, +%u) outside the table of %u bytes",
			           m->u.types.offset, m->u.types.len, m->u.types.total);
		m->u.types.bytes = p + 12;
		return RH_OK;
	case RH_MSG_HELLO_OK:
		if (plen != 20)
			return BAD("HELLO_OK: payload %u bytes, expected 20", plen);
		m->u.hello_ok.meta_base = get64(p);
		m->u.hello_ok.meta_size = get64(p + 8);
		m->u.hello_ok.pid = get32(p + 16);
		return RH_OK;
	case RH_MSG_ERROR: {
		if (plen < 8)
			return BAD("ERROR: payload %u bytes, need at least 8", plen);
		uint32_t n = get32(p + 4);
		if (n != plen - 8 || n >= sizeof m->u.error.text)
			return BAD("ERROR: text length %u inconsistent with payload %u", n, plen);
		m->u.error.code = get32(p);
		for (uint32_t i = 0; i < n; i++) /* printable only: it ends up in logs */
			m->u.error.text[i] =
			        p[8 + i] >= 0x20 && p[8 + i] < 0x7f ? (char)p[8 + i] : '?';
		return RH_OK;
	}
	case RH_MSG_FREE:
		if (plen < 4)
			return BAD("FREE: payload %u bytes, need at least 4", plen);
		m->u.free.n = get32(p);
		if (m->u.free.n > RH_PROTO_MAX_FREE || plen != 4 + 4 * (uint64_t)m->u.free.n)
			return BAD("FREE: %u regions inconsistent with payload %u", m->u.free.n,
			           plen);
		m->u.free.regions = p + 4;
		return RH_OK;
	case RH_MSG_PING:
	case RH_MSG_PONG:
		if (plen != 16)
			return BAD("%s: payload %u bytes, expected 16", name, plen);
		m->u.ping.seq = get64(p);
		m->u.ping.time_ns = get64(p + 8);
		return RH_OK;
	case RH_MSG_BYE:
	case RH_MSG_FREE_OK:
		if (plen != 0)
			return BAD("%s: payload %u bytes, expected 0", name, plen);
		return RH_OK;
	case RH_MSG_REGIONS: {
		rh_msg_regions *r = &m->u.regions;
		if (plen < 16)
			return BAD("REGIONS: payload %u bytes, need at least 16", plen);
		r->epoch = get64(p);
		r->flags = get32(p + 8);
		r->n = get32(p + 12);
		if (r->flags & ~(RH_REGIONS_FIRST | RH_REGIONS_LAST))
			return BAD("REGIONS: unknown flags %#x", r->flags);
		if (r->n > RH_REGIONS_MAX)
			return BAD("REGIONS: %u entries exceed %u", r->n, RH_REGIONS_MAX);
		if (plen != 16 + 16 * r->n)
			return BAD("REGIONS: %u entries inconsistent with payload %u", r->n, plen);
		r->ents = p + 16;
		for (uint32_t i = 0; i < r->n; i++) {
			rh_region_desc d;
			rh_msg_regions_get(r, i, &d);
			if (d.kind < RH_REGION_EDEN || d.kind > RH_REGION_HUMONGOUS_CONT)
				return BAD("REGIONS: region %u: kind %u is not 1..4", d.region,
				           d.kind);
			if (d.evicted_pct > 100)
				return BAD("REGIONS: region %u: %u%% evicted", d.region,
				           d.evicted_pct);
		}
		return RH_OK;
	}
	case RH_MSG_ROOTS: {
		rh_msg_roots *r = &m->u.roots;
		if (plen < 12)
			return BAD("ROOTS: payload %u bytes, need at least 12", plen);
		r->region = get32(p);
		r->flags = get32(p + 4);
		r->n = get32(p + 8);
		if (r->flags & ~(RH_ROOTS_FIRST | RH_ROOTS_REMARK))
			return BAD("ROOTS: unknown flags %#x", r->flags);
		if (r->n > RH_ROOTS_MAX)
			return BAD("ROOTS: %u roots exceed %u", r->n, RH_ROOTS_MAX);
		if (plen != 12 + 4 * r->n)
			return BAD("ROOTS: %u roots inconsistent with payload %u", r->n, plen);
		r->offs = p + 12;
		return RH_OK;
	}
	case RH_MSG_MARKED: {
		rh_msg_marked *k = &m->u.marked;
		if (plen < 4)
			return BAD("MARKED: payload %u bytes, need at least 4", plen);
		k->n = get32(p);
		if (k->n > RH_MARKED_MAX)
			return BAD("MARKED: %u entries exceed %u", k->n, RH_MARKED_MAX);
		if (plen != 4 + 24 * k->n)
			return BAD("MARKED: %u entries inconsistent with payload %u", k->n, plen);
		k->ents = p + 4;
		for (uint32_t i = 0; i < k->n; i++) {
			rh_marked_desc d;
			rh_msg_marked_get(k, i, &d);
			if (d.live_bytes > d.top)
				return BAD("MARKED: region %u: %llu live bytes above top %u",
				           d.region, (unsigned long long)d.live_bytes, d.top);
		}
		return RH_OK;
	}
	case RH_MSG_EVACUATE: {
		rh_msg_evacuate *e = &m->u.evacuate;
		if (plen < 20)
			return BAD("EVACUATE: payload %u bytes, need at least 20", plen);
		e->id = get64(p);
		e->flags = get32(p + 8);
		e->n_src = get32(p + 12);
		e->n_dst = get32(p + 16);
		if (e->flags & ~RH_EVAC_NO_REMARK)
			return BAD("EVACUATE: unknown flags %#x", e->flags);
		if (e->n_src == 0)
			return BAD("EVACUATE: no source region");
		uint64_t n = (uint64_t)e->n_src + e->n_dst;
		if (n > RH_EVACUATE_MAX)
			return BAD("EVACUATE: %u sources + %u destinations exceed %u", e->n_src,
			           e->n_dst, RH_EVACUATE_MAX);
		if (plen != 20 + 4 * n)
			return BAD("EVACUATE: %u sources + %u destinations inconsistent with "
			           "payload %u",
			           e->n_src, e->n_dst, plen);
		e->regions = p + 20;
		return evacuate_distinct(e, err);
	}
	case RH_MSG_EVAC_REFS: {
		rh_msg_evac_refs *x = &m->u.evac_refs;
		if (plen < 12)
			return BAD("EVAC_REFS: payload %u bytes, need at least 12", plen);
		x->id = get64(p);
		x->n = get32(p + 8);
		if (x->n > RH_EVAC_REFS_MAX)
			return BAD("EVAC_REFS: %u pairs exceed %u", x->n, RH_EVAC_REFS_MAX);
		if (plen != 12 + 16 * x->n)
			return BAD("EVAC_REFS: %u pairs inconsistent with payload %u", x->n, plen);
		x->pairs = p + 12;
		for (uint32_t i = 0; i < x->n; i++) {
			rh_ref_pair pr;
			rh_msg_evac_refs_get(x, i, &pr);
			if ((pr.slot | pr.value) & 7)
				return BAD("EVAC_REFS: pair %u: slot %#llx or value %#llx not "
				           "8-byte aligned",
				           i, (unsigned long long)pr.slot,
				           (unsigned long long)pr.value);
		}
		return RH_OK;
	}
	case RH_MSG_EVACUATED: {
		rh_msg_evacuated *e = &m->u.evacuated;
		if (plen < 56)
			return BAD("EVACUATED: payload %u bytes, need at least 56", plen);
		e->id = get64(p);
		e->n_src = get32(p + 8);
		e->n_dst = get32(p + 12);
		e->remark_ns = get64(p + 16);
		e->evac_ns = get64(p + 24);
		e->bytes_copied = get64(p + 32);
		e->objects_copied = get64(p + 40);
		e->pages_rescanned = get64(p + 48);
		/* 64-bit: 16 * n_src alone can wrap a u32 to a plausible length. */
		uint64_t want = 56 + 16 * (uint64_t)e->n_src + 8 * (uint64_t)e->n_dst;
		if (want > RH_PROTO_MAX - RH_PROTO_HDR)
			return BAD("EVACUATED: %u sources + %u destinations exceed the message "
			           "size",
			           e->n_src, e->n_dst);
		if (plen != want)
			return BAD("EVACUATED: %u sources + %u destinations inconsistent with "
			           "payload %u",
			           e->n_src, e->n_dst, plen);
		e->src = p + 56;
		e->dst = p + 56 + 16 * (size_t)e->n_src;
		for (uint32_t i = 0; i < e->n_src; i++) {
			rh_evac_src s;
			rh_msg_evacuated_src(e, i, &s);
			if (s.status != RH_EVAC_KEPT && s.status != RH_EVAC_MOVED)
				return BAD("EVACUATED: region %u: unknown status %u", s.region,
				           s.status);
		}
		return RH_OK;
	}
	case RH_MSG_MARK_REFS: {
		rh_msg_mark_refs *r = &m->u.mark_refs;
		if (plen < 12)
			return BAD("MARK_REFS: payload %u bytes, need at least 12", plen);
		r->partition = get32(p);
		r->flags = get32(p + 4);
		r->n = get32(p + 8);
		if (r->flags & ~RH_MARK_ROOTS)
			return BAD("MARK_REFS: unknown flags %#x", r->flags);
		if (r->n > RH_MARK_REFS_MAX)
			return BAD("MARK_REFS: %u addresses exceed %u", r->n, RH_MARK_REFS_MAX);
		if (plen != 12 + 8 * r->n)
			return BAD("MARK_REFS: %u addresses inconsistent with payload %u", r->n,
			           plen);
		r->addrs = p + 12;
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
		if (plen != 4)
			return BAD("MARK_ACK: payload %u bytes, expected 4", plen);
		m->u.mark_ack.batches = get32(p);
		/* An ack of nothing would let a broken peer look alive while the
		 * CPU server's count never moves. */
		if (m->u.mark_ack.batches == 0)
			return BAD("MARK_ACK: acknowledges 0 batches");
		return RH_OK;
	case RH_MSG_FULL: {
		if (plen != 16)
			return BAD("FULL: payload %u bytes, expected 16", plen);
		m->u.full.id = get64(p);
		m->u.full.phase = get32(p + 8);
		uint32_t reserved = get32(p + 12);
		if (m->u.full.phase != RH_FULL_BEGIN && m->u.full.phase != RH_FULL_END)
			return BAD("FULL: unknown phase %u", m->u.full.phase);
		if (reserved != 0)
			return BAD("FULL: reserved field is %#x, not 0", reserved);
		return RH_OK;
	}
	case RH_MSG_FULL_DONE: {
		rh_msg_full_done *f = &m->u.full_done;
		if (plen < 32)
			return BAD("FULL_DONE: payload %u bytes, need at least 32", plen);
		f->id = get64(p);
		f->bytes_marked = get64(p + 8);
		f->mark_ns = get64(p + 16);
		f->flags = get32(p + 24);
		f->n = get32(p + 28);
		if (f->flags & ~(RH_FULL_DONE_FIRST | RH_FULL_DONE_LAST))
			return BAD("FULL_DONE: unknown flags %#x", f->flags);
		if (f->n > RH_FULL_DONE_MAX)
			return BAD("FULL_DONE: %u entries exceed %u", f->n, RH_FULL_DONE_MAX);
		if (plen != 32 + 16 * f->n)
			return BAD("FULL_DONE: %u entries inconsistent with payload %u", f->n,
			           plen);
		f->ents = p + 32;
		for (uint32_t i = 0; i < f->n; i++) {
			const uint8_t *q = p + 32 + 16 * (size_t)i;
			/* Zero now, so that the field can gain a meaning later. */
			if (get32(q + 4) != 0)
				return BAD("FULL_DONE: region %u: reserved field is %#x, not 0",
				           get32(q), get32(q + 4));
		}
		return RH_OK;
	}
	case RH_MSG_FIX_CARDS: {
		rh_msg_fix_cards *f = &m->u.fix_cards;
		if (plen < RH_FIX_CARDS_HDR)
			return BAD("FIX_CARDS: payload %u bytes, need at least %u", plen,
			           RH_FIX_CARDS_HDR);
		f->id = get64(p);
		f->n_moved = get32(p + 8);
		f->n_cards = get32(p + 12);
		f->n_writes = get32(p + 16);
		if (get32(p + 20) != 0)
			return BAD("FIX_CARDS: reserved field is %#x, not 0", get32(p + 20));
		uint64_t want = RH_FIX_CARDS_HDR + 4 * (uint64_t)f->n_moved +
		                8 * (uint64_t)f->n_cards + 24 * (uint64_t)f->n_writes;
		if (want != plen)
			return BAD("FIX_CARDS: %u moved regions, %u cards and %u writes "
			           "inconsistent with payload %u",
			           f->n_moved, f->n_cards, f->n_writes, plen);
		if (f->n_cards + (uint64_t)f->n_writes == 0)
			return BAD("FIX_CARDS: neither cards nor writes");
		if (f->n_cards && !f->n_moved)
			return BAD("FIX_CARDS: %u cards but no moved region", f->n_cards);
		f->cards = p + RH_FIX_CARDS_HDR;
		f->writes = p + RH_FIX_CARDS_HDR + 8 * (size_t)f->n_cards;
		f->moved = p + RH_FIX_CARDS_HDR + 8 * (size_t)f->n_cards + 24 * (size_t)f->n_writes;
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
		if (plen < 16)
			return BAD("CARDS_FIXED: payload %u bytes, need at least 16", plen);
		f->id = get64(p);
		f->flags = get32(p + 8);
		f->n = get32(p + 12);
		if (f->flags & ~RH_CARDS_FIXED_LAST)
			return BAD("CARDS_FIXED: unknown flags %#x", f->flags);
		if (f->n > RH_CARDS_FIXED_MAX)
			return BAD("CARDS_FIXED: %u entries exceed %u", f->n, RH_CARDS_FIXED_MAX);
		if (plen != 16 + 24 * f->n)
			return BAD("CARDS_FIXED: %u entries inconsistent with payload %u", f->n,
			           plen);
		f->ents = p + 16;
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
	default:
		return BAD("unknown message type %u", m->type);
	}
}

uint32_t rh_msg_free_region(const rh_msg_free *f, uint32_t i)
{
	return get32(f->regions + 4 * (size_t)i);
}

void rh_msg_regions_get(const rh_msg_regions *m, uint32_t i, rh_region_desc *out)
{
	const uint8_t *q = (const uint8_t *)m->ents + 16 * (size_t)i;
	out->region = get32(q);
	out->ident = get32(q + 4);
	out->top = get32(q + 8);
	out->kind = q[12];
	out->evicted_pct = q[13];
	out->survivals = get16(q + 14);
}

uint32_t rh_msg_roots_get(const rh_msg_roots *m, uint32_t i)
{
	return get32((const uint8_t *)m->offs + 4 * (size_t)i);
}

void rh_msg_marked_get(const rh_msg_marked *m, uint32_t i, rh_marked_desc *out)
{
	const uint8_t *q = (const uint8_t *)m->ents + 24 * (size_t)i;
	out->region = get32(q);
	out->ident = get32(q + 4);
	out->top = get32(q + 8);
	out->objects = get32(q + 12);
	out->live_bytes = get64(q + 16);
}

uint32_t rh_msg_evacuate_region(const rh_msg_evacuate *m, uint32_t i)
{
	return get32((const uint8_t *)m->regions + 4 * (size_t)i);
}

void rh_msg_evac_refs_get(const rh_msg_evac_refs *m, uint32_t i, rh_ref_pair *out)
{
	const uint8_t *q = (const uint8_t *)m->pairs + 16 * (size_t)i;
	out->slot = get64(q);
	out->value = get64(q + 8);
}

void rh_msg_evacuated_src(const rh_msg_evacuated *m, uint32_t i, rh_evac_src *out)
{
	const uint8_t *q = (const uint8_t *)m->src + 16 * (size_t)i;
	out->region = get32(q);
	out->status = get32(q + 4);
	out->live_bytes = get64(q + 8);
}

void rh_msg_evacuated_dst(const rh_msg_evacuated *m, uint32_t i, rh_evac_dst *out)
{
	const uint8_t *q = (const uint8_t *)m->dst + 8 * (size_t)i;
	out->region = get32(q);
	out->top = get32(q + 4);
}

uint64_t rh_msg_mark_refs_get(const rh_msg_mark_refs *m, uint32_t i)
{
	return get64((const uint8_t *)m->addrs + 8 * (size_t)i);
}

void rh_msg_full_done_get(const rh_msg_full_done *m, uint32_t i, rh_region_live *out)
{
	const uint8_t *q = (const uint8_t *)m->ents + 16 * (size_t)i;
	out->region = get32(q);
	out->live_bytes = get64(q + 8);
}

uint32_t rh_msg_fix_cards_moved(const rh_msg_fix_cards *m, uint32_t i)
{
	return get32((const uint8_t *)m->moved + 4 * (size_t)i);
}

uint64_t rh_msg_fix_cards_card(const rh_msg_fix_cards *m, uint32_t i)
{
	return get64((const uint8_t *)m->cards + 8 * (size_t)i);
}

void rh_msg_fix_cards_write(const rh_msg_fix_cards *m, uint32_t i, rh_slot_write *out)
{
	const uint8_t *q = (const uint8_t *)m->writes + 24 * (size_t)i;
	out->slot = get64(q);
	out->old = get64(q + 8);
	out->value = get64(q + 16);
}

void rh_msg_cards_fixed_get(const rh_msg_cards_fixed *m, uint32_t i, rh_fix_ent *out)
{
	const uint8_t *q = (const uint8_t *)m->ents + 24 * (size_t)i;
	out->kind = get32(q);
	out->region = get32(q + 4);
	out->addr = get64(q + 8);
	out->value = get64(q + 16);
}
