/* Which memory server holds what: the host a page is read from and written
 * to, losses, and rebuilding a lost server's share on a spare
 * (docs/resilience.md, red.R4, red.R5, red.S1-S3).
 *
 * Each slot (a partition's index) names its current host through one
 * atomic pointer, the original host's struct or, once a spare took over,
 * the spare's; and has a state: up, down, or rebuilding (written to, not
 * read from). A reader loads the state, then the pointer, then uses the
 * host's connection: the rebuild stores the pointer before the state, so a
 * reader never sees half a switch. Host structs are never freed while the
 * swap system runs: a reader that chose one may still use it after a
 * switch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swap/internal.h"

const rh_swap_host *rh_swap_slot(rh_swap *s, size_t i)
{
	return atomic_load_explicit(&s->cur[i], memory_order_acquire);
}

static int state_of(rh_swap *s, size_t i)
{
	return atomic_load_explicit(&s->hstate[i], memory_order_acquire);
}

const rh_swap_host *rh_swap_host_of(rh_swap *s, uintptr_t a)
{
	/* Partitions never move: the original structs' geometry is the map. */
	for (size_t i = 0; i < s->o.n_hosts; i++)
		if (a - s->hosts[i].part.base < s->hosts[i].part.size)
			return rh_swap_slot(s, i);
	return NULL;
}

bool rh_swap_host_up(rh_swap *s, const rh_swap_host *h)
{
	return state_of(s, h->part.index) == RH_HOST_UP && rh_swap_slot(s, h->part.index) == h;
}

bool rh_swap_host_writable(rh_swap *s, const rh_swap_host *h)
{
	int st = state_of(s, h->part.index);
	return (st == RH_HOST_UP || st == RH_HOST_REBUILDING) &&
	       rh_swap_slot(s, h->part.index) == h;
}

const rh_swap_host *rh_swap_reader(rh_swap *s, uintptr_t a)
{
	const rh_swap_host *h = rh_swap_host_of(s, a);
	if (!h)
		return NULL;
	size_t i = h->part.index;
	if (state_of(s, i) == RH_HOST_UP)
		return rh_swap_slot(s, i);
	int r = s->hosts[i].replica;
	if (r >= 0 && state_of(s, (size_t)r) == RH_HOST_UP)
		return rh_swap_slot(s, (size_t)r);
	return NULL;
}

/* Under host_lock: a partition that no host up can be read from, or -1. */
static int partition_gone(rh_swap *s)
{
	for (size_t p = 0; p < s->o.n_hosts; p++) {
		int r = s->hosts[p].replica;
		if (state_of(s, p) != RH_HOST_UP && (r < 0 || state_of(s, (size_t)r) != RH_HOST_UP))
			return (int)p;
	}
	return -1;
}

bool rh_swap_host_lost(rh_swap *s, size_t i, const rh_error *cause)
{
	pthread_mutex_lock(&s->host_lock);
	bool first = state_of(s, i) != RH_HOST_DOWN;
	if (first) {
		atomic_store_explicit(&s->hstate[i], RH_HOST_DOWN, memory_order_release);
		atomic_fetch_add(&s->n_lost, 1);
	}
	const rh_swap_host *h = rh_swap_slot(s, i);
	int gone = partition_gone(s);
	char lost[512] = "";
	size_t at = 0;
	for (size_t k = 0; gone >= 0 && k < s->o.n_hosts; k++)
		if (state_of(s, k) == RH_HOST_DOWN && at < sizeof lost)
			at += (size_t)snprintf(lost + at, sizeof lost - at, "%s%s", at ? ", " : "",
			                       rh_swap_slot(s, k)->name);
	pthread_mutex_unlock(&s->host_lock);
	if (gone < 0) {
		if (first)
			rh_log(RH_LOG_ERROR, "swap",
			       "%s lost: %s; its partition is read from and written to the copy "
			       "%s keeps (redundancy replicate), and a further loss of that "
			       "server ends the program",
			       h->name, cause->msg, rh_swap_slot(s, (size_t)h->replica)->name);
		return true;
	}
	rh_error e;
	if (s->hosts[gone].replica < 0)
		rh_err_set(&e, cause->code == RH_OK ? RH_EPEER : cause->code, "%s lost: %s",
		           h->name, cause->msg);
	else
		rh_err_set(&e, RH_EPEER,
		           "%s lost: %s; partition %d has no copy left (lost: %s), beyond the "
		           "configured redundancy",
		           h->name, cause->msg, gone, lost);
	rh_swap_fatal(s, &e);
	return false;
}

size_t rh_swap_hosts_lost(rh_swap *s)
{
	return atomic_load(&s->n_lost);
}

bool rh_swap_host_down(rh_swap *s, size_t i)
{
	return state_of(s, i) == RH_HOST_DOWN;
}

bool rh_swap_host_failed(rh_swap *s, const rh_swap_host *h, const rh_error *err)
{
	/* A host already replaced in its slot failing late changes nothing. */
	if (rh_swap_slot(s, h->part.index) != h)
		return partition_gone(s) < 0;
	return rh_swap_host_lost(s, h->part.index, err);
}

/* ---------------------------------------------------------------- rebuild */

/* Whether page pg's bytes live on its holders: it is, or may be again,
 * read from them (EVICTED, FETCHING) or dropped without a write (CLEAN). */
static bool remote_bytes(rh_swap *s, size_t pg)
{
	uint8_t st = rh_swap_get(s, pg);
	return st == RH_PAGE_EVICTED || st == RH_PAGE_FETCHING || st == RH_PAGE_CLEAN;
}

/* Copy n pages (addresses in pages) from host `from` to host `to` through
 * ebuf, which the evictor's lock, held by the caller, reserves. */
static int copy_pages(rh_swap *s, const rh_swap_host *from, const rh_swap_host *to,
                      const uintptr_t *pages, size_t n, rh_error *err, const rh_swap_host **bad)
{
	rh_tp_sge sg[RH_EVICT_BATCH];
	for (size_t k = 0; k < n; k++)
		sg[k] = (rh_tp_sge){s->ebuf + k * RH_PAGE_SIZE, pages[k], RH_PAGE_SIZE};
	uint64_t id = rh_swap_wr_id(s);
	*bad = from;
	int rc = rh_tp_read(from->conn, sg, n, id, err);
	if (rc == RH_OK)
		rc = rh_tp_wait(from->conn, id, (int)s->o.timeout_ms, err);
	if (rc != RH_OK)
		return rc;
	*bad = to;
	id = rh_swap_wr_id(s);
	rc = rh_tp_write(to->conn, sg, n, id, err);
	if (rc == RH_OK)
		rc = rh_tp_wait(to->conn, id, (int)s->o.timeout_ms, err);
	return rc;
}

/* red.S2: every page of region r with bytes on its holders, read from
 * `from` and written to `to`, under the evictor's lock (no write-back
 * changes those bytes meanwhile, swap.C4's order). */
static int copy_region(rh_swap *s, uint32_t r, const rh_swap_host *from, const rh_swap_host *to,
                       uint64_t *pages_out, rh_error *err, const rh_swap_host **bad)
{
	uintptr_t start = s->base + ((uintptr_t)r << s->region_shift);
	size_t pg0 = rh_swap_page(s, start);
	uintptr_t batch[RH_EVICT_BATCH];
	int rc = RH_OK;
	pthread_mutex_lock(&s->evict_lock);
	size_t n = 0;
	for (size_t i = 0; rc == RH_OK && i <= s->pages_per_region; i++) {
		if (i < s->pages_per_region && remote_bytes(s, pg0 + i))
			batch[n++] = start + i * RH_PAGE_SIZE;
		if (n && (n == RH_EVICT_BATCH || i == s->pages_per_region)) {
			rc = copy_pages(s, from, to, batch, n, err, bad);
			*pages_out += n;
			n = 0;
		}
	}
	pthread_mutex_unlock(&s->evict_lock);
	return rc;
}

/* red.S2: the spare's tag and log-head words are the CPU server's for every
 * region of the partition, before any write-back reaches it (the tag
 * protocol's CAS expects them). Under the evictor's lock. */
static int init_meta(rh_swap *s, const rh_swap_host *sp, rh_error *err)
{
	const rh_partition *p = &sp->part;
	for (uint32_t l = 0; l < p->n_regions; l++) {
		uint32_t r = p->first_region + l;
		uint64_t meta = p->meta_base + (uint64_t)l * sizeof(rh_region_meta);
		uint64_t id = rh_swap_wr_id(s);
		int rc = rh_tp_write8(sp->conn, meta + offsetof(rh_region_meta, tag), s->tag[r], id,
		                      err);
		if (rc == RH_OK)
			rc = rh_tp_wait(sp->conn, id, (int)s->o.timeout_ms, err);
		id = rh_swap_wr_id(s);
		if (rc == RH_OK)
			rc = rh_tp_write8(sp->conn, meta + offsetof(rh_region_meta, log_head),
			                  s->log_head[r], id, err);
		if (rc == RH_OK)
			rc = rh_tp_wait(sp->conn, id, (int)s->o.timeout_ms, err);
		if (rc != RH_OK)
			return rc;
	}
	return RH_OK;
}

int rh_swap_rebuild(rh_swap *s, size_t i, rh_swap_host *spare, rh_error *err)
{
	uint64_t t0 = rh_now_ns();
	const rh_swap_host *bad = spare;
	int rc = RH_OK;
	/* The buffers this side reads into and writes from, on the new
	 * connection, before anything else uses it. */
	pthread_mutex_lock(&s->host_lock);
	bool room = s->n_spares < RH_MAX_SPARES;
	if (room)
		s->spares[s->n_spares++] = spare; /* freed at close, never before */
	pthread_mutex_unlock(&s->host_lock);
	if (!room) {
		free(spare);
		return rh_err_set(err, RH_EINVAL, "swap: more than %d spares", RH_MAX_SPARES);
	}
	if ((rc = rh_tp_reg(spare->conn, s->fbuf, s->fbuf_len, -1, 0, RH_TP_LOCAL, err)) != RH_OK ||
	    (rc = rh_tp_reg(spare->conn, s->ebuf, s->ebuf_len, -1, 0, RH_TP_LOCAL, err)) != RH_OK)
		return rc;

	/* red.S2: writable before readable. */
	pthread_mutex_lock(&s->evict_lock);
	rc = init_meta(s, spare, err);
	if (rc == RH_OK) {
		pthread_mutex_lock(&s->host_lock);
		atomic_store_explicit(&s->cur[i], spare, memory_order_release);
		atomic_store_explicit(&s->hstate[i], RH_HOST_REBUILDING, memory_order_release);
		pthread_mutex_unlock(&s->host_lock);
	}
	pthread_mutex_unlock(&s->evict_lock);
	if (rc != RH_OK)
		goto failed;

	/* The partition from its copy; the copy the lost server kept from
	 * its partition's owner. */
	uint64_t pages = 0;
	int r = s->hosts[i].replica;
	int kept = -1;
	for (size_t q = 0; q < s->o.n_hosts; q++)
		if (s->hosts[q].replica == (int)i)
			kept = (int)q;
	for (int pass = 0; rc == RH_OK && pass < 2; pass++) {
		size_t part = pass == 0 ? i : (size_t)kept;
		if (pass == 1 && kept < 0)
			break;
		const rh_swap_host *from = rh_swap_slot(s, pass == 0 ? (size_t)r : part);
		const rh_partition *p = &s->hosts[part].part;
		for (uint32_t l = 0; rc == RH_OK && l < p->n_regions; l++) {
			if (atomic_load(&s->rebuild_cancel) || atomic_load(&s->failed))
				return rh_err_set(err, RH_EINVAL, "swap: rebuild stopped");
			if (!rh_swap_host_up(s, from))
				return rh_err_set(err, RH_EPEER, "swap: %s lost during a rebuild",
				                  from->name);
			rc = copy_region(s, p->first_region + l, from, spare, &pages, err, &bad);
		}
	}
	if (rc != RH_OK)
		goto failed;
	pthread_mutex_lock(&s->host_lock);
	atomic_store_explicit(&s->hstate[i], RH_HOST_UP, memory_order_release);
	s->rebuilds++;
	s->rebuild_ns = rh_now_ns() - t0;
	pthread_mutex_unlock(&s->host_lock);
	rh_log(RH_LOG_ERROR, "swap",
	       "partition %zu rebuilt on %s in %.1f ms (%llu pages copied): redundancy restored", i,
	       spare->name, (double)(rh_now_ns() - t0) / 1e6, (unsigned long long)pages);
	return RH_OK;
failed:
	/* The spare, or a source, failed: it is lost like any host. */
	rh_swap_host_failed(s, bad, err);
	return rc;
}

void rh_swap_rebuild_cancel(rh_swap *s)
{
	atomic_store(&s->rebuild_cancel, true);
}

void rh_swap_rebuild_stats(rh_swap *s, uint64_t *rebuilds, uint64_t *last_ns)
{
	pthread_mutex_lock(&s->host_lock);
	*rebuilds = s->rebuilds;
	*last_ns = s->rebuild_ns;
	pthread_mutex_unlock(&s->host_lock);
}
