/* The GC trace (gctrace.h). */
#include "runtime/gctrace.h"

#include <stdio.h>

#include "swap/swap.h"

static uint64_t used_bytes(const rh_heap *h)
{
	/* Mutators are stopped: only the collector changes the free count. */
	return (uint64_t)(h->n_regions - h->n_free) * h->region_size;
}

static uint64_t faults(rh_heap *h)
{
	if (!h->swap)
		return 0;
	rh_swap_stats s;
	rh_swap_stats_get(h->swap, &s);
	return s.faults;
}

void rh_gctrace_begin(rh_heap *h, rh_gctrace *t, rh_gc_kind kind, uint64_t start_ns)
{
	if (t->n == 0)
		t->on = rh_log_enabled(RH_LOG_INFO);
	if (!t->on || t->n >= 3)
		return;
	rh_gctrace_one *c = &t->c[t->n];
	c->kind = kind;
	c->by_tracers = rh_cssc_full_by_tracers(h, kind);
	c->compacting = h->cssc.compacting;
	c->start_ns = start_ns;
	c->used_before = used_bytes(h);
	c->faults_before = faults(h);
	pthread_mutex_lock(&h->stats_lock);
	c->index = h->stats.collections + h->stats.full_collections;
	c->csscs = h->stats.csscs;
	pthread_mutex_unlock(&h->stats_lock);
}

void rh_gctrace_end(rh_heap *h, rh_gctrace *t)
{
	if (!t->on || t->n >= 3)
		return;
	rh_gctrace_one *c = &t->c[t->n++];
	c->end_ns = rh_now_ns();
	c->used_after = used_bytes(h);
	c->faults_after = faults(h);
	pthread_mutex_lock(&h->stats_lock);
	c->cssc = h->stats.csscs != c->csscs;
	pthread_mutex_unlock(&h->stats_lock);
}

void rh_gctrace_pause_end(rh_gctrace *t, uint64_t end_ns)
{
	t->pause_end_ns = end_ns;
}

/* The collector's own names (docs/collector.md, docs/distributed-gc.md). */
static const char *kind_name(const rh_gctrace_one *c)
{
	if (c->kind == RH_GC_FULL)
		return c->by_tracers ? "full-by-tracers" : "full";
	if (c->compacting)
		return "compaction";
	return c->cssc ? "partial+cssc" : "partial";
}

/* operations.G1: "gc N KIND: pause P ms, B -> A MiB of H MiB[, faults F in
 * the pause, T in all][; same pause as gc M]". */
void rh_gctrace_print(rh_heap *h, const rh_gctrace *t)
{
	if (!t->on)
		return;
	for (unsigned i = 0; i < t->n; i++) {
		const rh_gctrace_one *c = &t->c[i];
		/* Each collection's share of the pause: the first from the
		 * stop, the last to the mutators' restart. */
		uint64_t end = i + 1 == t->n && t->pause_end_ns ? t->pause_end_ns : c->end_ns;
		char faults_text[96] = "", same[48] = "";
		if (h->swap)
			snprintf(faults_text, sizeof faults_text,
			         ", faults %llu in the pause, %llu in all",
			         (unsigned long long)(c->faults_after - c->faults_before),
			         (unsigned long long)c->faults_after);
		if (i)
			snprintf(same, sizeof same, "; same pause as gc %llu",
			         (unsigned long long)t->c[0].index);
		rh_log(RH_LOG_INFO, "gc",
		       "gc %llu %s: pause %.3f ms, %.1f -> %.1f MiB of %.0f MiB%s%s",
		       (unsigned long long)c->index, kind_name(c),
		       (double)(end > c->start_ns ? end - c->start_ns : 0) / 1e6,
		       (double)c->used_before / 1048576.0, (double)c->used_after / 1048576.0,
		       (double)h->size / 1048576.0, faults_text, same);
	}
}
