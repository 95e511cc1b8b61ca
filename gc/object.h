/* Object model shared by the CPU server and the tracers: header words,
 * sizes, and walking an object's reference slots.
 *
 * Header: | size in words (40) | type (16) | gc bits (8) |. A header with
 * bit 0 set is a forwarding pointer (during a collection only). Sizes are
 * multiples of 8 and at least 8. Regions are parsable: from a region's start
 * to its top, objects follow each other, gaps are filler objects (type 0).
 */
#ifndef RH_GC_OBJECT_H
#define RH_GC_OBJECT_H

#include <stddef.h>
#include <stdint.h>

#include "gc/types.h"
#include "rheap/rheap.h"

#define RH_FILLER_TYPE 0u
#define RH_HDR_FWD 1ull /* header is (new address | 1) */

static inline uint64_t rh_hdr(const void *obj)
{
	return *(const uint64_t *)obj;
}
static inline uint32_t rh_hdr_type(uint64_t h)
{
	return (uint32_t)((h >> RH_HDR_TYPE_SHIFT) & 0xffff);
}
static inline size_t rh_hdr_bytes(uint64_t h)
{
	return (size_t)(h >> RH_HDR_SIZE_SHIFT) << 3;
}
static inline int rh_hdr_is_fwd(uint64_t h)
{
	return (h & RH_HDR_FWD) != 0;
}
static inline void *rh_hdr_fwd_addr(uint64_t h)
{
	return (void *)(uintptr_t)(h & ~RH_HDR_FWD);
}

/* Write a filler object covering [p, p+bytes); bytes >= 8, multiple of 8. */
static inline void rh_fill(void *p, size_t bytes)
{
	*(uint64_t *)p = rh_header_make(RH_FILLER_TYPE, bytes);
}

/* Call fn(ctx, slot) for each pointer slot of obj (whose header is valid).
 * Returns 0, or -1 if the header is inconsistent with the type table. */
typedef void (*rh_slot_fn)(void *ctx, void **slot);
int rh_object_slots(const rh_type_table *tt, void *obj, rh_slot_fn fn, void *ctx);
/* Only the slots that lie in [lo, hi) (a card), without visiting the rest
 * of a large array. The header must already be known valid. */
void rh_object_slots_in(const rh_type_table *tt, uintptr_t obj, uintptr_t lo, uintptr_t hi,
                        rh_slot_fn fn, void *ctx);

/* The same walk, inline: the collector's hot loops pass a static fn, which
 * the compiler then calls directly (or inlines). With `reverse`, slots come
 * last first (a DFS pushing children reversed pops them in field order).
 * Returns -1 if the header is inconsistent with the type table. */
static inline int rh_object_slots_inline(const rh_type_table *tt, void *obj, rh_slot_fn fn,
                                         void *ctx, int reverse)
{
	uint64_t h = *(const uint64_t *)obj;
	uint32_t t = (uint32_t)((h >> RH_HDR_TYPE_SHIFT) & 0xffff);
	if (t >= tt->n)
		return -1;
	if (t == RH_FILLER_TYPE)
		return 0;
	const rh_type_info *ti = &tt->types[t];
	size_t bytes = (size_t)(h >> RH_HDR_SIZE_SHIFT) << 3;
	char *base = (char *)obj;
	uint64_t len = 0;
	if (ti->elem_size) {
		/* Exactly the size the layout gives (as rh_object_valid). */
		if (bytes < ti->size)
			return -1;
		len = ((const uint64_t *)obj)[1];
		if (len > (bytes - ti->size) / ti->elem_size ||
		    ((ti->size + len * ti->elem_size + 7) & ~(uint64_t)7) != bytes)
			return -1;
	} else if (bytes != ti->size) {
		return -1;
	}
	if (!reverse)
		for (uint32_t i = 0; i < ti->n_ptrs; i++)
			fn(ctx, (void **)(void *)(base + ti->ptr_offsets[i]));
	if (ti->n_elem_ptrs) {
		char *e0 = base + ti->size;
		if (reverse) {
			for (uint64_t e = len; e-- > 0;)
				for (uint32_t k = ti->n_elem_ptrs; k-- > 0;)
					fn(ctx, (void **)(void *)(e0 + e * ti->elem_size +
					                          ti->elem_ptr_offsets[k]));
		} else {
			for (uint64_t e = 0; e < len; e++)
				for (uint32_t k = 0; k < ti->n_elem_ptrs; k++)
					fn(ctx, (void **)(void *)(e0 + e * ti->elem_size +
					                          ti->elem_ptr_offsets[k]));
		}
	}
	if (reverse)
		for (uint32_t i = ti->n_ptrs; i-- > 0;)
			fn(ctx, (void **)(void *)(base + ti->ptr_offsets[i]));
	return 0;
}

/* rh_object_slots_in, inline, for the card scan of a pause (the same
 * reason as above). */
static inline void rh_object_slots_in_inline(const rh_type_table *tt, uintptr_t obj, uintptr_t lo,
                                             uintptr_t hi, rh_slot_fn fn, void *ctx)
{
	uint32_t t = rh_hdr_type(rh_hdr((void *)obj));
	if (t >= tt->n || t == RH_FILLER_TYPE)
		return;
	const rh_type_info *ti = &tt->types[t];
	for (uint32_t i = 0; i < ti->n_ptrs; i++) {
		uintptr_t a = obj + ti->ptr_offsets[i];
		if (a >= lo && a < hi)
			fn(ctx, (void **)a);
	}
	if (!ti->elem_size || !ti->n_elem_ptrs)
		return;
	uint64_t len = ((uint64_t *)obj)[1];
	uintptr_t e0 = obj + ti->size;
	uint64_t first = lo > e0 ? (lo - e0) / ti->elem_size : 0;
	uint64_t last = hi > e0 ? (hi - e0 + ti->elem_size - 1) / ti->elem_size : 0;
	if (last > len)
		last = len;
	for (uint64_t e = first; e < last; e++)
		for (uint32_t k = 0; k < ti->n_elem_ptrs; k++) {
			uintptr_t a = e0 + e * ti->elem_size + ti->elem_ptr_offsets[k];
			if (a >= lo && a < hi)
				fn(ctx, (void **)a);
		}
}

/* Does the header make sense (known type, size consistent with layout)? */
int rh_object_valid(const rh_type_table *tt, const void *obj, size_t max_bytes);

#endif
