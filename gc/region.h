/* Region descriptors: the unit of allocation, collection and (later)
 * distribution across memory servers.
 *
 * Invariants: a region is aligned to its size; [start, top) is parsable
 * (objects and fillers back to back); a FREE region has top == start, an
 * empty remembered set and no resident pages; only EDEN regions receive
 * mutator allocation; a humongous object starts at the start of its HUMONGOUS
 * region and continues through `span - 1` HUMONGOUS_CONT regions.
 */
#ifndef RH_GC_REGION_H
#define RH_GC_REGION_H

#include <stdint.h>

#include "gc/remset.h"

typedef enum rh_region_kind {
	RH_REGION_FREE = 0,
	RH_REGION_EDEN = 1,
	RH_REGION_OLD = 2,
	RH_REGION_HUMONGOUS = 3,
	RH_REGION_HUMONGOUS_CONT = 4,
} rh_region_kind;

typedef struct rh_region {
	uintptr_t start;
	uintptr_t top;         /* bump pointer */
	uintptr_t old_top;     /* top at the end of the last collection */
	uint64_t live_bytes;   /* from the last marking that covered this region */
	uint64_t cached_bytes; /* resident on the CPU server (swap) */
	uint32_t index;
	uint32_t survivals;              /* collections this region's objects survived */
	uint32_t span;                   /* HUMONGOUS: regions the object spans */
	uint32_t head;                   /* HUMONGOUS_CONT: index of the HUMONGOUS head */
	uint32_t roots_ident, roots_top; /* (ident, top) when roots last went to the tracer */
	size_t roots_cards;              /* and the source queue's size then */
	uint64_t roots_hash;             /* and a hash of the frame and global roots into it */
	uint32_t ident;  /* bumped whenever the object layout may change in place (tracers
	                       drop their marks of the region then) */
	uint8_t kind;    /* rh_region_kind */
	uint8_t in_cset; /* being collected now */
	uint8_t retain;  /* in the collection set, every object stays (humongous, dense, failure) */
	uint8_t has_pins;     /* holds pinned objects: kept, its other objects still move */
	uint8_t kept_young;   /* EDEN: kept for its pins as a survivor region (pin.Y1); its
	                         slots were entered in other regions' sets as sources */
	uint8_t starts_valid; /* the collector's object-start bitmap covers it */
	uint8_t live_known;   /* live_bytes is from a marking, not an estimate */
	uint8_t warm;         /* FREE but still mapped: [start, dirty_end) may be non-zero */
	uint8_t dropping;     /* FREE, its pages returned at the end of the pause (region.P1) */
	uint8_t mapped;       /* every page populated since last dropped (local heap, region.P2) */
	uint8_t readying;    /* FREE, off the free list while its pages are touched (pretouch.P2) */
	uint8_t roots_fresh; /* its rebuilt target queue lost bits: send its roots again (rset.T1) */
	uintptr_t dirty_end;    /* bytes at or past it are zero */
	uint32_t tail_fill;     /* OLD: bytes of the filler that closes it, if known */
	uint32_t cards_pending; /* pause whose cards into it await filing (rset.D2) */
	uint8_t passed_pending; /* the rebuilding's last visit passed it for that (rset.D2) */
	rh_remset remset;
} rh_region;

#endif
