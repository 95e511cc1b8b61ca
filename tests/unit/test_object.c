/* Object walker: the slots enumerated for each layout on hand-built objects,
 * and detection of headers that disagree with the type table. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/common/check.h"
#include "gc/object.h"

struct seen {
	size_t n;
	size_t off[64];
	char *base;
};

static void record(void *ctx, void **slot)
{
	struct seen *s = ctx;
	if (s->n < 64)
		s->off[s->n] = (size_t)((char *)slot - s->base);
	s->n++;
}

static int walk(const rh_type_table *tt, void *obj, struct seen *s)
{
	memset(s, 0, sizeof *s);
	s->base = obj;
	return rh_object_slots(tt, obj, record, s);
}

static int seen_is(const struct seen *s, const size_t *want, size_t n)
{
	if (s->n != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s->off[i] != want[i])
			return 0;
	return 1;
}

static uint64_t *obj_at(uint64_t *buf, uint32_t type, size_t bytes)
{
	memset(buf, 0, bytes);
	buf[0] = rh_header_make(type, bytes);
	return buf;
}

enum { T_PAIR = 1, T_NODE, T_REFS, T_REFS_X, T_BYTES, T_REC, T_LEAF };

static void build(rh_type_table *tt)
{
	static const uint32_t pair[] = {8, 16}, node[] = {24, 8}, refs_x[] = {24, 16}, rec[] = {16},
	                      rec_e[] = {16, 0};
	const rh_type_desc ds[] = {
	        {"pair", RH_LAYOUT_FIXED, 24, 0, pair, 2, NULL, 0},
	        {"node", RH_LAYOUT_FIXED, 40, 0, node, 2, NULL, 0},
	        {"refs", RH_LAYOUT_REF_ARRAY, 16, 0, NULL, 0, NULL, 0},
	        {"refs+fields", RH_LAYOUT_REF_ARRAY, 32, 0, refs_x, 2, NULL, 0},
	        {"bytes", RH_LAYOUT_BYTE_ARRAY, 16, 0, NULL, 0, NULL, 0},
	        {"rec", RH_LAYOUT_RECORD_ARRAY, 24, 24, rec, 1, rec_e, 2},
	        {"leaf", RH_LAYOUT_FIXED, 16, 0, NULL, 0, NULL, 0},
	};
	rh_typetab_init(tt);
	for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++) {
		rh_error err;
		CHECK(rh_typetab_add(tt, &ds[i], &err) == i + 1, "%s", err.msg);
	}
}

static void test_slots(const rh_type_table *tt)
{
	uint64_t *buf = calloc(64, 8);
	struct seen s;

	obj_at(buf, T_PAIR, 24);
	CHECK(walk(tt, buf, &s) == 0 && seen_is(&s, (size_t[]){8, 16}, 2));
	CHECK(rh_object_valid(tt, buf, 24) == 1);

	/* declared {24, 8}: visited in address order */
	obj_at(buf, T_NODE, 40);
	CHECK(walk(tt, buf, &s) == 0 && seen_is(&s, (size_t[]){8, 24}, 2));

	obj_at(buf, T_LEAF, 16);
	CHECK(walk(tt, buf, &s) == 0 && s.n == 0);

	obj_at(buf, T_REFS, 16 + 3 * 8);
	buf[1] = 3;
	CHECK(walk(tt, buf, &s) == 0 && seen_is(&s, (size_t[]){16, 24, 32}, 3));
	CHECK(rh_object_valid(tt, buf, 40) == 1);

	obj_at(buf, T_REFS, 16);
	buf[1] = 0; /* empty array: no slots */
	CHECK(walk(tt, buf, &s) == 0 && s.n == 0);

	/* fixed-part pointers first, then the elements */
	obj_at(buf, T_REFS_X, 32 + 2 * 8);
	buf[1] = 2;
	CHECK(walk(tt, buf, &s) == 0 && seen_is(&s, (size_t[]){16, 24, 32, 40}, 4));

	/* byte arrays round up to 8 and have no slots */
	obj_at(buf, T_BYTES, 24);
	buf[1] = 5;
	CHECK(walk(tt, buf, &s) == 0 && s.n == 0);
	CHECK(rh_object_valid(tt, buf, 24) == 1);
	buf[0] = rh_header_make(T_BYTES, 16); /* 16 + 5 bytes do not fit in 16 */
	CHECK(walk(tt, buf, &s) == -1);
	CHECK(rh_object_valid(tt, buf, 64) == 0);
	buf[1] = 8;
	buf[0] = rh_header_make(T_BYTES, 24);
	CHECK(walk(tt, buf, &s) == 0 && rh_object_valid(tt, buf, 24) == 1);

	/* record array: fixed {16}; element i at 24 + 24 i with pointers {0, 16} */
	obj_at(buf, T_REC, 24 + 2 * 24);
	buf[1] = 2;
	CHECK(walk(tt, buf, &s) == 0 && seen_is(&s, (size_t[]){16, 24, 40, 48, 64}, 5));
	CHECK(rh_object_valid(tt, buf, 72) == 1);

	/* gc bits other than bit 0 (forwarding) do not change the answer */
	obj_at(buf, T_PAIR, 24);
	buf[0] |= 0xfe;
	CHECK(walk(tt, buf, &s) == 0 && seen_is(&s, (size_t[]){8, 16}, 2));
	CHECK(rh_object_valid(tt, buf, 24) == 1);

	/* filler: any size >= 8, no slots */
	rh_fill(buf, 64);
	CHECK(walk(tt, buf, &s) == 0 && s.n == 0);
	CHECK(rh_object_valid(tt, buf, 64) == 1);
	rh_fill(buf, 8);
	CHECK(rh_object_valid(tt, buf, 8) == 1);
	free(buf);
}

static void test_invalid(const rh_type_table *tt)
{
	uint64_t *buf = calloc(64, 8);
	struct seen s;

	/* fixed type with the wrong size */
	obj_at(buf, T_PAIR, 32);
	CHECK(walk(tt, buf, &s) == -1 && s.n == 0);
	CHECK(rh_object_valid(tt, buf, 64) == 0);

	/* unknown type id */
	obj_at(buf, 99, 24);
	CHECK(walk(tt, buf, &s) == -1 && s.n == 0);
	CHECK(rh_object_valid(tt, buf, 64) == 0);

	/* forwarding pointer */
	buf[0] = (uint64_t)(uintptr_t)(buf + 8) | RH_HDR_FWD;
	CHECK(walk(tt, buf, &s) == -1);
	CHECK(rh_object_valid(tt, buf, 64) == 0);

	/* size 0 (even for a filler) */
	buf[0] = rh_header_make(RH_FILLER_TYPE, 0);
	CHECK(walk(tt, buf, &s) == -1);
	CHECK(rh_object_valid(tt, buf, 64) == 0);

	/* larger than the space it is said to fit in */
	obj_at(buf, T_PAIR, 24);
	CHECK(rh_object_valid(tt, buf, 16) == 0);
	CHECK(rh_object_valid(tt, buf, 24) == 1);

	/* misaligned object address */
	CHECK(rh_object_valid(tt, (char *)buf + 4, 64) == 0);

	/* array length disagreeing with the header */
	obj_at(buf, T_REFS, 40);
	buf[1] = 4;
	CHECK(walk(tt, buf, &s) == -1 && s.n == 0);
	CHECK(rh_object_valid(tt, buf, 64) == 0);

	/* a length whose byte count overflows must not wrap to a match */
	obj_at(buf, T_REFS, 16);
	buf[1] = (uint64_t)1 << 61; /* 16 + 2^61 * 8 wraps to 16 */
	CHECK(walk(tt, buf, &s) == -1 && s.n == 0);
	CHECK(rh_object_valid(tt, buf, 64) == 0);
	obj_at(buf, T_REC, 24);
	buf[1] = UINT64_MAX;
	CHECK(walk(tt, buf, &s) == -1 && s.n == 0);

	/* array header smaller than the fixed part */
	obj_at(buf, T_REC, 16);
	CHECK(walk(tt, buf, &s) == -1);
	CHECK(rh_object_valid(tt, buf, 64) == 0);
	free(buf);
}

/* rh_object_valid must not read an array's length word past max_bytes: put
 * an 8-byte header right before an inaccessible page. */
static void test_no_overread(const rh_type_table *tt)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
	               -1, 0);
	CHECK(m != MAP_FAILED);
	if (m == MAP_FAILED)
		return;
	CHECK(mprotect(m + pg, (size_t)pg, PROT_NONE) == 0);
	uint64_t *h = (uint64_t *)(m + pg - 8);
	*h = rh_header_make(T_REFS, 8);
	CHECK(rh_object_valid(tt, h, 8) == 0);
	*h = rh_header_make(T_REFS, 16);
	CHECK(rh_object_valid(tt, h, 8) == 0);
	*h = rh_header_make(T_PAIR, 24);
	CHECK(rh_object_valid(tt, h, 8) == 0);
	*h = rh_header_make(RH_FILLER_TYPE, 8);
	CHECK(rh_object_valid(tt, h, 8) == 1);
	munmap(m, (size_t)pg * 2);
}

int main(void)
{
	rh_type_table tt;
	build(&tt);
	test_slots(&tt);
	test_invalid(&tt);
	test_no_overread(&tt);
	rh_typetab_free(&tt);
	return check_done();
}
