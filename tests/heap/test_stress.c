/* Multi-threaded stress: mutator threads allocate random structures (fixed
 * nodes, reference arrays, byte arrays, record arrays, all self-checking),
 * store references at random between their own objects and into a shared
 * array that publishes objects to the other threads, park around sleeps and
 * a mutex, poll safepoints and force collections now and then. The verifier
 * runs after every collection (cfg.verify: a failure aborts). At the end
 * every reachable object is checked.
 *
 *   heap_stress [threads [ops_per_thread]]     defaults: 4 threads, 600000
 *
 * Ownership keeps the test itself free of data races: only the thread that
 * allocated an object (the owner, encoded in its id) writes its pointer
 * fields; other threads read only fields that never change after the object
 * is published, and the shared array is accessed under a mutex. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "th.h"

#define SLOTS 32
#define SHARED 20000 /* > half a region: humongous, never in a partial collection set */
#define MAX_THREADS 16

struct node { /* fixed: a, b references */
	uint64_t hdr;
	void *a, *b;
	uint64_t id, chk;
};
struct refs { /* ref array with id and chk in its fixed part */
	uint64_t hdr, len, id, chk;
	void *e[];
};
struct bytes { /* byte array; chk covers the bytes */
	uint64_t hdr, len, id, chk;
	uint8_t b[];
};
struct rec {
	void *ref;
	uint64_t val;
};
struct recs { /* record array */
	uint64_t hdr, len, id;
	struct rec e[];
};

static rh_type_id t_node, t_refs, t_bytes, t_recs, t_junk;
static rh_heap *heap;
static void *shared_root; /* a ref array of SHARED elements; a global root */
static pthread_mutex_t shared_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t barrier;
static long n_ops = 600000;
/* Forced collections: about n_ops / 1000 / collect_div per thread. */
static uint64_t collect_div = 20;

static int is_ref(const void *p)
{
	return p != NULL && ((uintptr_t)p & 7) == 0;
}

static uint64_t bytes_sum(const struct bytes *b)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (uint64_t i = 0; i < b->len; i++)
		h = (h ^ b->b[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t obj_id(const void *p)
{
	rh_type_id t = rh_object_type(p);
	if (t == t_node)
		return ((const struct node *)p)->id;
	if (t == t_refs || t == t_bytes || t == t_recs)
		return ((const struct refs *)p)->id;
	return 0;
}

/* Check the fields that never change after publication. */
static int obj_ok(const void *p)
{
	rh_type_id t = rh_object_type(p);
	if (t == t_node) {
		const struct node *n = p;
		return n->id != 0 && n->chk == rng_mix(n->id);
	}
	if (t == t_refs) {
		const struct refs *r = p;
		return r->id != 0 && r->len == rh_array_length(p) &&
		       r->chk == rng_mix(r->id ^ r->len);
	}
	if (t == t_bytes) {
		const struct bytes *b = p;
		return b->id != 0 && b->len == rh_array_length(p) &&
		       b->chk == (rng_mix(b->id) ^ bytes_sum(b));
	}
	if (t == t_recs) {
		const struct recs *r = p;
		if (r->id == 0 || r->len != rh_array_length(p))
			return 0;
		for (uint64_t i = 0; i < r->len; i++)
			if (r->e[i].val != rng_mix(r->id + i))
				return 0;
		return 1;
	}
	return 0;
}

/* Pointer slots of an object: count and the i-th slot. */
static size_t n_slots(void *p)
{
	rh_type_id t = rh_object_type(p);
	if (t == t_node)
		return 2;
	if (t == t_refs || t == t_recs)
		return rh_array_length(p);
	return 0;
}

static void **slot_at(void *p, size_t i)
{
	rh_type_id t = rh_object_type(p);
	if (t == t_node)
		return i == 0 ? &((struct node *)p)->a : &((struct node *)p)->b;
	if (t == t_refs)
		return &((struct refs *)p)->e[i];
	return &((struct recs *)p)->e[i].ref;
}

struct worker {
	int tid;
	uint64_t seed;
	uint64_t next_id;
	rh_mutator *m;
	void **slots;
	unsigned long bad, checked, published, fetched, stores, allocs;
};

static int owned(struct worker *w, const void *p)
{
	return (obj_id(p) >> 40) == (uint64_t)w->tid + 1;
}

static void *alloc_random(struct worker *w)
{
	rh_mutator *m = w->m;
	uint64_t x = rng_next(&w->seed);
	uint64_t id = ((uint64_t)w->tid + 1) << 40 | w->next_id++;
	switch (x % 4) {
	case 0: {
		struct node *n = rh_alloc(m, t_node);
		if (!n)
			return NULL;
		n->id = id;
		n->chk = rng_mix(id);
		return n;
	}
	case 1: {
		size_t len = 1 + (x >> 8) % 16;
		struct refs *r = rh_alloc_array(m, t_refs, len);
		if (!r)
			return NULL;
		r->id = id;
		r->chk = rng_mix(id ^ len);
		/* Some elements point at objects in our roots already. */
		for (size_t i = 0; i < len; i += 3) {
			void *v = w->slots[(x >> 16 ^ i) % SLOTS];
			rh_write_ref(m, &r->e[i], v);
		}
		return r;
	}
	case 2: {
		size_t len = 8 + (x >> 8) % 1024;
		struct bytes *b = rh_alloc_array(m, t_bytes, len);
		if (!b)
			return NULL;
		b->id = id;
		for (size_t i = 0; i < len; i++)
			b->b[i] = (uint8_t)(id * 31 + i * (x | 1));
		b->chk = rng_mix(id) ^ bytes_sum(b);
		return b;
	}
	default: {
		size_t len = 1 + (x >> 8) % 8;
		struct recs *r = rh_alloc_array(m, t_recs, len);
		if (!r)
			return NULL;
		r->id = id;
		for (size_t i = 0; i < len; i++)
			r->e[i].val = rng_mix(id + i);
		return r;
	}
	}
}

/* Check an object and (if ours, so its pointer fields are stable) the
 * immutable fields of what it references. */
static void check_obj(struct worker *w, void *p)
{
	if (!is_ref(p))
		return;
	w->checked++;
	if (!obj_ok(p)) {
		if (w->bad++ < 5)
			fprintf(stderr, "thread %d: bad object %p type %u\n", w->tid, p,
			        rh_object_type(p));
		return;
	}
	if (!owned(w, p))
		return;
	size_t n = n_slots(p);
	for (size_t i = 0; i < n; i++) {
		void *c = *slot_at(p, i);
		if (is_ref(c) && !obj_ok(c) && w->bad++ < 5)
			fprintf(stderr, "thread %d: bad child %p of %p\n", w->tid, c, p);
	}
}

/* Enter the shared-array critical section without holding up a collection
 * while we wait for the mutex. */
static void lock_shared(rh_mutator *m)
{
	rh_mutator_park(m);
	pthread_mutex_lock(&shared_mu);
	rh_mutator_unpark(m);
}

static void unlock_shared(rh_mutator *m)
{
	pthread_mutex_unlock(&shared_mu);
}

static void one_op(struct worker *w)
{
	rh_mutator *m = w->m;
	uint64_t x = rng_next(&w->seed);
	size_t i = (x >> 8) % SLOTS, j = (x >> 16) % SLOTS, k = x >> 24;
	unsigned what = (unsigned)(x % 1000);
	if (what < 300) {
		void *p = alloc_random(w);
		if (!p) {
			w->bad++;
			fprintf(stderr, "thread %d: allocation failed: %s\n", w->tid,
			        rh_last_error()->msg);
			return;
		}
		w->slots[i] = p;
		w->allocs++;
	} else if (what < 550) {
		void *src = w->slots[i];
		if (!is_ref(src) || !owned(w, src) || n_slots(src) == 0)
			return;
		void *val;
		unsigned v = (unsigned)(k % 10);
		if (v < 6)
			val = w->slots[j];
		else if (v < 8)
			val = NULL;
		else
			val = (void *)(uintptr_t)((k << 4) | 1); /* an immediate */
		rh_write_ref(m, slot_at(src, k % n_slots(src)), val);
		w->stores++;
	} else if (what < 650) {
		void *src = w->slots[j];
		if (!is_ref(src) || !owned(w, src) || n_slots(src) == 0)
			return;
		void *c = *slot_at(src, k % n_slots(src));
		w->slots[i] = is_ref(c) ? c : NULL;
	} else if (what < 730) {
		lock_shared(m);
		struct refs *sh = shared_root;
		rh_write_ref(m, &sh->e[k % SHARED], w->slots[i]);
		unlock_shared(m);
		w->published++;
	} else if (what < 810) {
		lock_shared(m);
		struct refs *sh = shared_root;
		void *p = sh->e[k % SHARED];
		void *dst = w->slots[j];
		if (k & 1 && is_ref(dst) && owned(w, dst) && n_slots(dst))
			rh_write_ref(m, slot_at(dst, k % n_slots(dst)), p);
		else
			w->slots[i] = p;
		unlock_shared(m);
		w->fetched++;
	} else if (what < 900) {
		check_obj(w, w->slots[i]);
	} else if (what < 905) {
		rh_mutator_park(m);
		usleep(20 + k % 100);
		rh_mutator_unpark(m);
	} else if (what == 905 && k % collect_div == 0) {
		if (rh_collect(m, (k >> 4) % 4 == 0) != 0)
			w->bad++;
	} else if (what > 920) {
		if (!rh_alloc_array(m, t_junk, 200 + k % 2000)) {
			w->bad++;
			fprintf(stderr, "thread %d: junk allocation failed\n", w->tid);
		}
	}
}

/* ------------------------------------------------------------ final check */

struct set {
	uintptr_t *a;
	size_t cap, n;
};

static int set_add(struct set *s, uintptr_t p)
{
	if (2 * (s->n + 1) > s->cap) {
		struct set t = {calloc(s->cap ? 2 * s->cap : 1024, sizeof(uintptr_t)),
		                s->cap ? 2 * s->cap : 1024, 0};
		REQUIRE(t.a != NULL);
		for (size_t i = 0; i < s->cap; i++)
			if (s->a[i])
				set_add(&t, s->a[i]);
		free(s->a);
		*s = t;
	}
	size_t h = (size_t)rng_mix(p) & (s->cap - 1);
	while (s->a[h]) {
		if (s->a[h] == p)
			return 0;
		h = (h + 1) & (s->cap - 1);
	}
	s->a[h] = p;
	s->n++;
	return 1;
}

struct stack {
	void **a;
	size_t cap, top;
};

static void stack_push(struct stack *s, void *p)
{
	if (s->top == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 1024;
		s->a = realloc(s->a, s->cap * sizeof *s->a);
		REQUIRE(s->a != NULL);
	}
	s->a[s->top++] = p;
}

/* Everything reachable from roots[0..n): every object valid, every
 * reference to a valid object. Nobody writes meanwhile. */
static void check_reachable(struct worker *w, void **roots, size_t n)
{
	struct set seen = {0};
	struct stack st = {0};
	for (size_t i = 0; i < n; i++)
		if (is_ref(roots[i]) && set_add(&seen, (uintptr_t)roots[i]))
			stack_push(&st, roots[i]);
	while (st.top) {
		void *p = st.a[--st.top];
		w->checked++;
		if (!obj_ok(p)) {
			if (w->bad++ < 5)
				fprintf(stderr, "final: bad object %p type %u\n", p,
				        rh_object_type(p));
			continue;
		}
		size_t ns = n_slots(p);
		for (size_t i = 0; i < ns; i++) {
			void *c = *slot_at(p, i);
			if (is_ref(c) && set_add(&seen, (uintptr_t)c))
				stack_push(&st, c);
		}
	}
	free(st.a);
	free(seen.a);
}

static void park_barrier(rh_mutator *m)
{
	rh_mutator_park(m);
	pthread_barrier_wait(&barrier);
	rh_mutator_unpark(m);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	w->m = th_attach(heap);
	w->slots = calloc(SLOTS, sizeof(void *));
	REQUIRE(w->slots != NULL);
	rh_frame f;
	rh_push_frame(w->m, &f, w->slots, SLOTS);
	for (long op = 0; op < n_ops; op++) {
		one_op(w);
		rh_safepoint(w->m);
	}
	park_barrier(w->m);
	if (w->tid == 0)
		CHECK(rh_collect(w->m, 1) == 0);
	park_barrier(w->m);
	check_reachable(w, w->slots, SLOTS);
	if (w->tid == 0) {
		struct refs *sh = shared_root;
		check_reachable(w, sh->e, SHARED);
	}
	park_barrier(w->m);
	rh_pop_frame(w->m, &f);
	rh_mutator_detach(w->m);
	free(w->slots);
	return NULL;
}

static void register_types(void)
{
	static const uint32_t node_ptrs[] = {8, 16};
	static const uint32_t rec_ptrs[] = {0};
	rh_type_desc d = {.name = "node", .layout = RH_LAYOUT_FIXED, .size = 40};
	d.ptr_offsets = node_ptrs;
	d.n_ptrs = 2;
	t_node = th_type(heap, &d);
	rh_type_desc r = {.name = "refs", .layout = RH_LAYOUT_REF_ARRAY, .size = 32};
	t_refs = th_type(heap, &r);
	rh_type_desc b = {.name = "bytes", .layout = RH_LAYOUT_BYTE_ARRAY, .size = 32};
	t_bytes = th_type(heap, &b);
	rh_type_desc rc = {.name = "recs", .layout = RH_LAYOUT_RECORD_ARRAY, .size = 24};
	rc.elem_size = 16;
	rc.elem_ptr_offsets = rec_ptrs;
	rc.n_elem_ptrs = 1;
	t_recs = th_type(heap, &rc);
	rh_type_desc j = {.name = "junk", .layout = RH_LAYOUT_BYTE_ARRAY, .size = 16};
	t_junk = th_type(heap, &j);
}

int main(int argc, char **argv)
{
	int n_threads = argc > 1 ? atoi(argv[1]) : 4;
	if (argc > 2)
		n_ops = atol(argv[2]);
	if (n_threads < 1 || n_threads > MAX_THREADS || n_ops < 1) {
		fprintf(stderr, "usage: %s [threads 1..%d [ops_per_thread]]\n", argv[0],
		        MAX_THREADS);
		return 2;
	}
	collect_div = n_ops / 50000 > 1 ? (uint64_t)n_ops / 50000 : 1;
	rh_config cfg;
	th_config(&cfg, 128, 256);
	cfg.verify = 1;
	heap = th_open(&cfg);
	register_types();
	REQUIRE(rh_global_add(heap, &shared_root) == 0);

	rh_mutator *m = th_attach(heap);
	shared_root = rh_alloc_array(m, t_refs, SHARED);
	REQUIRE(shared_root != NULL);
	((struct refs *)shared_root)->id = 1;
	((struct refs *)shared_root)->chk = rng_mix(1 ^ SHARED);

	struct worker ws[MAX_THREADS];
	pthread_t ts[MAX_THREADS];
	memset(ws, 0, sizeof ws);
	pthread_barrier_init(&barrier, NULL, (unsigned)n_threads);
	/* main stays attached but parked: it must not hold up collections. */
	rh_mutator_park(m);
	for (int t = 0; t < n_threads; t++) {
		ws[t].tid = t;
		ws[t].seed = 0x9e3779b97f4a7c15ull * (uint64_t)(t + 1);
		ws[t].next_id = 1;
		REQUIRE(pthread_create(&ts[t], NULL, worker_main, &ws[t]) == 0);
	}
	unsigned long bad = 0, checked = 0, pub = 0, fet = 0, st = 0, al = 0;
	for (int t = 0; t < n_threads; t++) {
		pthread_join(ts[t], NULL);
		bad += ws[t].bad;
		checked += ws[t].checked;
		pub += ws[t].published;
		fet += ws[t].fetched;
		st += ws[t].stores;
		al += ws[t].allocs;
	}
	rh_mutator_unpark(m);
	pthread_barrier_destroy(&barrier);

	CHECK(bad == 0, "%lu bad objects or failed operations", bad);
	CHECK(checked > 0 && pub > 0 && fet > 0 && st > 0 && al > 0,
	      "an operation never ran: checked %lu published %lu fetched %lu stores %lu "
	      "allocs %lu",
	      checked, pub, fet, st, al);
	struct worker mw = {.tid = -1};
	struct refs *sh = shared_root;
	CHECK(obj_ok(sh), "shared array damaged");
	check_reachable(&mw, sh->e, SHARED);
	CHECK(mw.bad == 0, "%lu bad objects reachable from the shared array", mw.bad);
	CHECK(rh_verify(m) == 0);
	CHECK(rh_collect(m, 1) == 0);
	CHECK(rh_verify(m) == 0);

	rh_stats s = th_stats(heap);
	CHECK(s.collections + s.full_collections > 0, "no collection ran");
	printf("threads %d ops %ld: %llu partial + %llu full collections, %llu objects copied, "
	       "%llu pinned, %lu objects checked\n",
	       n_threads, n_ops, (unsigned long long)s.collections,
	       (unsigned long long)s.full_collections, (unsigned long long)s.objects_copied,
	       (unsigned long long)s.pinned_objects, checked);
	rh_mutator_detach(m);
	CHECK(rh_global_remove(heap, &shared_root) == 0);
	rh_heap_close(heap);
	return check_done();
}
