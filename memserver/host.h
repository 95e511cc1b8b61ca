/* Hosting one partition of a heap: its bytes, mapped at the heap's own
 * virtual addresses and backed by a memfd, and its per-region metadata
 * (tag words and eviction logs, gc/layout.h) in a second memfd. */
#ifndef RH_MEMSERVER_HOST_H
#define RH_MEMSERVER_HOST_H

#include <stdbool.h>
#include <stdint.h>

#include "gc/layout.h"
#include "rheap/rheap.h"

typedef struct rh_host {
	rh_partition part;
	uint64_t region_size;
	int data_fd, meta_fd;
	void *data; /* == (void *)part.base */
	rh_region_meta *meta;
	/* red.P1: with replication, the copy of another partition (rpart),
	 * mapped at that partition's addresses in a memfd of its own; the
	 * CPU server writes it as it writes the owner's, and reads it when
	 * the owner is lost. rdata NULL: none. */
	rh_partition rpart;
	int rdata_fd;
	void *rdata;
	uint64_t punched_bytes; /* released by FREE so far */
	bool pinned;            /* verbs: pages are pinned by the MR, FREE zeroes instead */
} rh_host;

/* Map partition i of cfg. RH_EBUSY (with the range in the message) if the
 * addresses are taken in this process. */
int rh_host_open(rh_host *h, const rh_config *cfg, uint32_t i, rh_error *err);
void rh_host_close(rh_host *h);
/* Give a region's memory back to the kernel: the partition's own, or the
 * copy's it keeps. The region is a global index; RH_ERANGE if it is in
 * neither. */
int rh_host_free_region(rh_host *h, uint32_t region, rh_error *err);
/* Bytes of the data memfd actually backed by memory. */
uint64_t rh_host_resident(const rh_host *h);
/* Bytes of the copy's memfd backed by memory (0 without one). */
uint64_t rh_host_copy_resident(const rh_host *h);
/* Regions of the partition with at least one page backed. */
uint64_t rh_host_regions_used(const rh_host *h);

#endif
