/* Seeds for fuzz_dgc (format in dgc_input.h): a real partition image (two
 * old regions of linked pairs with references across regions, into the
 * other partition and immediates; a humongous byte array) and the message
 * sequences the CPU server sends around it: concurrent marking then a
 * CSSC, an evacuation followed by card fixing, a full marking, and the
 * EVACUATE whose second source fails its check (issue 23, bug 1). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "gc/layout.h"
#include "gc/object.h"
#include "gc/region.h"
#include "gc/remset.h"
#include "gc/types.h"
#include "tests/fuzz/dgc_input.h"

typedef struct seed {
	uint8_t buf[1 << 18];
	size_t n;
} seed;

static void rec(seed *s, uint8_t tag, const void *p, size_t n)
{
	if (s->n + 3 + n > sizeof s->buf || n > 0xffff)
		rh_panic("seeds_dgc: a seed outgrew its buffer");
	s->buf[s->n++] = tag;
	s->buf[s->n++] = (uint8_t)n;
	s->buf[s->n++] = (uint8_t)(n >> 8);
	if (n)
		memcpy(s->buf + s->n, p, n);
	s->n += n;
}

static void patch(seed *s, uint8_t tag, uint32_t off, const void *p, size_t n)
{
	uint8_t b[4 + 8192];
	if (n > sizeof b - 4)
		rh_panic("seeds_dgc: patch too large");
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(off >> (8 * i));
	memcpy(b + 4, p, n);
	rec(s, tag, b, 4 + n);
}

static void msg(seed *s, const rh_msg *m)
{
	uint8_t b[RH_PROTO_MAX];
	size_t n = rh_msg_encode(m, b, sizeof b);
	if (!n)
		rh_panic("seeds_dgc: %s does not encode", rh_msg_type_name(m->type));
	unsigned k = 0;
	while (k < sizeof dgc_msg_types && dgc_msg_types[k] != m->type)
		k++;
	b[RH_PROTO_HDR - 1] = (uint8_t)k; /* the type byte, just before the payload */
	rec(s, DGC_MSG, b + RH_PROTO_HDR - 1, n - RH_PROTO_HDR + 1);
}

static void types(seed *s)
{
	static const uint32_t pair[] = {8, 16};
	rh_type_table t;
	rh_error err = {0};
	if (rh_typetab_init(&t) ||
	    !rh_typetab_add(
	            &t,
	            &(rh_type_desc){.name = "pair", .size = 24, .ptr_offsets = pair, .n_ptrs = 2},
	            &err) ||
	    !rh_typetab_add(
	            &t,
	            &(rh_type_desc){.name = "bytes", .layout = RH_LAYOUT_BYTE_ARRAY, .size = 16},
	            &err))
		rh_panic("seeds_dgc: type table: %s", err.msg);
	char *j = rh_typetab_to_json(&t);
	rec(s, DGC_TYPES, j, strlen(j));
	free(j);
	rh_typetab_free(&t);
}

#define PAIRS_4 100
#define PAIRS_5 50

static uint64_t pair_at(uint32_t local, unsigned i)
{
	return DGC_PART_BASE + local * DGC_REGION + i * 24ull;
}

/* Regions 4 and 5 (local 0 and 1): chains of pairs; region 6 a humongous
 * byte array. */
static void image(seed *s)
{
	uint64_t r4[PAIRS_4 * 3], r5[PAIRS_5 * 3];
	for (unsigned i = 0; i < PAIRS_4; i++) {
		r4[3 * i] = rh_header_make(1, 24);
		r4[3 * i + 1] = i + 1 < PAIRS_4 ? pair_at(0, i + 1) : 0;
		r4[3 * i + 2] = i % 10 == 0  ? DGC_HEAP_BASE + 16 /* partition 0 */
		                : i % 7 == 0 ? 0x2bull            /* an immediate */
		                : i % 3 == 0 ? pair_at(1, i % PAIRS_5)
		                             : 0;
	}
	for (unsigned i = 0; i < PAIRS_5; i++) {
		r5[3 * i] = rh_header_make(1, 24);
		r5[3 * i + 1] = i + 1 < PAIRS_5 ? pair_at(1, i + 1) : 0;
		r5[3 * i + 2] = i % 4 == 0 ? pair_at(0, i * 2) : 0;
	}
	patch(s, DGC_IMAGE, 0, r4, sizeof r4);
	patch(s, DGC_IMAGE, (uint32_t)DGC_REGION, r5, sizeof r5);
	uint64_t big[2] = {rh_header_make(2, DGC_REGION), DGC_REGION - 16};
	patch(s, DGC_IMAGE, (uint32_t)(2 * DGC_REGION), big, sizeof big);
	/* Region 4's eviction log: pages 0 and 1 written back since marking. */
	rh_region_meta m0 = {.log_head = 2, .log = {0, 1}};
	patch(s, DGC_META, 0, &m0, 16 + 8);
}

static void regions(seed *s, int humongous)
{
	rh_region_desc e[] = {{.region = 4,
	                       .ident = 1,
	                       .top = PAIRS_4 * 24,
	                       .kind = RH_REGION_OLD,
	                       .evicted_pct = 100},
	                      {.region = 5,
	                       .ident = 2,
	                       .top = PAIRS_5 * 24,
	                       .kind = RH_REGION_OLD,
	                       .evicted_pct = 90},
	                      {.region = 6,
	                       .ident = 3,
	                       .top = (uint32_t)DGC_REGION,
	                       .kind = RH_REGION_HUMONGOUS}};
	rh_msg m = {.type = RH_MSG_REGIONS};
	m.u.regions = (rh_msg_regions){.epoch = 1,
	                               .flags = RH_REGIONS_FIRST | RH_REGIONS_LAST,
	                               .n = humongous ? 3 : 2,
	                               .ents = e};
	msg(s, &m);
}

static void roots(seed *s, uint32_t region, uint32_t flags, const uint32_t *offs, uint32_t n)
{
	rh_msg m = {.type = RH_MSG_ROOTS};
	m.u.roots = (rh_msg_roots){.region = region, .flags = flags, .n = n, .offs = offs};
	msg(s, &m);
}

static void evacuate(seed *s, const uint32_t *r, uint32_t n_src, uint32_t n_dst)
{
	rh_msg m = {.type = RH_MSG_EVACUATE};
	m.u.evacuate = (rh_msg_evacuate){.id = 5, .n_src = n_src, .n_dst = n_dst, .regions = r};
	msg(s, &m);
}

static void start(seed *s, int humongous)
{
	s->n = 0;
	s->buf[s->n++] = 0;
	types(s);
	image(s);
	regions(s, humongous);
}

static void save(const char *dir, const char *name, const seed *s)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(s->buf, 1, s->n, f) != s->n || fclose(f) != 0)
		rh_panic("cannot write %s (does the directory exist?)", path);
}

void dgc_seeds(const char *dir);
void dgc_seeds(const char *dir)
{
	static seed s;
	static const uint32_t root0[] = {0}, remark[] = {0, 9}, evac[] = {4, 5, 7}, one[] = {5, 7};
	static const uint32_t bad[] = {4, 5, 7};

	start(&s, 0);
	roots(&s, 4, RH_ROOTS_FIRST, root0, 1);
	roots(&s, 5, RH_ROOTS_FIRST, root0, 1);
	rec(&s, DGC_MARK, NULL, 0);
	rec(&s, DGC_MARK, NULL, 0);
	roots(&s, 4, RH_ROOTS_FIRST | RH_ROOTS_REMARK, remark, 2);
	evacuate(&s, evac, 2, 1);
	save(dir, "msct-cssc", &s);

	start(&s, 0);
	roots(&s, 5, RH_ROOTS_FIRST | RH_ROOTS_REMARK, root0, 1);
	evacuate(&s, one, 1, 1);
	static const uint32_t moved[] = {5};
	static const uint64_t cards[] = {DGC_PART_BASE, DGC_PART_BASE + (1u << RH_CARD_SHIFT)};
	static const rh_slot_write writes[] = {
	        {DGC_PART_BASE + 16, 0, DGC_PART_BASE + 3 * DGC_REGION + 24}};
	rh_msg m = {.type = RH_MSG_FIX_CARDS};
	m.u.fix_cards = (rh_msg_fix_cards){.id = 6,
	                                   .n_moved = 1,
	                                   .n_cards = 2,
	                                   .n_writes = 1,
	                                   .moved = moved,
	                                   .cards = cards,
	                                   .writes = writes};
	msg(&s, &m);
	save(dir, "evacuate-fix-cards", &s);

	start(&s, 1);
	m = (rh_msg){.type = RH_MSG_FULL};
	m.u.full = (rh_msg_full){.id = 8, .phase = RH_FULL_BEGIN};
	msg(&s, &m);
	static const uint64_t refs[] = {DGC_PART_BASE, DGC_PART_BASE + 2 * DGC_REGION};
	rh_msg r = {.type = RH_MSG_MARK_REFS};
	r.u.mark_refs =
	        (rh_msg_mark_refs){.partition = 1, .flags = RH_MARK_ROOTS, .n = 2, .addrs = refs};
	msg(&s, &r);
	m.u.full.phase = RH_FULL_END;
	msg(&s, &m);
	save(dir, "full-marking", &s);

	/* Bug 1: region 5 is free, so the second source fails its check. */
	s.n = 0;
	s.buf[s.n++] = 0;
	types(&s);
	rh_region_desc e = {.region = 4, .ident = 1, .top = 4096, .kind = RH_REGION_OLD};
	m = (rh_msg){.type = RH_MSG_REGIONS};
	m.u.regions = (rh_msg_regions){.epoch = 1, .flags = 3, .n = 1, .ents = &e};
	msg(&s, &m);
	evacuate(&s, bad, 2, 1);
	save(dir, "evacuate-bad-second-source", &s);
}
