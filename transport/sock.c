#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

#include "common/common.h"
#include "transport/auth.h"
#include "transport/sock.h"

uint64_t rh_sock_deadline(int timeout_ms)
{
	return timeout_ms < 0 ? UINT64_MAX : rh_now_ns() + (uint64_t)timeout_ms * 1000000ull;
}

int rh_sock_wait(int fd, short events, uint64_t deadline, rh_error *err)
{
	for (;;) {
		int ms = -1;
		if (deadline != UINT64_MAX) {
			uint64_t now = rh_now_ns();
			if (now >= deadline)
				return rh_err_set(err, RH_ETIMEDOUT,
				                  "transport: peer did not answer in time");
			ms = (int)((deadline - now + 999999) / 1000000);
		}
		struct pollfd p = {.fd = fd, .events = events};
		int r = poll(&p, 1, ms);
		if (r > 0)
			return RH_OK; /* errors and hang-ups surface in the I/O call */
		if (r < 0 && errno != EINTR)
			return rh_err_errno(err, RH_EIO, "transport: poll");
	}
}

static int io_errno(rh_error *err, const char *what)
{
	if (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN)
		return rh_err_errno(err, RH_EPEER, "transport: peer closed the connection (%s)",
		                    what);
	return rh_err_errno(err, RH_EIO, "transport: %s", what);
}

int rh_sock_sendv(int fd, struct iovec *iov, int n, const int *fds, int nfds, uint64_t deadline,
                  rh_error *err)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 4)];
	if (nfds > 4)
		return rh_err_set(err, RH_EINVAL, "transport: too many fds in one frame");
	while (n > 0) {
		struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
		if (nfds > 0) {
			memset(cbuf, 0, sizeof cbuf);
			m.msg_control = cbuf;
			m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
			struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
			memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
		}
		ssize_t w = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return io_errno(err, "send");
			int rc = rh_sock_wait(fd, POLLOUT, deadline, err);
			if (rc != RH_OK)
				return rc;
			continue;
		}
		nfds = 0; /* delivered with the first byte */
		size_t left = (size_t)w;
		while (n > 0 && left >= iov->iov_len) {
			left -= iov->iov_len;
			iov++, n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + left;
			iov->iov_len -= left;
		}
	}
	return RH_OK;
}

int rh_sock_send(int fd, const void *buf, size_t len, uint64_t deadline, rh_error *err)
{
	struct iovec v = {(void *)buf, len};
	return rh_sock_sendv(fd, &v, 1, NULL, 0, deadline, err);
}

int rh_sock_recv(int fd, void *buf, size_t len, uint64_t deadline, rh_error *err)
{
	size_t got = 0;
	while (got < len) {
		ssize_t r = recv(fd, (char *)buf + got, len - got, MSG_DONTWAIT);
		if (r > 0) {
			got += (size_t)r;
		} else if (r == 0) {
			return rh_err_set(err, RH_EPEER, "transport: peer closed the connection");
		} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
			int rc = rh_sock_wait(fd, POLLIN, deadline, err);
			if (rc != RH_OK)
				return rc;
		} else if (errno != EINTR) {
			return io_errno(err, "recv");
		}
	}
	return RH_OK;
}

int rh_sock_nonblock(int fd, rh_error *err)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return rh_err_errno(err, RH_EIO, "transport: fcntl(O_NONBLOCK)");
	return RH_OK;
}

struct auth_ctx {
	int fd;
	uint64_t deadline;
};

static int auth_send(void *ctx, const void *buf, size_t len, rh_error *err)
{
	struct auth_ctx *a = ctx;
	return rh_sock_send(a->fd, buf, len, a->deadline, err);
}

static int auth_recv(void *ctx, void *buf, size_t len, rh_error *err)
{
	struct auth_ctx *a = ctx;
	return rh_sock_recv(a->fd, buf, len, a->deadline, err);
}

int rh_sock_auth(int fd, int listener, const uint8_t *secret, size_t secret_len, uint64_t deadline,
                 rh_error *err)
{
	struct auth_ctx a = {fd, deadline};
	struct rh_auth_io io = {auth_send, auth_recv, &a};
	return rh_auth_run(listener ? RH_AUTH_LISTENER : RH_AUTH_CONNECTOR, secret, secret_len, &io,
	                   err);
}
