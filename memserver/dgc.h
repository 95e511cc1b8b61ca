/* The tracer's share of distributed collection (docs/distributed-gc.md):
 * concurrent marking of its partition's regions (MSCT) and, inside a CSSC,
 * the remark and evacuation of the regions the CPU server chose.
 *
 * One thread owns all marking state. The server thread hands it the
 * control messages that concern it (REGIONS, ROOTS, EVACUATE) through an
 * inbox and never waits on it, so heartbeats are answered while a region is
 * being marked or evacuated.
 */
#ifndef RH_MEMSERVER_DGC_H
#define RH_MEMSERVER_DGC_H

#include <stddef.h>
#include <stdint.h>

#include "gc/layout.h"
#include "wire/proto.h"
#include "rheap/rheap.h"

typedef struct rh_dgc rh_dgc;

/* Sends a message to the CPU server; called from the marking thread, so it
 * must be safe against the server thread's own sends. */
typedef int (*rh_dgc_send_fn)(void *ctx, const rh_msg *m, rh_error *err);

typedef struct rh_dgc_stats {
	uint64_t bytes_traced;   /* live bytes marked concurrently */
	uint64_t regions_marked; /* MARKED entries sent */
	uint64_t regions_evacuated;
	uint64_t bytes_copied;
	uint64_t mark_ns; /* time spent marking concurrently */
} rh_dgc_stats;

int rh_dgc_open(rh_dgc **out, const rh_config *cfg, const rh_partition *part, rh_region_meta *meta,
                rh_dgc_send_fn send, void *send_ctx, rh_error *err);
/* Stop the thread and free everything. */
void rh_dgc_close(rh_dgc *d);
/* The type table (JSON, as TYPES carried it); marking starts once it is
 * set. */
int rh_dgc_set_types(rh_dgc *d, const char *json, size_t len, rh_error *err);
/* Queue a raw control message (REGIONS, ROOTS or EVACUATE) for the thread. */
int rh_dgc_post(rh_dgc *d, const uint8_t *msg, size_t len, rh_error *err);
/* RH_OK, or the error that stopped the thread (a protocol violation met
 * while marking or evacuating); the ERROR was already sent. */
int rh_dgc_status(rh_dgc *d, rh_error *err);
void rh_dgc_stats_get(rh_dgc *d, rh_dgc_stats *out);

#endif
