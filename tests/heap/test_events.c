/* Events and stats: the event callback sees, for every collection, a begin
 * and an end for each phase, in phase order, with the collection's kind and
 * consecutive indexes; the number of collections it sees matches the stats;
 * the pause histogram counts every pause; rh_stats_json parses and carries
 * every counter of struct rh_stats with the same values. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "th.h"

#define MAX_EVENTS 8192

static rh_event events[MAX_EVENTS];
static size_t n_events, dropped;

static void on_event(const rh_event *ev, void *data)
{
	if (data != (void *)events) {
		dropped++;
		return;
	}
	if (n_events < MAX_EVENTS)
		events[n_events++] = *ev;
	else
		dropped++;
}

/* Does event i open a collection (STOP, or ROOTS of a collection chained
 * to the previous one without a stop of its own)? */
static int starts_collection(size_t i)
{
	const rh_event *e = &events[i];
	if (!e->begin)
		return 0;
	return e->phase == RH_PHASE_STOP ||
	       (e->phase == RH_PHASE_ROOTS && events[i - 1].phase != RH_PHASE_STOP);
}

/* Split the event log into collections and check each: per collection,
 * begin and end of every phase in phase order, one kind, times not going
 * back, indexes consecutive. Counts distinct collections (and full ones). */
static void check_events(size_t *n_gc, size_t *n_full)
{
	*n_gc = *n_full = 0;
	size_t i = 0;
	uint64_t prev_time = 0;
	static uint64_t seen[MAX_EVENTS];
	size_t n_reported = 0;
	size_t n_seen = 0;
	for (size_t e = 0; e < n_events; e++) {
		size_t k = 0;
		while (k < n_seen && seen[k] != events[e].gc_index)
			k++;
		if (k == n_seen) {
			seen[n_seen++] = events[e].gc_index;
			*n_full += events[e].kind == RH_GC_FULL;
		}
	}
	*n_gc = n_seen;
	for (size_t k = 1; k < n_seen; k++)
		CHECK(seen[k] == seen[k - 1] + 1, "gc_index %llu after %llu",
		      (unsigned long long)seen[k], (unsigned long long)seen[k - 1]);
	while (i < n_events) {
		size_t start = i;
		const rh_event *first = &events[i];
		uint64_t idx = first->gc_index;
		size_t bad = 0;
		for (int p = 0; p < RH_PHASE_COUNT; p++) {
			for (int b = 1; b >= 0; b--, i++) {
				const rh_event *e = i < n_events ? &events[i] : NULL;
				if (!e || e->gc_index != idx || (int)e->phase != p ||
				    e->begin != b || e->kind != first->kind ||
				    e->time_ns < prev_time) {
					if (bad++ == 0 && n_reported++ < 5)
						fprintf(stderr,
						        "collection %llu: event %zu is %s phase %d "
						        "begin %d kind %d index %lld; want phase "
						        "%d "
						        "begin %d\n",
						        (unsigned long long)idx, i,
						        e ? "" : "(none)", e ? (int)e->phase : -1,
						        e ? e->begin : -1, e ? (int)e->kind : -1,
						        e ? (long long)e->gc_index : -1LL, p, b);
					continue;
				}
				prev_time = e->time_ns;
			}
		}
		CHECK(bad == 0, "collection %llu: %zu events out of order", (unsigned long long)idx,
		      bad);
		if (bad) {
			/* Resynchronise on the next collection's first phase. */
			for (i = start + 1; i < n_events && !starts_collection(i); i++)
				;
		}
	}
}

static const char *const stat_keys[] = {
        "collections",    "full_collections",  "gc_ns",
        "max_pause_ns",   "phase_ns",          "bytes_allocated",
        "slow_allocs",    "bytes_copied",      "objects_copied",
        "bytes_freed",    "bytes_marked_cpu",  "bytes_marked_remote",
        "pinned_objects", "remset_entries",    "barrier_slow",
        "faults",         "readahead_pages",   "bytes_fetched",
        "bytes_evicted",  "heap_size",         "region_size",
        "regions_total",  "regions_free",      "regions_eden",
        "regions_old",    "regions_humongous", "peak_used_bytes",
};

/* The value of key anywhere in the tree (counters may be grouped). */
static json_t *find_key(json_t *j, const char *key)
{
	if (json_is_object(j)) {
		json_t *v = json_object_get(j, key);
		if (v)
			return v;
		const char *k;
		json_t *c;
		json_object_foreach(j, k, c)
		{
			json_t *r = find_key(c, key);
			if (r)
				return r;
		}
	}
	return NULL;
}

static void check_json(rh_heap *h)
{
	char *text = rh_stats_json(h);
	rh_stats s = th_stats(h);
	REQUIRE(text != NULL, "rh_stats_json returned NULL");
	json_error_t jerr;
	json_t *j = json_loads(text, 0, &jerr);
	CHECK(j != NULL && json_is_object(j), "stats JSON does not parse: %s", jerr.text);
	if (!j) {
		free(text);
		return;
	}
	for (size_t k = 0; k < sizeof stat_keys / sizeof stat_keys[0]; k++)
		CHECK(find_key(j, stat_keys[k]) != NULL, "stats JSON lacks '%s'", stat_keys[k]);
	/* The histogram's key may carry its unit. */
	json_t *hist = find_key(j, "pause_hist");
	if (!hist)
		hist = find_key(j, "pause_hist_log2_us");
	CHECK(hist != NULL, "stats JSON lacks the pause histogram");
	struct {
		const char *key;
		uint64_t want;
	} vals[] = {
	        {"collections", s.collections},
	        {"full_collections", s.full_collections},
	        {"heap_size", s.heap_size},
	        {"region_size", s.region_size},
	        {"regions_total", s.regions_total},
	        {"bytes_copied", s.bytes_copied},
	        {"bytes_allocated", s.bytes_allocated},
	        {"max_pause_ns", s.max_pause_ns},
	};
	for (size_t k = 0; k < sizeof vals / sizeof vals[0]; k++) {
		json_t *v = find_key(j, vals[k].key);
		if (!v)
			continue;
		CHECK(json_is_integer(v) && (uint64_t)json_integer_value(v) == vals[k].want,
		      "JSON %s = %lld, rh_stats_get says %llu", vals[k].key,
		      json_is_integer(v) ? (long long)json_integer_value(v) : -1LL,
		      (unsigned long long)vals[k].want);
	}
	if (hist) {
		CHECK(json_is_array(hist), "pause_hist is not an array");
		uint64_t sum = 0;
		size_t i;
		json_t *v;
		json_array_foreach(hist, i, v) sum += (uint64_t)json_integer_value(v);
		CHECK(sum == s.collections + s.full_collections, "JSON pause_hist sums to %llu",
		      (unsigned long long)sum);
	}
	json_decref(j);
	free(text);
}

/* With a full_threshold above the free fraction, every partial collection
 * is followed by a full one in the same pause: each still reports all its
 * phases. A fresh heap, its own event log. */
static void test_chained(void)
{
	rh_config cfg;
	th_config(&cfg, 64, 256);
	cfg.verify = 1;
	cfg.full_threshold = 0.99;
	rh_heap *h = th_open(&cfg);
	n_events = dropped = 0;
	rh_on_event(h, on_event, events);
	rh_type_desc b = {.name = "bytes", .layout = RH_LAYOUT_BYTE_ARRAY, .size = 16};
	rh_type_id t_bytes = th_type(h, &b);
	rh_mutator *m = th_attach(h);
	/* Live humongous arrays keep the free fraction below the threshold. */
	void *slots[4] = {NULL, NULL, NULL, NULL};
	rh_frame f;
	rh_push_frame(m, &f, slots, 4);
	for (int i = 0; i < 4; i++)
		REQUIRE((slots[i] = rh_alloc_array(m, t_bytes, 2u << 20)) != NULL);
	CHECK(rh_collect(m, 0) == 0);
	CHECK(rh_collect(m, 0) == 0);
	rh_pop_frame(m, &f);
	rh_stats s = th_stats(h);
	size_t n_gc, n_full;
	check_events(&n_gc, &n_full);
	CHECK(s.collections == 2 && s.full_collections == 2,
	      "chained: %llu partial and %llu full collections, want 2 and 2",
	      (unsigned long long)s.collections, (unsigned long long)s.full_collections);
	CHECK(n_gc == 4 && n_full == 2, "chained: events show %zu collections, %zu full", n_gc,
	      n_full);
	rh_mutator_detach(m);
	rh_heap_close(h);
}

int main(void)
{
	rh_config cfg;
	th_config(&cfg, 64, 256);
	cfg.verify = 1; /* so that the VERIFY phase happens too */
	rh_heap *h = th_open(&cfg);
	rh_on_event(h, on_event, events);
	rh_type_desc b = {.name = "bytes", .layout = RH_LAYOUT_BYTE_ARRAY, .size = 16};
	rh_type_id t_bytes = th_type(h, &b);
	rh_mutator *m = th_attach(h);

	void *slots[1] = {NULL};
	rh_frame f;
	rh_push_frame(m, &f, slots, 1);
	/* Forced collections of both kinds, and some the allocator starts. */
	CHECK(rh_collect(m, 0) == 0);
	CHECK(rh_collect(m, 1) == 0);
	CHECK(rh_collect(m, 0) == 0);
	size_t allocated = 0;
	for (size_t i = 0; allocated < 3 * cfg.heap_size; i++) {
		void *p = rh_alloc_array(m, t_bytes, 1000 + i % 3000);
		REQUIRE(p != NULL);
		if (i % 1000 == 0)
			slots[0] = p; /* something survives */
		allocated += rh_object_size(h, t_bytes, 1000 + i % 3000);
	}
	CHECK(rh_collect(m, 1) == 0);
	rh_pop_frame(m, &f);

	rh_stats s = th_stats(h);
	size_t n_gc, n_full;
	check_events(&n_gc, &n_full);
	CHECK(dropped == 0, "%zu events dropped or with the wrong data pointer", dropped);
	CHECK(n_gc == s.collections + s.full_collections,
	      "events show %zu collections, stats %llu + %llu", n_gc,
	      (unsigned long long)s.collections, (unsigned long long)s.full_collections);
	CHECK(n_full == s.full_collections, "events show %zu full collections, stats %llu", n_full,
	      (unsigned long long)s.full_collections);
	CHECK(s.full_collections >= 2 && s.collections >= 3, "collections %llu full %llu",
	      (unsigned long long)s.collections, (unsigned long long)s.full_collections);
	CHECK(s.bytes_allocated >= allocated, "bytes_allocated %llu, allocated at least %zu",
	      (unsigned long long)s.bytes_allocated, allocated);

	uint64_t hist = 0;
	for (int i = 0; i < RH_PAUSE_BUCKETS; i++)
		hist += s.pause_hist[i];
	CHECK(hist == s.collections + s.full_collections, "pause histogram counts %llu pauses",
	      (unsigned long long)hist);
	CHECK(s.max_pause_ns > 0 && s.gc_ns >= s.max_pause_ns, "gc_ns %llu max_pause_ns %llu",
	      (unsigned long long)s.gc_ns, (unsigned long long)s.max_pause_ns);
	uint64_t p50 = rh_stats_pause_percentile(h, 50), p99 = rh_stats_pause_percentile(h, 99),
	         p100 = rh_stats_pause_percentile(h, 100);
	CHECK(p50 > 0 && p50 <= p99 && p99 <= p100, "percentiles %llu %llu %llu",
	      (unsigned long long)p50, (unsigned long long)p99, (unsigned long long)p100);
	uint64_t phases = 0;
	for (int p = 0; p < RH_PHASE_COUNT; p++)
		phases += s.phase_ns[p];
	CHECK(phases > 0, "phase_ns all zero");

	check_json(h);

	/* Unregistering stops the callbacks. */
	rh_on_event(h, NULL, NULL);
	size_t before = n_events;
	CHECK(rh_collect(m, 0) == 0);
	CHECK(n_events == before && dropped == 0, "events after unregistering");

	rh_mutator_detach(m);
	rh_heap_close(h);

	test_chained();
	return check_done();
}
