/* Several mutator threads on one heap: the threading example of
 * docs/embedding.md ("Attach mutator threads").
 *
 * Three producers each build lists of cells holding tagged integers and
 * hand them, one at a time, to a consumer through a mailbox: a global slot
 * (a root outside the heap) guarded by a pthread mutex and condition
 * variable. Every wait on the lock or the condition happens parked, so a
 * collection started by a running thread never waits for a thread that is
 * blocked, and no thread touches a heap object while parked. The consumer
 * checks each list's sum; the producers allocate garbage between lists so
 * that collections move everything several times.
 * Build: cc threads.c $(pkg-config --cflags --libs rheap) -pthread
 */
#include <pthread.h>
#include <rheap/rheap.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct cell {
	uint64_t header;
	void *car; /* a tagged integer: an immediate, never a reference */
	struct cell *cdr;
} cell;

#define PRODUCERS 3
#define LISTS 400 /* per producer */
#define GARBAGE 3 /* lists built and dropped per list handed over */
#define LENGTH 500

static rh_heap *heap;
static rh_type_id CELL;

static void *mailbox; /* a root: rh_global_add */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;

/* Immediates keep a low bit set, so rheap never takes them for references. */
static void *fixnum(long n)
{
	return (void *)(uintptr_t)((unsigned long)n << 1 | 1);
}

static long fixnum_value(const void *v)
{
	return (long)((uintptr_t)v >> 1);
}

/* A list of LENGTH cells holding base, base + 1, ...; NULL when full. */
static cell *build(rh_mutator *m, long base)
{
	void *slots[1] = {NULL};
	rh_frame frame;
	rh_push_frame(m, &frame, slots, 1);
	for (long i = LENGTH - 1; i >= 0; i--) {
		cell *c = rh_alloc(m, CELL); /* may move slots[0]'s list */
		if (!c)
			break;
		/* Immediates go through the barrier too: the value a store
		 * overwrites may be a reference a concurrent marking needs. */
		rh_write_ref(m, &c->car, fixnum(base + i));
		rh_write_ref(m, (void **)&c->cdr, slots[0]);
		slots[0] = c;
	}
	cell *list = slots[0];
	rh_pop_frame(m, &frame);
	return list;
}

/* Park before anything that may block; unpark before touching the heap. */
static void lock_parked(rh_mutator *m)
{
	rh_mutator_park(m);
	pthread_mutex_lock(&lock);
	rh_mutator_unpark(m);
}

static void wait_parked(rh_mutator *m)
{
	rh_mutator_park(m);
	pthread_cond_wait(&changed, &lock);
	rh_mutator_unpark(m);
}

static void *produce(void *arg)
{
	long id = (long)(intptr_t)arg;
	rh_error err;
	rh_mutator *m = rh_mutator_attach(heap, &err);
	if (!m) {
		fprintf(stderr, "rheap: %s\n", err.msg);
		exit(1);
	}
	for (long k = 0; k < LISTS; k++) {
		void *slots[1] = {build(m, (id * LISTS + k) * LENGTH)};
		rh_frame frame;
		rh_push_frame(m, &frame, slots, 1); /* live across what follows */
		for (int g = 0; slots[0] && g < GARBAGE; g++)
			if (!build(m, 0))
				slots[0] = NULL;
		if (!slots[0]) {
			fprintf(stderr, "rheap: %s\n", rh_last_error()->msg);
			exit(1);
		}
		lock_parked(m);
		while (mailbox)
			wait_parked(m);
		mailbox = slots[0]; /* a global: a plain store */
		pthread_cond_broadcast(&changed);
		pthread_mutex_unlock(&lock);
		rh_pop_frame(m, &frame);
		rh_safepoint(m);
	}
	rh_mutator_detach(m);
	return NULL;
}

static long lists_ok, lists_bad;

static void *consume(void *arg)
{
	(void)arg;
	rh_error err;
	rh_mutator *m = rh_mutator_attach(heap, &err);
	if (!m) {
		fprintf(stderr, "rheap: %s\n", err.msg);
		exit(1);
	}
	for (long k = 0; k < PRODUCERS * LISTS; k++) {
		lock_parked(m);
		while (!mailbox)
			wait_parked(m);
		cell *list = mailbox;
		mailbox = NULL;
		pthread_cond_broadcast(&changed);
		pthread_mutex_unlock(&lock);
		/* No allocation below: list cannot move while it is read. */
		long first = fixnum_value(list->car), sum = 0, n = 0;
		for (cell *c = list; c; c = c->cdr, n++)
			sum += fixnum_value(c->car);
		long want = LENGTH * first + (long)LENGTH * (LENGTH - 1) / 2;
		if (n == LENGTH && sum == want && first % LENGTH == 0)
			lists_ok++;
		else
			lists_bad++;
		rh_safepoint(m);
	}
	rh_mutator_detach(m);
	return NULL;
}

int main(void)
{
	rh_config cfg;
	rh_config_default(&cfg);
	cfg.heap_size = 16u << 20; /* small, so that collections happen */
	rh_error err;
	heap = rh_heap_open(&cfg, &err);
	static const uint32_t cell_ptrs[] = {offsetof(cell, car), offsetof(cell, cdr)};
	rh_type_desc desc = {.name = "cell",
	                     .layout = RH_LAYOUT_FIXED,
	                     .size = sizeof(cell),
	                     .ptr_offsets = cell_ptrs,
	                     .n_ptrs = 2};
	if (!heap || !(CELL = rh_type_register(heap, &desc, &err))) {
		fprintf(stderr, "rheap: %s\n", err.msg);
		return 1;
	}
	rh_global_add(heap, &mailbox);
	/* Every root here is precise (frames and the mailbox): no native stack
	 * scanning, so every object can move. */
	rh_set_conservative(heap, false);
	/* The main thread never attaches: it only starts and joins. */
	pthread_t th[PRODUCERS + 1];
	pthread_create(&th[0], NULL, consume, NULL);
	for (long i = 0; i < PRODUCERS; i++)
		pthread_create(&th[i + 1], NULL, produce, (void *)(intptr_t)i);
	for (int i = 0; i <= PRODUCERS; i++)
		pthread_join(th[i], NULL);
	rh_stats st;
	rh_stats_get(heap, &st);
	printf("%ld lists handed over intact, %ld wrong; %llu collections, %llu KiB copied\n",
	       lists_ok, lists_bad, (unsigned long long)(st.collections + st.full_collections),
	       (unsigned long long)(st.bytes_copied >> 10));
	rh_global_remove(heap, &mailbox);
	rh_heap_close(heap);
	return lists_ok == PRODUCERS * LISTS && !lists_bad && st.bytes_copied > 0 ? 0 : 1;
}
