/* rheap transport: one-sided remote memory and control messages.
 *
 * One interface, one directory per provider (verbs/, tcp/, shm/). The
 * provider is chosen at run time by name. Nothing here knows about GC or
 * paging. Semantics and ordering are specified in docs/transport.md.
 *
 * Model: a passive side (memory server) listens; an active side (CPU
 * server) connects. Both sides authenticate with the shared secret during
 * connect/accept. Either side may register local ranges; ranges registered
 * with RH_TP_REMOTE are advertised to the peer, which may then READ, WRITE
 * and do 8-byte atomics on them by virtual address. Every one-sided access
 * is bounds-checked against the peer's advertised ranges before it is
 * posted (RH_ERANGE) and again by the passive side where the provider can.
 */
#ifndef RH_TRANSPORT_H
#define RH_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "rheap/rheap.h"

typedef struct rh_tp_listener rh_tp_listener;
typedef struct rh_tp_conn rh_tp_conn;

typedef struct rh_tp_opts {
	const char *provider;  /* "verbs", "tcp", "shm" */
	const uint8_t *secret; /* shared secret; never sent on the wire */
	size_t secret_len;
	uint32_t timeout_ms;  /* bound for any blocking call and for dead-peer detection */
	uint32_t max_msg;     /* largest control message, bytes (default 64 KiB) */
	uint32_t msg_credits; /* receive buffers per direction (default 64) */
} rh_tp_opts;

/* Registration flags. */
#define RH_TP_LOCAL 1u  /* local buffer for one-sided ops issued by this side */
#define RH_TP_REMOTE 2u /* advertised: the peer may access it one-sided */

typedef struct rh_tp_sge {
	void *local;     /* inside a range registered on this side */
	uint64_t remote; /* peer virtual address, inside an advertised range */
	uint32_t len;
} rh_tp_sge;

typedef struct rh_tp_completion {
	uint64_t wr_id;
	int status; /* rh_status */
} rh_tp_completion;

/* Providers compiled into this build, e.g. "verbs,tcp,shm". */
const char *rh_tp_providers(void);

/* ---- connection setup ---- */
int rh_tp_listen(const rh_tp_opts *o, const char *host, uint16_t port, rh_tp_listener **out,
                 rh_error *err);
uint16_t rh_tp_listener_port(const rh_tp_listener *l); /* after port 0 */
/* Waits up to timeout_ms (-1 = forever) for one authenticated connection. */
int rh_tp_accept(rh_tp_listener *l, int timeout_ms, rh_tp_conn **out, rh_error *err);
void rh_tp_listener_close(rh_tp_listener *l);
int rh_tp_connect(const rh_tp_opts *o, const char *host, uint16_t port, rh_tp_conn **out,
                  rh_error *err);
void rh_tp_close(rh_tp_conn *c);

/* ---- memory ----
 * fd/fd_off: the range is a MAP_SHARED mapping of fd at fd_off (the shm
 * provider needs this for RH_TP_REMOTE ranges; others ignore it; -1 = none).
 * Ranges advertised after connect are sent to the peer before this returns. */
int rh_tp_reg(rh_tp_conn *c, void *addr, size_t len, int fd, uint64_t fd_off, unsigned flags,
              rh_error *err);
/* Withdraw a range (e.g. a region freed); in-flight peer accesses may still
 * complete, later ones are refused. */
int rh_tp_dereg(rh_tp_conn *c, void *addr, size_t len, rh_error *err);

/* ---- one-sided operations (posted asynchronously) ----
 * Each call posts one logical operation identified by wr_id, made of n
 * scatter/gather elements; its completion reports once for the whole list. */
int rh_tp_read(rh_tp_conn *c, const rh_tp_sge *sg, size_t n, uint64_t wr_id, rh_error *err);
int rh_tp_write(rh_tp_conn *c, const rh_tp_sge *sg, size_t n, uint64_t wr_id, rh_error *err);
/* 8-byte atomics on an 8-aligned remote address; *old receives the prior
 * value when the operation completes (result must stay valid until then). */
int rh_tp_cas(rh_tp_conn *c, uint64_t remote, uint64_t expect, uint64_t desired, uint64_t *old,
              uint64_t wr_id, rh_error *err);
int rh_tp_faa(rh_tp_conn *c, uint64_t remote, uint64_t add, uint64_t *old, uint64_t wr_id,
              rh_error *err);
int rh_tp_write8(rh_tp_conn *c, uint64_t remote, uint64_t val, uint64_t wr_id, rh_error *err);

/* Non-blocking: up to max completions. Returns the count, or -1 on error. */
int rh_tp_poll(rh_tp_conn *c, rh_tp_completion *out, int max, rh_error *err);
/* Block until wr_id completes (its status is returned) or timeout_ms passes
 * (RH_ETIMEDOUT; the operation stays posted). For wait, send and recv a
 * negative timeout_ms means the connection's opts.timeout_ms. */
int rh_tp_wait(rh_tp_conn *c, uint64_t wr_id, int timeout_ms, rh_error *err);

/* ---- two-sided control messages ----
 * Length-prefixed, at most max_msg bytes, delivered in order. Flow
 * control: send blocks (up to timeout_ms) while the peer has no free
 * receive buffer, so a fast sender cannot overrun a slow receiver. recv of
 * a message longer than cap: RH_EINVAL, *len = its size, message kept. */
int rh_tp_send(rh_tp_conn *c, const void *buf, size_t len, int timeout_ms, rh_error *err);
int rh_tp_recv(rh_tp_conn *c, void *buf, size_t cap, size_t *len, int timeout_ms, rh_error *err);

/* A file descriptor that becomes readable when a message may be ready or
 * the connection failed (for poll loops); -1 if the provider has none.
 * Completions need not make it readable: wait for them with rh_tp_wait or
 * rh_tp_poll. tcp/shm: an eventfd; read 8 bytes from it to reset it. */
int rh_tp_fd(rh_tp_conn *c);

#endif
