/* The tracer's control server: accepts one CPU server at a time, checks
 * that it describes the same heap, hosts its partition, and serves control
 * messages until the CPU server says BYE or is lost; then it releases the
 * partition and waits for the next one. A further CPU server while one is
 * served is refused with an ERROR naming the one being served. Handshakes run on a
 * bounded pool of threads (max_handshakes), each bounded by the config's
 * transport timeout; a memory limit makes the tracer refuse, with an ERROR
 * the CPU server reports, once it holds more than that. */
#ifndef RH_MEMSERVER_SERVER_H
#define RH_MEMSERVER_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "gc/types.h"
#include "memserver/host.h"
#include "rheap/rheap.h"

typedef struct rh_server_opts {
	const rh_config *cfg;
	uint32_t index;          /* the server's index, or with spare the spare's */
	bool spare;              /* red.S1: a spare, whose partition the CPU server names */
	const char *listen_host; /* NULL: the config's host for this index */
	uint16_t listen_port;    /* 0 with listen_host NULL: the config's port */
	const char *status_path; /* JSON status file, rewritten each second; NULL = none */
	int accept_timeout_ms;   /* how long to wait for the CPU server (-1 forever) */
	uint64_t memory_limit;   /* bytes of backing memory the tracer may hold; 0 = none */
	int max_handshakes;      /* connections authenticated at once; 0 = the default */
	bool once;               /* exit after one session instead of serving the next */
} rh_server_opts;

#define RH_SERVER_DEFAULT_HANDSHAKES 8
#define RH_SERVER_MAX_HANDSHAKES 256

typedef struct rh_server_status {
	char state[16]; /* "waiting", "serving", "exiting" */
	char peer[64];
	uint64_t bytes_held;
	uint64_t bytes_traced;
	uint64_t last_heartbeat_ns;
	uint64_t regions_freed;
} rh_server_status;

/* Serve one CPU server after another, releasing everything a session held
 * before the next (docs/operations.md, operations.R1), until stopped (RH_OK),
 * no CPU server came within accept_timeout_ms (RH_ETIMEDOUT) or a fatal
 * error. With once: until the first CPU server leaves (RH_OK) or is lost
 * (RH_EPEER / RH_ETIMEDOUT). Memory is released before returning. */
int rh_server_run(const rh_server_opts *o, rh_error *err);

/* Stop a running server from a signal handler. */
void rh_server_request_stop(void);

#endif
