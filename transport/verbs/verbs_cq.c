/* Completion handling for the verbs provider: draining the CQ, the
 * progress thread, send-queue accounting and the wait loop every blocking
 * call uses. All functions here run with c->mu held unless noted. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "transport/verbs/verbs.h"

uint64_t rh_vb_deadline(int timeout_ms)
{
	return rh_now_ns() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000ull;
}

/* The eventfd costs two system calls per completion, so it is only kept
 * up to date once the application asked for it (rh_tp_fd). */
void rh_vb_app_notify(struct vb_conn *c)
{
	if (c->appfd_used && !c->appfd_set) {
		uint64_t one = 1;
		if (write(c->appfd, &one, sizeof one) == sizeof one)
			c->appfd_set = true;
	}
}

/* Clear rh_tp_fd's readiness once nothing is left for the application. */
void rh_vb_app_maybe_clear(struct vb_conn *c)
{
	if (c->appfd_set && c->ndone == 0 && c->ready_n == 0 && !c->dead) {
		uint64_t v;
		if (read(c->appfd, &v, sizeof v) == sizeof v || errno == EAGAIN)
			c->appfd_set = false;
	}
}

static int wc_status(enum ibv_wc_status s)
{
	switch (s) {
	case IBV_WC_SUCCESS:
		return RH_OK;
	case IBV_WC_LOC_PROT_ERR:
		return RH_ERANGE;
	case IBV_WC_REM_ACCESS_ERR:
		/* The core checked the range against the peer's
		 * advertisements and withdrawals are acknowledged before the
		 * MR goes: a refusal means the peer lost its memory (it died,
		 * its MRs went first) or misbehaves. */
		return RH_EPEER;
	default:
		return RH_EPEER;
	}
}

static void push_done(struct vb_conn *c, uint64_t wr_id, int status)
{
	if (c->ndone == c->capdone) {
		size_t cap = c->capdone ? 2 * c->capdone : 64;
		struct vb_done *v = malloc(cap * sizeof *v);
		if (!v)
			rh_panic("verbs: out of memory for completions");
		for (size_t i = 0; i < c->ndone; i++)
			v[i] = c->done[(c->done_head + i) % c->capdone];
		free(c->done);
		c->done = v;
		c->capdone = cap;
		c->done_head = 0;
	}
	c->done[(c->done_head + c->ndone) % c->capdone] = (struct vb_done){wr_id, status};
	c->ndone++;
	rh_vb_app_notify(c);
}

void rh_vb_finish_op(struct vb_conn *c, uint32_t idx)
{
	struct vb_op *op = &c->ops[idx];
	if (op->old && op->status == RH_OK)
		*op->old = c->atomic_res[idx];
	if (op->internal) {
		op->finished = true; /* its owner frees the slot */
		return;
	}
	push_done(c, op->wr_id, op->status);
	op->busy = false;
	c->opfree[c->nopfree++] = idx;
}

static void on_send_wc(struct vb_conn *c, const struct ibv_wc *wc)
{
	unsigned kind = VB_WRID_KIND(wc->wr_id);
	uint32_t idx = VB_WRID_IDX(wc->wr_id);
	/* Every WR of ours that completes, signalled or flushed, releases the
	 * send queue up to its own sequence number. */
	if ((int32_t)(VB_WRID_SEQ(wc->wr_id) - c->sq_done) > 0)
		c->sq_done = VB_WRID_SEQ(wc->wr_id);
	if (kind == VB_WR_SEND && idx < VB_SEND_SLOTS)
		c->sfree[c->nsfree++] = idx;
	struct vb_op *op = kind == VB_WR_OP && idx < c->nops ? &c->ops[idx] : NULL;
	if (op && op->busy && !op->finished) {
		if (wc->status != IBV_WC_SUCCESS) {
			if (op->status == RH_OK)
				op->status = wc_status(wc->status);
		} else if (op->pending > 0 && --op->pending == 0) {
			rh_vb_finish_op(c, idx);
		}
	}
	/* An error moves the QP to the error state: every later WR flushes. */
	if (wc->status != IBV_WC_SUCCESS)
		rh_vb_die(c, RH_EPEER, "work request failed: %s", ibv_wc_status_str(wc->status));
}

void rh_vb_drain(struct vb_conn *c)
{
	struct ibv_wc wc[32];
	int n;
	bool any = false;
	while ((n = ibv_poll_cq(c->cq, 32, wc)) > 0) {
		any = true;
		for (int i = 0; i < n; i++) {
			if (VB_WRID_KIND(wc[i].wr_id) == VB_WR_RECV)
				rh_vb_on_recv(c, &wc[i]);
			else
				on_send_wc(c, &wc[i]);
		}
	}
	if (n < 0)
		rh_vb_die(c, RH_EIO, "ibv_poll_cq failed");
	if (c->report_due)
		rh_vb_report(c);
	if (any)
		pthread_cond_broadcast(&c->cv);
}

/* A dead connection completes everything still pending with RH_EPEER, so
 * no waiter depends on flush completions arriving. */
void rh_vb_die(struct vb_conn *c, int code, const char *fmt, ...)
{
	if (c->dead)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->why, sizeof c->why, fmt, ap);
	va_end(ap);
	c->dead = code;
	rh_log(RH_LOG_INFO, "transport", "verbs: connection ended: %s", c->why);
	if (c->qp) {
		struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
		ibv_modify_qp(c->qp, &a, IBV_QP_STATE);
	}
	for (uint32_t i = 0; i < c->nops; i++) {
		struct vb_op *op = &c->ops[i];
		if (op->busy && !op->finished) {
			if (op->status == RH_OK)
				op->status = RH_EPEER;
			op->pending = 0;
			op->old = NULL;
			rh_vb_finish_op(c, i);
		}
	}
	rh_vb_app_notify(c);
	pthread_cond_broadcast(&c->cv);
}

int rh_vb_peer_error(struct vb_conn *c, rh_error *err)
{
	return rh_err_set(err, c->dead, "verbs: connection is down: %s", c->why);
}

static void on_cm_event(struct vb_conn *c)
{
	struct rdma_cm_event *ev;
	while (rdma_get_cm_event(c->ech, &ev) == 0) {
		enum rdma_cm_event_type t = ev->event;
		rdma_ack_cm_event(ev);
		switch (t) {
		case RDMA_CM_EVENT_DISCONNECTED:
		case RDMA_CM_EVENT_DEVICE_REMOVAL:
		case RDMA_CM_EVENT_TIMEWAIT_EXIT:
			rh_vb_die(c, RH_EPEER, "peer disconnected (%s)", rdma_event_str(t));
			break;
		default:
			break;
		}
	}
}

void *rh_vb_progress_main(void *arg)
{
	struct vb_conn *c = arg;
	int tmo = -1;
	for (;;) {
		struct epoll_event ev[4];
		int n = epoll_wait(c->epfd, ev, 4, tmo);
		pthread_mutex_lock(&c->mu);
		if (c->stopping) {
			pthread_mutex_unlock(&c->mu);
			return NULL;
		}
		for (int i = 0; i < n; i++) {
			if (ev[i].data.fd == c->cch->fd) {
				struct ibv_cq *cq;
				void *ctx;
				while (ibv_get_cq_event(c->cch, &cq, &ctx) == 0)
					ibv_ack_cq_events(cq, 1);
				c->armed = false;
			} else if (ev[i].data.fd == c->ech->fd) {
				on_cm_event(c);
			}
		}
		/* Arm first, then drain: nothing slips between. */
		if (!c->armed && c->spinning == 0 &&
		    rh_now_ns() - c->last_spin_ns >= VB_REARM_MS * 1000000ull) {
			ibv_req_notify_cq(c->cq, 0);
			c->armed = true;
		}
		rh_vb_drain(c);
		tmo = c->armed ? -1 : VB_REARM_MS;
		pthread_mutex_unlock(&c->mu);
	}
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ volatile("pause");
#endif
}

/* The CQ event stays off while anyone spins; the progress thread turns it
 * back on once nobody has spun for a tick (VB_REARM_MS). Re-arming at
 * every spin end would cost one event and one thread wake-up per op. */
static void spin_leave(struct vb_conn *c)
{
	c->spinning--;
	c->last_spin_ns = rh_now_ns();
}

/* Wait until ready(c, arg) or the deadline: busy-poll the CQ first, then
 * sleep on the condition variable that the progress thread signals. While
 * someone spins, completions raise no events (waking the progress thread
 * for each would cost more than the operation). Sleeps are sliced when
 * the condition is memory the peer writes one-sided (credits, acks),
 * which raises no event at all. */
int rh_vb_wait_for(struct vb_conn *c, vb_ready_fn ready, const void *arg, bool polls_memory,
                   uint64_t deadline_ns)
{
	uint64_t spin_end = rh_now_ns() + VB_SPIN_NS, now = 0;
	bool spinning = true;
	int rc;
	unsigned iter = 0;
	c->spinning++;
	for (;;) {
		rh_vb_drain(c);
		if (ready(c, arg)) {
			rc = RH_OK;
			break;
		}
		/* Before waiting on anything, hand back the credits of
		 * messages we consumed: the peer may be blocked on them while
		 * we wait for it (both sending, say), and batching would
		 * otherwise hold them back forever. */
		if (iter == 0 && c->user_posted != c->user_reported)
			rh_vb_report(c);
		if (c->dead) {
			rc = c->dead;
			break;
		}
		/* Reading the clock can cost more than polling the CQ (it is
		 * a system call on hosts without a usable TSC): not every spin. */
		if (!spinning || iter++ % 16 == 0)
			now = rh_now_ns();
		if (now >= deadline_ns) {
			rc = RH_ETIMEDOUT;
			break;
		}
		if (spinning && now < spin_end) {
			pthread_mutex_unlock(&c->mu);
			for (int i = 0; i < 64; i++)
				cpu_relax();
			pthread_mutex_lock(&c->mu);
			continue;
		}
		if (spinning) {
			/* Going to sleep: whoever wakes us needs the CQ event. */
			spinning = false;
			spin_leave(c);
			if (c->spinning == 0 && !c->armed) {
				ibv_req_notify_cq(c->cq, 0);
				c->armed = true;
			}
			continue; /* drain once more: arming raised nothing */
		}
		uint64_t left = deadline_ns - now;
		if (polls_memory && left > VB_SLICE_NS)
			left = VB_SLICE_NS;
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t abs = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + left;
		ts.tv_sec = (time_t)(abs / 1000000000ull);
		ts.tv_nsec = (long)(abs % 1000000000ull);
		pthread_cond_timedwait(&c->cv, &c->mu, &ts);
	}
	if (spinning)
		spin_leave(c);
	return rc;
}

static bool sq_room(struct vb_conn *c, const void *arg)
{
	uint32_t n = *(const uint32_t *)arg;
	return c->sq_depth - (c->sq_posted - c->sq_done) >= n;
}

int rh_vb_sq_reserve(struct vb_conn *c, uint32_t n, uint64_t deadline_ns, rh_error *err)
{
	if (sq_room(c, &n))
		return RH_OK;
	int rc = rh_vb_wait_for(c, sq_room, &n, false, deadline_ns);
	if (rc == RH_ETIMEDOUT)
		return rh_err_set(err, rc, "verbs: send queue still full after the timeout");
	if (rc)
		return rh_vb_peer_error(c, err);
	return RH_OK;
}

/* Post a chain whose room was reserved. Each WR gets the sequence number
 * it occupies, so its completion releases the queue up to there. A long
 * run of unsignalled WRs gets one signalled, or the queue never drains. */
int rh_vb_post(struct vb_conn *c, struct ibv_send_wr *first, rh_error *err)
{
	for (struct ibv_send_wr *w = first; w; w = w->next) {
		c->sq_posted++;
		w->wr_id = (w->wr_id & ~0xffffffffull) | c->sq_posted;
		if (w->send_flags & IBV_SEND_SIGNALED) {
			c->unsignalled = 0;
		} else if (++c->unsignalled >= c->sq_depth / 2 &&
		           VB_WRID_KIND(w->wr_id) != VB_WR_OP) {
			/* Ops end with a signalled WR in the same chain; counting
			 * an extra one would end them early. */
			w->send_flags |= IBV_SEND_SIGNALED;
			c->unsignalled = 0;
		}
	}
	struct ibv_send_wr *bad = NULL;
	int rc = ibv_post_send(c->qp, first, &bad);
	if (rc) {
		/* The WRs from bad on were not posted: give their room back. */
		for (struct ibv_send_wr *w = bad; w; w = w->next)
			c->sq_posted--;
		errno = rc;
		return rh_err_errno(err, RH_EIO, "verbs: ibv_post_send");
	}
	return RH_OK;
}
