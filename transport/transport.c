/* The provider-neutral core: provider selection, option defaults, range
 * registration and the bounds checks every one-sided operation passes
 * before a provider sees it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "transport/provider.h"

static const struct rh_tp_provider *const providers[] = {
#ifdef RH_HAVE_VERBS
        &rh_tp_verbs,
#endif
#ifdef RH_HAVE_TCP
        &rh_tp_tcp,
#endif
#ifdef RH_HAVE_SHM
        &rh_tp_shm,
#endif
        NULL,
};

const char *rh_tp_providers(void)
{
	/* Each name carries a leading comma; skip the first. */
	static const char names[] = ","
#ifdef RH_HAVE_VERBS
	                            ",verbs"
#endif
#ifdef RH_HAVE_TCP
	                            ",tcp"
#endif
#ifdef RH_HAVE_SHM
	                            ",shm"
#endif
	        ;
	return names + (sizeof names > 2 ? 2 : 1);
}

static int find(const char *name, const struct rh_tp_provider **out, rh_error *err)
{
	for (size_t i = 0; providers[i]; i++) {
		if (name && strcmp(name, providers[i]->name) == 0) {
			*out = providers[i];
			return RH_OK;
		}
	}
	return rh_err_set(err, RH_EINVAL, "transport: unknown provider \"%s\" (built: %s)",
	                  name ? name : "(null)", rh_tp_providers());
}

static int make_cfg(const rh_tp_opts *o, struct rh_tp_cfg *cfg, const struct rh_tp_provider **p,
                    rh_error *err)
{
	if (!o)
		return rh_err_set(err, RH_EINVAL, "transport: no options");
	int rc = find(o->provider, p, err);
	if (rc != RH_OK)
		return rc;
	if (!o->secret || o->secret_len == 0)
		return rh_err_set(err, RH_EINVAL, "transport: a shared secret is required");
	if (o->secret_len > RH_TP_SECRET_MAX)
		return rh_err_set(err, RH_EINVAL, "transport: secret longer than %d bytes",
		                  RH_TP_SECRET_MAX);
	if (o->max_msg > RH_TP_MAX_MSG_LIMIT)
		return rh_err_set(err, RH_EINVAL, "transport: max_msg %u exceeds %u", o->max_msg,
		                  RH_TP_MAX_MSG_LIMIT);
	memset(cfg, 0, sizeof *cfg);
	snprintf(cfg->provider, sizeof cfg->provider, "%s", (*p)->name);
	memcpy(cfg->secret, o->secret, o->secret_len);
	cfg->secret_len = o->secret_len;
	cfg->timeout_ms = o->timeout_ms ? o->timeout_ms : RH_TP_DEFAULT_TIMEOUT_MS;
	cfg->max_msg = o->max_msg ? o->max_msg : RH_TP_DEFAULT_MAX_MSG;
	cfg->msg_credits = o->msg_credits ? o->msg_credits : RH_TP_DEFAULT_CREDITS;
	return RH_OK;
}

void rh_tp_conn_init(struct rh_tp_conn *c, const struct rh_tp_cfg *cfg)
{
	c->ops = NULL;
	c->cfg = *cfg;
	rh_tp_ranges_init(&c->local);
	rh_tp_ranges_init(&c->peer);
	c->peer_max_msg = cfg->max_msg;
}

void rh_tp_conn_fini(struct rh_tp_conn *c)
{
	rh_tp_ranges_fini(&c->local);
	rh_tp_ranges_fini(&c->peer);
	memset(c->cfg.secret, 0, sizeof c->cfg.secret);
}

/* ---- connection setup ---- */

int rh_tp_listen(const rh_tp_opts *o, const char *host, uint16_t port, rh_tp_listener **out,
                 rh_error *err)
{
	struct rh_tp_cfg cfg;
	const struct rh_tp_provider *p;
	if (!out)
		return rh_err_set(err, RH_EINVAL, "transport: listen: no output pointer");
	*out = NULL;
	int rc = make_cfg(o, &cfg, &p, err);
	if (rc == RH_OK)
		rc = p->listen(&cfg, host, port, out, err);
	if (rc == RH_OK) {
		(*out)->ops = p;
		(*out)->cfg = cfg;
	}
	memset(cfg.secret, 0, sizeof cfg.secret);
	return rc;
}

uint16_t rh_tp_listener_port(const rh_tp_listener *l)
{
	return l ? l->ops->listener_port(l) : 0;
}

int rh_tp_accept(rh_tp_listener *l, int timeout_ms, rh_tp_conn **out, rh_error *err)
{
	if (!l || !out)
		return rh_err_set(err, RH_EINVAL, "transport: accept: NULL argument");
	*out = NULL;
	int rc = l->ops->accept(l, timeout_ms, out, err);
	if (rc == RH_OK)
		(*out)->ops = l->ops;
	return rc;
}

void rh_tp_listener_close(rh_tp_listener *l)
{
	if (l)
		l->ops->listener_close(l);
}

int rh_tp_connect(const rh_tp_opts *o, const char *host, uint16_t port, rh_tp_conn **out,
                  rh_error *err)
{
	struct rh_tp_cfg cfg;
	const struct rh_tp_provider *p;
	if (!out)
		return rh_err_set(err, RH_EINVAL, "transport: connect: no output pointer");
	*out = NULL;
	int rc = make_cfg(o, &cfg, &p, err);
	if (rc == RH_OK)
		rc = p->connect(&cfg, host, port, out, err);
	if (rc == RH_OK)
		(*out)->ops = p;
	memset(cfg.secret, 0, sizeof cfg.secret);
	return rc;
}

void rh_tp_close(rh_tp_conn *c)
{
	if (c)
		c->ops->close(c);
}

/* ---- memory ---- */

int rh_tp_reg(rh_tp_conn *c, void *addr, size_t len, int fd, uint64_t fd_off, unsigned flags,
              rh_error *err)
{
	if (!c || !addr || len == 0)
		return rh_err_set(err, RH_EINVAL,
		                  "transport: reg: NULL connection, address or length");
	if (flags == 0 || (flags & ~(RH_TP_LOCAL | RH_TP_REMOTE)))
		return rh_err_set(err, RH_EINVAL, "transport: reg: bad flags 0x%x", flags);
	struct rh_tp_range r = {.addr = (uint64_t)(uintptr_t)addr,
	                        .len = len,
	                        .flags = flags,
	                        .fd = fd,
	                        .fd_off = fd_off};
	/* Reject overlaps before the provider advertises anything. */
	if (rh_tp_ranges_overlap(&c->local, r.addr, len))
		return rh_err_set(err, RH_EINVAL,
		                  "transport: reg: %p+%zu overlaps a registered range", addr, len);
	int rc = c->ops->reg(c, &r, err);
	if (rc != RH_OK)
		return rc;
	rc = rh_tp_ranges_add(&c->local, &r, err);
	if (rc != RH_OK)
		c->ops->dereg(c, &r, NULL);
	return rc;
}

int rh_tp_dereg(rh_tp_conn *c, void *addr, size_t len, rh_error *err)
{
	if (!c)
		return rh_err_set(err, RH_EINVAL, "transport: dereg: NULL connection");
	struct rh_tp_range r;
	int rc = rh_tp_ranges_del(&c->local, (uint64_t)(uintptr_t)addr, len, &r, err);
	if (rc == RH_OK)
		rc = c->ops->dereg(c, &r, err);
	return rc;
}

/* ---- one-sided operations ---- */

static bool inside(const struct rh_tp_range *r, uint64_t addr, uint64_t len)
{
	return r->len && r->addr <= addr && addr + len >= addr && addr + len <= r->addr + r->len;
}

/* Fill s's remote part. *cache holds the last peer range found (len 0:
 * none), so a page batch inside one range costs one lookup. */
static int resolve_remote(rh_tp_conn *c, uint64_t remote, uint32_t len, struct rh_tp_range *cache,
                          struct rh_tp_seg *s, rh_error *err)
{
	if (!inside(cache, remote, len) &&
	    !rh_tp_ranges_find(&c->peer, remote, len, RH_TP_REMOTE, cache)) {
		cache->len = 0;
		return rh_err_set(err, RH_ERANGE,
		                  "transport: remote 0x%" PRIx64 "+%u is outside the peer's "
		                  "advertised ranges",
		                  remote, len);
	}
	s->remote = remote;
	s->len = len;
	s->rkey = cache->key;
	s->rmap = cache->map ? (char *)cache->map + (remote - cache->addr) : NULL;
	return RH_OK;
}

#define SEG_STACK 64

static int rw(rh_tp_conn *c, enum rh_tp_opcode op, const rh_tp_sge *sg, size_t n, uint64_t wr_id,
              rh_error *err)
{
	if (!c || !sg || n == 0)
		return rh_err_set(err, RH_EINVAL, "transport: %s: empty scatter/gather list",
		                  op == RH_TP_OP_READ ? "read" : "write");
	struct rh_tp_seg stack[SEG_STACK];
	struct rh_tp_seg *seg = n <= SEG_STACK ? stack : malloc(n * sizeof *seg);
	if (!seg)
		return rh_err_set(err, RH_ENOMEM, "transport: out of memory for %zu segments", n);
	int rc = RH_OK;
	struct rh_tp_range l = {0}, r = {0};
	for (size_t i = 0; i < n && rc == RH_OK; i++) {
		uint64_t la = (uint64_t)(uintptr_t)sg[i].local;
		if (sg[i].len == 0 || !sg[i].local) {
			rc = rh_err_set(err, RH_EINVAL, "transport: segment %zu is empty", i);
			break;
		}
		if (!inside(&l, la, sg[i].len) &&
		    !rh_tp_ranges_find(&c->local, la, sg[i].len, RH_TP_LOCAL, &l)) {
			rc = rh_err_set(err, RH_ERANGE,
			                "transport: local buffer %p+%u is not inside a range "
			                "registered with RH_TP_LOCAL",
			                sg[i].local, sg[i].len);
			break;
		}
		seg[i].local = sg[i].local;
		seg[i].lkey = l.key;
		rc = resolve_remote(c, sg[i].remote, sg[i].len, &r, &seg[i], err);
	}
	if (rc == RH_OK)
		rc = c->ops->rw(c, op, seg, n, wr_id, err);
	if (seg != stack)
		free(seg);
	return rc;
}

int rh_tp_read(rh_tp_conn *c, const rh_tp_sge *sg, size_t n, uint64_t wr_id, rh_error *err)
{
	return rw(c, RH_TP_OP_READ, sg, n, wr_id, err);
}

int rh_tp_write(rh_tp_conn *c, const rh_tp_sge *sg, size_t n, uint64_t wr_id, rh_error *err)
{
	return rw(c, RH_TP_OP_WRITE, sg, n, wr_id, err);
}

static int atomic(rh_tp_conn *c, enum rh_tp_opcode op, uint64_t remote, uint64_t a, uint64_t b,
                  uint64_t *old, uint64_t wr_id, rh_error *err)
{
	if (!c || (op != RH_TP_OP_WRITE8 && !old))
		return rh_err_set(err, RH_EINVAL, "transport: atomic: NULL argument");
	if (remote % 8)
		return rh_err_set(err, RH_EINVAL,
		                  "transport: 8-byte operation on unaligned remote 0x%" PRIx64,
		                  remote);
	struct rh_tp_seg s = {0};
	struct rh_tp_range r = {0};
	int rc = resolve_remote(c, remote, 8, &r, &s, err);
	if (rc == RH_OK)
		rc = c->ops->atomic(c, op, &s, a, b, old, wr_id, err);
	return rc;
}

int rh_tp_cas(rh_tp_conn *c, uint64_t remote, uint64_t expect, uint64_t desired, uint64_t *old,
              uint64_t wr_id, rh_error *err)
{
	return atomic(c, RH_TP_OP_CAS, remote, expect, desired, old, wr_id, err);
}

int rh_tp_faa(rh_tp_conn *c, uint64_t remote, uint64_t add, uint64_t *old, uint64_t wr_id,
              rh_error *err)
{
	return atomic(c, RH_TP_OP_FAA, remote, add, 0, old, wr_id, err);
}

int rh_tp_write8(rh_tp_conn *c, uint64_t remote, uint64_t val, uint64_t wr_id, rh_error *err)
{
	return atomic(c, RH_TP_OP_WRITE8, remote, val, 0, NULL, wr_id, err);
}

int rh_tp_poll(rh_tp_conn *c, rh_tp_completion *out, int max, rh_error *err)
{
	if (!c || (!out && max > 0) || max < 0) {
		rh_err_set(err, RH_EINVAL, "transport: poll: bad arguments");
		return -1;
	}
	return c->ops->poll(c, out, max, err);
}

/* A negative timeout means the connection's own: nothing blocks forever. */
static int bound(const rh_tp_conn *c, int timeout_ms)
{
	return timeout_ms < 0 ? (int)c->cfg.timeout_ms : timeout_ms;
}

int rh_tp_wait(rh_tp_conn *c, uint64_t wr_id, int timeout_ms, rh_error *err)
{
	if (!c)
		return rh_err_set(err, RH_EINVAL, "transport: wait: NULL connection");
	return c->ops->wait(c, wr_id, bound(c, timeout_ms), err);
}

/* ---- messages ---- */

int rh_tp_send(rh_tp_conn *c, const void *buf, size_t len, int timeout_ms, rh_error *err)
{
	if (!c || (!buf && len))
		return rh_err_set(err, RH_EINVAL, "transport: send: NULL argument");
	if (len > c->peer_max_msg || len > c->cfg.max_msg)
		return rh_err_set(err, RH_EINVAL,
		                  "transport: message of %zu bytes exceeds max_msg (%u here, %u at "
		                  "the peer)",
		                  len, c->cfg.max_msg, c->peer_max_msg);
	return c->ops->send(c, buf, len, bound(c, timeout_ms), err);
}

int rh_tp_recv(rh_tp_conn *c, void *buf, size_t cap, size_t *len, int timeout_ms, rh_error *err)
{
	if (!c || !len || (!buf && cap))
		return rh_err_set(err, RH_EINVAL, "transport: recv: NULL argument");
	return c->ops->recv(c, buf, cap, len, bound(c, timeout_ms), err);
}

int rh_tp_fd(rh_tp_conn *c)
{
	return c ? c->ops->fd(c) : -1;
}
