/* Seam: tests/fuzz/fuzz_server.c compiles this file into its harness and
 * calls serve() on a server it builds by hand, with the transport and the
 * collector stubbed; serve() must keep reaching the peer only through
 * rh_tp_recv/rh_tp_send. */
#include <ctype.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "wire/proto.h"
#include "memserver/dgc.h"
#include "memserver/server.h"
#include "transport/transport.h"

/* Set from a signal handler and read by every thread: a lock-free atomic
 * is both async-signal-safe and race-free. */
static atomic_int stop_requested;

void rh_server_request_stop(void)
{
	atomic_store(&stop_requested, 1);
}

typedef struct server {
	const rh_server_opts *o;
	rh_host host;
	rh_tp_opts topts;
	rh_tp_listener *listener;
	rh_tp_conn *conn;
	rh_server_status st;
	pthread_mutex_t st_lock;
	/* Handshakes run on a fixed pool of threads: at most that many
	 * unauthenticated connections are held at once, each for at most the
	 * transport's timeout, so silent clients cannot exhaust descriptors
	 * or threads, and each one ahead of the CPU server costs it at most a
	 * deadline divided among the slots. */
	pthread_t hs[RH_SERVER_MAX_HANDSHAKES];
	int n_hs;
	atomic_int hs_stop;
	pthread_mutex_t conn_lock;
	pthread_cond_t conn_cond;
	bool claimed; /* a CPU server was accepted: later ones are refused as busy */
	/* Its session is over and being released: a CPU server that
	 * authenticates now waits for the release (its own retry, say)
	 * instead of being refused as busy. */
	bool ending;
	atomic_uint_fast64_t refused;
	/* Refusal logging is rate-limited: a flood must not flood the log. */
	uint64_t log_window_ns;
	unsigned log_in_window, log_suppressed;
	rh_type_table types;
	uint8_t *types_buf;
	uint32_t types_total, types_have;
	uint8_t msg[RH_PROTO_MAX];
	/* Sends come from the server thread and the marking thread. */
	pthread_mutex_t send_lock;
	uint8_t sbuf[RH_PROTO_MAX];
	rh_dgc *dgc;
	uint64_t next_status_ns;
	uint64_t next_limit_ns;
	/* Nothing heard since HELLO_OK yet: the CPU server may still be
	 * opening its other hosts (operations.R3). Under st_lock. */
	bool opening;
	uint16_t port; /* where it listens (resolved if port 0 was asked) */
} server;

/* Peer-supplied text goes into log lines and the status file: control
 * characters would let a peer forge or split lines. */
static void sanitize(char *t)
{
	for (; *t; t++)
		if (!isprint((unsigned char)*t))
			*t = '?';
}

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
	uint64_t used = rh_host_regions_used(&s->host);
	json_t *j = json_pack("{s:s, s:i, s:i, s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "state",
	                      st.state, "pid", (int)getpid(), "port", (int)s->port, "peer", st.peer,
	                      "index", (json_int_t)s->o->index, "regions_hosted", (json_int_t)used,
	                      "bytes_held", (json_int_t)rh_host_resident(&s->host), "bytes_traced",
	                      (json_int_t)st.bytes_traced, "last_heartbeat_ms_ago",
	                      (json_int_t)(st.last_heartbeat_ns
	                                           ? (rh_now_ns() - st.last_heartbeat_ns) / 1000000
	                                           : 0),
	                      "regions_freed", (json_int_t)st.regions_freed);
	if (j) {
		json_object_set_new(j, "regions_total",
		                    json_integer((json_int_t)s->host.part.n_regions));
		json_object_set_new(j, "memory_limit",
		                    json_integer((json_int_t)s->o->memory_limit));
		json_object_set_new(j, "connections_refused",
		                    json_integer((json_int_t)atomic_load(&s->refused)));
		json_object_set_new(j, "max_handshakes", json_integer(s->n_hs));
		json_object_set_new(j, "mark_ns", json_integer((json_int_t)ds.mark_ns));
		json_object_set_new(j, "regions_marked",
		                    json_integer((json_int_t)ds.regions_marked));
		json_object_set_new(j, "regions_evacuated",
		                    json_integer((json_int_t)ds.regions_evacuated));
		json_object_set_new(j, "bytes_copied", json_integer((json_int_t)ds.bytes_copied));
		/* red.S1: a spare, and the partition it took over (-1: none yet). */
		json_object_set_new(j, "spare", json_boolean(s->o->spare));
		json_object_set_new(
		        j, "partition",
		        json_integer(s->host.data ? (json_int_t)s->host.part.index : -1));
		/* red.P1: the copy this tracer keeps, and what it holds. */
		json_object_set_new(
		        j, "copy_of",
		        json_integer(s->host.rdata ? (json_int_t)s->host.rpart.index : -1));
		json_object_set_new(j, "copy_bytes_held",
		                    json_integer((json_int_t)rh_host_copy_resident(&s->host)));
	}
	char tmp[4200];
	snprintf(tmp, sizeof tmp, "%s.tmp", s->o->status_path);
	/* Write then rename, so readers never see a half-written file. A
	 * fresh file (O_EXCL, O_NOFOLLOW): a symlink left at the temporary's
	 * name is not followed (security.S2). */
	unlink(tmp);
	int fd = j ? open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600) : -1;
	if (fd >= 0) {
		int ok = json_dumpfd(j, fd, JSON_COMPACT) == 0;
		if (close(fd) == 0 && ok)
			rename(tmp, s->o->status_path);
		else
			unlink(tmp);
	}
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

/* How long the CPU server may stay silent, under st_lock. operations.R3:
 * between its HELLO_OK and its first message after it the CPU server is
 * HELLOing its other tracers, one after another, which its open allows
 * (RH_PROTO_OPEN_TIMEOUTS + 1) timeouts; it pings nobody before that. */
static uint64_t silence_allowed_ms(const server *s)
{
	uint64_t t = s->o->cfg->timeout_ms;
	return s->opening ? (RH_PROTO_OPEN_TIMEOUTS + 1) * t : t;
}

static int send_msg(server *s, rh_tp_conn *c, const rh_msg *m, rh_error *err)
{
	rh_error local;
	if (!err)
		err = &local;
	pthread_mutex_lock(&s->send_lock);
	/* A send waits for the peer's receive credits; with the CPU server
	 * gone it would wait a whole timeout, on top of the silence that
	 * already counts toward declaring it lost. Only what is left of the
	 * silence allowance is spent, so the tracer notices (and exits) within
	 * one timeout. */
	int timeout_ms = (int)s->o->cfg->timeout_ms;
	pthread_mutex_lock(&s->st_lock);
	uint64_t last = s->st.last_heartbeat_ns, allowed = silence_allowed_ms(s);
	pthread_mutex_unlock(&s->st_lock);
	if (last) {
		uint64_t quiet_ms = (rh_now_ns() - last) / 1000000ull;
		uint64_t left = quiet_ms + 1 >= allowed ? 1 : allowed - quiet_ms;
		timeout_ms = left < (uint64_t)timeout_ms ? (int)left : timeout_ms;
	}
	size_t n = rh_msg_encode(m, s->sbuf, sizeof s->sbuf);
	int rc = n ? rh_tp_send(c, s->sbuf, n, timeout_ms, err)
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

/* Close a connection that authenticated while a CPU server is served,
 * telling it why. Not under send_lock: this is another connection, and its
 * send must not hold up the served one. */
static void refuse_busy(server *s, rh_tp_conn *c)
{
	rh_msg m = {.type = RH_MSG_ERROR};
	m.u.error.code = RH_EBUSY;
	pthread_mutex_lock(&s->st_lock);
	snprintf(m.u.error.text, sizeof m.u.error.text,
	         "tracer %u is busy serving another CPU server (%s)", s->o->index, s->st.peer);
	pthread_mutex_unlock(&s->st_lock);
	atomic_fetch_add(&s->refused, 1);
	rh_log(RH_LOG_WARN, "tracerd", "refused a second CPU server: busy");
	uint8_t buf[512];
	size_t n = rh_msg_encode(&m, buf, sizeof buf);
	if (n)
		rh_tp_send(c, buf, n, 500, NULL);
	rh_tp_close(c);
}

/* Start a new one-second window once the last has passed, reporting the
 * refusals it did not log one by one (under conn_lock). */
static unsigned next_window(server *s, uint64_t now)
{
	unsigned suppressed = 0;
	if (now - s->log_window_ns >= 1000000000ull) {
		suppressed = s->log_suppressed;
		s->log_window_ns = now;
		s->log_in_window = 0;
		s->log_suppressed = 0;
	}
	return suppressed;
}

static void log_suppressed(unsigned n)
{
	if (n)
		rh_log(RH_LOG_WARN, "tracerd",
		       "refused %u more connections (not logged one by one)", n);
}

/* Called on the server's own 200 ms ticks: a flood's suppressed count is
 * reported within about a second of its window, not only when the next
 * refusal comes (security.L2). */
static void flush_refusals(server *s)
{
	pthread_mutex_lock(&s->conn_lock);
	unsigned suppressed = next_window(s, rh_now_ns());
	pthread_mutex_unlock(&s->conn_lock);
	log_suppressed(suppressed);
}

/* A connection that arrived and was refused: counted, and logged unless
 * 20 were logged this second already. An authentication failure is always
 * logged (security.L2): it is the one refusal that says someone tried the
 * wrong secret. */
static void log_refusal(server *s, int rc, const char *why)
{
	atomic_fetch_add(&s->refused, 1);
	char text[sizeof((rh_error *)0)->msg];
	snprintf(text, sizeof text, "%s", why);
	sanitize(text);
	bool log = rc == RH_EAUTH;
	pthread_mutex_lock(&s->conn_lock);
	unsigned suppressed = next_window(s, rh_now_ns());
	if (s->log_in_window < 20 || log) {
		s->log_in_window++;
		log = true;
	} else {
		s->log_suppressed++;
	}
	pthread_mutex_unlock(&s->conn_lock);
	log_suppressed(suppressed);
	if (log)
		rh_log(RH_LOG_WARN, "tracerd", "refused a connection: %s", text);
}

static void *handshaker_main(void *arg)
{
	server *s = arg;
	uint32_t timeout = s->o->cfg->timeout_ms;
	/* Short waits so that a stop is seen. */
	int wait = timeout > 400 ? 200 : (int)(timeout / 2 ? timeout / 2 : 1);
	while (!atomic_load(&s->hs_stop) && !atomic_load(&stop_requested)) {
		rh_tp_conn *c;
		rh_error e;
		int rc = rh_tp_accept(s->listener, wait, &c, &e);
		if (rc != RH_OK) {
			/* RH_ETIMEDOUT: no connection arrived, nothing was
			 * refused, however long the wait really took (a stopped
			 * tracer, security.L1). A silent connection is RH_EPEER. */
			if (rc != RH_ETIMEDOUT)
				log_refusal(s, rc, e.msg);
			continue;
		}
		pthread_mutex_lock(&s->conn_lock);
		while (s->ending && !atomic_load(&s->hs_stop) && !atomic_load(&stop_requested))
			rh_cond_wait_ms(&s->conn_cond, &s->conn_lock, 50);
		bool mine = !s->claimed;
		if (mine) {
			s->claimed = true;
			s->conn = c;
			pthread_cond_broadcast(&s->conn_cond);
		}
		pthread_mutex_unlock(&s->conn_lock);
		if (!mine)
			refuse_busy(s, c);
	}
	return NULL;
}

static void handshakers_stop(server *s)
{
	atomic_store(&s->hs_stop, 1);
	for (int i = 0; i < s->n_hs; i++)
		pthread_join(s->hs[i], NULL);
	s->n_hs = 0;
}

/* The memory backing the partition is capped by --memory-limit: past it
 * the tracer cannot promise to back the pages the CPU server writes, so it
 * refuses to go on, saying why, before the kernel answers with SIGBUS or
 * the OOM killer. The check is periodic: the overshoot is bounded by what
 * the CPU server writes between two checks. */
static int check_memory(server *s, rh_tp_conn *c, uint64_t now, rh_error *err)
{
	uint64_t limit = s->o->memory_limit;
	if (!limit || now < s->next_limit_ns)
		return RH_OK;
	s->next_limit_ns = now + 20000000ull;
	/* red.P1: the copy it keeps is memory it backs too. */
	uint64_t held = rh_host_resident(&s->host) + rh_host_copy_resident(&s->host);
	if (held <= limit)
		return RH_OK;
	char why[200];
	snprintf(why, sizeof why,
	         "tracer %u: memory limit reached: %llu MiB held, --memory-limit %llu MiB; "
	         "it cannot back more pages",
	         s->o->index, (unsigned long long)(held >> 20), (unsigned long long)(limit >> 20));
	send_error(s, c, RH_ENOMEM, why);
	return rh_err_set(err, RH_ENOMEM, "%s", why);
}

static int check_hello(server *s, const rh_msg_hello *h, char *why, size_t n)
{
	const rh_config *cfg = s->o->cfg;
	/* red.S1: a spare hosts whichever partition the CPU server names. */
	uint32_t index = s->o->spare ? h->partition : s->o->index;
	rh_partition part = {0};
	if (s->o->spare && h->partition < cfg->n_servers)
		rh_partition_of(cfg, h->partition, &part);
	const rh_partition *p = s->o->spare ? &part : &s->host.part;
	if (s->o->spare && h->partition >= cfg->n_servers)
		snprintf(why, n, "CPU server names partition %u for spare %u; the config has %zu",
		         h->partition, s->o->index, cfg->n_servers);
	else if (!s->o->spare && h->partition != s->o->index)
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
	else if (h->replica != (uint32_t)(rh_replica_kept_by(cfg, index) + 1))
		snprintf(why, n,
		         "redundancy mismatch: the CPU server expects this tracer to keep %s, its "
		         "config says %s (same redundancy.mode on every node?)",
		         h->replica ? "a partition's copy" : "no copy",
		         rh_replica_kept_by(cfg, index) >= 0 ? "one" : "none");
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
	if (s->o->spare && (rc = rh_host_open(h, cfg, m.u.hello.partition, err)) != RH_OK) {
		send_error(s, c, rc, err->msg);
		return rc;
	}
	if ((rc = rh_tp_reg(c, h->data, h->part.size, h->data_fd, 0, RH_TP_REMOTE | RH_TP_LOCAL,
	                    err)) != RH_OK ||
	    (rc = rh_tp_reg(c, h->meta, h->part.meta_size, h->meta_fd, 0,
	                    RH_TP_REMOTE | RH_TP_LOCAL, err)) != RH_OK ||
	    /* red.P1: the copy, written and read one-sided like the partition. */
	    (h->rdata && (rc = rh_tp_reg(c, h->rdata, h->rpart.size, h->rdata_fd, 0,
	                                 RH_TP_REMOTE | RH_TP_LOCAL, err)) != RH_OK))
		return rc;
	rh_msg ok = {.type = RH_MSG_HELLO_OK};
	ok.u.hello_ok.meta_base = h->part.meta_base;
	ok.u.hello_ok.meta_size = h->part.meta_size;
	ok.u.hello_ok.pid = (uint32_t)getpid();
	if ((rc = send_msg(s, c, &ok, err)) != RH_OK)
		return rc;
	pthread_mutex_lock(&s->st_lock);
	s->st.last_heartbeat_ns = rh_now_ns();
	s->opening = true;
	pthread_mutex_unlock(&s->st_lock);
	if ((rc = rh_dgc_open(&s->dgc, cfg, &h->part, h->meta, dgc_send, s, err)) != RH_OK)
		return rc;
	set_state(s, "serving", NULL);
	rh_log(RH_LOG_INFO, "tracerd", "serving partition %u [%#llx, +%llu MiB)", h->part.index,
	       (unsigned long long)h->part.base, (unsigned long long)(h->part.size >> 20));

	for (;;) {
		if (atomic_load(&stop_requested))
			return rh_err_set(err, RH_OK, "tracer: stopped by signal");
		/* Short waits so that signals and the status file are served;
		 * silence is judged against the last message received. */
		rc = rh_tp_recv(c, s->msg, sizeof s->msg, &len, 200, err);
		uint64_t now = rh_now_ns();
		if (now >= s->next_status_ns) {
			write_status(s);
			s->next_status_ns = now + 1000000000ull;
		}
		flush_refusals(s);
		if (rh_dgc_status(s->dgc, err) != RH_OK)
			return RH_EPEER; /* the ERROR went out already */
		int mrc = check_memory(s, c, now, err);
		if (mrc != RH_OK)
			return mrc;
		if (rc == RH_ETIMEDOUT) {
			pthread_mutex_lock(&s->st_lock);
			uint64_t last = s->st.last_heartbeat_ns, allowed = silence_allowed_ms(s);
			pthread_mutex_unlock(&s->st_lock);
			if (now - last > allowed * 1000000ull)
				return rh_err_set(err, RH_ETIMEDOUT,
				                  "tracer: CPU server silent for over %llu ms",
				                  (unsigned long long)allowed);
			continue;
		}
		if (rc != RH_OK)
			return rc;
		pthread_mutex_lock(&s->st_lock);
		s->st.last_heartbeat_ns = now;
		s->opening = false;
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
			pthread_mutex_lock(&s->st_lock);
			s->st.regions_freed += m.u.free.n;
			pthread_mutex_unlock(&s->st_lock);
			/* The marking thread forgets them, in order with what
			 * follows (an EVACUATE may reuse them as destinations),
			 * then answers FREE_OK. */
			/* fallthrough */
		case RH_MSG_PING:
			/* flow.F1: this loop is the connection's only receiver
			 * and never waits to send; the marking thread answers
			 * (PONG, FREE_OK) after what was queued before. */
			if ((rc = rh_dgc_post(s->dgc, s->msg, len, err)) != RH_OK) {
				send_error(s, c, rc, err->msg);
				return rc;
			}
			break;
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

/* Wait for a handshake thread to hand over an authenticated CPU server, up
 * to deadline or a stop; serves the status file and the refusal log
 * meanwhile. Returns with s->conn set, or NULL. */
static void wait_for_cpu(server *s, uint64_t deadline)
{
	pthread_mutex_lock(&s->conn_lock);
	while (!s->conn) {
		if (atomic_load(&stop_requested) || rh_now_ns() > deadline)
			break;
		rh_cond_wait_ms(&s->conn_cond, &s->conn_lock, 200);
		pthread_mutex_unlock(&s->conn_lock);
		uint64_t now = rh_now_ns();
		if (now >= s->next_status_ns) {
			write_status(s);
			s->next_status_ns = now + 1000000000ull;
		}
		flush_refusals(s);
		pthread_mutex_lock(&s->conn_lock);
	}
	/* From here on a newly authenticated connection is refused as busy
	 * (or, once the session is over, waits for the next one). */
	s->claimed = true;
	pthread_mutex_unlock(&s->conn_lock);
}

/* Serve the connection a handshake thread claimed, then stop the marking
 * thread. The session's result, logged. */
static int run_session(server *s, rh_error *err)
{
	set_state(s, "serving", "cpu-server");
	int rc = serve(s, err);
	pthread_mutex_lock(&s->conn_lock);
	s->ending = true;
	pthread_mutex_unlock(&s->conn_lock);
	/* The marking thread may be blocked sending to a CPU server that is
	 * gone; it would hold up the release (and the memory) for a whole
	 * timeout. Shutting the socket down makes that send fail now. */
	if (rc != RH_OK && rh_tp_fd(s->conn) >= 0)
		shutdown(rh_tp_fd(s->conn), SHUT_RDWR);
	rh_dgc_close(s->dgc);
	s->dgc = NULL;
	if (rc == RH_OK)
		rh_log(RH_LOG_INFO, "tracerd", "CPU server left; releasing the partition");
	else {
		sanitize(err->msg);
		rh_log(RH_LOG_ERROR, "tracerd", "CPU server lost: %s; releasing the partition",
		       err->msg);
	}
	return rc;
}

/* Everything one session held goes (operations.R1): the connection, the
 * partition's mapping and memfds with every page written, the type table,
 * the session's counters. The marking thread is gone already. */
static void release_session(server *s)
{
	if (s->conn)
		rh_tp_close(s->conn);
	s->conn = NULL;
	rh_host_close(&s->host);
	rh_typetab_free(&s->types);
	rh_typetab_init(&s->types);
	free(s->types_buf);
	s->types_buf = NULL;
	s->types_total = s->types_have = 0;
	s->next_limit_ns = 0;
	pthread_mutex_lock(&s->st_lock);
	s->st = (rh_server_status){0};
	pthread_mutex_unlock(&s->st_lock);
}

/* A fresh, empty partition for the next CPU server, then the handshake
 * threads may hand one over again. */
static int next_session(server *s, rh_error *err)
{
	release_session(s);
	/* A spare maps its partition when a CPU server names it. */
	int rc = s->o->spare ? RH_OK : rh_host_open(&s->host, s->o->cfg, s->o->index, err);
	pthread_mutex_lock(&s->conn_lock);
	s->claimed = rc != RH_OK;
	s->ending = false;
	pthread_cond_broadcast(&s->conn_cond);
	pthread_mutex_unlock(&s->conn_lock);
	if (rc == RH_OK)
		rh_log(RH_LOG_INFO, "tracerd", "%s %u released; waiting for a CPU server",
		       s->o->spare ? "spare" : "partition", s->o->index);
	return rc;
}

static int start_listening(server *s, rh_error *err)
{
	const rh_server_opts *o = s->o;
	const rh_config *cfg = o->cfg;
	s->topts = (rh_tp_opts){.provider = cfg->provider,
	                        .secret = cfg->secret,
	                        .secret_len = cfg->secret_len,
	                        .timeout_ms = cfg->timeout_ms};
	const rh_server_config *at = o->spare ? &cfg->spares[o->index] : &cfg->servers[o->index];
	const char *host = o->listen_host ? o->listen_host : at->host;
	uint16_t port = o->listen_host ? o->listen_port : at->port;
	int rc = rh_tp_listen(&s->topts, host, port, &s->listener, err);
	if (rc != RH_OK)
		return rc;
	s->port = rh_tp_listener_port(s->listener);
	/* rdma_cm delivers connection requests on one event channel, which
	 * one thread at a time may read. */
	int n = o->max_handshakes > 0 ? o->max_handshakes : RH_SERVER_DEFAULT_HANDSHAKES;
	if (n > RH_SERVER_MAX_HANDSHAKES)
		n = RH_SERVER_MAX_HANDSHAKES;
	if (!strcmp(cfg->provider, "verbs"))
		n = 1;
	rh_log(RH_LOG_INFO, "tracerd",
	       "%s %u listening on %s:%u (%s, at most %d handshakes at once)",
	       o->spare ? "spare" : "partition", o->index, host, s->port, cfg->provider, n);
	for (s->n_hs = 0; s->n_hs < n; s->n_hs++)
		if (pthread_create(&s->hs[s->n_hs], NULL, handshaker_main, s) != 0)
			return rh_err_set(err, RH_ENOMEM, "tracer: cannot start handshake threads");
	/* The status file appears once the tracer is ready, threads and all. */
	set_state(s, "waiting", "");
	return RH_OK;
}

static uint64_t deadline_of(int wait_ms)
{
	return wait_ms < 0 ? UINT64_MAX : rh_now_ns() + (uint64_t)wait_ms * 1000000ull;
}

int rh_server_run(const rh_server_opts *o, rh_error *err)
{
	server *s = calloc(1, sizeof *s);
	if (!s)
		return rh_err_set(err, RH_ENOMEM, "tracer: out of memory");
	s->o = o;
	pthread_mutex_init(&s->st_lock, NULL);
	pthread_mutex_init(&s->send_lock, NULL);
	pthread_mutex_init(&s->conn_lock, NULL);
	pthread_cond_init(&s->conn_cond, NULL);
	rh_typetab_init(&s->types);
	const rh_config *cfg = o->cfg;
	s->host.data_fd = s->host.meta_fd = s->host.rdata_fd = -1;
	int rc = o->spare ? RH_OK : rh_host_open(&s->host, cfg, o->index, err);
	if (rc != RH_OK)
		goto out;
	uint64_t pinned = s->host.part.size + (s->host.rdata ? s->host.rpart.size : 0);
	if (o->memory_limit && s->host.pinned && o->memory_limit < pinned) {
		/* The memory region pins the whole partition (and the copy it
		 * keeps) at registration. */
		rc = rh_err_set(err, RH_ECONFIG,
		                "tracer: --memory-limit %llu MiB is below the %llu MiB of its "
		                "partition%s, which verbs pins as a whole",
		                (unsigned long long)(o->memory_limit >> 20),
		                (unsigned long long)(pinned >> 20),
		                s->host.rdata ? " and the copy it keeps" : "");
		goto out;
	}
	if ((rc = start_listening(s, err)) != RH_OK)
		goto out;
	/* One session after another (operations.R1); --wait-ms bounds each wait
	 * for the next CPU server. */
	for (;;) {
		wait_for_cpu(s, deadline_of(o->accept_timeout_ms));
		if (!s->conn) {
			rc = atomic_load(&stop_requested)
			             ? RH_OK
			             : rh_err_set(err, RH_ETIMEDOUT,
			                          "tracer: no CPU server connected in %d ms",
			                          o->accept_timeout_ms);
			break;
		}
		rc = run_session(s, err);
		if (o->once || atomic_load(&stop_requested))
			break;
		if ((rc = next_session(s, err)) != RH_OK)
			break;
		set_state(s, "waiting", "");
	}
out:
	handshakers_stop(s);
	set_state(s, "exiting", NULL);
	release_session(s);
	if (s->listener)
		rh_tp_listener_close(s->listener);
	rh_typetab_free(&s->types);
	if (o->status_path)
		unlink(o->status_path);
	pthread_mutex_destroy(&s->st_lock);
	pthread_mutex_destroy(&s->send_lock);
	pthread_mutex_destroy(&s->conn_lock);
	pthread_cond_destroy(&s->conn_cond);
	free(s);
	return rc;
}
