/* rheapctl soak: a torture workload against a heap opened through the
 * public API only.
 *
 * Each mutator thread owns a forest of nodes hanging from its anchor slots
 * (a precise frame): every reachable node has exactly one parent, so the
 * thread knows how many of its nodes are reachable and a traversal can
 * demand exactly that many, each once, each with an intact checksum over
 * its id and its blob. Mutations move edges with the move-then-delete
 * pattern (store the child in its new parent, then clear the old slot:
 * for a moment it has two parents, the case a concurrent marker must not
 * lose), cut small subtrees into garbage, and add nodes. The heap runs
 * with gc.verify on; the verifier aborts the process on a problem, which
 * the parent (rheapctl) reports as a failure.
 */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rheap/rheap.h"
#include "soak.h"

#define NF 3         /* child fields per node */
#define ANCHORS 512  /* anchor slots per thread */
#define MAXDEPTH 24  /* longest random walk */
#define CUT_MAX 48   /* larger subtrees are not cut */
#define BLOB_MIN 32  /* blob bytes */
#define BLOB_MAX 768 /* blob bytes */

struct node {
	uint64_t hdr;
	struct node *f[NF];
	uint8_t *blob;
	uint64_t id, chk;
};

static const uint32_t node_ptrs[] = {8, 16, 24, 32};

typedef struct soak_thread {
	pthread_t tid;
	unsigned index;
	rh_heap *h;
	uint64_t rng;
	uint64_t next_id; /* ids are index << 40 | serial */
	uint64_t count;   /* reachable nodes, by construction */
	uint64_t target;  /* live nodes to keep around */
	atomic_uint_fast64_t mutations;
	atomic_uint_fast64_t shown_count; /* count, published for progress lines */
	void *anchors[ANCHORS];
	uint8_t *seen; /* one bit per serial, for the full traversal */
	size_t seen_cap;
} soak_thread;

static rh_type_id NODE, BLOB;
static atomic_int stop, failures;
/* The handler may run on any thread: a lock-free atomic, not a plain flag. */
static atomic_int interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	atomic_store(&interrupted, 1);
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static uint64_t rnd(soak_thread *t)
{
	t->rng ^= t->rng << 13;
	t->rng ^= t->rng >> 7;
	t->rng ^= t->rng << 17;
	return t->rng;
}

static void fail(soak_thread *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(soak_thread *t, const char *fmt, ...)
{
	char msg[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fprintf(stderr, "soak: thread %u: FAIL: %s\n", t->index, msg);
	atomic_fetch_add(&failures, 1);
	atomic_store(&stop, 1);
}

static uint8_t blob_byte(uint64_t chk, size_t i)
{
	return (uint8_t)(chk >> (8 * (i & 7))) ^ (uint8_t)i;
}

/* A node's own checks: id, checksum and blob. */
static int node_ok(soak_thread *t, const struct node *x, int whole_blob)
{
	if (rh_object_type(x) != NODE || (x->id >> 40) != t->index || x->chk != mix(x->id)) {
		fail(t, "damaged node (id %#llx, checksum %#llx)", (unsigned long long)x->id,
		     (unsigned long long)x->chk);
		return 0;
	}
	size_t len = x->blob ? rh_array_length(x->blob) : 0;
	if (!x->blob || len < BLOB_MIN || len > BLOB_MAX) {
		fail(t, "node %#llx lost its blob (length %zu)", (unsigned long long)x->id, len);
		return 0;
	}
	const uint8_t *b = x->blob + 16;
	for (size_t i = whole_blob ? 0 : len - 1; i < len; i++)
		if (b[i] != blob_byte(x->chk, i)) {
			fail(t, "checksum mismatch in the blob of node %#llx at byte %zu",
			     (unsigned long long)x->id, i);
			return 0;
		}
	return 1;
}

/* A slot is an anchor (owner NULL) or a field of a node. */
typedef struct slot {
	struct node *owner;
	unsigned i;
} slot;

static void *slot_get(soak_thread *t, slot s)
{
	return s.owner ? s.owner->f[s.i] : t->anchors[s.i];
}

static void slot_set(soak_thread *t, rh_mutator *m, slot s, void *v)
{
	if (s.owner)
		rh_write_ref(m, (void **)&s.owner->f[s.i], v);
	else
		t->anchors[s.i] = v;
}

/* Walk from a random anchor to a random slot; path[] receives the nodes
 * passed (the slot's owner last). want_full: the slot must hold a node;
 * otherwise it must be empty. */
static int walk(soak_thread *t, int want_full, slot *out, struct node **path, int *depth)
{
	slot s = {NULL, (unsigned)(rnd(t) % ANCHORS)};
	*depth = 0;
	for (int d = 0; d < MAXDEPTH; d++) {
		struct node *x = slot_get(t, s);
		if (!x)
			break;
		if (want_full && rnd(t) % 3 == 0)
			break;
		if (!node_ok(t, x, 0))
			return 0;
		path[(*depth)++] = x;
		s = (slot){x, (unsigned)(rnd(t) % NF)};
	}
	if (want_full != (slot_get(t, s) != NULL))
		return 0;
	*out = s;
	return 1;
}

static uint64_t subtree_size(struct node *x, uint64_t limit)
{
	if (!x)
		return 0;
	uint64_t n = 1;
	for (int i = 0; i < NF && n <= limit; i++)
		n += subtree_size(x->f[i], limit);
	return n;
}

static int add(soak_thread *t, rh_mutator *m)
{
	size_t len = BLOB_MIN + rnd(t) % (BLOB_MAX - BLOB_MIN + 1);
	/* The node is rooted in a spare frame slot across the blob's
	 * allocation, which may move it. */
	void *tmp[1];
	rh_frame f;
	rh_push_frame(m, &f, tmp, 1);
	tmp[0] = rh_alloc(m, NODE);
	uint8_t *b = tmp[0] ? rh_alloc_array(m, BLOB, len) : NULL;
	struct node *x = tmp[0];
	rh_pop_frame(m, &f);
	if (!x || !b) {
		fprintf(stderr, "soak: thread %u: allocation failed: %s\n", t->index,
		        rh_last_error()->msg);
		atomic_fetch_add(&failures, 1);
		atomic_store(&stop, 1);
		return 0;
	}
	x->id = (uint64_t)t->index << 40 | t->next_id++;
	x->chk = mix(x->id);
	for (size_t i = 0; i < len; i++)
		b[16 + i] = blob_byte(x->chk, i);
	rh_write_ref(m, (void **)&x->blob, b);
	/* No allocation from here on: raw pointers stay valid. */
	slot s;
	struct node *path[MAXDEPTH];
	int depth;
	for (int tries = 0; tries < 8; tries++)
		if (walk(t, 0, &s, path, &depth)) {
			slot_set(t, m, s, x);
			t->count++;
			return 1;
		}
	return 0; /* garbage at once: fine */
}

static void move(soak_thread *t, rh_mutator *m)
{
	slot from, to;
	struct node *pf[MAXDEPTH], *pt[MAXDEPTH];
	int df, dt;
	if (!walk(t, 1, &from, pf, &df) || !walk(t, 0, &to, pt, &dt))
		return;
	struct node *x = slot_get(t, from);
	/* Moving x under itself would detach a cycle. */
	for (int i = 0; i < dt; i++)
		if (pt[i] == x)
			return;
	slot_set(t, m, to, x);
	slot_set(t, m, from, NULL);
}

static void cut(soak_thread *t, rh_mutator *m)
{
	slot s;
	struct node *path[MAXDEPTH];
	int depth;
	if (!walk(t, 1, &s, path, &depth))
		return;
	uint64_t n = subtree_size(slot_get(t, s), CUT_MAX);
	if (n > CUT_MAX)
		return;
	slot_set(t, m, s, NULL);
	t->count -= n;
}

/* Every reachable node once, intact; as many as the thread accounted.
 * Iterative: moves can build chains far deeper than a C stack. */
static void check_all(soak_thread *t, rh_mutator *m)
{
	size_t need = (size_t)(t->next_id / 8 + 1);
	if (need > t->seen_cap) {
		free(t->seen);
		t->seen_cap = need * 2;
		t->seen = malloc(t->seen_cap);
	}
	size_t cap = 4096, top = 0;
	struct node **stack = malloc(cap * sizeof *stack);
	if (!t->seen || !stack) {
		fprintf(stderr, "soak: thread %u: out of host memory\n", t->index);
		atomic_fetch_add(&failures, 1);
		atomic_store(&stop, 1);
		free(stack);
		return;
	}
	memset(t->seen, 0, t->seen_cap);
	uint64_t n = 0;
	/* No allocation during the walk: nothing moves. */
	for (unsigned a = 0; a < ANCHORS; a++) {
		if (t->anchors[a])
			stack[top++] = t->anchors[a];
		while (top && !atomic_load(&failures)) {
			struct node *x = stack[--top];
			if (!node_ok(t, x, 1))
				break;
			uint64_t serial = x->id & ((1ull << 40) - 1);
			if (serial >= t->seen_cap * 8 ||
			    (t->seen[serial / 8] & (1u << (serial % 8)))) {
				fail(t, "node %#llx reached twice or unknown (serial %llu)",
				     (unsigned long long)x->id, (unsigned long long)serial);
				break;
			}
			t->seen[serial / 8] |= (uint8_t)(1u << (serial % 8));
			n++;
			for (int i = 0; i < NF; i++) {
				if (!x->f[i])
					continue;
				if (top == cap) {
					struct node **bigger =
					        realloc(stack, 2 * cap * sizeof *stack);
					if (!bigger) {
						fail(t, "out of host memory at %llu nodes",
						     (unsigned long long)n);
						break;
					}
					stack = bigger;
					cap *= 2;
				}
				stack[top++] = x->f[i];
			}
		}
		top = 0;
	}
	free(stack);
	if (!atomic_load(&failures) && n != t->count)
		fail(t, "%llu nodes reachable, %llu expected: objects were lost",
		     (unsigned long long)n, (unsigned long long)t->count);
	rh_safepoint(m);
}

static void *mutator_main(void *arg)
{
	soak_thread *t = arg;
	rh_error err;
	rh_mutator *m = rh_mutator_attach(t->h, &err);
	if (!m) {
		fprintf(stderr, "soak: thread %u: attach: %s\n", t->index, err.msg);
		atomic_fetch_add(&failures, 1);
		atomic_store(&stop, 1);
		return NULL;
	}
	rh_frame f;
	rh_push_frame(m, &f, t->anchors, ANCHORS);
	uint64_t ops = 0;
	while (!atomic_load(&stop)) {
		uint64_t r = rnd(t) % 100;
		/* Grow to the target, then hold around it: cuts balance adds. */
		int grow = t->count < t->target;
		if (r < (grow ? 40u : 10u))
			add(t, m);
		else if (r < (grow ? 42u : 20u))
			cut(t, m);
		else
			move(t, m);
		atomic_fetch_add_explicit(&t->mutations, 1, memory_order_relaxed);
		if (++ops % 64 == 0) {
			rh_safepoint(m);
			atomic_store_explicit(&t->shown_count, t->count, memory_order_relaxed);
		}
		if (ops % 2000000 == 0)
			check_all(t, m);
	}
	if (!atomic_load(&failures))
		check_all(t, m);
	rh_pop_frame(m, &f);
	rh_mutator_detach(m);
	return NULL;
}

static void progress(rh_heap *h, soak_thread *ts, unsigned n, double secs, const char *what)
{
	rh_stats s;
	rh_stats_get(h, &s);
	uint64_t muts = 0, live = 0;
	for (unsigned i = 0; i < n; i++) {
		muts += atomic_load(&ts[i].mutations);
		live += atomic_load_explicit(&ts[i].shown_count, memory_order_relaxed);
	}
	printf("soak: %s %.0f s: %llu mutations, %llu collections (%llu full), %llu CSSCs, "
	       "%llu regions evacuated by tracers, ~%llu live nodes, %llu page faults\n",
	       what, secs, (unsigned long long)muts,
	       (unsigned long long)(s.collections + s.full_collections),
	       (unsigned long long)s.full_collections, (unsigned long long)s.csscs,
	       (unsigned long long)s.regions_evacuated_remote, (unsigned long long)live,
	       (unsigned long long)s.faults);
	fflush(stdout);
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int rh_soak_run(const rh_soak_opts *o)
{
	rh_config cfg;
	rh_error err;
	if (rh_config_load(o->config, &cfg, &err) != RH_OK) {
		fprintf(stderr, "soak: %s\n", err.msg);
		return 2;
	}
	/* The verifier after every collection is the point of a soak. */
	cfg.verify = 1;
	rh_heap *h = rh_heap_open(&cfg, &err);
	if (!h) {
		fprintf(stderr, "soak: %s\n", err.msg);
		return 2;
	}
	rh_type_desc nd = {.name = "soak-node",
	                   .layout = RH_LAYOUT_FIXED,
	                   .size = sizeof(struct node),
	                   .ptr_offsets = node_ptrs,
	                   .n_ptrs = 4};
	rh_type_desc bd = {
	        .name = "soak-blob", .layout = RH_LAYOUT_BYTE_ARRAY, .size = 16, .elem_size = 1};
	NODE = rh_type_register(h, &nd, &err);
	BLOB = NODE ? rh_type_register(h, &bd, &err) : 0;
	if (!BLOB) {
		fprintf(stderr, "soak: %s\n", err.msg);
		return 2;
	}
	struct sigaction sa = {.sa_handler = on_sigint};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	unsigned n = o->threads ? o->threads : 4;
	/* Live data: a share of the heap well above a small cache, so old
	 * regions get evicted and tracers mark and evacuate them. */
	uint64_t live = o->live_bytes ? o->live_bytes : cfg.heap_size / 4;
	uint64_t per_node = sizeof(struct node) + 16 + (BLOB_MIN + BLOB_MAX) / 2;
	soak_thread *ts = calloc(n, sizeof *ts);
	if (!ts)
		return 2;
	printf("soak: %u threads, %.0f s, heap %llu MiB, cache %.0f %%, %llu MiB live, %s\n", n,
	       o->seconds, (unsigned long long)(cfg.heap_size >> 20), cfg.cache_fraction * 100,
	       (unsigned long long)(live >> 20), o->config);
	fflush(stdout);
	double t0 = now_s();
	unsigned started = 0;
	for (unsigned i = 0; i < n; i++) {
		ts[i].index = i + 1;
		ts[i].h = h;
		ts[i].rng = mix(o->seed + i + 1) | 1;
		ts[i].target = live / per_node / n;
		if (pthread_create(&ts[i].tid, NULL, mutator_main, &ts[i]) != 0)
			break;
		started++;
	}
	double every = o->seconds >= 600 ? 60 : o->seconds >= 60 ? 10 : 2;
	double next = t0 + every;
	while (!atomic_load(&stop) && started == n) {
		double now = now_s();
		if (atomic_load(&interrupted) || now - t0 >= o->seconds)
			break;
		if (now >= next) {
			progress(h, ts, n, now - t0, "at");
			next += every;
		}
		usleep(50000);
	}
	atomic_store(&stop, 1);
	for (unsigned i = 0; i < started; i++)
		pthread_join(ts[i].tid, NULL);
	progress(h, ts, n, now_s() - t0,
	         atomic_load(&interrupted) ? "interrupted after" : "done after");
	int bad = atomic_load(&failures) || started != n;
	rh_stats s;
	rh_stats_get(h, &s);
	rh_heap_close(h);
	for (unsigned i = 0; i < n; i++)
		free(ts[i].seen);
	free(ts);
	if (!bad && s.collections + s.full_collections == 0) {
		fprintf(stderr, "soak: no collection ran: the run proves nothing\n");
		bad = 1;
	}
	return bad ? 1 : 0;
}
