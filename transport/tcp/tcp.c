/* tcp provider: connection setup, registration, completions, messages.
 * The one-sided operations are in tcp_ops.c. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/common.h"
#include "transport/sock.h"
#include "transport/tcp/tcp.h"

struct tcp_listener {
	struct rh_tp_listener base;
	int fd;
	uint16_t port;
};

static int resolve(const char *host, uint16_t port, bool passive, struct addrinfo **out,
                   rh_error *err)
{
	char ps[8];
	snprintf(ps, sizeof ps, "%u", port);
	struct addrinfo hint = {.ai_family = AF_UNSPEC,
	                        .ai_socktype = SOCK_STREAM,
	                        .ai_flags = passive ? AI_PASSIVE : 0};
	int r = getaddrinfo(host && *host ? host : NULL, ps, &hint, out);
	if (r != 0)
		return rh_err_set(err, RH_EINVAL, "transport: tcp: cannot resolve \"%s\": %s",
		                  host ? host : "", gai_strerror(r));
	return RH_OK;
}

static int tcp_listen(const struct rh_tp_cfg *cfg, const char *host, uint16_t port,
                      rh_tp_listener **out, rh_error *err)
{
	struct addrinfo *ai;
	int rc = resolve(host, port, true, &ai, err);
	if (rc != RH_OK)
		return rc;
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 64) < 0) {
		rc = rh_err_errno(err, errno == EADDRINUSE ? RH_EBUSY : RH_EIO,
		                  "transport: tcp: listen on %s:%u", host ? host : "*", port);
		freeaddrinfo(ai);
		if (fd >= 0)
			close(fd);
		return rc;
	}
	freeaddrinfo(ai);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	struct tcp_listener *l = calloc(1, sizeof *l);
	if (!l) {
		close(fd);
		return rh_err_set(err, RH_ENOMEM, "transport: tcp: out of memory");
	}
	l->fd = fd;
	l->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
	                                         : ((struct sockaddr_in *)&ss)->sin_port);
	*out = &l->base;
	return RH_OK;
}

static uint16_t tcp_listener_port(const rh_tp_listener *l)
{
	return ((const struct tcp_listener *)l)->port;
}

static void tcp_listener_close(rh_tp_listener *bl)
{
	struct tcp_listener *l = (struct tcp_listener *)bl;
	close(l->fd);
	free(l);
}

/* Authenticate, exchange limits and start the threads on a connected
 * socket. Consumes fd. */
static int setup(const struct rh_tp_cfg *cfg, int fd, bool listener, rh_tp_conn **out,
                 rh_error *err)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	uint64_t deadline = rh_sock_deadline((int)cfg->timeout_ms);
	int rc = rh_sock_auth(fd, listener, cfg->secret, cfg->secret_len, deadline, err);
	if (rc != RH_OK) {
		close(fd);
		return rc;
	}
	struct tcp_conn *t = calloc(1, sizeof *t);
	if (!t) {
		close(fd);
		return rh_err_set(err, RH_ENOMEM, "transport: tcp: out of memory");
	}
	rh_tp_conn_init(&t->base, cfg);
	rh_cq_init(&t->cq);
	pthread_mutex_init(&t->plock, NULL);
	rc = rh_chan_init(&t->ch, fd, &t->base, err);
	if (rc != RH_OK) {
		close(fd);
		goto fail;
	}
	t->ch.ctx = t;
	t->ch.on_frame = tcp_on_frame;
	t->ch.on_fail = tcp_fail_pending;
	rc = rh_chan_setup(&t->ch, deadline, err);
	if (rc == RH_OK)
		rc = rh_chan_start(&t->ch, err);
	if (rc != RH_OK) {
		rh_chan_fini(&t->ch);
		goto fail;
	}
	*out = &t->base;
	return RH_OK;
fail:
	rh_cq_fini(&t->cq);
	pthread_mutex_destroy(&t->plock);
	rh_tp_conn_fini(&t->base);
	free(t);
	return rc;
}

static int tcp_accept(rh_tp_listener *bl, int timeout_ms, rh_tp_conn **out, rh_error *err)
{
	struct tcp_listener *l = (struct tcp_listener *)bl;
	uint64_t deadline = rh_sock_deadline(timeout_ms);
	for (;;) {
		int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0)
			return rh_tp_handshake_rc(setup(&l->base.cfg, fd, true, out, err), err);
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
		    errno != ECONNABORTED)
			return rh_err_errno(err, RH_EIO, "transport: tcp: accept");
		int rc = rh_sock_wait(l->fd, POLLIN, deadline, err);
		if (rc == RH_ETIMEDOUT)
			return rh_err_set(err, rc, "transport: tcp: no connection within %d ms",
			                  timeout_ms);
		if (rc != RH_OK)
			return rc;
	}
}

static int tcp_connect(const struct rh_tp_cfg *cfg, const char *host, uint16_t port,
                       rh_tp_conn **out, rh_error *err)
{
	struct addrinfo *ai;
	int rc = resolve(host, port, false, &ai, err);
	if (rc != RH_OK)
		return rc;
	uint64_t deadline = rh_sock_deadline((int)cfg->timeout_ms);
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		freeaddrinfo(ai);
		return rh_err_errno(err, RH_EIO, "transport: tcp: socket");
	}
	int r = connect(fd, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	if (r < 0 && errno == EINPROGRESS) {
		rc = rh_sock_wait(fd, POLLOUT, deadline, err);
		socklen_t sl = sizeof r;
		if (rc == RH_OK && getsockopt(fd, SOL_SOCKET, SO_ERROR, &r, &sl) == 0 && r != 0)
			errno = r, r = -1;
	}
	if (rc == RH_OK && r < 0)
		rc = rh_err_errno(err, errno == ECONNREFUSED ? RH_EPEER : RH_EIO,
		                  "transport: tcp: connect to %s:%u", host ? host : "", port);
	if (rc != RH_OK) {
		close(fd);
		return rc;
	}
	return setup(cfg, fd, false, out, err);
}

static void tcp_close(rh_tp_conn *c)
{
	struct tcp_conn *t = (struct tcp_conn *)c;
	rh_chan_fini(&t->ch); /* its shutdown already failed what was pending */
	tcp_free_pending(t);
	rh_cq_fini(&t->cq);
	pthread_mutex_destroy(&t->plock);
	rh_tp_conn_fini(&t->base);
	free(t);
}

static int advertise(struct tcp_conn *t, uint32_t type, const struct rh_tp_range *r, rh_error *err)
{
	struct tcp_range body = {r->addr, r->len};
	struct rh_chan_hdr h = {.type = type, .len = sizeof body};
	struct iovec v = {&body, sizeof body};
	return rh_chan_send(&t->ch, &h, &v, 1, NULL, 0,
	                    rh_sock_deadline((int)t->base.cfg.timeout_ms), err);
}

static int tcp_reg(rh_tp_conn *c, struct rh_tp_range *r, rh_error *err)
{
	return r->flags & RH_TP_REMOTE ? advertise((struct tcp_conn *)c, TCP_AD, r, err) : RH_OK;
}

static int tcp_dereg(rh_tp_conn *c, const struct rh_tp_range *r, rh_error *err)
{
	return r->flags & RH_TP_REMOTE ? advertise((struct tcp_conn *)c, TCP_UNAD, r, err) : RH_OK;
}

static int tcp_poll(rh_tp_conn *c, rh_tp_completion *out, int max, rh_error *err)
{
	return rh_cq_poll(&((struct tcp_conn *)c)->cq, out, max);
}

static int tcp_wait(rh_tp_conn *c, uint64_t wr_id, int timeout_ms, rh_error *err)
{
	return rh_cq_wait(&((struct tcp_conn *)c)->cq, wr_id, timeout_ms, err);
}

static int tcp_send(rh_tp_conn *c, const void *buf, size_t len, int timeout_ms, rh_error *err)
{
	return rh_chan_msg_send(&((struct tcp_conn *)c)->ch, buf, len, timeout_ms, err);
}

static int tcp_recv(rh_tp_conn *c, void *buf, size_t cap, size_t *len, int timeout_ms,
                    rh_error *err)
{
	return rh_chan_msg_recv(&((struct tcp_conn *)c)->ch, buf, cap, len, timeout_ms, err);
}

static int tcp_fd(rh_tp_conn *c)
{
	return rh_chan_fd(&((struct tcp_conn *)c)->ch);
}

const struct rh_tp_provider rh_tp_tcp = {
        .name = "tcp",
        .listen = tcp_listen,
        .listener_port = tcp_listener_port,
        .accept = tcp_accept,
        .listener_close = tcp_listener_close,
        .connect = tcp_connect,
        .close = tcp_close,
        .reg = tcp_reg,
        .dereg = tcp_dereg,
        .rw = tcp_rw,
        .atomic = tcp_atomic,
        .poll = tcp_poll,
        .wait = tcp_wait,
        .send = tcp_send,
        .recv = tcp_recv,
        .fd = tcp_fd,
};
