/* Heap basics through the public API: open/close, type registration and its
 * errors, allocation of every layout, object queries, zeroed memory,
 * humongous objects and allocation failure.
 *
 * Conservative scanning is off: every reference the test keeps lives in a
 * shadow-stack frame, so what is reclaimed and what moves is deterministic.
 * C locals holding heap pointers are reloaded from the frame after every
 * call that may collect. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "th.h"

#define REGION (256u << 10)

struct node {
	uint64_t hdr;
	struct node *left;
	struct node *right;
	uint64_t id;
};

struct refs {
	uint64_t hdr;
	uint64_t len;
	void *elem[];
};

struct bytes {
	uint64_t hdr;
	uint64_t len;
	uint8_t b[];
};

struct rec {
	void *a;
	uint64_t v;
	void *b;
};

struct recs {
	uint64_t hdr;
	uint64_t len;
	uint64_t extra;
	struct rec e[];
};

static rh_type_id t_node, t_refs, t_bytes, t_recs, t_wide;

static const uint32_t node_ptrs[] = {8, 16};
static const uint32_t rec_ptrs[] = {0, 16};
static const uint32_t wide_ptrs[] = {8, 56};

static void register_good(rh_heap *h)
{
	rh_type_desc d = {.name = "node", .layout = RH_LAYOUT_FIXED, .size = 32};
	d.ptr_offsets = node_ptrs;
	d.n_ptrs = 2;
	t_node = th_type(h, &d);

	rh_type_desc r = {.name = "refs", .layout = RH_LAYOUT_REF_ARRAY, .size = 16};
	t_refs = th_type(h, &r);

	rh_type_desc b = {.name = "bytes", .layout = RH_LAYOUT_BYTE_ARRAY, .size = 16};
	t_bytes = th_type(h, &b);

	rh_type_desc rc = {.name = "recs", .layout = RH_LAYOUT_RECORD_ARRAY, .size = 24};
	rc.elem_size = 24;
	rc.elem_ptr_offsets = rec_ptrs;
	rc.n_elem_ptrs = 2;
	t_recs = th_type(h, &rc);

	rh_type_desc w = {.name = "wide", .layout = RH_LAYOUT_FIXED, .size = 64};
	w.ptr_offsets = wide_ptrs;
	w.n_ptrs = 2;
	t_wide = th_type(h, &w);

	rh_type_id ids[] = {t_node, t_refs, t_bytes, t_recs, t_wide};
	for (size_t i = 0; i < 5; i++) {
		CHECK(ids[i] >= 1 && ids[i] < RH_MAX_TYPES, "type id %u", ids[i]);
		for (size_t j = 0; j < i; j++)
			CHECK(ids[i] != ids[j], "ids %zu and %zu both %u", i, j, ids[i]);
	}
}

/* Every malformed descriptor is refused with RH_EINVAL and a message. */
static void register_bad(rh_heap *h)
{
	static const uint32_t off0[] = {0};
	static const uint32_t off8[] = {8};
	static const uint32_t off12[] = {12};
	static const uint32_t off16[] = {16};
	static const uint32_t off32[] = {32};
	static const uint32_t off4[] = {4};
	static uint32_t many[RH_MAX_PTR_FIELDS + 1];
	for (uint32_t i = 0; i <= RH_MAX_PTR_FIELDS; i++)
		many[i] = 8 + 8 * i;

	struct bad {
		const char *why;
		rh_type_desc d;
	} bad[] = {
	        {"no name", {.name = NULL, .layout = RH_LAYOUT_FIXED, .size = 16}},
	        {"empty name", {.name = "", .layout = RH_LAYOUT_FIXED, .size = 16}},
	        {"duplicate name", {.name = "node", .layout = RH_LAYOUT_FIXED, .size = 16}},
	        {"unknown layout", {.name = "b1", .layout = (rh_layout)9, .size = 16}},
	        {"size 0", {.name = "b2", .layout = RH_LAYOUT_FIXED, .size = 0}},
	        {"size not 8-multiple", {.name = "b3", .layout = RH_LAYOUT_FIXED, .size = 20}},
	        {"ptr at header",
	         {.name = "b4",
	          .layout = RH_LAYOUT_FIXED,
	          .size = 32,
	          .ptr_offsets = off0,
	          .n_ptrs = 1}},
	        {"unaligned ptr",
	         {.name = "b5",
	          .layout = RH_LAYOUT_FIXED,
	          .size = 32,
	          .ptr_offsets = off12,
	          .n_ptrs = 1}},
	        {"ptr past the end",
	         {.name = "b6",
	          .layout = RH_LAYOUT_FIXED,
	          .size = 32,
	          .ptr_offsets = off32,
	          .n_ptrs = 1}},
	        {"n_ptrs without offsets",
	         {.name = "b7",
	          .layout = RH_LAYOUT_FIXED,
	          .size = 32,
	          .ptr_offsets = NULL,
	          .n_ptrs = 2}},
	        {"too many ptrs",
	         {.name = "b8",
	          .layout = RH_LAYOUT_FIXED,
	          .size = 8 * (RH_MAX_PTR_FIELDS + 2),
	          .ptr_offsets = many,
	          .n_ptrs = RH_MAX_PTR_FIELDS + 1}},
	        {"array smaller than its length word",
	         {.name = "b9", .layout = RH_LAYOUT_REF_ARRAY, .size = 8}},
	        {"byte array smaller than its length word",
	         {.name = "b10", .layout = RH_LAYOUT_BYTE_ARRAY, .size = 8}},
	        {"ptr on the length word",
	         {.name = "b11",
	          .layout = RH_LAYOUT_REF_ARRAY,
	          .size = 24,
	          .ptr_offsets = off8,
	          .n_ptrs = 1}},
	        {"record array without element size",
	         {.name = "b12", .layout = RH_LAYOUT_RECORD_ARRAY, .size = 16, .elem_size = 0}},
	        {"element ptr past the element",
	         {.name = "b13",
	          .layout = RH_LAYOUT_RECORD_ARRAY,
	          .size = 16,
	          .elem_size = 16,
	          .elem_ptr_offsets = off16,
	          .n_elem_ptrs = 1}},
	        {"unaligned element ptr",
	         {.name = "b14",
	          .layout = RH_LAYOUT_RECORD_ARRAY,
	          .size = 16,
	          .elem_size = 16,
	          .elem_ptr_offsets = off4,
	          .n_elem_ptrs = 1}},
	        {"n_elem_ptrs without offsets",
	         {.name = "b15",
	          .layout = RH_LAYOUT_RECORD_ARRAY,
	          .size = 16,
	          .elem_size = 16,
	          .elem_ptr_offsets = NULL,
	          .n_elem_ptrs = 1}},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		rh_error err = {0};
		rh_type_id t = rh_type_register(h, &bad[i].d, &err);
		CHECK(t == 0, "%s: accepted as id %u", bad[i].why, t);
		CHECK(err.code == RH_EINVAL, "%s: code %d (%s), want RH_EINVAL", bad[i].why,
		      err.code, rh_status_name(err.code));
		CHECK(err.msg[0] != '\0', "%s: no message", bad[i].why);
	}
	/* A NULL descriptor or NULL err must not crash either. */
	rh_error err = {0};
	CHECK(rh_type_register(h, NULL, &err) == 0 && err.code == RH_EINVAL, "NULL desc");
	CHECK(rh_type_register(h, &bad[5].d, NULL) == 0, "bad desc with NULL err");
}

static void test_queries(rh_heap *h, rh_mutator *m)
{
	struct node *n = rh_alloc(m, t_node);
	REQUIRE(n != NULL);
	CHECK(((uintptr_t)n & 7) == 0, "node %p not 8-aligned", (void *)n);
	CHECK(rh_object_type(n) == t_node);
	CHECK(rh_array_length(n) == 0);
	CHECK(rh_object_size(h, t_node, 0) == 32, "node size %zu", rh_object_size(h, t_node, 0));
	CHECK(n->left == NULL && n->right == NULL && n->id == 0, "fresh node not zeroed");

	struct node *w = rh_alloc(m, t_wide);
	REQUIRE(w != NULL);
	CHECK(rh_object_type(w) == t_wide);
	CHECK(rh_object_size(h, t_wide, 0) == 64);
	CHECK((char *)w != (char *)n &&
	              ((char *)w >= (char *)n + 32 || (char *)w + 64 <= (char *)n),
	      "objects overlap");

	size_t lens[] = {0, 1, 7, 8, 9, 100, 1000};
	for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		size_t len = lens[i];
		struct refs *r = rh_alloc_array(m, t_refs, len);
		REQUIRE(r != NULL);
		CHECK(rh_object_type(r) == t_refs);
		CHECK(rh_array_length(r) == len, "refs length %zu want %zu", rh_array_length(r),
		      len);
		CHECK(rh_object_size(h, t_refs, len) == 16 + 8 * len, "refs[%zu] size %zu", len,
		      rh_object_size(h, t_refs, len));
		int zero = 1;
		for (size_t k = 0; k < len; k++)
			zero &= r->elem[k] == NULL;
		CHECK(zero, "refs[%zu] not zeroed", len);

		struct bytes *b = rh_alloc_array(m, t_bytes, len);
		REQUIRE(b != NULL);
		CHECK(rh_object_type(b) == t_bytes);
		CHECK(rh_array_length(b) == len);
		CHECK(((uintptr_t)b & 7) == 0);
		CHECK(rh_object_size(h, t_bytes, len) == ((16 + len + 7) & ~(size_t)7),
		      "bytes[%zu] size %zu", len, rh_object_size(h, t_bytes, len));
		zero = 1;
		for (size_t k = 0; k < len; k++)
			zero &= b->b[k] == 0;
		CHECK(zero, "bytes[%zu] not zeroed", len);

		struct recs *rc = rh_alloc_array(m, t_recs, len);
		REQUIRE(rc != NULL);
		CHECK(rh_object_type(rc) == t_recs);
		CHECK(rh_array_length(rc) == len);
		CHECK(rh_object_size(h, t_recs, len) == 24 + 24 * len, "recs[%zu] size %zu", len,
		      rh_object_size(h, t_recs, len));
		zero = rc->extra == 0;
		for (size_t k = 0; k < len; k++)
			zero &= rc->e[k].a == NULL && rc->e[k].v == 0 && rc->e[k].b == NULL;
		CHECK(zero, "recs[%zu] not zeroed", len);
	}
}

/* Memory handed out again after collections is zeroed: fill every object
 * with a pattern, drop it, and check each new object before filling it. */
static void test_zeroed_reuse(rh_heap *h, rh_mutator *m)
{
	rh_stats s0 = th_stats(h);
	uint64_t budget = 3 * s0.heap_size, done = 0;
	uint64_t seed = 42;
	size_t dirty = 0, objs = 0;
	while (done < budget) {
		size_t len = rng_next(&seed) % 3000;
		int kind = (int)(rng_next(&seed) % 3);
		uint8_t *p;
		size_t from, bytes;
		if (kind == 0) {
			p = rh_alloc(m, t_node);
			from = 8;
			bytes = 32;
		} else if (kind == 1) {
			p = rh_alloc_array(m, t_refs, len / 8);
			from = 16;
			bytes = 16 + 8 * (len / 8);
		} else {
			p = rh_alloc_array(m, t_bytes, len);
			from = 16;
			bytes = 16 + len;
		}
		if (!CHECK(p != NULL, "allocation failed after %llu bytes",
		           (unsigned long long)done))
			return;
		for (size_t i = from; i < bytes; i++)
			dirty += p[i] != 0;
		/* 0xab... is odd: an immediate, never a reference. */
		memset(p + from, 0xab, bytes - from);
		done += bytes;
		objs++;
	}
	rh_stats s1 = th_stats(h);
	CHECK(dirty == 0, "%zu non-zero bytes in %zu fresh objects", dirty, objs);
	CHECK(s1.collections + s1.full_collections > s0.collections + s0.full_collections,
	      "allocating 3x the heap collected nothing");
}

static void fill_pattern(uint8_t *b, size_t len, unsigned salt)
{
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(i * 7 + salt + (i >> 12));
}

static size_t pattern_errors(const uint8_t *b, size_t len, unsigned salt)
{
	size_t bad = 0;
	for (size_t i = 0; i < len; i++)
		bad += b[i] != (uint8_t)(i * 7 + salt + (i >> 12));
	return bad;
}

static void test_humongous(rh_heap *h, rh_mutator *m)
{
	void *slots[2] = {NULL, NULL};
	rh_frame f;
	rh_push_frame(m, &f, slots, 2);

	rh_collect(m, 1);
	rh_stats s0 = th_stats(h);
	CHECK(s0.region_size == REGION, "region_size %llu", (unsigned long long)s0.region_size);
	CHECK(s0.regions_total == s0.heap_size / s0.region_size, "regions_total %llu",
	      (unsigned long long)s0.regions_total);

	/* Just over two regions of payload: three regions. */
	size_t len = 2 * REGION + 1000;
	struct bytes *b = rh_alloc_array(m, t_bytes, len);
	REQUIRE(b != NULL, "humongous allocation of %zu bytes", len);
	slots[0] = b;
	CHECK(rh_array_length(b) == len);
	CHECK(rh_object_type(b) == t_bytes);
	size_t nz = 0;
	for (size_t i = 0; i < len; i++)
		nz += b->b[i] != 0;
	CHECK(nz == 0, "humongous array has %zu non-zero bytes", nz);
	fill_pattern(b->b, len, 3);

	rh_stats s1 = th_stats(h);
	CHECK(s1.regions_humongous == s0.regions_humongous + 3, "regions_humongous %llu -> %llu",
	      (unsigned long long)s0.regions_humongous, (unsigned long long)s1.regions_humongous);
	CHECK(s1.regions_free + s1.regions_eden + s1.regions_old + s1.regions_humongous ==
	              s1.regions_total,
	      "region kinds do not add up: free %llu eden %llu old %llu hum %llu total %llu",
	      (unsigned long long)s1.regions_free, (unsigned long long)s1.regions_eden,
	      (unsigned long long)s1.regions_old, (unsigned long long)s1.regions_humongous,
	      (unsigned long long)s1.regions_total);

	/* A humongous reference array pointing at young nodes: its slots must
	 * be fixed when the nodes move. */
	size_t nref = REGION / 8 + 100;
	struct refs *r = rh_alloc_array(m, t_refs, nref);
	REQUIRE(r != NULL);
	slots[1] = r;
	for (size_t i = 0; i < nref; i += 64) {
		struct node *n = rh_alloc(m, t_node);
		REQUIRE(n != NULL);
		n->id = 1000000 + i;
		r = slots[1];
		rh_write_ref(m, &r->elem[i], n);
	}

	for (int round = 0; round < 4; round++) {
		rh_collect(m, round >= 2);
		b = slots[0];
		r = slots[1];
		CHECK(rh_object_type(b) == t_bytes && rh_array_length(b) == len);
		CHECK(pattern_errors(b->b, len, 3) == 0, "round %d: humongous contents changed",
		      round);
		size_t bad = 0;
		for (size_t i = 0; i < nref; i++) {
			struct node *n = r->elem[i];
			if (i % 64 == 0)
				bad += n == NULL || rh_object_type(n) != t_node ||
				       n->id != 1000000 + i;
			else
				bad += n != NULL;
		}
		CHECK(bad == 0, "round %d: %zu bad elements in the humongous ref array", round,
		      bad);
		CHECK(rh_verify(m) == 0, "verifier, round %d", round);
	}
	rh_stats s2 = th_stats(h);
	CHECK(s2.regions_humongous >= s0.regions_humongous + 5,
	      "two humongous objects: %llu -> %llu", (unsigned long long)s0.regions_humongous,
	      (unsigned long long)s2.regions_humongous);

	slots[0] = NULL;
	slots[1] = NULL;
	rh_collect(m, 1);
	rh_stats s3 = th_stats(h);
	CHECK(s3.regions_humongous == s0.regions_humongous,
	      "humongous regions not freed: %llu, before %llu",
	      (unsigned long long)s3.regions_humongous, (unsigned long long)s0.regions_humongous);
	CHECK(s3.regions_free >= s2.regions_free + 5, "regions_free %llu -> %llu",
	      (unsigned long long)s2.regions_free, (unsigned long long)s3.regions_free);
	rh_pop_frame(m, &f);
}

static void test_enomem(rh_heap *h, rh_mutator *m)
{
	rh_stats s = th_stats(h);
	void *p = rh_alloc_array(m, t_bytes, (size_t)s.heap_size * 2);
	CHECK(p == NULL, "allocated twice the heap size");
	const rh_error *e = rh_last_error();
	CHECK(e != NULL && e->code == RH_ENOMEM, "last error %d", e ? e->code : -1);
	CHECK(e != NULL && e->msg[0] != '\0', "no message for ENOMEM");
	p = rh_alloc_array(m, t_refs, (size_t)1 << 40);
	CHECK(p == NULL, "allocated an 8 TiB array");
	/* The heap still works afterwards. */
	struct node *n = rh_alloc(m, t_node);
	CHECK(n != NULL && rh_object_type(n) == t_node);
}

int main(void)
{
	CHECK(rh_status_name(RH_EINVAL) != NULL && rh_status_name(RH_ENOMEM) != NULL);

	rh_config cfg;
	th_config(&cfg, 64, REGION >> 10);
	/* Open and close twice at the same base: close releases the range. */
	for (int i = 0; i < 2; i++) {
		rh_heap *h = th_open(&cfg);
		rh_heap_close(h);
	}

	rh_heap *h = th_open(&cfg);
	rh_set_conservative(h, false);
	register_good(h);
	register_bad(h);

	char *js = rh_type_table_json(h);
	CHECK(js != NULL && strstr(js, "\"recs\"") && strstr(js, "\"wide\"") && !strstr(js, "b13"),
	      "type table json: %s", js ? js : "(null)");
	free(js);

	rh_mutator *m = th_attach(h);
	rh_type_desc late = {.name = "late", .layout = RH_LAYOUT_FIXED, .size = 16};
	rh_error err = {0};
	CHECK(rh_type_register(h, &late, &err) == 0, "registered after attach");
	CHECK(err.code == RH_ESTATE && err.msg[0], "after attach: code %d msg '%s'", err.code,
	      err.msg);

	test_queries(h, m);
	test_zeroed_reuse(h, m);
	test_humongous(h, m);
	test_enomem(h, m);
	CHECK(rh_verify(m) == 0);

	rh_mutator_detach(m);
	memset(&err, 0, sizeof err);
	CHECK(rh_type_register(h, &late, &err) == 0 && err.code == RH_ESTATE,
	      "registered after the last detach: code %d", err.code);
	rh_heap_close(h);
	return check_done();
}
