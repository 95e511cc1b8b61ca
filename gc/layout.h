/* Layouts shared by the CPU server and the memory servers: partitions, the
 * per-region tag words and eviction logs (docs/swap.md).
 *
 * A memory server hosting partition [base, base + size) maps it at those
 * addresses and also exposes a metadata area (rh_region_meta per region)
 * wherever it likes; it reports that area's address in its HELLO reply.
 */
#ifndef RH_GC_LAYOUT_H
#define RH_GC_LAYOUT_H

#include <stdint.h>

#include "rheap/rheap-config.h"

#define RH_PAGE_SIZE 4096u
#define RH_PAGE_SHIFT 12
#define RH_LOG_ENTRIES 1024u /* eviction-log ring slots per region */

/* tag = version << 1 | dirty */
#define RH_TAG_DIRTY 1ull
static inline uint64_t rh_tag_version(uint64_t tag)
{
	return tag >> 1;
}

/* Per-region metadata on the memory server, one-sided accessible. */
typedef struct rh_region_meta {
	uint64_t tag;
	uint64_t log_head;            /* entries appended so far; slot = i % RH_LOG_ENTRIES */
	uint32_t log[RH_LOG_ENTRIES]; /* page index within the region */
} rh_region_meta;

typedef struct rh_partition {
	uint32_t index;
	uint64_t base; /* first heap address */
	uint64_t size;
	uint32_t first_region; /* global index of the first region */
	uint32_t n_regions;
	uint64_t meta_base; /* address of rh_region_meta[n_regions] on the host */
	uint64_t meta_size; /* page-rounded */
} rh_partition;

/* Fill `out` for server i of a checked config. 0, or -1 if i is out of
 * range. */
static inline int rh_partition_of(const rh_config *cfg, uint32_t i, rh_partition *out)
{
	if (i >= cfg->n_servers)
		return -1;
	uint64_t base = cfg->heap_base;
	for (uint32_t k = 0; k < i; k++)
		base += cfg->servers[k].partition_size;
	out->index = i;
	out->base = base;
	out->size = cfg->servers[i].partition_size;
	out->first_region = (uint32_t)((base - cfg->heap_base) / cfg->region_size);
	out->n_regions = (uint32_t)(out->size / cfg->region_size);
	out->meta_size = (out->n_regions * sizeof(rh_region_meta) + RH_PAGE_SIZE - 1) &
	                 ~(uint64_t)(RH_PAGE_SIZE - 1);
	out->meta_base = 0; /* learnt from the host */
	return 0;
}

/* red.P1: with replication, partition p's copy is kept by server
 * (p + 1) mod n, so each server holds its own partition and its
 * predecessor's copy. -1: no copy (redundancy none). */
static inline int rh_replica_holder(const rh_config *cfg, uint32_t p)
{
	if (cfg->redundancy != RH_REDUNDANCY_REPLICATE || cfg->n_servers < 2)
		return -1;
	return (int)((p + 1) % cfg->n_servers);
}

/* The partition whose copy server i keeps, or -1. */
static inline int rh_replica_kept_by(const rh_config *cfg, uint32_t i)
{
	if (cfg->redundancy != RH_REDUNDANCY_REPLICATE || cfg->n_servers < 2)
		return -1;
	return (int)((i + cfg->n_servers - 1) % cfg->n_servers);
}

#endif
