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

/* Does the header make sense (known type, size consistent with layout)? */
int rh_object_valid(const rh_type_table *tt, const void *obj, size_t max_bytes);

#endif
