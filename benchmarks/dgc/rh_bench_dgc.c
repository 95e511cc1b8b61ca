/* Distributed-collection benchmark (docs/distributed-gc.md): how fast
 * tracers mark, against the CPU server marking the same heap through its
 * page cache, and what offloading does to pause times.
 *
 * usage: rh-bench-dgc TRACERD PROVIDER [--json FILE] [--live-mib N]
 *                     [--heap-mib N] [--seconds S] [--replace-every N]
 *                     [--only throughput|pauses]
 *
 * Two tracers, cache fraction 0.25. The live data is a forest of binary
 * trees of 48-byte nodes (two references each) anchored from a global
 * array, 96 MiB by default.
 *
 *   throughput  for each of two layouts of the forest (each tree
 *               depth-first in address order; or the trees' 31-node
 *               subtrees scattered at random), in a heap 1.5x the live
 *               data: build it, make it old, park the mutator until the
 *               tracers' bytes_traced stops growing (tracer rate from
 *               their status files: bytes_traced / mark_ns, MSCT and the
 *               build's full marking together). Then, on the same
 *               heap, a full collection with offload on (the tracers mark
 *               the whole heap) and one with the heap's offload switch off
 *               (the CPU server marks through its page cache): bytes
 *               marked / phase_ns[MARK] of each. Target: tracer >= 10x
 *               CPU server (the paper: 922 vs 93.9 MB/s).
 *   pauses      a fresh cluster per run, offload on then off, heap 2x the
 *               live data: the scattered forest, then --seconds of
 *               subtree swaps between random old trees (and, with
 *               --replace-every, subtree replacements that leave old
 *               garbage) plus short-lived junk. Pause percentiles over
 *               that window only, with the default pause budget.
 *
 * MB is 10^6 bytes; all rates are live bytes per second of marking time.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/internal.h"
#include "swap/swap.h"
#include "tests/dgc/forest.h"
#include "tests/common/cluster.h"

#define TRACERS 2
#define CACHE 0.25
#define DEPTH 10     /* levels per tree: 1023 nodes, 48 KiB */
#define MOVE_LEVEL 5 /* scattered and replaced subtrees hang here: 31 nodes */
#define SWAP_LEVEL 8 /* swapped subtrees hang here: 3 nodes */
#define JUNK_PER_STEP 128
#define JUNK_BYTES 112 /* + 16 of array header: 128-byte short-lived objects */
#define MB 1e6

struct node {
	uint64_t hdr;
	struct node *f[2];
	uint64_t id, chk, pad;
};

typedef struct bench {
	const char *tracerd, *provider;
	unsigned long long live_mib;
	unsigned long long heap_mib;       /* of the heap open now */
	unsigned long long tp_mib, pa_mib; /* heap sizes of the two parts */
	double seconds;
	cluster c;
	int have_cluster;
	rh_heap *h;
	rh_mutator *m;
	rh_type_id t_node, t_refs, t_junk;
	size_t n_trees;
	uint64_t next_id, rng;
	unsigned replace_every; /* mutations per subtree replacement (old garbage) */
	uint64_t steps, replaced;
	int mutating;        /* in the timed window: running out of heap ends it */
	double build_full_s; /* the full collection that made the forest old */
	int oom;
	int dying; /* die() is tearing down: a lost tracer is expected */
	rh_frame frame;
	void *slots[DEPTH + 2]; /* the path being built, precisely rooted */
} bench;

static void *anchors; /* global root: the array of tree roots */

/* Per collection, from the heap's events: where each pause's time went. */
#define MAX_GCS 16384
typedef struct gc_rec {
	int kind;
	uint64_t begin[RH_PHASE_COUNT], ns[RH_PHASE_COUNT];
	uint64_t f_begin[RH_PHASE_COUNT], faults[RH_PHASE_COUNT]; /* swap faults */
} gc_rec;
static gc_rec gcs[MAX_GCS];
/* Swap counters at the start and end of a full collection's marking. */
static rh_heap *ev_heap;
static int watch_mark;
static rh_swap_stats mark_sw[2];

/* Runs on the collecting thread with mutators stopped: no allocation. */
static void on_event(const rh_event *ev, void *data)
{
	(void)data;
	if (ev->gc_index < MAX_GCS) {
		gc_rec *r = &gcs[ev->gc_index];
		rh_swap_stats sw;
		rh_swap_stats_get(ev_heap->swap, &sw);
		r->kind = ev->kind;
		if (ev->begin) {
			r->begin[ev->phase] = ev->time_ns;
			r->f_begin[ev->phase] = sw.faults;
		} else {
			r->ns[ev->phase] += ev->time_ns - r->begin[ev->phase];
			r->faults[ev->phase] += sw.faults - r->f_begin[ev->phase];
		}
	}
	if (watch_mark && ev->phase == RH_PHASE_MARK && ev->kind == RH_GC_FULL)
		rh_swap_stats_get(ev_heap->swap, &mark_sw[ev->begin ? 0 : 1]);
}

/* On the way out with the heap still open: the directory goes first,
 * because killing the tracers makes the heap end the process (its pages
 * are gone) before cluster_stop() would get to remove it. */
static void drop_cluster(bench *b)
{
	if (!b->have_cluster)
		return;
	b->have_cluster = 0;
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", b->c.dir);
	if (system(cmd) != 0)
		fprintf(stderr, "rh-bench-dgc: could not remove %s\n", b->c.dir);
	for (int i = 0; i < b->c.n; i++)
		if (b->c.pid[i] > 0) {
			kill(b->c.pid[i], SIGKILL);
			waitpid(b->c.pid[i], NULL, 0);
		}
}

static void die(bench *b, const char *what, const char *msg)
{
	fprintf(stderr, "rh-bench-dgc: %s: %s\n", what, msg);
	__atomic_store_n(&b->dying, 1, __ATOMIC_RELEASE);
	drop_cluster(b);
	exit(1);
}

/* A tracer was lost: the heap cannot go on. */
static void on_fatal(const rh_error *err, void *data)
{
	bench *b = data;
	/* die() killing the tracers is what the heap noticed. */
	if (__atomic_load_n(&b->dying, __ATOMIC_ACQUIRE))
		_exit(1);
	fprintf(stderr, "rh-bench-dgc: %s\n", err->msg);
	drop_cluster(b);
	_exit(RH_EXIT_LOST);
}

static struct node *new_node(bench *b)
{
	struct node *n = rh_alloc(b->m, b->t_node);
	if (!n) {
		if (!b->mutating)
			die(b, "allocate a node", rh_last_error()->msg);
		b->oom = 1;
		return NULL;
	}
	n->id = b->next_id++;
	n->chk = rng_mix(n->id);
	return n;
}

/* A fresh subtree of `levels` levels at slots[k]->f[side]. Top-down, so
 * that allocation order is depth-first; every allocation may move what
 * the slots hold, so the parent is re-read from its slot afterwards. */
static void grow(bench *b, int k, int side, int levels)
{
	struct node *c = new_node(b);
	if (!c)
		return;
	struct node *p = b->slots[k];
	rh_write_ref(b->m, (void **)&p->f[side], c);
	if (levels > 1) {
		b->slots[k + 1] = c;
		grow(b, k + 1, 0, levels - 1);
		if (!b->oom)
			grow(b, k + 1, 1, levels - 1);
		b->slots[k + 1] = NULL;
	}
}

/* sequential: each tree depth-first, one after another, so that a
 * depth-first marking reads the heap in address order. scattered: the top
 * MOVE_LEVEL levels of every tree first, then all 31-node subtrees below
 * them in random order over the whole forest, as subtree moves leave it
 * after a while: each subtree is contiguous, its siblings are not. */
static void build_forest(bench *b, int scattered)
{
	int top = scattered ? MOVE_LEVEL : DEPTH;
	for (size_t i = 0; i < b->n_trees; i++) {
		struct node *r = new_node(b);
		rh_write_ref(b->m, &((struct dgc_refs *)anchors)->e[i], r);
		b->slots[0] = r;
		grow(b, 0, 0, top - 1);
		grow(b, 0, 1, top - 1);
		b->slots[0] = NULL;
	}
	if (!scattered)
		return;
	size_t per = (size_t)1 << MOVE_LEVEL, n = b->n_trees * per;
	uint32_t *hole = malloc(n * sizeof *hole);
	if (!hole)
		die(b, "build", "out of memory");
	for (size_t k = 0; k < n; k++)
		hole[k] = (uint32_t)k;
	for (size_t k = n - 1; k > 0; k--) {
		size_t j = rng_next(&b->rng) % (k + 1);
		uint32_t t = hole[k];
		hole[k] = hole[j];
		hole[j] = t;
	}
	for (size_t k = 0; k < n; k++) {
		struct node *x = ((struct dgc_refs *)anchors)->e[hole[k] / per];
		uint32_t path = hole[k] % per;
		for (int l = 0; l < MOVE_LEVEL - 1; l++)
			x = x->f[(path >> l) & 1];
		b->slots[0] = x;
		grow(b, 0, (path >> (MOVE_LEVEL - 1)) & 1, DEPTH - MOVE_LEVEL);
		b->slots[0] = NULL;
	}
	free(hole);
}

/* Every tree complete and every node intact: a collector that lost or
 * damaged something would make the numbers meaningless. */
static int forest_ok(bench *b)
{
	uint64_t want = ((uint64_t)1 << DEPTH) - 1;
	struct node *stack[DEPTH * 2 + 2];
	for (size_t i = 0; i < b->n_trees; i++) {
		struct node *r = ((struct dgc_refs *)anchors)->e[i];
		uint64_t seen = 0;
		int sp = 0;
		if (r)
			stack[sp++] = r;
		while (sp) {
			struct node *x = stack[--sp];
			if (rh_object_type(x) != b->t_node || x->chk != rng_mix(x->id)) {
				fprintf(stderr, "rh-bench-dgc: tree %zu: damaged node at %p\n", i,
				        (void *)x);
				return 0;
			}
			if (++seen > want) {
				fprintf(stderr, "rh-bench-dgc: tree %zu has too many nodes\n", i);
				return 0;
			}
			for (int s = 0; s < 2; s++)
				if (x->f[s]) {
					if (sp == DEPTH * 2 + 2) {
						fprintf(stderr, "rh-bench-dgc: tree %zu too deep\n",
						        i);
						return 0;
					}
					stack[sp++] = x->f[s];
				}
		}
		if (seen != want) {
			fprintf(stderr, "rh-bench-dgc: tree %zu has %llu nodes, want %llu\n", i,
			        (unsigned long long)seen, (unsigned long long)want);
			return 0;
		}
	}
	return 1;
}

static void open_heap(bench *b, int offload)
{
	const char *gc = offload ? "\"offload\": true" : "\"offload\": false";
	if (cluster_start(&b->c, b->tracerd, b->provider, TRACERS, b->heap_mib, CACHE, 5000, gc) <
	    0)
		die(b, "start the tracers", strerror(errno));
	b->have_cluster = 1;
	rh_error err;
	b->h = cluster_open(&b->c, &err);
	if (!b->h)
		die(b, "open the heap", err.msg);
	static const uint32_t ptrs[2] = {8, 16};
	rh_type_desc nd = {.name = "dgc-node",
	                   .layout = RH_LAYOUT_FIXED,
	                   .size = sizeof(struct node),
	                   .ptr_offsets = ptrs,
	                   .n_ptrs = 2};
	if (!(b->t_node = rh_type_register(b->h, &nd, &err)) ||
	    !(b->t_refs = rh_type_register(b->h, &dgc_refs_desc, &err)) ||
	    !(b->t_junk = rh_type_register(b->h, &dgc_junk_desc, &err)))
		die(b, "register types", err.msg);
	rh_on_fatal(b->h, on_fatal, b);
	memset(gcs, 0, sizeof gcs);
	ev_heap = b->h;
	rh_on_event(b->h, on_event, NULL);
	anchors = NULL;
	if (rh_global_add(b->h, &anchors) != RH_OK)
		die(b, "register the anchor slot", "rh_global_add failed");
	b->m = rh_mutator_attach(b->h, &err);
	if (!b->m)
		die(b, "attach", err.msg);
	memset(b->slots, 0, sizeof b->slots);
	rh_push_frame(b->m, &b->frame, b->slots, DEPTH + 2);
	b->n_trees =
	        (size_t)(b->live_mib << 20) / ((((size_t)1 << DEPTH) - 1) * sizeof(struct node));
	anchors = rh_alloc_array(b->m, b->t_refs, b->n_trees);
	if (!anchors)
		die(b, "allocate the anchors", rh_last_error()->msg);
	b->next_id = 1;
	b->rng = 88172645463325252ull;
	b->oom = b->mutating = 0;
}

static void close_heap(bench *b)
{
	rh_pop_frame(b->m, &b->frame);
	rh_mutator_detach(b->m);
	rh_heap_close(b->h);
	b->h = NULL;
	cluster_stop(&b->c);
	b->have_cluster = 0;
}

/* Wait until write-back stops (the cache is at its budget), so that the
 * region table the next collection publishes has the final evicted shares. */
static void settle(bench *b)
{
	rh_swap_stats a, z;
	rh_swap_stats_get(b->h->swap, &a);
	for (int i = 0; i < 50; i++) {
		usleep(100000);
		rh_swap_stats_get(b->h->swap, &z);
		if (z.bytes_evicted == a.bytes_evicted && z.pages_dropped == a.pages_dropped)
			break;
		a = z;
	}
}

/* Survivors are promoted after a few collections (docs/collector.md). */
static double build_old(bench *b, int scattered)
{
	double t0 = dgc_now_s();
	build_forest(b, scattered);
	settle(b);
	double f0 = dgc_now_s();
	rh_collect(b->m, 1);
	b->build_full_s = dgc_now_s() - f0;
	for (int i = 0; i < 3; i++)
		rh_collect(b->m, 0);
	return dgc_now_s() - t0;
}

typedef struct old_share {
	uint64_t old_bytes, evicted_bytes, eligible_bytes;
	uint32_t old_regions, eligible_regions;
} old_share;

/* How much of the old data only the tracers hold; "eligible" regions are
 * the ones tracers mark (at least half evicted). Reads the region table
 * with the mutator unparked, so nothing collects meanwhile. */
static old_share old_evicted(bench *b)
{
	old_share o = {0};
	rh_heap *h = b->h;
	for (uint32_t i = 0; i < h->n_regions; i++) {
		rh_region *r = &h->regions[i];
		uint64_t used = r->top - r->start;
		if (r->kind != RH_REGION_OLD || !used)
			continue;
		unsigned pct = rh_swap_region_evicted_pct(h->swap, i, used);
		o.old_regions++;
		o.old_bytes += used;
		o.evicted_bytes += used * pct / 100;
		if (pct >= 50) {
			o.eligible_regions++;
			o.eligible_bytes += used;
		}
	}
	return o;
}

typedef struct tstatus {
	uint64_t bytes_traced, mark_ns, regions_marked;
} tstatus;

static int read_status(bench *b, int i, tstatus *t)
{
	char path[400];
	snprintf(path, sizeof path, "%s/status-%d", b->c.dir, i);
	json_t *j = json_load_file(path, 0, NULL);
	if (!j)
		return -1;
	t->bytes_traced = (uint64_t)json_integer_value(json_object_get(j, "bytes_traced"));
	t->mark_ns = (uint64_t)json_integer_value(json_object_get(j, "mark_ns"));
	t->regions_marked = (uint64_t)json_integer_value(json_object_get(j, "regions_marked"));
	json_decref(j);
	return 0;
}

static void put(json_t *o, const char *k, uint64_t v)
{
	json_object_set_new(o, k, json_integer((json_int_t)v));
}

static double mbs(uint64_t bytes, uint64_t ns)
{
	return ns ? (double)bytes / (double)ns * 1e9 / MB : 0;
}

static double ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

/* ------------------------------------------------------------------ throughput */

typedef struct tp_result {
	double tracer_mbs, aggregate_mbs, full_mbs, cpu_mbs;
	double evicted, cpu_evicted;
} tp_result;

static const char *const layout_names[2] = {"sequential", "scattered"};

typedef struct full_mark {
	uint64_t bytes, ns, faults, fetched;
} full_mark;

/* One full collection; what its marking phase did. remote: the tracers
 * mark (offload on), or the CPU server marks through its page cache. */
static full_mark full_collection(bench *b, int remote)
{
	rh_stats s0, s1;
	rh_stats_get(b->h, &s0);
	memset(mark_sw, 0, sizeof mark_sw);
	watch_mark = 1;
	rh_collect(b->m, 1);
	watch_mark = 0;
	rh_stats_get(b->h, &s1);
	full_mark f = {.bytes = remote ? s1.bytes_marked_remote - s0.bytes_marked_remote
	                               : s1.bytes_marked_cpu - s0.bytes_marked_cpu,
	               .ns = s1.phase_ns[RH_PHASE_MARK] - s0.phase_ns[RH_PHASE_MARK],
	               .faults = mark_sw[1].faults - mark_sw[0].faults,
	               .fetched = mark_sw[1].bytes_fetched - mark_sw[0].bytes_fetched};
	return f;
}

static json_t *full_json(const full_mark *f)
{
	json_t *o = json_object();
	put(o, "bytes_marked", f->bytes);
	put(o, "mark_ns", f->ns);
	json_object_set_new(o, "mbs", json_real(mbs(f->bytes, f->ns)));
	put(o, "mark_faults", f->faults);
	put(o, "mark_bytes_fetched", f->fetched);
	return o;
}

/* Park the mutator until the tracers have marked every old region once
 * more (idle tracers re-mark markings older than 2 s, so bytes_traced
 * never stops growing for long) or bytes_traced has not grown for three
 * status rewrites (one a second); ts gets the last status. Returns the
 * seconds waited. */
static double wait_tracers(bench *b, tstatus *ts)
{
	rh_mutator_park(b->m);
	rh_stats s;
	rh_stats_get(b->h, &s);
	uint64_t last = ~0ull, regions0 = 0;
	int still = 0;
	for (int i = 0; i < TRACERS; i++)
		if (read_status(b, i, &ts[i]) == 0)
			regions0 += ts[i].regions_marked;
	double w0 = dgc_now_s();
	while (dgc_now_s() - w0 < 120 && still < 3) {
		sleep(1);
		uint64_t sum = 0, regions = 0;
		for (int i = 0; i < TRACERS; i++)
			if (read_status(b, i, &ts[i]) == 0) {
				sum += ts[i].bytes_traced;
				regions += ts[i].regions_marked;
			}
		if (regions - regions0 >= s.regions_old)
			break;
		still = sum == last && sum > 0 ? still + 1 : 0;
		last = sum;
	}
	rh_mutator_unpark(b->m);
	return dgc_now_s() - w0;
}

static json_t *throughput_one(bench *b, int scattered, tp_result *res)
{
	open_heap(b, 1);
	double build_s = build_old(b, scattered);
	rh_stats s;
	rh_stats_get(b->h, &s);
	printf("%s forest: built and promoted in %.1f s, %llu old regions, %llu MiB written "
	       "back\n",
	       layout_names[scattered], build_s, (unsigned long long)s.regions_old,
	       (unsigned long long)(s.bytes_evicted >> 20));

	/* The full collection that promoted the forest changed every region's
	 * identity, so the tracers mark all eligible regions afresh. Their
	 * status files count everything since they started (the build's MSCT
	 * and full markings too) and are rewritten once a second, so a
	 * snapshot cannot isolate the marking done while parked. */
	tstatus ts[TRACERS] = {0};
	double waited = wait_tracers(b, ts);

	old_share o = old_evicted(b);
	uint64_t tb = 0, tns = 0, tmax_ns = 0, tregions = 0;
	for (int i = 0; i < TRACERS; i++) {
		tb += ts[i].bytes_traced;
		tns += ts[i].mark_ns;
		tregions += ts[i].regions_marked;
		if (ts[i].mark_ns > tmax_ns)
			tmax_ns = ts[i].mark_ns;
	}

	/* Whole-heap marking on the same heap, twice: by the tracers (what a
	 * full collection does with offload on; nothing moves), then by the
	 * CPU server through its page cache, as with offload off. The heap's
	 * offload switch is flipped for that one collection; no other
	 * collection can run meanwhile (this is the only mutator). */
	full_mark ft = full_collection(b, 1);
	/* That collection changed every region's identity: let the tracers
	 * mark again before the CPU server's turn, not during it. */
	tstatus tq[TRACERS];
	wait_tracers(b, tq);
	old_share oc = old_evicted(b);
	b->h->offload_on = false;
	full_mark fc = full_collection(b, 0);
	b->h->offload_on = true;
	if (!forest_ok(b))
		die(b, "throughput", "the forest was damaged");

	*res = (tp_result){
	        .tracer_mbs = mbs(tb, tns),
	        .aggregate_mbs = mbs(tb, tmax_ns),
	        .full_mbs = mbs(ft.bytes, ft.ns),
	        .cpu_mbs = mbs(fc.bytes, fc.ns),
	        .evicted = o.old_bytes ? (double)o.evicted_bytes / (double)o.old_bytes : 0,
	        .cpu_evicted = oc.old_bytes ? (double)oc.evicted_bytes / (double)oc.old_bytes : 0};
	printf("  old data %.1f MiB in %u regions, %.0f%% evicted; %u regions (%.1f MiB) at least "
	       "half evicted (what tracers mark)\n",
	       (double)o.old_bytes / 1048576, o.old_regions, res->evicted * 100, o.eligible_regions,
	       (double)o.eligible_bytes / 1048576);
	for (int i = 0; i < TRACERS; i++)
		printf("  tracer %d: %7.1f MiB marked (%4llu regions by MSCT) in %8.1f ms: %7.1f "
		       "MB/s\n",
		       i, (double)ts[i].bytes_traced / 1048576,
		       (unsigned long long)ts[i].regions_marked, (double)ts[i].mark_ns / 1e6,
		       mbs(ts[i].bytes_traced, ts[i].mark_ns));
	printf("  tracers: %.1f MB/s per node, %.1f MB/s together (waited %.0f s after the "
	       "park)\n",
	       res->tracer_mbs, res->aggregate_mbs, waited);
	printf("  full marking by the tracers: %.1f MiB in %.1f ms: %.1f MB/s\n",
	       (double)ft.bytes / 1048576, (double)ft.ns / 1e6, res->full_mbs);
	printf("  full marking by the CPU server (%.0f%% of the old data evicted): %.1f MiB in "
	       "%.1f ms: %.1f MB/s (%llu faults, %.1f MiB fetched while marking)\n",
	       res->cpu_evicted * 100, (double)fc.bytes / 1048576, (double)fc.ns / 1e6,
	       res->cpu_mbs, (unsigned long long)fc.faults, (double)fc.fetched / 1048576);
	if (!tb)
		printf("  WARNING: the tracers marked nothing\n");
	if (!fc.bytes)
		printf("  WARNING: the CPU server marked nothing\n");

	json_t *tr = json_array();
	for (int i = 0; i < TRACERS; i++) {
		json_t *t = json_object();
		put(t, "bytes_traced", ts[i].bytes_traced);
		put(t, "mark_ns", ts[i].mark_ns);
		put(t, "regions_marked", ts[i].regions_marked);
		json_object_set_new(t, "mbs", json_real(mbs(ts[i].bytes_traced, ts[i].mark_ns)));
		json_array_append_new(tr, t);
	}
	json_t *j = json_object(), *old = json_object();
	json_object_set_new(j, "layout", json_string(layout_names[scattered]));
	json_object_set_new(j, "tracers", tr);
	json_object_set_new(j, "tracer_mbs_per_node", json_real(res->tracer_mbs));
	json_object_set_new(j, "tracer_mbs_aggregate", json_real(res->aggregate_mbs));
	put(j, "tracer_regions_marked", tregions);
	json_object_set_new(j, "wait_s", json_real(waited));
	json_object_set_new(j, "full_tracers", full_json(&ft));
	json_object_set_new(j, "full_cpu", full_json(&fc));
	put(old, "bytes", o.old_bytes);
	put(old, "regions", o.old_regions);
	put(old, "eligible_bytes", o.eligible_bytes);
	put(old, "eligible_regions", o.eligible_regions);
	json_object_set_new(old, "evicted_fraction", json_real(res->evicted));
	json_object_set_new(old, "evicted_fraction_cpu_marking", json_real(res->cpu_evicted));
	json_object_set_new(j, "old", old);
	json_object_set_new(j, "ratio", json_real(ratio(res->tracer_mbs, res->cpu_mbs)));
	json_object_set_new(j, "ratio_full", json_real(ratio(res->full_mbs, res->cpu_mbs)));
	close_heap(b);
	return j;
}

static json_t *throughput(bench *b)
{
	b->heap_mib = b->tp_mib;
	printf("marking throughput: %s, 2 tracers, live %llu MiB in %zu trees of %d nodes of "
	       "%zu bytes, heap %llu MiB, cache %.0f%% (%llu MiB)\n",
	       b->provider, b->live_mib,
	       (size_t)(b->live_mib << 20) / ((((size_t)1 << DEPTH) - 1) * sizeof(struct node)),
	       (1 << DEPTH) - 1, sizeof(struct node), b->heap_mib, CACHE * 100,
	       (unsigned long long)((double)b->heap_mib * CACHE));
	tp_result r[2];
	json_t *j = json_array();
	for (int l = 0; l < 2; l++)
		json_array_append_new(j, throughput_one(b, l, &r[l]));
	printf("  %-11s %8s %13s %13s %13s %13s %7s %7s\n", "layout", "evicted", "tracer/node",
	       "tracers", "full, tracers", "full, CPU", "tracer", "full");
	for (int l = 0; l < 2; l++)
		printf("  %-11s %7.0f%% %8.1f MB/s %8.1f MB/s %8.1f MB/s %8.1f MB/s %6.1fx "
		       "%6.1fx\n",
		       layout_names[l], r[l].cpu_evicted * 100, r[l].tracer_mbs, r[l].aggregate_mbs,
		       r[l].full_mbs, r[l].cpu_mbs, ratio(r[l].tracer_mbs, r[l].cpu_mbs),
		       ratio(r[l].full_mbs, r[l].cpu_mbs));
	printf("  tracer/node: sum of bytes_traced / sum of mark_ns of both tracers (their status\n"
	       "  files): everything they marked since the heap opened, MSCT (their concurrent\n"
	       "  marking of mostly evicted old regions, region-locally from remembered-set\n"
	       "  roots) and the build's full marking; wall-clock time, so it includes waiting\n"
	       "  for the cores the mutator and swap threads use. tracers: the same bytes over\n"
	       "  the longer of the two marking times (both in parallel). full: a full\n"
	       "  collection's marking phase on the same heap, by the tracers together\n"
	       "  (offload on) and by the CPU server through its page cache (offload off),\n"
	       "  both from the roots over the whole heap. Ratios: tracer/node and full,\n"
	       "  tracers against the CPU server; target >= 10x (paper: 922 vs 93.9 MB/s,\n"
	       "  9.8x). evicted: share of the old data evicted when the CPU server began.\n"
	       "  MB = 10^6 bytes; all rates are live bytes per second of marking time.\n");
	return j;
}

/* ------------------------------------------------------------------ pauses */

/* One mutation between two random old trees x and y: mostly a swap of
 * two SWAP_LEVEL subtrees (old-to-old reference moves, written as
 * move-then-delete: x.f = y.g; y.g = NULL; y.g = old x.f). The walk down
 * passes through the scattered 31-node subtrees, so it reads and writes
 * pages that are mostly evicted. Every b->replace_every-th mutation
 * instead overwrites x's MOVE_LEVEL subtree with y's (the overwritten one
 * becomes garbage in old regions) and grows a fresh one where y's was.
 * Every tree keeps its shape. Plus short-lived junk. */
static void step(bench *b)
{
	size_t i = rng_next(&b->rng) % b->n_trees, k = rng_next(&b->rng) % b->n_trees;
	if (k == i)
		k = (k + 1) % b->n_trees;
	struct node *x = ((struct dgc_refs *)anchors)->e[i],
	            *y = ((struct dgc_refs *)anchors)->e[k];
	int replace = b->replace_every && ++b->steps % b->replace_every == 0;
	int level = replace ? MOVE_LEVEL : SWAP_LEVEL;
	uint64_t r = rng_next(&b->rng);
	for (int l = 0; l < level - 1; l++, r >>= 2) {
		x = x->f[r & 1];
		y = y->f[(r >> 1) & 1];
	}
	int sx = r & 1, sy = (r >> 1) & 1;
	struct node *old_x = x->f[sx];
	rh_write_ref(b->m, (void **)&x->f[sx], y->f[sy]);
	rh_write_ref(b->m, (void **)&y->f[sy], NULL);
	if (replace) {
		b->slots[0] = y;
		grow(b, 0, sy, DEPTH - MOVE_LEVEL);
		b->slots[0] = NULL;
		b->replaced++;
	} else {
		rh_write_ref(b->m, (void **)&y->f[sy], old_x);
	}
	for (int j = 0; j < JUNK_PER_STEP && !b->oom; j++)
		if (!rh_alloc_array(b->m, b->t_junk, JUNK_BYTES))
			b->oom = 1;
	rh_safepoint(b->m);
}

typedef struct pause_run {
	double wall_s, build_s, build_full_s;
	uint64_t steps, replaced, n_pauses;
	int oom;                               /* the heap ran out before the time was up */
	uint64_t free0, free1;                 /* free regions at the start and the end */
	uint64_t phase_faults[RH_PHASE_COUNT]; /* in the window's pauses */
	uint64_t tracer_regions, tracer_bytes; /* marked by tracers in the window */
	uint64_t p50, p95, p99, max;
	rh_stats d; /* counters over the window */
	old_share o;
	int n_slow;
	uint64_t slow_ns[3];
	gc_rec slow[3]; /* the longest pauses, by phase */
} pause_run;

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Nearest rank, as rh_stats_pause_percentile, over sorted v[0..n). */
static uint64_t pct(const uint64_t *v, size_t n, double p)
{
	if (!n)
		return 0;
	size_t rank = (size_t)(p / 100.0 * (double)n + 0.999999);
	return v[rank ? rank - 1 : 0];
}

static void run_pauses(bench *b, int offload, pause_run *pr)
{
	memset(pr, 0, sizeof *pr);
	open_heap(b, offload);
	pr->build_s = build_old(b, 1);
	pr->build_full_s = b->build_full_s;
	pr->o = old_evicted(b);
	rh_stats s0, s1;
	rh_stats_get(b->h, &s0);
	tstatus ts0[TRACERS] = {0}, ts1[TRACERS] = {0};
	for (int i = 0; i < TRACERS; i++)
		read_status(b, i, &ts0[i]);
	b->steps = b->replaced = 0;
	/* Percentiles over the mutation window only: the pauses recorded
	 * before it include the build's forced full collection. */
	pthread_mutex_lock(&b->h->stats_lock);
	size_t first = b->h->n_pauses;
	pthread_mutex_unlock(&b->h->stats_lock);
	double t0 = dgc_now_s();
	b->mutating = 1;
	b->oom = 0;
	while (dgc_now_s() - t0 < b->seconds && !b->oom)
		for (int i = 0; i < 64 && !b->oom; i++) {
			step(b);
			pr->steps++;
		}
	pr->wall_s = dgc_now_s() - t0;
	b->mutating = 0;
	pr->oom = b->oom;
	pr->free0 = s0.regions_free;
	rh_stats_get(b->h, &s1);
	pr->free1 = s1.regions_free;
	/* Status files are rewritten every second: wait for a fresh one. */
	sleep(1);
	for (int i = 0; i < TRACERS; i++) {
		read_status(b, i, &ts1[i]);
		pr->tracer_regions += ts1[i].regions_marked - ts0[i].regions_marked;
		pr->tracer_bytes += ts1[i].bytes_traced - ts0[i].bytes_traced;
	}
	pr->replaced = b->replaced;
	pthread_mutex_lock(&b->h->stats_lock);
	size_t n = b->h->n_pauses - first;
	uint64_t *v = malloc((n ? n : 1) * sizeof *v);
	if (v)
		memcpy(v, b->h->pauses + first, n * sizeof *v);
	pthread_mutex_unlock(&b->h->stats_lock);
	if (!v)
		die(b, "pauses", "out of memory");
	/* Pause j of the window is collection g0 + j: each collection records
	 * one pause, in order. */
	uint64_t g0 = s0.collections + s0.full_collections;
	size_t sel[3];
	for (int k = 0; k < 3; k++) {
		size_t best = n;
		for (size_t j = 0; j < n && g0 + j < MAX_GCS; j++) {
			int taken = 0;
			for (int q = 0; q < k; q++)
				taken |= sel[q] == j;
			if (!taken && (best == n || v[j] > v[best]))
				best = j;
		}
		if (best == n)
			break;
		sel[k] = best;
		pr->slow_ns[pr->n_slow] = v[best];
		pr->slow[pr->n_slow++] = gcs[g0 + best];
	}
	for (size_t j = 0; j < n && g0 + j < MAX_GCS; j++)
		for (int i = 0; i < RH_PHASE_COUNT; i++)
			pr->phase_faults[i] += gcs[g0 + j].faults[i];
	qsort(v, n, sizeof *v, cmp_u64);
	pr->n_pauses = n;
	pr->p50 = pct(v, n, 50);
	pr->p95 = pct(v, n, 95);
	pr->p99 = pct(v, n, 99);
	pr->max = n ? v[n - 1] : 0;
	free(v);
	pr->d.collections = s1.collections - s0.collections;
	pr->d.full_collections = s1.full_collections - s0.full_collections;
	pr->d.gc_ns = s1.gc_ns - s0.gc_ns;
	pr->d.csscs = s1.csscs - s0.csscs;
	pr->d.regions_evacuated_remote = s1.regions_evacuated_remote - s0.regions_evacuated_remote;
	pr->d.bytes_copied_remote = s1.bytes_copied_remote - s0.bytes_copied_remote;
	pr->d.bytes_copied = s1.bytes_copied - s0.bytes_copied;
	pr->d.bytes_marked_cpu = s1.bytes_marked_cpu - s0.bytes_marked_cpu;
	pr->d.faults = s1.faults - s0.faults;
	pr->d.regions_marked_remote = s1.regions_marked_remote;
	pr->d.max_pause_ns = s1.max_pause_ns; /* whole run, build included */
	for (int i = 0; i < RH_PHASE_COUNT; i++)
		pr->d.phase_ns[i] = s1.phase_ns[i] - s0.phase_ns[i];
	/* Out of heap, the last mutation stopped half way: the forest is not
	 * whole then, and is not checked. */
	if (!pr->oom && !forest_ok(b))
		die(b, offload ? "pauses, offload on" : "pauses, offload off",
		    "the forest was damaged");
	if (pr->oom)
		printf("offload %s: the heap ran out after %.1f s of mutation (%s); the numbers "
		       "below cover that time\n",
		       offload ? "on" : "off", pr->wall_s, rh_last_error()->msg);
	close_heap(b);
}

static const char *const phase_names[RH_PHASE_COUNT] = {"stop",  "roots",   "mark",   "evacuate",
                                                        "fixup", "reclaim", "remote", "verify"};

static json_t *pause_json(const pause_run *p)
{
	json_t *o = json_object();
	json_object_set_new(o, "wall_s", json_real(p->wall_s));
	put(o, "mutations", p->steps);
	put(o, "replacements", p->replaced);
	json_object_set_new(o, "heap_exhausted", json_boolean(p->oom));
	put(o, "pauses", p->n_pauses);
	put(o, "p50_ns", p->p50);
	put(o, "p95_ns", p->p95);
	put(o, "p99_ns", p->p99);
	put(o, "max_ns", p->max);
	put(o, "gc_ns", p->d.gc_ns);
	put(o, "collections", p->d.collections);
	put(o, "full_collections", p->d.full_collections);
	put(o, "csscs", p->d.csscs);
	put(o, "regions_evacuated_remote", p->d.regions_evacuated_remote);
	put(o, "bytes_copied_remote", p->d.bytes_copied_remote);
	put(o, "bytes_copied_cpu", p->d.bytes_copied);
	put(o, "bytes_marked_cpu", p->d.bytes_marked_cpu);
	put(o, "tracer_regions_marked", p->tracer_regions);
	put(o, "tracer_bytes_traced", p->tracer_bytes);
	put(o, "faults", p->d.faults);
	put(o, "regions_free_start", p->free0);
	put(o, "regions_free_end", p->free1);
	put(o, "max_pause_ns_whole_run", p->d.max_pause_ns);
	json_object_set_new(o, "build_full_collection_s", json_real(p->build_full_s));
	json_t *ph = json_object();
	for (int i = 0; i < RH_PHASE_COUNT; i++)
		put(ph, phase_names[i], p->d.phase_ns[i]);
	json_object_set_new(o, "phase_ns", ph);
	json_t *pf = json_object();
	for (int i = RH_PHASE_ROOTS; i < RH_PHASE_COUNT; i++)
		put(pf, phase_names[i], p->phase_faults[i]);
	json_object_set_new(o, "phase_faults", pf);
	json_object_set_new(o, "evicted_fraction_at_start",
	                    json_real(p->o.old_bytes
	                                      ? (double)p->o.evicted_bytes / (double)p->o.old_bytes
	                                      : 0.0));
	return o;
}

static void row_ms(const char *name, uint64_t on, uint64_t off)
{
	printf("  %-28s %12.2f %12.2f %9.2fx\n", name, (double)on / 1e6, (double)off / 1e6,
	       ratio((double)on, (double)off));
}

static void row_n(const char *name, double on, double off)
{
	printf("  %-28s %12.0f %12.0f %9.2fx\n", name, on, off, ratio(on, off));
}

static json_t *pauses(bench *b)
{
	b->heap_mib = b->pa_mib;
	pause_run on, off;
	run_pauses(b, 1, &on);
	run_pauses(b, 0, &off);
	printf("\nCSSC pauses: %s, 2 tracers, live %llu MiB, heap %llu MiB, cache %.0f%%, default "
	       "pause budget, %.0f s of mutation per run\n",
	       b->provider, b->live_mib, b->heap_mib, CACHE * 100, b->seconds);
	printf("  (a mutation swaps two %d-node subtrees of two random old trees, level %d of "
	       "%d;\n",
	       (1 << (DEPTH - SWAP_LEVEL)) - 1, SWAP_LEVEL, DEPTH);
	if (b->replace_every)
		printf("   one in %u instead overwrites a %d-node subtree with another and grows "
		       "a\n"
		       "   fresh one in its place;\n",
		       b->replace_every, (1 << (DEPTH - MOVE_LEVEL)) - 1);
	printf("   plus %d short-lived %d-byte objects per mutation)\n", JUNK_PER_STEP,
	       JUNK_BYTES + 16);
	printf("  %-28s %12s %12s %10s\n", "", "offload on", "offload off", "on/off");
	row_ms("pause p50 (ms)", on.p50, off.p50);
	row_ms("pause p95 (ms)", on.p95, off.p95);
	row_ms("pause p99 (ms)", on.p99, off.p99);
	row_ms("pause max (ms)", on.max, off.max);
	row_ms("time in pauses (ms)", on.d.gc_ns, off.d.gc_ns);
	row_n("pauses", (double)on.n_pauses, (double)off.n_pauses);
	row_n("partial collections", (double)on.d.collections, (double)off.d.collections);
	row_n("full collections", (double)on.d.full_collections, (double)off.d.full_collections);
	row_n("CSSCs", (double)on.d.csscs, (double)off.d.csscs);
	row_n("regions evacuated by tracers", (double)on.d.regions_evacuated_remote,
	      (double)off.d.regions_evacuated_remote);
	row_n("MiB copied by tracers", (double)on.d.bytes_copied_remote / 1048576,
	      (double)off.d.bytes_copied_remote / 1048576);
	row_n("MiB copied by CPU server", (double)on.d.bytes_copied / 1048576,
	      (double)off.d.bytes_copied / 1048576);
	row_n("MiB marked by CPU server", (double)on.d.bytes_marked_cpu / 1048576,
	      (double)off.d.bytes_marked_cpu / 1048576);
	row_n("regions marked by tracers", (double)on.tracer_regions, (double)off.tracer_regions);
	row_n("MiB marked by tracers", (double)on.tracer_bytes / 1048576,
	      (double)off.tracer_bytes / 1048576);
	row_n("page faults", (double)on.d.faults, (double)off.d.faults);
	for (int i = 0; i < RH_PHASE_COUNT; i++) {
		char name[40];
		snprintf(name, sizeof name, "  phase %s (ms)", phase_names[i]);
		row_ms(name, on.d.phase_ns[i], off.d.phase_ns[i]);
	}
	for (int i = RH_PHASE_ROOTS; i < RH_PHASE_COUNT; i++) {
		char name[40];
		snprintf(name, sizeof name, "  faults in %s", phase_names[i]);
		row_n(name, (double)on.phase_faults[i], (double)off.phase_faults[i]);
	}
	row_n("free regions at the start", (double)on.free0, (double)off.free0);
	row_n("free regions at the end", (double)on.free1, (double)off.free1);
	printf("  %-28s %12s %12s\n", "heap ran out", on.oom ? "yes" : "no",
	       off.oom ? "yes" : "no");
	row_n("mutations", (double)on.steps, (double)off.steps);
	printf("  %-28s %12.2f %12.2f %9.2fx\n", "wall time (s)", on.wall_s, off.wall_s,
	       ratio(on.wall_s, off.wall_s));
	printf("  %-28s %12.0f %12.0f %9.2fx\n", "mutations per second",
	       (double)on.steps / on.wall_s, (double)off.steps / off.wall_s,
	       ratio((double)on.steps / on.wall_s, (double)off.steps / off.wall_s));
	for (int r = 0; r < 2; r++) {
		const pause_run *p = r ? &off : &on;
		printf("  slowest pauses, offload %s (ms: total = stop+other, roots, mark, "
		       "evacuate, fixup, reclaim, remote):\n",
		       r ? "off" : "on");
		for (int k = 0; k < p->n_slow; k++) {
			const gc_rec *g = &p->slow[k];
			uint64_t sum = 0;
			for (int i = RH_PHASE_ROOTS; i <= RH_PHASE_REMOTE; i++)
				sum += g->ns[i];
			/* The pause also counts bringing the mutators to a stop,
			 * which no phase event brackets. */
			uint64_t other = p->slow_ns[k] > sum ? p->slow_ns[k] - sum : 0;
			printf("    %s %8.2f = %7.2f %7.2f %7.2f %7.2f %7.2f %7.2f %7.2f\n",
			       g->kind == RH_GC_FULL ? "full   " : "partial",
			       (double)p->slow_ns[k] / 1e6, (double)other / 1e6,
			       (double)g->ns[RH_PHASE_ROOTS] / 1e6,
			       (double)g->ns[RH_PHASE_MARK] / 1e6,
			       (double)g->ns[RH_PHASE_EVACUATE] / 1e6,
			       (double)g->ns[RH_PHASE_FIXUP] / 1e6,
			       (double)g->ns[RH_PHASE_RECLAIM] / 1e6,
			       (double)g->ns[RH_PHASE_REMOTE] / 1e6);
		}
	}
	printf("  (percentiles over the mutation window. Before it, the full collection that made\n"
	       "   the forest old took %.0f ms with offload on (the tracers mark) and %.0f ms "
	       "with\n"
	       "   offload off; whole-run max pause %.0f / %.0f ms)\n",
	       on.build_full_s * 1e3, off.build_full_s * 1e3, (double)on.d.max_pause_ns / 1e6,
	       (double)off.d.max_pause_ns / 1e6);
	json_t *r = json_pack("{s:f, s:f, s:f, s:f, s:f}", "p50", ratio(on.p50, off.p50), "p95",
	                      ratio(on.p95, off.p95), "p99", ratio(on.p99, off.p99), "max",
	                      ratio(on.max, off.max), "wall", ratio(on.wall_s, off.wall_s));
	return json_pack("{s:f, s:i, s:o, s:o, s:o}", "seconds", b->seconds, "replace_every",
	                 (int)b->replace_every, "offload_on", pause_json(&on), "offload_off",
	                 pause_json(&off), "ratio_on_off", r);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr,
		        "usage: %s TRACERD PROVIDER [--json FILE] [--live-mib N] [--heap-mib N] "
		        "[--seconds S] [--replace-every N] [--only throughput|pauses]\n",
		        argv[0]);
		return 2;
	}
	/* Line by line: a run takes minutes, and a crash should leave what was
	 * measured so far. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	bench b = {.tracerd = argv[1],
	           .provider = argv[2],
	           .live_mib = 96,
	           .seconds = 10,
	           .replace_every = 0};
	const char *json_path = NULL, *only = "";
	for (int i = 3; i < argc; i++) {
		if (i + 1 >= argc) {
			fprintf(stderr, "%s: %s needs a value\n", argv[0], argv[i]);
			return 2;
		}
		if (!strcmp(argv[i], "--json"))
			json_path = argv[++i];
		else if (!strcmp(argv[i], "--live-mib"))
			b.live_mib = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--heap-mib"))
			b.tp_mib = b.pa_mib = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--replace-every"))
			b.replace_every = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--only"))
			only = argv[++i];
		else if (!strcmp(argv[i], "--seconds"))
			b.seconds = strtod(argv[++i], NULL);
		else {
			fprintf(stderr, "%s: unknown option %s\n", argv[0], argv[i]);
			return 2;
		}
	}
	if (b.live_mib < 8 || b.seconds <= 0) {
		fprintf(stderr, "%s: --live-mib must be >= 8 and --seconds > 0\n", argv[0]);
		return 2;
	}
	/* Throughput: 1.5x the live data, so that the 25% cache holds at most
	 * 3/8 of it and the old data, placed from the lowest region up, spans
	 * both partitions. Pauses: 2x, room for the garbage the mutations make
	 * (see docs/benchmarks.md on how fast it is reclaimed). */
	if (!b.tp_mib)
		b.tp_mib = (b.live_mib * 3 / 2 + 15) / 16 * 16;
	if (!b.pa_mib)
		b.pa_mib = (b.live_mib * 2 + 15) / 16 * 16;

	json_t *tp = strcmp(only, "pauses") ? throughput(&b) : json_null();
	json_t *pa = strcmp(only, "throughput") ? pauses(&b) : json_null();
	if (json_path) {
		json_t *j = json_pack("{s:s, s:i, s:I, s:I, s:I, s:f, s:i, s:o, s:o}", "provider",
		                      b.provider, "tracers", TRACERS, "live_mib",
		                      (json_int_t)b.live_mib, "heap_mib_throughput",
		                      (json_int_t)b.tp_mib, "heap_mib_pauses", (json_int_t)b.pa_mib,
		                      "cache_fraction", CACHE, "node_bytes",
		                      (int)sizeof(struct node), "throughput", tp, "pauses", pa);
		if (json_dump_file(j, json_path, JSON_INDENT(2)) != 0)
			fprintf(stderr, "rh-bench-dgc: cannot write %s\n", json_path);
		json_decref(j);
	} else {
		json_decref(tp);
		json_decref(pa);
	}
	return 0;
}
