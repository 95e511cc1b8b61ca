/* What the distributed-collection tests (tests/dgc) and benchmark
 * (benchmarks/dgc) build their forests from: nodes whose checksum is a
 * function of their id, so that a lost or damaged object shows, hung from
 * reference arrays of anchors, with a deterministic RNG choosing shapes and
 * mutations. */
#ifndef RH_TEST_DGC_FOREST_H
#define RH_TEST_DGC_FOREST_H

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

static inline double dgc_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
