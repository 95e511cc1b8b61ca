/* Survival and moving: structures reachable only from shadow-stack frames or
 * global slots survive partial and full collections intact, the roots are
 * updated when their objects move, and garbage is reclaimed (a loop that
 * allocates ten times the heap size never runs out).
 *
 * Conservative scanning is off so that every object may move and dropped
 * structures are really unreachable. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "th.h"

#define REGION_KIB 256
#define HEAP_MIB 64

struct node {
	uint64_t hdr;
	struct node *next;
	void *aux; /* NULL, an immediate, or a byte array */
	uint64_t id;
	uint64_t chk;
};

struct bytes {
	uint64_t hdr;
	uint64_t len;
	uint8_t b[];
};

static rh_type_id t_node, t_bytes;
static rh_heap *heap;

static void *imm(uint64_t i)
{
	return (void *)(uintptr_t)((i << 4) | 5);
}

/* Push a node with id i onto the list in *root (a frame or global slot). A
 * third of the nodes carry a byte array, a third an immediate. */
static int push(rh_mutator *m, void **root, uint64_t i)
{
	void *aux = NULL;
	if (i % 3 == 0) {
		struct bytes *b = rh_alloc_array(m, t_bytes, 24);
		if (!b)
			return -1;
		for (int k = 0; k < 24; k++)
			b->b[k] = (uint8_t)(i + k);
		aux = b;
	}
	/* The node's allocation may move aux: keep it in a frame meanwhile. */
	void *slots[1] = {aux};
	rh_frame f;
	rh_push_frame(m, &f, slots, 1);
	struct node *n = rh_alloc(m, t_node);
	rh_pop_frame(m, &f);
	if (!n)
		return -1;
	n->id = i;
	n->chk = rng_mix(i);
	rh_write_ref(m, &n->aux, i % 3 == 0 ? slots[0] : i % 3 == 1 ? imm(i) : NULL);
	rh_write_ref(m, (void **)&n->next, *root);
	*root = n; /* a frame or global slot: not a heap field, no barrier */
	return 0;
}

/* Walk a list built by push() with ids hi-1 .. 0; count bad nodes. */
static size_t check_list(void *head, uint64_t hi)
{
	size_t bad = 0;
	uint64_t want = hi;
	for (struct node *n = head; n; n = n->next) {
		if (want == 0) {
			return bad + 1; /* too long */
		}
		want--;
		if (rh_object_type(n) != t_node || n->id != want || n->chk != rng_mix(want)) {
			fprintf(stderr, "node %p: type %u id %llu want %llu\n", (void *)n,
			        rh_object_type(n), (unsigned long long)n->id,
			        (unsigned long long)want);
			return bad + 1;
		}
		if (want % 3 == 0) {
			struct bytes *b = n->aux;
			if (!b || rh_object_type(b) != t_bytes || rh_array_length(b) != 24) {
				bad++;
				continue;
			}
			for (int k = 0; k < 24; k++)
				bad += b->b[k] != (uint8_t)(want + k);
		} else if (want % 3 == 1) {
			bad += n->aux != imm(want);
		} else {
			bad += n->aux != NULL;
		}
	}
	return bad + (want != 0);
}

static void test_frames(rh_mutator *m)
{
	const uint64_t n_nodes = 20000;
	void *slots[3] = {NULL, NULL, NULL};
	rh_frame f;
	rh_push_frame(m, &f, slots, 3);
	rh_stats s0 = th_stats(heap);
	for (uint64_t i = 0; i < n_nodes; i++) {
		if (!CHECK(push(m, &slots[0], i) == 0, "push %llu", (unsigned long long)i))
			break;
		/* Garbage in between, so that collections also happen while
		 * the list is half built. */
		if (!rh_alloc_array(m, t_bytes, 900 + i % 200))
			CHECK(0, "garbage allocation failed");
		rh_safepoint(m);
	}
	rh_stats s1 = th_stats(heap);
	CHECK(s1.collections + s1.full_collections > s0.collections + s0.full_collections,
	      "building the list did not collect");
	CHECK(check_list(slots[0], n_nodes) == 0, "list broken after building");

	/* The same node through a second slot: both slots must agree. */
	slots[1] = slots[0];
	int moved = 0;
	const int kinds[] = {0, 0, 1, 0, 1, 1};
	for (size_t r = 0; r < sizeof kinds / sizeof kinds[0]; r++) {
		void *before = slots[0];
		CHECK(rh_collect(m, kinds[r]) == 0, "rh_collect(%d)", kinds[r]);
		moved |= slots[0] != before;
		CHECK(slots[0] == slots[1], "two slots of one object disagree: %p %p", slots[0],
		      slots[1]);
		CHECK(check_list(slots[0], n_nodes) == 0, "list broken after collection %zu (%s)",
		      r, kinds[r] ? "full" : "partial");
	}
	CHECK(moved, "the list head never moved");
	rh_stats s2 = th_stats(heap);
	CHECK(s2.bytes_copied > s0.bytes_copied && s2.objects_copied > s0.objects_copied,
	      "nothing copied: bytes %llu objects %llu", (unsigned long long)s2.bytes_copied,
	      (unsigned long long)s2.objects_copied);
	CHECK(s2.full_collections >= s0.full_collections + 3, "full collections %llu -> %llu",
	      (unsigned long long)s0.full_collections, (unsigned long long)s2.full_collections);
	CHECK(rh_verify(m) == 0);
	rh_pop_frame(m, &f);
}

static void *g_root;

static void test_globals(rh_mutator *m)
{
	void **mslot = malloc(sizeof *mslot);
	REQUIRE(mslot != NULL);
	*mslot = NULL;
	CHECK(rh_global_add(heap, &g_root) == 0);
	CHECK(rh_global_add(heap, mslot) == 0);
	rh_collect(m, 1);
	rh_stats s0 = th_stats(heap);

	for (uint64_t i = 0; i < 5000; i++) {
		if (push(m, &g_root, i) || push(m, mslot, i)) {
			CHECK(0, "push failed");
			break;
		}
	}
	int moved_g = 0, moved_m = 0;
	for (int r = 0; r < 4; r++) {
		void *bg = g_root, *bm = *mslot;
		rh_collect(m, r & 1);
		moved_g |= g_root != bg;
		moved_m |= *mslot != bm;
		CHECK(check_list(g_root, 5000) == 0, "static global list, round %d", r);
		CHECK(check_list(*mslot, 5000) == 0, "malloc'd global list, round %d", r);
	}
	CHECK(moved_g && moved_m, "global roots never updated: static %d malloc'd %d", moved_g,
	      moved_m);

	rh_stats s1 = th_stats(heap);
	CHECK(rh_global_remove(heap, &g_root) == 0);
	CHECK(rh_global_remove(heap, mslot) == 0);
	CHECK(rh_global_remove(heap, mslot) != 0, "removing an unknown slot succeeded");
	g_root = NULL;
	*mslot = NULL;
	rh_collect(m, 1);
	rh_stats s2 = th_stats(heap);
	CHECK(s2.regions_free > s1.regions_free,
	      "dropping the globals freed no region: %llu -> %llu",
	      (unsigned long long)s1.regions_free, (unsigned long long)s2.regions_free);
	CHECK(s2.regions_free + 2 >= s0.regions_free, "free regions %llu, before the lists %llu",
	      (unsigned long long)s2.regions_free, (unsigned long long)s0.regions_free);
	free(mslot);
}

/* Ten heaps' worth of garbage around a small live list. */
static void test_garbage(rh_mutator *m)
{
	void *slots[2] = {NULL, NULL};
	rh_frame f;
	rh_push_frame(m, &f, slots, 2);
	rh_collect(m, 1);
	rh_stats s0 = th_stats(heap);
	for (uint64_t i = 0; i < 2000; i++)
		REQUIRE(push(m, &slots[0], i) == 0);

	uint64_t target = 10 * s0.heap_size, done = 0, seed = 7;
	int failed = 0;
	while (done < target && !failed) {
		uint64_t r = rng_next(&seed);
		if (r % 4 == 0) {
			/* A short garbage chain, rooted while it is built. */
			slots[1] = NULL;
			for (int k = 0; k < 10 && !failed; k++) {
				failed = push(m, &slots[1], (uint64_t)k) != 0;
				done += rh_object_size(heap, t_node, 0) +
				        (k % 3 == 0 ? rh_object_size(heap, t_bytes, 24) : 0);
			}
		} else {
			size_t len = 100 + r % 4000;
			failed = rh_alloc_array(m, t_bytes, len) == NULL;
			done += rh_object_size(heap, t_bytes, len);
		}
		rh_safepoint(m);
	}
	CHECK(!failed, "ran out of memory after %llu MiB of garbage (heap %llu MiB)",
	      (unsigned long long)(done >> 20), (unsigned long long)(s0.heap_size >> 20));
	CHECK(check_list(slots[0], 2000) == 0, "live list broken by the garbage loop");
	rh_stats s1 = th_stats(heap);
	CHECK(s1.collections + s1.full_collections >= s0.collections + s0.full_collections + 10,
	      "only %llu collections for 10 heaps of garbage",
	      (unsigned long long)(s1.collections + s1.full_collections - s0.collections -
	                           s0.full_collections));

	slots[0] = slots[1] = NULL;
	rh_collect(m, 1);
	rh_stats s2 = th_stats(heap);
	CHECK(s2.regions_free + 2 >= s0.regions_free, "free regions %llu, before %llu",
	      (unsigned long long)s2.regions_free, (unsigned long long)s0.regions_free);
	CHECK(s2.bytes_freed > s0.bytes_freed, "bytes_freed did not grow");
	/* Allocation counters are folded in at collections at the latest. */
	CHECK(s2.bytes_allocated >= s0.bytes_allocated + target, "bytes_allocated %llu -> %llu",
	      (unsigned long long)s0.bytes_allocated, (unsigned long long)s2.bytes_allocated);
	rh_pop_frame(m, &f);
}

int main(void)
{
	rh_config cfg;
	th_config(&cfg, HEAP_MIB, REGION_KIB);
	heap = th_open(&cfg);
	rh_set_conservative(heap, false);
	static const uint32_t node_ptrs[] = {8, 16};
	rh_type_desc d = {.name = "node", .layout = RH_LAYOUT_FIXED, .size = 40};
	d.ptr_offsets = node_ptrs;
	d.n_ptrs = 2;
	t_node = th_type(heap, &d);
	rh_type_desc b = {.name = "bytes", .layout = RH_LAYOUT_BYTE_ARRAY, .size = 16};
	t_bytes = th_type(heap, &b);

	rh_mutator *m = th_attach(heap);
	test_frames(m);
	test_globals(m);
	test_garbage(m);
	CHECK(rh_verify(m) == 0);
	rh_mutator_detach(m);
	rh_heap_close(heap);
	return check_done();
}
