/* Conservative roots and pinning. An object referenced only from a C local
 * (of the collecting thread, or of another mutator parked meanwhile)
 * survives collections without moving, with its contents and the objects it
 * references intact, and counts in pinned_objects; a precisely rooted
 * sibling in the same region moves; an eden region kept for a pin stays
 * young (pin.Y1). With conservative scanning off, an
 * object that a local also references moves like any other.
 *
 * Shadow-stack slots here are static, not on the native stack, so that the
 * conservative scan cannot see them; addresses the test must remember are
 * kept XOR-masked so that they do not pin anything either. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "th.h"

#define NOINLINE __attribute__((noinline))
#define MASK 0x5a5a5a5a5a5a5a5aull

struct node {
	uint64_t hdr;
	struct node *ref;
	uint64_t chk;
	uint64_t id;
};

static rh_type_id t_node, t_bytes;
static rh_heap *heap;
static uint64_t region_size;
static void *pslots[4];

static uint64_t hide(const void *p)
{
	return (uint64_t)(uintptr_t)p ^ MASK;
}

static void *unhide(uint64_t x)
{
	return (void *)(uintptr_t)(x ^ MASK);
}

static NOINLINE struct node *new_node(rh_mutator *m, uint64_t id)
{
	struct node *n = rh_alloc(m, t_node);
	REQUIRE(n != NULL);
	n->id = id;
	n->chk = rng_mix(id);
	return n;
}

static int node_ok(const struct node *n, uint64_t id)
{
	return n && rh_object_type(n) == t_node && n->id == id && n->chk == rng_mix(id);
}

/* Overwrite the dead stack below us, where finished helpers left copies of
 * addresses that would otherwise pin objects by accident. */
static NOINLINE void scrub_stack(void)
{
	volatile char junk[32768];
	memset((char *)junk, 0, sizeof junk);
}

/* A (returned) references C; B sits in pslots[0]; A and B share a region.
 * Only B's masked address comes back besides A itself. */
static NOINLINE struct node *setup_pair(rh_mutator *m, uint64_t *b_hidden)
{
	for (int attempt = 0; attempt < 16; attempt++) {
		pslots[1] = new_node(m, 333);
		struct node *a = new_node(m, 111);
		pslots[0] = new_node(m, 222);
		rh_write_ref(m, (void **)&a->ref, pslots[1]);
		if (th_same_region(a, pslots[0], region_size)) {
			*b_hidden = hide(pslots[0]);
			pslots[1] = NULL;
			return a;
		}
	}
	REQUIRE(0, "could not place two objects in one region");
	return NULL;
}

static NOINLINE void test_local_pins(rh_mutator *m)
{
	uint64_t bh;
	struct node *volatile keep = setup_pair(m, &bh);
	uint64_t ah = hide(keep);
	scrub_stack();
	rh_stats s0 = th_stats(heap);
	CHECK(rh_collect(m, 0) == 0);
	rh_stats s1 = th_stats(heap);

	CHECK(hide(keep) == ah);
	CHECK(node_ok(keep, 111), "conservatively referenced object damaged or moved");
	CHECK(node_ok(keep->ref, 333), "the pinned object's referent is lost");
	CHECK(s1.pinned_objects > s0.pinned_objects, "pinned_objects %llu -> %llu",
	      (unsigned long long)s0.pinned_objects, (unsigned long long)s1.pinned_objects);
	CHECK(pslots[0] != unhide(bh), "the precisely rooted sibling did not move");
	CHECK(node_ok(pslots[0], 222), "the precisely rooted sibling is damaged");

	/* Still pinned and intact through a full collection and more garbage. */
	for (int i = 0; i < 20000; i++)
		REQUIRE(rh_alloc_array(m, t_bytes, 500) != NULL);
	CHECK(rh_collect(m, 1) == 0);
	CHECK(hide(keep) == ah && node_ok(keep, 111), "after a full collection");
	CHECK(node_ok(keep->ref, 333), "referent after a full collection");
	CHECK(rh_verify(m) == 0);
	pslots[0] = NULL;
}

/* A pointer into the middle of an object pins it too. */
static NOINLINE uintptr_t setup_interior(rh_mutator *m)
{
	struct node *d = new_node(m, 444);
	return (uintptr_t)d + 16;
}

static NOINLINE void test_interior(rh_mutator *m)
{
	volatile uintptr_t inner = setup_interior(m);
	scrub_stack();
	rh_stats s0 = th_stats(heap);
	CHECK(rh_collect(m, 0) == 0);
	for (int i = 0; i < 20000; i++)
		REQUIRE(rh_alloc_array(m, t_bytes, 500) != NULL);
	rh_stats s1 = th_stats(heap);
	CHECK(s1.pinned_objects > s0.pinned_objects, "interior pointer pinned nothing");
	CHECK(node_ok((struct node *)(inner - 16), 444),
	      "object referenced by an interior pointer lost");
}

/* pslots[2] and a local both reference E: with conservative scanning the
 * local pins E (slot unchanged); without it E moves and pins nothing. */
static NOINLINE struct node *setup_both(rh_mutator *m, uint64_t id)
{
	pslots[2] = new_node(m, id);
	return pslots[2];
}

static NOINLINE void test_precise_only(rh_mutator *m, bool conservative)
{
	rh_set_conservative(heap, conservative);
	uint64_t id = conservative ? 777 : 555;
	struct node *volatile keep = setup_both(m, id);
	uint64_t eh = hide(keep);
	scrub_stack();
	rh_stats s0 = th_stats(heap);
	CHECK(rh_collect(m, 0) == 0);
	rh_stats s1 = th_stats(heap);
	CHECK(node_ok(pslots[2], id));
	if (conservative) {
		CHECK(pslots[2] == unhide(eh), "object also on the stack moved");
		CHECK(s1.pinned_objects > s0.pinned_objects);
	} else {
		CHECK(pslots[2] != unhide(eh), "conservative scanning off, object did not move");
		CHECK(s1.pinned_objects == s0.pinned_objects,
		      "conservative scanning off, %llu objects pinned",
		      (unsigned long long)(s1.pinned_objects - s0.pinned_objects));
		keep = NULL; /* stale now */
	}
	pslots[2] = NULL;
	rh_set_conservative(heap, true);
}

/* pin.Y1: an eden region kept by a partial collection only for its pins
 * stays young, so that the next partial collection moves what is live out
 * of it once unpinned: it does not become old, where its garbage would
 * wait for a marking. Runs first, on a fresh heap, so that nothing else
 * is promoted meanwhile. */
static NOINLINE struct node *setup_pinned_young(rh_mutator *m)
{
	/* g is allocated first and used in the return: without it (8b1169b)
	 * a stale copy of n's address stayed where the conservative scan saw
	 * it, and n was still pinned at the second collection, every run. */
	struct node *g = new_node(m, 887);
	struct node *n = new_node(m, 888);
	for (int i = 0; i < 64; i++)
		REQUIRE(rh_alloc_array(m, t_bytes, 500) != NULL);
	return g ? n : NULL;
}

/* Pins an object by a local through a partial collection; leaves it in
 * pslots[3] and returns its masked address. Its frame is gone (and
 * scrubbed) before the next collection, so no copy of the address pins
 * it again. */
static NOINLINE uint64_t pin_young_once(rh_mutator *m)
{
	struct node *volatile keep = setup_pinned_young(m);
	uint64_t kh = hide(keep);
	scrub_stack();
	rh_stats s0 = th_stats(heap);
	CHECK(s0.regions_old == 0, "%llu old regions before any collection",
	      (unsigned long long)s0.regions_old);
	CHECK(rh_collect(m, 0) == 0);
	rh_stats s1 = th_stats(heap);
	CHECK(s1.pinned_objects > s0.pinned_objects, "nothing pinned");
	CHECK(hide(keep) == kh && node_ok(keep, 888), "pinned object moved or damaged");
	CHECK(s1.regions_old == 0,
	      "the eden region kept for its pin became old (%llu old regions): pin.Y1",
	      (unsigned long long)s1.regions_old);
	pslots[3] = keep;
	keep = NULL;
	return kh;
}

static NOINLINE void test_pinned_young(rh_mutator *m)
{
	uint64_t kh = pin_young_once(m);
	scrub_stack();
	/* Unpinned (held precisely now), it moves at the next pause. */
	CHECK(rh_collect(m, 0) == 0);
	CHECK(pslots[3] != unhide(kh), "the object stayed in its region once unpinned");
	CHECK(node_ok(pslots[3], 888), "the object kept young is damaged after its move");
	CHECK(rh_verify(m) == 0);
	pslots[3] = NULL;
}

/* Another mutator holds F only in a local while parked. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int stage;

static void wait_stage(int s)
{
	pthread_mutex_lock(&mu);
	while (stage < s)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

static void set_stage(int s)
{
	pthread_mutex_lock(&mu);
	stage = s;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static NOINLINE void *other_thread(void *arg)
{
	(void)arg;
	rh_mutator *m = th_attach(heap);
	struct node *volatile keep = new_node(m, 666);
	rh_write_ref(m, (void **)&keep->ref, new_node(m, 667));
	uint64_t fh = hide(keep);
	scrub_stack();
	rh_mutator_park(m);
	set_stage(1);
	wait_stage(2);
	rh_mutator_unpark(m);
	CHECK(hide(keep) == fh && node_ok(keep, 666), "parked thread's local object lost");
	CHECK(node_ok(keep->ref, 667), "parked thread's local object's referent lost");
	rh_mutator_detach(m);
	return NULL;
}

static NOINLINE void test_other_thread(rh_mutator *m)
{
	pthread_t t;
	rh_mutator_park(m);
	REQUIRE(pthread_create(&t, NULL, other_thread, NULL) == 0);
	wait_stage(1);
	rh_mutator_unpark(m);
	rh_stats s0 = th_stats(heap);
	CHECK(rh_collect(m, 0) == 0);
	CHECK(rh_collect(m, 1) == 0);
	for (int i = 0; i < 40000; i++)
		REQUIRE(rh_alloc_array(m, t_bytes, 500) != NULL);
	rh_stats s1 = th_stats(heap);
	CHECK(s1.pinned_objects > s0.pinned_objects, "nothing pinned on the parked thread");
	CHECK(rh_verify(m) == 0);
	rh_mutator_park(m);
	set_stage(2);
	pthread_join(t, NULL);
	rh_mutator_unpark(m);
}

int main(void)
{
	rh_config cfg;
	th_config(&cfg, 64, 256);
	heap = th_open(&cfg);
	region_size = cfg.region_size;
	static const uint32_t ptrs[] = {8};
	rh_type_desc d = {.name = "node", .layout = RH_LAYOUT_FIXED, .size = 32};
	d.ptr_offsets = ptrs;
	d.n_ptrs = 1;
	t_node = th_type(heap, &d);
	rh_type_desc b = {.name = "bytes", .layout = RH_LAYOUT_BYTE_ARRAY, .size = 16};
	t_bytes = th_type(heap, &b);

	rh_mutator *m = th_attach(heap);
	rh_frame f;
	rh_push_frame(m, &f, pslots, 4);
	test_pinned_young(m);
	test_local_pins(m);
	test_interior(m);
	test_precise_only(m, false);
	test_precise_only(m, true);
	test_other_thread(m);
	rh_pop_frame(m, &f);
	rh_mutator_detach(m);
	rh_heap_close(heap);
	return check_done();
}
