#include <stdio.h>
#include <stdlib.h>

#include "common/common.h"
#include "common/grow.h"
#include "gc/mark.h"
#include "gc/object.h"

void rh_marker_init(rh_marker *mk)
{
	mk->work = NULL;
	mk->work_n = mk->work_head = mk->work_cap = 0;
	mk->order = NULL;
	mk->n_order = mk->cap_order = 0;
	mk->bytes_marked = 0;
	mk->error = 0;
	mk->valid = NULL;
	mk->valid_ctx = NULL;
	mk->deferred = NULL;
	mk->n_deferred = mk->cap_deferred = 0;
	mk->outside = NULL;
	mk->ext_lo = mk->ext_size = 0;
}

void rh_marker_free(rh_marker *mk)
{
	free(mk->work);
	free(mk->order);
	free(mk->deferred);
	rh_marker_init(mk);
}

void rh_marker_reset(rh_marker *mk)
{
	mk->work_n = mk->work_head = 0;
	mk->n_order = 0;
	mk->bytes_marked = 0;
	mk->error = 0;
	mk->n_deferred = 0;
}

/* BFS uses work[] as a queue [head, n); DFS as a stack [0, n). */
static void push(rh_marker *mk, uintptr_t obj)
{
	if (mk->work_n == mk->work_cap) {
		if (mk->order_kind == RH_ORDER_BFS && mk->work_head > 0) {
			size_t live = mk->work_n - mk->work_head;
			for (size_t i = 0; i < live; i++)
				mk->work[i] = mk->work[mk->work_head + i];
			mk->work_head = 0;
			mk->work_n = live;
		}
		if (mk->work_n == mk->work_cap)
			mk->work = rh_grow(mk->work, &mk->work_cap, mk->work_n + 1,
			                   sizeof *mk->work, 4096, "marker: work list");
	}
	mk->work[mk->work_n++] = obj;
}

/* Set the mark bit and record the object; 0 if it was already marked. */
static int mark(rh_marker *mk, uintptr_t obj)
{
	size_t i = (obj - mk->heap_lo) >> 3;
	uint64_t bit = 1ull << (i & 63);
	if (mk->mark_bits[i >> 6] & bit)
		return 0;
	mk->mark_bits[i >> 6] |= bit;
	if (mk->n_order == mk->cap_order)
		mk->order = rh_grow(mk->order, &mk->cap_order, mk->n_order + 1, sizeof *mk->order,
		                    4096, "marker: order");
	mk->order[mk->n_order++] = obj;
	size_t bytes = rh_hdr_bytes(rh_hdr((void *)obj));
	mk->live_bytes[(obj - mk->heap_lo) >> mk->region_shift] += bytes;
	mk->bytes_marked += bytes;
	return 1;
}

void rh_marker_root(rh_marker *mk, uintptr_t obj)
{
	if (mk->order_kind == RH_ORDER_BFS) {
		if (mark(mk, obj))
			push(mk, obj);
	} else {
		push(mk, obj);
	}
}

static void visit_bfs(void *vctx, void **slot)
{
	rh_marker *mk = vctx;
	uintptr_t v = (uintptr_t)*slot;
	if (rh_marker_in_set(mk, v)) {
		if (mark(mk, v))
			push(mk, v);
	} else if (mk->outside && (v & 7) == 0 && v - mk->ext_lo < mk->ext_size) {
		mk->outside(mk->valid_ctx, v);
	}
}

/* DFS: children are pushed last field first, so the first field is popped
 * (and placed) first; marking happens at pop time, giving preorder. */
static void visit_dfs(void *vctx, void **slot)
{
	rh_marker *mk = vctx;
	uintptr_t v = (uintptr_t)*slot;
	if (rh_marker_in_set(mk, v)) {
		if (!rh_marker_is_marked(mk, v))
			push(mk, v);
	} else if (mk->outside && (v & 7) == 0 && v - mk->ext_lo < mk->ext_size) {
		mk->outside(mk->valid_ctx, v);
	}
}

static void corrupt(rh_marker *mk, uintptr_t obj)
{
	if (mk->error)
		return;
	mk->error = 1;
	fprintf(stderr, "rheap: marker: corrupt object header %#llx at %p\n",
	        (unsigned long long)rh_hdr((void *)obj), (void *)obj);
}

/* An object the caller's `valid` rejects waits for the remark. */
static int deferred(rh_marker *mk, uintptr_t obj)
{
	if (!mk->valid || mk->valid(mk->valid_ctx, obj))
		return 0;
	if (mk->n_deferred == mk->cap_deferred)
		mk->deferred = rh_grow(mk->deferred, &mk->cap_deferred, mk->n_deferred + 1,
		                       sizeof *mk->deferred, 4096, "marker: deferred list");
	mk->deferred[mk->n_deferred++] = obj;
	return 1;
}

int rh_marker_drain_some(rh_marker *mk, size_t budget)
{
	size_t done = 0;
	if (mk->order_kind == RH_ORDER_BFS) {
		while (mk->work_head < mk->work_n) {
			if (done++ == budget)
				return 1;
			uintptr_t obj = mk->work[mk->work_head++];
			if (deferred(mk, obj))
				continue;
			if (rh_object_slots_inline(mk->tt, (void *)obj, visit_bfs, mk, 0) < 0)
				corrupt(mk, obj);
		}
		mk->work_head = mk->work_n = 0;
	} else {
		while (mk->work_n > 0) {
			if (done++ == budget)
				return 1;
			uintptr_t obj = mk->work[--mk->work_n];
			if (!mark(mk, obj) || deferred(mk, obj))
				continue;
			if (rh_object_slots_inline(mk->tt, (void *)obj, visit_dfs, mk, 1) < 0)
				corrupt(mk, obj);
		}
	}
	return 0;
}

int rh_marker_drain(rh_marker *mk)
{
	rh_marker_drain_some(mk, SIZE_MAX);
	return mk->error ? -1 : 0;
}

void rh_marker_rescan(rh_marker *mk, uintptr_t obj)
{
	if (deferred(mk, obj))
		return;
	int bfs = mk->order_kind == RH_ORDER_BFS;
	if (rh_object_slots_inline(mk->tt, (void *)obj, bfs ? visit_bfs : visit_dfs, mk, !bfs) < 0)
		corrupt(mk, obj);
}
