/* Registration, one-sided operations and completions for the verbs
 * provider, and its ops table. The core has already checked every
 * segment against the range tables; the NIC checks the rkeys again. */
#include <string.h>
#include <unistd.h>

#include "transport/verbs/verbs.h"

static bool acked(struct vb_conn *c, const void *arg)
{
	rh_vb_read_ctrs(c);
	return c->peer.acked >= *(const uint64_t *)arg;
}

/* Send an advertisement or withdrawal and wait until the peer processed
 * it: after that its range table agrees with ours, and (RC ordering) every
 * access it posted before processing it has been executed. */
static int advertise(struct vb_conn *c, uint32_t kind, const struct rh_tp_range *r, uint32_t rkey,
                     rh_error *err)
{
	struct vb_advert a = {.addr = r->addr, .len = r->len, .rkey = rkey};
	uint64_t deadline = rh_vb_deadline((int)c->base.cfg.timeout_ms);
	int rc = rh_vb_send_msg(c, kind, &a, sizeof a, deadline, err);
	if (rc)
		return rc;
	uint64_t want = ++c->adverts_sent;
	rc = rh_vb_wait_for(c, acked, &want, true, deadline);
	if (rc == RH_ETIMEDOUT)
		return rh_err_set(err, rc, "verbs: peer did not acknowledge the range in time");
	return rc ? rh_vb_peer_error(c, err) : RH_OK;
}

static int vb_reg(rh_tp_conn *base, struct rh_tp_range *r, rh_error *err)
{
	struct vb_conn *c = (struct vb_conn *)base;
	int access = IBV_ACCESS_LOCAL_WRITE;
	if (r->flags & RH_TP_REMOTE)
		access |=
		        IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	struct ibv_mr *mr = ibv_reg_mr(c->pd, (void *)(uintptr_t)r->addr, r->len, access);
	if (!mr)
		return rh_err_errno(err, RH_EIO, "verbs: ibv_reg_mr(%zu bytes)", (size_t)r->len);
	r->key = mr->lkey;
	r->map = mr;
	if (!(r->flags & RH_TP_REMOTE))
		return RH_OK;
	pthread_mutex_lock(&c->mu);
	int rc = advertise(c, VB_MSG_ADVERT, r, mr->rkey, err);
	pthread_mutex_unlock(&c->mu);
	if (rc) {
		ibv_dereg_mr(mr);
		r->map = NULL;
	}
	return rc;
}

static int vb_dereg(rh_tp_conn *base, const struct rh_tp_range *r, rh_error *err)
{
	struct vb_conn *c = (struct vb_conn *)base;
	int rc = RH_OK;
	if (r->flags & RH_TP_REMOTE) {
		pthread_mutex_lock(&c->mu);
		if (!c->dead)
			rc = advertise(c, VB_MSG_WITHDRAW, r, 0, err);
		pthread_mutex_unlock(&c->mu);
	}
	/* Released even when the peer did not answer: it can no longer reach
	 * the memory (the NIC refuses the stale rkey). */
	if (r->map && ibv_dereg_mr(r->map))
		return rh_err_errno(err, RH_EIO, "verbs: ibv_dereg_mr");
	return rc;
}

static uint32_t take_op(struct vb_conn *c, uint64_t wr_id, uint64_t *old)
{
	uint32_t i = c->opfree[--c->nopfree];
	c->ops[i] =
	        (struct vb_op){.wr_id = wr_id, .old = old, .busy = true, .gen = c->ops[i].gen + 1};
	return i;
}

static bool op_slot(struct vb_conn *c, const void *arg)
{
	return c->nopfree > 0;
}

/* Start an op: wait (bounded) for a free slot, fail fast on a dead link. */
static int begin(struct vb_conn *c, uint64_t deadline, rh_error *err)
{
	if (c->dead)
		return rh_vb_peer_error(c, err);
	if (c->nopfree > 0)
		return RH_OK;
	int rc = rh_vb_wait_for(c, op_slot, NULL, false, deadline);
	if (rc == RH_ETIMEDOUT)
		return rh_err_set(err, rc, "verbs: too many operations in flight");
	return rc ? rh_vb_peer_error(c, err) : RH_OK;
}

/* Post the WRs built in c->wrs[0..n) as part of op `i`; the last one is
 * signalled and counts towards the op's completion. */
static int post_chunk(struct vb_conn *c, uint32_t i, uint32_t n, rh_error *err)
{
	for (uint32_t k = 0; k < n; k++) {
		c->wrs[k].wr_id = VB_WRID(VB_WR_OP, i, 0);
		c->wrs[k].next = k + 1 < n ? &c->wrs[k + 1] : NULL;
		c->wrs[k].send_flags = 0;
	}
	c->wrs[n - 1].send_flags = IBV_SEND_SIGNALED;
	c->ops[i].pending++;
	int rc = rh_vb_post(c, c->wrs, err);
	if (rc)
		c->ops[i].pending--;
	return rc;
}

/* READ/WRITE: consecutive segments whose remote ranges touch (same rkey)
 * share one WR with up to max_sge local SGEs; each WR covers one remote
 * span of at most VB_WR_MAX bytes (longer segments are split). The WRs are posted as chains that fit the send queue; only each
 * chain's last WR is signalled, so a page batch costs one completion. */
static int vb_rw(rh_tp_conn *base, enum rh_tp_opcode opc, const struct rh_tp_seg *seg, size_t n,
                 uint64_t wr_id, rh_error *err)
{
	struct vb_conn *c = (struct vb_conn *)base;
	uint32_t lim = opc == RH_TP_OP_READ ? c->max_sge_rd : c->max_sge;
	enum ibv_wr_opcode wop = opc == RH_TP_OP_READ ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
	uint64_t deadline = rh_vb_deadline((int)c->base.cfg.timeout_ms);
	pthread_mutex_lock(&c->mu);
	int rc = begin(c, deadline, err);
	if (rc) {
		pthread_mutex_unlock(&c->mu);
		return rc;
	}
	uint32_t op = take_op(c, wr_id, NULL);
	uint32_t gen = c->ops[op].gen;
	/* Keep the op alive while chunks are posted: a chunk that completes
	 * before the next is posted must not end it. */
	c->ops[op].pending++;
	size_t s = 0;
	uint32_t off = 0; /* bytes of seg[s] already in posted WRs */
	while (s < n && rc == RH_OK) {
		uint32_t room = c->sq_depth - (c->sq_posted - c->sq_done);
		if (room == 0) {
			rc = rh_vb_sq_reserve(c, 1, deadline, err);
			continue;
		}
		uint32_t nw = 0;
		while (s < n && nw < room) {
			struct ibv_sge *g = &c->sges[(size_t)nw * c->max_sge];
			uint64_t start = seg[s].remote + off, rnext = start;
			uint32_t rkey = (uint32_t)seg[s].rkey, total = 0, ns = 0;
			while (s < n && ns < lim && total < VB_WR_MAX &&
			       seg[s].remote + off == rnext && (uint32_t)seg[s].rkey == rkey) {
				uint32_t take = seg[s].len - off;
				take = take < VB_WR_MAX - total ? take : VB_WR_MAX - total;
				g[ns++] = (struct ibv_sge){(uintptr_t)seg[s].local + off, take,
				                           (uint32_t)seg[s].lkey};
				rnext += take;
				total += take;
				off += take;
				if (off == seg[s].len)
					s++, off = 0;
			}
			c->wrs[nw++] = (struct ibv_send_wr){
			        .sg_list = g,
			        .num_sge = (int)ns,
			        .opcode = wop,
			        .wr.rdma = {.remote_addr = start, .rkey = rkey},
			};
		}
		rc = post_chunk(c, op, nw, err);
	}
	struct vb_op *o = &c->ops[op];
	if (!o->busy || o->gen != gen) {
		rc = RH_OK; /* the link died meanwhile: its completion says so */
	} else if (rc != RH_OK && o->pending == 1) {
		/* Nothing of it is in flight: take it back, no completion. */
		o->busy = false;
		c->opfree[c->nopfree++] = op;
	} else {
		if (rc != RH_OK && o->status == RH_OK)
			o->status = rc;
		rc = RH_OK; /* part of it is in flight: its completion reports */
		if (--o->pending == 0)
			rh_vb_finish_op(c, op);
	}
	pthread_mutex_unlock(&c->mu);
	return rc;
}

static int vb_atomic(rh_tp_conn *base, enum rh_tp_opcode opc, const struct rh_tp_seg *seg,
                     uint64_t a, uint64_t b, uint64_t *old, uint64_t wr_id, rh_error *err)
{
	struct vb_conn *c = (struct vb_conn *)base;
	uint64_t deadline = rh_vb_deadline((int)c->base.cfg.timeout_ms);
	pthread_mutex_lock(&c->mu);
	int rc = begin(c, deadline, err);
	if (rc == RH_OK)
		rc = rh_vb_sq_reserve(c, 1, deadline, err);
	if (rc) {
		pthread_mutex_unlock(&c->mu);
		return rc;
	}
	uint32_t op = take_op(c, wr_id, opc == RH_TP_OP_WRITE8 ? NULL : old);
	struct ibv_sge *g = c->sges;
	struct ibv_send_wr *w = c->wrs;
	*w = (struct ibv_send_wr){.sg_list = g, .num_sge = 1};
	if (opc == RH_TP_OP_WRITE8) {
		/* One aligned 8-byte WRITE; inline, so `a` is copied now. */
		c->atomic_res[op] = a;
		*g = (struct ibv_sge){(uintptr_t)&c->atomic_res[op], 8, c->atomic_mr->lkey};
		w->opcode = IBV_WR_RDMA_WRITE;
		w->wr.rdma.remote_addr = seg->remote;
		w->wr.rdma.rkey = (uint32_t)seg->rkey;
		w->send_flags = c->max_inline >= 8 ? IBV_SEND_INLINE : 0;
	} else {
		/* The NIC writes the prior value into registered memory: our
		 * per-op scratch slot, copied to *old on completion. */
		*g = (struct ibv_sge){(uintptr_t)&c->atomic_res[op], 8, c->atomic_mr->lkey};
		w->opcode = opc == RH_TP_OP_CAS ? IBV_WR_ATOMIC_CMP_AND_SWP
		                                : IBV_WR_ATOMIC_FETCH_AND_ADD;
		w->wr.atomic.remote_addr = seg->remote;
		w->wr.atomic.rkey = (uint32_t)seg->rkey;
		w->wr.atomic.compare_add = a;
		w->wr.atomic.swap = b;
	}
	w->wr_id = VB_WRID(VB_WR_OP, op, 0);
	w->send_flags |= IBV_SEND_SIGNALED;
	c->ops[op].pending = 1;
	rc = rh_vb_post(c, w, err);
	if (rc) {
		c->ops[op].busy = false;
		c->opfree[c->nopfree++] = op;
	}
	pthread_mutex_unlock(&c->mu);
	return rc;
}

static bool pop_done(struct vb_conn *c, uint64_t wr_id, int *status)
{
	for (size_t k = 0; k < c->ndone; k++) {
		size_t i = (c->done_head + k) % c->capdone;
		if (c->done[i].wr_id != wr_id)
			continue;
		*status = c->done[i].status;
		/* Close the gap, keeping the order of the rest. */
		for (size_t j = k; j > 0; j--)
			c->done[(c->done_head + j) % c->capdone] =
			        c->done[(c->done_head + j - 1) % c->capdone];
		c->done_head = (c->done_head + 1) % c->capdone;
		c->ndone--;
		return true;
	}
	return false;
}

static bool is_done(struct vb_conn *c, const void *arg)
{
	uint64_t w = *(const uint64_t *)arg;
	for (size_t k = 0; k < c->ndone; k++)
		if (c->done[(c->done_head + k) % c->capdone].wr_id == w)
			return true;
	return false;
}

static bool in_flight(struct vb_conn *c, uint64_t wr_id)
{
	for (uint32_t i = 0; i < c->nops; i++)
		if (c->ops[i].busy && !c->ops[i].internal && c->ops[i].wr_id == wr_id)
			return true;
	return false;
}

static int vb_poll(rh_tp_conn *base, rh_tp_completion *out, int max, rh_error *err)
{
	struct vb_conn *c = (struct vb_conn *)base;
	pthread_mutex_lock(&c->mu);
	rh_vb_drain(c);
	int n = 0;
	while (n < max && c->ndone > 0) {
		out[n++] = (rh_tp_completion){c->done[c->done_head].wr_id,
		                              c->done[c->done_head].status};
		c->done_head = (c->done_head + 1) % c->capdone;
		c->ndone--;
	}
	if (n == 0 && c->dead)
		n = rh_vb_peer_error(c, err) ? -1 : 0;
	rh_vb_app_maybe_clear(c);
	pthread_mutex_unlock(&c->mu);
	return n;
}

static int vb_wait(rh_tp_conn *base, uint64_t wr_id, int timeout_ms, rh_error *err)
{
	struct vb_conn *c = (struct vb_conn *)base;
	int status = RH_OK;
	pthread_mutex_lock(&c->mu);
	rh_vb_drain(c);
	if (!is_done(c, &wr_id) && !in_flight(c, wr_id)) {
		pthread_mutex_unlock(&c->mu);
		return rh_err_set(err, RH_EINVAL, "verbs: no operation with wr_id %llu is pending",
		                  (unsigned long long)wr_id);
	}
	int rc = rh_vb_wait_for(c, is_done, &wr_id, false, rh_vb_deadline(timeout_ms));
	if (rc == RH_OK || is_done(c, &wr_id)) {
		pop_done(c, wr_id, &status);
		rc = status ? rh_err_set(err, status, "verbs: operation %llu failed%s%s",
		                         (unsigned long long)wr_id, c->dead ? ": " : "", c->why)
		            : RH_OK;
	} else if (rc == RH_ETIMEDOUT) {
		rh_err_set(err, rc, "verbs: operation %llu not complete after %d ms",
		           (unsigned long long)wr_id, timeout_ms);
	} else {
		rh_vb_peer_error(c, err);
	}
	rh_vb_app_maybe_clear(c);
	pthread_mutex_unlock(&c->mu);
	return rc;
}

static int vb_fd(rh_tp_conn *base)
{
	struct vb_conn *c = (struct vb_conn *)base;
	pthread_mutex_lock(&c->mu);
	if (!c->appfd_used) {
		c->appfd_used = true;
		if (c->ndone > 0 || c->ready_n > 0 || c->dead)
			rh_vb_app_notify(c);
	}
	pthread_mutex_unlock(&c->mu);
	return c->appfd;
}

const struct rh_tp_provider rh_tp_verbs = {
        .name = "verbs",
        .listen = rh_vb_listen,
        .listener_port = rh_vb_listener_port,
        .accept = rh_vb_accept,
        .listener_close = rh_vb_listener_close,
        .connect = rh_vb_connect,
        .close = rh_vb_close,
        .reg = vb_reg,
        .dereg = vb_dereg,
        .rw = vb_rw,
        .atomic = vb_atomic,
        .poll = vb_poll,
        .wait = vb_wait,
        .send = rh_vb_send,
        .recv = rh_vb_recv,
        .fd = vb_fd,
};
