/* Walking an object's reference slots from its header and the type table.
 * The same walker serves the CPU server and the tracers, so it never trusts a
 * header whose size disagrees with the layout: that is how a corrupt or
 * half-written object is caught instead of being traced past its end. */
#include "gc/object.h"

/* Is `bytes` (from the header) the size the layout gives obj? The length word
 * of an array is read only once the header says the object covers it. */
static int layout_ok(const rh_type_info *ti, const void *obj, size_t bytes, uint64_t *len_out)
{
	*len_out = 0;
	if (ti->layout == RH_LAYOUT_FIXED)
		return bytes == ti->size;
	if (bytes < ti->size)
		return 0;
	uint64_t len = ((const uint64_t *)obj)[1];
	uint64_t total;
	if (__builtin_mul_overflow(len, (uint64_t)ti->elem_size, &total) ||
	    __builtin_add_overflow(total, (uint64_t)ti->size + 7, &total))
		return 0;
	*len_out = len;
	return (total & ~(uint64_t)7) == bytes;
}

int rh_object_slots(const rh_type_table *tt, void *obj, rh_slot_fn fn, void *ctx)
{
	uint64_t h = rh_hdr(obj);
	if (rh_hdr_is_fwd(h))
		return -1;
	uint32_t tid = rh_hdr_type(h);
	const rh_type_info *ti = rh_type_get(tt, tid);
	size_t bytes = rh_hdr_bytes(h);
	if (!ti)
		return -1;
	if (tid == RH_FILLER_TYPE)
		return bytes >= RH_HEADER_SIZE ? 0 : -1;
	uint64_t len;
	if (!layout_ok(ti, obj, bytes, &len))
		return -1;

	char *base = obj;
	for (uint32_t i = 0; i < ti->n_ptrs; i++)
		fn(ctx, (void **)(base + ti->ptr_offsets[i]));
	if (ti->n_elem_ptrs == 0)
		return 0;
	char *elem = base + ti->size;
	if (ti->layout == RH_LAYOUT_REF_ARRAY) {
		void **s = (void **)elem;
		for (uint64_t i = 0; i < len; i++)
			fn(ctx, &s[i]);
		return 0;
	}
	for (uint64_t i = 0; i < len; i++, elem += ti->elem_size)
		for (uint32_t j = 0; j < ti->n_elem_ptrs; j++)
			fn(ctx, (void **)(elem + ti->elem_ptr_offsets[j]));
	return 0;
}

int rh_object_valid(const rh_type_table *tt, const void *obj, size_t max_bytes)
{
	if (!obj || ((uintptr_t)obj & 7) != 0)
		return 0;
	uint64_t h = rh_hdr(obj);
	if (rh_hdr_is_fwd(h))
		return 0;
	uint32_t tid = rh_hdr_type(h);
	const rh_type_info *ti = rh_type_get(tt, tid);
	size_t bytes = rh_hdr_bytes(h);
	if (!ti || bytes < RH_HEADER_SIZE || bytes > max_bytes)
		return 0;
	if (tid == RH_FILLER_TYPE)
		return 1;
	uint64_t len;
	return layout_ok(ti, obj, bytes, &len);
}

/* Visit the reference slots of obj that lie in [lo, hi). */
void rh_object_slots_in(const rh_type_table *tt, uintptr_t obj, uintptr_t lo, uintptr_t hi,
                        rh_slot_fn fn, void *ctx)
{
	rh_object_slots_in_inline(tt, obj, lo, hi, fn, ctx);
}
