/* Several mutators racing for a one-region eden. Between a thread's own
 * collection and its retry, the others can fill eden again; the thread must
 * then still get memory (the heap has plenty free), not escalate to a full
 * collection and report the heap exhausted. The live set is a few KiB per
 * thread, so any full collection or NULL here is the race. The window is
 * short, but with precise roots the code before the fix failed 8 runs of 8. */
#include <pthread.h>

#include "tests/heap/th.h"

#define N_THREADS 16

struct node {
	uint64_t hdr;
	struct node *next;
	uint64_t id;
	uint64_t pad[5];
};

static rh_heap *heap;
static rh_type_id t_node;
static long n_allocs = 200000;
static pthread_barrier_t start;

struct worker {
	int tid;
	long nulls;
	long broken;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	rh_mutator *m = th_attach(heap);
	/* A short list survives each collection, so pauses copy something. */
	struct node *keep = NULL;
	rh_frame fr;
	void *slots[1] = {0};
	rh_push_frame(m, &fr, slots, 1);
	pthread_barrier_wait(&start);
	for (long i = 0; i < n_allocs; i++) {
		struct node *n = rh_alloc(m, t_node);
		if (!n) {
			w->nulls++;
			fprintf(stderr, "thread %d, allocation %ld: %s\n", w->tid, i,
			        rh_last_error()->msg);
			break;
		}
		n->id = (uint64_t)i;
		keep = slots[0];
		if (i % 64 == 0)
			keep = NULL;
		rh_write_ref(m, (void **)&n->next, keep);
		slots[0] = n;
		rh_safepoint(m);
	}
	/* The kept list is intact: ids count down by one. */
	keep = slots[0];
	for (struct node *p = keep; p && p->next; p = p->next)
		if (p->next->id + 1 != p->id)
			w->broken++;
	rh_pop_frame(m, &fr);
	rh_mutator_detach(m);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		n_allocs = atol(argv[1]);
	rh_config cfg;
	th_config(&cfg, 64, 256);
	/* The smallest budget: eden is one region. */
	cfg.pause_budget_us = 1;
	heap = th_open(&cfg);
	/* Precise roots only: sixteen native stacks would pin an object or two
	 * in most edens, and those regions, kept as old, fill the heap until a
	 * full collection is due for a reason of its own. */
	rh_set_conservative(heap, false);
	rh_type_desc d = {.name = "node",
	                  .layout = RH_LAYOUT_FIXED,
	                  .size = sizeof(struct node),
	                  .n_ptrs = 1,
	                  .ptr_offsets = (uint32_t[]){offsetof(struct node, next)}};
	t_node = th_type(heap, &d);

	pthread_barrier_init(&start, NULL, N_THREADS);
	struct worker ws[N_THREADS] = {0};
	pthread_t ts[N_THREADS];
	for (int t = 0; t < N_THREADS; t++) {
		ws[t].tid = t;
		REQUIRE(pthread_create(&ts[t], NULL, worker_main, &ws[t]) == 0);
	}
	long nulls = 0, broken = 0;
	for (int t = 0; t < N_THREADS; t++) {
		pthread_join(ts[t], NULL);
		nulls += ws[t].nulls;
		broken += ws[t].broken;
	}
	pthread_barrier_destroy(&start);

	rh_stats s = th_stats(heap);
	printf("%d threads x %ld allocations: %llu partial, %llu full collections\n", N_THREADS,
	       n_allocs, (unsigned long long)s.collections, (unsigned long long)s.full_collections);
	CHECK(nulls == 0, "%ld allocations failed with most of the heap free", nulls);
	CHECK(broken == 0, "%ld kept nodes damaged", broken);
	/* One region of eden per collection, give or take the regions taken
	 * past the limit. */
	uint64_t min_coll =
	        (uint64_t)N_THREADS * n_allocs * sizeof(struct node) / cfg.region_size / 3;
	CHECK(s.collections >= min_coll,
	      "only %llu collections, %llu expected: eden was not one region",
	      (unsigned long long)s.collections, (unsigned long long)min_coll);
	CHECK(s.full_collections == 0,
	      "%llu full collections for a live set of a few KiB: threads escalated after "
	      "losing eden to each other",
	      (unsigned long long)s.full_collections);
	rh_heap_close(heap);
	return check_done();
}
