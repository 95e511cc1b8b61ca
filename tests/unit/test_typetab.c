/* Type table: every rejection rule, the JSON round trip, and decoding of
 * corrupted input (which arrives from the network on tracers). */
#include <stdlib.h>
#include <string.h>

#include "tests/common/check.h"
#include "gc/types.h"

#define N(a) (uint32_t)(sizeof a / sizeof a[0])

static const uint32_t p8_16[] = {8, 16};
static const uint32_t p16_8[] = {16, 8};
static const uint32_t p8_12[] = {8, 12};
static const uint32_t p0[] = {0};
static const uint32_t p8[] = {8};
static const uint32_t p16[] = {16};
static const uint32_t p24[] = {24};
static const uint32_t p16_16[] = {16, 16};
static const uint32_t p0_8[] = {0, 8};
static const uint32_t p4[] = {4};

/* Independent statement of the table's invariants, used on whatever a
 * decoder accepted. */
static int table_sane(const rh_type_table *t)
{
	if (t->n < 1 || t->n > t->cap || t->n > RH_MAX_TYPES)
		return 0;
	if (strcmp(t->types[0].name, "rh.filler") != 0 || t->types[0].n_ptrs != 0)
		return 0;
	for (uint32_t id = 0; id < t->n; id++) {
		const rh_type_info *ti = &t->types[id];
		int array = ti->layout != RH_LAYOUT_FIXED;
		size_t nl = strnlen(ti->name, RH_TYPE_NAME_MAX);
		if (nl == 0 || nl >= RH_TYPE_NAME_MAX)
			return 0;
		if (ti->layout > RH_LAYOUT_RECORD_ARRAY || ti->size % 8 ||
		    ti->size < (array ? 16u : 8u) || ti->n_ptrs > RH_MAX_PTR_FIELDS ||
		    ti->n_elem_ptrs > RH_MAX_PTR_FIELDS)
			return 0;
		for (uint32_t i = 0; i < ti->n_ptrs; i++) {
			uint32_t o = ti->ptr_offsets[i];
			if (o % 8 || o < 8 || o >= ti->size || (array && o == 8) ||
			    (i && o <= ti->ptr_offsets[i - 1]))
				return 0;
		}
		if (!array && (ti->elem_size || ti->n_elem_ptrs))
			return 0;
		if (ti->layout == RH_LAYOUT_REF_ARRAY &&
		    (ti->elem_size != 8 || ti->n_elem_ptrs != 1 || ti->elem_ptr_offsets[0] != 0))
			return 0;
		if (ti->layout == RH_LAYOUT_BYTE_ARRAY && (ti->elem_size != 1 || ti->n_elem_ptrs))
			return 0;
		if (ti->layout == RH_LAYOUT_RECORD_ARRAY &&
		    (ti->elem_size < 8 || ti->elem_size % 8))
			return 0;
		for (uint32_t i = 0; i < ti->n_elem_ptrs; i++) {
			uint32_t o = ti->elem_ptr_offsets[i];
			if (o % 8 || o >= ti->elem_size || (i && o <= ti->elem_ptr_offsets[i - 1]))
				return 0;
		}
		if (t->sizes[id].size != ti->size || t->sizes[id].elem_size != ti->elem_size)
			return 0;
	}
	return 1;
}

static void test_init(void)
{
	rh_type_table t;
	CHECK(rh_typetab_init(&t) == 0);
	CHECK(t.n == 1);
	CHECK(strcmp(t.types[0].name, "rh.filler") == 0);
	CHECK(t.types[0].n_ptrs == 0 && t.types[0].n_elem_ptrs == 0);
	CHECK(rh_type_get(&t, 0) == &t.types[0]);
	CHECK(rh_type_get(&t, 1) == NULL);
	CHECK(table_sane(&t));
	rh_typetab_free(&t);
}

static void test_good(void)
{
	rh_type_table t;
	rh_error err = {0};
	rh_typetab_init(&t);
	rh_type_desc pair = {"pair", RH_LAYOUT_FIXED, 24, 0, p16_8, 2, NULL, 0};
	rh_type_id id = rh_typetab_add(&t, &pair, &err);
	CHECK(id == 1, "%s", err.msg);
	/* declared out of order: stored ascending */
	CHECK(t.types[1].ptr_offsets[0] == 8 && t.types[1].ptr_offsets[1] == 16);
	CHECK(t.sizes[1].size == 24 && t.sizes[1].elem_size == 0);

	rh_type_desc refs = {"refs", RH_LAYOUT_REF_ARRAY, 16, 0, NULL, 0, NULL, 0};
	id = rh_typetab_add(&t, &refs, &err);
	CHECK(id == 2, "%s", err.msg);
	CHECK(t.types[2].elem_size == 8 && t.types[2].n_elem_ptrs == 1 &&
	      t.types[2].elem_ptr_offsets[0] == 0);
	CHECK(t.sizes[2].size == 16 && t.sizes[2].elem_size == 8);

	/* explicit, consistent ref_array description is accepted too */
	rh_type_desc refs2 = {"refs2", RH_LAYOUT_REF_ARRAY, 24, 8, p16, 1, p0, 1};
	CHECK(rh_typetab_add(&t, &refs2, &err) == 3, "%s", err.msg);

	rh_type_desc bytes = {"bytes", RH_LAYOUT_BYTE_ARRAY, 16, 0, NULL, 0, NULL, 0};
	CHECK(rh_typetab_add(&t, &bytes, &err) == 4, "%s", err.msg);
	CHECK(t.types[4].elem_size == 1 && t.sizes[4].elem_size == 1);

	rh_type_desc rec = {"rec", RH_LAYOUT_RECORD_ARRAY, 24, 24, p16, 1, p0_8, 2};
	CHECK(rh_typetab_add(&t, &rec, &err) == 5, "%s", err.msg);
	CHECK(t.types[5].elem_size == 24 && t.types[5].n_elem_ptrs == 2);

	rh_type_desc leaf = {"leaf", RH_LAYOUT_FIXED, 8, 0, NULL, 0, NULL, 0};
	CHECK(rh_typetab_add(&t, &leaf, &err) == 6, "%s", err.msg);

	uint32_t many[RH_MAX_PTR_FIELDS];
	for (uint32_t i = 0; i < RH_MAX_PTR_FIELDS; i++)
		many[i] = 8 + 8 * i;
	rh_type_desc big = {
	        "big", RH_LAYOUT_FIXED, 8 + 8 * RH_MAX_PTR_FIELDS, 0, many, RH_MAX_PTR_FIELDS, NULL,
	        0};
	CHECK(rh_typetab_add(&t, &big, &err) == 7, "%s", err.msg);
	CHECK(t.n == 8);
	CHECK(table_sane(&t));
	rh_typetab_free(&t);
}

struct bad {
	rh_type_desc d;
	const char *want;
};

static void test_rejections(void)
{
	static char longname[RH_TYPE_NAME_MAX + 1];
	memset(longname, 'a', RH_TYPE_NAME_MAX);
	uint32_t many[RH_MAX_PTR_FIELDS + 1];
	for (uint32_t i = 0; i <= RH_MAX_PTR_FIELDS; i++)
		many[i] = 8 + 8 * i;
	const struct bad bad[] = {
	        {{NULL, RH_LAYOUT_FIXED, 8, 0, NULL, 0, NULL, 0}, "name is NULL"},
	        {{"", RH_LAYOUT_FIXED, 8, 0, NULL, 0, NULL, 0}, "name is empty"},
	        {{longname, RH_LAYOUT_FIXED, 8, 0, NULL, 0, NULL, 0}, "longer than 63"},
	        {{"bad\nname", RH_LAYOUT_FIXED, 8, 0, NULL, 0, NULL, 0}, "control character"},
	        {{"pair", RH_LAYOUT_FIXED, 8, 0, NULL, 0, NULL, 0}, "already registered as id 1"},
	        {{"rh.filler", RH_LAYOUT_FIXED, 8, 0, NULL, 0, NULL, 0},
	         "already registered as id 0"},
	        {{"l", (rh_layout)7, 8, 0, NULL, 0, NULL, 0}, "layout 7"},
	        {{"s", RH_LAYOUT_FIXED, 12, 0, NULL, 0, NULL, 0}, "size 12 is not a multiple of 8"},
	        {{"s", RH_LAYOUT_FIXED, 0, 0, NULL, 0, NULL, 0}, "size 0 is below the minimum 8"},
	        {{"s", RH_LAYOUT_REF_ARRAY, 8, 0, NULL, 0, NULL, 0},
	         "size 8 is below the minimum 16"},
	        {{"s", RH_LAYOUT_RECORD_ARRAY, 8, 8, NULL, 0, NULL, 0}, "below the minimum 16"},
	        {{"pair2", RH_LAYOUT_FIXED, 24, 0, p8_12, 2, NULL, 0},
	         "type \"pair2\": ptr_offsets[1] = 12 is not 8-aligned"},
	        {{"p", RH_LAYOUT_FIXED, 24, 0, p0, 1, NULL, 0},
	         "ptr_offsets[0] = 0 is the object header"},
	        {{"p", RH_LAYOUT_FIXED, 24, 0, p24, 1, NULL, 0}, "ptr_offsets[0] = 24 is outside"},
	        {{"p", RH_LAYOUT_REF_ARRAY, 24, 0, p8, 1, NULL, 0},
	         "ptr_offsets[0] = 8 is the array length"},
	        {{"p", RH_LAYOUT_FIXED, 24, 0, p16_16, 2, NULL, 0}, "lists offset 16 twice"},
	        {{"p", RH_LAYOUT_FIXED, 8 + 8 * (RH_MAX_PTR_FIELDS + 1), 0, many,
	          RH_MAX_PTR_FIELDS + 1, NULL, 0},
	         "ptr_offsets has 257 entries"},
	        {{"p", RH_LAYOUT_FIXED, 24, 0, NULL, 1, NULL, 0}, "ptr_offsets is NULL"},
	        {{"f", RH_LAYOUT_FIXED, 24, 8, NULL, 0, NULL, 0}, "elem_size 8 given for a fixed"},
	        {{"f", RH_LAYOUT_FIXED, 24, 0, NULL, 0, p0, 1},
	         "elem_ptr_offsets given for a fixed"},
	        {{"r", RH_LAYOUT_REF_ARRAY, 16, 16, NULL, 0, NULL, 0},
	         "elem_size 16 contradicts ref_array"},
	        {{"r", RH_LAYOUT_REF_ARRAY, 16, 8, NULL, 0, p8, 1}, "contradict ref_array"},
	        {{"r", RH_LAYOUT_REF_ARRAY, 16, 8, NULL, 0, p0_8, 2}, "contradict ref_array"},
	        {{"r", RH_LAYOUT_REF_ARRAY, 16, 8, NULL, 0, NULL, 1}, "contradict ref_array"},
	        {{"b", RH_LAYOUT_BYTE_ARRAY, 16, 2, NULL, 0, NULL, 0},
	         "elem_size 2 contradicts byte_array"},
	        {{"b", RH_LAYOUT_BYTE_ARRAY, 16, 1, NULL, 0, p0, 1},
	         "elem_ptr_offsets given for a byte_array"},
	        {{"c", RH_LAYOUT_RECORD_ARRAY, 16, 0, NULL, 0, NULL, 0}, "elem_size 0 must be"},
	        {{"c", RH_LAYOUT_RECORD_ARRAY, 16, 12, NULL, 0, NULL, 0}, "elem_size 12 must be"},
	        {{"c", RH_LAYOUT_RECORD_ARRAY, 16, 16, NULL, 0, p16, 1},
	         "elem_ptr_offsets[0] = 16 is outside the element"},
	        {{"c", RH_LAYOUT_RECORD_ARRAY, 16, 16, NULL, 0, p4, 1},
	         "elem_ptr_offsets[0] = 4 is not 8-aligned"},
	        {{"c", RH_LAYOUT_RECORD_ARRAY, 16, 16, NULL, 0, p16_16, 2},
	         "elem_ptr_offsets[0] = 16"},
	        {{"c", RH_LAYOUT_RECORD_ARRAY, 16, 24, NULL, 0, p16_16, 2},
	         "elem_ptr_offsets lists offset 16 twice"},
	};
	rh_type_table t;
	rh_error err;
	rh_typetab_init(&t);
	rh_type_desc pair = {"pair", RH_LAYOUT_FIXED, 24, 0, p8_16, 2, NULL, 0};
	CHECK(rh_typetab_add(&t, &pair, &err) == 1);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memset(&err, 0, sizeof err);
		rh_type_id id = rh_typetab_add(&t, &bad[i].d, &err);
		CHECK(id == 0, "case %zu accepted", i);
		CHECK(err.code == RH_EINVAL, "case %zu code %d", i, err.code);
		/* (The ternary: gcc -O3 cannot see that every case names a text.) */
		const char *want = bad[i].want ? bad[i].want : "";
		CHECK(check_contains(err.msg, want), "case %zu: got \"%s\", want \"%s\"", i,
		      err.msg, want);
		CHECK(t.n == 2);
	}
	CHECK(rh_typetab_add(&t, NULL, &err) == 0 && err.code == RH_EINVAL);
	CHECK(table_sane(&t));
	rh_typetab_free(&t);
}

static void fill_sample(rh_type_table *t)
{
	rh_error err;
	const rh_type_desc ds[] = {
	        {"pair", RH_LAYOUT_FIXED, 24, 0, p8_16, 2, NULL, 0},
	        {"refs", RH_LAYOUT_REF_ARRAY, 24, 0, p16, 1, NULL, 0},
	        {"bytes", RH_LAYOUT_BYTE_ARRAY, 16, 1, NULL, 0, NULL, 0},
	        {"rec \"quoted\" \\ name", RH_LAYOUT_RECORD_ARRAY, 32, 16, p16_8 + 0, 1, p0_8, 2},
	        {"leaf", RH_LAYOUT_FIXED, 40, 0, NULL, 0, NULL, 0},
	};
	for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++)
		CHECK(rh_typetab_add(t, &ds[i], &err) == i + 1, "%s", err.msg);
}

static int tables_equal(const rh_type_table *a, const rh_type_table *b)
{
	if (a->n != b->n)
		return 0;
	for (uint32_t id = 0; id < a->n; id++) {
		const rh_type_info *x = &a->types[id], *y = &b->types[id];
		if (strcmp(x->name, y->name) || x->layout != y->layout || x->size != y->size ||
		    x->elem_size != y->elem_size || x->n_ptrs != y->n_ptrs ||
		    x->n_elem_ptrs != y->n_elem_ptrs)
			return 0;
		if (x->n_ptrs && memcmp(x->ptr_offsets, y->ptr_offsets, x->n_ptrs * 4))
			return 0;
		if (x->n_elem_ptrs &&
		    memcmp(x->elem_ptr_offsets, y->elem_ptr_offsets, x->n_elem_ptrs * 4))
			return 0;
		if (memcmp(&a->sizes[id], &b->sizes[id], sizeof a->sizes[id]))
			return 0;
	}
	return 1;
}

static void test_round_trip(void)
{
	rh_type_table a, b;
	rh_error err = {0};
	rh_typetab_init(&a);
	fill_sample(&a);
	char *js = rh_typetab_to_json(&a);
	CHECK(js != NULL);
	rh_typetab_init(&b);
	CHECK(rh_typetab_from_json(&b, js, strlen(js), &err) == 0, "%s", err.msg);
	CHECK(tables_equal(&a, &b));
	CHECK(table_sane(&b));
	/* a second decode into a non-empty table is refused */
	CHECK(rh_typetab_from_json(&b, js, strlen(js), &err) == RH_EINVAL);
	CHECK(b.n == a.n);
	/* the length argument is honoured: text after len is ignored */
	char *padded = malloc(strlen(js) + 8);
	strcpy(padded, js);
	strcat(padded, "garbage");
	rh_type_table c;
	rh_typetab_init(&c);
	CHECK(rh_typetab_from_json(&c, padded, strlen(js), &err) == 0, "%s", err.msg);
	CHECK(tables_equal(&a, &c));
	rh_typetab_free(&c);
	free(padded);
	/* an empty table round-trips too */
	rh_type_table e, f;
	rh_typetab_init(&e);
	rh_typetab_init(&f);
	char *ejs = rh_typetab_to_json(&e);
	CHECK(ejs && rh_typetab_from_json(&f, ejs, strlen(ejs), &err) == 0 && f.n == 1);
	free(ejs);
	rh_typetab_free(&e);
	rh_typetab_free(&f);
	free(js);
	rh_typetab_free(&a);
	rh_typetab_free(&b);
}

/* Test JSON uses single quotes; q() makes it JSON (static buffer). */
static const char *q(const char *s)
{
	static char buf[4096];
	size_t i = 0;
	for (; s[i] && i < sizeof buf - 1; i++)
		buf[i] = s[i] == '\'' ? '"' : s[i];
	buf[i] = 0;
	return buf;
}

/* One type entry: id, name, layout and size given, the rest as in REST. */
#define ENTRY(id, name, layout, size, rest)                                                        \
	"{'id':" id ",'name':" name ",'layout':" layout ",'size':" size rest "}"
#define OK_REST ",'elem_size':0,'ptrs':[],'elem_ptrs':[]"
#define TABLE(...) "{'version':1,'types':[" __VA_ARGS__ "]}"

static void test_bad_json(void)
{
	static const char *const bad[] = {
	        "",
	        "{",
	        "[]",
	        "null",
	        "{'version':2,'types':[]}",
	        "{'version':'1','types':[]}",
	        "{'types':[]}",
	        "{'version':1}",
	        "{'version':1,'types':[],'extra':0}",
	        "{'version':1,'version':1,'types':[]}",
	        "{'version':1,'types':{}}",
	        "{'version':1,'types':[1]}",
	        TABLE(ENTRY("2", "'a'", "'fixed'", "8", OK_REST)),
	        TABLE("{'name':'a','layout':'fixed','size':8" OK_REST "}"),
	        TABLE(ENTRY("1", "7", "'fixed'", "8", OK_REST)),
	        TABLE(ENTRY("1", "'a'", "'fancy'", "8", OK_REST)),
	        TABLE(ENTRY("1", "'a'", "'fixed'", "-8", OK_REST)),
	        TABLE(ENTRY("1", "'a'", "'fixed'", "4294967304", OK_REST)),
	        TABLE(ENTRY("1", "'a'", "'fixed'", "8.0", OK_REST)),
	        TABLE(ENTRY("1", "'a'", "'fixed'", "16", ",'elem_size':0,'ptrs':8,'elem_ptrs':[]")),
	        TABLE(ENTRY("1", "'a'", "'fixed'", "16",
	                    ",'elem_size':0,'ptrs':['8'],'elem_ptrs':[]")),
	        TABLE(ENTRY("1", "'a'", "'fixed'", "16",
	                    ",'elem_size':0,'ptrs':[12],'elem_ptrs':[]")),
	        TABLE(ENTRY("1", "'a'", "'fixed'", "16", OK_REST ",'color':1")),
	        TABLE(ENTRY("1", "'a'", "'fixed'", "16", ",'elem_size':0,'ptrs':[]")),
	        TABLE(ENTRY("1", "'rh.filler'", "'fixed'", "16", OK_REST)),
	        TABLE(ENTRY("1", "'a'", "'fixed'", "16", OK_REST) "," ENTRY("2", "'a'", "'fixed'",
	                                                                    "16", OK_REST)),
	        TABLE(ENTRY("1", "'a\\u0000b'", "'fixed'", "16", OK_REST)),
	        TABLE(ENTRY("1", "'a'", "'byte_array'", "16",
	                    ",'elem_size':1,'ptrs':[],'elem_ptrs':[0]")),
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		rh_type_table t;
		rh_error err = {0};
		rh_typetab_init(&t);
		const char *js = q(bad[i]);
		int rc = rh_typetab_from_json(&t, js, strlen(js), &err);
		CHECK(rc == RH_EINVAL, "case %zu accepted: %s", i, js);
		CHECK(check_contains(err.msg, "type table JSON"), "case %zu: %s", i, err.msg);
		CHECK(t.n == 1, "case %zu left %u types", i, t.n);
		rh_typetab_free(&t);
	}
	/* a syntax error names its position */
	rh_type_table t;
	rh_error err = {0};
	rh_typetab_init(&t);
	const char *js = "{\"version\":1,\n\"types\":[,]}";
	CHECK(rh_typetab_from_json(&t, js, strlen(js), &err) == RH_EINVAL);
	CHECK(check_contains(err.msg, "line 2"), "%s", err.msg);
	rh_typetab_free(&t);
}

/* Every strict prefix of a valid encoding is invalid JSON, and every single
 * byte mutation either decodes to a sane table or fails cleanly. */
static void test_mutations(void)
{
	rh_type_table a;
	rh_typetab_init(&a);
	fill_sample(&a);
	char *js = rh_typetab_to_json(&a);
	size_t len = strlen(js);
	int prefix_ok = 1;
	for (size_t n = 0; n < len; n++) {
		rh_type_table t;
		rh_error err = {0};
		rh_typetab_init(&t);
		if (rh_typetab_from_json(&t, js, n, &err) != RH_EINVAL || t.n != 1)
			prefix_ok = 0;
		rh_typetab_free(&t);
	}
	CHECK(prefix_ok);

	static const char repl[] = {'0', '1', '9', '"', '[', ']',  '{',        '}',
	                            ',', ':', 'x', '-', ' ', '\\', (char)0xff, 0};
	char *buf = malloc(len + 1);
	int clean = 1, accepted = 0, rejected = 0;
	for (size_t pos = 0; pos < len; pos++) {
		for (size_t r = 0; r < sizeof repl; r++) {
			if (js[pos] == repl[r])
				continue;
			memcpy(buf, js, len + 1);
			buf[pos] = repl[r];
			rh_type_table t;
			rh_error err = {0};
			rh_typetab_init(&t);
			int rc = rh_typetab_from_json(&t, buf, len, &err);
			if (rc == 0) {
				accepted++;
				if (!table_sane(&t)) {
					clean = 0;
					fprintf(stderr, "insane table accepted at %zu/%zu\n", pos,
					        r);
				}
			} else {
				rejected++;
				if (rc != RH_EINVAL || t.n != 1 || err.msg[0] == 0) {
					clean = 0;
					fprintf(stderr, "unclean failure at %zu/%zu: %d %s\n", pos,
					        r, rc, err.msg);
				}
			}
			rh_typetab_free(&t);
		}
	}
	CHECK(clean);
	/* both outcomes occur, so the loop exercised the decoder's checks */
	CHECK(accepted > 0 && rejected > 0, "accepted %d rejected %d", accepted, rejected);
	free(buf);
	free(js);
	rh_typetab_free(&a);
}

/* The id space is full at RH_MAX_TYPES; built through the decoder, whose
 * duplicate check is not quadratic. */
static void test_capacity(void)
{
	size_t cap = (size_t)RH_MAX_TYPES * 100 + 64;
	char *js = malloc(cap), *p = js;
	p += sprintf(p, "{\"version\":1,\"types\":[");
	for (uint32_t id = 1; id < RH_MAX_TYPES; id++)
		p += sprintf(p,
		             "%s{\"id\":%u,\"name\":\"t%u\",\"layout\":\"fixed\",\"size\":8,"
		             "\"elem_size\":0,\"ptrs\":[],\"elem_ptrs\":[]}",
		             id > 1 ? "," : "", id, id);
	strcpy(p, "]}");
	rh_type_table t;
	rh_error err = {0};
	rh_typetab_init(&t);
	CHECK(rh_typetab_from_json(&t, js, strlen(js), &err) == 0, "%s", err.msg);
	CHECK(t.n == RH_MAX_TYPES);
	rh_type_desc one = {"one more", RH_LAYOUT_FIXED, 8, 0, NULL, 0, NULL, 0};
	CHECK(rh_typetab_add(&t, &one, &err) == 0);
	CHECK(check_contains(err.msg, "table is full"), "%s", err.msg);
	rh_typetab_free(&t);
	free(js);
}

int main(void)
{
	test_init();
	test_good();
	test_rejections();
	test_round_trip();
	test_bad_json();
	test_mutations();
	test_capacity();
	return check_done();
}
