/* Remembered sets: young objects reachable only through old objects
 * (promoted by earlier collections) survive partial collections. Random
 * stores through rh_write_ref into an old reference array and into old
 * fixed nodes, overwritten and cleared at random, checked after every
 * collection against a shadow copy of the expected ids. The verifier runs
 * after every collection (cfg.verify) and explicitly: it checks that every
 * cross-region reference is in its target's remembered set.
 *
 * Conservative scanning is off: the young objects must be kept alive by the
 * remembered sets alone. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "th.h"

#define N_ELEMS 2000
#define N_HOLDERS 200
#define ROUNDS 30
#define STORES 3000

struct node {
	uint64_t hdr;
	struct node *next;
	uint64_t id;
	uint64_t chk;
};

struct refs {
	uint64_t hdr;
	uint64_t len;
	void *elem[];
};

static rh_type_id t_node, t_refs, t_bytes;
static uint64_t region_size;

/* Expected contents: id of the element (0 = NULL) and of its child. */
static uint64_t want[N_ELEMS], want_kid[N_ELEMS];
static uint64_t hold_want[N_HOLDERS];

static int node_ok(const struct node *n, uint64_t id)
{
	return n && rh_object_type(n) == t_node && n->id == id && n->chk == rng_mix(id);
}

static size_t check_all(void **slots)
{
	struct refs *o = slots[0];
	struct refs *holders = slots[1];
	size_t bad = 0;
	for (size_t i = 0; i < N_ELEMS; i++) {
		struct node *n = o->elem[i];
		if (want[i] == 0) {
			bad += n != NULL;
			continue;
		}
		if (!node_ok(n, want[i])) {
			bad++;
			continue;
		}
		if (want_kid[i])
			bad += !node_ok(n->next, want_kid[i]);
		else
			bad += n->next != NULL;
	}
	for (size_t k = 0; k < N_HOLDERS; k++) {
		struct node *h = holders->elem[k];
		if (!node_ok(h, 1000000 + k)) {
			bad++;
			continue;
		}
		bad += hold_want[k] ? !node_ok(h->next, hold_want[k]) : h->next != NULL;
	}
	return bad;
}

static struct node *young(rh_mutator *m, uint64_t id)
{
	struct node *n = rh_alloc(m, t_node);
	REQUIRE(n != NULL);
	n->id = id;
	n->chk = rng_mix(id);
	return n;
}

int main(void)
{
	rh_config cfg;
	th_config(&cfg, 64, 256);
	cfg.verify = 1;
	region_size = cfg.region_size;
	rh_heap *h = th_open(&cfg);
	rh_set_conservative(h, false);
	static const uint32_t ptrs[] = {8};
	rh_type_desc d = {.name = "node", .layout = RH_LAYOUT_FIXED, .size = 32};
	d.ptr_offsets = ptrs;
	d.n_ptrs = 1;
	t_node = th_type(h, &d);
	rh_type_desc r = {.name = "refs", .layout = RH_LAYOUT_REF_ARRAY, .size = 16};
	t_refs = th_type(h, &r);
	rh_type_desc b = {.name = "bytes", .layout = RH_LAYOUT_BYTE_ARRAY, .size = 16};
	t_bytes = th_type(h, &b);
	rh_mutator *m = th_attach(h);

	void *slots[3] = {NULL, NULL, NULL};
	rh_frame f;
	rh_push_frame(m, &f, slots, 3);
	slots[0] = rh_alloc_array(m, t_refs, N_ELEMS);
	REQUIRE(slots[0] != NULL);
	slots[1] = rh_alloc_array(m, t_refs, N_HOLDERS);
	REQUIRE(slots[1] != NULL);
	for (size_t k = 0; k < N_HOLDERS; k++) {
		struct node *n = young(m, 1000000 + k);
		rh_write_ref(m, &((struct refs *)slots[1])->elem[k], n);
	}
	/* Promote the arrays and the holders. */
	REQUIRE(rh_collect(m, 0) == 0);
	REQUIRE(rh_collect(m, 0) == 0);
	REQUIRE(check_all(slots) == 0, "initial structure broken");

	rh_stats s0 = th_stats(h);
	uint64_t seed = 99, next_id = 1;
	int cross_seen = 0;
	uint64_t max_remset = 0;
	for (int round = 0; round < ROUNDS; round++) {
		for (int s = 0; s < STORES; s++) {
			uint64_t x = rng_next(&seed);
			size_t i = x % N_ELEMS;
			unsigned what = (unsigned)(x >> 32) % 20;
			if (what < 12) {
				uint64_t id = next_id++, kid = 0;
				struct node *n = young(m, id);
				if (what < 4) {
					slots[2] = n;
					kid = next_id++;
					struct node *k = young(m, kid);
					n = slots[2];
					rh_write_ref(m, (void **)&n->next, k);
					slots[2] = NULL;
				}
				struct refs *o = slots[0];
				cross_seen |= !th_same_region(o, n, region_size);
				rh_write_ref(m, &o->elem[i], n);
				want[i] = id;
				want_kid[i] = kid;
			} else if (what < 14) {
				struct refs *o = slots[0];
				rh_write_ref(m, &o->elem[i], NULL);
				want[i] = want_kid[i] = 0;
			} else if (what < 17) {
				size_t j = (x >> 16) % N_ELEMS;
				struct refs *o = slots[0];
				rh_write_ref(m, &o->elem[i], o->elem[j]);
				want[i] = want[j];
				want_kid[i] = want_kid[j];
			} else {
				/* An old fixed node's field to a young node. */
				size_t k = i % N_HOLDERS;
				uint64_t id = next_id++;
				struct node *n = young(m, id);
				struct refs *hs = slots[1];
				rh_write_ref(m, (void **)&((struct node *)hs->elem[k])->next, n);
				hold_want[k] = id;
			}
			if (x % 16 == 0)
				REQUIRE(rh_alloc_array(m, t_bytes, 2000) != NULL);
			rh_safepoint(m);
		}
		rh_stats sr = th_stats(h);
		if (sr.remset_entries > max_remset)
			max_remset = sr.remset_entries;
		/* Before collecting too: every store so far is remembered. */
		CHECK(rh_verify(m) == 0, "verifier before collection %d", round);
		int full = round % 10 == 9;
		CHECK(rh_collect(m, full) == 0);
		size_t bad = check_all(slots);
		CHECK(bad == 0, "round %d (%s): %zu bad elements", round, full ? "full" : "partial",
		      bad);
		CHECK(rh_verify(m) == 0, "verifier, round %d", round);
		if (bad)
			break;
	}
	rh_stats s1 = th_stats(h);
	CHECK(cross_seen, "the old array never was in another region than a young node");
	CHECK(s1.barrier_slow > s0.barrier_slow, "no cross-region store recorded");
	CHECK(max_remset > 0, "remembered sets always empty before a collection");
	CHECK(s1.collections >= s0.collections + ROUNDS - ROUNDS / 10,
	      "partial collections %llu -> %llu", (unsigned long long)s0.collections,
	      (unsigned long long)s1.collections);

	/* Stores since the last pause count once their mutator detaches: the
	 * old array (old after the collections) takes young nodes. */
	uint64_t stored = 0;
	for (size_t i = 0; i < N_ELEMS; i += 8) {
		struct node *n = young(m, next_id++);
		struct refs *o = slots[0];
		if (!th_same_region(&o->elem[i], n, region_size)) {
			rh_write_ref(m, &o->elem[i], n);
			stored++;
		}
	}
	rh_stats s2 = th_stats(h);
	rh_pop_frame(m, &f);
	rh_mutator_detach(m);
	rh_stats s3 = th_stats(h);
	CHECK(stored > 0, "no store from the old array into eden");
	CHECK(s3.collections != s2.collections || s3.barrier_slow >= s2.barrier_slow + stored,
	      "%llu cross-region stores before detaching, %llu counted", (unsigned long long)stored,
	      (unsigned long long)(s3.barrier_slow - s2.barrier_slow));
	rh_heap_close(h);
	return check_done();
}
