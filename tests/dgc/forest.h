/* What the distributed-collection tests (tests/dgc) and benchmark
 * (benchmarks/dgc) build their forests from: nodes whose checksum is a
 * function of their id, so that a lost or damaged object shows, hung from
 * reference arrays of anchors, with a deterministic RNG choosing shapes and
 * mutations. */
#ifndef RH_TEST_DGC_FOREST_H
#define RH_TEST_DGC_FOREST_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "rheap/rheap.h"
#include "tests/common/rng.h"

/* An anchor array (type dgc_refs_desc). */
struct dgc_refs {
	uint64_t hdr, len;
	void *e[];
};

static const rh_type_desc dgc_refs_desc = {
        .name = "dgc-refs", .layout = RH_LAYOUT_REF_ARRAY, .size = 16, .elem_size = 8};
/* Short-lived garbage. */
static const rh_type_desc dgc_junk_desc = {
        .name = "dgc-junk", .layout = RH_LAYOUT_BYTE_ARRAY, .size = 16, .elem_size = 1};

/* A list node of 64 bytes: the next node at offset 8, then a number. */
struct dgc_lnode {
	uint64_t hdr;
	struct dgc_lnode *next;
	uint64_t id, pad[5];
};

/* Registers the list node type under `name`. */
static inline rh_type_id dgc_lnode_type(rh_heap *h, const char *name, rh_error *err)
{
	static const uint32_t ptrs[] = {8};
	rh_type_desc nd = {.name = name,
	                   .layout = RH_LAYOUT_FIXED,
	                   .size = sizeof(struct dgc_lnode),
	                   .ptr_offsets = ptrs,
	                   .n_ptrs = 1};
	return rh_type_register(h, &nd, err);
}

/* Pushes n nodes numbered first, first + 1, ... onto the list at *root,
 * a global root (rh_global_add: stored directly, not through the write
 * barrier, which takes heap slots only); false, with the allocation's
 * error in *err, if one failed. */
static inline bool dgc_lnode_push(rh_mutator *m, rh_type_id t, struct dgc_lnode **root,
                                  uint64_t first, uint64_t n, rh_error *err)
{
	for (uint64_t i = first; i < first + n; i++) {
		struct dgc_lnode *x = rh_alloc(m, t);
		if (!x) {
			*err = *rh_last_error();
			return false;
		}
		x->id = i;
		rh_write_ref(m, (void **)&x->next, *root);
		*root = x;
	}
	return true;
}

static inline double dgc_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
