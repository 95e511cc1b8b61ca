/* Control messages over SEND/RECV for the verbs provider.
 *
 * Every message is a SEND_WITH_IMM whose immediate data says what it is
 * (enum vb_msg). The receive queue holds user_credits + internal_credits
 * buffers of max_msg bytes each. A sender may only send while it holds a
 * credit for that class, so the peer never runs out of posted buffers
 * (which on RC would stall the QP in RNR retries). Credits come back as
 * counters the receiver RDMA-WRITEs into the sender's memory: no receive
 * buffer is spent on them, so returning credits can never itself block.
 * Provider messages (advertisements) are consumed by the progress thread
 * at once, so their class never waits on the application.
 *
 * All functions run with c->mu held.
 */
#include <arpa/inet.h>
#include <string.h>

#include "transport/verbs/verbs.h"

int rh_vb_post_recv(struct vb_conn *c, uint32_t buf)
{
	struct ibv_sge sge = {
	        .addr = (uintptr_t)(c->rbuf + (size_t)buf * c->rslot),
	        .length = (uint32_t)c->rslot,
	        .lkey = c->rbuf_mr->lkey,
	};
	struct ibv_recv_wr wr = {
	        .wr_id = VB_WRID(VB_WR_RECV, buf, 0), .sg_list = &sge, .num_sge = 1};
	struct ibv_recv_wr *bad;
	return ibv_post_recv(c->qp, &wr, &bad);
}

void rh_vb_read_ctrs(struct vb_conn *c)
{
	struct vb_ctrs v;
	__atomic_load(&c->ctrs_in->user_posted, &v.user_posted, __ATOMIC_ACQUIRE);
	__atomic_load(&c->ctrs_in->internal_posted, &v.internal_posted, __ATOMIC_ACQUIRE);
	__atomic_load(&c->ctrs_in->acked, &v.acked, __ATOMIC_ACQUIRE);
	__atomic_load(&c->ctrs_in->check, &v.check, __ATOMIC_ACQUIRE);
	if (v.check != VB_CTRS_CHECK(&v))
		return; /* caught mid-write (or never written): keep the last copy */
	if (v.user_posted > c->peer.user_posted)
		c->peer.user_posted = v.user_posted;
	if (v.internal_posted > c->peer.internal_posted)
		c->peer.internal_posted = v.internal_posted;
	if (v.acked > c->peer.acked)
		c->peer.acked = v.acked;
}

/* Tell the peer how many buffers we have posted and what we processed.
 * Inline, so the values are copied at post time. If the send queue is
 * full the report stays due and the next drain sends it. */
void rh_vb_report(struct vb_conn *c)
{
	c->report_due = true;
	if (c->dead || c->sq_depth - (c->sq_posted - c->sq_done) < 1)
		return;
	struct vb_ctrs *out = &c->ctrs_in[1];
	*out = (struct vb_ctrs){c->user_posted, c->internal_posted, c->acked, 0};
	out->check = VB_CTRS_CHECK(out);
	struct ibv_sge sge = {
	        .addr = (uintptr_t)out, .length = sizeof *out, .lkey = c->ctrs_mr->lkey};
	struct ibv_send_wr wr = {
	        .wr_id = VB_WRID(VB_WR_CTRS, 0, 0),
	        .sg_list = &sge,
	        .num_sge = 1,
	        .opcode = IBV_WR_RDMA_WRITE,
	        .send_flags = c->max_inline >= sizeof *out ? IBV_SEND_INLINE : 0,
	        .wr.rdma = {.remote_addr = c->peer_ctrs_addr, .rkey = c->peer_ctrs_rkey},
	};
	if (rh_vb_post(c, &wr, NULL) == RH_OK) {
		c->report_due = false;
		c->user_reported = c->user_posted;
	}
}

static void on_advert(struct vb_conn *c, uint32_t kind, const uint8_t *p, uint32_t len)
{
	struct vb_advert a;
	/* Not tied to c->authed: the listener may advertise right after its
	 * verdict, before the connector's handshake call has returned. A
	 * connection whose handshake fails is closed with its table. */
	if (len != sizeof a) {
		rh_vb_die(c, RH_EPEER, "malformed advertisement from the peer");
		return;
	}
	memcpy(&a, p, sizeof a);
	rh_error e = {0};
	if (kind == VB_MSG_ADVERT) {
		struct rh_tp_range r = {.addr = a.addr,
		                        .len = a.len,
		                        .flags = RH_TP_REMOTE,
		                        .fd = -1,
		                        .key = a.rkey};
		if (rh_tp_ranges_add(&c->base.peer, &r, &e) != RH_OK)
			rh_log(RH_LOG_WARN, "transport", "verbs: peer advertisement refused: %s",
			       e.msg);
	} else {
		rh_tp_ranges_del(&c->base.peer, a.addr, a.len, NULL, &e);
	}
	c->acked++;
}

void rh_vb_on_recv(struct vb_conn *c, const struct ibv_wc *wc)
{
	uint32_t buf = VB_WRID_IDX(wc->wr_id);
	if (wc->status != IBV_WC_SUCCESS) {
		rh_vb_die(c, RH_EPEER, "receive failed: %s", ibv_wc_status_str(wc->status));
		return;
	}
	uint32_t kind = (wc->wc_flags & IBV_WC_WITH_IMM) ? ntohl(wc->imm_data) : 0;
	switch (kind) {
	case VB_MSG_USER:
	case VB_MSG_AUTH:
		c->ready[(c->ready_head + c->ready_n) % c->nrbuf] =
		        (struct vb_rmsg){buf, wc->byte_len, kind};
		c->ready_n++;
		rh_vb_app_notify(c);
		break;
	case VB_MSG_ADVERT:
	case VB_MSG_WITHDRAW:
		on_advert(c, kind, c->rbuf + (size_t)buf * c->rslot, wc->byte_len);
		if (rh_vb_post_recv(c, buf) != 0)
			rh_vb_die(c, RH_EIO, "ibv_post_recv failed");
		c->internal_posted++;
		c->report_due = true;
		break;
	default:
		rh_vb_die(c, RH_EPEER, "peer sent an unknown message kind %u", kind);
	}
}

struct send_need {
	bool internal;
	bool slot;
	bool op;
};

static bool can_send(struct vb_conn *c, const void *arg)
{
	const struct send_need *n = arg;
	rh_vb_read_ctrs(c);
	bool credit = n->internal ? c->peer.internal_posted > c->internal_sent
	                          : c->peer.user_posted > c->user_sent;
	return credit && c->sq_depth - (c->sq_posted - c->sq_done) >= 1 &&
	       (!n->slot || c->nsfree > 0) && (!n->op || c->nopfree > 0);
}

static bool op_finished(struct vb_conn *c, const void *arg)
{
	return c->ops[*(const uint32_t *)arg].finished;
}

int rh_vb_send_msg(struct vb_conn *c, uint32_t kind, const void *buf, size_t len,
                   uint64_t deadline_ns, rh_error *err)
{
	if (c->dead)
		return rh_vb_peer_error(c, err);
	struct send_need need = {
	        .internal = kind == VB_MSG_ADVERT || kind == VB_MSG_WITHDRAW,
	        .slot = len > c->max_inline && len <= c->sslot,
	        .op = len > c->max_inline && len > c->sslot,
	};
	int rc = rh_vb_wait_for(c, can_send, &need, true, deadline_ns);
	if (rc == RH_ETIMEDOUT)
		return rh_err_set(err, rc,
		                  "verbs: peer granted no receive buffer within the timeout");
	if (rc)
		return rh_vb_peer_error(c, err);

	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = (uint32_t)len};
	struct ibv_send_wr wr = {
	        .sg_list = &sge,
	        .num_sge = len ? 1 : 0,
	        .opcode = IBV_WR_SEND_WITH_IMM,
	        .imm_data = htonl(kind),
	};
	struct ibv_mr *mr = NULL;
	uint32_t op = 0;
	if (!need.slot && !need.op) {
		wr.wr_id = VB_WRID(VB_WR_SEND, VB_SEND_SLOTS, 0);
		wr.send_flags = IBV_SEND_INLINE;
	} else if (need.slot) {
		uint32_t s = c->sfree[--c->nsfree];
		memcpy(c->sbuf + s * c->sslot, buf, len);
		sge.addr = (uintptr_t)(c->sbuf + s * c->sslot);
		sge.lkey = c->sbuf_mr->lkey;
		wr.wr_id = VB_WRID(VB_WR_SEND, s, 0);
		wr.send_flags = IBV_SEND_SIGNALED;
	} else {
		/* Too big for a copy slot: send from the caller's buffer,
		 * registered for the duration of the call. */
		mr = ibv_reg_mr(c->pd, (void *)buf, len, 0);
		if (!mr)
			return rh_err_errno(err, RH_EIO, "verbs: ibv_reg_mr for a %zu-byte message",
			                    len);
		op = c->opfree[--c->nopfree];
		c->ops[op] = (struct vb_op){
		        .busy = true, .internal = true, .pending = 1, .gen = c->ops[op].gen + 1};
		sge.lkey = mr->lkey;
		wr.wr_id = VB_WRID(VB_WR_OP, op, 0);
		wr.send_flags = IBV_SEND_SIGNALED;
	}
	rc = rh_vb_post(c, &wr, err);
	if (rc == RH_OK) {
		if (need.internal)
			c->internal_sent++;
		else
			c->user_sent++;
	}
	if (mr) {
		if (rc == RH_OK) {
			rc = rh_vb_wait_for(c, op_finished, &op, false, deadline_ns);
			if (rc == RH_OK && c->ops[op].status != RH_OK)
				rc = rh_err_set(err, c->ops[op].status,
				                "verbs: message send failed");
			else if (rc == RH_ETIMEDOUT)
				rh_err_set(err, rc, "verbs: message send did not complete in time");
			else if (rc)
				rh_vb_peer_error(c, err);
		}
		/* On timeout the QP may still read the buffer: end the
		 * connection before giving the memory back. */
		if (rc != RH_OK && !c->ops[op].finished)
			rh_vb_die(c, RH_ETIMEDOUT, "large message send timed out");
		c->ops[op].busy = false;
		c->opfree[c->nopfree++] = op;
		ibv_dereg_mr(mr);
	}
	return rc;
}

static bool have_msg(struct vb_conn *c, const void *arg)
{
	return c->ready_n > 0;
}

int rh_vb_recv_msg(struct vb_conn *c, uint32_t kind, void *buf, size_t cap, size_t *len,
                   uint64_t deadline_ns, rh_error *err)
{
	int rc = rh_vb_wait_for(c, have_msg, NULL, false, deadline_ns);
	if (rc == RH_ETIMEDOUT)
		return rh_err_set(err, rc, "verbs: no message within the timeout");
	if (rc)
		return rh_vb_peer_error(c, err);
	struct vb_rmsg m = c->ready[c->ready_head];
	if (m.kind != kind) {
		rh_vb_die(c, RH_EPEER, "peer sent a message out of protocol order");
		return rh_vb_peer_error(c, err);
	}
	*len = m.len;
	if (m.len > cap)
		return rh_err_set(err, RH_EINVAL,
		                  "verbs: message of %u bytes exceeds buffer of %zu", m.len, cap);
	memcpy(buf, c->rbuf + (size_t)m.buf * c->rslot, m.len);
	c->ready_head = (c->ready_head + 1) % c->nrbuf;
	c->ready_n--;
	if (rh_vb_post_recv(c, m.buf) != 0) {
		rh_vb_die(c, RH_EIO, "ibv_post_recv failed");
		return rh_vb_peer_error(c, err);
	}
	c->user_posted++;
	uint64_t batch = c->user_credits / 4 ? c->user_credits / 4 : 1;
	if (c->user_posted - c->user_reported >= batch)
		rh_vb_report(c);
	rh_vb_app_maybe_clear(c);
	return RH_OK;
}

int rh_vb_send(rh_tp_conn *base, const void *buf, size_t len, int timeout_ms, rh_error *err)
{
	struct vb_conn *c = (struct vb_conn *)base;
	pthread_mutex_lock(&c->mu);
	int rc = rh_vb_send_msg(c, VB_MSG_USER, buf, len, rh_vb_deadline(timeout_ms), err);
	pthread_mutex_unlock(&c->mu);
	return rc;
}

int rh_vb_recv(rh_tp_conn *base, void *buf, size_t cap, size_t *len, int timeout_ms, rh_error *err)
{
	struct vb_conn *c = (struct vb_conn *)base;
	pthread_mutex_lock(&c->mu);
	int rc = rh_vb_recv_msg(c, VB_MSG_USER, buf, cap, len, rh_vb_deadline(timeout_ms), err);
	pthread_mutex_unlock(&c->mu);
	return rc;
}
