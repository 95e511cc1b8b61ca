/* The input format of fuzz_dgc.c, shared with the seed writer
 * (seeds_dgc.c).
 *
 * The fuzzed tracer hosts partition 1 of a two-partition heap: 2 MiB at
 * DGC_HEAP_BASE in 256 KiB regions, so its regions are 4..7 and partition
 * 0 (regions 0..3, never mapped) is another tracer's. An input is one
 * options byte (bit 0: BFS order) and then records
 *
 *     tag (1 byte, taken mod DGC_TAGS), length (2 bytes LE), payload
 *
 * applied in order, starting from a zeroed image and fresh tracer state.
 */
#ifndef RH_FUZZ_DGC_INPUT_H
#define RH_FUZZ_DGC_INPUT_H

#include <stdint.h>

#include "wire/proto.h"

#define DGC_HEAP_BASE 0x500000000000ull
#define DGC_REGION (256ull << 10)
#define DGC_REGIONS 8u /* in the heap, 4 per partition */
#define DGC_PART_BASE (DGC_HEAP_BASE + 4 * DGC_REGION)
#define DGC_PART_SIZE (4 * DGC_REGION)
#define DGC_FIRST 4u /* global index of the partition's first region */

enum {
	DGC_IMAGE = 0, /* u32 LE offset into the partition, then bytes written there */
	DGC_META = 1,  /* u32 LE offset into the rh_region_meta array, then bytes */
	DGC_TYPES = 2, /* a type table as JSON (as a whole TYPES would bring it) */
	DGC_MSG = 3,   /* a type byte (mod the list in fuzz_dgc.c), then the payload:
	                  the harness adds the 12-byte header */
	DGC_MARK = 4,  /* mark the next region MSCT picks */
	DGC_TAGS
};

/* The message types the server thread hands to the collector, in the
 * order DGC_MSG's type byte indexes them. */
static const uint8_t dgc_msg_types[] = {RH_MSG_REGIONS, RH_MSG_ROOTS,     RH_MSG_EVACUATE,
                                        RH_MSG_FULL,    RH_MSG_MARK_REFS, RH_MSG_FIX_CARDS,
                                        RH_MSG_FREE};

#endif
