/* Heap exhaustion: a program that keeps everything it allocates reachable
 * must get NULL with rh_last_error() = RH_ENOMEM after a full collection,
 * with its data intact and the heap usable again once it lets go; never a
 * crash, a hang or the fatal path. Small objects (TLAB refills), medium
 * ones and a humongous one, on a local heap and on a disaggregated one;
 * first a fragmented heap that only a full collection within its free
 * room makes usable again (full.R1).
 *
 * usage: test-heapfull TRACERD local|shm|tcp [heap MiB, default 64]
 */
#include "runtime/internal.h"
#include "tests/ops/ops.h"

static unsigned long long heap_mib = 64;

struct node {
	uint64_t hdr;
	struct node *next;
	uint8_t *blob;
	uint64_t id, chk;
};

static rh_type_id NODE, BLOB;
static int fatal_called;

static void on_fatal(const rh_error *e, void *data)
{
	(void)data;
	fatal_called = 1;
	printf("# fatal: %s\n", e->msg);
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ull;
	return x ^ (x >> 29);
}

/* Full collections begun, counted by an event hook: reading the stats on
 * every allocation would cost more than the allocation. Written on the
 * collecting thread while the mutators are stopped. */
static _Atomic uint64_t fulls_begun;

static void on_event(const rh_event *ev, void *data)
{
	(void)data;
	if (ev->kind == RH_GC_FULL && ev->phase == RH_PHASE_STOP && ev->begin)
		fulls_begun++;
}

static uint64_t full_collections(rh_heap *h)
{
	(void)h;
	return fulls_begun;
}

/* Allocate nodes (each with a blob of blob_len bytes when blob_len > 0)
 * into a list rooted in slots[0] until allocation fails. Returns the
 * number of nodes; *fulls_in_failure: full collections the failing call
 * ran. */
static uint64_t fill(rh_heap *h, rh_mutator *m, void **slots, size_t blob_len,
                     uint64_t *fulls_in_failure, int *oom)
{
	uint64_t n = 0;
	*oom = 0;
	for (;;) {
		uint64_t before = full_collections(h);
		struct node *x = rh_alloc(m, NODE);
		if (x && blob_len) {
			slots[1] = x;
			uint8_t *b = rh_alloc_array(m, BLOB, blob_len);
			x = slots[1];
			slots[1] = NULL;
			if (b) {
				memset(b + 16, (int)(mix(n) & 0xff), blob_len);
				rh_write_ref(m, (void **)&x->blob, b);
			} else {
				x = NULL;
			}
		}
		if (!x) {
			*fulls_in_failure = full_collections(h) - before;
			*oom = 1;
			return n;
		}
		x->id = n;
		x->chk = mix(n);
		rh_write_ref(m, (void **)&x->next, slots[0]);
		slots[0] = x;
		n++;
		/* A bound, so that a heap that never fills fails the test
		 * instead of running forever. */
		if (n > ((uint64_t)heap_mib << 20) / 32)
			return n;
	}
}

static int walk(void *head, uint64_t n, size_t blob_len)
{
	uint64_t seen = 0;
	for (struct node *x = head; x; x = x->next, seen++) {
		uint64_t want = n - 1 - seen;
		if (x->id != want || x->chk != mix(want))
			return 0;
		if (blob_len) {
			if (!x->blob || rh_array_length(x->blob) != blob_len)
				return 0;
			uint8_t v = (uint8_t)(mix(want) & 0xff);
			for (size_t i = 0; i < blob_len; i += 97)
				if (x->blob[16 + i] != v)
					return 0;
		}
	}
	return seen == n;
}

static void exhaust(rh_heap *h, rh_mutator *m, const char *what, size_t blob_len)
{
	void *slots[2] = {0};
	rh_frame f;
	rh_push_frame(m, &f, slots, 2);
	double t0 = ops_now();
	uint64_t fulls = 0;
	int oom;
	uint64_t n = fill(h, m, slots, blob_len, &fulls, &oom);
	double dt = ops_now() - t0;
	const rh_error *e = rh_last_error();
	CHECK(oom, "%s: allocation failed once the heap was full (%llu nodes)", what,
	      (unsigned long long)n);
	CHECK(dt < 60, "%s: filling the heap took %.1f s", what, dt);
	CHECK(e->code == RH_ENOMEM && strstr(e->msg, "heap exhausted"),
	      "%s: rh_last_error is RH_ENOMEM, 'heap exhausted' (%d: %s)", what, e->code, e->msg);
	CHECK(fulls >= 1, "%s: the failing allocation ran a full collection first (%llu)", what,
	      (unsigned long long)fulls);
	size_t per = sizeof(struct node) + (blob_len ? (16 + blob_len + 7) / 8 * 8 : 0);
	CHECK((double)n * (double)per > 0.5 * (heap_mib << 20),
	      "%s: over half the heap was usable (%llu x %zu bytes)", what, (unsigned long long)n,
	      per);
	CHECK(walk(slots[0], n, blob_len), "%s: every node kept is intact", what);
	CHECK(rh_verify(m) == 0, "%s: the heap verifies after the failure", what);
	CHECK(!fatal_called, "%s: an exhausted heap is no fatal error", what);
	/* Letting go makes the memory usable again. */
	slots[0] = NULL;
	struct node *x = rh_alloc(m, NODE);
	uint8_t *b = x ? rh_alloc_array(m, BLOB, 1 << 20) : NULL;
	CHECK(x && b, "%s: allocation works again once the list is dropped (%s)", what,
	      rh_last_error()->msg);
	rh_pop_frame(m, &f);
}

/* full.R1: live data scattered over most regions (a list over 70 % of the
 * heap, 3 nodes in 4 dropped: a sixth of the heap stays live in every
 * region), then a quarter of the heap asked for in 64 KiB arrays. Only a
 * full collection makes room, and it must make progress with few free
 * regions left: one that copies in traversal order until the free regions
 * run out empties no region. On a disaggregated heap the tracers' full
 * marking frees nothing here, so the CPU server's compaction must follow
 * (cssc.E1). */
static void fragmented(rh_mutator *m, const char *where)
{
	void *slots[3] = {0};
	rh_frame f;
	rh_push_frame(m, &f, slots, 3);
	uint64_t n = ((uint64_t)heap_mib << 20) * 7 / 10 / sizeof(struct node), built = 0;
	for (; built < n; built++) {
		struct node *x = rh_alloc(m, NODE);
		if (!x)
			break;
		x->id = built;
		x->chk = mix(built);
		rh_write_ref(m, (void **)&x->next, slots[0]);
		slots[0] = x;
	}
	CHECK(built == n, "%s, fragmented: %llu nodes built (%s)", where, (unsigned long long)n,
	      built == n ? "" : rh_last_error()->msg);
	uint64_t kept = 0;
	for (struct node *x = slots[0]; x; x = x->next, kept++) {
		struct node *y = x;
		for (int k = 0; k < 3 && y; k++)
			y = y->next;
		rh_write_ref(m, (void **)&x->next, y ? y->next : NULL);
	}
	size_t want = ((size_t)heap_mib << 20) / 4, got = 0, chunk = 64 << 10;
	while (got < want) {
		struct node *x = rh_alloc(m, NODE);
		slots[2] = x;
		uint8_t *b = x ? rh_alloc_array(m, BLOB, chunk) : NULL;
		if (!b)
			break;
		x = slots[2];
		rh_write_ref(m, (void **)&x->blob, b);
		rh_write_ref(m, (void **)&x->next, slots[1]);
		slots[1] = x;
		got += chunk;
	}
	CHECK(got >= want,
	      "%s, fragmented: %zu of %zu MiB in 64 KiB arrays after dropping 3 nodes "
	      "in 4 (%s)",
	      where, got >> 20, want >> 20, got >= want ? "" : rh_last_error()->msg);
	uint64_t seen = 0, ok = 1;
	for (struct node *x = slots[0]; x; x = x->next, seen++)
		ok &= x->chk == mix(x->id) && x->id % 4 == (n - 1) % 4;
	CHECK(seen == kept && ok, "%s, fragmented: the %llu nodes kept are intact (%llu)", where,
	      (unsigned long long)kept, (unsigned long long)seen);
	rh_pop_frame(m, &f);
}

/* full.R1, on a local heap: a full collection with fewer free regions than
 * the live data needs still frees regions. 64 lists are built at once,
 * node i in list i % 64, over 60 % of the heap, and 3 lists in 4 dropped:
 * every region keeps a quarter of its nodes, and the collector traverses
 * one whole list, spread over every region, before the next. A first full
 * collection counts what is live (the regions' counts were their fill as
 * copy destinations, all live, so they stay in place); then every free
 * region but 12 is taken as empty ballast (test-only, through the
 * collector's region table) and a second full collection runs with room
 * for a quarter of the live bytes. Copying in traversal order until the
 * room runs out frees no region; moving the sparsest regions whole frees
 * more than their copies take. */
#define LISTS 64
static void full_in_little_room(rh_heap *h, rh_mutator *m)
{
	void *slots[LISTS] = {0};
	rh_frame f;
	rh_push_frame(m, &f, slots, LISTS);
	uint64_t n = ((uint64_t)heap_mib << 20) * 6 / 10 / sizeof(struct node);
	for (uint64_t i = 0; i < n; i++) {
		struct node *x = rh_alloc(m, NODE);
		if (!x)
			break;
		x->id = i;
		x->chk = mix(i);
		rh_write_ref(m, (void **)&x->next, slots[i % LISTS]);
		slots[i % LISTS] = x;
	}
	for (int j = 0; j < LISTS; j++)
		if (j % 4)
			slots[j] = NULL;
	rh_collect(m, 1);
	uint32_t n_ballast = 0;
	pthread_mutex_lock(&h->alloc_lock);
	/* Empty old regions: the collection frees them at its end. */
	while (h->n_free > 12 && rh_region_take(h, RH_REGION_OLD) >= 0)
		n_ballast++;
	uint32_t before = h->n_free + n_ballast;
	pthread_mutex_unlock(&h->alloc_lock);
	rh_collect(m, 1);
	uint32_t after = h->n_free;
	CHECK(after >= before + 16,
	      "full.R1: a full collection with room for a quarter of the live bytes frees regions "
	      "(%u free after, %u before with the ballast)",
	      after, before);
	uint64_t seen = 0, ok = 1;
	for (int j = 0; j < LISTS; j += 4)
		for (struct node *x = slots[j]; x; x = x->next, seen++)
			ok &= x->chk == mix(x->id) && x->id % LISTS == (uint64_t)j;
	CHECK(ok && seen == (n + 3) / 4, "full.R1: the nodes kept are intact (%llu of %llu)",
	      (unsigned long long)seen, (unsigned long long)(n + 3) / 4);
	rh_pop_frame(m, &f);
}

static void run(rh_heap *h, const char *where)
{
	rh_error err;
	rh_on_fatal(h, on_fatal, NULL);
	/* Every node is held in a pushed frame: precise roots are the whole
	 * truth. A stale word on the stack, scanned conservatively, could
	 * keep a dropped list alive (the ASan build kept the fragmented
	 * phase's lists, 17 % of the heap, and the exhaustion checks then
	 * found under half of it usable). */
	rh_set_conservative(h, false);
	rh_on_event(h, on_event, NULL);
	static const uint32_t offs[] = {8, 16};
	rh_type_desc nd = {.name = "node",
	                   .layout = RH_LAYOUT_FIXED,
	                   .size = 40,
	                   .ptr_offsets = offs,
	                   .n_ptrs = 2};
	rh_type_desc bd = {
	        .name = "blob", .layout = RH_LAYOUT_BYTE_ARRAY, .size = 16, .elem_size = 1};
	NODE = rh_type_register(h, &nd, &err);
	BLOB = rh_type_register(h, &bd, &err);
	rh_mutator *m = rh_mutator_attach(h, &err);
	CHECK(m != NULL, "%s: attach: %s", where, m ? "" : err.msg);
	if (!m)
		return;
	if (!strcmp(where, "local"))
		full_in_little_room(h, m);
	fragmented(m, where);
	char what[64];
	snprintf(what, sizeof what, "%s, small objects", where);
	exhaust(h, m, what, 0);
	snprintf(what, sizeof what, "%s, 8 KiB objects", where);
	exhaust(h, m, what, 8192);
	/* Larger than the heap: refused at once, no matter what is free. */
	void *big = rh_alloc_array(m, BLOB, (size_t)heap_mib << 21);
	CHECK(!big && rh_last_error()->code == RH_ENOMEM,
	      "%s: an object larger than the heap is refused with RH_ENOMEM (%s)", where,
	      rh_last_error()->msg);
	rh_mutator_detach(m);
	CHECK(!fatal_called, "%s: the fatal handler never ran", where);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s TRACERD local|shm|tcp [heap MiB]\n", argv[0]);
		return 2;
	}
	const char *mode = argv[2];
	if (argc > 3)
		heap_mib = strtoull(argv[3], NULL, 10);
	if (heap_mib < 16 || heap_mib > 4096) {
		fprintf(stderr, "heap MiB: 16..4096\n");
		return 2;
	}
	rh_error err;
	if (!strcmp(mode, "local")) {
		rh_config cfg;
		rh_config_default(&cfg);
		cfg.heap_size = (uint64_t)heap_mib << 20;
		rh_heap *h = rh_heap_open(&cfg, &err);
		CHECK(h != NULL, "open a local heap: %s", h ? "" : err.msg);
		if (h) {
			run(h, "local");
			rh_heap_close(h);
		}
	} else {
		cluster c;
		if (cluster_start_with(&c, argv[1], mode, 2, heap_mib, 0.25, 2000, NULL,
		                       OPS_TRACERS(NULL)) < 0) {
			perror("cluster");
			return 2;
		}
		rh_heap *h = cluster_open(&c, &err);
		CHECK(h != NULL, "open a disaggregated heap: %s", h ? "" : err.msg);
		if (h) {
			run(h, mode);
			rh_heap_close(h);
		}
		char log[8192], bad[256];
		CHECK(ops_log_well_formed(cluster_log(&c, 0, log, sizeof log), bad, sizeof bad),
		      "tracer log lines have a level: %s", bad);
		cluster_stop(&c);
	}
	return check_done();
}
