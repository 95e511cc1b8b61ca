/* A hand-driven CPU server for the tests that talk to rheap-tracerd in
 * protocol messages (test_security.c, test_collector.c): connect with a
 * chosen secret, send and receive single messages, say HELLO. */
#ifndef RH_TEST_OPS_CLIENT_H
#define RH_TEST_OPS_CLIENT_H

#include "gc/layout.h"
#include "wire/proto.h"
#include "runtime/internal.h"
#include "tests/ops/ops.h"
#include "transport/transport.h"

typedef struct client {
	rh_config cfg;
	rh_partition part;
	rh_tp_conn *conn;
	uint8_t buf[RH_PROTO_MAX];
} client;

/* Connect to c's tracer at `port` with `secret` (NULL: the cluster's). */
static inline int client_connect(client *k, const cluster *c, const char *provider, int port,
                                 const char *secret, rh_error *err)
{
	if (rh_config_load(c->config, &k->cfg, err) != RH_OK)
		return err->code;
	rh_partition_of(&k->cfg, 0, &k->part);
	rh_tp_opts o = {.provider = provider,
	                .secret = secret ? (const uint8_t *)secret : k->cfg.secret,
	                .secret_len = secret ? strlen(secret) : k->cfg.secret_len,
	                .timeout_ms = 2000};
	return rh_tp_connect(&o, cluster_host(), (uint16_t)port, &k->conn, err);
}

static inline int client_send(client *k, const rh_msg *m, rh_error *err)
{
	size_t n = rh_msg_encode(m, k->buf, sizeof k->buf);
	return n ? rh_tp_send(k->conn, k->buf, n, 2000, err) : RH_EINVAL;
}

static inline int client_recv(client *k, rh_msg *m, rh_error *err)
{
	size_t len;
	int rc = rh_tp_recv(k->conn, k->buf, sizeof k->buf, &len, 3000, err);
	return rc == RH_OK ? rh_msg_decode(k->buf, len, m, err) : rc;
}

/* HELLO as the CPU server of partition 0; RH_OK on HELLO_OK. */
static inline int client_hello(client *k, rh_error *err)
{
	rh_msg m = {.type = RH_MSG_HELLO};
	m.u.hello = (rh_msg_hello){.partition = 0,
	                           .heap_base = k->cfg.heap_base,
	                           .heap_size = k->cfg.heap_size,
	                           .region_size = k->cfg.region_size,
	                           .part_base = k->part.base,
	                           .part_size = k->part.size};
	int rc = client_send(k, &m, err);
	if (rc == RH_OK)
		rc = client_recv(k, &m, err);
	return rc == RH_OK && m.type != RH_MSG_HELLO_OK ? RH_EPEER : rc;
}

/* client_connect with the cluster's secret to tracer 0, then HELLO. */
static inline int client_open(client *k, const cluster *c, const char *provider, rh_error *err)
{
	int rc = client_connect(k, c, provider, c->port[0], NULL, err);
	if (rc == RH_OK)
		rc = client_hello(k, err);
	return rc;
}

/* One tracer logging to its file, counted as a check when it does not
 * start. */
static inline int client_start_tracer(cluster *c, const char *tracerd, const char *provider)
{
	if (cluster_start_with(c, tracerd, provider, 1, 64, 0.25, 2000, NULL, OPS_TRACERS(NULL)) >=
	    0)
		return 0;
	CHECK(0, "start a tracer");
	return -1;
}

/* A tracer and k connected to it as its CPU server; on failure nothing is
 * left running, so the case can simply return. */
static inline int client_start(cluster *c, client *k, const char *tracerd, const char *provider,
                               rh_error *err)
{
	if (client_start_tracer(c, tracerd, provider) < 0)
		return -1;
	int rc = client_open(k, c, provider, err);
	CHECK(rc == RH_OK, "HELLO_OK (%s)", rc ? err->msg : "");
	if (rc == RH_OK)
		return 0;
	if (k->conn)
		rh_tp_close(k->conn);
	cluster_stop(c);
	return -1;
}

/* Wait up to 3 s for `what` in tracer 0's log (left in log). */
static inline int client_wait_log(const cluster *c, const char *what, char *log, size_t cap)
{
	for (int t = 0; t < 100; t++) {
		if (strstr(cluster_log(c, 0, log, cap), what))
			return 1;
		usleep(30000);
	}
	return 0;
}

#endif
