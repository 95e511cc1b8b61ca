/* The contract between the transport core (transport.c) and a provider.
 *
 * Layout (as rdma-core's providers): one directory per provider, each
 * exporting one `const struct rh_tp_provider` listed at the end of this
 * file. The core owns argument checking, the option defaults, the local
 * and peer range tables and the bounds checks; a provider owns its wire,
 * its threads and its completions.
 *
 * Objects: a provider allocates its own listener/connection structs with
 * the core's struct as their FIRST member, so the core can cast:
 *
 *     struct tcp_conn { struct rh_tp_conn base; int fd; ... };
 *
 * Invariants the core guarantees before calling an op:
 *  - every pointer argument is non-NULL where the public API requires it;
 *  - rw/atomic: n >= 1, every segment has len >= 1, its local buffer lies
 *    inside a local range registered with RH_TP_LOCAL (lkey filled in) and
 *    its remote range inside one range the peer advertised (rkey/rmap
 *    filled in); atomics are 8-aligned. A provider that can check again on
 *    the passive side does so (RH_ERANGE).
 *  - reg: the range does not overlap a range already registered on this
 *    connection, len >= 1, flags is a non-empty subset of LOCAL|REMOTE and,
 *    for REMOTE ranges, the shm provider's fd requirement is the provider's
 *    own check.
 */
#ifndef RH_TP_PROVIDER_H
#define RH_TP_PROVIDER_H

#include <pthread.h>
#include <stdbool.h>

#include "transport/transport.h"

#define RH_TP_SECRET_MAX 1024
#define RH_TP_DEFAULT_TIMEOUT_MS 5000
#define RH_TP_DEFAULT_MAX_MSG (64u * 1024)
#define RH_TP_DEFAULT_CREDITS 64u
#define RH_TP_MAX_MSG_LIMIT (64u * 1024 * 1024)

/* Options after defaults, with the secret copied (the caller's buffer need
 * not outlive the call). */
struct rh_tp_cfg {
	char provider[16];
	uint8_t secret[RH_TP_SECRET_MAX];
	size_t secret_len;
	uint32_t timeout_ms;  /* > 0 */
	uint32_t max_msg;     /* > 0 */
	uint32_t msg_credits; /* > 0 */
};

/* One registered range: local (ours) or peer (advertised to us). */
struct rh_tp_range {
	uint64_t addr;
	uint64_t len;
	unsigned flags; /* RH_TP_LOCAL | RH_TP_REMOTE */
	int fd;         /* local ranges: the caller's fd (-1 = none); not owned */
	uint64_t fd_off;
	uint64_t key; /* provider's: lkey (local) / rkey (peer) */
	void *map;    /* provider's: local address of byte `addr` (shm peer
		    * ranges) or a provider object (e.g. an ibv_mr) */
};

/* Sorted, non-overlapping, thread-safe (the provider's receive thread adds
 * peer ranges while application threads look them up). */
struct rh_tp_ranges {
	pthread_mutex_t lock;
	struct rh_tp_range *v;
	size_t n, cap;
};

void rh_tp_ranges_init(struct rh_tp_ranges *t);
void rh_tp_ranges_fini(struct rh_tp_ranges *t);
/* RH_EINVAL if r overlaps an existing range; RH_ENOMEM. */
int rh_tp_ranges_add(struct rh_tp_ranges *t, const struct rh_tp_range *r, rh_error *err);
/* Remove the range starting exactly at addr with length len; *out (if
 * non-NULL) receives it. RH_ERANGE if there is none. */
int rh_tp_ranges_del(struct rh_tp_ranges *t, uint64_t addr, uint64_t len, struct rh_tp_range *out,
                     rh_error *err);
/* Copy out the range containing [addr, addr+len) entirely, if it has all
 * of `flags`. False if none. */
bool rh_tp_ranges_find(struct rh_tp_ranges *t, uint64_t addr, uint64_t len, unsigned flags,
                       struct rh_tp_range *out);
/* True if any range intersects [addr, addr+len). */
bool rh_tp_ranges_overlap(struct rh_tp_ranges *t, uint64_t addr, uint64_t len);
/* Call fn on each range (under the lock: fn must not call back into t). */
void rh_tp_ranges_each(struct rh_tp_ranges *t, void (*fn)(struct rh_tp_range *r, void *arg),
                       void *arg);

struct rh_tp_listener {
	const struct rh_tp_provider *ops; /* set by the core */
	struct rh_tp_cfg cfg;             /* copied by the core before ops->listen */
};

struct rh_tp_conn {
	const struct rh_tp_provider *ops; /* set by the core */
	struct rh_tp_cfg cfg;             /* copied by the core before ops->connect/accept */
	struct rh_tp_ranges local;        /* registered here; managed by the core */
	struct rh_tp_ranges peer;         /* advertised by the peer; the provider
				   * adds/removes as advertisements arrive */
	/* Peer's message limits, learned by the provider at connect time
	 * (send refuses larger messages with RH_EINVAL). */
	uint32_t peer_max_msg;
};

/* A provider calls this on its new connection struct (in connect and
 * accept) before any other use, and rh_tp_conn_fini in close after its
 * threads stopped. cfg is copied. */
void rh_tp_conn_init(struct rh_tp_conn *c, const struct rh_tp_cfg *cfg);
void rh_tp_conn_fini(struct rh_tp_conn *c);

/* One scatter/gather element, resolved by the core. */
struct rh_tp_seg {
	void *local;
	uint64_t remote;
	uint32_t len;
	uint64_t lkey; /* key of the local range containing `local` */
	uint64_t rkey; /* key of the peer range containing `remote` */
	void *rmap;    /* peer range's map + (remote - addr); NULL if no map */
};

enum rh_tp_opcode {
	RH_TP_OP_READ = 1,
	RH_TP_OP_WRITE = 2,
	RH_TP_OP_CAS = 3,    /* a = expect, b = desired */
	RH_TP_OP_FAA = 4,    /* a = add */
	RH_TP_OP_WRITE8 = 5, /* a = value */
};

/* Every op returns an rh_status and fills err on failure. Ops that the
 * public API documents as bounded by timeout_ms must honour cfg.timeout_ms.
 * After a provider detects a dead peer, every later op on the connection
 * fails with RH_EPEER and pending operations complete with RH_EPEER. */
struct rh_tp_provider {
	const char *name;

	/* host/port as in the public API; port 0 = ephemeral. *out is a
	 * provider struct whose first member is struct rh_tp_listener; the
	 * core fills base.ops and base.cfg after the call (listen may read cfg
	 * from its argument). */
	int (*listen)(const struct rh_tp_cfg *cfg, const char *host, uint16_t port,
	              rh_tp_listener **out, rh_error *err);
	uint16_t (*listener_port)(const rh_tp_listener *l);
	/* One authenticated connection (auth.h), or RH_ETIMEDOUT after
	 * timeout_ms (< 0: forever) when no connection arrived. An
	 * authentication failure returns RH_EAUTH, and a connection silent
	 * past its handshake deadline RH_EPEER (rh_tp_handshake_rc): callers
	 * count those as refused connections and an RH_ETIMEDOUT as none. Both
	 * leave the listener usable for the next accept. */
	int (*accept)(rh_tp_listener *l, int timeout_ms, rh_tp_conn **out, rh_error *err);
	void (*listener_close)(rh_tp_listener *l);
	/* Connect and authenticate within cfg->timeout_ms. Wrong secret on
	 * either side: RH_EAUTH. */
	int (*connect)(const struct rh_tp_cfg *cfg, const char *host, uint16_t port,
	               rh_tp_conn **out, rh_error *err);
	/* Stop threads, fail pending work, free. Must call rh_tp_conn_fini. */
	void (*close)(rh_tp_conn *c);

	/* reg: make r usable by the provider (fill r->key / r->map) and, if
	 * RH_TP_REMOTE, advertise it to the peer before returning. The core
	 * adds r to c->local afterwards. dereg: r was already removed from
	 * c->local; withdraw the advertisement and release r's resources. */
	int (*reg)(rh_tp_conn *c, struct rh_tp_range *r, rh_error *err);
	int (*dereg)(rh_tp_conn *c, const struct rh_tp_range *r, rh_error *err);

	/* READ/WRITE of n segments as one operation with one completion. */
	int (*rw)(rh_tp_conn *c, enum rh_tp_opcode op, const struct rh_tp_seg *seg, size_t n,
	          uint64_t wr_id, rh_error *err);
	/* CAS/FAA/WRITE8 on seg->remote (8 bytes, 8-aligned; seg->local is
	 * NULL, lkey 0). *old (NULL for WRITE8) is written before the
	 * completion is reported. */
	int (*atomic)(rh_tp_conn *c, enum rh_tp_opcode op, const struct rh_tp_seg *seg, uint64_t a,
	              uint64_t b, uint64_t *old, uint64_t wr_id, rh_error *err);
	int (*poll)(rh_tp_conn *c, rh_tp_completion *out, int max, rh_error *err);
	/* timeout_ms >= 0 (the core maps negative values to cfg.timeout_ms). */
	int (*wait)(rh_tp_conn *c, uint64_t wr_id, int timeout_ms, rh_error *err);

	/* len <= c->peer_max_msg (checked by the core); timeout_ms >= 0. */
	int (*send)(rh_tp_conn *c, const void *buf, size_t len, int timeout_ms, rh_error *err);
	/* A message longer than cap: RH_EINVAL, *len = its size, and the
	 * message stays queued. */
	int (*recv)(rh_tp_conn *c, void *buf, size_t cap, size_t *len, int timeout_ms,
	            rh_error *err);
	int (*fd)(rh_tp_conn *c);
};

#ifdef RH_HAVE_TCP
extern const struct rh_tp_provider rh_tp_tcp;
#endif
#ifdef RH_HAVE_SHM
extern const struct rh_tp_provider rh_tp_shm;
#endif
#ifdef RH_HAVE_VERBS
extern const struct rh_tp_provider rh_tp_verbs;
#endif

/* A connection arrived and its handshake ended with rc: a deadline passed
 * there is the peer's silence (RH_EPEER), not an accept without a
 * connection (RH_ETIMEDOUT; see ops->accept). */
static inline int rh_tp_handshake_rc(int rc, rh_error *err)
{
	if (rc != RH_ETIMEDOUT)
		return rc;
	if (err)
		err->code = RH_EPEER;
	return RH_EPEER;
}

#endif
