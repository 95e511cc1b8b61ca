/* The CPU server's side of the control path: one authenticated connection
 * per memory server, the HELLO exchange, shipping the type table,
 * heartbeats, and FREE messages for regions the collector released.
 *
 * Liveness: a monitor thread pings every host each timeout/4 and reads what
 * comes back; a host that sends nothing for timeout_ms, closes, or reports
 * an ERROR is lost, and the heap's fatal handler is called with a message
 * naming it. Hosts, in turn, drop a CPU server that is silent for
 * timeout_ms, so the pings also keep them alive.
 *
 * Seam: tests/fuzz/fuzz_remote.c compiles this file into its harness and
 * calls on_message() on an rh_remote it builds by hand, with the transport
 * calls stubbed; on_message must keep depending only on the struct and on
 * rh_tp_send (for relays).
 */
#include <poll.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/grow.h"
#include "wire/proto.h"
#include "runtime/remote.h"

struct rh_remote {
	const rh_config *cfg;
	rh_swap_host *hosts;
	size_t n_hosts;
	uint64_t *last_heard; /* per host, ns; under lock */
	uint32_t *free_acked; /* per host: seq of the last FREE done; under lock */
	pthread_mutex_t lock; /* last_heard, free_acked, marked, evac */
	pthread_cond_t cond;  /* free_acked advanced, an evacuation ended, or the monitor ended */
	/* Sends only: never held while waiting for another lock, so the
	 * monitor keeps receiving while a large message goes out. */
	pthread_mutex_t send_lock;
	uint32_t n_regions;
	rh_marked_desc *marked; /* per region: the last MARKED report (ident 0: none) */
	uint8_t *has_marked;
	uint64_t n_marked;    /* MARKED entries received */
	rh_remote_evac *evac; /* per host: the EVACUATE in progress */
	rh_remote_fix *fix;   /* per host: FIX_CARDS in progress */
	rh_remote_full full;
	uint8_t buf[RH_PROTO_MAX];
	uint8_t rbuf[RH_PROTO_MAX];
	pthread_t monitor;
	bool monitor_started;
	atomic_bool stop;
	/* 1 + the host declared lost first; 0 while none is. One word, so a
	 * wait that sees a loss also sees which host it was (lost_err). */
	atomic_int lost;
	/* red.R5: hosts lost while the heap survives them (on_loss said so);
	 * nothing is sent to them again. */
	atomic_bool *down;
	bool (*on_loss)(void *data, size_t host, const rh_error *err);
	/* Held across an on_loss call, so that rh_remote_quiesce waits for one
	 * under way; quiet: the heap is closing, a loss is only marked. */
	pthread_mutex_t loss_lock;
	bool quiet;
	void *loss_data;
	/* red.S3: a spare's host waiting for the monitor to install it in
	 * slot pending_i (under lock); the connections it replaced, closed at
	 * the end (a thread that chose one may still use it). */
	rh_swap_host pending;
	size_t pending_i;
	bool has_pending;
	rh_tp_conn *retired[RH_MAX_SPARES + RH_MAX_SERVERS];
	size_t n_retired;
	uint32_t seq;
	void (*fatal)(void *data, const rh_error *err);
	void *fatal_data;
};

/* Send m on conn, the connection of the host named `name`; conn NULL: the
 * connection of host i, read under the send lock (red.S3 switches it). */
static int send_conn(rh_remote *r, size_t i, rh_tp_conn *conn, const char *name, rh_msg *m,
                     rh_error *err)
{
	char who[sizeof r->hosts[0].name];
	pthread_mutex_lock(&r->send_lock);
	if (!conn)
		conn = r->hosts[i].conn;
	snprintf(who, sizeof who, "%s", name ? name : r->hosts[i].name);
	m->seq = ++r->seq;
	size_t n = rh_msg_encode(m, r->buf, sizeof r->buf);
	int rc = n ? rh_tp_send(conn, r->buf, n, (int)r->cfg->timeout_ms, err)
	           : rh_err_set(err, RH_EINVAL, "control path: cannot encode %s",
	                        rh_msg_type_name(m->type));
	pthread_mutex_unlock(&r->send_lock);
	if (rc != RH_OK) {
		char cause[sizeof err->msg];
		snprintf(cause, sizeof cause, "%s", err->msg);
		/* A transport failure means the memory server is gone. */
		rh_err_set(err, rc, "%s%s: sending %s: %s", who, rc == RH_EINVAL ? "" : " lost",
		           rh_msg_type_name(m->type), cause);
	}
	return rc;
}

static int send_to(rh_remote *r, size_t i, rh_msg *m, rh_error *err)
{
	return send_conn(r, i, NULL, NULL, m, err);
}

static bool host_down(rh_remote *r, size_t i)
{
	return r->down && atomic_load(&r->down[i]);
}

static bool has_on_loss(rh_remote *r)
{
	pthread_mutex_lock(&r->lock);
	bool yes = r->on_loss != NULL;
	pthread_mutex_unlock(&r->lock);
	return yes;
}

/* Host i is lost (why). True if the heap is lost with it: the fatal
 * handler was called. With redundancy, on_loss decides (red.R4): a host
 * whose partitions keep a copy elsewhere is only marked down. */
static bool lose(rh_remote *r, size_t i, const char *why)
{
	rh_error e;
	rh_err_set(&e, RH_EPEER, "%s", why);
	pthread_mutex_lock(&r->loss_lock);
	if (r->quiet) {
		/* red.Q1: the heap closes; nothing is read from i again. */
		atomic_store(&r->down[i], true);
		pthread_mutex_unlock(&r->loss_lock);
		return false;
	}
	pthread_mutex_lock(&r->lock);
	bool (*on_loss)(void *, size_t, const rh_error *) = r->on_loss;
	void *data = r->loss_data;
	pthread_mutex_unlock(&r->lock);
	bool survived = on_loss && on_loss(data, i, &e);
	pthread_mutex_unlock(&r->loss_lock);
	if (survived) {
		atomic_store(&r->down[i], true);
		return false;
	}
	int none = 0;
	if (!atomic_compare_exchange_strong(&r->lost, &none, (int)i + 1))
		return true;
	rh_err_set(&e, RH_EPEER, "%s lost: %s", r->hosts[i].name, why);
	rh_log(RH_LOG_ERROR, "remote", "%s", e.msg);
	/* With on_loss, the swap system has called the fatal handler. */
	if (r->fatal && !on_loss)
		r->fatal(r->fatal_data, &e);
	return true;
}

/* A wait that ended because a memory server was lost, while doing `what`:
 * the error names the server lost (not the one waited for, which may be
 * another). */
static int lost_err(rh_remote *r, rh_error *err, const char *what)
{
	int i = atomic_load(&r->lost) - 1;
	return rh_err_set(err, RH_EPEER, "%s was lost %s",
	                  i >= 0 ? r->hosts[i].name : "a memory server", what);
}

/* A tracer's references into another partition, passed on unchanged. The
 * batch is counted for its receiver before the sender's ack can arrive
 * (same connection, later), so the counts never reach zero early. */
static int relay(rh_remote *r, size_t i, rh_msg *m, size_t len)
{
	uint32_t to = m->u.mark_refs.partition;
	pthread_mutex_lock(&r->lock);
	r->last_heard[i] = rh_now_ns();
	bool ok = r->full.active && to < r->n_hosts && to != i &&
	          !(m->u.mark_refs.flags & RH_MARK_ROOTS);
	if (ok) {
		r->full.outstanding[to]++;
		r->full.relayed++;
	}
	pthread_mutex_unlock(&r->lock);
	if (!ok) {
		lose(r, i, "MARK_REFS outside a full marking or for its own partition");
		return -1;
	}
	rh_error e;
	pthread_mutex_lock(&r->send_lock);
	/* The decoded message points into rbuf: re-send those bytes. */
	int rc = rh_tp_send(r->hosts[to].conn, r->rbuf, len, (int)r->cfg->timeout_ms, &e);
	pthread_mutex_unlock(&r->send_lock);
	if (rc != RH_OK) {
		lose(r, to, e.msg);
		return -1;
	}
	return 0;
}

/* Handle one message from host i (monitor thread). 0, or -1 if lost. */
/* The handlers of on_message, one per message a tracer sends, called
 * under r->lock: each returns NULL, or why host i broke the protocol. */

static const char *on_marked(rh_remote *r, size_t i, const rh_msg *m)
{
	const rh_partition *p = &r->hosts[i].part;
	for (uint32_t k = 0; k < m->u.marked.n; k++) {
		rh_marked_desc d;
		rh_msg_marked_get(&m->u.marked, k, &d);
		if (d.region - p->first_region >= p->n_regions)
			return "MARKED names a region outside its partition";
		r->marked[d.region] = d;
		r->has_marked[d.region] = 1;
		r->n_marked++;
	}
	return NULL;
}

static const char *on_mark_ack(rh_remote *r, size_t i, const rh_msg *m)
{
	if (!r->full.active || m->u.mark_ack.batches > r->full.outstanding[i])
		return "MARK_ACK for batches never sent";
	r->full.outstanding[i] -= m->u.mark_ack.batches;
	pthread_cond_broadcast(&r->cond);
	return NULL;
}

static const char *on_full_done(rh_remote *r, size_t i, const rh_msg *m)
{
	rh_remote_full *f = &r->full;
	const rh_partition *p = &r->hosts[i].part;
	if (!f->active || m->u.full_done.id != f->id || f->done[i])
		return "FULL_DONE for no full marking in progress";
	const char *bad = NULL;
	for (uint32_t k = 0; k < m->u.full_done.n; k++) {
		rh_region_live rl;
		rh_msg_full_done_get(&m->u.full_done, k, &rl);
		if (rl.region - p->first_region >= p->n_regions) {
			bad = "FULL_DONE names a region outside its partition";
			break;
		}
		f->live[rl.region] = rl.live_bytes;
		f->reported[rl.region] = 1;
	}
	if (m->u.full_done.flags & RH_FULL_DONE_LAST) {
		f->done[i] = true;
		f->bytes_marked += m->u.full_done.bytes_marked;
		f->mark_ns += m->u.full_done.mark_ns;
		pthread_cond_broadcast(&r->cond);
	}
	return bad;
}

/* EVAC_REFS' pairs appended to *pairs. Not rh_grow: running out here ends
 * the heap the way every failure on this connection does (lose(), the
 * fatal handler naming the tracer), not by abort(). */
static const char *append_pairs(rh_ref_pair **pairs, size_t *n, size_t *cap,
                                const rh_msg_evac_refs *er)
{
	rh_ref_pair *pp = rh_grow_try(*pairs, cap, *n + er->n, sizeof *pp, 4096);
	if (!pp)
		return "out of memory for EVAC_REFS";
	*pairs = pp;
	for (uint32_t k = 0; k < er->n; k++)
		rh_msg_evac_refs_get(er, k, &pp[(*n)++]);
	return NULL;
}

/* For the full marking in progress, or for host i's EVACUATE. */
static const char *on_evac_refs(rh_remote *r, size_t i, const rh_msg *m)
{
	rh_remote_full *f = &r->full;
	rh_remote_evac *ev = &r->evac[i];
	if (f->active && m->u.evac_refs.id == f->id)
		return append_pairs(&f->pairs, &f->n_pairs, &f->cap_pairs, &m->u.evac_refs);
	if (!ev->want || ev->done || m->u.evac_refs.id != ev->id)
		return "EVAC_REFS for no EVACUATE in progress";
	return append_pairs(&ev->pairs, &ev->n_pairs, &ev->cap_pairs, &m->u.evac_refs);
}

static const char *on_cards_fixed(rh_remote *r, size_t i, const rh_msg *m)
{
	rh_remote_fix *fx = &r->fix[i];
	const rh_msg_cards_fixed *cf = &m->u.cards_fixed;
	const rh_partition *p = &r->hosts[i].part;
	const char *bad = NULL;
	if (!fx->outstanding || cf->id != fx->id)
		return "CARDS_FIXED for no FIX_CARDS in progress";
	rh_fix_ent *grown = rh_grow_try(fx->ents, &fx->cap, fx->n + cf->n, sizeof *grown, 1024);
	if (!grown)
		return "out of memory for CARDS_FIXED";
	fx->ents = grown;
	for (uint32_t k = 0; k < cf->n && !bad; k++) {
		rh_fix_ent fe;
		rh_msg_cards_fixed_get(cf, k, &fe);
		if (fe.addr - p->base >= p->size ||
		    (fe.kind == RH_FIX_REF && fe.region - p->first_region >= p->n_regions))
			bad = "CARDS_FIXED names an address or region outside its partition";
		fx->ents[fx->n++] = fe;
	}
	if (!bad && (cf->flags & RH_CARDS_FIXED_LAST)) {
		fx->outstanding--;
		pthread_cond_broadcast(&r->cond);
	}
	return bad;
}

static const char *on_evacuated(rh_remote *r, size_t i, const rh_msg *m)
{
	rh_remote_evac *ev = &r->evac[i];
	const rh_msg_evacuated *ed = &m->u.evacuated;
	const char *bad = NULL;
	if (!ev->want || ev->done || ed->id != ev->id || ed->n_src != ev->n_src ||
	    ed->n_dst != ev->n_dst)
		return "EVACUATED does not answer the EVACUATE in progress";
	for (uint32_t k = 0; k < ed->n_src && !bad; k++) {
		rh_evac_src s;
		rh_msg_evacuated_src(ed, k, &s);
		if (s.region != ev->src[k].region)
			bad = "EVACUATED lists other source regions than asked";
		ev->src[k] = s;
	}
	for (uint32_t k = 0; k < ed->n_dst && !bad; k++) {
		rh_evac_dst d;
		rh_msg_evacuated_dst(ed, k, &d);
		if (d.region != ev->dst[k].region)
			bad = "EVACUATED lists other destination regions than granted";
		else if (d.top > r->cfg->region_size)
			bad = "EVACUATED gives a destination top past its region";
		ev->dst[k] = d;
	}
	ev->remark_ns = ed->remark_ns;
	ev->evac_ns = ed->evac_ns;
	ev->bytes_copied = ed->bytes_copied;
	ev->objects_copied = ed->objects_copied;
	ev->pages_rescanned = ed->pages_rescanned;
	ev->done = true;
	pthread_cond_broadcast(&r->cond);
	return bad;
}

static int on_message(rh_remote *r, size_t i, size_t len)
{
	rh_msg m;
	rh_error e;
	if (rh_msg_decode(r->rbuf, len, &m, &e) != RH_OK) {
		lose(r, i, e.msg);
		return -1;
	}
	if (m.type == RH_MSG_ERROR) {
		lose(r, i, m.u.error.text);
		return -1;
	}
	if (m.type == RH_MSG_MARK_REFS)
		return relay(r, i, &m, len);
	const char *bad = NULL;
	pthread_mutex_lock(&r->lock);
	r->last_heard[i] = rh_now_ns();
	switch (m.type) {
	case RH_MSG_FREE_OK:
		r->free_acked[i] = m.seq;
		pthread_cond_broadcast(&r->cond);
		break;
	case RH_MSG_MARKED:
		bad = on_marked(r, i, &m);
		break;
	case RH_MSG_MARK_ACK:
		bad = on_mark_ack(r, i, &m);
		break;
	case RH_MSG_FULL_DONE:
		bad = on_full_done(r, i, &m);
		break;
	case RH_MSG_EVAC_REFS:
		bad = on_evac_refs(r, i, &m);
		break;
	case RH_MSG_CARDS_FIXED:
		bad = on_cards_fixed(r, i, &m);
		break;
	case RH_MSG_EVACUATED:
		bad = on_evacuated(r, i, &m);
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&r->lock);
	if (bad) {
		lose(r, i, bad);
		return -1;
	}
	return 0;
}

/* red.S3, on the monitor thread, which alone reads the hosts' connections
 * outside the send lock: a spare's connection, name and metadata address
 * replace the lost host's in its slot; pings, FREE and BYE go to it. */
static void install_pending(rh_remote *r, struct pollfd *pfd)
{
	pthread_mutex_lock(&r->send_lock);
	pthread_mutex_lock(&r->lock);
	if (r->has_pending) {
		size_t i = r->pending_i;
		rh_swap_host *h = &r->hosts[i];
		if (h->conn && r->n_retired < sizeof r->retired / sizeof r->retired[0])
			r->retired[r->n_retired++] = h->conn;
		h->conn = r->pending.conn;
		h->part.meta_base = r->pending.part.meta_base;
		memcpy(h->name, r->pending.name, sizeof h->name);
		r->last_heard[i] = rh_now_ns();
		r->free_acked[i] = r->seq; /* what the old host was sent counts as done */
		if (pfd)
			pfd[i].fd = rh_tp_fd(h->conn);
		atomic_store(&r->down[i], false);
		r->has_pending = false;
		pthread_cond_broadcast(&r->cond);
	}
	pthread_mutex_unlock(&r->lock);
	pthread_mutex_unlock(&r->send_lock);
}

static void *monitor_main(void *arg)
{
	rh_remote *r = arg;
	uint64_t period = (uint64_t)r->cfg->timeout_ms * 1000000ull / 4, next_ping = 0;
	struct pollfd *pfd = calloc(r->n_hosts, sizeof *pfd);
	bool all_fds = pfd != NULL;
	/* operations.R3: the open pinged nobody while it HELLOed the hosts
	 * after each one, so a host's silence counts from here. */
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < r->n_hosts; i++)
		r->last_heard[i] = rh_now_ns();
	pthread_mutex_unlock(&r->lock);
	for (size_t i = 0; pfd && i < r->n_hosts; i++) {
		pfd[i].fd = rh_tp_fd(r->hosts[i].conn);
		pfd[i].events = POLLIN;
		all_fds &= pfd[i].fd >= 0;
	}
	while (!atomic_load(&r->stop) && !atomic_load(&r->lost)) {
		install_pending(r, pfd);
		uint64_t now = rh_now_ns();
		if (now >= next_ping) {
			for (size_t i = 0; i < r->n_hosts; i++) {
				if (host_down(r, i))
					continue;
				rh_msg m = {.type = RH_MSG_PING};
				m.u.ping.seq = now;
				m.u.ping.time_ns = now;
				rh_error e;
				if (send_to(r, i, &m, &e) != RH_OK && lose(r, i, e.msg))
					goto out;
			}
			next_ping = now + period;
		}
		/* Wake on any connection's message; without readiness fds,
		 * fall back to short sleeps. */
		int wait_ms = (int)((next_ping - now) / 1000000) + 1;
		if (wait_ms > 50)
			wait_ms = 50;
		if (!all_fds && wait_ms > 2)
			wait_ms = 2;
		if (pfd)
			poll(pfd, r->n_hosts, wait_ms);
		for (size_t i = 0; i < r->n_hosts; i++) {
			if (host_down(r, i)) {
				if (pfd)
					pfd[i].fd = -1; /* poll skips it */
				continue;
			}
			if (pfd && pfd[i].fd >= 0) {
				uint64_t x;
				if (read(pfd[i].fd, &x, sizeof x) < 0) { /* nothing pending */
				}
			}
			size_t len;
			rh_error e;
			int rc;
			bool gone = false;
			while (!gone && (rc = rh_tp_recv(r->hosts[i].conn, r->rbuf, sizeof r->rbuf,
			                                 &len, 0, &e)) == RH_OK)
				gone = on_message(r, i, len) < 0;
			if (atomic_load(&r->lost))
				goto out;
			if (gone || host_down(r, i))
				continue; /* lost, and the heap goes on (red.R4) */
			if (rc != RH_ETIMEDOUT) {
				if (lose(r, i, e.msg))
					goto out;
				continue;
			}
			pthread_mutex_lock(&r->lock);
			uint64_t silent = rh_now_ns() - r->last_heard[i];
			pthread_mutex_unlock(&r->lock);
			if (silent > (uint64_t)r->cfg->timeout_ms * 1000000ull) {
				char why[96];
				snprintf(why, sizeof why, "no answer for %llu ms",
				         (unsigned long long)(silent / 1000000));
				if (lose(r, i, why))
					goto out;
			}
		}
	}
out:
	free(pfd);
	/* Wake anyone waiting for an acknowledgement. */
	pthread_mutex_lock(&r->lock);
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

/* HELLO to the tracer at `at` as partition i's server, filling h (its
 * connection, partition with the metadata address, replica and name), with
 * buf (RH_PROTO_MAX bytes) for the answer. spare: 1 + its index, or 0. */
static int hello_on(rh_remote *r, size_t i, const rh_server_config *at, size_t spare,
                    rh_swap_host *h, uint8_t *buf, rh_error *err)
{
	const rh_config *cfg = r->cfg;
	rh_partition_of(cfg, (uint32_t)i, &h->part);
	h->replica = rh_replica_holder(cfg, (uint32_t)i); /* red.P1 */
	if (spare)
		snprintf(h->name, sizeof h->name, "memory server %zu (spare %zu, %.40s:%u)", i,
		         spare - 1, at->host, at->port);
	else
		snprintf(h->name, sizeof h->name, "memory server %zu (%.40s:%u)", i, at->host,
		         at->port);
	rh_tp_opts o = {.provider = cfg->provider,
	                .secret = cfg->secret,
	                .secret_len = cfg->secret_len,
	                .timeout_ms = cfg->timeout_ms};
	rh_error e;
	int rc = rh_tp_connect(&o, at->host, at->port, &h->conn, &e);
	if (rc != RH_OK)
		return rh_err_set(err, rc, "%s: %s", h->name, e.msg);
	rh_msg m = {.type = RH_MSG_HELLO};
	m.u.hello = (rh_msg_hello){.partition = (uint32_t)i,
	                           .replica = (uint32_t)(rh_replica_kept_by(cfg, (uint32_t)i) + 1),
	                           .heap_base = cfg->heap_base,
	                           .heap_size = cfg->heap_size,
	                           .region_size = cfg->region_size,
	                           .part_base = h->part.base,
	                           .part_size = h->part.size};
	rc = send_conn(r, i, h->conn, h->name, &m, err);
	size_t len;
	if (rc != RH_OK) {
		/* A tracer that refuses us says why before it closes. */
		if (rh_tp_recv(h->conn, buf, RH_PROTO_MAX, &len, 200, &e) == RH_OK &&
		    rh_msg_decode(buf, len, &m, &e) == RH_OK && m.type == RH_MSG_ERROR)
			return rh_err_set(err, m.u.error.code == RH_EBUSY ? RH_EBUSY : RH_EPEER,
			                  "%s refused: %s", h->name, m.u.error.text);
		return rc;
	}
	if ((rc = rh_tp_recv(h->conn, buf, RH_PROTO_MAX, &len, (int)cfg->timeout_ms, &e)) !=
	            RH_OK ||
	    (rc = rh_msg_decode(buf, len, &m, &e)) != RH_OK)
		return rh_err_set(err, rc, "%s: waiting for HELLO_OK: %s", h->name, e.msg);
	if (m.type == RH_MSG_ERROR)
		return rh_err_set(err, m.u.error.code == RH_EBUSY ? RH_EBUSY : RH_EPEER,
		                  "%s refused: %s", h->name, m.u.error.text);
	if (m.type != RH_MSG_HELLO_OK ||
	    m.u.hello_ok.meta_size < (uint64_t)h->part.n_regions * sizeof(rh_region_meta))
		return rh_err_set(
		        err, RH_EPEER, "%s: bad answer to HELLO (%s, metadata %llu bytes)", h->name,
		        rh_msg_type_name(m.type), (unsigned long long)m.u.hello_ok.meta_size);
	h->part.meta_base = m.u.hello_ok.meta_base;
	return RH_OK;
}

/* The host's silence counts from the monitor's start (operations.R3). */
static int hello(rh_remote *r, size_t i, rh_error *err)
{
	return hello_on(r, i, &r->cfg->servers[i], 0, &r->hosts[i], r->rbuf, err);
}

/* Say BYE to the hosts of a failed attempt and close them: each tracer
 * ends that session, releases it and waits for the next (operations.R1). */
static void disconnect_all(rh_remote *r, bool *had)
{
	for (size_t i = 0; i < r->n_hosts; i++) {
		had[i] = r->hosts[i].conn != NULL;
		if (!had[i])
			continue;
		rh_msg m = {.type = RH_MSG_BYE};
		rh_error e;
		send_to(r, i, &m, &e);
		rh_tp_close(r->hosts[i].conn);
		r->hosts[i].conn = NULL;
	}
}

/* HELLO every host. A tracer busy with other connections' handshakes
 * leaves ours unanswered (RH_ETIMEDOUT); the whole attempt is then
 * repeated while the open timeout lasts (operations.R2), so that no tracer
 * is left holding a session nobody serves. A tracer we had a session with
 * in the last attempt may still be releasing it and answer busy: that is
 * retried too, a busy answer from any other is final. */
static int connect_all(rh_remote *r, rh_error *err)
{
	uint64_t t = (uint64_t)r->cfg->timeout_ms * 1000000ull;
	uint64_t deadline = rh_now_ns() + RH_PROTO_OPEN_TIMEOUTS * t;
	bool *had = calloc(r->n_hosts, sizeof *had);
	if (!had)
		return rh_err_set(err, RH_ENOMEM, "control path: out of memory");
	int rc = RH_OK;
	for (unsigned attempt = 1;; attempt++) {
		size_t i = 0;
		for (rc = RH_OK; rc == RH_OK && i < r->n_hosts; i++)
			rc = hello(r, i, err);
		if (rc == RH_OK)
			break;
		bool again = rc == RH_ETIMEDOUT || (rc == RH_EBUSY && had[i - 1]);
		disconnect_all(r, had);
		if (!again || rh_now_ns() >= deadline)
			break;
		rh_log(RH_LOG_INFO, "remote", "open: attempt %u failed (%s); trying again", attempt,
		       err->msg);
		if (rc == RH_EBUSY)
			usleep(20000);
	}
	free(had);
	return rc;
}

int rh_remote_open(const rh_config *cfg, void (*fatal)(void *, const rh_error *), void *data,
                   rh_remote **out, rh_error *err)
{
	rh_remote *r = calloc(1, sizeof *r);
	if (!r)
		return rh_err_set(err, RH_ENOMEM, "control path: out of memory");
	r->cfg = cfg;
	r->fatal = fatal;
	r->fatal_data = data;
	r->n_hosts = cfg->n_servers;
	r->hosts = calloc(r->n_hosts, sizeof *r->hosts);
	r->last_heard = calloc(r->n_hosts, sizeof *r->last_heard);
	r->free_acked = calloc(r->n_hosts, sizeof *r->free_acked);
	r->down = calloc(r->n_hosts ? r->n_hosts : 1, sizeof *r->down);
	r->n_regions = (uint32_t)(cfg->heap_size / cfg->region_size);
	r->marked = calloc(r->n_regions, sizeof *r->marked);
	r->has_marked = calloc(r->n_regions, 1);
	r->evac = calloc(r->n_hosts, sizeof *r->evac);
	r->fix = calloc(r->n_hosts, sizeof *r->fix);
	r->full.outstanding = calloc(r->n_hosts, sizeof *r->full.outstanding);
	r->full.done = calloc(r->n_hosts, sizeof *r->full.done);
	r->full.live = calloc(r->n_regions, sizeof *r->full.live);
	r->full.reported = calloc(r->n_regions, 1);
	pthread_mutex_init(&r->send_lock, NULL);
	pthread_mutex_init(&r->lock, NULL);
	pthread_mutex_init(&r->loss_lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	int rc = r->hosts && r->last_heard && r->free_acked && r->down && r->marked &&
	                         r->has_marked && r->evac && r->fix
	                 ? RH_OK
	                 : rh_err_set(err, RH_ENOMEM, "control path: out of memory");
	if (rc == RH_OK)
		rc = connect_all(r, err);
	if (rc == RH_OK) {
		if (pthread_create(&r->monitor, NULL, monitor_main, r) != 0)
			rc = rh_err_set(err, RH_EIO, "control path: cannot start the monitor");
		else
			r->monitor_started = true;
	}
	if (rc != RH_OK) {
		rh_remote_close(r);
		return rc;
	}
	*out = r;
	return RH_OK;
}

void rh_remote_close(rh_remote *r)
{
	if (!r)
		return;
	atomic_store(&r->stop, true);
	if (r->monitor_started)
		pthread_join(r->monitor, NULL);
	for (size_t i = 0; r->hosts && i < r->n_hosts; i++) {
		if (!r->hosts[i].conn)
			continue;
		if (!atomic_load(&r->lost) && !host_down(r, i)) {
			rh_msg m = {.type = RH_MSG_BYE};
			rh_error e;
			send_to(r, i, &m, &e);
		}
		rh_tp_close(r->hosts[i].conn);
	}
	for (size_t k = 0; k < r->n_retired; k++)
		rh_tp_close(r->retired[k]);
	pthread_mutex_destroy(&r->lock);
	pthread_mutex_destroy(&r->loss_lock);
	pthread_mutex_destroy(&r->send_lock);
	pthread_cond_destroy(&r->cond);
	for (size_t i = 0; r->evac && i < r->n_hosts; i++) {
		free(r->evac[i].pairs);
		free(r->evac[i].src);
		free(r->evac[i].dst);
	}
	free(r->evac);
	for (size_t i = 0; r->fix && i < r->n_hosts; i++)
		free(r->fix[i].ents);
	free(r->fix);
	free(r->full.outstanding);
	free(r->full.done);
	free(r->full.live);
	free(r->full.reported);
	free(r->full.pairs);
	free(r->marked);
	free(r->has_marked);
	free(r->hosts);
	free(r->last_heard);
	free(r->free_acked);
	free(r->down);
	free(r);
}

const rh_swap_host *rh_remote_hosts(rh_remote *r, size_t *n)
{
	*n = r->n_hosts;
	return r->hosts;
}

int rh_remote_send_types(rh_remote *r, const char *json, rh_error *err)
{
	size_t total = strlen(json);
	for (size_t i = 0; i < r->n_hosts; i++) {
		if (host_down(r, i))
			continue;
		for (size_t off = 0; off < total || off == 0; off += RH_PROTO_CHUNK) {
			size_t n = total - off < RH_PROTO_CHUNK ? total - off : RH_PROTO_CHUNK;
			rh_msg m = {.type = RH_MSG_TYPES};
			m.u.types = (rh_msg_types){(uint32_t)off, (uint32_t)total, (uint32_t)n,
			                           (const uint8_t *)json + off};
			int rc = send_to(r, i, &m, err);
			if (rc != RH_OK)
				return rc;
			if (total == 0)
				break;
		}
	}
	return RH_OK;
}

/* Wait until host i has done the FREE numbered seq (its FREE_OK). */
static int wait_free_ok(rh_remote *r, size_t i, uint32_t seq, rh_error *err)
{
	uint64_t deadline = rh_now_ns() + (uint64_t)r->cfg->timeout_ms * 1000000ull;
	int rc = RH_OK;
	bool late = false;
	pthread_mutex_lock(&r->lock);
	/* red.R5: a host lost meanwhile holds nothing anyone reads again. */
	while ((int32_t)(r->free_acked[i] - seq) < 0 && !host_down(r, i)) {
		if (atomic_load(&r->lost)) {
			rc = lost_err(r, err, "while a region was freed");
			break;
		}
		if (rh_now_ns() >= deadline) {
			late = true;
			break;
		}
		rh_cond_wait_ms(&r->cond, &r->lock, 10);
	}
	pthread_mutex_unlock(&r->lock);
	if (late) {
		char why[96];
		snprintf(why, sizeof why, "no FREE_OK within %u ms", r->cfg->timeout_ms);
		if (lose(r, i, why))
			rc = rh_err_set(err, RH_ETIMEDOUT, "%s lost: %s", r->hosts[i].name, why);
	}
	return rc;
}

int rh_remote_free(rh_remote *r, const uint32_t *regions, size_t n, uint32_t region_shift,
                   uint64_t heap_base, rh_error *err)
{
	uint32_t *mine = malloc((n ? n : 1) * sizeof *mine);
	if (!mine)
		return rh_err_set(err, RH_ENOMEM, "control path: out of memory");
	uint32_t *last = calloc(r->n_hosts, sizeof *last);
	bool *sent = calloc(r->n_hosts, sizeof *sent);
	int rc = last && sent ? RH_OK : rh_err_set(err, RH_ENOMEM, "control path: out of memory");
	for (size_t i = 0; rc == RH_OK && i < r->n_hosts; i++) {
		if (host_down(r, i))
			continue;
		const rh_partition *p = &r->hosts[i].part;
		/* red.P2: and the regions of the partition whose copy it keeps. */
		int kept = rh_replica_kept_by(r->cfg, (uint32_t)i);
		const rh_partition *q = kept >= 0 ? &r->hosts[kept].part : NULL;
		size_t k = 0;
		for (size_t j = 0; j < n; j++) {
			uint64_t a = heap_base + ((uint64_t)regions[j] << region_shift);
			if (a - p->base < p->size || (q && a - q->base < q->size))
				mine[k++] = regions[j];
		}
		for (size_t off = 0; rc == RH_OK && off < k; off += RH_PROTO_MAX_FREE) {
			rh_msg m = {.type = RH_MSG_FREE};
			m.u.free.n = (uint32_t)(k - off < RH_PROTO_MAX_FREE ? k - off
			                                                    : RH_PROTO_MAX_FREE);
			m.u.free.regions = (const uint8_t *)(mine + off);
			rc = send_to(r, i, &m, err);
			last[i] = m.seq;
			sent[i] = true;
			/* A host that cannot be sent to is lost; with its
			 * partition copied elsewhere, the free goes on. */
			if (rc != RH_OK && has_on_loss(r) && !lose(r, i, err->msg)) {
				rc = RH_OK;
				sent[i] = false;
				break;
			}
		}
	}
	/* The regions may be reused as soon as the collection ends: their old
	 * bytes must be gone on the hosts before anything is written back. */
	for (size_t i = 0; rc == RH_OK && i < r->n_hosts; i++)
		if (sent[i])
			rc = wait_free_ok(r, i, last[i], err);
	free(mine);
	free(last);
	free(sent);
	return rc;
}

int rh_remote_spare_hello(rh_remote *r, size_t k, size_t i, rh_swap_host *out, rh_error *err)
{
	memset(out, 0, sizeof *out);
	if (k >= r->cfg->n_spares || i >= r->n_hosts)
		return rh_err_set(err, RH_EINVAL, "control path: no spare %zu or slot %zu", k, i);
	/* Its own buffer: the monitor reads into rbuf meanwhile. */
	uint8_t *buf = malloc(RH_PROTO_MAX);
	if (!buf)
		return rh_err_set(err, RH_ENOMEM, "control path: out of memory");
	int rc = hello_on(r, i, &r->cfg->spares[k], k + 1, out, buf, err);
	free(buf);
	if (rc != RH_OK && out->conn) {
		rh_tp_close(out->conn);
		out->conn = NULL;
	}
	return rc;
}

int rh_remote_adopt(rh_remote *r, size_t i, const rh_swap_host *h, rh_error *err)
{
	uint64_t deadline = rh_now_ns() + (uint64_t)r->cfg->timeout_ms * 1000000ull;
	int rc = RH_OK;
	pthread_mutex_lock(&r->lock);
	r->pending = *h;
	r->pending_i = i;
	r->has_pending = true;
	while (r->has_pending) {
		if (atomic_load(&r->lost) || atomic_load(&r->stop) || rh_now_ns() >= deadline) {
			r->has_pending = false;
			rc = rh_err_set(err, RH_EPEER, "control path: %s was not taken in",
			                h->name);
			break;
		}
		rh_cond_wait_ms(&r->cond, &r->lock, 10);
	}
	pthread_mutex_unlock(&r->lock);
	return rc;
}

void rh_remote_quiesce(rh_remote *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->loss_lock);
	r->quiet = true;
	pthread_mutex_unlock(&r->loss_lock);
}

void rh_remote_on_loss(rh_remote *r, bool (*fn)(void *data, size_t host, const rh_error *err),
                       void *data)
{
	pthread_mutex_lock(&r->lock);
	r->loss_data = data;
	r->on_loss = fn;
	pthread_mutex_unlock(&r->lock);
}

bool rh_remote_lost(rh_remote *r)
{
	return atomic_load(&r->lost) != 0;
}

int rh_remote_send(rh_remote *r, size_t host, rh_msg *m, rh_error *err)
{
	return send_to(r, host, m, err);
}

size_t rh_remote_host_of(rh_remote *r, uint32_t region)
{
	for (size_t i = 0; i < r->n_hosts; i++)
		if (region - r->hosts[i].part.first_region < r->hosts[i].part.n_regions)
			return i;
	return SIZE_MAX;
}

bool rh_remote_marked(rh_remote *r, uint32_t region, rh_marked_desc *out)
{
	pthread_mutex_lock(&r->lock);
	bool has = r->has_marked[region];
	if (has)
		*out = r->marked[region];
	pthread_mutex_unlock(&r->lock);
	return has;
}

void rh_remote_forget_marked(rh_remote *r, uint32_t region)
{
	pthread_mutex_lock(&r->lock);
	r->has_marked[region] = 0;
	pthread_mutex_unlock(&r->lock);
}

uint64_t rh_remote_marked_total(rh_remote *r)
{
	pthread_mutex_lock(&r->lock);
	uint64_t n = r->n_marked;
	pthread_mutex_unlock(&r->lock);
	return n;
}

int rh_remote_evacuate(rh_remote *r, size_t host, uint64_t id, uint32_t flags, const uint32_t *src,
                       uint32_t n_src, const uint32_t *dst, uint32_t n_dst, rh_error *err)
{
	uint32_t *all = malloc(((size_t)n_src + n_dst) * sizeof *all);
	pthread_mutex_lock(&r->lock);
	rh_remote_evac *ev = &r->evac[host];
	free(ev->src);
	free(ev->dst);
	ev->src = calloc(n_src ? n_src : 1, sizeof *ev->src);
	ev->dst = calloc(n_dst ? n_dst : 1, sizeof *ev->dst);
	bool ok = all && ev->src && ev->dst;
	for (uint32_t k = 0; ok && k < n_src; k++)
		ev->src[k].region = src[k];
	for (uint32_t k = 0; ok && k < n_dst; k++)
		ev->dst[k].region = dst[k];
	ev->id = id;
	ev->n_src = n_src;
	ev->n_dst = n_dst;
	ev->n_pairs = 0;
	ev->done = false;
	ev->want = ok;
	pthread_mutex_unlock(&r->lock);
	if (!ok) {
		free(all);
		return rh_err_set(err, RH_ENOMEM, "control path: out of memory for EVACUATE");
	}
	memcpy(all, src, n_src * sizeof *all);
	memcpy(all + n_src, dst, n_dst * sizeof *all);
	rh_msg m = {.type = RH_MSG_EVACUATE};
	m.u.evacuate = (rh_msg_evacuate){id, flags, n_src, n_dst, all};
	int rc = send_to(r, host, &m, err);
	free(all);
	return rc;
}

int rh_remote_evac_wait(rh_remote *r, size_t host, rh_remote_evac **out, rh_error *err)
{
	int rc = RH_OK;
	pthread_mutex_lock(&r->lock);
	rh_remote_evac *ev = &r->evac[host];
	while (!ev->done) {
		/* A tracer that dies or hangs is declared lost by the monitor,
		 * which ends the wait. */
		if (atomic_load(&r->lost)) {
			rc = lost_err(r, err, "during an evacuation");
			break;
		}
		rh_cond_wait_ms(&r->cond, &r->lock, 20);
	}
	ev->want = false;
	pthread_mutex_unlock(&r->lock);
	*out = ev;
	return rc;
}

int rh_remote_fix_cards(rh_remote *r, size_t host, uint64_t id, const uint32_t *moved,
                        uint32_t n_moved, const uint64_t *cards, size_t n_cards,
                        const rh_slot_write *writes, size_t n_writes, rh_error *err)
{
	size_t room = RH_PROTO_MAX - RH_PROTO_HDR - RH_FIX_CARDS_HDR;
	if ((size_t)n_moved * 4 > room / 2)
		return rh_err_set(err, RH_EINVAL,
		                  "control path: %u moved regions do not fit a FIX_CARDS", n_moved);
	room -= (size_t)n_moved * 4;
	pthread_mutex_lock(&r->lock);
	rh_remote_fix *fx = &r->fix[host];
	fx->id = id;
	fx->n = 0;
	fx->outstanding = 0;
	pthread_mutex_unlock(&r->lock);
	size_t c = 0, w = 0;
	while (c < n_cards || w < n_writes) {
		uint32_t nc = (uint32_t)(n_cards - c < room / 8 ? n_cards - c : room / 8);
		size_t left = room - 8 * (size_t)nc;
		uint32_t nw = (uint32_t)(n_writes - w < left / 24 ? n_writes - w : left / 24);
		rh_msg m = {.type = RH_MSG_FIX_CARDS};
		/* cssc.c passes NULL for a list it has none of: no arithmetic
		 * on it (UBSan, found by fuzz-remote). */
		m.u.fix_cards = (rh_msg_fix_cards){id,
		                                   n_moved,
		                                   nc,
		                                   nw,
		                                   moved,
		                                   cards ? cards + c : NULL,
		                                   writes ? writes + w : NULL};
		pthread_mutex_lock(&r->lock);
		fx->outstanding++;
		pthread_mutex_unlock(&r->lock);
		int rc = send_to(r, host, &m, err);
		if (rc != RH_OK)
			return rc;
		c += nc;
		w += nw;
	}
	return RH_OK;
}

int rh_remote_fix_wait(rh_remote *r, size_t host, rh_remote_fix **out, rh_error *err)
{
	int rc = RH_OK;
	pthread_mutex_lock(&r->lock);
	rh_remote_fix *fx = &r->fix[host];
	while (fx->outstanding) {
		if (atomic_load(&r->lost)) {
			rc = lost_err(r, err, "while cards were fixed");
			break;
		}
		rh_cond_wait_ms(&r->cond, &r->lock, 20);
	}
	pthread_mutex_unlock(&r->lock);
	*out = fx;
	return rc;
}

int rh_remote_full_begin(rh_remote *r, uint64_t id, bool conc, rh_error *err)
{
	pthread_mutex_lock(&r->lock);
	rh_remote_full *f = &r->full;
	f->id = id;
	f->active = true;
	f->n_pairs = 0;
	f->bytes_marked = f->mark_ns = f->relayed = 0;
	memset(f->outstanding, 0, r->n_hosts * sizeof *f->outstanding);
	memset(f->done, 0, r->n_hosts * sizeof *f->done);
	memset(f->live, 0, r->n_regions * sizeof *f->live);
	memset(f->reported, 0, r->n_regions);
	pthread_mutex_unlock(&r->lock);
	for (size_t i = 0; i < r->n_hosts; i++) {
		rh_msg m = {.type = RH_MSG_FULL};
		m.u.full = (rh_msg_full){id, conc ? RH_FULL_BEGIN_CONC : RH_FULL_BEGIN};
		int rc = send_to(r, i, &m, err);
		if (rc != RH_OK)
			return rc;
	}
	return RH_OK;
}

int rh_remote_full_roots(rh_remote *r, size_t host, const uint64_t *addrs, size_t n, rh_error *err)
{
	for (size_t k = 0; k < n; k += RH_MARK_REFS_MAX) {
		rh_msg m = {.type = RH_MSG_MARK_REFS};
		size_t c = n - k < RH_MARK_REFS_MAX ? n - k : RH_MARK_REFS_MAX;
		m.u.mark_refs =
		        (rh_msg_mark_refs){(uint32_t)host, RH_MARK_ROOTS, (uint32_t)c, addrs + k};
		pthread_mutex_lock(&r->lock);
		r->full.outstanding[host]++;
		pthread_mutex_unlock(&r->lock);
		int rc = send_to(r, host, &m, err);
		if (rc != RH_OK)
			return rc;
	}
	return RH_OK;
}

/* Under lock: every tracer's FULL_DONE arrived (end), or no batch is
 * outstanding anywhere. */
static bool full_settled(const rh_remote *r, bool end)
{
	bool all = true;
	for (size_t i = 0; i < r->n_hosts; i++)
		all &= end ? r->full.done[i] : r->full.outstanding[i] == 0;
	return all;
}

static int wait_full(rh_remote *r, bool end, rh_error *err)
{
	int rc = RH_OK;
	pthread_mutex_lock(&r->lock);
	for (;;) {
		if (full_settled(r, end))
			break;
		if (atomic_load(&r->lost)) {
			rc = lost_err(r, err, "during a full marking");
			break;
		}
		rh_cond_wait_ms(&r->cond, &r->lock, 20);
	}
	pthread_mutex_unlock(&r->lock);
	return rc;
}

bool rh_remote_full_quiet(rh_remote *r)
{
	pthread_mutex_lock(&r->lock);
	bool all = full_settled(r, false);
	pthread_mutex_unlock(&r->lock);
	return all;
}

int rh_remote_full_wait(rh_remote *r, rh_error *err)
{
	return wait_full(r, false, err);
}

int rh_remote_full_end(rh_remote *r, rh_remote_full **out, rh_error *err)
{
	for (size_t i = 0; i < r->n_hosts; i++) {
		rh_msg m = {.type = RH_MSG_FULL};
		m.u.full = (rh_msg_full){r->full.id, RH_FULL_END};
		int rc = send_to(r, i, &m, err);
		if (rc != RH_OK)
			return rc;
	}
	int rc = wait_full(r, true, err);
	pthread_mutex_lock(&r->lock);
	r->full.active = false;
	pthread_mutex_unlock(&r->lock);
	*out = &r->full;
	return rc;
}
