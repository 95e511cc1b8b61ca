/* libFuzzer harness for the verbs provider's message parser:
 * rh_vb_on_recv and rh_vb_recv_msg in transport/verbs/verbs_msg.c (message
 * kind from the immediate, advertisements and withdrawals of struct
 * vb_advert into the peer range table, the ready queue of user and
 * handshake messages) and rh_vb_read_ctrs (the counters a peer
 * RDMA-WRITEs into our memory). The rest of the provider (verbs_conn.c,
 * verbs_cq.c: device, queue pairs, the progress thread) is stubbed below.
 *
 * The NIC is modelled, not the peer's honesty: 8 receive buffers of 512
 * bytes are posted in order; a completion fills the oldest posted buffer
 * with at most 512 bytes (what the hardware guarantees), and a buffer is
 * posted again only when rh_vb_post_recv says so. What the bytes, the
 * immediate, the status and the counters say is the peer's.
 *
 * An input is records of 4 bytes plus data: u8 op, u8 imm, u16 length
 * (LE), then that many bytes. op bit 7 clear: a completion with that
 * immediate (op bit 0 set: without one; op bits 1-2 nonzero: a failed
 * status); op bit 7 set: the application takes a message (bit 0: a
 * handshake message, else a user message); the data goes into the peer's
 * counters instead when op bit 6 is set, and rh_vb_read_ctrs runs.
 *
 * Properties beyond memory safety and leaks: the ready queue never holds
 * more than the buffers that exist, nor a message longer than a buffer; a
 * buffer is never posted twice; counters read only grow; once the
 * connection is dead nothing more is taken.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/verbs/verbs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NBUF 8u
#define SLOT 512u

static struct {
	uint32_t fifo[NBUF]; /* posted buffers, oldest first */
	uint32_t head, n;
	bool posted[NBUF];
} nic;

/* ---- the rest of the provider ---- */

void rh_vb_die(struct vb_conn *c, int code, const char *fmt, ...)
{
	if (c->dead)
		return;
	c->dead = code;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->why, sizeof c->why, fmt, ap);
	va_end(ap);
}

int rh_vb_peer_error(struct vb_conn *c, rh_error *err)
{
	return rh_err_set(err, c->dead ? c->dead : RH_EPEER, "verbs: %s", c->why);
}

void rh_vb_app_notify(struct vb_conn *c)
{
	(void)c;
}

void rh_vb_app_maybe_clear(struct vb_conn *c)
{
	(void)c;
}

uint64_t rh_vb_deadline(int timeout_ms)
{
	return rh_now_ns() + (uint64_t)timeout_ms * 1000000ull;
}

int rh_vb_wait_for(struct vb_conn *c, vb_ready_fn ready, const void *arg, bool polls_memory,
                   uint64_t deadline_ns)
{
	(void)polls_memory, (void)deadline_ns;
	if (c->dead)
		return c->dead;
	return ready(c, arg) ? RH_OK : RH_ETIMEDOUT;
}

int rh_vb_sq_reserve(struct vb_conn *c, uint32_t n, uint64_t deadline_ns, rh_error *err)
{
	(void)c, (void)n, (void)deadline_ns, (void)err;
	return RH_OK;
}

int rh_vb_post(struct vb_conn *c, struct ibv_send_wr *first, rh_error *err)
{
	(void)c, (void)first, (void)err;
	return RH_OK;
}

static int post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	(void)qp, (void)bad;
	uint32_t b = VB_WRID_IDX(wr->wr_id);
	if (b >= NBUF || nic.posted[b] || nic.n == NBUF)
		rh_panic("fuzz-verbs: buffer %u posted while it is posted already", b);
	nic.posted[b] = true;
	nic.fifo[(nic.head + nic.n++) % NBUF] = b;
	return 0;
}

/* ---- the harness ---- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ibv_context ctx;
	static struct ibv_qp qp;
	static struct ibv_mr mr;
	static struct vb_ctrs ctrs[2];
	static uint8_t rbuf[NBUF * SLOT];
	ctx.ops.post_recv = post_recv;
	qp.context = &ctx;
	struct vb_conn *c = calloc(1, sizeof *c);
	struct vb_rmsg *ready = calloc(NBUF, sizeof *ready);
	if (!c || !ready)
		rh_panic("fuzz-verbs: out of memory");
	c->base.cfg.max_msg = SLOT;
	rh_tp_ranges_init(&c->base.local);
	rh_tp_ranges_init(&c->base.peer);
	c->qp = &qp;
	c->rbuf = rbuf;
	c->rbuf_mr = &mr;
	c->ctrs_mr = &mr;
	c->rslot = SLOT;
	c->nrbuf = NBUF;
	c->user_credits = NBUF - 2;
	c->internal_credits = 2;
	c->ready = ready;
	c->ctrs_in = ctrs;
	c->sq_depth = 16;
	memset(ctrs, 0, sizeof ctrs);
	memset(&nic, 0, sizeof nic);
	for (uint32_t b = 0; b < NBUF; b++)
		rh_vb_post_recv(c, b);
	struct vb_ctrs last = {0};
	for (size_t i = 0; i + 4 <= size && !c->dead;) {
		uint8_t op = data[i], imm = data[i + 1];
		size_t len = (size_t)data[i + 2] | (size_t)data[i + 3] << 8;
		i += 4;
		if (len > size - i)
			len = size - i;
		const uint8_t *bytes = data + i;
		i += len;
		if (op & 0x40) {
			memcpy(ctrs, bytes, len < sizeof ctrs[0] ? len : sizeof ctrs[0]);
			rh_vb_read_ctrs(c);
			if (c->peer.user_posted < last.user_posted ||
			    c->peer.internal_posted < last.internal_posted ||
			    c->peer.acked < last.acked)
				rh_panic("fuzz-verbs: the peer's counters went back");
			last = c->peer;
		} else if (op & 0x80) {
			uint8_t out[SLOT];
			size_t got;
			rh_error err;
			uint32_t before = c->ready_n;
			int rc = rh_vb_recv_msg(c, op & 1 ? VB_MSG_AUTH : VB_MSG_USER, out,
			                        sizeof out, &got, 0, &err);
			if (rc == RH_OK && (c->ready_n != before - 1 || got > SLOT))
				rh_panic("fuzz-verbs: a message of %zu bytes taken, queue %u -> %u",
				         got, before, c->ready_n);
		} else {
			if (!nic.n)
				continue; /* no buffer posted: the NIC would not deliver */
			uint32_t b = nic.fifo[nic.head];
			nic.head = (nic.head + 1) % NBUF;
			nic.n--;
			nic.posted[b] = false;
			size_t n = len < SLOT ? len : SLOT;
			memcpy(rbuf + (size_t)b * SLOT, bytes, n);
			struct ibv_wc wc = {.wr_id = VB_WRID(VB_WR_RECV, b, 0),
			                    .status = op & 6 ? IBV_WC_LOC_LEN_ERR : IBV_WC_SUCCESS,
			                    .byte_len = (uint32_t)n,
			                    .imm_data = htonl(imm),
			                    .wc_flags = op & 1 ? 0 : IBV_WC_WITH_IMM};
			rh_vb_on_recv(c, &wc);
		}
		if (c->ready_n > NBUF)
			rh_panic("fuzz-verbs: %u messages ready in %u buffers", c->ready_n, NBUF);
		for (uint32_t k = 0; k < c->ready_n; k++)
			if (c->ready[(c->ready_head + k) % NBUF].len > SLOT)
				rh_panic("fuzz-verbs: a ready message is longer than its buffer");
	}
	rh_tp_ranges_fini(&c->base.local);
	rh_tp_ranges_fini(&c->base.peer);
	free(ready);
	free(c);
	return 0;
}
