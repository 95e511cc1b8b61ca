/* The marker: region-local transitive marking with traversal-order output.
 *
 * It marks objects inside a set of regions (in_set[i] != 0), starting from
 * roots the caller gives, following every reference slot of each marked
 * object (rh_object_slots) to targets inside the set. References leaving the
 * set are not followed: the caller provides them as roots (remembered sets)
 * where they matter. Each newly marked object is appended to `order`, which
 * is the traversal order (DFS preorder by default, BFS selectable): the
 * evacuator copies in that order, so objects reached together are placed
 * together.
 *
 * Invariants: an object is appended to `order` exactly once, when its mark
 * bit is set; live_bytes[r] is the sum of the sizes of marked objects in
 * region r. The CPU server's collector and the tracers drive the same code.
 */
#ifndef RH_GC_MARK_H
#define RH_GC_MARK_H

#include <stddef.h>
#include <stdint.h>

#include "gc/types.h"
#include "rheap/rheap-config.h"

typedef struct rh_marker {
	const rh_type_table *tt;
	uintptr_t heap_lo;
	uintptr_t heap_size;
	uint32_t region_shift;
	const uint8_t *in_set; /* per region */
	uint64_t *mark_bits;   /* heap-wide, one bit per word; caller clears */
	rh_order order_kind;

	uintptr_t *work; /* DFS stack or BFS ring */
	size_t work_n, work_head, work_cap;

	uintptr_t *order; /* output: objects in traversal order */
	size_t n_order, cap_order;

	uint64_t *live_bytes; /* per region, caller zeroes */
	uint64_t bytes_marked;
	int error; /* a corrupt header was met (reported once on stderr) */

	/* Tracers only: an image may hold pages not yet written back, so an
	 * object whose header `valid` rejects is marked but not scanned; it is
	 * put on `deferred` for the remark (docs/distributed-gc.md, MSCT 3). */
	int (*valid)(void *ctx, uintptr_t obj);
	void *valid_ctx;
	uintptr_t *deferred;
	size_t n_deferred, cap_deferred;
	/* Tracers' full-heap marking: a reference outside the set but inside
	 * [ext_lo, ext_lo + ext_size) goes to `outside` (another partition). */
	void (*outside)(void *ctx, uintptr_t ref);
	uintptr_t ext_lo, ext_size;
} rh_marker;

void rh_marker_init(rh_marker *mk);
void rh_marker_free(rh_marker *mk);
/* Reset the outputs for another marking (keeps buffers). */
void rh_marker_reset(rh_marker *mk);

/* Is v a reference into the marking set? */
static inline int rh_marker_in_set(const rh_marker *mk, uintptr_t v)
{
	return (v & 7) == 0 && v - mk->heap_lo < mk->heap_size &&
	       mk->in_set[(v - mk->heap_lo) >> mk->region_shift];
}
static inline int rh_marker_is_marked(const rh_marker *mk, uintptr_t obj)
{
	size_t i = (obj - mk->heap_lo) >> 3;
	return (mk->mark_bits[i >> 6] >> (i & 63)) & 1;
}

/* Add a root object (an object start inside the set). */
void rh_marker_root(rh_marker *mk, uintptr_t obj);
/* Mark transitively from the roots given so far. 0, or -1 if a corrupt
 * object was found (marking continues past it). */
int rh_marker_drain(rh_marker *mk);
/* The same, stopping after about `budget` objects: 1 if work remains. */
int rh_marker_drain_some(rh_marker *mk, size_t budget);
/* Scan an already marked object again (its fields may have changed),
 * pushing what it references; drain afterwards. */
void rh_marker_rescan(rh_marker *mk, uintptr_t obj);

#endif
