#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/common.h"
#include "transport/chan.h"
#include "transport/sock.h"

#define RBUF 65536

struct rh_chan_msg {
	struct rh_chan_msg *next;
	size_t len;
	uint8_t data[];
};

struct rh_chan_out {
	struct rh_chan_out *next;
	size_t len, off;
	uint8_t data[];
};

int rh_chan_init(struct rh_chan *ch, int fd, struct rh_tp_conn *conn, rh_error *err)
{
	memset(ch, 0, sizeof *ch);
	ch->fd = fd;
	ch->conn = conn;
	ch->rbuf = malloc(RBUF);
	ch->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!ch->rbuf || ch->evfd < 0) {
		free(ch->rbuf);
		if (ch->evfd >= 0)
			close(ch->evfd);
		return rh_err_set(err, RH_ENOMEM, "transport: out of memory for a channel");
	}
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&ch->cond, &a);
	pthread_condattr_destroy(&a);
	pthread_mutex_init(&ch->lock, NULL);
	pthread_mutex_init(&ch->send_lock, NULL);
	return RH_OK;
}

void rh_chan_notify(struct rh_chan *ch)
{
	/* A system call per event only once someone asked for the fd. */
	if (!__atomic_load_n(&ch->evfd_used, __ATOMIC_ACQUIRE))
		return;
	uint64_t one = 1;
	ssize_t w = write(ch->evfd, &one, sizeof one);
	(void)w; /* a saturated counter is still readable */
}

int rh_chan_fd(struct rh_chan *ch)
{
	__atomic_store_n(&ch->evfd_used, true, __ATOMIC_RELEASE);
	rh_chan_notify(ch);
	return ch->evfd;
}

void rh_chan_fail(struct rh_chan *ch, int code, const char *msg)
{
	pthread_mutex_lock(&ch->lock);
	bool first = !ch->failed;
	if (first) {
		__atomic_store_n(&ch->failed, code ? code : RH_EIO, __ATOMIC_RELEASE);
		rh_err_set(&ch->fail_err, code, "%s", msg);
		pthread_cond_broadcast(&ch->cond);
	}
	pthread_mutex_unlock(&ch->lock);
	if (first) {
		rh_log(RH_LOG_DEBUG, "transport", "connection failed: %s", msg);
		shutdown(ch->fd, SHUT_RDWR); /* wakes the receive thread, tells the peer */
		if (ch->on_fail)
			ch->on_fail(ch);
		rh_chan_notify(ch);
	}
}

int rh_chan_check(struct rh_chan *ch, rh_error *err)
{
	if (!__atomic_load_n(&ch->failed, __ATOMIC_ACQUIRE))
		return RH_OK; /* the common case, without the lock */
	pthread_mutex_lock(&ch->lock);
	int rc = ch->failed;
	if (rc && err)
		*err = ch->fail_err;
	pthread_mutex_unlock(&ch->lock);
	return rc;
}

static size_t iov_total(const struct iovec *iov, int n)
{
	size_t t = 0;
	for (int i = 0; i < n; i++)
		t += iov[i].iov_len;
	return t;
}

/* With send_lock held: write out the deferred frames. */
static int flush_deferred(struct rh_chan *ch, uint64_t deadline, rh_error *err)
{
	for (;;) {
		pthread_mutex_lock(&ch->lock);
		struct rh_chan_out *o = ch->out_head;
		pthread_mutex_unlock(&ch->lock);
		if (!o)
			return RH_OK;
		int rc = rh_sock_send(ch->fd, o->data + o->off, o->len - o->off, deadline, err);
		if (rc != RH_OK)
			return rc;
		pthread_mutex_lock(&ch->lock);
		ch->out_head = o->next;
		if (!ch->out_head)
			ch->out_tail = NULL;
		pthread_mutex_unlock(&ch->lock);
		free(o);
	}
}

int rh_chan_send(struct rh_chan *ch, const struct rh_chan_hdr *h, struct iovec *iov, int n,
                 const int *fds, int nfds, uint64_t deadline, rh_error *err)
{
	struct iovec v[n + 1];
	v[0] = (struct iovec){(void *)h, sizeof *h};
	if (n > 0)
		memcpy(v + 1, iov, sizeof *iov * (size_t)n);
	size_t total = iov_total(v, n + 1);
	int rc = rh_chan_check(ch, err);
	if (rc)
		return rc;
	pthread_mutex_lock(&ch->send_lock);
	rc = flush_deferred(ch, deadline, err);
	/* flush_deferred does not record partial progress: any failure there
	 * leaves the stream unusable. */
	bool broken = rc != RH_OK;
	if (rc == RH_OK)
		rc = rh_sock_sendv(ch->fd, v, n + 1, fds, nfds, deadline, err);
	pthread_mutex_unlock(&ch->send_lock);
	/* A frame cut in the middle cannot be resumed by anyone else. */
	if (rc == RH_EPEER && !broken) {
		/* The peer closed: stop writing, but let the receive thread
		 * deliver what the peer sent before closing (often the reason
		 * why); it fails the channel when it reaches the end. */
		shutdown(ch->fd, SHUT_WR);
	} else if (rc != RH_OK && (broken || rc != RH_ETIMEDOUT || iov_total(v, n + 1) != total)) {
		rh_chan_fail(ch, rc, err ? err->msg : "transport: send failed");
	}
	return rc;
}

static void defer(struct rh_chan *ch, const struct iovec *v, int n)
{
	size_t len = iov_total(v, n);
	struct rh_chan_out *o = malloc(sizeof *o + len);
	if (!o) {
		rh_chan_fail(ch, RH_ENOMEM, "transport: out of memory for a reply");
		return;
	}
	o->next = NULL, o->len = len, o->off = 0;
	for (int i = 0, p = 0; i < n; p += (int)v[i].iov_len, i++)
		memcpy(o->data + p, v[i].iov_base, v[i].iov_len);
	pthread_mutex_lock(&ch->lock);
	if (ch->out_tail)
		ch->out_tail->next = o;
	else
		ch->out_head = o;
	ch->out_tail = o;
	pthread_cond_broadcast(&ch->cond);
	pthread_mutex_unlock(&ch->lock);
}

void rh_chan_reply(struct rh_chan *ch, const struct rh_chan_hdr *h, struct iovec *iov, int n)
{
	struct iovec v[n + 1];
	v[0] = (struct iovec){(void *)h, sizeof *h};
	if (n > 0)
		memcpy(v + 1, iov, sizeof *iov * (size_t)n);
	int cnt = n + 1;
	if (pthread_mutex_trylock(&ch->send_lock) == 0) {
		pthread_mutex_lock(&ch->lock);
		bool empty = !ch->out_head;
		pthread_mutex_unlock(&ch->lock);
		if (empty) {
			struct msghdr m = {.msg_iov = v, .msg_iovlen = (size_t)cnt};
			ssize_t w = sendmsg(ch->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
			size_t left = w > 0 ? (size_t)w : 0;
			while (cnt > 0 && left >= v[0].iov_len)
				left -= v[0].iov_len, memmove(v, v + 1, sizeof *v * (size_t)--cnt);
			if (cnt > 0) {
				v[0].iov_base = (char *)v[0].iov_base + left;
				v[0].iov_len -= left;
			}
		}
		/* Queue the rest while still holding send_lock so nothing
		 * can slip in behind a partial frame. */
		if (cnt > 0)
			defer(ch, v, cnt);
		pthread_mutex_unlock(&ch->send_lock);
	} else {
		defer(ch, v, cnt);
	}
}

static void *writer_main(void *arg)
{
	struct rh_chan *ch = arg;
	for (;;) {
		pthread_mutex_lock(&ch->lock);
		while (!ch->out_head && !ch->stopping && !ch->failed)
			pthread_cond_wait(&ch->cond, &ch->lock);
		bool quit = ch->stopping || ch->failed;
		pthread_mutex_unlock(&ch->lock);
		if (quit)
			return NULL;
		rh_error err = {0};
		pthread_mutex_lock(&ch->send_lock);
		int rc = flush_deferred(ch, rh_sock_deadline((int)ch->conn->cfg.timeout_ms), &err);
		pthread_mutex_unlock(&ch->send_lock);
		if (rc != RH_OK)
			rh_chan_fail(ch, rc, err.msg);
	}
}

/* ---- receive side ---- */

static int fill(struct rh_chan *ch, rh_error *err)
{
	for (;;) {
		char cbuf[CMSG_SPACE(sizeof(int) * 4)];
		struct iovec v = {ch->rbuf, RBUF};
		struct msghdr m = {.msg_iov = &v,
		                   .msg_iovlen = 1,
		                   .msg_control = cbuf,
		                   .msg_controllen = sizeof cbuf};
		ssize_t r = recvmsg(ch->fd, &m, MSG_CMSG_CLOEXEC);
		if (r > 0) {
			for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
				if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
					continue;
				int nf = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
				for (int i = 0; i < nf; i++) {
					int fd;
					memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
					if (ch->nfdq < 8)
						ch->fdq[ch->nfdq++] = fd;
					else
						close(fd);
				}
			}
			ch->rpos = 0, ch->rlen = (size_t)r;
			return RH_OK;
		}
		if (r == 0)
			return rh_err_set(err, RH_EPEER, "transport: peer closed the connection");
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			int rc = rh_sock_wait(ch->fd, POLLIN, UINT64_MAX, err);
			if (rc != RH_OK)
				return rc;
		} else if (errno != EINTR) {
			return rh_err_errno(err, errno == ECONNRESET ? RH_EPEER : RH_EIO,
			                    "transport: receive");
		}
	}
}

int rh_chan_read(struct rh_chan *ch, void *buf, size_t len, rh_error *err)
{
	uint8_t *p = buf;
	while (len > 0) {
		if (ch->rpos == ch->rlen) {
			/* Large payloads bypass the buffer. */
			if (len >= RBUF && ch->nfdq == 0) {
				int rc = rh_sock_recv(ch->fd, p, len, UINT64_MAX, err);
				return rc;
			}
			int rc = fill(ch, err);
			if (rc != RH_OK)
				return rc;
		}
		size_t k = ch->rlen - ch->rpos < len ? ch->rlen - ch->rpos : len;
		memcpy(p, ch->rbuf + ch->rpos, k);
		ch->rpos += k, p += k, len -= k;
	}
	return RH_OK;
}

int rh_chan_take_fd(struct rh_chan *ch)
{
	if (ch->nfdq == 0)
		return -1;
	int fd = ch->fdq[0];
	memmove(ch->fdq, ch->fdq + 1, sizeof(int) * (size_t)--ch->nfdq);
	return fd;
}

static int on_msg(struct rh_chan *ch, const struct rh_chan_hdr *h, rh_error *err)
{
	if (h->len > ch->conn->cfg.max_msg)
		return rh_err_set(err, RH_EPEER,
		                  "transport: peer sent a %llu-byte message (max %u)",
		                  (unsigned long long)h->len, ch->conn->cfg.max_msg);
	struct rh_chan_msg *m = malloc(sizeof *m + h->len);
	if (!m)
		return rh_err_set(err, RH_ENOMEM, "transport: out of memory for a message");
	m->next = NULL, m->len = h->len;
	int rc = rh_chan_read(ch, m->data, h->len, err);
	if (rc != RH_OK) {
		free(m);
		return rc;
	}
	pthread_mutex_lock(&ch->lock);
	if (ch->queued >= ch->conn->cfg.msg_credits) {
		pthread_mutex_unlock(&ch->lock);
		free(m);
		return rh_err_set(err, RH_EPEER, "transport: peer ignored flow control");
	}
	if (ch->tail)
		ch->tail->next = m;
	else
		ch->head = m;
	ch->tail = m;
	ch->queued++;
	pthread_cond_broadcast(&ch->cond);
	pthread_mutex_unlock(&ch->lock);
	rh_chan_notify(ch);
	return RH_OK;
}

static void *rx_main(void *arg)
{
	struct rh_chan *ch = arg;
	rh_error err = {0};
	int rc;
	for (;;) {
		struct rh_chan_hdr h;
		rc = rh_chan_read(ch, &h, sizeof h, &err);
		if (rc != RH_OK)
			break;
		if (h.type == RH_CH_MSG) {
			rc = on_msg(ch, &h, &err);
		} else if (h.type == RH_CH_CREDIT) {
			pthread_mutex_lock(&ch->lock);
			ch->credits += h.arg;
			pthread_cond_broadcast(&ch->cond);
			pthread_mutex_unlock(&ch->lock);
		} else if (h.type >= RH_CH_PROVIDER && ch->on_frame) {
			rc = ch->on_frame(ch, &h, &err);
		} else {
			rc = rh_err_set(&err, RH_EPEER,
			                "transport: peer sent unknown frame type %u", h.type);
		}
		if (rc != RH_OK)
			break;
	}
	rh_chan_fail(ch, rc, err.msg);
	return NULL;
}

int rh_chan_setup(struct rh_chan *ch, uint64_t deadline, rh_error *err)
{
	struct rh_chan_hdr mine = {.type = RH_CH_SETUP,
	                           .arg = ch->conn->cfg.msg_credits,
	                           .len = ch->conn->cfg.max_msg};
	struct rh_chan_hdr theirs;
	int rc = rh_sock_send(ch->fd, &mine, sizeof mine, deadline, err);
	if (rc == RH_OK)
		rc = rh_sock_recv(ch->fd, &theirs, sizeof theirs, deadline, err);
	if (rc != RH_OK)
		return rc;
	if (theirs.type != RH_CH_SETUP || theirs.arg == 0 || theirs.len == 0)
		return rh_err_set(err, RH_EPEER, "transport: malformed setup frame from peer");
	ch->credits = theirs.arg;
	ch->conn->peer_max_msg = (uint32_t)(theirs.len > UINT32_MAX ? UINT32_MAX : theirs.len);
	return RH_OK;
}

int rh_chan_start(struct rh_chan *ch, rh_error *err)
{
	/* From here the receive thread is the only blocking reader: a plain
	 * blocking recvmsg costs one system call per wake-up instead of
	 * three. Writers pass MSG_DONTWAIT; close wakes the reader with
	 * shutdown(2). */
	int fl = fcntl(ch->fd, F_GETFL);
	if (fl < 0 || fcntl(ch->fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
		return rh_err_errno(err, RH_EIO, "transport: fcntl");
	if (pthread_create(&ch->rx, NULL, rx_main, ch) != 0)
		return rh_err_set(err, RH_EIO, "transport: cannot start the receive thread");
	if (pthread_create(&ch->writer, NULL, writer_main, ch) != 0) {
		shutdown(ch->fd, SHUT_RDWR);
		pthread_join(ch->rx, NULL);
		return rh_err_set(err, RH_EIO, "transport: cannot start the writer thread");
	}
	ch->threads = true;
	return RH_OK;
}

void rh_chan_fini(struct rh_chan *ch)
{
	if (ch->threads) {
		pthread_mutex_lock(&ch->lock);
		ch->stopping = true;
		pthread_cond_broadcast(&ch->cond);
		pthread_mutex_unlock(&ch->lock);
		shutdown(ch->fd, SHUT_RDWR);
		pthread_join(ch->rx, NULL);
		pthread_join(ch->writer, NULL);
	}
	close(ch->fd);
	close(ch->evfd);
	while (ch->nfdq > 0)
		close(rh_chan_take_fd(ch));
	for (struct rh_chan_msg *m = ch->head, *n; m; m = n)
		n = m->next, free(m);
	for (struct rh_chan_out *o = ch->out_head, *n; o; o = n)
		n = o->next, free(o);
	free(ch->rbuf);
	pthread_mutex_destroy(&ch->lock);
	pthread_mutex_destroy(&ch->send_lock);
	pthread_cond_destroy(&ch->cond);
}

/* ---- messages ---- */

static struct timespec ts_of(uint64_t ns)
{
	return (struct timespec){(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
}

int rh_chan_msg_send(struct rh_chan *ch, const void *buf, size_t len, int timeout_ms, rh_error *err)
{
	uint64_t deadline = rh_sock_deadline(timeout_ms);
	struct timespec ts = ts_of(deadline);
	int rc = RH_OK;
	pthread_mutex_lock(&ch->lock);
	while (!ch->failed && ch->credits == 0) {
		if (rh_now_ns() >= deadline) {
			rc = rh_err_set(
			        err, RH_ETIMEDOUT,
			        "transport: send: the peer freed no receive buffer in %d ms",
			        timeout_ms);
			break;
		}
		pthread_cond_timedwait(&ch->cond, &ch->lock, &ts);
	}
	if (rc == RH_OK && ch->failed) {
		rc = ch->failed;
		if (err)
			*err = ch->fail_err;
	}
	if (rc == RH_OK)
		ch->credits--;
	pthread_mutex_unlock(&ch->lock);
	if (rc != RH_OK)
		return rc;
	struct rh_chan_hdr h = {.type = RH_CH_MSG, .len = len};
	struct iovec v = {(void *)buf, len};
	return rh_chan_send(ch, &h, &v, 1, NULL, 0, deadline, err);
}

int rh_chan_msg_recv(struct rh_chan *ch, void *buf, size_t cap, size_t *len, int timeout_ms,
                     rh_error *err)
{
	uint64_t deadline = rh_sock_deadline(timeout_ms);
	struct timespec ts = ts_of(deadline);
	int rc = RH_OK;
	struct rh_chan_msg *m = NULL;
	uint32_t give_back = 0;
	pthread_mutex_lock(&ch->lock);
	/* Messages that arrived before a failure are still delivered. */
	while (!ch->head && !ch->failed) {
		if (rh_now_ns() >= deadline) {
			rc = rh_err_set(err, RH_ETIMEDOUT, "transport: no message within %d ms",
			                timeout_ms);
			break;
		}
		pthread_cond_timedwait(&ch->cond, &ch->lock, &ts);
	}
	if (rc == RH_OK && !ch->head) {
		rc = ch->failed;
		if (err)
			*err = ch->fail_err;
	} else if (rc == RH_OK && ch->head->len > cap) {
		*len = ch->head->len;
		rc = rh_err_set(err, RH_EINVAL, "transport: recv: message of %zu bytes, buffer %zu",
		                ch->head->len, cap);
	} else if (rc == RH_OK) {
		m = ch->head;
		ch->head = m->next;
		if (!ch->head)
			ch->tail = NULL;
		ch->queued--;
		/* Return credits in batches: one frame per quarter of the window. */
		uint32_t batch = ch->conn->cfg.msg_credits / 4 ? ch->conn->cfg.msg_credits / 4 : 1;
		if (++ch->freed >= batch || ch->queued == 0) {
			give_back = ch->freed;
			ch->freed = 0;
		}
	}
	pthread_mutex_unlock(&ch->lock);
	if (!m)
		return rc;
	memcpy(buf, m->data, m->len);
	*len = m->len;
	free(m);
	if (give_back) {
		/* chan.F1: returned credits are never dropped. Sent inline with
		 * this recv's deadline (0 for a poll), a CREDIT frame behind a
		 * full socket or another sender timed out unsent and the credits
		 * were lost for good: the peer's window shrank until it could
		 * send nothing (a tracer's MARKED waited out the timeout and its
		 * memory server was declared lost). Written now if the socket
		 * takes it, else by the writer thread, never lost. */
		struct rh_chan_hdr h = {.type = RH_CH_CREDIT, .arg = give_back};
		rh_chan_reply(ch, &h, NULL, 0);
	}
	return RH_OK;
}
