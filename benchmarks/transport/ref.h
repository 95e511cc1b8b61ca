/* The reference each provider is measured against, in the same run: a
 * plain TCP socket request/response and stream (for tcp), memcpy to a
 * shared mapping (for shm). */
#ifndef RH_BENCH_REF_H
#define RH_BENCH_REF_H

#include <stddef.h>
#include <stdint.h>

/* Plain socket server: op 0 = send me len bytes, op 1 = take len bytes
 * and ack with one byte. Runs in a thread of the passive process. */
int ref_server_start(uint16_t *port);
int ref_connect(const char *host, uint16_t port);
/* One round trip of `len` bytes in the given direction, `depth` requests
 * in flight. */
void ref_tcp(int fd, int write, size_t len, int depth, uint8_t *buf);

#endif
