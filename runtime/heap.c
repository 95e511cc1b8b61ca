/* Heap lifecycle, type registration and root registration. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gc/layout.h"
#include "runtime/internal.h"

static _Thread_local rh_error last_error;

void rh_set_last_error(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	last_error.code = code;
	vsnprintf(last_error.msg, sizeof last_error.msg, fmt, ap);
	va_end(ap);
}

const rh_error *rh_last_error(void)
{
	return &last_error;
}

static void *map_bitmap(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* scratch.K2: the pauses' work lists may stay allocated between pauses up
 * to an eighth of the heap (16 MiB at least). */
static size_t scratch_limit(uintptr_t heap_size)
{
	size_t l = (size_t)heap_size / 8;
	return l < (16u << 20) ? 16u << 20 : l;
}

static size_t card_bitmap_bytes(const rh_heap *h)
{
	return ((h->size >> RH_CARD_SHIFT) + 63) / 64 * 8;
}

static void init_locks(rh_heap *h)
{
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->cond, NULL);
	pthread_mutex_init(&h->alloc_lock, NULL);
	pthread_mutex_init(&h->remset_lock, NULL);
	pthread_cond_init(&h->bq_cond, NULL);
	pthread_mutex_init(&h->stats_lock, NULL);
}

/* region.P3: a disaggregated heap takes its first regions from its
 * partitions in turn, in proportion to their sizes, lowest first in each.
 * Taken lowest addresses first, the heap filled the first partition
 * before it touched the second, and one tracer held and marked nearly all
 * of the data: in listscan at 50 % cache, one tracer's last pass of a full
 * marking took 264 ms and sent 1,002,746 references, the other's 37 ms
 * and none, while the CPU server waited for both. Regions freed later go
 * back on top of the stack as before. */
static void stripe_free_list(rh_heap *h)
{
	size_t n_parts = h->cfg.n_servers;
	uint32_t *next = calloc(n_parts, sizeof *next);
	rh_partition *parts = calloc(n_parts, sizeof *parts);
	if (!next || !parts)
		rh_panic("heap: out of memory ordering the free regions");
	uint32_t total = 0;
	for (size_t p = 0; p < n_parts; p++) {
		rh_partition_of(&h->cfg, (uint32_t)p, &parts[p]);
		total += parts[p].n_regions;
	}
	/* Pop order k = 0, 1, ...: the partition furthest behind its share,
	 * (taken + 1/2) / size smallest; the stack's top is the first. A
	 * config whose partitions do not cover the heap keeps the order. */
	for (uint32_t k = 0; total == h->n_regions && k < total; k++) {
		size_t best = SIZE_MAX;
		double best_key = 0;
		for (size_t p = 0; p < n_parts; p++) {
			if (next[p] == parts[p].n_regions)
				continue;
			double key = (next[p] + 0.5) / parts[p].n_regions;
			if (best == SIZE_MAX || key < best_key) {
				best = p;
				best_key = key;
			}
		}
		h->free_list[h->n_regions - 1 - k] = parts[best].first_region + next[best]++;
	}
	free(next);
	free(parts);
}

static int init_regions(rh_heap *h, rh_error *err)
{
	h->regions = calloc(h->n_regions, sizeof *h->regions);
	h->in_cset = calloc(h->n_regions, 1);
	h->offload = calloc(h->n_regions, 1);
	h->free_list = calloc(h->n_regions, sizeof *h->free_list);
	h->freed = calloc(h->n_regions, sizeof *h->freed);
	if (!h->regions || !h->in_cset || !h->offload || !h->free_list || !h->freed)
		return rh_err_set(err, RH_ENOMEM, "heap: cannot allocate %u region descriptors",
		                  h->n_regions);
	for (uint32_t i = 0; i < h->n_regions; i++) {
		rh_region *r = &h->regions[i];
		r->index = i;
		r->start = r->top = r->old_top = h->base + (uintptr_t)i * h->region_size;
		r->dirty_end = r->start;
	}
	/* Lowest addresses first: the free list is a stack. */
	for (uint32_t i = 0; i < h->n_regions; i++)
		h->free_list[i] = h->n_regions - 1 - i;
	h->n_free = h->n_regions;
	if (h->cfg.n_servers > 1)
		stripe_free_list(h);
	return RH_OK;
}

static void heap_fatal(void *data, const rh_error *err)
{
	rh_heap_fail(data, err);
}

/* red.R4: a memory server lost (seen by the control path) is survived while
 * every partition keeps a copy on a server that is up. */
static bool heap_lost(void *data, size_t host, const rh_error *err)
{
	rh_heap *h = data;
	bool survived = rh_swap_host_lost(h->swap, host, err);
	if (survived)
		rh_rebuild_kick(h); /* red.S1: a spare, if one is left */
	return survived;
}

void rh_heap_fail(rh_heap *hp, const rh_error *err)
{
	void *data = hp;
	rh_heap *h = data;
	atomic_store(&h->failed, true);
	pthread_mutex_lock(&h->lock);
	rh_fatal_fn fn = h->fatal_fn;
	void *fd = h->fatal_data;
	pthread_mutex_unlock(&h->lock);
	/* The process ends without rh_heap_close: its stats file with it,
	 * before the program's handler, which may end it itself. */
	rh_livestats_remove(h);
	if (fn)
		fn(err, fd);
	fprintf(stderr, "rheap: fatal: %s\n", err->msg);
	fflush(stderr);
	_exit(RH_EXIT_LOST);
}

void rh_on_fatal(rh_heap *h, rh_fatal_fn fn, void *data)
{
	pthread_mutex_lock(&h->lock);
	h->fatal_fn = fn;
	h->fatal_data = data;
	pthread_mutex_unlock(&h->lock);
}

/* Connect to the memory servers and put the heap under the swap system. */
static int open_remote(rh_heap *h, rh_error *err)
{
	int rc = rh_remote_open(&h->cfg, heap_fatal, h, &h->remote, err);
	if (rc != RH_OK)
		return rc;
	size_t n;
	const rh_swap_host *hosts = rh_remote_hosts(h->remote, &n);
	rh_swap_opts so = {.base = h->base,
	                   .size = h->size,
	                   .region_size = h->region_size,
	                   .budget = (size_t)(h->cfg.cache_fraction * (double)h->size),
	                   .readahead = h->cfg.readahead,
	                   .readahead_adaptive = h->cfg.readahead_adaptive,
	                   .fault_spin_ns = (uint64_t)h->cfg.fault_spin_us * 1000,
	                   .signal_faults = h->cfg.faults == RH_FAULTS_SIGNAL,
	                   .timeout_ms = h->cfg.timeout_ms,
	                   .checksum = h->cfg.checksum != 0,
	                   .skip_copies = !h->cfg.write_copies,
	                   .hosts = hosts,
	                   .n_hosts = n,
	                   .fatal = heap_fatal,
	                   .fatal_data = h};
	h->offload_on = h->cfg.offload;
	rh_cssc_init(h);
	rc = rh_swap_open(&so, &h->swap, err);
	if (rc == RH_OK && h->cfg.redundancy != RH_REDUNDANCY_NONE)
		rh_remote_on_loss(h->remote, heap_lost, h);
	if (rc == RH_OK && rh_rebuild_init(h) != RH_OK)
		rc = rh_err_set(err, RH_EIO, "heap: cannot start the rebuild thread");
	return rc;
}

rh_heap *rh_heap_open(const rh_config *cfg_in, rh_error *err)
{
	if (!cfg_in) {
		rh_err_set(err, RH_EINVAL, "rh_heap_open: config is NULL");
		return NULL;
	}
	rh_config cfg = *cfg_in;
	/* The log's timestamps count from here; a bad RHEAP_LOG_LEVEL is
	 * reported now, not at the first line that would have been logged. */
	rh_log_start();
	/* `rheapctl run` points an unmodified program at its cluster. */
	const char *env = getenv("RHEAP_CONFIG");
	if (env && *env) {
		if (rh_config_load(env, &cfg, err) != RH_OK)
			return NULL;
		rh_log(RH_LOG_INFO, "heap", "using the cluster config %s (RHEAP_CONFIG)", env);
	}
	if (rh_config_check(&cfg, err) != RH_OK)
		return NULL;
	rh_heap *h = calloc(1, sizeof *h);
	if (!h) {
		rh_err_set(err, RH_ENOMEM, "heap: out of memory");
		return NULL;
	}
	h->cfg = cfg;
	h->live.dfd = -1; /* a heap closed before it opened has no stats file */
	if (h->cfg.copy_threads == 0) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		h->cfg.copy_threads = cpus < 1 ? 1 : cpus > 4 ? 4 : (int)cpus;
	}
	h->base = (uintptr_t)cfg.heap_base;
	h->size = (uintptr_t)cfg.heap_size;
	h->region_size = (uintptr_t)cfg.region_size;
	h->region_shift = (uint32_t)__builtin_ctzll(cfg.region_size);
	h->n_regions = (uint32_t)(cfg.heap_size / cfg.region_size);
	h->tlab_size = h->region_size / 16;
	if (h->tlab_size < 4096)
		h->tlab_size = 4096;
	if (h->tlab_size > 256 * 1024)
		h->tlab_size = 256 * 1024;
	h->conservative = true;
	const char *v = getenv("RHEAP_VERIFY");
	h->verify = RH_VERIFIER && (cfg.verify || (v && strcmp(v, "1") == 0));
	init_locks(h);
	rh_marker_init(&h->marker);
	rh_scratch_init(&h->scratch, scratch_limit(h->size));

	void *p = mmap((void *)h->base, h->size, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED || p != (void *)h->base) {
		if (p != MAP_FAILED)
			munmap(p, h->size);
		rh_err_errno(err, errno == EEXIST ? RH_EBUSY : RH_EIO,
		             "heap: cannot reserve [%#lx, %#lx) (heap.base/heap.size)",
		             (unsigned long)h->base, (unsigned long)(h->base + h->size));
		free(h);
		return NULL;
	}
	size_t bm_bytes = h->size / 64;
	h->mark_bits = map_bitmap(bm_bytes);
	h->start_bits = map_bitmap(bm_bytes);
	h->card_bits = map_bitmap(card_bitmap_bytes(h));
	if (!h->mark_bits || !h->start_bits || !h->card_bits ||
	    rh_typetab_init(&h->types) != RH_OK || init_regions(h, err) != RH_OK ||
	    rh_barrier_start(h) != RH_OK) {
		if (!err || err->code == RH_OK)
			rh_err_set(err, RH_ENOMEM, "heap: out of memory setting up the heap");
		rh_heap_close(h);
		return NULL;
	}
	if (h->cfg.n_servers > 0 && open_remote(h, err) != RH_OK) {
		rh_heap_close(h);
		return NULL;
	}
	if (rh_cmark_init(h) != RH_OK) {
		rh_err_set(err, RH_ENOMEM, "heap: cannot start the concurrent marker");
		rh_heap_close(h);
		return NULL;
	}
	rh_fullmark_init(h);
	if (rh_preclean_init(h) != RH_OK) {
		rh_err_set(err, RH_ENOMEM, "heap: cannot start the cleaner");
		rh_heap_close(h);
		return NULL;
	}
	h->stats.heap_size = h->size;
	h->stats.region_size = h->region_size;
	h->stats.regions_total = h->n_regions;
	rh_sizing_init(h);
	/* After sizing: the thread reads the warm pool's size at once. */
	if (rh_pretouch_init(h) != RH_OK) {
		rh_err_set(err, RH_ENOMEM, "heap: cannot start the pretouch thread");
		rh_heap_close(h);
		return NULL;
	}
	rh_log(RH_LOG_INFO, "heap", "opened %lu MiB at %#lx, %u regions of %lu KiB",
	       (unsigned long)(h->size >> 20), (unsigned long)h->base, h->n_regions,
	       (unsigned long)(h->region_size >> 10));
	rh_livestats_open(h);
	return h;
}

rh_heap *rh_heap_open_file(const char *path, rh_error *err)
{
	const char *env = getenv("RHEAP_CONFIG");
	if (env && *env)
		path = env;
	rh_config cfg;
	if (rh_config_load(path, &cfg, err) != RH_OK)
		return NULL;
	return rh_heap_open(&cfg, err);
}

void rh_heap_close(rh_heap *h)
{
	if (!h)
		return;
	if (h->n_mutators)
		rh_panic("rh_heap_close: %zu mutator(s) still attached", h->n_mutators);
	rh_livestats_close(h);
	rh_barrier_stop(h);
	rh_cmark_stop(h);
	rh_preclean_stop(h);
	rh_pretouch_stop(h);
	rh_crew_free(h->crew);
	if (h->swap) {
		rh_swap_stats st;
		rh_swap_stats_get(h->swap, &st);
		rh_log(RH_LOG_DEBUG, "swap",
		       "%llu faults (%llu readahead pages), %llu fresh, %llu first writes; %llu "
		       "waited for the evictor, %.1f ms in all; %llu batches, %llu drop calls; "
		       "%llu predicted writes written back, %llu of them unwritten; %llu pages "
		       "read and left evicted",
		       (unsigned long long)st.faults, (unsigned long long)st.readahead_pages,
		       (unsigned long long)st.zero_faults, (unsigned long long)st.wp_faults,
		       (unsigned long long)st.budget_waits, (double)st.budget_wait_ns / 1e6,
		       (unsigned long long)st.batches, (unsigned long long)st.drop_calls,
		       (unsigned long long)(st.pred_written + st.pred_unwritten),
		       (unsigned long long)st.pred_unwritten, (unsigned long long)st.pages_peeked);
	}
	if (h->refresh.regions)
		rh_log(RH_LOG_DEBUG, "gc",
		       "target queues rebuilt (rset.T1): %llu times in %llu pauses (%llu filed "
		       "the pause's cards first, rset.D2), %llu resident regions "
		       "marked, %llu pages read, %llu cards and %llu of %llu targets dropped, "
		       "%.1f ms",
		       (unsigned long long)h->refresh.regions,
		       (unsigned long long)h->refresh.pauses, (unsigned long long)h->refresh.drains,
		       (unsigned long long)h->refresh.regions_marked,
		       (unsigned long long)h->refresh.pages_read,
		       (unsigned long long)h->refresh.cards_dropped,
		       (unsigned long long)h->refresh.targets_dropped,
		       (unsigned long long)h->refresh.targets_held, (double)h->refresh.ns / 1e6);
	rh_refresh_fini(h);
	/* red.Q1: no loss reaches the rebuild or swap after this. Then the
	 * rebuild (it uses both), then swap: its threads use the connections
	 * the remote owns. */
	rh_remote_quiesce(h->remote);
	rh_rebuild_stop(h);
	rh_swap_close(h->swap);
	rh_remote_close(h->remote);
	free(h->freed);
	while (h->graveyard) {
		rh_mutator *m = h->graveyard;
		h->graveyard = m->next;
		free(m->segs);
		free(m);
	}
	if (h->regions)
		for (uint32_t i = 0; i < h->n_regions; i++)
			rh_remset_free(&h->regions[i].remset);
	if (h->mark_bits)
		munmap(h->mark_bits, h->size / 64);
	if (h->start_bits)
		munmap(h->start_bits, h->size / 64);
	if (h->card_bits)
		munmap(h->card_bits, card_bitmap_bytes(h));
	if (h->regions)
		munmap((void *)h->base, h->size);
	rh_marker_free(&h->marker);
	rh_scratch_fini(&h->scratch);
	rh_typetab_free(&h->types);
	free(h->regions);
	free(h->in_cset);
	free(h->offload);
	rh_cssc_fini(h);
	free(h->free_list);
	free(h->globals);
	free(h->ranges);
	free(h->pauses);
	free(h);
}

rh_type_id rh_type_register(rh_heap *h, const rh_type_desc *desc, rh_error *err)
{
	pthread_mutex_lock(&h->lock);
	rh_type_id id = 0;
	if (h->types_closed)
		rh_err_set(err, RH_ESTATE,
		           "rh_type_register: type \"%s\" registered after a mutator attached; "
		           "register every type first (the table is shipped to tracers)",
		           desc && desc->name ? desc->name : "?");
	else if (!desc)
		rh_err_set(err, RH_EINVAL, "rh_type_register: desc is NULL");
	else
		id = rh_typetab_add(&h->types, desc, err);
	pthread_mutex_unlock(&h->lock);
	return id;
}

char *rh_type_table_json(rh_heap *h)
{
	pthread_mutex_lock(&h->lock);
	char *s = rh_typetab_to_json(&h->types);
	pthread_mutex_unlock(&h->lock);
	return s;
}

size_t rh_object_size(rh_heap *h, rh_type_id t, size_t length)
{
	const rh_type_info *ti = rh_type_get(&h->types, t);
	if (!ti)
		return 0;
	return ((size_t)ti->size + length * ti->elem_size + 7) & ~(size_t)7;
}

rh_type_id rh_object_type(const void *obj)
{
	return rh_hdr_type(rh_hdr(obj));
}

size_t rh_array_length(const void *obj)
{
	/* Fixed types have no length word; their size equals the fixed part. */
	return rh_hdr_type(rh_hdr(obj)) != RH_FILLER_TYPE && rh_hdr_bytes(rh_hdr(obj)) >= 16
	               ? ((const uint64_t *)obj)[1]
	               : 0;
}

int rh_global_add(rh_heap *h, void **slot)
{
	if (!slot || ((uintptr_t)slot & 7))
		return RH_EINVAL;
	if (rh_in_heap(h, (uintptr_t)slot)) {
		RH_CHECK(0, "rh_global_add: slot %p lies inside the heap", (void *)slot);
		return RH_EINVAL;
	}
	pthread_mutex_lock(&h->lock);
	int rc = RH_OK;
	if (h->n_globals == h->cap_globals) {
		size_t cap = h->cap_globals ? h->cap_globals * 2 : 64;
		void ***g = realloc(h->globals, cap * sizeof *g);
		if (g) {
			h->globals = g;
			h->cap_globals = cap;
		} else {
			rc = RH_ENOMEM;
		}
	}
	if (rc == RH_OK)
		h->globals[h->n_globals++] = slot;
	pthread_mutex_unlock(&h->lock);
	return rc;
}

int rh_global_remove(rh_heap *h, void **slot)
{
	pthread_mutex_lock(&h->lock);
	int rc = RH_EINVAL;
	for (size_t i = 0; i < h->n_globals; i++)
		if (h->globals[i] == slot) {
			h->globals[i] = h->globals[--h->n_globals];
			rc = RH_OK;
			break;
		}
	pthread_mutex_unlock(&h->lock);
	return rc;
}

void rh_set_conservative(rh_heap *h, bool on)
{
	pthread_mutex_lock(&h->lock);
	h->conservative = on;
	pthread_mutex_unlock(&h->lock);
}

int rh_frame_range_add(rh_heap *h, uintptr_t ip_lo, uintptr_t ip_hi, rh_frame_fn fn, void *data)
{
	if (!fn || ip_lo >= ip_hi)
		return RH_EINVAL;
	pthread_mutex_lock(&h->lock);
	rh_frame_range *r = realloc(h->ranges, (h->n_ranges + 1) * sizeof *r);
	int rc = RH_ENOMEM;
	if (r) {
		h->ranges = r;
		h->ranges[h->n_ranges++] = (rh_frame_range){ip_lo, ip_hi, fn, data};
		rc = RH_OK;
	}
	pthread_mutex_unlock(&h->lock);
	return rc;
}

void rh_on_event(rh_heap *h, rh_event_fn fn, void *data)
{
	pthread_mutex_lock(&h->lock);
	h->event_fn = fn;
	h->event_data = data;
	pthread_mutex_unlock(&h->lock);
}
