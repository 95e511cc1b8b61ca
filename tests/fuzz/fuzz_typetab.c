/* libFuzzer harness for the type-table decoder (gc/typetab.c).
 *
 * A tracer decodes the table a CPU server sends at connect time and then
 * traces objects with it, so an accepted table must satisfy every invariant
 * in gc/types.h (checked here independently of the decoder), must leave the
 * table untouched when rejected, and must survive encode/decode unchanged.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "gc/types.h"
#include "rheap/rheap-inline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_offsets(uint32_t id, const uint32_t *o, uint32_t n, uint32_t lo, uint32_t limit,
                          uint32_t forbid)
{
	for (uint32_t i = 0; i < n; i++) {
		if (o[i] % 8 || o[i] < lo || o[i] >= limit || o[i] == forbid ||
		    (i > 0 && o[i] <= o[i - 1]))
			rh_panic("fuzz_typetab: type %u: offset %u (#%u) breaks an invariant", id,
			         o[i], i);
	}
}

static void check_invariants(const rh_type_table *t)
{
	if (t->n < 1 || t->n > RH_MAX_TYPES || strcmp(t->types[0].name, "rh.filler") != 0)
		rh_panic("fuzz_typetab: table of %u types without the filler at id 0", t->n);
	for (uint32_t id = 1; id < t->n; id++) {
		const rh_type_info *ti = &t->types[id];
		size_t len = strnlen(ti->name, RH_TYPE_NAME_MAX);
		if (len == 0 || len >= RH_TYPE_NAME_MAX)
			rh_panic("fuzz_typetab: type %u: bad name length", id);
		for (size_t i = 0; i < len; i++)
			if ((unsigned char)ti->name[i] < 0x20 || ti->name[i] == 0x7f)
				rh_panic("fuzz_typetab: type %u: control character in name", id);
		int array = ti->layout != RH_LAYOUT_FIXED;
		if ((unsigned)ti->layout > RH_LAYOUT_RECORD_ARRAY || ti->size % 8 ||
		    ti->size < (array ? RH_ARRAY_HEADER_SIZE : RH_HEADER_SIZE))
			rh_panic("fuzz_typetab: type %u: bad layout or size", id);
		uint32_t want_elem = ti->layout == RH_LAYOUT_FIXED        ? 0
		                     : ti->layout == RH_LAYOUT_REF_ARRAY  ? 8
		                     : ti->layout == RH_LAYOUT_BYTE_ARRAY ? 1
		                                                          : ti->elem_size;
		if (ti->elem_size != want_elem || (array && ti->elem_size == 0) ||
		    (ti->layout == RH_LAYOUT_RECORD_ARRAY && ti->elem_size % 8))
			rh_panic("fuzz_typetab: type %u: elem_size %u contradicts its layout", id,
			         ti->elem_size);
		if (ti->n_ptrs > RH_MAX_PTR_FIELDS || ti->n_elem_ptrs > RH_MAX_PTR_FIELDS ||
		    (ti->layout == RH_LAYOUT_REF_ARRAY && ti->n_elem_ptrs != 1) ||
		    (ti->layout != RH_LAYOUT_REF_ARRAY && ti->layout != RH_LAYOUT_RECORD_ARRAY &&
		     ti->n_elem_ptrs != 0))
			rh_panic("fuzz_typetab: type %u: pointer counts contradict its layout", id);
		check_offsets(id, ti->ptr_offsets, ti->n_ptrs, RH_HEADER_SIZE, ti->size,
		              array ? 8 : UINT32_MAX);
		check_offsets(id, ti->elem_ptr_offsets, ti->n_elem_ptrs, 0, ti->elem_size,
		              UINT32_MAX);
		if (t->sizes[id].size != ti->size ||
		    t->sizes[id].elem_size != (array ? ti->elem_size : 0))
			rh_panic("fuzz_typetab: type %u: sizes[] does not mirror types[]", id);
	}
}

static int same_offsets(const uint32_t *a, const uint32_t *b, uint32_t n)
{
	return n == 0 || memcmp(a, b, n * sizeof *a) == 0;
}

static void check_equal(const rh_type_table *a, const rh_type_table *b)
{
	if (a->n != b->n)
		rh_panic("fuzz_typetab: %u types became %u after a round trip", a->n, b->n);
	for (uint32_t id = 0; id < a->n; id++) {
		const rh_type_info *x = &a->types[id], *y = &b->types[id];
		if (strcmp(x->name, y->name) != 0 || x->layout != y->layout || x->size != y->size ||
		    x->elem_size != y->elem_size || x->n_ptrs != y->n_ptrs ||
		    x->n_elem_ptrs != y->n_elem_ptrs ||
		    !same_offsets(x->ptr_offsets, y->ptr_offsets, x->n_ptrs) ||
		    !same_offsets(x->elem_ptr_offsets, y->elem_ptr_offsets, x->n_elem_ptrs))
			rh_panic("fuzz_typetab: type %u changed in a round trip", id);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	rh_type_table t, u;
	rh_error err = {0};
	if (rh_typetab_init(&t) != 0)
		return 0;
	int rc = rh_typetab_from_json(&t, (const char *)data, size, &err);
	if (rc != RH_OK) {
		if ((rc != RH_EINVAL && rc != RH_ENOMEM) || err.code != rc || !err.msg[0])
			rh_panic("fuzz_typetab: rejected with status %d and message \"%s\"", rc,
			         err.msg);
		if (t.n != 1)
			rh_panic("fuzz_typetab: a rejected table kept %u types", t.n);
		rh_typetab_free(&t);
		return 0;
	}
	check_invariants(&t);

	char *json = rh_typetab_to_json(&t);
	if (!json)
		rh_panic("fuzz_typetab: cannot encode an accepted table");
	if (rh_typetab_init(&u) != 0)
		rh_panic("fuzz_typetab: out of memory");
	if ((rc = rh_typetab_from_json(&u, json, strlen(json), &err)) != RH_OK)
		rh_panic("fuzz_typetab: the encoding of an accepted table is rejected: %s",
		         err.msg);
	check_equal(&t, &u);
	/* The encoding is canonical: a second trip prints the same text. */
	char *json2 = rh_typetab_to_json(&u);
	if (!json2 || strcmp(json, json2) != 0)
		rh_panic("fuzz_typetab: encoding is not stable across a round trip");
	free(json2);
	free(json);
	rh_typetab_free(&u);
	rh_typetab_free(&t);
	return 0;
}
