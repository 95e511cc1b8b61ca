/* The type table: validation of VM-supplied layouts, and its JSON form.
 *
 * Everything a tracer knows about an object comes from here, and a tracer
 * receives the table over the network, so every rule is enforced both when a
 * VM registers a type and when a table is decoded: a bad layout would make
 * the collector read or write outside objects.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/common.h"
#include "gc/types.h"

#define INITIAL_CAP 64
#define FILLER_NAME "rh.filler"

/* Peer-provided text copied into an error message: non-printable bytes
 * become '?', so a table cannot forge log lines. */
static const char *printable(char *dst, size_t cap, const char *src)
{
	size_t i = 0;
	for (; src[i] && i + 1 < cap; i++)
		dst[i] = (unsigned char)src[i] >= 0x20 && (unsigned char)src[i] < 0x7f ? src[i]
		                                                                       : '?';
	dst[i] = 0;
	return dst;
}

static const char *const layout_names[] = {"fixed", "ref_array", "byte_array", "record_array"};
#define N_LAYOUTS (sizeof layout_names / sizeof layout_names[0])

static int grow(rh_type_table *t)
{
	if (t->n < t->cap)
		return 0;
	uint32_t cap = t->cap ? t->cap * 2 : INITIAL_CAP;
	if (cap > RH_MAX_TYPES)
		cap = RH_MAX_TYPES;
	rh_type_info *types = realloc(t->types, cap * sizeof *types);
	if (!types)
		return -1;
	t->types = types;
	/* sizes[] is handed to mutators' fast paths, but only once registration
	 * is closed, so moving it here is safe. */
	struct rh_type_size *sizes = realloc(t->sizes, cap * sizeof *sizes);
	if (!sizes)
		return -1;
	t->sizes = sizes;
	t->cap = cap;
	return 0;
}

static void info_free(rh_type_info *ti)
{
	free(ti->ptr_offsets);
	free(ti->elem_ptr_offsets);
	ti->ptr_offsets = ti->elem_ptr_offsets = NULL;
}

static void truncate_to(rh_type_table *t, uint32_t n)
{
	while (t->n > n)
		info_free(&t->types[--t->n]);
}

int rh_typetab_init(rh_type_table *t)
{
	memset(t, 0, sizeof *t);
	if (grow(t))
		return -1;
	rh_type_info *f = &t->types[0];
	memset(f, 0, sizeof *f);
	strcpy(f->name, FILLER_NAME);
	f->layout = RH_LAYOUT_FIXED;
	f->size = RH_HEADER_SIZE; /* the real size is in each filler's header */
	t->sizes[0] = (struct rh_type_size){RH_HEADER_SIZE, 0};
	t->n = 1;
	return 0;
}

void rh_typetab_free(rh_type_table *t)
{
	truncate_to(t, 0);
	free(t->types);
	free(t->sizes);
	memset(t, 0, sizeof *t);
}

/* Check an offset list against [lo, limit), excluding `forbid` (the array
 * length word; UINT32_MAX for none), and return a sorted copy in *out. */
static int check_offsets(const char *tname, const char *field, const uint32_t *offs, uint32_t n,
                         uint32_t lo, uint32_t limit, const char *limit_what, uint32_t forbid,
                         uint32_t **out, rh_error *err)
{
	*out = NULL;
	if (n == 0)
		return 0;
	if (n > RH_MAX_PTR_FIELDS)
		return rh_err_set(err, RH_EINVAL,
		                  "type \"%s\": %s has %u entries; at most %d allowed", tname,
		                  field, n, RH_MAX_PTR_FIELDS);
	if (!offs)
		return rh_err_set(err, RH_EINVAL, "type \"%s\": %s is NULL but its count is %u",
		                  tname, field, n);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t o = offs[i];
		if (o % 8)
			return rh_err_set(err, RH_EINVAL,
			                  "type \"%s\": %s[%u] = %u is not 8-aligned", tname, field,
			                  i, o);
		if (o < lo)
			return rh_err_set(err, RH_EINVAL,
			                  "type \"%s\": %s[%u] = %u is the object header (offsets "
			                  "start at %u)",
			                  tname, field, i, o, lo);
		if (o >= limit)
			return rh_err_set(err, RH_EINVAL,
			                  "type \"%s\": %s[%u] = %u is outside the %s (%u bytes)",
			                  tname, field, i, o, limit_what, limit);
		if (o == forbid)
			return rh_err_set(err, RH_EINVAL,
			                  "type \"%s\": %s[%u] = %u is the array length word",
			                  tname, field, i, o);
	}
	uint32_t *s = malloc(n * sizeof *s);
	if (!s)
		return rh_err_set(err, RH_ENOMEM, "type \"%s\": out of memory", tname);
	/* Insertion sort: n <= RH_MAX_PTR_FIELDS and usually already sorted. */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t v = offs[i], j = i;
		for (; j > 0 && s[j - 1] > v; j--)
			s[j] = s[j - 1];
		s[j] = v;
	}
	for (uint32_t i = 1; i < n; i++) {
		if (s[i] == s[i - 1]) {
			uint32_t dup = s[i];
			free(s);
			return rh_err_set(err, RH_EINVAL, "type \"%s\": %s lists offset %u twice",
			                  tname, field, dup);
		}
	}
	*out = s;
	return 0;
}

static int check_name(const rh_type_table *t, const char *name, int check_unique, rh_error *err)
{
	if (!name)
		return rh_err_set(err, RH_EINVAL, "type: name is NULL");
	size_t len = strnlen(name, RH_TYPE_NAME_MAX);
	if (len == 0)
		return rh_err_set(err, RH_EINVAL, "type: name is empty");
	if (len >= RH_TYPE_NAME_MAX) {
		char shown[33];
		return rh_err_set(err, RH_EINVAL, "type \"%s...\": name is longer than %d bytes",
		                  printable(shown, sizeof shown, name), RH_TYPE_NAME_MAX - 1);
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];
		/* Names end up in diagnostics and logs. */
		if (c < 0x20 || c == 0x7f)
			return rh_err_set(err, RH_EINVAL,
			                  "type: name contains control character 0x%02x at %zu", c,
			                  i);
	}
	if (check_unique) {
		for (uint32_t i = 0; i < t->n; i++)
			if (strcmp(t->types[i].name, name) == 0)
				return rh_err_set(err, RH_EINVAL,
				                  "type \"%s\": name already registered as id %u",
				                  name, i);
	}
	return 0;
}

/* Validate d into a normalised rh_type_info (offsets sorted and owned). */
static int check_desc(const rh_type_table *t, const rh_type_desc *d, int check_unique,
                      rh_type_info *ti, rh_error *err)
{
	memset(ti, 0, sizeof *ti);
	if (!d)
		return rh_err_set(err, RH_EINVAL, "type: descriptor is NULL");
	int rc = check_name(t, d->name, check_unique, err);
	if (rc)
		return rc;
	const char *nm = d->name;
	if ((unsigned)d->layout >= N_LAYOUTS)
		return rh_err_set(err, RH_EINVAL, "type \"%s\": layout %d is not a known layout",
		                  nm, (int)d->layout);
	int array = d->layout != RH_LAYOUT_FIXED;
	uint32_t min = array ? RH_ARRAY_HEADER_SIZE : RH_HEADER_SIZE;
	if (d->size % 8)
		return rh_err_set(err, RH_EINVAL, "type \"%s\": size %u is not a multiple of 8", nm,
		                  d->size);
	if (d->size < min)
		return rh_err_set(err, RH_EINVAL,
		                  "type \"%s\": size %u is below the minimum %u for a %s layout",
		                  nm, d->size, min, layout_names[d->layout]);

	uint32_t elem_size = d->elem_size;
	const uint32_t *eoffs = d->elem_ptr_offsets;
	uint32_t n_eoffs = d->n_elem_ptrs;
	static const uint32_t ref_elem[1] = {0};
	switch (d->layout) {
	case RH_LAYOUT_FIXED:
		if (elem_size != 0)
			return rh_err_set(err, RH_EINVAL,
			                  "type \"%s\": elem_size %u given for a fixed layout "
			                  "(must be 0)",
			                  nm, elem_size);
		if (n_eoffs != 0)
			return rh_err_set(err, RH_EINVAL,
			                  "type \"%s\": elem_ptr_offsets given for a fixed layout",
			                  nm);
		break;
	case RH_LAYOUT_REF_ARRAY:
		if (elem_size != 0 && elem_size != 8)
			return rh_err_set(err, RH_EINVAL,
			                  "type \"%s\": elem_size %u contradicts ref_array (always "
			                  "8)",
			                  nm, elem_size);
		if (n_eoffs > 1 || (n_eoffs == 1 && (!eoffs || eoffs[0] != 0)))
			return rh_err_set(err, RH_EINVAL,
			                  "type \"%s\": elem_ptr_offsets contradict ref_array (one "
			                  "pointer at offset 0)",
			                  nm);
		elem_size = 8;
		eoffs = ref_elem;
		n_eoffs = 1;
		break;
	case RH_LAYOUT_BYTE_ARRAY:
		if (elem_size != 0 && elem_size != 1)
			return rh_err_set(
			        err, RH_EINVAL,
			        "type \"%s\": elem_size %u contradicts byte_array (always "
			        "1)",
			        nm, elem_size);
		if (n_eoffs != 0)
			return rh_err_set(err, RH_EINVAL,
			                  "type \"%s\": elem_ptr_offsets given for a byte_array",
			                  nm);
		elem_size = 1;
		break;
	case RH_LAYOUT_RECORD_ARRAY:
		if (elem_size < 8 || elem_size % 8)
			return rh_err_set(
			        err, RH_EINVAL,
			        "type \"%s\": elem_size %u must be a positive multiple of "
			        "8 for a record_array",
			        nm, elem_size);
		break;
	}

	strcpy(ti->name, nm);
	ti->layout = d->layout;
	ti->size = d->size;
	ti->elem_size = elem_size;
	rc = check_offsets(nm, "ptr_offsets", d->ptr_offsets, d->n_ptrs, RH_HEADER_SIZE, d->size,
	                   "fixed part", array ? 8 : UINT32_MAX, &ti->ptr_offsets, err);
	if (rc)
		return rc;
	ti->n_ptrs = d->n_ptrs;
	rc = check_offsets(nm, "elem_ptr_offsets", eoffs, n_eoffs, 0, elem_size, "element",
	                   UINT32_MAX, &ti->elem_ptr_offsets, err);
	if (rc) {
		info_free(ti);
		return rc;
	}
	ti->n_elem_ptrs = n_eoffs;
	return 0;
}

static rh_type_id add_type(rh_type_table *t, const rh_type_desc *d, int check_unique, rh_error *err)
{
	rh_type_info ti;
	if (check_desc(t, d, check_unique, &ti, err))
		return 0;
	if (t->n >= RH_MAX_TYPES) {
		info_free(&ti);
		rh_err_set(err, RH_EINVAL, "type \"%s\": the table is full (%d types)", ti.name,
		           RH_MAX_TYPES);
		return 0;
	}
	if (grow(t)) {
		info_free(&ti);
		rh_err_set(err, RH_ENOMEM, "type \"%s\": out of memory", ti.name);
		return 0;
	}
	uint32_t id = t->n++;
	t->types[id] = ti;
	t->sizes[id] =
	        (struct rh_type_size){ti.size, ti.layout == RH_LAYOUT_FIXED ? 0 : ti.elem_size};
	return id;
}

rh_type_id rh_typetab_add(rh_type_table *t, const rh_type_desc *desc, rh_error *err)
{
	return add_type(t, desc, 1, err);
}

/* ------------------------------------------------------------------ JSON */

static json_t *offsets_json(const uint32_t *o, uint32_t n)
{
	json_t *a = json_array();
	for (uint32_t i = 0; a && i < n; i++) {
		if (json_array_append_new(a, json_integer(o[i]))) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

char *rh_typetab_to_json(const rh_type_table *t)
{
	json_t *types = json_array();
	json_t *root = json_pack("{s:i,s:o}", "version", 1, "types", types);
	if (!root)
		return NULL;
	for (uint32_t id = 1; id < t->n; id++) {
		const rh_type_info *ti = &t->types[id];
		json_t *e =
		        json_pack("{s:I,s:s,s:s,s:I,s:I,s:o,s:o}", "id", (json_int_t)id, "name",
		                  ti->name, "layout", layout_names[ti->layout], "size",
		                  (json_int_t)ti->size, "elem_size", (json_int_t)ti->elem_size,
		                  "ptrs", offsets_json(ti->ptr_offsets, ti->n_ptrs), "elem_ptrs",
		                  offsets_json(ti->elem_ptr_offsets, ti->n_elem_ptrs));
		if (!e || json_array_append_new(types, e)) {
			json_decref(root);
			return NULL;
		}
	}
	char *s = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(root);
	return s;
}

/* Duplicate-name detection for decoding: the linear scan in rh_typetab_add
 * would be quadratic in a table of up to 65536 names sent by a peer. */
struct name_set {
	uint32_t *slot; /* type id + 1; 0 = empty */
	uint32_t mask;
};

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* Returns the id + 1 of an equal name, or 0 after inserting id. */
static uint32_t name_set_insert(struct name_set *ns, const rh_type_table *t, const char *name,
                                uint32_t id)
{
	for (uint32_t i = name_hash(name) & ns->mask;; i = (i + 1) & ns->mask) {
		if (ns->slot[i] == 0) {
			ns->slot[i] = id + 1;
			return 0;
		}
		if (strcmp(t->types[ns->slot[i] - 1].name, name) == 0)
			return ns->slot[i];
	}
}

static int get_u32(json_t *v, uint32_t *out)
{
	if (!json_is_integer(v))
		return -1;
	json_int_t x = json_integer_value(v);
	if (x < 0 || x > (json_int_t)UINT32_MAX)
		return -1;
	*out = (uint32_t)x;
	return 0;
}

static int get_offsets(json_t *a, uint32_t *out, uint32_t *n)
{
	if (!json_is_array(a) || json_array_size(a) > RH_MAX_PTR_FIELDS)
		return -1;
	*n = (uint32_t)json_array_size(a);
	for (uint32_t i = 0; i < *n; i++)
		if (get_u32(json_array_get(a, i), &out[i]))
			return -1;
	return 0;
}

#define JERR(...) rh_err_set(err, RH_EINVAL, "type table JSON: " __VA_ARGS__)

static int decode_entry(rh_type_table *t, json_t *e, size_t idx, struct name_set *ns, rh_error *err)
{
	static const char *const keys[] = {"id",        "name", "layout",   "size",
	                                   "elem_size", "ptrs", "elem_ptrs"};
	if (!json_is_object(e))
		return JERR("types[%zu]: expected an object", idx);
	const char *k;
	json_t *v;
	json_object_foreach(e, k, v)
	{
		size_t i = 0;
		while (i < sizeof keys / sizeof keys[0] && strcmp(keys[i], k) != 0)
			i++;
		if (i == sizeof keys / sizeof keys[0]) {
			char shown[41];
			return JERR("types[%zu]: unknown key \"%s\"", idx,
			            printable(shown, sizeof shown, k));
		}
	}
	uint32_t id, size, elem_size, n_ptrs, n_eptrs;
	uint32_t ptrs[RH_MAX_PTR_FIELDS], eptrs[RH_MAX_PTR_FIELDS];
	if (get_u32(json_object_get(e, "id"), &id) || id != t->n)
		return JERR("types[%zu].id: expected %u", idx, t->n);
	json_t *jn = json_object_get(e, "name");
	if (!json_is_string(jn))
		return JERR("types[%zu].name: expected a string", idx);
	json_t *jl = json_object_get(e, "layout");
	uint32_t layout = 0;
	while (json_is_string(jl) && layout < N_LAYOUTS &&
	       strcmp(layout_names[layout], json_string_value(jl)) != 0)
		layout++;
	if (!json_is_string(jl) || layout == N_LAYOUTS)
		return JERR("types[%zu].layout: expected one of fixed, ref_array, byte_array, "
		            "record_array",
		            idx);
	if (get_u32(json_object_get(e, "size"), &size))
		return JERR("types[%zu].size: expected an integer in 0..4294967295", idx);
	if (get_u32(json_object_get(e, "elem_size"), &elem_size))
		return JERR("types[%zu].elem_size: expected an integer in 0..4294967295", idx);
	if (get_offsets(json_object_get(e, "ptrs"), ptrs, &n_ptrs))
		return JERR("types[%zu].ptrs: expected an array of at most %d offsets", idx,
		            RH_MAX_PTR_FIELDS);
	if (get_offsets(json_object_get(e, "elem_ptrs"), eptrs, &n_eptrs))
		return JERR("types[%zu].elem_ptrs: expected an array of at most %d offsets", idx,
		            RH_MAX_PTR_FIELDS);

	rh_type_desc d = {
	        .name = json_string_value(jn),
	        .layout = (rh_layout)layout,
	        .size = size,
	        .elem_size = elem_size,
	        .ptr_offsets = ptrs,
	        .n_ptrs = n_ptrs,
	        .elem_ptr_offsets = eptrs,
	        .n_elem_ptrs = n_eptrs,
	};
	rh_error e2 = {0};
	if (add_type(t, &d, 0, &e2) == 0)
		return JERR("types[%zu]: %s", idx, e2.msg);
	uint32_t dup = name_set_insert(ns, t, t->types[id].name, id);
	if (dup) {
		truncate_to(t, id);
		return JERR("types[%zu]: name \"%s\" already used by id %u", idx,
		            json_string_value(jn), dup - 1);
	}
	return 0;
}

int rh_typetab_from_json(rh_type_table *t, const char *json, size_t len, rh_error *err)
{
	if (t->n != 1)
		return rh_err_set(err, RH_EINVAL, "type table JSON: the table is not empty");
	json_error_t jerr;
	json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return JERR("line %d, column %d: %s", jerr.line, jerr.column, jerr.text);
	int rc = 0;
	struct name_set ns = {0};
	json_t *types = json_object_get(root, "types");
	json_t *ver = json_object_get(root, "version");
	if (!json_is_object(root) || json_object_size(root) != 2 || !types || !ver) {
		rc = JERR("expected an object with exactly the keys \"version\" and \"types\"");
		goto out;
	}
	if (!json_is_integer(ver) || json_integer_value(ver) != 1) {
		rc = JERR("version: expected 1");
		goto out;
	}
	if (!json_is_array(types) || json_array_size(types) > RH_MAX_TYPES - 1) {
		rc = JERR("types: expected an array of at most %d types", RH_MAX_TYPES - 1);
		goto out;
	}
	size_t n = json_array_size(types);
	uint32_t cap = 16;
	while (cap < 2 * (n + 1))
		cap *= 2;
	ns.slot = calloc(cap, sizeof *ns.slot);
	ns.mask = cap - 1;
	if (!ns.slot) {
		rc = rh_err_set(err, RH_ENOMEM, "type table JSON: out of memory");
		goto out;
	}
	name_set_insert(&ns, t, t->types[0].name, 0);
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = decode_entry(t, json_array_get(types, i), i, &ns, err);
out:
	if (rc)
		truncate_to(t, 1);
	free(ns.slot);
	json_decref(root);
	return rc;
}
