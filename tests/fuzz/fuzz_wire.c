/* libFuzzer harness for what a transport peer's bytes reach after the
 * handshake: the channel framing (transport/chan.c: SETUP, then MSG and
 * CREDIT), and with WIRE_TCP the tcp provider's frames (tcp_ops.c: REQ
 * READ/WRITE/atomics against a registered range, RESP to requests of ours,
 * AD/UNAD), with WIRE_SHM the shm provider's (shm.c: AD with a passed fd,
 * UNAD). Built three times (fuzz-chan, fuzz-tcp, fuzz-shm).
 *
 * The input is what the peer writes, in chunks: u8 flags, u16 length
 * (little-endian), then that many bytes; flags bit 0 passes a 64 KiB memfd
 * with the chunk, bit 1 /dev/null (SCM_RIGHTS, shm only). A feeder thread
 * writes them into one end of a Unix socketpair; the channel's own
 * receive loop (rx_main, reached by compiling chan.c into the harness)
 * runs on the other end until the stream ends or it refuses something.
 *
 * Properties beyond memory safety and leaks: the stream always ends in a
 * failed channel; the queue never holds more messages than our credits or
 * one longer than max_msg; tcp: nothing outside the registered range is
 * written (it sits between PROT_NONE guard pages at a fixed address, so
 * seeds can name it, and a write past it faults); shm: every advertised
 * range kept is backed by a mapping of its length.
 */
#include <fcntl.h>
#include <sys/mman.h>

#include "transport/chan.c"

#if defined(WIRE_TCP)
#include "transport/tcp/tcp.h"
#elif defined(WIRE_SHM)
#include "transport/shm/shm.c"

/* transport.c's, without the provider table it brings along. */
void rh_tp_conn_init(struct rh_tp_conn *c, const struct rh_tp_cfg *cfg)
{
	c->cfg = *cfg;
	rh_tp_ranges_init(&c->local);
	rh_tp_ranges_init(&c->peer);
	c->peer_max_msg = cfg->max_msg;
}

void rh_tp_conn_fini(struct rh_tp_conn *c)
{
	rh_tp_ranges_fini(&c->local);
	rh_tp_ranges_fini(&c->peer);
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RANGE_BASE 0x4a0000000000ull
#define RANGE_LEN 16384ull
#define PG 4096ull

typedef struct feed {
	int fd;
	const uint8_t *data;
	size_t size;
} feed;

static void *feeder(void *arg)
{
	feed *f = arg;
	size_t i = 0;
	while (i + 3 <= f->size) {
		uint8_t flags = f->data[i];
		size_t len = (size_t)f->data[i + 1] | (size_t)f->data[i + 2] << 8;
		i += 3;
		if (len > f->size - i)
			len = f->size - i;
		int fds[1], nfds = 0;
#ifdef WIRE_SHM
		if (flags & 1) {
			fds[0] = memfd_create("fuzz-wire", MFD_CLOEXEC);
			if (fds[0] >= 0 && ftruncate(fds[0], 65536) == 0)
				nfds = 1;
		} else if (flags & 2) {
			fds[0] = open("/dev/null", O_RDWR | O_CLOEXEC);
			nfds = fds[0] >= 0;
		}
#else
		(void)flags;
#endif
		/* An fd needs at least one byte to travel with: a zero byte
		 * of our own, which the channel then reads as stream data. */
		static const uint8_t zero;
		struct iovec v = {(void *)(len ? f->data + i : &zero), len ? len : 1};
		char cbuf[CMSG_SPACE(sizeof(int))];
		struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};
		if (nfds) {
			m.msg_control = cbuf;
			m.msg_controllen = sizeof cbuf;
			struct cmsghdr *c = CMSG_FIRSTHDR(&m);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(c), fds, sizeof(int));
		}
		ssize_t w = len || nfds ? sendmsg(f->fd, &m, MSG_NOSIGNAL) : 0;
		if (nfds)
			close(fds[0]);
		i += len;
		if (w < 0)
			break; /* the channel failed and shut its end down */
	}
	shutdown(f->fd, SHUT_WR);
	return NULL;
}

/* The peer's side of the socket: our SETUP and replies land here. Drained
 * after the run; only its size matters. */
static void drain(int fd)
{
	uint8_t buf[4096];
	while (recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0)
		;
}

static void check_queue(struct rh_chan *ch)
{
	uint32_t n = 0;
	for (struct rh_chan_msg *m = ch->head; m; m = m->next, n++)
		if (m->len > ch->conn->cfg.max_msg)
			rh_panic("fuzz-wire: a %zu-byte message was queued (max %u)", m->len,
			         ch->conn->cfg.max_msg);
	if (n != ch->queued || n > ch->conn->cfg.msg_credits)
		rh_panic("fuzz-wire: %u messages queued, count says %u, credits %u", n, ch->queued,
		         ch->conn->cfg.msg_credits);
}

#if defined(WIRE_TCP)
static uint8_t *range_map(void)
{
	static uint8_t *base;
	if (!base) {
		void *p = mmap((void *)(uintptr_t)(RANGE_BASE - PG), RANGE_LEN + 2 * PG, PROT_NONE,
		               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (p == MAP_FAILED || p != (void *)(uintptr_t)(RANGE_BASE - PG))
			rh_panic("fuzz-wire: cannot map the range at %#llx", RANGE_BASE);
		base = (uint8_t *)(uintptr_t)RANGE_BASE;
		if (mprotect(base, RANGE_LEN, PROT_READ | PROT_WRITE) != 0)
			rh_panic("fuzz-wire: mprotect");
	}
	for (uint64_t i = 0; i < RANGE_LEN; i++)
		base[i] = (uint8_t)(i * 7 + 1);
	return base;
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return 0;
	struct rh_tp_cfg cfg = {
	        .provider = "fuzz", .timeout_ms = 1000, .max_msg = 4096, .msg_credits = 8};
	rh_error err;
#if defined(WIRE_TCP)
	uint8_t *range = range_map();
	struct tcp_conn *t = calloc(1, sizeof *t);
	struct rh_tp_conn *conn = &t->base;
	struct rh_chan *ch = &t->ch;
#elif defined(WIRE_SHM)
	struct shm_conn *s = calloc(1, sizeof *s);
	struct rh_tp_conn *conn = &s->base;
	struct rh_chan *ch = &s->ch;
#else
	struct rh_tp_conn *conn = calloc(1, sizeof *conn);
	struct rh_chan *ch = calloc(1, sizeof *ch);
#endif
	conn->cfg = cfg;
	rh_tp_ranges_init(&conn->local);
	rh_tp_ranges_init(&conn->peer);
	if (rh_chan_init(ch, sv[0], conn, &err) != RH_OK)
		rh_panic("fuzz-wire: %s", err.msg);
#if defined(WIRE_TCP)
	rh_cq_init(&t->cq);
	pthread_mutex_init(&t->plock, NULL);
	ch->ctx = t;
	ch->on_frame = tcp_on_frame;
	ch->on_fail = tcp_fail_pending;
	struct rh_tp_range r = {.addr = RANGE_BASE,
	                        .len = RANGE_LEN,
	                        .flags = RH_TP_LOCAL | RH_TP_REMOTE,
	                        .fd = -1};
	rh_tp_ranges_add(&conn->local, &r, NULL);
#elif defined(WIRE_SHM)
	rh_cq_init(&s->cq);
	pthread_mutex_init(&s->mlock, NULL);
	ch->ctx = s;
	ch->on_frame = shm_on_frame;
	ch->on_fail = shm_on_fail;
#endif
	feed f = {sv[1], data, size};
	pthread_t th;
	if (pthread_create(&th, NULL, feeder, &f) != 0)
		rh_panic("fuzz-wire: cannot start the feeder");
	/* SETUP comes first, outside the receive loop, as in setup(). */
	int rc = rh_chan_setup(ch, rh_now_ns() + 1000000000ull, &err);
#if defined(WIRE_TCP)
	/* Requests of ours for the peer's RESP frames to answer (seq 1-3):
	 * a READ into the upper half of the range, a WRITE from it, a CAS. */
	if (rc == RH_OK) {
		struct rh_tp_seg seg = {
		        .local = range + RANGE_LEN / 2, .remote = 0x1000, .len = 256};
		uint64_t old;
		tcp_rw(conn, RH_TP_OP_READ, &seg, 1, 1, NULL);
		tcp_rw(conn, RH_TP_OP_WRITE, &seg, 1, 2, NULL);
		tcp_atomic(conn, RH_TP_OP_CAS, &seg, 0, 1, &old, 3, NULL);
	}
#endif
	if (rc == RH_OK)
		rx_main(ch);
	else
		/* A refused SETUP ends the connection: its owner closes the
		 * socket (rh_chan_fini), so a peer still writing gets EPIPE
		 * instead of blocking on a full buffer nobody reads. */
		shutdown(sv[0], SHUT_RDWR);
	pthread_join(th, NULL);
	if (rc == RH_OK && !ch->failed)
		rh_panic("fuzz-wire: the stream ended and the channel did not fail");
	check_queue(ch);
	size_t len;
	uint8_t buf[4096];
	while (rh_chan_msg_recv(ch, buf, sizeof buf, &len, 0, NULL) == RH_OK)
		;
	drain(sv[1]);
	close(sv[1]);
#if defined(WIRE_TCP)
	tcp_free_pending(t);
	rh_cq_fini(&t->cq);
	pthread_mutex_destroy(&t->plock);
	rh_chan_fini(ch);
#elif defined(WIRE_SHM)
	struct rh_tp_range pr;
	pthread_mutex_lock(&conn->peer.lock);
	for (size_t i = 0; i < conn->peer.n; i++) {
		pr = conn->peer.v[i];
		bool backed = false;
		for (size_t k = 0; k < s->nmaps && !backed; k++)
			backed = (uint8_t *)pr.map >= (uint8_t *)s->maps[k].base &&
			         (uint8_t *)pr.map + pr.len <=
			                 (uint8_t *)s->maps[k].base + s->maps[k].len;
		if (!backed)
			rh_panic("fuzz-wire: peer range %#llx+%llu has no mapping behind it",
			         (unsigned long long)pr.addr, (unsigned long long)pr.len);
	}
	pthread_mutex_unlock(&conn->peer.lock);
	rh_chan_fini(ch);
	unmap_all(s);
	rh_cq_fini(&s->cq);
	pthread_mutex_destroy(&s->mlock);
#else
	rh_chan_fini(ch);
	free(ch);
#endif
	rh_tp_ranges_fini(&conn->local);
	rh_tp_ranges_fini(&conn->peer);
	free(conn);
	return 0;
}
