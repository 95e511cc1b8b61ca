/* Deadline-bounded I/O on stream sockets, shared by the tcp and shm
 * providers (both run the handshake and their framing over one). Every
 * call here is non-blocking per call (MSG_DONTWAIT) and waits in poll(2),
 * so it works whether or not the socket is in O_NONBLOCK mode. */
#ifndef RH_TP_SOCK_H
#define RH_TP_SOCK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "rheap/rheap.h"

/* Absolute CLOCK_MONOTONIC deadline timeout_ms from now; < 0 = never. */
uint64_t rh_sock_deadline(int timeout_ms);
/* Wait for events on fd until the deadline: RH_OK, RH_ETIMEDOUT, RH_EIO. */
int rh_sock_wait(int fd, short events, uint64_t deadline, rh_error *err);
/* Send all of iov (consumed in place); fds (may be NULL) ride as
 * SCM_RIGHTS on the first byte. RH_EPEER if the peer is gone. */
int rh_sock_sendv(int fd, struct iovec *iov, int n, const int *fds, int nfds, uint64_t deadline,
                  rh_error *err);
int rh_sock_send(int fd, const void *buf, size_t len, uint64_t deadline, rh_error *err);
/* Read exactly len bytes. RH_EPEER on EOF. */
int rh_sock_recv(int fd, void *buf, size_t len, uint64_t deadline, rh_error *err);
int rh_sock_nonblock(int fd, rh_error *err);
/* Run the auth handshake (auth.h) on fd within the deadline. */
int rh_sock_auth(int fd, int listener, const uint8_t *secret, size_t secret_len, uint64_t deadline,
                 rh_error *err);

#endif
