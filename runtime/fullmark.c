/* Full marking by the tracers (docs/distributed-gc.md, "Full-heap marking"
 * and "Concurrent full marking"). Each tracer marks its partition from the
 * CPU server's roots; references into other partitions go to their owners
 * through the CPU server (runtime/remote.c relays and counts them). Once
 * no batch is outstanding the tracers turn dead objects into fillers and
 * report live bytes and the live objects' cross-region references, from
 * which every remembered set is rebuilt.
 *
 * Stopped-the-world, the whole of it is one pause. Concurrent (fullconc.T1-
 * T6), it begins at the end of a partial pause with a snapshot (TAMS, the
 * roots, every survivor's fields) and the snapshot barrier on; each later
 * pause relays what the barrier logged; the pause that finds no batch
 * outstanding ends it.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/internal.h"

/* ---------------------------------------------------------------- roots */

typedef struct full_roots {
	rh_heap *h;
	bool conc;    /* only the snapshot's objects, below TAMS */
	uint64_t **v; /* per host */
	size_t *n, *cap;
} full_roots;

static void add_root(full_roots *fr, uintptr_t obj)
{
	size_t k = rh_remote_host_of(fr->h->remote, rh_region_index(fr->h, obj));
	if (k == SIZE_MAX)
		return;
	if (fr->n[k] == fr->cap[k]) {
		fr->cap[k] = fr->cap[k] ? fr->cap[k] * 2 : 1024;
		fr->v[k] = realloc(fr->v[k], fr->cap[k] * sizeof **fr->v);
		if (!fr->v[k])
			rh_panic("collector: out of memory for roots");
	}
	fr->v[k][fr->n[k]++] = obj;
}

static bool in_use(const rh_region *r)
{
	return r->kind == RH_REGION_EDEN || r->kind == RH_REGION_OLD ||
	       r->kind == RH_REGION_HUMONGOUS || r->kind == RH_REGION_HUMONGOUS_CONT;
}

static void full_precise(void *ctx, void **slot)
{
	full_roots *fr = ctx;
	uintptr_t v = (uintptr_t)*slot;
	if (fr->conc ? rh_below_tams(fr->h, v)
	             : rh_is_ref(fr->h, v) && in_use(rh_region_of(fr->h, v)))
		add_root(fr, v);
}

static void full_conservative(void *ctx, uintptr_t w)
{
	full_roots *fr = ctx;
	rh_heap *h = fr->h;
	if (fr->conc ? !rh_below_tams(h, w) : !rh_in_heap(h, w) || !in_use(rh_region_of(h, w)))
		return;
	rh_region *r = rh_region_head(h, rh_region_of(h, w));
	if (r->kind != RH_REGION_HUMONGOUS && !r->starts_valid)
		rh_region_build_starts(h, r);
	uintptr_t obj = rh_region_object_at(h, r, w);
	if (obj && rh_hdr_type(rh_hdr((void *)obj)) != RH_FILLER_TYPE)
		add_root(fr, obj); /* nothing moves in this collection: no pin needed */
}

static void roots_init(rh_heap *h, full_roots *fr, size_t n_hosts, bool conc)
{
	*fr = (full_roots){.h = h, .conc = conc};
	fr->v = calloc(n_hosts, sizeof *fr->v);
	fr->n = calloc(n_hosts, sizeof *fr->n);
	fr->cap = calloc(n_hosts, sizeof *fr->cap);
	if (!fr->v || !fr->n || !fr->cap)
		rh_panic("collector: out of memory for roots");
}

/* Every root of the heap, as each host's list of addresses in its
 * partition. fullconc.T1: a concurrent marking's roots also hold every
 * survivor's fields (young regions are not marked: their objects are
 * live this cycle), as the local marking's snapshot does (cmark.C4). */
static void full_gather_roots(rh_heap *h, full_roots *fr, size_t n_hosts, bool conc)
{
	roots_init(h, fr, n_hosts, conc);
	for (rh_mutator *m = h->mutators; m; m = m->next)
		rh_stack_scan(m, full_conservative, full_precise, fr);
	for (size_t i = 0; i < h->n_globals; i++)
		full_precise(fr, h->globals[i]);
	if (conc)
		rh_region_young_slots(h, full_precise, fr, "full marking");
}

static void send_roots(rh_heap *h, full_roots *fr, size_t n_hosts)
{
	rh_error e;
	for (size_t k = 0; k < n_hosts; k++)
		if (fr->n[k] && rh_remote_full_roots(h->remote, k, fr->v[k], fr->n[k], &e) != RH_OK)
			rh_heap_fail(h, &e);
}

static void full_roots_free(full_roots *fr, size_t n_hosts)
{
	for (size_t k = 0; k < n_hosts; k++)
		free(fr->v[k]);
	free(fr->v);
	free(fr->n);
	free(fr->cap);
}

/* ---------------------------------------------------------------- results */

/* fullmark.M1: a region with anything dead in it got fillers on its host:
 * its resident pages are stale now and go before anything reads them (no
 * thread here touches the heap until then; the tracers never write a
 * region whose every object is live, nor a humongous one). Returns how
 * many regions' pages went. */
static uint64_t full_drop_filled(rh_heap *h, const rh_remote_full *f, bool conc)
{
	rh_error e;
	uint64_t dropped = 0;
	for (uint32_t i = 0; i < h->n_regions; i++) {
		rh_region *r = &h->regions[i];
		/* fullconc.T5: young regions were not the marking's. */
		if (!in_use(r) || r->kind == RH_REGION_HUMONGOUS ||
		    (conc && r->kind == RH_REGION_EDEN) || r->kind == RH_REGION_HUMONGOUS_CONT ||
		    f->live[i] >= r->top - r->start)
			continue;
		if (rh_swap_flush_region(h->swap, i, &e) != RH_OK)
			rh_heap_fail(h, &e);
		/* swap.I3: its tracer wrote fillers over the dead objects. */
		rh_swap_remote_writes(h->swap, r->start, h->region_size);
		dropped++;
	}
	return dropped;
}

/* Every region in use must have been reported; the remembered sets are
 * rebuilt from the live objects' cross-region references. */
static void full_rebuild_remsets(rh_heap *h, const rh_remote_full *f, const rh_swap_host *hosts,
                                 bool conc)
{
	rh_error e;
	for (uint32_t i = 0; i < h->n_regions; i++) {
		rh_remset_free(&h->regions[i].remset);
		/* rset.R1: young sources are found by tracing; a concurrent
		 * marking's last pass leaves young regions alone (fullconc.T5). */
		if (in_use(&h->regions[i]) && h->regions[i].kind != RH_REGION_HUMONGOUS_CONT &&
		    !(conc && h->regions[i].kind == RH_REGION_EDEN) && !f->reported[i]) {
			rh_err_set(&e, RH_EPEER, "%s did not report region %u after a full marking",
			           hosts[rh_remote_host_of(h->remote, i)].name, i);
			rh_heap_fail(h, &e);
		}
	}
	for (size_t j = 0; j < f->n_pairs; j++) {
		uintptr_t slot = (uintptr_t)f->pairs[j].slot, v = (uintptr_t)f->pairs[j].value;
		if (!rh_in_heap(h, slot) || (slot & 7) || !in_use(rh_region_of(h, slot))) {
			rh_err_set(&e, RH_EPEER, "a tracer reported a field at %p outside the heap",
			           (void *)slot);
			rh_heap_fail(h, &e);
		}
		if (rh_is_ref(h, v) && rh_region_index(h, slot) != rh_region_index(h, v))
			rh_remember(h, slot, v);
	}
}

/* Regions with nothing live are freed, the rest are old with their
 * reported live bytes; no copy destination survives. Returns the live
 * bytes; *freed the bytes freed. */
static uint64_t full_reclaim(rh_heap *h, const rh_remote_full *f, uint64_t *freed, bool conc)
{
	uint64_t live_total = 0;
	*freed = 0;
	pthread_mutex_lock(&h->alloc_lock);
	for (uint32_t i = 0; i < h->n_regions; i++) {
		rh_region *r = &h->regions[i];
		if (!in_use(r) || r->kind == RH_REGION_HUMONGOUS_CONT ||
		    (conc && r->kind == RH_REGION_EDEN))
			continue;
		uint64_t live = f->live[i];
		live_total += live;
		if (!live) {
			*freed += (r->kind == RH_REGION_HUMONGOUS ? r->span : 1) * h->region_size;
			if (r->kind == RH_REGION_HUMONGOUS)
				rh_region_release(h, r);
			else
				rh_region_release_cold(h, r);
			continue;
		}
		if (r->kind == RH_REGION_EDEN) {
			r->kind = RH_REGION_OLD; /* what survives a full collection is old */
			h->n_eden--;
			h->n_old++;
		}
		r->live_bytes = live;
		r->live_known = 1;
		r->survivals++;
		r->ident++;
		r->starts_valid = 0;
		r->old_top = r->top;
	}
	memset(h->dest_region, 0, sizeof h->dest_region);
	/* A concurrent marking's end keeps eden and the survivors as they
	 * are (fullconc.T5). */
	if (!conc) {
		h->eden_cur = 0;
		for (uint32_t a = 0; a < RH_TENURE; a++)
			h->surv_dest[a] = 0;
		h->surv_taken = 0;
		h->n_surv = 0;
	}
	pthread_mutex_unlock(&h->alloc_lock);
	uint64_t cards = 0;
	for (uint32_t i = 0; i < h->n_regions; i++)
		cards += h->regions[i].remset.n_cards;
	h->remset_cards = cards;
	rh_region_flush_freed(h);
	return live_total;
}

/* ---------------------------------------------------------------- the pauses */

void rh_fullmark_init(rh_heap *h)
{
	h->fm = (rh_fullmark){.conc = h->offload_on && h->cm.tams != NULL};
}

bool rh_fullmark_active(const rh_heap *h)
{
	return atomic_load(&h->fm.active);
}

bool rh_fullmark_quiet(const rh_heap *h)
{
	return h->fm.active && rh_remote_full_quiet(h->remote);
}

/* Every region the tracers read: all in use, or (concurrent) all but the
 * young ones. Written back, the pages stay resident and CLEAN. */
static void write_back(rh_heap *h, bool conc)
{
	rh_error e;
	for (uint32_t i = 0; i < h->n_regions; i++) {
		rh_region *r = &h->regions[i];
		if (in_use(r) && !(conc && r->kind == RH_REGION_EDEN) &&
		    rh_swap_clean_region(h->swap, i, &e) != RH_OK)
			rh_heap_fail(h, &e);
	}
}

/* fullconc.T4: the barrier's buffers, as roots for their owners. */
static uint64_t relay_logged(rh_heap *h)
{
	size_t n_hosts;
	rh_remote_hosts(h->remote, &n_hosts);
	full_roots fr;
	roots_init(h, &fr, n_hosts, true);
	uint64_t n = 0;
	for (rh_satb *b = rh_satb_take(h), *next; b; b = next) {
		next = b->next;
		for (uint32_t i = 0; i < b->n && !h->fm.drop_logged; i++)
			if (rh_below_tams(h, b->e[i])) {
				add_root(&fr, b->e[i]);
				n++;
			}
		free(b);
	}
	send_roots(h, &fr, n_hosts);
	full_roots_free(&fr, n_hosts);
	h->fm.logged += n;
	return n;
}

void rh_fullmark_pause_begin(rh_heap *h)
{
	if (!h->fm.active)
		return;
	h->fm.pauses++;
	relay_logged(h);
}

void rh_fullmark_maybe_start(rh_heap *h, bool due)
{
	rh_fullmark *fm = &h->fm;
	if (atomic_exchange(&fm->request, false))
		due = true;
	/* sizing.F3: as many pauses as the last marking spanned (one before
	 * any): begun later, a marking finds more garbage (what died after
	 * its snapshot waits for the next). */
	if (fm->conc && rh_sizing_short_within(h, fm->last_pauses ? (double)fm->last_pauses : 1.0))
		due = true;
	if (!fm->conc || fm->active || !due)
		return;
	uint64_t t0 = rh_now_ns();
	rh_error e;
	size_t n_hosts;
	rh_remote_hosts(h->remote, &n_hosts);
	/* fullconc.T1: what is allocated from here on lies at or above TAMS
	 * (eden is empty: this is a partial pause's end). */
	for (uint32_t i = 0; i < h->n_regions; i++)
		h->cm.tams[i] = rh_snapshot_tams(&h->regions[i]);
	rh_cssc_publish(h, false);
	full_roots fr;
	full_gather_roots(h, &fr, n_hosts, true);
	rh_swap_stats s0, s1;
	rh_swap_stats_get(h->swap, &s0);
	write_back(h, true);
	rh_swap_stats_get(h->swap, &s1);
	h->cssc.full_written = s1.bytes_evicted - s0.bytes_evicted;
	if (rh_remote_full_begin(h->remote, ++h->cssc.id, true, &e) != RH_OK)
		rh_heap_fail(h, &e);
	send_roots(h, &fr, n_hosts);
	full_roots_free(&fr, n_hosts);
	/* fullconc.T4: every reference overwritten from here on is logged. */
	rh_satb_set(h, true);
	fm->active = true;
	fm->t_start = t0;
	fm->pauses = 0;
	fm->logged = 0;
	fm->cycles++;
	fm->begin_ns = rh_now_ns() - t0;
	rh_log(RH_LOG_DEBUG, "cssc",
	       "concurrent full marking %llu begun in %.1f ms (write-back %llu MiB)",
	       (unsigned long long)fm->cycles, (double)fm->begin_ns / 1e6,
	       (unsigned long long)(h->cssc.full_written >> 20));
}

/* fullconc.T4: with the mutators stopped, their last logged values go out,
 * and the marking terminates once no batch is outstanding. */
static void end_marking(rh_heap *h)
{
	rh_error e;
	rh_satb_set(h, false);
	for (rh_mutator *m = h->mutators; m; m = m->next)
		rh_satb_flush(m);
	relay_logged(h);
	if (rh_remote_full_wait(h->remote, &e) != RH_OK)
		rh_heap_fail(h, &e);
	rh_tams_reset(h);
	h->fm.last_pauses = h->fm.pauses;
	h->fm.active = false;
}

int rh_fullmark_collect(rh_mutator *m, int wait)
{
	rh_heap *h = m->heap;
	atomic_store(&h->fm.request, true);
	rh_collect(m, 0);
	/* A pause that had to collect the full heap started nothing. */
	atomic_store(&h->fm.request, false);
	uint64_t cycle = h->fm.cycles;
	while (wait && h->fm.cycles == cycle && rh_fullmark_active(h)) {
		/* The tracers' turn: parked, this mutator holds up no pause. */
		rh_mutator_park(m);
		while (rh_fullmark_active(h) && !rh_remote_full_quiet(h->remote))
			nanosleep(&(struct timespec){0, 1000000}, NULL);
		rh_mutator_unpark(m);
		rh_collect(m, 0); /* ends it, if no pause did */
	}
	return RH_OK;
}

uint64_t rh_fullmark_run(rh_heap *h)
{
	rh_error e;
	size_t n_hosts;
	const rh_swap_host *hosts = rh_remote_hosts(h->remote, &n_hosts);
	bool conc = h->fm.active;
	/* When each step ended, for the debug log: a full marking is the
	 * longest pause a disaggregated heap takes, and its steps differ in
	 * what they cost from one program to another. */
	uint64_t t[8];
	t[0] = rh_now_ns();
	rh_emit(h, RH_GC_FULL, RH_PHASE_ROOTS, 1);
	full_roots fr = {0};
	if (!conc) {
		/* Eden grew since the last table: tracers parse regions up to top. */
		rh_cssc_publish(h, false);
		full_gather_roots(h, &fr, n_hosts, false);
	}
	rh_emit(h, RH_GC_FULL, RH_PHASE_ROOTS, 0);

	/* Tracers mark current images: every dirty page goes back first. The
	 * pages stay resident: a tracer writes only the regions where it
	 * finds dead objects (fillers), and only those are dropped below, so
	 * the pauses and the mutators after a full marking do not fault the
	 * rest of the cache back in. A concurrent marking's last pass reads
	 * the pages written since its start (fullconc.T5). */
	t[1] = rh_now_ns();
	rh_swap_stats s0, s1;
	rh_swap_stats_get(h->swap, &s0);
	rh_emit(h, RH_GC_FULL, RH_PHASE_MARK, 1);
	if (conc)
		end_marking(h);
	t[2] = rh_now_ns();
	write_back(h, conc);
	uint64_t tw = rh_now_ns();
	rh_swap_stats_get(h->swap, &s1);
	h->cssc.full_written = s1.bytes_evicted - s0.bytes_evicted;
	if (conc) {
		/* fullconc.T5: the tops the last pass walks to. */
		rh_cssc_publish(h, false);
	} else {
		if (rh_remote_full_begin(h->remote, ++h->cssc.id, false, &e) != RH_OK)
			rh_heap_fail(h, &e);
		send_roots(h, &fr, n_hosts);
		if (rh_remote_full_wait(h->remote, &e) != RH_OK)
			rh_heap_fail(h, &e);
	}
	t[3] = rh_now_ns();
	rh_emit(h, RH_GC_FULL, RH_PHASE_MARK, 0);
	rh_emit(h, RH_GC_FULL, RH_PHASE_EVACUATE, 1);
	rh_emit(h, RH_GC_FULL, RH_PHASE_EVACUATE, 0); /* nothing moves */

	/* Dead objects are fillers now. */
	rh_emit(h, RH_GC_FULL, RH_PHASE_FIXUP, 1);
	rh_remote_full *f;
	if (rh_remote_full_end(h->remote, &f, &e) != RH_OK)
		rh_heap_fail(h, &e);
	t[7] = rh_now_ns();
	uint64_t dropped = full_drop_filled(h, f, conc);
	t[4] = rh_now_ns();
	full_rebuild_remsets(h, f, hosts, conc);
	t[5] = rh_now_ns();
	rh_emit(h, RH_GC_FULL, RH_PHASE_FIXUP, 0);

	rh_emit(h, RH_GC_FULL, RH_PHASE_RECLAIM, 1);
	uint64_t freed;
	uint64_t live_total = full_reclaim(h, f, &freed, conc);
	t[6] = rh_now_ns();
	rh_log(RH_LOG_DEBUG, "cssc",
	       "%s took %.1f ms: roots %.1f, %s %.1f, write-back %.1f (%llu MiB), "
	       "marking %.1f, results %.1f (fillers and references %.1f, pages of %llu regions "
	       "with fillers dropped %.1f), remembered sets %.1f, reclaim %.1f",
	       conc ? "concurrent full marking's end" : "full marking", (double)(t[6] - t[0]) / 1e6,
	       (double)(t[1] - t[0]) / 1e6, conc ? "last logged values" : "nothing",
	       (double)(t[2] - t[1]) / 1e6, (double)(tw - t[2]) / 1e6,
	       (unsigned long long)(h->cssc.full_written >> 20), (double)(t[3] - tw) / 1e6,
	       (double)(t[4] - t[3]) / 1e6, (double)(t[7] - t[3]) / 1e6,
	       (unsigned long long)dropped, (double)(t[4] - t[7]) / 1e6,
	       (double)(t[5] - t[4]) / 1e6, (double)(t[6] - t[5]) / 1e6);
	if (conc)
		rh_log(RH_LOG_DEBUG, "cssc",
		       "concurrent full marking %llu: %.1f ms from its start over %llu partial "
		       "pauses, its first pause %.1f ms, %llu logged references relayed",
		       (unsigned long long)h->fm.cycles, (double)(t[0] - h->fm.t_start) / 1e6,
		       (unsigned long long)h->fm.pauses, (double)h->fm.begin_ns / 1e6,
		       (unsigned long long)h->fm.logged);
	rh_log(RH_LOG_DEBUG, "cssc",
	       "full marking by tracers: %llu KiB live, %llu KiB freed, %llu batches relayed, "
	       "%zu cross-region references",
	       (unsigned long long)(live_total >> 10), (unsigned long long)(freed >> 10),
	       (unsigned long long)f->relayed, f->n_pairs);
	pthread_mutex_lock(&h->stats_lock);
	h->stats.bytes_freed += freed;
	h->stats.bytes_marked_remote += f->bytes_marked;
	h->stats.full_collections_remote++;
	if (conc)
		h->stats.concurrent_cycles++;
	pthread_mutex_unlock(&h->stats_lock);
	rh_emit(h, RH_GC_FULL, RH_PHASE_RECLAIM, 0);
	if (!conc)
		full_roots_free(&fr, n_hosts);
	return live_total;
}
