#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "gc/proto.h"
#include "memserver/dgc.h"
#include "memserver/server.h"
#include "transport/transport.h"

static volatile sig_atomic_t stop_requested;

void rh_server_request_stop(void)
{
	stop_requested = 1;
}

typedef struct server {
	const rh_server_opts *o;
	rh_host host;
	rh_tp_opts topts;
	rh_tp_listener *listener;
	rh_tp_conn *conn;
	rh_server_status st;
	pthread_mutex_t st_lock;
	pthread_t refuser;
	atomic_int refuser_stop;
	rh_type_table types;
	uint8_t *types_buf;
	uint32_t types_total, types_have;
	uint8_t msg[RH_PROTO_MAX];
	/* Sends come from the server thread and the marking thread. */
	pthread_mutex_t send_lock;
	uint8_t sbuf[RH_PROTO_MAX];
	rh_dgc *dgc;
	uint64_t next_status_ns;
	uint16_t port; /* where it listens (resolved if port 0 was asked) */
} server;

static void write_status(server *s)
{
	if (!s->o->status_path)
		return;
	pthread_mutex_lock(&s->st_lock);
	rh_server_status st = s->st;
	pthread_mutex_unlock(&s->st_lock);
	rh_dgc_stats ds = {0};
	if (s->dgc)
		rh_dgc_stats_get(s->dgc, &ds);
	st.bytes_traced = ds.bytes_traced;
	json_t *j = json_pack(
	        "{s:s, s:i, s:i, s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "state", st.state, "pid",
	        (int)getpid(), "port", (int)s->port, "peer", st.peer, "index",
	        (json_int_t)s->o->index, "regions_hosted", (json_int_t)st.regions_hosted,
	        "bytes_held", (json_int_t)rh_host_resident(&s->host), "bytes_traced",
	        (json_int_t)st.bytes_traced, "last_heartbeat_ms_ago",
	        (json_int_t)(st.last_heartbeat_ns ? (rh_now_ns() - st.last_heartbeat_ns) / 1000000
	                                          : 0),
	        "regions_freed", (json_int_t)st.regions_freed);
	if (j) {
		json_object_set_new(j, "mark_ns", json_integer((json_int_t)ds.mark_ns));
		json_object_set_new(j, "regions_marked",
		                    json_integer((json_int_t)ds.regions_marked));
		json_object_set_new(j, "regions_evacuated",
		                    json_integer((json_int_t)ds.regions_evacuated));
		json_object_set_new(j, "bytes_copied", json_integer((json_int_t)ds.bytes_copied));
	}
	char tmp[4200];
	snprintf(tmp, sizeof tmp, "%s.tmp", s->o->status_path);
	/* Write then rename, so readers never see a half-written file. */
	if (j && json_dump_file(j, tmp, JSON_COMPACT) == 0)
		rename(tmp, s->o->status_path);
	json_decref(j);
}

static void set_state(server *s, const char *state, const char *peer)
{
	pthread_mutex_lock(&s->st_lock);
	snprintf(s->st.state, sizeof s->st.state, "%s", state);
	if (peer)
		snprintf(s->st.peer, sizeof s->st.peer, "%s", peer);
	pthread_mutex_unlock(&s->st_lock);
	write_status(s);
}

static int send_msg(server *s, rh_tp_conn *c, const rh_msg *m, rh_error *err)
{
	rh_error local;
	if (!err)
		err = &local;
	pthread_mutex_lock(&s->send_lock);
	size_t n = rh_msg_encode(m, s->sbuf, sizeof s->sbuf);
	int rc = n ? rh_tp_send(c, s->sbuf, n, (int)s->o->cfg->timeout_ms, err)
	           : rh_err_set(err, RH_EINVAL, "tracer: cannot encode %s",
	                        rh_msg_type_name(m->type));
	pthread_mutex_unlock(&s->send_lock);
	return rc;
}

static int dgc_send(void *ctx, const rh_msg *m, rh_error *err)
{
	server *s = ctx;
	return send_msg(s, s->conn, m, err);
}

static void send_error(server *s, rh_tp_conn *c, int code, const char *text)
{
	rh_msg m = {.type = RH_MSG_ERROR};
	m.u.error.code = (uint32_t)code;
	snprintf(m.u.error.text, sizeof m.u.error.text, "%.*s", (int)sizeof m.u.error.text - 1,
	         text);
	uint8_t buf[512];
	size_t n = rh_msg_encode(&m, buf, sizeof buf);
	pthread_mutex_lock(&s->send_lock);
	rh_tp_send(c, buf, n, 500, NULL);
	pthread_mutex_unlock(&s->send_lock);
}

/* Refuse every further CPU server while one is served. */
static void *refuser_main(void *arg)
{
	server *s = arg;
	while (!atomic_load(&s->refuser_stop)) {
		rh_tp_conn *c;
		rh_error e;
		if (rh_tp_accept(s->listener, 200, &c, &e) != RH_OK)
			continue;
		char text[160];
		pthread_mutex_lock(&s->st_lock);
		snprintf(text, sizeof text, "tracer %u is busy serving another CPU server (%s)",
		         s->o->index, s->st.peer);
		pthread_mutex_unlock(&s->st_lock);
		rh_log(RH_LOG_WARN, "tracerd", "refused a second CPU server: busy");
		send_error(s, c, RH_EBUSY, text);
		rh_tp_close(c);
	}
	return NULL;
}

static int check_hello(server *s, const rh_msg_hello *h, char *why, size_t n)
{
	const rh_config *cfg = s->o->cfg;
	const rh_partition *p = &s->host.part;
	if (h->partition != s->o->index)
		snprintf(why, n, "CPU server expects partition %u, this tracer hosts %u",
		         h->partition, s->o->index);
	else if (h->heap_base != cfg->heap_base || h->heap_size != cfg->heap_size ||
	         h->region_size != cfg->region_size)
		snprintf(why, n,
		         "heap mismatch: CPU server has base %#llx size %llu region %llu, tracer "
		         "has base %#llx size %llu region %llu (same config file on every node?)",
		         (unsigned long long)h->heap_base, (unsigned long long)h->heap_size,
		         (unsigned long long)h->region_size, (unsigned long long)cfg->heap_base,
		         (unsigned long long)cfg->heap_size, (unsigned long long)cfg->region_size);
	else if (h->part_base != p->base || h->part_size != p->size)
		snprintf(why, n, "partition mismatch: CPU server %#llx+%llu, tracer %#llx+%llu",
		         (unsigned long long)h->part_base, (unsigned long long)h->part_size,
		         (unsigned long long)p->base, (unsigned long long)p->size);
	else
		return 0;
	return -1;
}

static int on_types(server *s, const rh_msg_types *t, rh_error *err)
{
	/* The table comes after HELLO (at the VM's first attach); its first
	 * chunk says how large it is. */
	if (t->offset == 0) {
		if (t->total > (64u << 20))
			return rh_err_set(err, RH_EPEER,
			                  "tracer: type table of %u bytes exceeds 64 MiB",
			                  t->total);
		free(s->types_buf);
		s->types_buf = malloc(t->total ? t->total : 1);
		if (!s->types_buf)
			return rh_err_set(err, RH_ENOMEM, "tracer: no memory for the type table");
		s->types_total = t->total;
		s->types_have = 0;
	}
	if (!s->types_buf || t->total != s->types_total)
		return rh_err_set(
		        err, RH_EPEER,
		        "tracer: TYPES chunk for a table of %u bytes, the first chunk said %u",
		        t->total, s->types_total);
	if (t->offset != s->types_have)
		return rh_err_set(err, RH_EPEER, "tracer: TYPES chunk at %u, expected %u",
		                  t->offset, s->types_have);
	memcpy(s->types_buf + t->offset, t->bytes, t->len);
	s->types_have += t->len;
	if (s->types_have < s->types_total)
		return RH_OK;
	rh_typetab_free(&s->types);
	rh_typetab_init(&s->types);
	if (rh_typetab_from_json(&s->types, (const char *)s->types_buf, s->types_total, err) !=
	    RH_OK)
		return RH_EPEER;
	rh_log(RH_LOG_INFO, "tracerd", "received a type table of %u types", s->types.n - 1);
	return rh_dgc_set_types(s->dgc, (const char *)s->types_buf, s->types_total, err);
}

/* Serve one connected, authenticated CPU server until it leaves. */
static int serve(server *s, rh_error *err)
{
	const rh_config *cfg = s->o->cfg;
	rh_tp_conn *c = s->conn;
	size_t len;
	rh_msg m;
	int rc = rh_tp_recv(c, s->msg, sizeof s->msg, &len, (int)cfg->timeout_ms, err);
	if (rc != RH_OK)
		return rc;
	if ((rc = rh_msg_decode(s->msg, len, &m, err)) != RH_OK)
		return rc;
	if (m.type != RH_MSG_HELLO)
		return rh_err_set(err, RH_EPEER, "tracer: expected HELLO, got %s",
		                  rh_msg_type_name(m.type));
	char why[256];
	if (check_hello(s, &m.u.hello, why, sizeof why) < 0) {
		send_error(s, c, RH_ECONFIG, why);
		return rh_err_set(err, RH_ECONFIG, "tracer: refused CPU server: %s", why);
	}

	rh_host *h = &s->host;
	if ((rc = rh_tp_reg(c, h->data, h->part.size, h->data_fd, 0, RH_TP_REMOTE | RH_TP_LOCAL,
	                    err)) != RH_OK ||
	    (rc = rh_tp_reg(c, h->meta, h->part.meta_size, h->meta_fd, 0,
	                    RH_TP_REMOTE | RH_TP_LOCAL, err)) != RH_OK)
		return rc;
	rh_msg ok = {.type = RH_MSG_HELLO_OK};
	ok.u.hello_ok.meta_base = h->part.meta_base;
	ok.u.hello_ok.meta_size = h->part.meta_size;
	ok.u.hello_ok.pid = (uint32_t)getpid();
	if ((rc = send_msg(s, c, &ok, err)) != RH_OK)
		return rc;
	pthread_mutex_lock(&s->st_lock);
	s->st.regions_hosted = h->part.n_regions;
	s->st.last_heartbeat_ns = rh_now_ns();
	pthread_mutex_unlock(&s->st_lock);
	if ((rc = rh_dgc_open(&s->dgc, cfg, &h->part, h->meta, dgc_send, s, err)) != RH_OK)
		return rc;
	set_state(s, "serving", NULL);
	rh_log(RH_LOG_INFO, "tracerd", "serving partition %u [%#llx, +%llu MiB)", h->part.index,
	       (unsigned long long)h->part.base, (unsigned long long)(h->part.size >> 20));

	for (;;) {
		if (stop_requested)
			return rh_err_set(err, RH_OK, "tracer: stopped by signal");
		/* Short waits so that signals and the status file are served;
		 * silence is judged against the last message received. */
		rc = rh_tp_recv(c, s->msg, sizeof s->msg, &len, 200, err);
		uint64_t now = rh_now_ns();
		if (now >= s->next_status_ns) {
			write_status(s);
			s->next_status_ns = now + 1000000000ull;
		}
		if (rh_dgc_status(s->dgc, err) != RH_OK)
			return RH_EPEER; /* the ERROR went out already */
		if (rc == RH_ETIMEDOUT) {
			pthread_mutex_lock(&s->st_lock);
			uint64_t last = s->st.last_heartbeat_ns;
			pthread_mutex_unlock(&s->st_lock);
			if (now - last > (uint64_t)cfg->timeout_ms * 1000000ull)
				return rh_err_set(err, RH_ETIMEDOUT,
				                  "tracer: CPU server silent for over %u ms",
				                  cfg->timeout_ms);
			continue;
		}
		if (rc != RH_OK)
			return rc;
		pthread_mutex_lock(&s->st_lock);
		s->st.last_heartbeat_ns = now;
		pthread_mutex_unlock(&s->st_lock);
		if ((rc = rh_msg_decode(s->msg, len, &m, err)) != RH_OK) {
			send_error(s, c, rc, err->msg);
			return rc;
		}
		switch (m.type) {
		case RH_MSG_TYPES:
			if ((rc = on_types(s, &m.u.types, err)) != RH_OK) {
				send_error(s, c, rc, err->msg);
				return rc;
			}
			break;
		case RH_MSG_FREE:
			for (uint32_t i = 0; i < m.u.free.n; i++) {
				rc = rh_host_free_region(h, rh_msg_free_region(&m.u.free, i), err);
				if (rc != RH_OK) {
					send_error(s, c, rc, err->msg);
					return rc;
				}
			}
			/* The marking thread forgets them, in order with what
			 * follows (an EVACUATE may reuse them as destinations). */
			if ((rc = rh_dgc_post(s->dgc, s->msg, len, err)) != RH_OK) {
				send_error(s, c, rc, err->msg);
				return rc;
			}
			pthread_mutex_lock(&s->st_lock);
			s->st.regions_freed += m.u.free.n;
			pthread_mutex_unlock(&s->st_lock);
			/* The CPU server reuses the regions only after this. */
			rh_msg done = {.type = RH_MSG_FREE_OK, .seq = m.seq};
			if ((rc = send_msg(s, c, &done, err)) != RH_OK)
				return rc;
			break;
		case RH_MSG_PING: {
			/* While the marking thread is sending, its messages keep
			 * the CPU server hearing from us; waiting for it here
			 * could stall this receive loop behind a full channel. */
			if (pthread_mutex_trylock(&s->send_lock) != 0)
				break;
			pthread_mutex_unlock(&s->send_lock);
			rh_msg pong = m;
			pong.type = RH_MSG_PONG;
			if ((rc = send_msg(s, c, &pong, err)) != RH_OK)
				return rc;
			break;
		}
		case RH_MSG_PONG:
			break;
		case RH_MSG_REGIONS:
		case RH_MSG_ROOTS:
		case RH_MSG_EVACUATE:
		case RH_MSG_FULL:
		case RH_MSG_MARK_REFS:
		case RH_MSG_FIX_CARDS:
			/* The marking thread checks them against its state. */
			if ((rc = rh_dgc_post(s->dgc, s->msg, len, err)) != RH_OK) {
				send_error(s, c, rc, err->msg);
				return rc;
			}
			break;
		case RH_MSG_BYE:
			rh_log(RH_LOG_INFO, "tracerd", "CPU server said BYE");
			return RH_OK;
		default:
			rh_err_set(err, RH_EPEER, "tracer: unexpected %s from the CPU server",
			           rh_msg_type_name(m.type));
			send_error(s, c, RH_EPEER, err->msg);
			return RH_EPEER;
		}
	}
}

int rh_server_run(const rh_server_opts *o, rh_error *err)
{
	server *s = calloc(1, sizeof *s);
	if (!s)
		return rh_err_set(err, RH_ENOMEM, "tracer: out of memory");
	s->o = o;
	pthread_mutex_init(&s->st_lock, NULL);
	pthread_mutex_init(&s->send_lock, NULL);
	rh_typetab_init(&s->types);
	const rh_config *cfg = o->cfg;
	int rc = rh_host_open(&s->host, cfg, o->index, err);
	if (rc != RH_OK)
		goto out;
	s->topts = (rh_tp_opts){.provider = cfg->provider,
	                        .secret = cfg->secret,
	                        .secret_len = cfg->secret_len,
	                        .timeout_ms = cfg->timeout_ms};
	const char *host = o->listen_host ? o->listen_host : cfg->servers[o->index].host;
	uint16_t port = o->listen_host ? o->listen_port : cfg->servers[o->index].port;
	if ((rc = rh_tp_listen(&s->topts, host, port, &s->listener, err)) != RH_OK)
		goto out;
	s->port = rh_tp_listener_port(s->listener);
	rh_log(RH_LOG_INFO, "tracerd", "partition %u listening on %s:%u (%s)", o->index, host,
	       s->port, cfg->provider);
	set_state(s, "waiting", "");
	uint64_t deadline = o->accept_timeout_ms < 0
	                            ? UINT64_MAX
	                            : rh_now_ns() + (uint64_t)o->accept_timeout_ms * 1000000ull;
	for (;;) {
		if (stop_requested) {
			rc = RH_OK;
			goto out;
		}
		if (rh_now_ns() > deadline) {
			rc = rh_err_set(err, RH_ETIMEDOUT,
			                "tracer: no CPU server connected in %d ms",
			                o->accept_timeout_ms);
			goto out;
		}
		rh_error e;
		rc = rh_tp_accept(s->listener, 200, &s->conn, &e);
		if (rc == RH_OK)
			break;
		if (rc != RH_ETIMEDOUT)
			rh_log(RH_LOG_WARN, "tracerd", "refused a connection: %s", e.msg);
	}
	set_state(s, "serving", "cpu-server");
	pthread_create(&s->refuser, NULL, refuser_main, s);
	rc = serve(s, err);
	rh_dgc_close(s->dgc);
	s->dgc = NULL;
	atomic_store(&s->refuser_stop, 1);
	pthread_join(s->refuser, NULL);
	if (rc == RH_OK)
		rh_log(RH_LOG_INFO, "tracerd", "CPU server left; releasing the partition");
	else
		rh_log(RH_LOG_ERROR, "tracerd", "CPU server lost: %s; releasing the partition",
		       err->msg);
out:
	set_state(s, "exiting", NULL);
	if (s->conn)
		rh_tp_close(s->conn);
	if (s->listener)
		rh_tp_listener_close(s->listener);
	rh_host_close(&s->host);
	rh_typetab_free(&s->types);
	free(s->types_buf);
	if (o->status_path)
		unlink(o->status_path);
	pthread_mutex_destroy(&s->st_lock);
	pthread_mutex_destroy(&s->send_lock);
	free(s);
	return rc;
}
