/* One-sided operations over tcp: the requester's side (post, complete) and
 * the owner's side (execute against registered memory, answer). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "transport/populate.h"
#include "transport/sock.h"
#include "transport/tcp/tcp.h"

struct tcp_pending {
	struct tcp_pending *next;
	uint64_t seq, wr_id;
	enum rh_tp_opcode op;
	uint64_t *old; /* atomics */
	size_t n;      /* READ: where the data goes */
	struct rh_tp_seg seg[];
};

/* ---- requester ---- */

/* Append a pending request; its sequence number goes to *seq. From then
 * on the record belongs to whoever unlinks it (answer or failure path). */
static bool pend_add(struct tcp_conn *t, enum rh_tp_opcode op, const struct rh_tp_seg *seg,
                     size_t n, uint64_t *old, uint64_t wr_id, uint64_t *seq)
{
	size_t keep = op == RH_TP_OP_READ ? n : 0;
	struct tcp_pending *p = malloc(sizeof *p + keep * sizeof *seg);
	if (!p)
		return false;
	p->next = NULL, p->wr_id = wr_id, p->op = op, p->old = old, p->n = keep;
	if (keep)
		memcpy(p->seg, seg, keep * sizeof *seg);
	pthread_mutex_lock(&t->plock);
	*seq = p->seq = t->next_seq++;
	struct tcp_pending **pp = &t->pending;
	while (*pp)
		pp = &(*pp)->next;
	*pp = p;
	pthread_mutex_unlock(&t->plock);
	return true;
}

/* Unlink by seq; NULL if already answered or failed. */
static struct tcp_pending *pend_take(struct tcp_conn *t, uint64_t seq)
{
	pthread_mutex_lock(&t->plock);
	struct tcp_pending *p = NULL;
	for (struct tcp_pending **pp = &t->pending; *pp; pp = &(*pp)->next) {
		if ((*pp)->seq == seq) {
			p = *pp;
			*pp = p->next;
			break;
		}
	}
	pthread_mutex_unlock(&t->plock);
	return p;
}

void tcp_fail_pending(struct rh_chan *ch)
{
	struct tcp_conn *t = ch->ctx;
	pthread_mutex_lock(&t->plock);
	struct tcp_pending *p = t->pending;
	t->pending = NULL;
	pthread_mutex_unlock(&t->plock);
	int code = __atomic_load_n(&ch->failed, __ATOMIC_ACQUIRE);
	code = code ? code : RH_EPEER;
	for (struct tcp_pending *n; p; p = n) {
		n = p->next;
		rh_cq_push(&t->cq, p->wr_id, code);
		free(p);
	}
	rh_chan_notify(ch);
}

void tcp_free_pending(struct tcp_conn *t)
{
	for (struct tcp_pending *p = t->pending, *n; p; p = n)
		n = p->next, free(p);
	t->pending = NULL;
}

/* Send a request frame; on failure withdraw it unless the failure path
 * already completed it (then the completion carries the error). */
static int post(struct tcp_conn *t, uint64_t seq, enum rh_tp_opcode op, struct iovec *v, int nv,
                size_t len, rh_error *err)
{
	struct rh_chan_hdr h = {.type = TCP_REQ, .arg = op, .wr_id = seq, .len = len};
	int rc = rh_chan_send(&t->ch, &h, v, nv, NULL, 0,
	                      rh_sock_deadline((int)t->base.cfg.timeout_ms), err);
	if (rc != RH_OK) {
		struct tcp_pending *q = pend_take(t, seq);
		if (!q)
			return RH_OK;
		free(q);
	}
	return rc;
}

int tcp_rw(rh_tp_conn *c, enum rh_tp_opcode op, const struct rh_tp_seg *seg, size_t n,
           uint64_t wr_id, rh_error *err)
{
	struct tcp_conn *t = (struct tcp_conn *)c;
	if (n > TCP_MAX_SGE)
		return rh_err_set(err, RH_EINVAL, "transport: tcp: %zu segments (max %d)", n,
		                  TCP_MAX_SGE);
	int rc = rh_chan_check(&t->ch, err);
	if (rc)
		return rc;
	/* header block: u32 n, u32 0, then the segment list */
	size_t hlen = 8 + n * sizeof(struct tcp_sge);
	uint8_t *hb = malloc(hlen);
	/* Data travels straight from the caller's buffers; iovecs beyond
	 * IOV_MAX are avoided by TCP_MAX_SGE < IOV_MAX only for small n, so
	 * large lists are gathered into one buffer. */
	bool gather = op == RH_TP_OP_WRITE && n > 256;
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += seg[i].len;
	uint8_t *gb = gather ? malloc(total) : NULL;
	struct iovec *v = malloc((n + 1) * sizeof *v);
	uint64_t seq;
	if (!hb || !v || (gather && !gb) || !pend_add(t, op, seg, n, NULL, wr_id, &seq)) {
		rc = rh_err_set(err, RH_ENOMEM, "transport: tcp: out of memory posting %zu segs",
		                n);
		goto out;
	}
	uint32_t n32 = (uint32_t)n, zero = 0;
	memcpy(hb, &n32, 4);
	memcpy(hb + 4, &zero, 4);
	for (size_t i = 0; i < n; i++) {
		struct tcp_sge s = {seg[i].remote, seg[i].len, 0};
		memcpy(hb + 8 + i * sizeof s, &s, sizeof s);
	}
	int nv = 1;
	v[0] = (struct iovec){hb, hlen};
	if (op == RH_TP_OP_WRITE && gather) {
		for (size_t i = 0, off = 0; i < n; off += seg[i].len, i++)
			memcpy(gb + off, seg[i].local, seg[i].len);
		v[nv++] = (struct iovec){gb, total};
	} else if (op == RH_TP_OP_WRITE) {
		for (size_t i = 0; i < n; i++)
			v[nv++] = (struct iovec){seg[i].local, seg[i].len};
	}
	rc = post(t, seq, op, v, nv, hlen + (op == RH_TP_OP_WRITE ? total : 0), err);
out:
	free(hb);
	free(gb);
	free(v);
	return rc;
}

int tcp_atomic(rh_tp_conn *c, enum rh_tp_opcode op, const struct rh_tp_seg *seg, uint64_t a,
               uint64_t b, uint64_t *old, uint64_t wr_id, rh_error *err)
{
	struct tcp_conn *t = (struct tcp_conn *)c;
	int rc = rh_chan_check(&t->ch, err);
	if (rc)
		return rc;
	uint64_t seq;
	if (!pend_add(t, op, NULL, 0, old, wr_id, &seq))
		return rh_err_set(err, RH_ENOMEM, "transport: tcp: out of memory");
	struct tcp_atomic body = {seg->remote, a, b};
	struct iovec v = {&body, sizeof body};
	return post(t, seq, op, &v, 1, sizeof body, err);
}

/* Receive thread: the answer to one of our requests. */
static int on_resp(struct tcp_conn *t, const struct rh_chan_hdr *h, rh_error *err)
{
	struct tcp_pending *p = pend_take(t, h->wr_id);
	if (!p)
		return rh_err_set(err, RH_EPEER,
		                  "transport: tcp: answer to unknown request %" PRIu64, h->wr_id);
	int rc = RH_OK;
	uint64_t got = 0;
	if (h->arg == RH_OK && p->op == RH_TP_OP_READ) {
		for (size_t i = 0; i < p->n && rc == RH_OK; i++) {
			got += p->seg[i].len;
			if (got <= h->len)
				rc = rh_chan_read(&t->ch, p->seg[i].local, p->seg[i].len, err);
		}
	} else if (h->arg == RH_OK && p->old) {
		got = 8;
		if (h->len == 8)
			rc = rh_chan_read(&t->ch, p->old, 8, err);
	}
	if (rc == RH_OK && got != h->len)
		rc = rh_err_set(err, RH_EPEER,
		                "transport: tcp: malformed answer (%" PRIu64
		                " bytes, expected %" PRIu64 ")",
		                h->len, got);
	/* Complete even when the stream broke: the failure path no longer
	 * sees this request. */
	rh_cq_push(&t->cq, p->wr_id, rc == RH_OK ? (int)h->arg : rc);
	free(p);
	/* No rh_chan_notify: rh_tp_fd is for messages (docs/transport.md).
	 * The runtime's monitor polls it, and a write per completion woke
	 * that thread once per remote read, i.e. per fault. */
	return rc;
}

/* ---- owner (the NIC's role) ---- */

static void answer(struct tcp_conn *t, uint64_t seq, int status, struct iovec *v, int nv,
                   size_t len)
{
	struct rh_chan_hdr h = {
	        .type = TCP_RESP, .arg = (uint32_t)status, .wr_id = seq, .len = len};
	rh_chan_reply(&t->ch, &h, v, nv);
}

/* READ data goes out zero-copy unless the list is too long for one
 * sendmsg (IOV_MAX); then it is gathered first. */
static void answer_data(struct tcp_conn *t, uint64_t seq, struct iovec *v, uint32_t n,
                        uint64_t total)
{
	if (n <= 256) {
		answer(t, seq, RH_OK, v, (int)n, total);
		return;
	}
	uint8_t *buf = malloc(total);
	if (!buf) {
		answer(t, seq, RH_ENOMEM, NULL, 0, 0);
		return;
	}
	size_t off = 0;
	for (uint32_t i = 0; i < n; off += v[i].iov_len, i++)
		memcpy(buf + off, v[i].iov_base, v[i].iov_len);
	struct iovec one = {buf, total};
	answer(t, seq, RH_OK, &one, 1, total);
	free(buf);
}

static bool allowed(struct tcp_conn *t, uint64_t addr, uint64_t len)
{
	return rh_tp_ranges_find(&t->base.local, addr, len, RH_TP_REMOTE, NULL);
}

static int skip(struct rh_chan *ch, uint64_t len, rh_error *err)
{
	uint8_t buf[4096];
	while (len > 0) {
		size_t k = len < sizeof buf ? len : sizeof buf;
		int rc = rh_chan_read(ch, buf, k, err);
		if (rc != RH_OK)
			return rc;
		len -= k;
	}
	return RH_OK;
}

static int exec_rw(struct tcp_conn *t, const struct rh_chan_hdr *h, rh_error *err)
{
	uint32_t hdr[2];
	if (h->len < 8)
		return rh_err_set(err, RH_EPEER, "transport: tcp: short request");
	int rc = rh_chan_read(&t->ch, hdr, 8, err);
	if (rc != RH_OK)
		return rc;
	uint32_t n = hdr[0];
	if (n == 0 || n > TCP_MAX_SGE || h->len < 8 + (uint64_t)n * sizeof(struct tcp_sge))
		return rh_err_set(err, RH_EPEER, "transport: tcp: malformed request (%u segs)", n);
	struct tcp_sge *s = malloc(n * sizeof *s);
	struct iovec *v = malloc(n * sizeof *v);
	if (!s || !v) {
		free(s);
		free(v);
		return rh_err_set(err, RH_ENOMEM, "transport: tcp: out of memory");
	}
	rc = rh_chan_read(&t->ch, s, n * sizeof *s, err);
	uint64_t total = 0;
	int status = RH_OK;
	for (uint32_t i = 0; i < n && rc == RH_OK; i++) {
		total += s[i].len;
		if (status == RH_OK && !allowed(t, s[i].remote, s[i].len))
			status = RH_ERANGE;
		v[i] = (struct iovec){(void *)(uintptr_t)s[i].remote, s[i].len};
	}
	uint64_t data = h->len - 8 - (uint64_t)n * sizeof *s;
	if (rc == RH_OK && h->arg == RH_TP_OP_WRITE && data != total)
		rc = rh_err_set(err, RH_EPEER, "transport: tcp: write carries wrong data length");
	if (rc == RH_OK && h->arg == RH_TP_OP_WRITE) {
		if (status == RH_OK) { /* transport.P1 */
			rh_tp_run run = rh_tp_run_begin(true);
			for (uint32_t i = 0; i < n; i++)
				rh_tp_run_add(&run, (uintptr_t)v[i].iov_base, v[i].iov_len);
			rh_tp_run_end(&run);
		}
		for (uint32_t i = 0; i < n && rc == RH_OK; i++)
			rc = status == RH_OK
			             ? rh_chan_read(&t->ch, v[i].iov_base, v[i].iov_len, err)
			             : skip(&t->ch, v[i].iov_len, err);
		if (rc == RH_OK)
			answer(t, h->wr_id, status, NULL, 0, 0);
	} else if (rc == RH_OK) {
		if (data != 0)
			rc = rh_err_set(err, RH_EPEER, "transport: tcp: read carries data");
		else if (status != RH_OK)
			answer(t, h->wr_id, status, NULL, 0, 0);
		else
			answer_data(t, h->wr_id, v, n, total);
	}
	free(s);
	free(v);
	return rc;
}

static int exec_atomic(struct tcp_conn *t, const struct rh_chan_hdr *h, rh_error *err)
{
	struct tcp_atomic a;
	if (h->len != sizeof a)
		return rh_err_set(err, RH_EPEER, "transport: tcp: malformed atomic request");
	int rc = rh_chan_read(&t->ch, &a, sizeof a, err);
	if (rc != RH_OK)
		return rc;
	if (a.remote % 8 || !allowed(t, a.remote, 8)) {
		answer(t, h->wr_id, RH_ERANGE, NULL, 0, 0);
		return RH_OK;
	}
	uint64_t *p = (uint64_t *)(uintptr_t)a.remote, old = 0;
	switch (h->arg) {
	case RH_TP_OP_CAS:
		old = a.a;
		__atomic_compare_exchange_n(p, &old, a.b, false, __ATOMIC_SEQ_CST,
		                            __ATOMIC_SEQ_CST);
		break;
	case RH_TP_OP_FAA:
		old = __atomic_fetch_add(p, a.a, __ATOMIC_SEQ_CST);
		break;
	default: /* WRITE8 */
		__atomic_store_n(p, a.a, __ATOMIC_SEQ_CST);
		answer(t, h->wr_id, RH_OK, NULL, 0, 0);
		return RH_OK;
	}
	struct iovec v = {&old, 8};
	answer(t, h->wr_id, RH_OK, &v, 1, 8);
	return RH_OK;
}

static int on_ad(struct tcp_conn *t, const struct rh_chan_hdr *h, rh_error *err)
{
	struct tcp_range r;
	if (h->len != sizeof r)
		return rh_err_set(err, RH_EPEER, "transport: tcp: malformed advertisement");
	int rc = rh_chan_read(&t->ch, &r, sizeof r, err);
	if (rc != RH_OK)
		return rc;
	if (h->type == TCP_UNAD)
		return rh_tp_ranges_del(&t->base.peer, r.addr, r.len, NULL, err) == RH_OK
		               ? RH_OK
		               : rh_err_set(err, RH_EPEER,
		                            "transport: tcp: peer withdrew an "
		                            "unknown range");
	struct rh_tp_range pr = {.addr = r.addr, .len = r.len, .flags = RH_TP_REMOTE, .fd = -1};
	rc = rh_tp_ranges_add(&t->base.peer, &pr, err);
	if (rc != RH_OK && err)
		err->code = RH_EPEER; /* a peer advertising overlaps is broken */
	return rc == RH_OK ? RH_OK : RH_EPEER;
}

int tcp_on_frame(struct rh_chan *ch, const struct rh_chan_hdr *h, rh_error *err)
{
	struct tcp_conn *t = ch->ctx;
	switch (h->type) {
	case TCP_REQ:
		if (h->arg == RH_TP_OP_READ || h->arg == RH_TP_OP_WRITE)
			return exec_rw(t, h, err);
		if (h->arg >= RH_TP_OP_CAS && h->arg <= RH_TP_OP_WRITE8)
			return exec_atomic(t, h, err);
		return rh_err_set(err, RH_EPEER, "transport: tcp: unknown opcode %u", h->arg);
	case TCP_RESP:
		return on_resp(t, h, err);
	case TCP_AD:
	case TCP_UNAD:
		return on_ad(t, h, err);
	default:
		return rh_err_set(err, RH_EPEER, "transport: tcp: unknown frame type %u", h->type);
	}
}
