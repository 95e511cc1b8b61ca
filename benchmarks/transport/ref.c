#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "ref.h"

struct req {
	uint32_t op, len;
};

static void xfer(int fd, void *buf, size_t len, int out)
{
	uint8_t *p = buf;
	while (len > 0) {
		ssize_t r = out ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
		if (r <= 0)
			_exit(0); /* the benchmark went away */
		p += r, len -= (size_t)r;
	}
}

static void *serve(void *arg)
{
	int lfd = (int)(intptr_t)arg;
	int fd = accept(lfd, NULL, NULL);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	uint8_t *buf = malloc(64 << 20);
	for (;;) {
		struct req q;
		xfer(fd, &q, sizeof q, 0);
		if (q.op == 0) {
			xfer(fd, buf, q.len, 1);
		} else {
			xfer(fd, buf, q.len, 0);
			xfer(fd, &one, 1, 1);
		}
	}
	return NULL;
}

int ref_server_start(uint16_t *port)
{
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
	socklen_t sl = sizeof sa;
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sl) < 0 || listen(lfd, 4) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl) < 0)
		return -1;
	*port = ntohs(sa.sin_port);
	pthread_t t;
	return pthread_create(&t, NULL, serve, (void *)(intptr_t)lfd) ? -1 : 0;
}

int ref_connect(const char *host, uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	inet_pton(AF_INET, host, &sa.sin_addr);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
		return -1;
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return fd;
}

void ref_tcp(int fd, int write, size_t len, int depth, uint8_t *buf)
{
	struct req q = {(uint32_t)write, (uint32_t)len};
	for (int i = 0; i < depth; i++) {
		xfer(fd, &q, sizeof q, 1);
		if (write)
			xfer(fd, buf, len, 1);
	}
	for (int i = 0; i < depth; i++) {
		uint8_t ack;
		if (write)
			xfer(fd, &ack, 1, 0);
		else
			xfer(fd, buf, len, 0);
	}
}
