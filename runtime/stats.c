/* Counters, the pause histogram and their JSON export. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/internal.h"

void rh_stats_record_pause(rh_heap *h, rh_gc_kind kind, uint64_t ns)
{
	(void)kind;
	pthread_mutex_lock(&h->stats_lock);
	h->stats.gc_ns += ns;
	if (ns > h->stats.max_pause_ns)
		h->stats.max_pause_ns = ns;
	uint64_t us = ns / 1000;
	int b = us ? 63 - __builtin_clzll(us) : 0;
	h->stats.pause_hist[b < RH_PAUSE_BUCKETS ? b : RH_PAUSE_BUCKETS - 1]++;
	if (h->n_pauses == h->cap_pauses) {
		size_t cap = h->cap_pauses ? h->cap_pauses * 2 : 256;
		uint64_t *p = realloc(h->pauses, cap * sizeof *p);
		if (p) {
			h->pauses = p;
			h->cap_pauses = cap;
		}
	}
	if (h->n_pauses < h->cap_pauses)
		h->pauses[h->n_pauses++] = ns;
	uint64_t used = (uint64_t)(h->n_regions - h->n_free) * h->region_size;
	if (used > h->stats.peak_used_bytes)
		h->stats.peak_used_bytes = used;
	pthread_mutex_unlock(&h->stats_lock);
}

void rh_stats_get(rh_heap *h, rh_stats *out)
{
	/* Region counts change under alloc_lock; remset size under remset_lock. */
	pthread_mutex_lock(&h->remset_lock);
	uint64_t cards = h->remset_cards;
	pthread_mutex_unlock(&h->remset_lock);
	pthread_mutex_lock(&h->alloc_lock);
	uint64_t nfree = h->n_free, neden = h->n_eden, nold = h->n_old, nhum = h->n_humongous;
	pthread_mutex_unlock(&h->alloc_lock);
	pthread_mutex_lock(&h->stats_lock);
	*out = h->stats;
	pthread_mutex_unlock(&h->stats_lock);
	out->remset_entries = cards;
	if (h->swap) {
		rh_swap_stats ss;
		rh_swap_stats_get(h->swap, &ss);
		out->faults = ss.faults;
		out->readahead_pages = ss.readahead_pages;
		out->bytes_fetched = ss.bytes_fetched;
		out->bytes_evicted = ss.bytes_evicted;
		out->pages_from_copy = ss.copy_reads;
		out->servers_lost = rh_swap_hosts_lost(h->swap);
		rh_swap_rebuild_stats(h->swap, &out->servers_rebuilt, &out->last_rebuild_ns);
	}
	out->regions_free = nfree;
	out->regions_eden = neden;
	out->regions_old = nold;
	out->regions_humongous = nhum;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

uint64_t rh_stats_pause_percentile(rh_heap *h, double pct)
{
	pthread_mutex_lock(&h->stats_lock);
	size_t n = h->n_pauses;
	uint64_t *c = n ? malloc(n * sizeof *c) : NULL;
	if (c)
		memcpy(c, h->pauses, n * sizeof *c);
	pthread_mutex_unlock(&h->stats_lock);
	if (!c)
		return 0;
	qsort(c, n, sizeof *c, cmp_u64);
	if (pct < 0)
		pct = 0;
	if (pct > 100)
		pct = 100;
	/* Nearest rank. */
	size_t rank = (size_t)(pct / 100.0 * (double)n + 0.999999);
	uint64_t v = c[rank ? rank - 1 : 0];
	free(c);
	return v;
}

char *rh_stats_json(rh_heap *h)
{
	rh_stats s;
	rh_stats_get(h, &s);
	static const char *const phases[RH_PHASE_COUNT] = {"stop",  "roots",   "mark",   "evacuate",
	                                                   "fixup", "reclaim", "remote", "verify"};
	json_t *o = json_object();
	json_t *ph = json_object(), *hist = json_array();
	for (int i = 0; i < RH_PHASE_COUNT; i++)
		json_object_set_new(ph, phases[i], json_integer((json_int_t)s.phase_ns[i]));
	for (int i = 0; i < RH_PAUSE_BUCKETS; i++)
		json_array_append_new(hist, json_integer((json_int_t)s.pause_hist[i]));
#define F(name) json_object_set_new(o, #name, json_integer((json_int_t)s.name))
	F(collections);
	F(full_collections);
	F(gc_ns);
	F(max_pause_ns);
	F(bytes_allocated);
	F(slow_allocs);
	F(bytes_copied);
	F(objects_copied);
	F(bytes_freed);
	F(bytes_marked_cpu);
	F(bytes_marked_remote);
	F(pinned_objects);
	F(remset_entries);
	F(barrier_slow);
	F(faults);
	F(readahead_pages);
	F(bytes_fetched);
	F(bytes_evicted);
	F(heap_size);
	F(region_size);
	F(regions_total);
	F(regions_free);
	F(regions_eden);
	F(regions_old);
	F(regions_humongous);
	F(peak_used_bytes);
	F(regions_marked_remote);
	F(regions_evacuated_remote);
	F(bytes_copied_remote);
	F(csscs);
	F(remote_refs_fixed);
	F(full_collections_remote);
	F(concurrent_cycles);
	F(concurrent_aborts);
	F(concurrent_pause_finishes);
	F(concurrent_mark_ns);
	F(bytes_copied_helpers);
	F(copies_undone);
	F(servers_lost);
	F(pages_from_copy);
	F(servers_rebuilt);
	F(last_rebuild_ns);
#undef F
	json_object_set_new(o, "p50_pause_ns",
	                    json_integer((json_int_t)rh_stats_pause_percentile(h, 50)));
	json_object_set_new(o, "p99_pause_ns",
	                    json_integer((json_int_t)rh_stats_pause_percentile(h, 99)));
	json_object_set_new(o, "phase_ns", ph);
	json_object_set_new(o, "pause_hist_log2_us", hist);
	char *out = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return out;
}
