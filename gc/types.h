/* The type table: object layouts as data, shared by the CPU server and the
 * tracers (which receive it as JSON at connect time and trace any VM's
 * objects without running VM code).
 *
 * Invariants: id 0 is the filler type (no pointers, size from the header);
 * ids are dense 1..n-1 in registration order; every offset is 8-aligned and
 * inside its fixed part or element; arrays have size >= 16 (length word at
 * offset 8). sizes[] mirrors types[] for the inline allocation fast path.
 */
#ifndef RH_GC_TYPES_H
#define RH_GC_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "rheap/rheap.h"

#define RH_TYPE_NAME_MAX 64

typedef struct rh_type_info {
	char name[RH_TYPE_NAME_MAX];
	rh_layout layout;
	uint32_t size;      /* fixed part, bytes, header included */
	uint32_t elem_size; /* 0 for fixed layouts */
	uint32_t n_ptrs;
	uint32_t n_elem_ptrs;
	uint32_t *ptr_offsets;      /* malloc'd, ascending */
	uint32_t *elem_ptr_offsets; /* malloc'd, ascending */
} rh_type_info;

typedef struct rh_type_table {
	rh_type_info *types;        /* index = type id */
	struct rh_type_size *sizes; /* parallel to types, for the fast path */
	uint32_t n;                 /* ids in use, filler included */
	uint32_t cap;
} rh_type_table;

int rh_typetab_init(rh_type_table *t);
void rh_typetab_free(rh_type_table *t);
/* Validate desc and append it. Returns the new id, or 0 with err filled
 * (RH_EINVAL, message naming the field and the reason). */
rh_type_id rh_typetab_add(rh_type_table *t, const rh_type_desc *desc, rh_error *err);
/* JSON: {"version":1,"types":[{"id":1,"name":..,"layout":"fixed",
 * "size":..,"elem_size":..,"ptrs":[..],"elem_ptrs":[..]},...]} */
char *rh_typetab_to_json(const rh_type_table *t);
/* Decode into an empty (initialised) table; validates everything the
 * encoder guarantees, since the text comes from the network. */
int rh_typetab_from_json(rh_type_table *t, const char *json, size_t len, rh_error *err);

static inline const rh_type_info *rh_type_get(const rh_type_table *t, uint32_t id)
{
	return id < t->n ? &t->types[id] : NULL;
}

#endif
