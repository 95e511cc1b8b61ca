/* Control-path codec (wire/proto.c), version 3: every distributed-collection,
 * full-marking and card-fixing message round-trips, at zero and at maximum
 * counts, and every malformed variant is refused with RH_EPEER and a
 * message; v1 messages still round-trip and version-1 and version-2
 * headers are refused. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/common/check.h"
#include "common/common.h"
#include "gc/region.h"
#include "wire/proto.h"

/* wire/ does not include gc/: the kinds it accepts must be the collector's. */
_Static_assert(RH_WIRE_KIND_FIRST == RH_REGION_EDEN &&
                       RH_WIRE_KIND_LAST == RH_REGION_HUMONGOUS_CONT,
               "REGIONS kinds are gc/region.h's EDEN..HUMONGOUS_CONT");

static uint8_t buf[RH_PROTO_MAX + 64], tmp[RH_PROTO_MAX + 64];

static void le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Payload byte `off` of the message in b. */
static uint8_t *pl(uint8_t *b, size_t off)
{
	return b + RH_PROTO_HDR + off;
}

static size_t enc(const rh_msg *m)
{
	size_t n = rh_msg_encode(m, buf, sizeof buf);
	CHECK(n >= RH_PROTO_HDR && n <= RH_PROTO_MAX, "%s encodes to %zu bytes",
	      rh_msg_type_name(m->type), n);
	return n;
}

static int dec(const uint8_t *b, size_t len, rh_msg *m)
{
	rh_error err = {0};
	int rc = rh_msg_decode(b, len, m, &err);
	CHECK(rc == RH_OK, "%s: %s", rh_msg_type_name(b[3]), err.msg);
	return rc == RH_OK;
}

/* The decoded message, re-encoded, must give back the same bytes: the
 * caller has already turned its wire arrays into host arrays in *m. */
static void same_bytes(const rh_msg *m, const uint8_t *orig, size_t len)
{
	size_t n = rh_msg_encode(m, tmp, sizeof tmp);
	CHECK(n == len && memcmp(tmp, orig, len) == 0, "%s re-encodes to %zu bytes, want %zu",
	      rh_msg_type_name(m->type), n, len);
}

static int rejected_quiet(const uint8_t *b, size_t len, const char *sub, char *why, size_t cap)
{
	rh_msg m;
	rh_error err = {0};
	int rc = rh_msg_decode(b, len, &m, &err);
	if (rc == RH_EPEER && err.code == RH_EPEER && err.msg[0] && (!sub || strstr(err.msg, sub)))
		return 1;
	snprintf(why, cap, "status %d, code %d, message \"%s\" (want RH_EPEER with \"%s\")", rc,
	         err.code, err.msg, sub ? sub : "");
	return 0;
}

/* Decoding must fail with RH_EPEER and a message containing sub (if given). */
#define REJECT(b, len, sub, what)                                                                  \
	do {                                                                                       \
		char why_[512];                                                                    \
		CHECK(rejected_quiet(b, len, sub, why_, sizeof why_), "%s: %s", what, why_);       \
	} while (0)

/* The message in buf with its payload cut to plen bytes or padded with zero
 * bytes to it, the header's length field matching. */
static size_t resized(const uint8_t *orig, size_t len, size_t plen)
{
	memcpy(tmp, orig, len < RH_PROTO_HDR + plen ? len : RH_PROTO_HDR + plen);
	if (RH_PROTO_HDR + plen > len)
		memset(tmp + len, 0, RH_PROTO_HDR + plen - len);
	le32(tmp + 4, (uint32_t)plen);
	return RH_PROTO_HDR + plen;
}

/* Every shorter payload, and payloads longer by 1..grow bytes, are refused
 * by the type's own checks (the header agrees with the length received). */
static void wrong_lengths(const uint8_t *orig, size_t len, size_t grow, int every)
{
	static uint8_t copy[RH_PROTO_MAX];
	const char *name = rh_msg_type_name(orig[3]);
	size_t plen = len - RH_PROTO_HDR, bad = 0, first = 0;
	char why[512] = "";
	memcpy(copy, orig, len);
	for (size_t k = every ? 0 : plen - 1; k < plen; k++) {
		size_t n = resized(copy, len, k);
		if (!rejected_quiet(tmp, n, name, why, sizeof why) && !bad++)
			first = k;
	}
	CHECK(bad == 0, "%s: %zu truncations accepted, first at %zu of %zu: %s", name, bad, first,
	      plen, why);
	for (size_t g = 1; g <= grow && RH_PROTO_HDR + plen + g <= RH_PROTO_MAX; g++) {
		size_t n = resized(copy, len, plen + g);
		int ok = rejected_quiet(tmp, n, name, why, sizeof why);
		CHECK(ok, "%s: payload %zu + %zu accepted: %s", name, plen, g, why);
	}
	/* The header alone disagreeing with the received length. */
	memcpy(tmp, copy, len);
	le32(tmp + 4, (uint32_t)plen + 1);
	REJECT(tmp, len, "header says", "length field one too big");
}

/* --------------------------------------------------------------- REGIONS */

static void fill_regions(rh_region_desc *d, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		d[i] = (rh_region_desc){.region = 3 * i + 1,
		                        .ident = 0x9e3779b9u * i,
		                        .top = (i * 4096u) & 0xfffff,
		                        .kind = (uint8_t)(1 + i % 4),
		                        .evicted_pct = (uint8_t)(i % 101),
		                        .survivals = (uint16_t)(65535 - i)};
}

static void regions_round_trip(uint32_t n, uint32_t flags)
{
	rh_region_desc *d = calloc(n + 1, sizeof *d), *back = calloc(n + 1, sizeof *back);
	if (!d || !back) {
		CHECK(!"out of memory");
		return;
	}
	fill_regions(d, n);
	rh_msg m = {.type = RH_MSG_REGIONS, .seq = 77};
	m.u.regions =
	        (rh_msg_regions){.epoch = 0x123456789abcdefull, .flags = flags, .n = n, .ents = d};
	size_t len = enc(&m);
	CHECK(len == RH_PROTO_HDR + 16 + 16 * (size_t)n, "REGIONS of %u: %zu bytes", n, len);
	rh_msg r;
	if (!dec(buf, len, &r))
		goto out;
	CHECK(r.type == RH_MSG_REGIONS && r.seq == 77);
	CHECK(r.u.regions.epoch == 0x123456789abcdefull && r.u.regions.flags == flags &&
	      r.u.regions.n == n);
	uint32_t diff = 0;
	for (uint32_t i = 0; i < n; i++) {
		rh_msg_regions_get(&r.u.regions, i, &back[i]);
		if (memcmp(&back[i], &d[i], sizeof d[i]) != 0)
			diff++;
	}
	CHECK(diff == 0, "REGIONS of %u: %u entries differ", n, diff);
	r.u.regions.ents = back;
	same_bytes(&r, buf, len);
	wrong_lengths(buf, len, 16, n <= 8);
out:
	free(d);
	free(back);
}

static void regions_reject(void)
{
	rh_region_desc d[3];
	fill_regions(d, 3);
	rh_msg m = {.type = RH_MSG_REGIONS};
	m.u.regions = (rh_msg_regions){.epoch = 5, .flags = RH_REGIONS_FIRST, .n = 3, .ents = d};
	size_t len = enc(&m);
	rh_msg r;

	memcpy(tmp, buf, len);
	le32(pl(tmp, 8), 4);
	REJECT(tmp, len, "REGIONS: unknown flags", "REGIONS flag 4");
	le32(pl(tmp, 8), 0x80000000u | RH_REGIONS_LAST);
	REJECT(tmp, len, "REGIONS: unknown flags", "REGIONS high flag");

	/* n over the maximum, also where 16 * n wraps a u32 to the length sent. */
	memcpy(tmp, buf, len);
	le32(pl(tmp, 12), RH_REGIONS_MAX + 1);
	REJECT(tmp, len, "exceed", "REGIONS n = max + 1");
	size_t n = resized(buf, len, 16);
	le32(pl(tmp, 12), 0x10000000u);
	REJECT(tmp, n, "exceed", "REGIONS n wrapping");

	static const struct {
		uint8_t kind, pct;
		int ok;
	} cases[] = {{0, 0, 0},   {5, 0, 0},   {255, 0, 0}, {1, 101, 0},
	             {2, 255, 0}, {4, 100, 1}, {1, 0, 1}};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		memcpy(tmp, buf, len);
		uint8_t *e = pl(tmp, 16 + 16 * 2); /* the last entry */
		e[12] = cases[c].kind;
		e[13] = cases[c].pct;
		char what[64];
		snprintf(what, sizeof what, "REGIONS kind %u, %u%% evicted", cases[c].kind,
		         cases[c].pct);
		if (cases[c].ok) {
			CHECK(dec(tmp, len, &r), "%s", what);
		} else {
			REJECT(tmp, len, cases[c].pct > 100 ? "evicted" : "kind", what);
		}
	}
}

/* ----------------------------------------------------------------- ROOTS */

static void roots_round_trip(uint32_t n, uint32_t flags)
{
	uint32_t *o = calloc(n + 1, sizeof *o), *back = calloc(n + 1, sizeof *back);
	if (!o || !back) {
		CHECK(!"out of memory");
		return;
	}
	for (uint32_t i = 0; i < n; i++)
		o[i] = i * 2654435761u;
	rh_msg m = {.type = RH_MSG_ROOTS, .seq = 3};
	m.u.roots = (rh_msg_roots){.region = 0xfffffffeu, .flags = flags, .n = n, .offs = o};
	size_t len = enc(&m);
	CHECK(len == RH_PROTO_HDR + 12 + 4 * (size_t)n, "ROOTS of %u: %zu bytes", n, len);
	rh_msg r;
	if (!dec(buf, len, &r))
		goto out;
	CHECK(r.type == RH_MSG_ROOTS && r.seq == 3 && r.u.roots.region == 0xfffffffeu &&
	      r.u.roots.flags == flags && r.u.roots.n == n);
	uint32_t diff = 0;
	for (uint32_t i = 0; i < n; i++) {
		back[i] = rh_msg_roots_get(&r.u.roots, i);
		diff += back[i] != o[i];
	}
	CHECK(diff == 0, "ROOTS of %u: %u offsets differ", n, diff);
	r.u.roots.offs = back;
	same_bytes(&r, buf, len);
	wrong_lengths(buf, len, 4, n <= 8);
out:
	free(o);
	free(back);
}

static void roots_reject(void)
{
	static const uint32_t o[] = {0, 2, 4};
	rh_msg m = {.type = RH_MSG_ROOTS};
	m.u.roots = (rh_msg_roots){.region = 1, .flags = 0, .n = 3, .offs = o};
	size_t len = enc(&m);
	memcpy(tmp, buf, len);
	le32(pl(tmp, 4), 4);
	REJECT(tmp, len, "ROOTS: unknown flags", "ROOTS flag 4");
	le32(pl(tmp, 4), 0);
	le32(pl(tmp, 8), RH_ROOTS_MAX + 1);
	REJECT(tmp, len, "exceed", "ROOTS n = max + 1");
	size_t n = resized(buf, len, 12);
	le32(pl(tmp, 8), 0x40000000u);
	REJECT(tmp, n, "exceed", "ROOTS n wrapping");
}

/* ---------------------------------------------------------------- MARKED */

static void fill_marked(rh_marked_desc *d, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		d[i] = (rh_marked_desc){.region = i,
		                        .ident = ~i,
		                        .top = 0xffffff00u - i,
		                        .objects = i * 7,
		                        .live_bytes = (uint64_t)(0xffffff00u - i) - i % 3};
}

static void marked_round_trip(uint32_t n)
{
	rh_marked_desc *d = calloc(n + 1, sizeof *d), *back = calloc(n + 1, sizeof *back);
	if (!d || !back) {
		CHECK(!"out of memory");
		return;
	}
	fill_marked(d, n);
	rh_msg m = {.type = RH_MSG_MARKED, .seq = 12};
	m.u.marked = (rh_msg_marked){.n = n, .ents = d};
	size_t len = enc(&m);
	CHECK(len == RH_PROTO_HDR + 4 + 24 * (size_t)n, "MARKED of %u: %zu bytes", n, len);
	rh_msg r;
	if (!dec(buf, len, &r))
		goto out;
	CHECK(r.type == RH_MSG_MARKED && r.seq == 12 && r.u.marked.n == n);
	uint32_t diff = 0;
	for (uint32_t i = 0; i < n; i++) {
		rh_msg_marked_get(&r.u.marked, i, &back[i]);
		diff += memcmp(&back[i], &d[i], sizeof d[i]) != 0;
	}
	CHECK(diff == 0, "MARKED of %u: %u entries differ", n, diff);
	r.u.marked.ents = back;
	same_bytes(&r, buf, len);
	wrong_lengths(buf, len, 24, n <= 8);
out:
	free(d);
	free(back);
}

static void marked_reject(void)
{
	rh_marked_desc d[2];
	fill_marked(d, 2);
	d[1].top = 4096;
	d[1].live_bytes = 4097;
	rh_msg m = {.type = RH_MSG_MARKED};
	m.u.marked = (rh_msg_marked){.n = 2, .ents = d};
	size_t len = enc(&m);
	REJECT(buf, len, "live bytes above top", "MARKED live_bytes = top + 1");
	d[1].live_bytes = 1ull << 40; /* would fit a u32 top only if truncated */
	len = enc(&m);
	REJECT(buf, len, "live bytes above top", "MARKED live_bytes 2^40");
	d[1].live_bytes = 4096;
	len = enc(&m);
	rh_msg r;
	CHECK(dec(buf, len, &r), "MARKED live_bytes = top is legal");

	memcpy(tmp, buf, len);
	le32(pl(tmp, 0), RH_MARKED_MAX + 1);
	REJECT(tmp, len, "exceed", "MARKED n = max + 1");
	size_t n = resized(buf, len, 4);
	le32(pl(tmp, 0), 0x20000000u); /* 24 * n wraps to 0 */
	REJECT(tmp, n, "exceed", "MARKED n wrapping");
}

/* -------------------------------------------------------------- EVACUATE */

static void evacuate_round_trip(uint32_t n_src, uint32_t n_dst, uint32_t flags)
{
	uint32_t n = n_src + n_dst;
	uint32_t *v = calloc(n + 1, sizeof *v), *back = calloc(n + 1, sizeof *back);
	if (!v || !back) {
		CHECK(!"out of memory");
		return;
	}
	for (uint32_t i = 0; i < n; i++) /* distinct, not sorted */
		v[i] = (i * 40503u) % 65521u + (i & 1) * 0x80000000u;
	rh_msg m = {.type = RH_MSG_EVACUATE, .seq = 13};
	m.u.evacuate = (rh_msg_evacuate){
	        .id = ~0ull, .flags = flags, .n_src = n_src, .n_dst = n_dst, .regions = v};
	size_t len = enc(&m);
	CHECK(len == RH_PROTO_HDR + 20 + 4 * (size_t)n, "EVACUATE of %u + %u: %zu bytes", n_src,
	      n_dst, len);
	rh_msg r;
	if (!dec(buf, len, &r))
		goto out;
	CHECK(r.type == RH_MSG_EVACUATE && r.seq == 13 && r.u.evacuate.id == ~0ull &&
	      r.u.evacuate.flags == flags && r.u.evacuate.n_src == n_src &&
	      r.u.evacuate.n_dst == n_dst);
	uint32_t diff = 0;
	for (uint32_t i = 0; i < n; i++) {
		back[i] = rh_msg_evacuate_region(&r.u.evacuate, i);
		diff += back[i] != v[i];
	}
	CHECK(diff == 0, "EVACUATE of %u + %u: %u regions differ", n_src, n_dst, diff);
	r.u.evacuate.regions = back;
	same_bytes(&r, buf, len);
	wrong_lengths(buf, len, 4, n <= 8);
out:
	free(v);
	free(back);
}

/* An EVACUATE of n_src + n_dst regions, all distinct but for v[a] = v[b]. */
static void evacuate_dup(uint32_t n_src, uint32_t n_dst, uint32_t a, uint32_t b)
{
	uint32_t n = n_src + n_dst;
	uint32_t *v = calloc(n, sizeof *v);
	if (!v) {
		CHECK(!"out of memory");
		return;
	}
	for (uint32_t i = 0; i < n; i++)
		v[i] = n - i;
	v[b] = v[a];
	rh_msg m = {.type = RH_MSG_EVACUATE};
	m.u.evacuate = (rh_msg_evacuate){.id = 1, .n_src = n_src, .n_dst = n_dst, .regions = v};
	size_t len = enc(&m);
	char what[96], sub[64];
	snprintf(what, sizeof what, "EVACUATE %u + %u, [%u] == [%u]", n_src, n_dst, a, b);
	snprintf(sub, sizeof sub, "region %u listed twice", v[a]);
	REJECT(buf, len, sub, what);
	free(v);
}

static void evacuate_reject(void)
{
	evacuate_dup(2, 0, 0, 1);                          /* two sources */
	evacuate_dup(3, 2, 1, 4);                          /* source is a destination */
	evacuate_dup(1, 3, 2, 3);                          /* two destinations */
	evacuate_dup(1000, 1000, 0, 1999);                 /* past the stack scratch */
	evacuate_dup(1, RH_EVACUATE_MAX - 1, 5000, 16000); /* at the maximum */

	static const uint32_t v[] = {10, 11, 12};
	rh_msg m = {.type = RH_MSG_EVACUATE};
	m.u.evacuate = (rh_msg_evacuate){.id = 9, .n_src = 0, .n_dst = 3, .regions = v};
	size_t len = enc(&m);
	REJECT(buf, len, "no source", "EVACUATE n_src 0");
	m.u.evacuate.n_dst = 0;
	len = enc(&m);
	REJECT(buf, len, "no source", "EVACUATE 0 + 0");

	m.u.evacuate = (rh_msg_evacuate){.id = 9, .n_src = 2, .n_dst = 1, .regions = v};
	len = enc(&m);
	memcpy(tmp, buf, len);
	le32(pl(tmp, 8), 2);
	REJECT(tmp, len, "EVACUATE: unknown flags", "EVACUATE flag 2");
	le32(pl(tmp, 8), RH_EVAC_NO_REMARK | 0x100);
	REJECT(tmp, len, "EVACUATE: unknown flags", "EVACUATE flags 0x101");

	/* Counts over the maximum, and sums that wrap a u32 to the length sent. */
	memcpy(tmp, buf, len);
	le32(pl(tmp, 12), RH_EVACUATE_MAX);
	le32(pl(tmp, 16), 1);
	REJECT(tmp, len, "exceed", "EVACUATE n = max + 1");
	size_t n = resized(buf, len, 20);
	le32(pl(tmp, 12), 0xffffffffu);
	le32(pl(tmp, 16), 1);
	REJECT(tmp, n, "exceed", "EVACUATE n_src + n_dst wrapping to 0");
	le32(pl(tmp, 12), 0x40000000u);
	le32(pl(tmp, 16), 0);
	REJECT(tmp, n, "exceed", "EVACUATE 4 * n wrapping to 0");
	le32(pl(tmp, 12), 1);
	le32(pl(tmp, 16), 0xffffffffu);
	REJECT(tmp, n, "exceed", "EVACUATE n_dst wrapping");

	m.u.evacuate.n_src = RH_EVACUATE_MAX;
	CHECK(rh_msg_encode(&m, buf, sizeof buf) == 0);
	m.u.evacuate.n_src = 0xffffffffu;
	m.u.evacuate.n_dst = 1;
	CHECK(rh_msg_encode(&m, buf, sizeof buf) == 0);
}

/* ------------------------------------------------------------- EVAC_REFS */

static void evac_refs_round_trip(uint32_t n)
{
	rh_ref_pair *pr = calloc(n + 1, sizeof *pr), *back = calloc(n + 1, sizeof *back);
	if (!pr || !back) {
		CHECK(!"out of memory");
		return;
	}
	for (uint32_t i = 0; i < n; i++)
		pr[i] = (rh_ref_pair){.slot = 0x400000000000ull + 8ull * i,
		                      .value = i % 5 ? 0xfffffffffffffff8ull - 16ull * i : 0};
	rh_msg m = {.type = RH_MSG_EVAC_REFS, .seq = 14};
	m.u.evac_refs = (rh_msg_evac_refs){.id = 42, .n = n, .pairs = pr};
	size_t len = enc(&m);
	CHECK(len == RH_PROTO_HDR + 12 + 16 * (size_t)n, "EVAC_REFS of %u: %zu bytes", n, len);
	rh_msg r;
	if (!dec(buf, len, &r))
		goto out;
	CHECK(r.type == RH_MSG_EVAC_REFS && r.seq == 14 && r.u.evac_refs.id == 42 &&
	      r.u.evac_refs.n == n);
	uint32_t diff = 0;
	for (uint32_t i = 0; i < n; i++) {
		rh_msg_evac_refs_get(&r.u.evac_refs, i, &back[i]);
		diff += back[i].slot != pr[i].slot || back[i].value != pr[i].value;
	}
	CHECK(diff == 0, "EVAC_REFS of %u: %u pairs differ", n, diff);
	r.u.evac_refs.pairs = back;
	same_bytes(&r, buf, len);
	wrong_lengths(buf, len, 16, n <= 8);
out:
	free(pr);
	free(back);
}

static void evac_refs_reject(void)
{
	rh_ref_pair pr[2] = {{0x1000, 0x2000}, {0x3000, 0x4000}};
	rh_msg m = {.type = RH_MSG_EVAC_REFS};
	m.u.evac_refs = (rh_msg_evac_refs){.id = 1, .n = 2, .pairs = pr};
	for (int bit = 0; bit < 3; bit++) {
		for (int which = 0; which < 2; which++) {
			pr[1] = (rh_ref_pair){0x3000, 0x4000};
			if (which)
				pr[1].value |= 1u << bit;
			else
				pr[1].slot |= 1u << bit;
			size_t len = enc(&m);
			char what[64];
			snprintf(what, sizeof what, "EVAC_REFS %s + %d", which ? "value" : "slot",
			         1 << bit);
			REJECT(buf, len, "aligned", what);
		}
	}
	pr[1] = (rh_ref_pair){0x3000, 0x4000};
	size_t len = enc(&m);
	memcpy(tmp, buf, len);
	le32(pl(tmp, 8), RH_EVAC_REFS_MAX + 1);
	REJECT(tmp, len, "exceed", "EVAC_REFS n = max + 1");
	size_t n = resized(buf, len, 12);
	le32(pl(tmp, 8), 0x10000000u);
	REJECT(tmp, n, "exceed", "EVAC_REFS n wrapping");
}

/* ------------------------------------------------------------- EVACUATED */

static void evacuated_round_trip(uint32_t n_src, uint32_t n_dst)
{
	rh_evac_src *s = calloc(n_src + 1, sizeof *s), *sb = calloc(n_src + 1, sizeof *sb);
	rh_evac_dst *d = calloc(n_dst + 1, sizeof *d), *db = calloc(n_dst + 1, sizeof *db);
	if (!s || !sb || !d || !db) {
		CHECK(!"out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < n_src; i++)
		s[i] = (rh_evac_src){.region = i + 100,
		                     .status = i % 3 ? RH_EVAC_MOVED : RH_EVAC_KEPT,
		                     .live_bytes = (uint64_t)i << 33 | i};
	for (uint32_t i = 0; i < n_dst; i++)
		d[i] = (rh_evac_dst){.region = ~i, .top = i * 8};
	rh_msg m = {.type = RH_MSG_EVACUATED, .seq = 15};
	m.u.evacuated = (rh_msg_evacuated){.id = 7,
	                                   .n_src = n_src,
	                                   .n_dst = n_dst,
	                                   .remark_ns = 1,
	                                   .evac_ns = 2,
	                                   .bytes_copied = 3ull << 40,
	                                   .objects_copied = 4,
	                                   .pages_rescanned = ~0ull,
	                                   .src = s,
	                                   .dst = d};
	size_t len = enc(&m);
	CHECK(len == RH_PROTO_HDR + 56 + 16 * (size_t)n_src + 8 * (size_t)n_dst,
	      "EVACUATED of %u + %u: %zu bytes", n_src, n_dst, len);
	rh_msg r;
	if (!dec(buf, len, &r))
		goto out;
	const rh_msg_evacuated *e = &r.u.evacuated;
	CHECK(r.type == RH_MSG_EVACUATED && r.seq == 15 && e->id == 7 && e->n_src == n_src &&
	      e->n_dst == n_dst && e->remark_ns == 1 && e->evac_ns == 2 &&
	      e->bytes_copied == 3ull << 40 && e->objects_copied == 4 &&
	      e->pages_rescanned == ~0ull);
	uint32_t diff = 0;
	for (uint32_t i = 0; i < n_src; i++) {
		rh_msg_evacuated_src(e, i, &sb[i]);
		diff += memcmp(&sb[i], &s[i], sizeof s[i]) != 0;
	}
	for (uint32_t i = 0; i < n_dst; i++) {
		rh_msg_evacuated_dst(e, i, &db[i]);
		diff += memcmp(&db[i], &d[i], sizeof d[i]) != 0;
	}
	CHECK(diff == 0, "EVACUATED of %u + %u: %u entries differ", n_src, n_dst, diff);
	r.u.evacuated.src = sb;
	r.u.evacuated.dst = db;
	same_bytes(&r, buf, len);
	wrong_lengths(buf, len, 16, n_src + n_dst <= 8);
out:
	free(s);
	free(sb);
	free(d);
	free(db);
}

static void evacuated_reject(void)
{
	rh_evac_src s[2] = {{1, RH_EVAC_MOVED, 64}, {2, 2, 0}};
	rh_evac_dst d[1] = {{3, 64}};
	rh_msg m = {.type = RH_MSG_EVACUATED};
	m.u.evacuated = (rh_msg_evacuated){.id = 1, .n_src = 2, .n_dst = 1, .src = s, .dst = d};
	size_t len = enc(&m);
	REJECT(buf, len, "unknown status 2", "EVACUATED status 2");
	s[1].status = 0xffffffffu;
	len = enc(&m);
	REJECT(buf, len, "unknown status", "EVACUATED status ~0");
	s[1].status = RH_EVAC_KEPT;
	len = enc(&m);
	rh_msg r;
	CHECK(dec(buf, len, &r), "EVACUATED with a kept region");

	/* Counts whose byte total wraps a u32 to the 56 bytes sent. */
	static const uint32_t wrap[][2] = {{0x10000000u, 0},
	                                   {0, 0x20000000u},
	                                   {0x08000000u, 0x10000000u},
	                                   {0xffffffffu, 0xffffffffu}};
	for (size_t i = 0; i < sizeof wrap / sizeof wrap[0]; i++) {
		size_t n = resized(buf, len, 56);
		le32(pl(tmp, 8), wrap[i][0]);
		le32(pl(tmp, 12), wrap[i][1]);
		char what[64];
		snprintf(what, sizeof what, "EVACUATED %#x + %#x", wrap[i][0], wrap[i][1]);
		REJECT(tmp, n, "exceed", what);
	}
	/* Just over the message size in either array. */
	uint32_t src_max = (RH_PROTO_MAX - RH_PROTO_HDR - 56) / 16,
	         dst_max = (RH_PROTO_MAX - RH_PROTO_HDR - 56) / 8;
	size_t n = resized(buf, len, 56);
	le32(pl(tmp, 8), src_max + 1);
	le32(pl(tmp, 12), 0);
	REJECT(tmp, n, "exceed", "EVACUATED n_src over the size");
	le32(pl(tmp, 8), 0);
	le32(pl(tmp, 12), dst_max + 1);
	REJECT(tmp, n, "exceed", "EVACUATED n_dst over the size");
	m.u.evacuated = (rh_msg_evacuated){.n_src = src_max + 1};
	CHECK(rh_msg_encode(&m, buf, sizeof buf) == 0);
	m.u.evacuated = (rh_msg_evacuated){.n_dst = dst_max + 1};
	CHECK(rh_msg_encode(&m, buf, sizeof buf) == 0);
}

/* ------------------------------------------------------------- MARK_REFS */

static void fill_addrs(uint64_t *a, uint32_t n)
{
	/* All 64 bits in use somewhere, the top one included. */
	for (uint32_t i = 0; i < n; i++)
		a[i] = i % 3 == 2 ? 0xfffffffffffffff8ull - 8ull * i
		                  : 0x400000000000ull + ((uint64_t)i << 20) + 8ull * i;
}

static void mark_refs_round_trip(uint32_t n, uint32_t flags)
{
	uint64_t *a = calloc(n + 1, sizeof *a), *back = calloc(n + 1, sizeof *back);
	if (!a || !back) {
		CHECK(!"out of memory");
		goto out;
	}
	fill_addrs(a, n);
	rh_msg m = {.type = RH_MSG_MARK_REFS, .seq = 16};
	m.u.mark_refs =
	        (rh_msg_mark_refs){.partition = 0xfffffffdu, .flags = flags, .n = n, .addrs = a};
	size_t len = enc(&m);
	CHECK(len == RH_PROTO_HDR + 12 + 8 * (size_t)n, "MARK_REFS of %u: %zu bytes", n, len);
	rh_msg r;
	if (!dec(buf, len, &r))
		goto out;
	CHECK(r.type == RH_MSG_MARK_REFS && r.seq == 16 && r.u.mark_refs.partition == 0xfffffffdu &&
	      r.u.mark_refs.flags == flags && r.u.mark_refs.n == n);
	uint32_t diff = 0;
	for (uint32_t i = 0; i < n; i++) {
		back[i] = rh_msg_mark_refs_get(&r.u.mark_refs, i);
		diff += back[i] != a[i];
	}
	CHECK(diff == 0, "MARK_REFS of %u: %u addresses differ", n, diff);
	r.u.mark_refs.addrs = back;
	same_bytes(&r, buf, len);
	wrong_lengths(buf, len, 8, n <= 8);
out:
	free(a);
	free(back);
}

static void mark_refs_reject(void)
{
	uint64_t a[3] = {0x1000, 0x2008, 0x3ff8};
	rh_msg m = {.type = RH_MSG_MARK_REFS};
	m.u.mark_refs =
	        (rh_msg_mark_refs){.partition = 2, .flags = RH_MARK_ROOTS, .n = 3, .addrs = a};
	size_t len = enc(&m);
	rh_msg r;
	CHECK(dec(buf, len, &r), "MARK_REFS with ROOTS");

	memcpy(tmp, buf, len);
	le32(pl(tmp, 4), 2);
	REJECT(tmp, len, "MARK_REFS: unknown flags", "MARK_REFS flag 2");
	le32(pl(tmp, 4), 0x80000000u | RH_MARK_ROOTS);
	REJECT(tmp, len, "MARK_REFS: unknown flags", "MARK_REFS high flag");

	memcpy(tmp, buf, len);
	le32(pl(tmp, 8), RH_MARK_REFS_MAX + 1);
	REJECT(tmp, len, "exceed", "MARK_REFS n = max + 1");
	size_t n = resized(buf, len, 12);
	le32(pl(tmp, 8), 0x20000000u); /* 8 * n wraps a u32 to 0 */
	REJECT(tmp, n, "exceed", "MARK_REFS n wrapping");

	/* Null, and each misalignment, first and last in the batch. */
	for (uint32_t at = 0; at < 3; at += 2) {
		for (uint64_t off = 0; off < 8; off++) {
			a[0] = 0x1000;
			a[2] = 0x3ff8;
			a[at] = off ? a[at] + off : 0;
			len = enc(&m);
			char what[64], sub[32];
			snprintf(what, sizeof what, "MARK_REFS address %u = %#llx", at,
			         (unsigned long long)a[at]);
			snprintf(sub, sizeof sub, "address %u is", at);
			REJECT(buf, len, sub, what);
		}
	}
	a[0] = 0x1000;
	a[2] = 0xfffffffffffffff8ull;
	len = enc(&m);
	CHECK(dec(buf, len, &r), "MARK_REFS address 2^64 - 8");
}

/* -------------------------------------------------------------- MARK_ACK */

static void mark_ack(void)
{
	static const uint32_t ok[] = {1, 2, 0xffffffffu};
	rh_msg m = {.type = RH_MSG_MARK_ACK, .seq = 17}, r;
	size_t len = 0;
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		m.u.mark_ack.batches = ok[i];
		len = enc(&m);
		CHECK(len == RH_PROTO_HDR + 4, "MARK_ACK: %zu bytes", len);
		if (dec(buf, len, &r)) {
			CHECK(r.type == RH_MSG_MARK_ACK && r.seq == 17 &&
			              r.u.mark_ack.batches == ok[i],
			      "MARK_ACK of %u", ok[i]);
			same_bytes(&r, buf, len);
		}
	}
	wrong_lengths(buf, len, 8, 1);
	m.u.mark_ack.batches = 0;
	len = enc(&m);
	REJECT(buf, len, "MARK_ACK: acknowledges 0", "MARK_ACK of 0");
}

/* ------------------------------------------------------------------ FULL */

static void full(void)
{
	static const struct {
		uint64_t id;
		uint32_t phase;
	} ok[] = {{0, RH_FULL_BEGIN},
	          {~0ull, RH_FULL_END},
	          {0x8000000000000001ull, RH_FULL_BEGIN},
	          {7, RH_FULL_BEGIN_CONC}};
	rh_msg m = {.type = RH_MSG_FULL, .seq = 18}, r;
	size_t len = 0;
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		m.u.full = (rh_msg_full){.id = ok[i].id, .phase = ok[i].phase};
		len = enc(&m);
		CHECK(len == RH_PROTO_HDR + 16, "FULL: %zu bytes", len);
		CHECK(pl(buf, 12)[0] == 0 && pl(buf, 12)[1] == 0 && pl(buf, 12)[2] == 0 &&
		              pl(buf, 12)[3] == 0,
		      "FULL: reserved field written as 0");
		if (dec(buf, len, &r)) {
			CHECK(r.type == RH_MSG_FULL && r.seq == 18 && r.u.full.id == ok[i].id &&
			              r.u.full.phase == ok[i].phase,
			      "FULL %zu", i);
			same_bytes(&r, buf, len);
		}
	}
	wrong_lengths(buf, len, 16, 1);

	static const uint32_t bad_phase[] = {3, 4, 0x80000000u, 0xffffffffu};
	for (size_t i = 0; i < sizeof bad_phase / sizeof bad_phase[0]; i++) {
		m.u.full = (rh_msg_full){.id = 1, .phase = bad_phase[i]};
		len = enc(&m);
		char what[48];
		snprintf(what, sizeof what, "FULL phase %#x", bad_phase[i]);
		REJECT(buf, len, "FULL: unknown phase", what);
	}
	/* Each byte of the reserved field alone. */
	m.u.full = (rh_msg_full){.id = 1, .phase = RH_FULL_END};
	len = enc(&m);
	for (int b = 0; b < 4; b++) {
		memcpy(tmp, buf, len);
		pl(tmp, 12)[b] = (uint8_t)(1u << (2 * b + 1));
		char what[48];
		snprintf(what, sizeof what, "FULL reserved byte %d", b);
		REJECT(tmp, len, "FULL: reserved", what);
	}
}

/* ------------------------------------------------------------- FULL_DONE */

static void fill_live(rh_region_live *e, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		e[i] = (rh_region_live){.region = 0xffffffffu - 5 * i,
		                        .live_bytes =
		                                i % 2 ? (uint64_t)i << 40 | 8 * i : ~0ull - i};
}

static void full_done_round_trip(uint32_t n, uint32_t flags)
{
	rh_region_live *e = calloc(n + 1, sizeof *e), *back = calloc(n + 1, sizeof *back);
	if (!e || !back) {
		CHECK(!"out of memory");
		goto out;
	}
	fill_live(e, n);
	rh_msg m = {.type = RH_MSG_FULL_DONE, .seq = 19};
	m.u.full_done = (rh_msg_full_done){.id = 0x0123456789abcdefull,
	                                   .bytes_marked = 5ull << 33,
	                                   .mark_ns = ~0ull - 1,
	                                   .flags = flags,
	                                   .n = n,
	                                   .ents = e};
	size_t len = enc(&m);
	CHECK(len == RH_PROTO_HDR + 32 + 16 * (size_t)n, "FULL_DONE of %u: %zu bytes", n, len);
	rh_msg r;
	if (!dec(buf, len, &r))
		goto out;
	const rh_msg_full_done *f = &r.u.full_done;
	CHECK(r.type == RH_MSG_FULL_DONE && r.seq == 19 && f->id == 0x0123456789abcdefull &&
	      f->bytes_marked == 5ull << 33 && f->mark_ns == ~0ull - 1 && f->flags == flags &&
	      f->n == n);
	uint32_t diff = 0, reserved = 0;
	for (uint32_t i = 0; i < n; i++) {
		rh_msg_full_done_get(f, i, &back[i]);
		diff += back[i].region != e[i].region || back[i].live_bytes != e[i].live_bytes;
		/* The encoder owns the reserved word: the struct has none. */
		const uint8_t *q = pl(buf, 32 + 16 * (size_t)i + 4);
		reserved += (q[0] | q[1] | q[2] | q[3]) != 0;
	}
	CHECK(diff == 0, "FULL_DONE of %u: %u entries differ", n, diff);
	CHECK(reserved == 0, "FULL_DONE of %u: %u reserved fields not 0", n, reserved);
	r.u.full_done.ents = back;
	same_bytes(&r, buf, len);
	wrong_lengths(buf, len, 16, n <= 8);
out:
	free(e);
	free(back);
}

static void full_done_reject(void)
{
	rh_region_live e[3];
	fill_live(e, 3);
	rh_msg m = {.type = RH_MSG_FULL_DONE};
	m.u.full_done = (rh_msg_full_done){.id = 4, .flags = RH_FULL_DONE_FIRST, .n = 3, .ents = e};
	size_t len = enc(&m);

	memcpy(tmp, buf, len);
	le32(pl(tmp, 24), 4);
	REJECT(tmp, len, "FULL_DONE: unknown flags", "FULL_DONE flag 4");
	le32(pl(tmp, 24), 0x80000000u | RH_FULL_DONE_LAST);
	REJECT(tmp, len, "FULL_DONE: unknown flags", "FULL_DONE high flag");

	memcpy(tmp, buf, len);
	le32(pl(tmp, 28), RH_FULL_DONE_MAX + 1);
	REJECT(tmp, len, "exceed", "FULL_DONE n = max + 1");
	size_t n = resized(buf, len, 32);
	le32(pl(tmp, 28), 0x10000000u); /* 16 * n wraps a u32 to 0 */
	REJECT(tmp, n, "exceed", "FULL_DONE n wrapping");

	for (uint32_t i = 0; i < 3; i++) {
		memcpy(tmp, buf, len);
		le32(pl(tmp, 32 + 16 * (size_t)i + 4), i == 1 ? 0x80000000u : 1u << i);
		char what[48], sub[48];
		snprintf(what, sizeof what, "FULL_DONE entry %u reserved", i);
		snprintf(sub, sizeof sub, "region %u: reserved", e[i].region);
		REJECT(tmp, len, sub, what);
	}
}

/* ------------------------------------------------------------- FIX_CARDS */

/* Largest counts that fill a FIX_CARDS exactly: 24 + 4 nm + 8 nc + 24 nw
 * = RH_PROTO_MAX - RH_PROTO_HDR (65 500 bytes after the fixed part). */
#define FIX_ROOM (RH_PROTO_MAX - RH_PROTO_HDR - RH_FIX_CARDS_HDR)
_Static_assert(FIX_ROOM == 4 * 1 + 8 * 8187, "1 moved region and 8187 cards fill a FIX_CARDS");
_Static_assert(FIX_ROOM == 4 * 1 + 24 * 2729, "1 moved region and 2729 writes fill a FIX_CARDS");

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void fill_fix_cards(uint32_t *mv, uint32_t nm, uint64_t *cards, uint32_t nc,
                           rh_slot_write *w, uint32_t nw)
{
	/* Every bit of each field in use somewhere; cards on 512-byte bounds. */
	for (uint32_t i = 0; i < nm; i++)
		mv[i] = i % 2 ? 0xffffffffu - 3 * i : 5 * i + 2;
	for (uint32_t i = 0; i < nc; i++)
		cards[i] = i % 3 == 2 ? 0xfffffffffffffe00ull - 512ull * i
		                      : 0x400000000000ull + ((uint64_t)i << 9);
	for (uint32_t i = 0; i < nw; i++)
		w[i] = (rh_slot_write){.slot = 0x400000000008ull + 24ull * i,
		                       .old = i % 4 ? 0x400010000000ull + 16ull * i : 0,
		                       .value = 0xfffffffffffffff8ull - 8ull * i};
}

/* Returns the encoded length (0 if it did not encode). */
static size_t fix_cards_round_trip(uint32_t nm, uint32_t nc, uint32_t nw)
{
	size_t len = 0;
	uint32_t *mv = calloc(nm + 1, sizeof *mv), *mvb = calloc(nm + 1, sizeof *mvb);
	uint64_t *c = calloc(nc + 1, sizeof *c), *cb = calloc(nc + 1, sizeof *cb);
	rh_slot_write *w = calloc(nw + 1, sizeof *w), *wb = calloc(nw + 1, sizeof *wb);
	if (!mv || !mvb || !c || !cb || !w || !wb) {
		CHECK(!"out of memory");
		goto out;
	}
	fill_fix_cards(mv, nm, c, nc, w, nw);
	rh_msg m = {.type = RH_MSG_FIX_CARDS, .seq = 20};
	m.u.fix_cards = (rh_msg_fix_cards){.id = 0xfedcba9876543210ull,
	                                   .n_moved = nm,
	                                   .n_cards = nc,
	                                   .n_writes = nw,
	                                   .moved = mv,
	                                   .cards = c,
	                                   .writes = w};
	memset(buf, 0xa5, sizeof buf); /* the encoder must write every byte */
	len = enc(&m);
	size_t want =
	        RH_PROTO_HDR + RH_FIX_CARDS_HDR + 4 * (size_t)nm + 8 * (size_t)nc + 24 * (size_t)nw;
	CHECK(len == want, "FIX_CARDS of %u, %u, %u: %zu bytes, want %zu", nm, nc, nw, len, want);
	if (len != want)
		goto out;

	/* The wire layout of docs/protocol.md: fixed part, cards, writes, and
	 * the moved regions last (so that every u64 stays 8-byte aligned). */
	CHECK(rd32(pl(buf, 8)) == nm && rd32(pl(buf, 12)) == nc && rd32(pl(buf, 16)) == nw &&
	              rd32(pl(buf, 20)) == 0,
	      "FIX_CARDS of %u, %u, %u: counts and reserved field on the wire", nm, nc, nw);
	size_t wo = RH_FIX_CARDS_HDR + 8 * (size_t)nc, mo = wo + 24 * (size_t)nw;
	uint32_t misplaced = 0;
	for (uint32_t i = 0; i < nc; i++)
		misplaced += rd64(pl(buf, RH_FIX_CARDS_HDR + 8 * (size_t)i)) != c[i];
	for (uint32_t i = 0; i < nw; i++) {
		const uint8_t *q = pl(buf, wo + 24 * (size_t)i);
		misplaced += rd64(q) != w[i].slot || rd64(q + 8) != w[i].old ||
		             rd64(q + 16) != w[i].value;
	}
	for (uint32_t i = 0; i < nm; i++)
		misplaced += rd32(pl(buf, mo + 4 * (size_t)i)) != mv[i];
	CHECK(misplaced == 0, "FIX_CARDS of %u, %u, %u: %u fields off their documented place", nm,
	      nc, nw, misplaced);

	rh_msg r;
	if (!dec(buf, len, &r))
		goto out;
	const rh_msg_fix_cards *f = &r.u.fix_cards;
	CHECK(r.type == RH_MSG_FIX_CARDS && r.seq == 20 && f->id == 0xfedcba9876543210ull &&
	      f->n_moved == nm && f->n_cards == nc && f->n_writes == nw);
	uint32_t diff = 0;
	for (uint32_t i = 0; i < nm; i++) {
		mvb[i] = rh_msg_fix_cards_moved(f, i);
		diff += mvb[i] != mv[i];
	}
	for (uint32_t i = 0; i < nc; i++) {
		cb[i] = rh_msg_fix_cards_card(f, i);
		diff += cb[i] != c[i];
	}
	for (uint32_t i = 0; i < nw; i++) {
		rh_msg_fix_cards_write(f, i, &wb[i]);
		diff += wb[i].slot != w[i].slot || wb[i].old != w[i].old ||
		        wb[i].value != w[i].value;
	}
	CHECK(diff == 0, "FIX_CARDS of %u, %u, %u: %u entries differ", nm, nc, nw, diff);
	r.u.fix_cards.moved = mvb;
	r.u.fix_cards.cards = cb;
	r.u.fix_cards.writes = wb;
	same_bytes(&r, buf, len);
	wrong_lengths(buf, len, 24, nm + nc + nw <= 8);
out:
	free(mv);
	free(mvb);
	free(c);
	free(cb);
	free(w);
	free(wb);
	return len;
}

static void fix_cards_reject(void)
{
	uint32_t mv[2] = {7, 9};
	uint64_t c[2] = {0x400000000200ull, 0x400000000400ull};
	rh_slot_write w[2] = {{0x400000100008ull, 0x400000200010ull, 0x400000300018ull},
	                      {0x400000100010ull, 0, 0x400000300020ull}};
	rh_msg m = {.type = RH_MSG_FIX_CARDS}, r;
	m.u.fix_cards = (rh_msg_fix_cards){.id = 5,
	                                   .n_moved = 2,
	                                   .n_cards = 2,
	                                   .n_writes = 2,
	                                   .moved = mv,
	                                   .cards = c,
	                                   .writes = w};
	size_t len = enc(&m), plen = len - RH_PROTO_HDR;
	CHECK(dec(buf, len, &r), "FIX_CARDS 2, 2, 2");
	static uint8_t good[RH_PROTO_MAX];
	memcpy(good, buf, len);

	/* Shorter than the fixed part, whatever it says. */
	for (size_t k = 0; k < RH_FIX_CARDS_HDR; k++) {
		size_t n = resized(good, len, k);
		char what[48];
		snprintf(what, sizeof what, "FIX_CARDS payload of %zu bytes", k);
		REJECT(tmp, n, "need at least 24", what);
	}

	/* Each byte of the reserved field alone. */
	for (int b = 0; b < 4; b++) {
		memcpy(tmp, good, len);
		pl(tmp, 20)[b] = (uint8_t)(0x80u >> b);
		char what[48];
		snprintf(what, sizeof what, "FIX_CARDS reserved byte %d", b);
		REJECT(tmp, len, "FIX_CARDS: reserved", what);
	}

	/* Counts one off the payload, and counts whose byte total, computed in
	 * 32 bits, would wrap to exactly the payload sent. */
	static const struct {
		uint32_t dm, dc, dw; /* added to n_moved, n_cards, n_writes */
		const char *what;
	} off[] = {
	        {1, 0, 0, "n_moved + 1"},
	        {0xffffffffu, 0, 0, "n_moved - 1"},
	        {0, 1, 0, "n_cards + 1"},
	        {0, 0xffffffffu, 0, "n_cards - 1"},
	        {0, 0, 1, "n_writes + 1"},
	        {0, 0, 0xffffffffu, "n_writes - 1"},
	        {0x40000000u, 0, 0, "n_moved + 2^30 (4 n wraps)"},
	        {0, 0x20000000u, 0, "n_cards + 2^29 (8 n wraps)"},
	        {0, 0xe0000000u, 0, "n_cards - 2^29 (8 n wraps)"},
	        {0, 0xffffffffu, 0x0aaaaaabu,
	         "n_writes + 0xaaaaaab, n_cards - 1 (24 n wraps to 8)"},
	        {0xc0000000u, 0x20000000u, 0, "n_moved - 2^30, n_cards + 2^29"},
	};
	for (size_t i = 0; i < sizeof off / sizeof off[0]; i++) {
		memcpy(tmp, good, len);
		le32(pl(tmp, 8), 2 + off[i].dm);
		le32(pl(tmp, 12), 2 + off[i].dc);
		le32(pl(tmp, 16), 2 + off[i].dw);
		char what[128];
		snprintf(what, sizeof what, "FIX_CARDS %s", off[i].what);
		REJECT(tmp, len, "inconsistent with payload", what);
	}
	/* The fixed part alone, with counts whose 32-bit total wraps to 0, or
	 * that are merely huge. */
	static const uint32_t wrap[][3] = {{0x40000000u, 0, 0},
	                                   {0, 0x20000000u, 0},
	                                   {0, 0, 0x20000000u},
	                                   {0x80000000u, 0x20000000u, 0x20000000u},
	                                   {0xffffffffu, 0xffffffffu, 0xffffffffu},
	                                   {0, 0xffffffffu, 0}};
	for (size_t i = 0; i < sizeof wrap / sizeof wrap[0]; i++) {
		size_t n = resized(good, len, RH_FIX_CARDS_HDR);
		le32(pl(tmp, 8), wrap[i][0]);
		le32(pl(tmp, 12), wrap[i][1]);
		le32(pl(tmp, 16), wrap[i][2]);
		char what[96];
		snprintf(what, sizeof what, "FIX_CARDS %#x, %#x, %#x in 24 bytes", wrap[i][0],
		         wrap[i][1], wrap[i][2]);
		REJECT(tmp, n, "inconsistent with payload", what);
	}
	CHECK(plen == 24 + 4 * 2 + 8 * 2 + 24 * 2);

	/* Nothing to do, and cards without the regions that say what moved. */
	m.u.fix_cards.n_cards = 0;
	m.u.fix_cards.n_writes = 0;
	len = enc(&m);
	REJECT(buf, len, "FIX_CARDS: neither cards nor writes", "FIX_CARDS 2, 0, 0");
	m.u.fix_cards.n_moved = 0;
	len = enc(&m);
	REJECT(buf, len, "FIX_CARDS: neither cards nor writes", "FIX_CARDS 0, 0, 0");
	m.u.fix_cards.n_cards = 2;
	len = enc(&m);
	REJECT(buf, len, "2 cards but no moved region", "FIX_CARDS 0, 2, 0");
	m.u.fix_cards.n_writes = 1;
	len = enc(&m);
	REJECT(buf, len, "2 cards but no moved region", "FIX_CARDS 0, 2, 1");
	m.u.fix_cards.n_cards = 0;
	len = enc(&m);
	CHECK(dec(buf, len, &r), "FIX_CARDS 0, 0, 1 (writes need no moved region)");
	m.u.fix_cards.n_moved = 1;
	m.u.fix_cards.n_cards = 1;
	m.u.fix_cards.n_writes = 0;
	len = enc(&m);
	CHECK(dec(buf, len, &r), "FIX_CARDS 1, 1, 0");

	/* Each low bit of each card, slot, old and value, first and last. */
	m.u.fix_cards.n_moved = 2;
	m.u.fix_cards.n_cards = 2;
	m.u.fix_cards.n_writes = 2;
	for (uint32_t at = 0; at < 2; at++) {
		for (int bit = 0; bit < 3; bit++) {
			for (int field = 0; field < 4; field++) {
				uint64_t c2[2] = {c[0], c[1]};
				rh_slot_write w2[2] = {w[0], w[1]};
				uint64_t *f = field == 0   ? &c2[at]
				              : field == 1 ? &w2[at].slot
				              : field == 2 ? &w2[at].old
				                           : &w2[at].value;
				*f |= 1ull << bit;
				m.u.fix_cards.cards = c2;
				m.u.fix_cards.writes = w2;
				len = enc(&m);
				static const char *const fname[] = {"card", "slot", "old", "value"};
				char what[64], sub[32];
				snprintf(what, sizeof what, "FIX_CARDS %s %u + %d", fname[field],
				         at, 1 << bit);
				snprintf(sub, sizeof sub, "%s %u", field ? "write" : "card", at);
				REJECT(buf, len, sub, what);
			}
		}
	}
	/* The codec checks only the word alignment: card bounds (512 bytes)
	 * and the partition are the tracer's to check. */
	uint64_t c3[2] = {0x400000000208ull, 0xfffffffffffffff8ull};
	m.u.fix_cards.cards = c3;
	m.u.fix_cards.writes = w;
	len = enc(&m);
	CHECK(dec(buf, len, &r), "FIX_CARDS card at 0x...208 is the tracer's to refuse");

	/* One past the largest messages: the encoder refuses, even when a
	 * 32-bit total would wrap to something small. */
	static const uint32_t past[][3] = {
	        {2, 8187, 0},        {1, 8188, 0},
	        {0, 0, 2730},        {2, 0, 2729},
	        {16374, 1, 0},       {2, 5187, 1000},
	        {0x40000000u, 1, 0}, {1, 0x20000000u, 0},
	        {0, 0, 0x0aaaaaabu}, {0xffffffffu, 0xffffffffu, 0xffffffffu}};
	/* Arrays as long as the first six need, so that an encoder that does
	 * not refuse them fails the check instead of reading past an array. */
	static uint32_t bmv[FIX_ROOM / 4 + 1];
	static uint64_t bc[FIX_ROOM / 8 + 1];
	static rh_slot_write bw[FIX_ROOM / 24 + 1];
	for (size_t i = 0; i < sizeof past / sizeof past[0]; i++) {
		m.u.fix_cards = (rh_msg_fix_cards){.n_moved = past[i][0],
		                                   .n_cards = past[i][1],
		                                   .n_writes = past[i][2],
		                                   .moved = bmv,
		                                   .cards = bc,
		                                   .writes = bw};
		CHECK(rh_msg_encode(&m, buf, sizeof buf) == 0, "FIX_CARDS of %u, %u, %u encodes",
		      past[i][0], past[i][1], past[i][2]);
	}
}

/* ----------------------------------------------------------- CARDS_FIXED */

static void fill_fix_ents(rh_fix_ent *e, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		e[i] = (rh_fix_ent){.kind = RH_FIX_REF + i % 3,
		                    .region = i % 2 ? 0xffffffffu - i : 3 * i,
		                    .addr = i % 5 == 4 ? 0xfffffffffffffe00ull - 8ull * i
		                                       : 0x400000000000ull + ((uint64_t)i << 9),
		                    .value = i % 3 ? 0xfffffffffffffff8ull - 16ull * i : 0};
}

static size_t cards_fixed_round_trip(uint32_t n, uint32_t flags)
{
	size_t len = 0;
	rh_fix_ent *e = calloc(n + 1, sizeof *e), *back = calloc(n + 1, sizeof *back);
	if (!e || !back) {
		CHECK(!"out of memory");
		goto out;
	}
	fill_fix_ents(e, n);
	rh_msg m = {.type = RH_MSG_CARDS_FIXED, .seq = 21};
	m.u.cards_fixed = (rh_msg_cards_fixed){.id = ~0ull - 20, .flags = flags, .n = n, .ents = e};
	len = enc(&m);
	CHECK(len == RH_PROTO_HDR + 16 + 24 * (size_t)n, "CARDS_FIXED of %u: %zu bytes", n, len);
	CHECK(len < RH_PROTO_HDR + 16 || rd32(pl(buf, 8)) == flags, "CARDS_FIXED flags at 8");
	rh_msg r;
	if (!dec(buf, len, &r))
		goto out;
	const rh_msg_cards_fixed *f = &r.u.cards_fixed;
	CHECK(r.type == RH_MSG_CARDS_FIXED && r.seq == 21 && f->id == ~0ull - 20 &&
	      f->flags == flags && f->n == n);
	uint32_t diff = 0;
	for (uint32_t i = 0; i < n; i++) {
		rh_msg_cards_fixed_get(f, i, &back[i]);
		diff += back[i].kind != e[i].kind || back[i].region != e[i].region ||
		        back[i].addr != e[i].addr || back[i].value != e[i].value;
	}
	CHECK(diff == 0, "CARDS_FIXED of %u: %u entries differ", n, diff);
	r.u.cards_fixed.ents = back;
	same_bytes(&r, buf, len);
	wrong_lengths(buf, len, 24, n <= 8);
out:
	free(e);
	free(back);
	return len;
}

static void cards_fixed_reject(void)
{
	rh_fix_ent e[3];
	fill_fix_ents(e, 3);
	rh_msg m = {.type = RH_MSG_CARDS_FIXED}, r;
	m.u.cards_fixed =
	        (rh_msg_cards_fixed){.id = 8, .flags = RH_CARDS_FIXED_LAST, .n = 3, .ents = e};
	size_t len = enc(&m);
	CHECK(dec(buf, len, &r), "CARDS_FIXED of 3");

	for (size_t k = 0; k < 16; k++) {
		size_t n = resized(buf, len, k);
		char what[48];
		snprintf(what, sizeof what, "CARDS_FIXED payload of %zu bytes", k);
		REJECT(tmp, n, "need at least 16", what);
	}

	static const uint32_t bad_flags[] = {2, 4, 0x80000000u | RH_CARDS_FIXED_LAST, 0xffffffffu};
	for (size_t i = 0; i < sizeof bad_flags / sizeof bad_flags[0]; i++) {
		memcpy(tmp, buf, len);
		le32(pl(tmp, 8), bad_flags[i]);
		char what[48];
		snprintf(what, sizeof what, "CARDS_FIXED flags %#x", bad_flags[i]);
		REJECT(tmp, len, "CARDS_FIXED: unknown flags", what);
	}

	memcpy(tmp, buf, len);
	le32(pl(tmp, 12), 4);
	REJECT(tmp, len, "inconsistent with payload", "CARDS_FIXED n + 1");
	le32(pl(tmp, 12), 2);
	REJECT(tmp, len, "inconsistent with payload", "CARDS_FIXED n - 1");
	le32(pl(tmp, 12), RH_CARDS_FIXED_MAX + 1);
	REJECT(tmp, len, "exceed", "CARDS_FIXED n = max + 1");
	/* 24 n wrapping a u32 to the 72 entry bytes sent (3 + 2^32 / 8). */
	le32(pl(tmp, 12), 0x20000003u);
	REJECT(tmp, len, "exceed", "CARDS_FIXED n wrapping to 3 entries");
	size_t n = resized(buf, len, 16);
	le32(pl(tmp, 12), 0x20000000u);
	REJECT(tmp, n, "exceed", "CARDS_FIXED n wrapping to 0");
	le32(pl(tmp, 12), 0xffffffffu);
	REJECT(tmp, n, "exceed", "CARDS_FIXED n = 2^32 - 1");

	/* Unknown kinds, first and last entry. */
	static const uint32_t bad_kind[] = {0, RH_FIX_FAILED + 1, 0x80000001u, 0xffffffffu};
	for (uint32_t at = 0; at < 3; at += 2) {
		for (size_t i = 0; i < sizeof bad_kind / sizeof bad_kind[0]; i++) {
			fill_fix_ents(e, 3);
			e[at].kind = bad_kind[i];
			len = enc(&m);
			char what[64], sub[64];
			snprintf(what, sizeof what, "CARDS_FIXED entry %u kind %#x", at,
			         bad_kind[i]);
			snprintf(sub, sizeof sub, "entry %u: unknown kind %u", at, bad_kind[i]);
			REJECT(buf, len, sub, what);
		}
	}
	/* Each low bit of addr and value, first and last entry. */
	for (uint32_t at = 0; at < 3; at += 2) {
		for (int bit = 0; bit < 3; bit++) {
			for (int which = 0; which < 2; which++) {
				fill_fix_ents(e, 3);
				if (which)
					e[at].value |= 1ull << bit;
				else
					e[at].addr |= 1ull << bit;
				len = enc(&m);
				char what[64], sub[32];
				snprintf(what, sizeof what, "CARDS_FIXED entry %u %s + %d", at,
				         which ? "value" : "addr", 1 << bit);
				snprintf(sub, sizeof sub, "entry %u: address", at);
				REJECT(buf, len, sub, what);
			}
		}
	}
	/* Every kind is legal with any region and a null value. */
	fill_fix_ents(e, 3);
	for (uint32_t i = 0; i < 3; i++) {
		e[i].region = 0xffffffffu;
		e[i].value = 0;
	}
	len = enc(&m);
	CHECK(dec(buf, len, &r), "CARDS_FIXED of REF, UNRESOLVED, FAILED");
}

/* ------------------------------------------------------- shared behaviour */

static void encoder_limits(void)
{
	static rh_region_desc d[RH_REGIONS_MAX + 1];
	static uint32_t u[RH_ROOTS_MAX + 1];
	static rh_marked_desc k[RH_MARKED_MAX + 1];
	static rh_ref_pair pr[RH_EVAC_REFS_MAX + 1];
	static uint64_t a[RH_MARK_REFS_MAX + 1];
	static rh_region_live lv[RH_FULL_DONE_MAX + 1];
	static uint32_t mv[FIX_ROOM / 4 + 1];
	static uint64_t cd[FIX_ROOM / 8 + 1];
	static rh_slot_write wr[FIX_ROOM / 24 + 1];
	static rh_fix_ent fx[RH_CARDS_FIXED_MAX + 1];
	rh_msg m = {.type = RH_MSG_REGIONS};
	m.u.regions = (rh_msg_regions){.n = RH_REGIONS_MAX + 1, .ents = d};
	CHECK(rh_msg_encode(&m, buf, sizeof buf) == 0);
	m = (rh_msg){.type = RH_MSG_ROOTS};
	m.u.roots = (rh_msg_roots){.n = RH_ROOTS_MAX + 1, .offs = u};
	CHECK(rh_msg_encode(&m, buf, sizeof buf) == 0);
	m = (rh_msg){.type = RH_MSG_MARKED};
	m.u.marked = (rh_msg_marked){.n = RH_MARKED_MAX + 1, .ents = k};
	CHECK(rh_msg_encode(&m, buf, sizeof buf) == 0);
	m = (rh_msg){.type = RH_MSG_EVAC_REFS};
	m.u.evac_refs = (rh_msg_evac_refs){.n = RH_EVAC_REFS_MAX + 1, .pairs = pr};
	CHECK(rh_msg_encode(&m, buf, sizeof buf) == 0);
	m = (rh_msg){.type = RH_MSG_MARK_REFS};
	m.u.mark_refs = (rh_msg_mark_refs){.n = RH_MARK_REFS_MAX + 1, .addrs = a};
	CHECK(rh_msg_encode(&m, buf, sizeof buf) == 0);
	m.u.mark_refs.n = 0xffffffffu;
	CHECK(rh_msg_encode(&m, buf, sizeof buf) == 0);
	m = (rh_msg){.type = RH_MSG_FULL_DONE};
	m.u.full_done = (rh_msg_full_done){.n = RH_FULL_DONE_MAX + 1, .ents = lv};
	CHECK(rh_msg_encode(&m, buf, sizeof buf) == 0);
	m.u.full_done.n = 0xffffffffu;
	CHECK(rh_msg_encode(&m, buf, sizeof buf) == 0);
	/* FIX_CARDS: one entry past an exact fit in each array, and counts
	 * whose 32-bit byte total wraps. */
	m = (rh_msg){.type = RH_MSG_FIX_CARDS};
	m.u.fix_cards = (rh_msg_fix_cards){
	        .n_moved = 1, .n_cards = FIX_ROOM / 8, .moved = mv, .cards = cd, .writes = wr};
	CHECK(rh_msg_encode(&m, buf, sizeof buf) == RH_PROTO_MAX);
	m.u.fix_cards.n_cards++;
	CHECK(rh_msg_encode(&m, buf, sizeof buf) == 0);
	m.u.fix_cards = (rh_msg_fix_cards){
	        .n_moved = 1, .n_writes = FIX_ROOM / 24, .moved = mv, .cards = cd, .writes = wr};
	CHECK(rh_msg_encode(&m, buf, sizeof buf) == RH_PROTO_MAX);
	m.u.fix_cards.n_writes++;
	CHECK(rh_msg_encode(&m, buf, sizeof buf) == 0);
	m.u.fix_cards = (rh_msg_fix_cards){
	        .n_moved = FIX_ROOM / 4 - 2, .n_cards = 1, .moved = mv, .cards = cd, .writes = wr};
	CHECK(rh_msg_encode(&m, buf, sizeof buf) == RH_PROTO_MAX);
	m.u.fix_cards.n_moved++;
	CHECK(rh_msg_encode(&m, buf, sizeof buf) == 0);
	m.u.fix_cards = (rh_msg_fix_cards){
	        .n_moved = 0x40000000u, .n_cards = 0x20000000u, .n_writes = 0x20000000u};
	CHECK(rh_msg_encode(&m, buf, sizeof buf) == 0);
	m.u.fix_cards.n_writes = 0xffffffffu;
	CHECK(rh_msg_encode(&m, buf, sizeof buf) == 0);
	m = (rh_msg){.type = RH_MSG_CARDS_FIXED};
	m.u.cards_fixed = (rh_msg_cards_fixed){.n = RH_CARDS_FIXED_MAX + 1, .ents = fx};
	CHECK(rh_msg_encode(&m, buf, sizeof buf) == 0);
	m.u.cards_fixed.n = 0xaaaaaabu; /* 24 n wraps a u32 to 8 */
	CHECK(rh_msg_encode(&m, buf, sizeof buf) == 0);
	m.u.cards_fixed.n = 0xffffffffu;
	CHECK(rh_msg_encode(&m, buf, sizeof buf) == 0);
	m.u.cards_fixed.n = RH_CARDS_FIXED_MAX;
	CHECK(rh_msg_encode(&m, buf, sizeof buf) == RH_PROTO_HDR + 16 + 24 * RH_CARDS_FIXED_MAX);

	/* A capacity one byte short of each message. */
	rh_evac_src s[1] = {{1, RH_EVAC_MOVED, 0}};
	rh_evac_dst dd[1] = {{2, 0}};
	rh_msg ms[12] = {{.type = RH_MSG_REGIONS},   {.type = RH_MSG_ROOTS},
	                 {.type = RH_MSG_MARKED},    {.type = RH_MSG_EVACUATE},
	                 {.type = RH_MSG_EVAC_REFS}, {.type = RH_MSG_EVACUATED},
	                 {.type = RH_MSG_MARK_REFS}, {.type = RH_MSG_MARK_ACK},
	                 {.type = RH_MSG_FULL},      {.type = RH_MSG_FULL_DONE},
	                 {.type = RH_MSG_FIX_CARDS}, {.type = RH_MSG_CARDS_FIXED}};
	fill_regions(d, 2);
	ms[0].u.regions = (rh_msg_regions){.n = 2, .ents = d};
	ms[1].u.roots = (rh_msg_roots){.n = 2, .offs = u};
	ms[2].u.marked = (rh_msg_marked){.n = 2, .ents = k};
	u[0] = 1;
	u[1] = 2;
	ms[3].u.evacuate = (rh_msg_evacuate){.n_src = 1, .n_dst = 1, .regions = u};
	ms[4].u.evac_refs = (rh_msg_evac_refs){.n = 2, .pairs = pr};
	ms[5].u.evacuated = (rh_msg_evacuated){.n_src = 1, .n_dst = 1, .src = s, .dst = dd};
	ms[6].u.mark_refs = (rh_msg_mark_refs){.n = 2, .addrs = a};
	ms[7].u.mark_ack.batches = 1;
	ms[8].u.full.phase = RH_FULL_END;
	ms[9].u.full_done = (rh_msg_full_done){.n = 2, .ents = lv};
	ms[10].u.fix_cards = (rh_msg_fix_cards){
	        .n_moved = 1, .n_cards = 1, .n_writes = 1, .moved = mv, .cards = cd, .writes = wr};
	ms[11].u.cards_fixed = (rh_msg_cards_fixed){.n = 2, .ents = fx};
	for (int i = 0; i < 12; i++) {
		size_t len = rh_msg_encode(&ms[i], buf, sizeof buf);
		CHECK(len > RH_PROTO_HDR, "%s encodes", rh_msg_type_name(ms[i].type));
		CHECK(rh_msg_encode(&ms[i], buf, len - 1) == 0, "%s fits in %zu bytes",
		      rh_msg_type_name(ms[i].type), len - 1);
		CHECK(rh_msg_encode(&ms[i], buf, len) == len, "%s in exactly %zu bytes",
		      rh_msg_type_name(ms[i].type), len);
	}
}

static void names(void)
{
	static const char *const want[] = {"REGIONS",   "ROOTS",     "MARKED",    "EVACUATE",
	                                   "EVAC_REFS", "EVACUATED", "MARK_REFS", "MARK_ACK",
	                                   "FULL",      "FULL_DONE", "FIX_CARDS", "CARDS_FIXED"};
	_Static_assert(sizeof want / sizeof want[0] == RH_MSG_TYPE_MAX - RH_MSG_REGIONS + 1,
	               "every type from REGIONS on");
	for (unsigned t = RH_MSG_REGIONS; t <= RH_MSG_TYPE_MAX; t++)
		CHECK(strcmp(rh_msg_type_name(t), want[t - RH_MSG_REGIONS]) == 0, "type %u is %s",
		      t, rh_msg_type_name(t));
	CHECK(strcmp(rh_msg_type_name(RH_MSG_FREE_OK), "FREE_OK") == 0);
	CHECK(strcmp(rh_msg_type_name(RH_MSG_TYPE_MAX + 1), "?") == 0);
}

static void versions(void)
{
	static const uint32_t v[] = {4, 5};
	rh_msg m = {.type = RH_MSG_EVACUATE};
	m.u.evacuate = (rh_msg_evacuate){.id = 2, .n_src = 1, .n_dst = 1, .regions = v};
	size_t len = enc(&m);
	CHECK(buf[2] == 4 && RH_PROTO_VERSION == 4);
	buf[2] = 2;
	REJECT(buf, len, "version 2", "EVACUATE with a v2 header");

	/* A v1 peer's HELLO, byte for byte what version 1 sent. */
	m = (rh_msg){.type = RH_MSG_HELLO, .seq = 1};
	m.u.hello = (rh_msg_hello){.partition = 1, .heap_size = 1ull << 30, .region_size = 1 << 20};
	len = enc(&m);
	buf[2] = 1;
	REJECT(buf, len, "version 1", "HELLO with a v1 header");
	buf[2] = 3;
	REJECT(buf, len, "version 3", "HELLO with a v3 header");
	buf[2] = 5;
	REJECT(buf, len, "version 5", "HELLO with a v5 header");

	/* Version 4's replica field names a partition a config can have. */
	m.u.hello.replica = RH_MAX_SERVERS + 1;
	len = enc(&m);
	REJECT(buf, len, "replica of partition", "HELLO with a replica beyond the servers");

	/* A type past the last one. */
	m = (rh_msg){.type = RH_MSG_BYE};
	len = enc(&m);
	buf[3] = RH_MSG_TYPE_MAX + 1;
	REJECT(buf, len, "unknown message type", "type RH_MSG_TYPE_MAX + 1");
	buf[3] = 0;
	REJECT(buf, len, "unknown message type", "type 0");
	buf[3] = 255;
	REJECT(buf, len, "unknown message type", "type 255");
}

/* v1 message types still round-trip under the current version. */
static void v1_messages(void)
{
	rh_msg m = {.type = RH_MSG_HELLO, .seq = 9}, r;
	m.u.hello = (rh_msg_hello){.partition = 3,
	                           .heap_base = 0x400000000000ull,
	                           .heap_size = 1ull << 32,
	                           .region_size = 1ull << 20,
	                           .part_base = 0x400080000000ull,
	                           .part_size = 1ull << 30};
	size_t len = enc(&m);
	CHECK(len == RH_PROTO_HDR + 48);
	if (dec(buf, len, &r))
		CHECK(r.type == RH_MSG_HELLO && r.seq == 9 &&
		      memcmp(&r.u.hello, &m.u.hello, sizeof m.u.hello) == 0);

	static const uint32_t regions[] = {0, 7, 0xffffffffu};
	m = (rh_msg){.type = RH_MSG_FREE, .seq = 10};
	m.u.free = (rh_msg_free){.n = 3, .regions = (const uint8_t *)regions};
	len = enc(&m);
	CHECK(len == RH_PROTO_HDR + 16);
	if (dec(buf, len, &r)) {
		CHECK(r.type == RH_MSG_FREE && r.seq == 10 && r.u.free.n == 3);
		for (uint32_t i = 0; i < 3; i++)
			CHECK(rh_msg_free_region(&r.u.free, i) == regions[i], "FREE region %u", i);
	}
}

int main(void)
{
	static const uint32_t some[] = {0, 1, 3};
	for (size_t i = 0; i < 3; i++) {
		regions_round_trip(some[i],
		                   some[i] ? RH_REGIONS_FIRST : RH_REGIONS_FIRST | RH_REGIONS_LAST);
		roots_round_trip(some[i], some[i] == 1 ? RH_ROOTS_FIRST | RH_ROOTS_REMARK : 0);
		marked_round_trip(some[i]);
		evac_refs_round_trip(some[i]);
	}
	regions_round_trip(RH_REGIONS_MAX, RH_REGIONS_LAST);
	roots_round_trip(RH_ROOTS_MAX, RH_ROOTS_REMARK);
	marked_round_trip(RH_MARKED_MAX);
	evac_refs_round_trip(RH_EVAC_REFS_MAX);

	evacuate_round_trip(1, 0, 0);
	evacuate_round_trip(2, 1, RH_EVAC_NO_REMARK);
	evacuate_round_trip(3, 2, 0);
	evacuate_round_trip(RH_EVACUATE_MAX - 100, 100, 0);
	evacuate_round_trip(RH_EVACUATE_MAX, 0, 0);

	evacuated_round_trip(0, 0);
	evacuated_round_trip(1, 0);
	evacuated_round_trip(3, 2);
	evacuated_round_trip((RH_PROTO_MAX - RH_PROTO_HDR - 56) / 16, 0);
	evacuated_round_trip(0, (RH_PROTO_MAX - RH_PROTO_HDR - 56) / 8);
	evacuated_round_trip((RH_PROTO_MAX - RH_PROTO_HDR - 56 - 8) / 16, 1);

	regions_reject();
	roots_reject();
	marked_reject();
	evacuate_reject();
	evac_refs_reject();
	evacuated_reject();

	static const uint32_t mark_flags[] = {0, RH_MARK_ROOTS, 0};
	static const uint32_t done_flags[] = {RH_FULL_DONE_FIRST | RH_FULL_DONE_LAST,
	                                      RH_FULL_DONE_FIRST, 0};
	for (size_t i = 0; i < 3; i++) {
		mark_refs_round_trip(some[i], mark_flags[i]);
		full_done_round_trip(some[i], done_flags[i]);
	}
	mark_refs_round_trip(RH_MARK_REFS_MAX, RH_MARK_ROOTS);
	full_done_round_trip(RH_FULL_DONE_MAX, RH_FULL_DONE_LAST);
	mark_refs_reject();
	mark_ack();
	full();
	full_done_reject();

	/* FIX_CARDS: writes only, with and without moved regions; cards only;
	 * both; then the largest messages, four of which fill RH_PROTO_MAX. */
	static const uint32_t fix_small[][3] = {{0, 0, 1}, {0, 0, 3}, {2, 0, 1}, {1, 1, 0},
	                                        {2, 5, 0}, {3, 2, 2}, {1, 1, 6}};
	for (size_t i = 0; i < sizeof fix_small / sizeof fix_small[0]; i++)
		fix_cards_round_trip(fix_small[i][0], fix_small[i][1], fix_small[i][2]);
	static const uint32_t fix_full[][3] = {
	        {1, 8187, 0}, {1, 0, 2729}, {1, 5187, 1000}, {16373, 1, 0}};
	for (size_t i = 0; i < sizeof fix_full / sizeof fix_full[0]; i++) {
		size_t len = fix_cards_round_trip(fix_full[i][0], fix_full[i][1], fix_full[i][2]);
		CHECK(len == RH_PROTO_MAX, "FIX_CARDS of %u, %u, %u: %zu bytes, want %u",
		      fix_full[i][0], fix_full[i][1], fix_full[i][2], len, RH_PROTO_MAX);
	}
	CHECK(fix_cards_round_trip(0, 0, 2729) == RH_PROTO_MAX - 4);
	fix_cards_reject();

	static const uint32_t fixed_flags[] = {RH_CARDS_FIXED_LAST, 0, RH_CARDS_FIXED_LAST};
	for (size_t i = 0; i < 3; i++)
		cards_fixed_round_trip(some[i], fixed_flags[i]);
	/* 24 does not divide the room: the largest leaves less than an entry. */
	size_t len = cards_fixed_round_trip(RH_CARDS_FIXED_MAX, 0);
	CHECK(len <= RH_PROTO_MAX && len + 24 > RH_PROTO_MAX, "CARDS_FIXED of %u: %zu bytes",
	      RH_CARDS_FIXED_MAX, len);
	cards_fixed_reject();

	encoder_limits();
	names();
	versions();
	v1_messages();
	return check_done();
}
