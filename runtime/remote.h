/* The CPU server's control path to its memory servers (remote.c). */
#ifndef RH_RUNTIME_REMOTE_H
#define RH_RUNTIME_REMOTE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "common/common.h"
#include "wire/proto.h"
#include "swap/swap.h"

typedef struct rh_remote rh_remote;

/* Connect to every server of cfg (which must outlive the remote), run the
 * HELLO exchange and start the heartbeat monitor. fatal(data, err) is called
 * once, from the monitor thread, when a server is lost. An attempt that
 * times out is repeated until RH_PROTO_OPEN_TIMEOUTS x transport.timeout_ms
 * have passed (operations.R2). */
int rh_remote_open(const rh_config *cfg, void (*fatal)(void *, const rh_error *), void *data,
                   rh_remote **out, rh_error *err);
/* Say BYE to every server still reachable and disconnect. */
void rh_remote_close(rh_remote *r);
/* Hosts with their connections and partitions (meta_base filled in). */
const rh_swap_host *rh_remote_hosts(rh_remote *r, size_t *n);
int rh_remote_send_types(rh_remote *r, const char *json, rh_error *err);
/* Tell each host which of its regions were freed. */
int rh_remote_free(rh_remote *r, const uint32_t *regions, size_t n, uint32_t region_shift,
                   uint64_t heap_base, rh_error *err);
bool rh_remote_lost(rh_remote *r);
/* From now on a lost host is reported to fn (from the monitor thread),
 * which says whether the heap survives it (red.R4): if so the host is only
 * marked down and nothing is sent to it again (red.R5); if not, fn has
 * ended the heap. Without it every loss is fatal. */
void rh_remote_on_loss(rh_remote *r, bool (*fn)(void *data, size_t host, const rh_error *err),
                       void *data);
/* red.Q1: the heap closes. From now on a lost host is only marked down
 * (no on_loss call, no fatal handler); returns once an on_loss call under
 * way has returned, so the swap system can be closed after it. */
void rh_remote_quiesce(rh_remote *r);
/* red.S1: connect to spare k of the config and say HELLO as slot i's
 * server; *out gets its connection, partition (with the metadata address),
 * replica and name. The connection is the caller's until adopted. */
int rh_remote_spare_hello(rh_remote *r, size_t k, size_t i, rh_swap_host *out, rh_error *err);
/* red.S3: h (from rh_remote_spare_hello) becomes slot i's host on the
 * control path, its connection the remote's from then on; returns once the
 * monitor installed it. */
int rh_remote_adopt(rh_remote *r, size_t i, const rh_swap_host *h, rh_error *err);
int rh_remote_send(rh_remote *r, size_t host, rh_msg *m, rh_error *err);
/* The host whose partition holds a region (SIZE_MAX if none). */
size_t rh_remote_host_of(rh_remote *r, uint32_t region);

/* Concurrent marking results: the last MARKED report for a region. */
bool rh_remote_marked(rh_remote *r, uint32_t region, rh_marked_desc *out);
void rh_remote_forget_marked(rh_remote *r, uint32_t region);
uint64_t rh_remote_marked_total(rh_remote *r);

/* One host's answer to an EVACUATE (filled by the monitor thread). */
typedef struct rh_remote_evac {
	uint64_t id;
	bool want, done;
	uint32_t n_src, n_dst;
	rh_evac_src *src;
	rh_evac_dst *dst;
	rh_ref_pair *pairs;
	size_t n_pairs, cap_pairs;
	uint64_t remark_ns, evac_ns, bytes_copied, objects_copied, pages_rescanned;
} rh_remote_evac;
int rh_remote_evacuate(rh_remote *r, size_t host, uint64_t id, uint32_t flags, const uint32_t *src,
                       uint32_t n_src, const uint32_t *dst, uint32_t n_dst, rh_error *err);
/* Wait for that host's EVACUATED; *out stays valid until its next
 * EVACUATE. */
int rh_remote_evac_wait(rh_remote *r, size_t host, rh_remote_evac **out, rh_error *err);

/* Cards fixed by their host tracer (FIX_CARDS / CARDS_FIXED). */
typedef struct rh_remote_fix {
	uint64_t id;
	uint32_t outstanding; /* FIX_CARDS sent whose LAST reply has not come */
	rh_fix_ent *ents;     /* every reply's entries, in arrival order */
	size_t n, cap;
} rh_remote_fix;
/* Send cards and slot writes to one host, in as many FIX_CARDS as needed,
 * each carrying the `moved` list. */
int rh_remote_fix_cards(rh_remote *r, size_t host, uint64_t id, const uint32_t *moved,
                        uint32_t n_moved, const uint64_t *cards, size_t n_cards,
                        const rh_slot_write *writes, size_t n_writes, rh_error *err);
/* Wait for every reply; *out stays valid until the next rh_remote_fix_cards
 * to that host, whose entries it then resets. */
int rh_remote_fix_wait(rh_remote *r, size_t host, rh_remote_fix **out, rh_error *err);

/* Full-heap marking by the tracers. The monitor thread relays MARK_REFS
 * between tracers and counts batches outstanding per tracer. */
typedef struct rh_remote_full {
	uint64_t id;
	bool active;
	uint64_t *outstanding; /* per host: batches sent to it, not yet acked */
	bool *done;            /* per host: its last FULL_DONE arrived */
	uint64_t *live;        /* per region: live bytes reported */
	uint8_t *reported;     /* per region */
	rh_ref_pair *pairs;    /* cross-region references of live objects */
	size_t n_pairs, cap_pairs;
	uint64_t bytes_marked, mark_ns, relayed;
} rh_remote_full;
/* conc: the mutators run while the tracers mark (FULL BEGIN_CONCURRENT). */
int rh_remote_full_begin(rh_remote *r, uint64_t id, bool conc, rh_error *err);
/* No batch is outstanding: a marking that gets no more roots is done. */
bool rh_remote_full_quiet(rh_remote *r);
int rh_remote_full_roots(rh_remote *r, size_t host, const uint64_t *addrs, size_t n, rh_error *err);
/* Wait until no batch is outstanding anywhere (marking terminated). */
int rh_remote_full_wait(rh_remote *r, rh_error *err);
/* Send FULL END and wait for every tracer's FULL_DONE. */
int rh_remote_full_end(rh_remote *r, rh_remote_full **out, rh_error *err);

#endif
