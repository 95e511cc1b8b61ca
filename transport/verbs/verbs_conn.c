/* Connection setup for the verbs provider: rdma_cm address and route
 * resolution, QP and buffer setup, the parameter exchange in the CM
 * private data, the authentication handshake over SEND/RECV, and close. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "transport/auth.h"
#include "transport/verbs/verbs.h"

struct vb_listener {
	struct rh_tp_listener base;
	struct rh_tp_cfg cfg;
	struct rdma_event_channel *ech;
	struct rdma_cm_id *id;
	uint16_t port;
};

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static int resolve(const char *host, uint16_t port, struct sockaddr_storage *sa, rh_error *err)
{
	struct addrinfo hints = {
	        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
	struct addrinfo *ai;
	char ps[8];
	snprintf(ps, sizeof ps, "%u", port);
	int rc = getaddrinfo(host && *host ? host : "0.0.0.0", ps, &hints, &ai);
	if (rc)
		return rh_err_set(err, RH_EINVAL, "verbs: cannot resolve '%s': %s", host,
		                  gai_strerror(rc));
	memcpy(sa, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	return RH_OK;
}

/* Next CM event on ch within the deadline (the channel fd is non-blocking). */
static int next_event(struct rdma_event_channel *ch, uint64_t deadline_ns,
                      struct rdma_cm_event **ev, rh_error *err)
{
	for (;;) {
		if (rdma_get_cm_event(ch, ev) == 0)
			return RH_OK;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return rh_err_errno(err, RH_EIO, "verbs: rdma_get_cm_event");
		uint64_t now = rh_now_ns();
		if (now >= deadline_ns)
			return rh_err_set(err, RH_ETIMEDOUT, "verbs: connection setup timed out");
		struct pollfd p = {.fd = ch->fd, .events = POLLIN};
		uint64_t ms = (deadline_ns - now + 999999) / 1000000;
		poll(&p, 1, ms > 60000 ? 60000 : (int)ms);
	}
}

/* Wait for one specific event; anything else is a failure. */
static int expect_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want,
                        uint64_t deadline_ns, struct vb_hello *hello, rh_error *err)
{
	struct rdma_cm_event *ev;
	int rc = next_event(ch, deadline_ns, &ev, err);
	if (rc)
		return rc;
	enum rdma_cm_event_type got = ev->event;
	int status = ev->status;
	if (got == want && hello) {
		memset(hello, 0, sizeof *hello);
		if (ev->param.conn.private_data && ev->param.conn.private_data_len >= sizeof *hello)
			memcpy(hello, ev->param.conn.private_data, sizeof *hello);
	}
	rdma_ack_cm_event(ev);
	if (got == want)
		return RH_OK;
	if (got == RDMA_CM_EVENT_REJECTED || got == RDMA_CM_EVENT_UNREACHABLE ||
	    got == RDMA_CM_EVENT_CONNECT_ERROR)
		return rh_err_set(err, RH_EPEER, "verbs: %s (status %d) while waiting for %s",
		                  rdma_event_str(got), status, rdma_event_str(want));
	return rh_err_set(err, RH_EIO, "verbs: %s (status %d) while waiting for %s",
	                  rdma_event_str(got), status, rdma_event_str(want));
}

static void *alloc_buf(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* The PD, CQ, QP and every buffer of a new connection on c->id. */
static int setup(struct vb_conn *c, rh_error *err)
{
	struct ibv_context *ctx = c->id->verbs;
	if (!ctx)
		return rh_err_set(err, RH_EIO, "verbs: the address is not on an RDMA device");
	struct ibv_device_attr da;
	if (ibv_query_device(ctx, &da))
		return rh_err_errno(err, RH_EIO, "verbs: ibv_query_device");
	const struct rh_tp_cfg *cfg = &c->base.cfg;
	c->user_credits = cfg->msg_credits;
	c->internal_credits = VB_INTERNAL_CREDITS;
	c->nrbuf = c->user_credits + c->internal_credits;
	c->sq_depth = VB_SQ_DEPTH < (uint32_t)da.max_qp_wr ? VB_SQ_DEPTH : (uint32_t)da.max_qp_wr;
	if (c->nrbuf > (uint32_t)da.max_qp_wr)
		return rh_err_set(err, RH_EINVAL,
		                  "verbs: %u message credits exceed the device's %d",
		                  c->user_credits, da.max_qp_wr);

	if (!(c->pd = ibv_alloc_pd(ctx)))
		return rh_err_errno(err, RH_EIO, "verbs: ibv_alloc_pd");
	if (!(c->cch = ibv_create_comp_channel(ctx)))
		return rh_err_errno(err, RH_EIO, "verbs: ibv_create_comp_channel");
	set_nonblock(c->cch->fd);
	if (!(c->cq = ibv_create_cq(ctx, (int)(c->sq_depth + c->nrbuf), c, c->cch, 0)))
		return rh_err_errno(err, RH_EIO, "verbs: ibv_create_cq");
	if (ibv_req_notify_cq(c->cq, 0))
		return rh_err_errno(err, RH_EIO, "verbs: ibv_req_notify_cq");
	c->armed = true;
	uint32_t sge = da.max_sge < 32 ? (uint32_t)da.max_sge : 32;
	struct ibv_qp_init_attr qa = {
	        .send_cq = c->cq,
	        .recv_cq = c->cq,
	        .cap = {.max_send_wr = c->sq_depth,
	                .max_recv_wr = c->nrbuf,
	                .max_send_sge = sge,
	                .max_recv_sge = 1,
	                .max_inline_data = VB_MAX_INLINE},
	        .qp_type = IBV_QPT_RC,
	};
	if (rdma_create_qp(c->id, c->pd, &qa)) {
		qa.cap.max_inline_data = 0; /* some devices have no inline data */
		if (rdma_create_qp(c->id, c->pd, &qa))
			return rh_err_errno(err, RH_EIO, "verbs: rdma_create_qp");
	}
	c->qp = c->id->qp;
	c->max_sge = qa.cap.max_send_sge;
	c->max_sge_rd = da.max_sge_rd > 0 && (uint32_t)da.max_sge_rd < c->max_sge
	                        ? (uint32_t)da.max_sge_rd
	                        : c->max_sge;
	c->max_inline = qa.cap.max_inline_data;

	/* Counters (peer-writable) and atomic results (local only). */
	c->nops = c->sq_depth;
	c->ctrs_in = alloc_buf(4096);
	c->atomic_res = alloc_buf(c->nops * sizeof(uint64_t));
	c->ops = calloc(c->nops, sizeof *c->ops);
	c->opfree = calloc(c->nops, sizeof *c->opfree);
	c->ready = calloc(c->nrbuf, sizeof *c->ready);
	c->wrs = calloc(c->sq_depth, sizeof *c->wrs);
	c->sges = calloc((size_t)c->sq_depth * c->max_sge, sizeof *c->sges);
	c->rslot = ((size_t)cfg->max_msg + 63) & ~(size_t)63;
	c->rbuf = alloc_buf(c->rslot * c->nrbuf);
	if (!c->ctrs_in || !c->atomic_res || !c->ops || !c->opfree || !c->ready || !c->wrs ||
	    !c->sges || !c->rbuf)
		return rh_err_set(err, RH_ENOMEM, "verbs: out of memory for connection buffers");
	for (uint32_t i = 0; i < c->nops; i++)
		c->opfree[i] = c->nops - 1 - i;
	c->nopfree = c->nops;
	c->ctrs_mr = ibv_reg_mr(c->pd, c->ctrs_in, 2 * sizeof(struct vb_ctrs),
	                        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	c->atomic_mr = ibv_reg_mr(c->pd, c->atomic_res, c->nops * sizeof(uint64_t),
	                          IBV_ACCESS_LOCAL_WRITE);
	c->rbuf_mr = ibv_reg_mr(c->pd, c->rbuf, c->rslot * c->nrbuf, IBV_ACCESS_LOCAL_WRITE);
	if (!c->ctrs_mr || !c->atomic_mr || !c->rbuf_mr)
		return rh_err_errno(err, RH_EIO, "verbs: ibv_reg_mr for connection buffers");
	for (uint32_t i = 0; i < c->nrbuf; i++)
		if (rh_vb_post_recv(c, i))
			return rh_err_errno(err, RH_EIO, "verbs: ibv_post_recv");
	c->user_posted = c->user_reported = c->user_credits;
	c->internal_posted = c->internal_credits;

	c->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	c->appfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (c->wakefd < 0 || c->appfd < 0 || c->epfd < 0)
		return rh_err_errno(err, RH_EIO, "verbs: eventfd/epoll");
	int fds[3] = {c->cch->fd, c->ech->fd, c->wakefd};
	for (int i = 0; i < 3; i++) {
		struct epoll_event ev = {.events = EPOLLIN, .data.fd = fds[i]};
		if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, fds[i], &ev))
			return rh_err_errno(err, RH_EIO, "verbs: epoll_ctl");
	}
	return RH_OK;
}

static void make_hello(struct vb_conn *c, struct vb_hello *h)
{
	*h = (struct vb_hello){
	        .magic = VB_MAGIC,
	        .version = VB_VERSION,
	        .max_msg = c->base.cfg.max_msg,
	        .user_credits = c->user_credits,
	        .internal_credits = c->internal_credits,
	        .ctrs_rkey = c->ctrs_mr->rkey,
	        .ctrs_addr = (uintptr_t)c->ctrs_in,
	};
}

/* Take the peer's parameters and allocate what depends on them. */
static int take_hello(struct vb_conn *c, const struct vb_hello *h, rh_error *err)
{
	if (h->magic != VB_MAGIC || h->version != VB_VERSION || h->max_msg == 0 ||
	    h->user_credits == 0 || h->internal_credits == 0)
		return rh_err_set(err, RH_EPEER,
		                  "verbs: peer is not an rheap verbs endpoint "
		                  "(bad connection parameters)");
	c->base.peer_max_msg = h->max_msg;
	c->peer.user_posted = c->peer_user_credits = h->user_credits;
	c->peer.internal_posted = c->peer_internal_credits = h->internal_credits;
	c->peer_ctrs_addr = h->ctrs_addr;
	c->peer_ctrs_rkey = h->ctrs_rkey;
	c->sslot = h->max_msg < VB_SEND_SLOT_MAX ? h->max_msg : VB_SEND_SLOT_MAX;
	c->sbuf = alloc_buf(c->sslot * VB_SEND_SLOTS);
	if (!c->sbuf)
		return rh_err_set(err, RH_ENOMEM, "verbs: out of memory for send buffers");
	if (!(c->sbuf_mr = ibv_reg_mr(c->pd, c->sbuf, c->sslot * VB_SEND_SLOTS, 0)))
		return rh_err_errno(err, RH_EIO, "verbs: ibv_reg_mr for send buffers");
	for (uint32_t i = 0; i < VB_SEND_SLOTS; i++)
		c->sfree[i] = i;
	c->nsfree = VB_SEND_SLOTS;
	return RH_OK;
}

static void conn_params(struct vb_conn *c, struct rdma_conn_param *p, const struct vb_hello *h)
{
	struct ibv_device_attr da;
	int rd = 16;
	if (ibv_query_device(c->id->verbs, &da) == 0) {
		rd = da.max_qp_rd_atom < da.max_qp_init_rd_atom ? da.max_qp_rd_atom
		                                                : da.max_qp_init_rd_atom;
		rd = rd > 16 ? 16 : rd;
	}
	*p = (struct rdma_conn_param){
	        .private_data = h,
	        .private_data_len = sizeof *h,
	        .responder_resources = (uint8_t)rd,
	        .initiator_depth = (uint8_t)rd,
	        .retry_count = 7,
	        .rnr_retry_count = 7,
	};
}

static struct vb_conn *conn_new(const struct rh_tp_cfg *cfg)
{
	struct vb_conn *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	rh_tp_conn_init(&c->base, cfg);
	pthread_mutex_init(&c->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cv, &ca);
	pthread_condattr_destroy(&ca);
	c->epfd = c->wakefd = c->appfd = -1;
	return c;
}

struct auth_ctx {
	struct vb_conn *c;
	uint64_t deadline;
};

static int auth_send(void *ctx, const void *buf, size_t len, rh_error *err)
{
	struct auth_ctx *a = ctx;
	return rh_vb_send_msg(a->c, VB_MSG_AUTH, buf, len, a->deadline, err);
}

static int auth_recv(void *ctx, void *buf, size_t len, rh_error *err)
{
	struct auth_ctx *a = ctx;
	size_t got = 0;
	int rc = rh_vb_recv_msg(a->c, VB_MSG_AUTH, buf, len, &got, a->deadline, err);
	if (rc == RH_OK && got != len)
		rc = rh_err_set(err, RH_EPEER,
		                "verbs: handshake message of %zu bytes, expected %zu", got, len);
	return rc == RH_EINVAL ? rh_err_set(err, RH_EPEER, "verbs: oversized handshake message")
	                       : rc;
}

/* Start the progress thread, then run the handshake over SEND/RECV. */
static int start(struct vb_conn *c, enum rh_auth_role role, uint64_t deadline, rh_error *err)
{
	if (set_nonblock(c->ech->fd))
		return rh_err_errno(err, RH_EIO, "verbs: fcntl");
	if (pthread_create(&c->thread, NULL, rh_vb_progress_main, c))
		return rh_err_set(err, RH_EIO, "verbs: cannot start the progress thread");
	c->thread_on = true;
	struct auth_ctx a = {c, deadline};
	struct rh_auth_io io = {auth_send, auth_recv, &a};
	pthread_mutex_lock(&c->mu);
	int rc = rh_auth_run(role, c->base.cfg.secret, c->base.cfg.secret_len, &io, err);
	if (rc == RH_OK)
		c->authed = true;
	pthread_mutex_unlock(&c->mu);
	return rc;
}

void rh_vb_close(rh_tp_conn *base)
{
	struct vb_conn *c = (struct vb_conn *)base;
	if (!c)
		return;
	if (c->thread_on) {
		pthread_mutex_lock(&c->mu);
		c->stopping = true;
		pthread_mutex_unlock(&c->mu);
		uint64_t one = 1;
		if (write(c->wakefd, &one, sizeof one) < 0)
			rh_log(RH_LOG_WARN, "transport", "verbs: cannot wake the progress thread");
		pthread_join(c->thread, NULL);
	}
	if (c->id && c->qp)
		rdma_disconnect(c->id);
	/* The core leaves the registered ranges to us: their MRs go first. */
	struct rh_tp_range r;
	while (c->base.local.n > 0) {
		r = c->base.local.v[0];
		rh_tp_ranges_del(&c->base.local, r.addr, r.len, NULL, NULL);
		if (r.map)
			ibv_dereg_mr(r.map);
	}
	if (c->qp)
		rdma_destroy_qp(c->id);
	if (c->ctrs_mr)
		ibv_dereg_mr(c->ctrs_mr);
	if (c->atomic_mr)
		ibv_dereg_mr(c->atomic_mr);
	if (c->rbuf_mr)
		ibv_dereg_mr(c->rbuf_mr);
	if (c->sbuf_mr)
		ibv_dereg_mr(c->sbuf_mr);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->cch)
		ibv_destroy_comp_channel(c->cch);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	if (c->id)
		rdma_destroy_id(c->id);
	if (c->ech)
		rdma_destroy_event_channel(c->ech);
	if (c->ctrs_in)
		munmap(c->ctrs_in, 4096);
	if (c->atomic_res)
		munmap(c->atomic_res, c->nops * sizeof(uint64_t));
	if (c->rbuf)
		munmap(c->rbuf, c->rslot * c->nrbuf);
	if (c->sbuf)
		munmap(c->sbuf, c->sslot * VB_SEND_SLOTS);
	for (int *fd = &c->epfd; fd <= &c->appfd; fd++)
		if (*fd >= 0)
			close(*fd);
	free(c->ops);
	free(c->opfree);
	free(c->ready);
	free(c->done);
	free(c->wrs);
	free(c->sges);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
	rh_tp_conn_fini(&c->base);
	free(c);
}

int rh_vb_connect(const struct rh_tp_cfg *cfg, const char *host, uint16_t port, rh_tp_conn **out,
                  rh_error *err)
{
	uint64_t deadline = rh_vb_deadline((int)cfg->timeout_ms);
	struct sockaddr_storage sa;
	int rc = resolve(host, port, &sa, err);
	if (rc)
		return rc;
	struct vb_conn *c = conn_new(cfg);
	if (!c)
		return rh_err_set(err, RH_ENOMEM, "verbs: out of memory");
	if (!(c->ech = rdma_create_event_channel()) || set_nonblock(c->ech->fd) ||
	    rdma_create_id(c->ech, &c->id, c, RDMA_PS_TCP)) {
		rc = rh_err_errno(err, RH_EIO, "verbs: rdma_cm setup (is an RDMA device present?)");
		goto fail;
	}
	int tmo = (int)cfg->timeout_ms;
	if (rdma_resolve_addr(c->id, NULL, (struct sockaddr *)&sa, tmo)) {
		rc = rh_err_errno(err, RH_EPEER, "verbs: rdma_resolve_addr(%s)", host);
		goto fail;
	}
	if ((rc = expect_event(c->ech, RDMA_CM_EVENT_ADDR_RESOLVED, deadline, NULL, err)))
		goto fail;
	uint8_t ack = VB_ACK_TIMEOUT;
	rdma_set_option(c->id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &ack, sizeof ack);
	if (rdma_resolve_route(c->id, tmo)) {
		rc = rh_err_errno(err, RH_EPEER, "verbs: rdma_resolve_route(%s)", host);
		goto fail;
	}
	if ((rc = expect_event(c->ech, RDMA_CM_EVENT_ROUTE_RESOLVED, deadline, NULL, err)))
		goto fail;
	if ((rc = setup(c, err)))
		goto fail;
	struct vb_hello mine, theirs;
	struct rdma_conn_param p;
	make_hello(c, &mine);
	conn_params(c, &p, &mine);
	if (rdma_connect(c->id, &p)) {
		rc = rh_err_errno(err, RH_EPEER, "verbs: rdma_connect");
		goto fail;
	}
	if ((rc = expect_event(c->ech, RDMA_CM_EVENT_ESTABLISHED, deadline, &theirs, err)))
		goto fail;
	if ((rc = take_hello(c, &theirs, err)))
		goto fail;
	if ((rc = start(c, RH_AUTH_CONNECTOR, deadline, err)))
		goto fail;
	*out = &c->base;
	return RH_OK;
fail:
	rh_vb_close(&c->base);
	return rc;
}

int rh_vb_listen(const struct rh_tp_cfg *cfg, const char *host, uint16_t port, rh_tp_listener **out,
                 rh_error *err)
{
	struct sockaddr_storage sa;
	int rc = resolve(host, port, &sa, err);
	if (rc)
		return rc;
	struct vb_listener *l = calloc(1, sizeof *l);
	if (!l)
		return rh_err_set(err, RH_ENOMEM, "verbs: out of memory");
	l->cfg = *cfg;
	if (!(l->ech = rdma_create_event_channel()) || set_nonblock(l->ech->fd) ||
	    rdma_create_id(l->ech, &l->id, l, RDMA_PS_TCP)) {
		rc = rh_err_errno(err, RH_EIO, "verbs: rdma_cm setup (is an RDMA device present?)");
		goto fail;
	}
	if (rdma_bind_addr(l->id, (struct sockaddr *)&sa)) {
		rc = rh_err_errno(err, errno == EADDRINUSE ? RH_EBUSY : RH_EIO,
		                  "verbs: rdma_bind_addr(%s:%u)", host ? host : "*", port);
		goto fail;
	}
	if (rdma_listen(l->id, 16)) {
		rc = rh_err_errno(err, RH_EIO, "verbs: rdma_listen");
		goto fail;
	}
	l->port = ntohs(rdma_get_src_port(l->id));
	*out = &l->base;
	return RH_OK;
fail:
	rh_vb_listener_close(&l->base);
	return rc;
}

uint16_t rh_vb_listener_port(const rh_tp_listener *base)
{
	return ((const struct vb_listener *)base)->port;
}

void rh_vb_listener_close(rh_tp_listener *base)
{
	struct vb_listener *l = (struct vb_listener *)base;
	if (!l)
		return;
	if (l->id)
		rdma_destroy_id(l->id);
	if (l->ech)
		rdma_destroy_event_channel(l->ech);
	free(l);
}

/* Set up a connection for one CONNECT_REQUEST: its own event channel,
 * resources, accept, then the handshake. */
static int accept_one(struct vb_listener *l, struct rdma_cm_id *id, const struct vb_hello *theirs,
                      uint64_t deadline, rh_tp_conn **out, rh_error *err)
{
	int rc;
	struct vb_conn *c = conn_new(&l->cfg);
	if (!c) {
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return rh_err_set(err, RH_ENOMEM, "verbs: out of memory");
	}
	c->id = id;
	id->context = c;
	if (!(c->ech = rdma_create_event_channel()) || set_nonblock(c->ech->fd) ||
	    rdma_migrate_id(id, c->ech)) {
		rc = rh_err_errno(err, RH_EIO, "verbs: rdma_migrate_id");
		rdma_reject(id, NULL, 0);
		goto fail;
	}
	if ((rc = setup(c, err)) || (rc = take_hello(c, theirs, err))) {
		rdma_reject(id, NULL, 0);
		goto fail;
	}
	struct vb_hello mine;
	struct rdma_conn_param p;
	make_hello(c, &mine);
	conn_params(c, &p, &mine);
	if (rdma_accept(id, &p)) {
		rc = rh_err_errno(err, RH_EPEER, "verbs: rdma_accept");
		goto fail;
	}
	if ((rc = expect_event(c->ech, RDMA_CM_EVENT_ESTABLISHED, deadline, NULL, err)))
		goto fail;
	if ((rc = start(c, RH_AUTH_LISTENER, deadline, err)))
		goto fail;
	*out = &c->base;
	return RH_OK;
fail:
	rh_vb_close(&c->base);
	return rc;
}

int rh_vb_accept(rh_tp_listener *base, int timeout_ms, rh_tp_conn **out, rh_error *err)
{
	struct vb_listener *l = (struct vb_listener *)base;
	uint64_t deadline = timeout_ms < 0 ? UINT64_MAX : rh_vb_deadline(timeout_ms);
	for (;;) {
		struct rdma_cm_event *ev;
		int rc = next_event(l->ech, deadline, &ev, err);
		if (rc)
			return rc;
		if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
			rdma_ack_cm_event(ev);
			continue;
		}
		struct rdma_cm_id *id = ev->id;
		struct vb_hello theirs = {0};
		if (ev->param.conn.private_data && ev->param.conn.private_data_len >= sizeof theirs)
			memcpy(&theirs, ev->param.conn.private_data, sizeof theirs);
		rdma_ack_cm_event(ev);
		/* The handshake gets the connection timeout, even when the
		 * caller waits forever for the request itself. */
		uint64_t d = rh_vb_deadline((int)l->cfg.timeout_ms);
		return rh_tp_handshake_rc(accept_one(l, id, &theirs, d, out, err), err);
	}
}
