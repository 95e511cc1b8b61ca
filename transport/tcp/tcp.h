/* tcp provider internals. One TCP connection per rh_tp_conn carries every
 * frame (chan.h): messages and credits, range advertisements, one-sided
 * requests and their responses. Each side's receive thread plays the NIC:
 * it executes the peer's requests against this side's RH_TP_REMOTE ranges
 * (bounds-checked again here) and completes this side's own requests. */
#ifndef RH_TP_TCP_H
#define RH_TP_TCP_H

#include "transport/chan.h"
#include "transport/cq.h"

enum {
	TCP_REQ = RH_CH_PROVIDER, /* arg = opcode, wr_id = seq */
	TCP_RESP,                 /* arg = status, wr_id = seq */
	TCP_AD,                   /* payload: struct tcp_range */
	TCP_UNAD,                 /* payload: struct tcp_range */
};

struct tcp_range {
	uint64_t addr, len;
};

/* Request payloads. READ/WRITE: u32 n, u32 0, n x tcp_sge, then (WRITE)
 * the data of every segment in order. Atomics: tcp_atomic. */
struct tcp_sge {
	uint64_t remote;
	uint32_t len, pad;
};

struct tcp_atomic {
	uint64_t remote, a, b;
};

/* The largest scatter/gather list one request may carry: bounds the
 * receive thread's work per frame. */
#define TCP_MAX_SGE 4096

struct tcp_pending;

struct tcp_conn {
	struct rh_tp_conn base;
	struct rh_chan ch;
	struct rh_cq cq;
	pthread_mutex_t plock;       /* guards the pending list and next_seq */
	struct tcp_pending *pending; /* posted, not yet answered */
	uint64_t next_seq;
};

/* tcp_ops.c */
int tcp_on_frame(struct rh_chan *ch, const struct rh_chan_hdr *h, rh_error *err);
void tcp_fail_pending(struct rh_chan *ch);
void tcp_free_pending(struct tcp_conn *t); /* at close, threads stopped */
int tcp_rw(rh_tp_conn *c, enum rh_tp_opcode op, const struct rh_tp_seg *seg, size_t n,
           uint64_t wr_id, rh_error *err);
int tcp_atomic(rh_tp_conn *c, enum rh_tp_opcode op, const struct rh_tp_seg *seg, uint64_t a,
               uint64_t b, uint64_t *old, uint64_t wr_id, rh_error *err);

#endif
