/* shm provider: one host. The owner of an RH_TP_REMOTE range passes its
 * memfd over the Unix-domain rendezvous socket (SCM_RIGHTS); the peer maps
 * it MAP_SHARED wherever it likes, and one-sided operations become memcpy
 * and __atomic operations on that mapping, with no thread of the owner
 * involved — as a NIC's DMA would be. Completions are therefore immediate.
 * Messages, credits and advertisements use the channel (chan.h). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/common.h"
#include "transport/chan.h"
#include "transport/cq.h"
#include "transport/populate.h"
#include "transport/sock.h"

enum {
	SHM_AD = RH_CH_PROVIDER, /* payload: struct shm_ad; one fd attached */
	SHM_UNAD,                /* payload: struct shm_ad (fd_off unused) */
};

struct shm_ad {
	uint64_t addr, len, fd_off;
};

struct shm_map {
	void *base;
	size_t len;
};

struct shm_conn {
	struct rh_tp_conn base;
	struct rh_chan ch;
	struct rh_cq cq;
	/* Mappings of the peer's ranges. Withdrawn ranges stay mapped until
	 * close, so accesses already past the bounds check stay safe. */
	pthread_mutex_t mlock;
	struct shm_map *maps;
	size_t nmaps, capmaps;
};

struct shm_listener {
	struct rh_tp_listener base;
	int fd;
	uint16_t port;
};

/* "@rheap-shm-<host>-<port>" in the abstract namespace. */
static socklen_t sun_of(const char *host, uint16_t port, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof *sa);
	sa->sun_family = AF_UNIX;
	int n = snprintf(sa->sun_path + 1, sizeof sa->sun_path - 1, "rheap-shm-%s-%u",
	                 host && *host ? host : "localhost", port);
	size_t len = (size_t)n < sizeof sa->sun_path - 1 ? (size_t)n : sizeof sa->sun_path - 1;
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
}

static int shm_listen(const struct rh_tp_cfg *cfg, const char *host, uint16_t port,
                      rh_tp_listener **out, rh_error *err)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return rh_err_errno(err, RH_EIO, "transport: shm: socket");
	/* Port 0: draw ephemeral numbers until a name is free. */
	uint16_t p = port;
	int r = -1;
	for (int tries = 0; tries < 64; tries++) {
		if (port == 0) {
			uint16_t x = 0;
			if (getrandom(&x, sizeof x, 0) != sizeof x)
				x = (uint16_t)rh_now_ns();
			p = (uint16_t)(49152 + x % 16384);
		}
		struct sockaddr_un sa;
		socklen_t sl = sun_of(host, p, &sa);
		r = bind(fd, (struct sockaddr *)&sa, sl);
		if (r == 0 || port != 0 || errno != EADDRINUSE)
			break;
	}
	if (r < 0 || listen(fd, 64) < 0) {
		int rc = rh_err_errno(err, errno == EADDRINUSE ? RH_EBUSY : RH_EIO,
		                      "transport: shm: listen on @rheap-shm-%s-%u",
		                      host && *host ? host : "localhost", p);
		close(fd);
		return rc;
	}
	struct shm_listener *l = calloc(1, sizeof *l);
	if (!l) {
		close(fd);
		return rh_err_set(err, RH_ENOMEM, "transport: shm: out of memory");
	}
	l->fd = fd, l->port = p;
	*out = &l->base;
	return RH_OK;
}

static uint16_t shm_listener_port(const rh_tp_listener *l)
{
	return ((const struct shm_listener *)l)->port;
}

static void shm_listener_close(rh_tp_listener *bl)
{
	struct shm_listener *l = (struct shm_listener *)bl;
	close(l->fd);
	free(l);
}

static void unmap_all(struct shm_conn *s)
{
	for (size_t i = 0; i < s->nmaps; i++)
		munmap(s->maps[i].base, s->maps[i].len);
	free(s->maps);
	s->maps = NULL, s->nmaps = s->capmaps = 0;
}

/* Receive thread: map an advertised range. */
static int on_ad(struct shm_conn *s, struct shm_ad *a, rh_error *err)
{
	int fd = rh_chan_take_fd(&s->ch);
	if (fd < 0)
		return rh_err_set(err, RH_EPEER, "transport: shm: advertisement without its fd");
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), delta = a->fd_off % pg;
	struct stat st;
	int rc = RH_OK;
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_size < a->fd_off + a->len ||
	    a->fd_off + a->len < a->fd_off)
		rc = rh_err_set(err, RH_EPEER,
		                "transport: shm: peer advertised 0x%llx+%llu beyond its file",
		                (unsigned long long)a->addr, (unsigned long long)a->len);
	void *m = MAP_FAILED;
	if (rc == RH_OK)
		m = mmap(NULL, a->len + delta, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		         (off_t)(a->fd_off - delta));
	close(fd);
	if (rc == RH_OK && m == MAP_FAILED)
		rc = rh_err_errno(err, RH_EIO, "transport: shm: mapping the peer's range");
	if (rc != RH_OK)
		return rc;
	pthread_mutex_lock(&s->mlock);
	if (s->nmaps == s->capmaps) {
		size_t cap = s->capmaps ? 2 * s->capmaps : 8;
		struct shm_map *v = realloc(s->maps, cap * sizeof *v);
		if (v)
			s->maps = v, s->capmaps = cap;
	}
	bool kept = s->nmaps < s->capmaps;
	if (kept)
		s->maps[s->nmaps++] = (struct shm_map){m, a->len + delta};
	pthread_mutex_unlock(&s->mlock);
	if (!kept) {
		munmap(m, a->len + delta);
		return rh_err_set(err, RH_ENOMEM, "transport: shm: out of memory");
	}
	struct rh_tp_range r = {.addr = a->addr,
	                        .len = a->len,
	                        .flags = RH_TP_REMOTE,
	                        .fd = -1,
	                        .map = (char *)m + delta};
	if (rh_tp_ranges_add(&s->base.peer, &r, err) != RH_OK)
		return err ? (err->code = RH_EPEER) : RH_EPEER;
	return RH_OK;
}

static int shm_on_frame(struct rh_chan *ch, const struct rh_chan_hdr *h, rh_error *err)
{
	struct shm_conn *s = ch->ctx;
	struct shm_ad a;
	if ((h->type != SHM_AD && h->type != SHM_UNAD) || h->len != sizeof a)
		return rh_err_set(err, RH_EPEER, "transport: shm: malformed frame type %u",
		                  h->type);
	int rc = rh_chan_read(ch, &a, sizeof a, err);
	if (rc != RH_OK)
		return rc;
	if (h->type == SHM_AD)
		return on_ad(s, &a, err);
	if (rh_tp_ranges_del(&s->base.peer, a.addr, a.len, NULL, err) != RH_OK)
		return err ? (err->code = RH_EPEER) : RH_EPEER;
	return RH_OK;
}

static void shm_on_fail(struct rh_chan *ch)
{
	rh_chan_notify(ch);
}

static int setup(const struct rh_tp_cfg *cfg, int fd, bool listener, rh_tp_conn **out,
                 rh_error *err)
{
	uint64_t deadline = rh_sock_deadline((int)cfg->timeout_ms);
	int rc = rh_sock_auth(fd, listener, cfg->secret, cfg->secret_len, deadline, err);
	if (rc != RH_OK) {
		close(fd);
		return rc;
	}
	struct shm_conn *s = calloc(1, sizeof *s);
	if (!s) {
		close(fd);
		return rh_err_set(err, RH_ENOMEM, "transport: shm: out of memory");
	}
	rh_tp_conn_init(&s->base, cfg);
	rh_cq_init(&s->cq);
	pthread_mutex_init(&s->mlock, NULL);
	rc = rh_chan_init(&s->ch, fd, &s->base, err);
	if (rc != RH_OK) {
		close(fd);
		goto fail;
	}
	s->ch.ctx = s;
	s->ch.on_frame = shm_on_frame;
	s->ch.on_fail = shm_on_fail;
	rc = rh_chan_setup(&s->ch, deadline, err);
	if (rc == RH_OK)
		rc = rh_chan_start(&s->ch, err);
	if (rc != RH_OK) {
		rh_chan_fini(&s->ch);
		goto fail;
	}
	*out = &s->base;
	return RH_OK;
fail:
	unmap_all(s);
	rh_cq_fini(&s->cq);
	pthread_mutex_destroy(&s->mlock);
	rh_tp_conn_fini(&s->base);
	free(s);
	return rc;
}

static int shm_accept(rh_tp_listener *bl, int timeout_ms, rh_tp_conn **out, rh_error *err)
{
	struct shm_listener *l = (struct shm_listener *)bl;
	uint64_t deadline = rh_sock_deadline(timeout_ms);
	for (;;) {
		int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0)
			return rh_tp_handshake_rc(setup(&l->base.cfg, fd, true, out, err), err);
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return rh_err_errno(err, RH_EIO, "transport: shm: accept");
		int rc = rh_sock_wait(l->fd, POLLIN, deadline, err);
		if (rc == RH_ETIMEDOUT)
			return rh_err_set(err, rc, "transport: shm: no connection within %d ms",
			                  timeout_ms);
		if (rc != RH_OK)
			return rc;
	}
}

static int shm_connect(const struct rh_tp_cfg *cfg, const char *host, uint16_t port,
                       rh_tp_conn **out, rh_error *err)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return rh_err_errno(err, RH_EIO, "transport: shm: socket");
	struct sockaddr_un sa;
	socklen_t sl = sun_of(host, port, &sa);
	/* Unix stream connects complete at once or fail (EAGAIN: backlog). */
	uint64_t deadline = rh_sock_deadline((int)cfg->timeout_ms);
	while (connect(fd, (struct sockaddr *)&sa, sl) < 0) {
		if (errno == EAGAIN && rh_now_ns() < deadline) {
			usleep(1000);
			continue;
		}
		int rc = rh_err_errno(err, errno == ECONNREFUSED ? RH_EPEER : RH_EIO,
		                      "transport: shm: connect to @%s", sa.sun_path + 1);
		close(fd);
		return rc;
	}
	return setup(cfg, fd, false, out, err);
}

static void shm_close(rh_tp_conn *c)
{
	struct shm_conn *s = (struct shm_conn *)c;
	rh_chan_fini(&s->ch);
	unmap_all(s);
	rh_cq_fini(&s->cq);
	pthread_mutex_destroy(&s->mlock);
	rh_tp_conn_fini(&s->base);
	free(s);
}

static int advertise(struct shm_conn *s, uint32_t type, const struct rh_tp_range *r, rh_error *err)
{
	struct shm_ad a = {r->addr, r->len, r->fd_off};
	struct rh_chan_hdr h = {.type = type, .len = sizeof a};
	struct iovec v = {&a, sizeof a};
	return rh_chan_send(&s->ch, &h, &v, 1, type == SHM_AD ? &r->fd : NULL,
	                    type == SHM_AD ? 1 : 0, rh_sock_deadline((int)s->base.cfg.timeout_ms),
	                    err);
}

static int shm_reg(rh_tp_conn *c, struct rh_tp_range *r, rh_error *err)
{
	if (!(r->flags & RH_TP_REMOTE))
		return RH_OK;
	if (r->fd < 0)
		return rh_err_set(err, RH_EINVAL,
		                  "transport: shm: RH_TP_REMOTE range %p+%llu needs the fd of its "
		                  "shared mapping",
		                  (void *)(uintptr_t)r->addr, (unsigned long long)r->len);
	return advertise((struct shm_conn *)c, SHM_AD, r, err);
}

static int shm_dereg(rh_tp_conn *c, const struct rh_tp_range *r, rh_error *err)
{
	return r->flags & RH_TP_REMOTE ? advertise((struct shm_conn *)c, SHM_UNAD, r, err) : RH_OK;
}

static int shm_rw(rh_tp_conn *c, enum rh_tp_opcode op, const struct rh_tp_seg *seg, size_t n,
                  uint64_t wr_id, rh_error *err)
{
	struct shm_conn *s = (struct shm_conn *)c;
	int rc = rh_chan_check(&s->ch, err);
	if (rc)
		return rc;
	/* transport.P1: a WRITE's target pages are mapped first, one call a
	 * run; a READ's are the pages the peer or this side wrote before. */
	if (op == RH_TP_OP_WRITE) {
		rh_tp_run run = rh_tp_run_begin(true);
		for (size_t i = 0; i < n; i++)
			rh_tp_run_add(&run, (uintptr_t)seg[i].rmap, seg[i].len);
		rh_tp_run_end(&run);
	}
	for (size_t i = 0; i < n; i++) {
		if (op == RH_TP_OP_READ)
			memcpy(seg[i].local, seg[i].rmap, seg[i].len);
		else
			memcpy(seg[i].rmap, seg[i].local, seg[i].len);
	}
	rh_cq_push(&s->cq, wr_id, RH_OK);
	return RH_OK;
}

static int shm_atomic(rh_tp_conn *c, enum rh_tp_opcode op, const struct rh_tp_seg *seg, uint64_t a,
                      uint64_t b, uint64_t *old, uint64_t wr_id, rh_error *err)
{
	struct shm_conn *s = (struct shm_conn *)c;
	int rc = rh_chan_check(&s->ch, err);
	if (rc)
		return rc;
	uint64_t *p = seg->rmap;
	if (op == RH_TP_OP_CAS) {
		uint64_t v = a;
		__atomic_compare_exchange_n(p, &v, b, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		*old = v;
	} else if (op == RH_TP_OP_FAA) {
		*old = __atomic_fetch_add(p, a, __ATOMIC_SEQ_CST);
	} else {
		__atomic_store_n(p, a, __ATOMIC_SEQ_CST);
	}
	rh_cq_push(&s->cq, wr_id, RH_OK);
	return RH_OK;
}

static int shm_poll(rh_tp_conn *c, rh_tp_completion *out, int max, rh_error *err)
{
	return rh_cq_poll(&((struct shm_conn *)c)->cq, out, max);
}

static int shm_wait(rh_tp_conn *c, uint64_t wr_id, int timeout_ms, rh_error *err)
{
	return rh_cq_wait(&((struct shm_conn *)c)->cq, wr_id, timeout_ms, err);
}

static int shm_send(rh_tp_conn *c, const void *buf, size_t len, int timeout_ms, rh_error *err)
{
	return rh_chan_msg_send(&((struct shm_conn *)c)->ch, buf, len, timeout_ms, err);
}

static int shm_recv(rh_tp_conn *c, void *buf, size_t cap, size_t *len, int timeout_ms,
                    rh_error *err)
{
	return rh_chan_msg_recv(&((struct shm_conn *)c)->ch, buf, cap, len, timeout_ms, err);
}

static int shm_fd(rh_tp_conn *c)
{
	return rh_chan_fd(&((struct shm_conn *)c)->ch);
}

const struct rh_tp_provider rh_tp_shm = {
        .name = "shm",
        .listen = shm_listen,
        .listener_port = shm_listener_port,
        .accept = shm_accept,
        .listener_close = shm_listener_close,
        .connect = shm_connect,
        .close = shm_close,
        .reg = shm_reg,
        .dereg = shm_dereg,
        .rw = shm_rw,
        .atomic = shm_atomic,
        .poll = shm_poll,
        .wait = shm_wait,
        .send = shm_send,
        .recv = shm_recv,
        .fd = shm_fd,
};
