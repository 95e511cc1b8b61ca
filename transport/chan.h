/* A framed, flow-controlled channel over one stream socket with a receive
 * thread: the common machinery of the tcp and shm providers.
 *
 * Every frame starts with struct rh_chan_hdr. The channel itself handles
 * SETUP (limits exchange), MSG (control messages, credit-based flow
 * control) and CREDIT; other types go to the provider's on_frame, called
 * on the receive thread, which reads the payload with rh_chan_read().
 *
 * Writers: application threads use rh_chan_send (blocking, bounded by a
 * deadline). The receive thread must never block on the socket (both
 * peers' receive threads blocked writing to each other would deadlock), so
 * it uses rh_chan_reply, which writes what the socket takes now and hands
 * the rest to the channel's writer thread.
 *
 * Failure: the first error that breaks the stream (EOF, a malformed frame,
 * a partially written frame) fails the channel for good: waiters wake,
 * later calls return that error (RH_EPEER, RH_ETIMEDOUT, ...).
 */
#ifndef RH_TP_CHAN_H
#define RH_TP_CHAN_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/uio.h>

#include "transport/provider.h"

struct rh_chan_hdr {
	uint32_t type;
	uint32_t arg;
	uint64_t wr_id;
	uint64_t len; /* payload bytes after the header (meaning per type) */
};

enum {
	RH_CH_SETUP = 1,     /* arg = msg_credits, len = max_msg; no payload */
	RH_CH_MSG = 2,       /* len payload bytes */
	RH_CH_CREDIT = 3,    /* arg = receive buffers freed */
	RH_CH_PROVIDER = 16, /* first type a provider may use */
};

struct rh_chan_msg;
struct rh_chan_out;

struct rh_chan {
	int fd;
	struct rh_tp_conn *conn;
	int (*on_frame)(struct rh_chan *ch, const struct rh_chan_hdr *h, rh_error *err);
	void (*on_fail)(struct rh_chan *ch); /* after the channel failed */
	void *ctx;                           /* the provider's */

	pthread_mutex_t lock; /* guards everything below except the rx state */
	pthread_cond_t cond;
	struct rh_chan_msg *head, *tail;
	uint32_t queued;  /* messages received, not yet taken */
	uint32_t credits; /* messages we may still send */
	uint32_t freed;   /* receive buffers freed, not yet returned */
	int failed;       /* rh_status, 0 while healthy; written under lock, read atomically */
	rh_error fail_err;
	struct rh_chan_out *out_head, *out_tail; /* deferred writes */
	bool stopping;

	pthread_mutex_t send_lock; /* serialises frames on the socket */
	pthread_t rx, writer;
	bool threads;
	int evfd;       /* rh_tp_fd: readable when something may be ready */
	bool evfd_used; /* atomic: set by rh_chan_fd; until then no notifications */

	/* receive-thread state */
	uint8_t *rbuf;
	size_t rpos, rlen;
	int fdq[8];
	int nfdq;
};

int rh_chan_init(struct rh_chan *ch, int fd, struct rh_tp_conn *conn, rh_error *err);
/* Exchange limits with the peer (before start). */
int rh_chan_setup(struct rh_chan *ch, uint64_t deadline, rh_error *err);
int rh_chan_start(struct rh_chan *ch, rh_error *err);
/* Stop the threads, close the socket, drop queued messages. */
void rh_chan_fini(struct rh_chan *ch);

/* Fail the channel (first caller wins) and shut the socket down. */
void rh_chan_fail(struct rh_chan *ch, int code, const char *msg);
/* RH_OK, or the failure (err filled). */
int rh_chan_check(struct rh_chan *ch, rh_error *err);
void rh_chan_notify(struct rh_chan *ch);
/* The eventfd for rh_tp_fd; from this call on every message, completion
 * and failure makes it readable (and it is made readable now, since
 * something may already be ready). */
int rh_chan_fd(struct rh_chan *ch);

/* One frame: hdr then iov. iov is consumed. */
int rh_chan_send(struct rh_chan *ch, const struct rh_chan_hdr *h, struct iovec *iov, int n,
                 const int *fds, int nfds, uint64_t deadline, rh_error *err);
void rh_chan_reply(struct rh_chan *ch, const struct rh_chan_hdr *h, struct iovec *iov, int n);

/* Receive thread only: read payload bytes; take a passed fd (-1 if none). */
int rh_chan_read(struct rh_chan *ch, void *buf, size_t len, rh_error *err);
int rh_chan_take_fd(struct rh_chan *ch);

int rh_chan_msg_send(struct rh_chan *ch, const void *buf, size_t len, int timeout_ms,
                     rh_error *err);
int rh_chan_msg_recv(struct rh_chan *ch, void *buf, size_t cap, size_t *len, int timeout_ms,
                     rh_error *err);

#endif
