/* Internals of the verbs (rdma-core) provider, shared by its files:
 *   verbs_conn.c  rdma_cm connection setup, resources, handshake, close
 *   verbs_cq.c    completion handling, progress thread, waiting
 *   verbs_msg.c   SEND/RECV control messages with credit flow control
 *   verbs_ops.c   registration, one-sided ops, the provider table
 *
 * Threading: one mutex per connection (mu) guards everything below it. A
 * progress thread sleeps on the completion channel and the rdma_cm event
 * channel, so advertisements, credits and disconnects are handled even
 * while the application is idle; application threads that wait for a
 * result busy-poll the CQ themselves for a short while first (that is
 * what keeps the latency close to the hardware's).
 */
#ifndef RH_TP_VERBS_H
#define RH_TP_VERBS_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "common/common.h"
#include "transport/provider.h"

#define VB_MAGIC 0x72685662u /* "rhVb" */
#define VB_VERSION 1u
#define VB_SPIN_NS 300000ull    /* busy-poll this long before sleeping */
#define VB_REARM_MS 10          /* CQ events back on after this long without spinners */
#define VB_SLICE_NS 1000000ull  /* sleep slice while waiting on peer-written memory */
#define VB_INTERNAL_CREDITS 16u /* receive buffers reserved for provider messages */
#define VB_SEND_SLOTS 16u       /* registered copy buffers for non-inline sends */
#define VB_SEND_SLOT_MAX (64u * 1024)
#define VB_SQ_DEPTH 512u
/* Largest span per READ/WRITE WR. Soft-RoCE's requester retransmits a
 * whole READ when its responses stall, which made single multi-MiB READs
 * fail under emulation; 1 MiB WRs cost nothing measurable on hardware. */
#define VB_WR_MAX (1u << 20)
#define VB_MAX_INLINE 256u
#define VB_ACK_TIMEOUT 14 /* local ACK timeout 4.096us * 2^14 = 67 ms, 7 retries */

/* Message kinds, carried in the immediate data of SEND_WITH_IMM. */
enum vb_msg { VB_MSG_USER = 1, VB_MSG_AUTH = 2, VB_MSG_ADVERT = 3, VB_MSG_WITHDRAW = 4 };

/* What a work request's wr_id refers to (top bits of the wr_id). */
enum vb_kind { VB_WR_OP = 1, VB_WR_SEND = 2, VB_WR_CTRS = 3, VB_WR_RECV = 4 };

#define VB_WRID(kind, idx, seq)                                                                    \
	(((uint64_t)(kind) << 60) | ((uint64_t)((idx)&0xfffffffu) << 32) | (uint32_t)(seq))
#define VB_WRID_KIND(w) ((unsigned)((w) >> 60))
#define VB_WRID_IDX(w) ((uint32_t)(((w) >> 32) & 0xfffffffu))
#define VB_WRID_SEQ(w) ((uint32_t)(w))

/* Connection parameters exchanged in rdma_cm private data (REQ <= 56 B). */
struct vb_hello {
	uint32_t magic;
	uint32_t version;
	uint32_t max_msg;          /* largest message the sender accepts */
	uint32_t user_credits;     /* receive buffers for application messages */
	uint32_t internal_credits; /* receive buffers for provider messages */
	uint32_t ctrs_rkey;
	uint64_t ctrs_addr; /* where the peer RDMA-WRITEs its counters */
};

/* Counters one side RDMA-WRITEs into the other's memory. Monotonic; the
 * check word lets a reader reject a copy it caught half-written. */
struct vb_ctrs {
	uint64_t user_posted;     /* receive buffers ever posted for user messages */
	uint64_t internal_posted; /* ... for provider messages */
	uint64_t acked;           /* advertisements/withdrawals processed */
	uint64_t check;
};
#define VB_CTRS_CHECK(c) ((c)->user_posted ^ (c)->internal_posted ^ (c)->acked ^ 0x5eed5eed5eedull)

/* Advertisement payload (VB_MSG_ADVERT / VB_MSG_WITHDRAW). */
struct vb_advert {
	uint64_t addr;
	uint64_t len;
	uint32_t rkey;
	uint32_t pad;
};

struct vb_op {
	uint64_t wr_id;
	uint64_t *old;    /* atomics: where the prior value goes */
	uint32_t pending; /* signalled WRs not yet completed */
	uint32_t gen;     /* bumped on each use of the slot */
	int status;
	bool busy;
	bool internal; /* a provider-owned op (large send): not reported */
	bool finished; /* internal ops: completed */
};

struct vb_done {
	uint64_t wr_id;
	int status;
};

struct vb_rmsg {
	uint32_t buf; /* receive buffer index */
	uint32_t len;
	uint32_t kind; /* enum vb_msg */
};

struct vb_conn {
	struct rh_tp_conn base;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* broadcast whenever anything completes */

	struct rdma_event_channel *ech;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int epfd;   /* progress thread: cch, ech, wake */
	int wakefd; /* eventfd: stops the progress thread */
	int appfd;  /* eventfd returned by rh_tp_fd */
	bool appfd_set;
	bool appfd_used; /* rh_tp_fd was called: keep appfd current */
	pthread_t thread;
	bool thread_on;
	bool stopping;
	bool armed;            /* CQ event requested */
	int spinning;          /* threads busy-polling the CQ in rh_vb_wait_for */
	uint64_t last_spin_ns; /* when the last spinner stopped */
	bool authed;
	int dead; /* rh_status that ended the connection, 0 while alive */
	char why[160];

	/* Device and QP limits. */
	uint32_t max_sge;    /* SGEs per WRITE WR */
	uint32_t max_sge_rd; /* SGEs per READ WR */
	uint32_t max_inline;
	uint32_t sq_depth;
	uint32_t sq_posted;   /* WRs posted (sequence, wraps) */
	uint32_t sq_done;     /* sequence of the last completed signalled WR */
	uint32_t unsignalled; /* WRs posted since the last signalled one */

	/* Scratch: counters in (peer writes), counters out (we send inline),
	 * one 8-byte atomic result slot per op. */
	struct vb_ctrs *ctrs_in;
	struct ibv_mr *ctrs_mr;
	uint64_t *atomic_res;
	struct ibv_mr *atomic_mr;
	uint64_t peer_ctrs_addr;
	uint32_t peer_ctrs_rkey;

	/* Receiving. */
	uint8_t *rbuf;
	struct ibv_mr *rbuf_mr;
	size_t rslot;
	uint32_t nrbuf;
	uint32_t user_credits, internal_credits;
	struct vb_rmsg *ready; /* FIFO of received user/auth messages */
	uint32_t ready_head, ready_n;
	uint64_t user_posted, internal_posted, acked; /* our counters */
	uint64_t user_reported;
	bool report_due;

	/* Sending. */
	uint8_t *sbuf;
	struct ibv_mr *sbuf_mr;
	size_t sslot;
	uint32_t sfree[VB_SEND_SLOTS];
	uint32_t nsfree;
	uint64_t user_sent, internal_sent, adverts_sent;
	struct vb_ctrs peer; /* last consistent copy of ctrs_in */
	uint32_t peer_user_credits, peer_internal_credits;

	/* One-sided operations. */
	struct vb_op *ops;
	uint32_t nops;
	uint32_t *opfree;
	uint32_t nopfree;
	struct vb_done *done; /* completed, not yet returned by poll/wait */
	size_t ndone, capdone, done_head;
	struct ibv_send_wr *wrs; /* scratch for building chains (under mu) */
	struct ibv_sge *sges;
};

/* verbs_conn.c */
void rh_vb_die(struct vb_conn *c, int code, const char *fmt, ...) RH_PRINTF(3, 4);
int rh_vb_peer_error(struct vb_conn *c, rh_error *err);

/* verbs_cq.c */
void rh_vb_drain(struct vb_conn *c);
void rh_vb_finish_op(struct vb_conn *c, uint32_t idx);
void *rh_vb_progress_main(void *arg);
typedef bool (*vb_ready_fn)(struct vb_conn *c, const void *arg);
int rh_vb_wait_for(struct vb_conn *c, vb_ready_fn ready, const void *arg, bool polls_memory,
                   uint64_t deadline_ns);
uint64_t rh_vb_deadline(int timeout_ms);
int rh_vb_sq_reserve(struct vb_conn *c, uint32_t n, uint64_t deadline_ns, rh_error *err);
int rh_vb_post(struct vb_conn *c, struct ibv_send_wr *first, rh_error *err);
void rh_vb_app_notify(struct vb_conn *c);
void rh_vb_app_maybe_clear(struct vb_conn *c);

/* verbs_msg.c */
int rh_vb_post_recv(struct vb_conn *c, uint32_t buf);
void rh_vb_on_recv(struct vb_conn *c, const struct ibv_wc *wc);
void rh_vb_report(struct vb_conn *c);
void rh_vb_read_ctrs(struct vb_conn *c);
int rh_vb_send_msg(struct vb_conn *c, uint32_t kind, const void *buf, size_t len,
                   uint64_t deadline_ns, rh_error *err);
int rh_vb_recv_msg(struct vb_conn *c, uint32_t kind, void *buf, size_t cap, size_t *len,
                   uint64_t deadline_ns, rh_error *err);
int rh_vb_send(rh_tp_conn *base, const void *buf, size_t len, int timeout_ms, rh_error *err);
int rh_vb_recv(rh_tp_conn *base, void *buf, size_t cap, size_t *len, int timeout_ms, rh_error *err);

/* verbs_conn.c (provider ops) */
int rh_vb_listen(const struct rh_tp_cfg *cfg, const char *host, uint16_t port, rh_tp_listener **out,
                 rh_error *err);
uint16_t rh_vb_listener_port(const rh_tp_listener *l);
int rh_vb_accept(rh_tp_listener *l, int timeout_ms, rh_tp_conn **out, rh_error *err);
void rh_vb_listener_close(rh_tp_listener *l);
int rh_vb_connect(const struct rh_tp_cfg *cfg, const char *host, uint16_t port, rh_tp_conn **out,
                  rh_error *err);
void rh_vb_close(rh_tp_conn *base);

#endif
