/* rheap inline fast paths: allocation, write barrier, safepoint poll.
 *
 * These read the first fields of an rh_mutator (struct rh_mutator_fast),
 * which are the ABI between the VM's compiled code and librheap. Everything
 * that is not the common case goes to an out-of-line *_slow function.
 */
#ifndef RHEAP_INLINE_H
#define RHEAP_INLINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Header word: | size in 8-byte words (40) | type id (16) | gc bits (8) |.
 * A header whose bit 0 is set is a forwarding pointer (only during a
 * collection, never seen by mutators). */
#define RH_HDR_TYPE_SHIFT 8
#define RH_HDR_SIZE_SHIFT 24
#define RH_HDR_GC_MASK 0xffull

static inline uint64_t rh_header_make(uint32_t type, size_t bytes)
{
	return ((uint64_t)(bytes >> 3) << RH_HDR_SIZE_SHIFT) |
	       ((uint64_t)type << RH_HDR_TYPE_SHIFT);
}

struct rh_type_size {
	uint32_t size;      /* fixed part, bytes */
	uint32_t elem_size; /* 0 for fixed types */
};

struct rh_mutator_fast {
	uintptr_t tlab_top;
	uintptr_t tlab_end;
	int poll; /* non-zero: call rh_safepoint_slow() */
	uint32_t region_shift;
	uintptr_t heap_lo;
	uintptr_t heap_size;
	const struct rh_type_size *types;
	uint32_t n_types;
	uint32_t checks; /* debug build: validate every fast-path call */
	uint32_t satb;   /* a concurrent cycle marks: log overwritten references */
};

RH_API void rh_checked_alloc(void *m, uint32_t t);
RH_API void rh_checked_barrier(void *m, void **slot);
RH_API void rh_satb_log(struct rh_mutator *m, void **slot);

#if defined(__GNUC__)
#define RH_LIKELY(x) __builtin_expect(!!(x), 1)
#define RH_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define RH_LIKELY(x) (x)
#define RH_UNLIKELY(x) (x)
#endif

/* Allocate an object of a fixed-layout type. */
static inline void *rh_alloc(struct rh_mutator *m, uint32_t t)
{
	struct rh_mutator_fast *f = (struct rh_mutator_fast *)m;
	if (RH_UNLIKELY(f->checks))
		rh_checked_alloc(m, t);
	size_t bytes = f->types[t].size;
	uintptr_t p = f->tlab_top;
	if (RH_LIKELY(bytes <= f->tlab_end - p)) {
		f->tlab_top = p + bytes;
		*(uint64_t *)p = rh_header_make(t, bytes);
		return (void *)p;
	}
	return rh_alloc_slow(m, t, bytes, 0);
}

/* Allocate an array type with `length` elements. */
static inline void *rh_alloc_array(struct rh_mutator *m, uint32_t t, size_t length)
{
	struct rh_mutator_fast *f = (struct rh_mutator_fast *)m;
	if (RH_UNLIKELY(f->checks))
		rh_checked_alloc(m, t);
	const struct rh_type_size *ts = &f->types[t];
	size_t bytes = ((size_t)ts->size + length * ts->elem_size + 7) & ~(size_t)7;
	uintptr_t p = f->tlab_top;
	if (RH_LIKELY(length < ((size_t)1 << 32) && bytes <= f->tlab_end - p)) {
		f->tlab_top = p + bytes;
		((uint64_t *)p)[0] = rh_header_make(t, bytes);
		((uint64_t *)p)[1] = length;
		return (void *)p;
	}
	return rh_alloc_slow(m, t, bytes, length);
}

/* Store a reference (or immediate) into a pointer field of a heap object.
 * While a concurrent cycle marks, the value overwritten is logged first
 * (snapshot at the beginning). Post-barrier: the store happens, then
 * cross-region references are recorded. Frame and global slots are not heap fields: store into them
 * directly (debug builds report rh_write_ref on a slot outside the heap). */
static inline void rh_write_ref(struct rh_mutator *m, void **slot, void *val)
{
	struct rh_mutator_fast *f = (struct rh_mutator_fast *)m;
	if (RH_UNLIKELY(f->checks))
		rh_checked_barrier(m, slot);
	if (RH_UNLIKELY(f->satb))
		rh_satb_log(m, slot);
	__atomic_store_n(slot, val, __ATOMIC_RELAXED); /* racy VMs: never torn */
	uintptr_t v = (uintptr_t)val, s = (uintptr_t)slot;
	if (RH_UNLIKELY(((v ^ s) >> f->region_shift) != 0 && v - f->heap_lo < f->heap_size &&
	                (v & 7) == 0 && s - f->heap_lo < f->heap_size))
		rh_barrier_slow(m, slot, val);
}

/* Poll: cheap enough for every loop back-edge and call. */
static inline void rh_safepoint(struct rh_mutator *m)
{
	struct rh_mutator_fast *f = (struct rh_mutator_fast *)m;
	if (RH_UNLIKELY(__atomic_load_n(&f->poll, __ATOMIC_ACQUIRE)))
		rh_safepoint_slow(m);
}

#ifdef __cplusplus
}
#endif
#endif
