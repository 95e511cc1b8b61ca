/* rh-tp-conformance harness: the data pattern, and the passive side (a
 * forked child) driven by command messages. Checks and the closing line
 * come from tests/common/check.h. */
#ifndef RH_TP_HARNESS_H
#define RH_TP_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tests/common/check.h"
#include "transport/transport.h"

#define REGION_SIZE ((size_t)66 << 20) /* passive side's advertised range */
#define DATA_SIZE ((size_t)64 << 20)   /* [0, DATA_SIZE): bulk data */
#define CTR_OFF DATA_SIZE              /* counters */
#define SLOW_CREDITS 8                 /* the passive side's receive window */

enum cmd {
	CMD_READY = 1, /* passive -> active: a = region address, b = size */
	CMD_FILL,      /* a = seed, b = offset, c = length */
	CMD_CHECK,     /* same; reply a = 1 if the bytes match */
	CMD_GET64,     /* b = offset; reply a = value */
	CMD_DEREG,     /* withdraw the region */
	CMD_SLOWRECV,  /* a = count: receive count messages slowly; reply a = good */
	CMD_ECHO,      /* reply with the same bytes */
	CMD_BYE,       /* end this connection */
};

struct cmd_msg {
	uint64_t cmd, a, b, c;
};

struct env {
	const char *provider;
	const char *host;
	uint16_t port; /* 0 = ephemeral */
};

/* ---- data ---- */
uint8_t pattern(uint64_t seed, uint64_t off);
void fill(uint8_t *p, uint64_t seed, uint64_t off, size_t len);
bool check(const uint8_t *p, uint64_t seed, uint64_t off, size_t len);

/* ---- processes ---- */
struct child {
	pid_t pid;
	int report; /* read end: port (2 bytes), then one byte per failed accept */
	uint16_t port;
};
/* Fork a passive side that accepts up to `conns` connections. */
int child_start(const struct env *e, uint16_t port, int conns, struct child *out);
/* Next failed-accept code the child reported, or -1 after timeout_ms. */
int child_report(struct child *c, int timeout_ms);
void child_stop(struct child *c);

rh_tp_opts opts_for(const struct env *e, const char *secret, uint32_t timeout_ms);

#endif
