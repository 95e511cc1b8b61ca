/* Roots first (docs/collector.md, evac.P8). On a disaggregated heap in
 * order "dfs", a young pause copies the targets of its roots side by side
 * before any of their children. An old array holds N young elements, each
 * pointing to a young leaf of its own: the array's cards are the pause's
 * roots. After the pause the elements must lie one after the other in
 * index order (a pair breaks only where a copy destination ends, or, with
 * the roots shared among the copying threads, where a chunk of 2048 root
 * slots does: evac.P8). With
 * order "dfs-strict" (argument "strict") each element lies next to its own
 * leaf instead, and the same count must find almost no adjacent pair: the
 * check tells the two orders apart.
 *
 * usage: test-roots-first TRACERD PROVIDER [strict]
 */
#include <string.h>

#include "runtime/internal.h"
#include "tests/common/check.h"
#include "tests/common/cluster.h"

#define N 20000

struct elem {
	uint64_t hdr;
	void *leaf;
	uint64_t id;
};

struct leaf {
	uint64_t hdr;
	uint64_t id;
};

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	bool strict = argc > 3 && !strcmp(argv[3], "strict");
	cluster_test ct = {.timeout_ms = 5000,
	                   .extra_gc = strict ? "\"order\": \"dfs-strict\"" : "\"order\": \"dfs\""};
	int rc = cluster_test_begin(&ct, argc - (argc > 3), argv, "[strict]");
	if (rc)
		return rc;
	rh_heap *h = ct.heap;
	rh_error err;
	static const uint32_t eptr[] = {offsetof(struct elem, leaf)};
	rh_type_id t_elem = rh_type_register(h,
	                                     &(rh_type_desc){.name = "elem",
	                                                     .layout = RH_LAYOUT_FIXED,
	                                                     .size = sizeof(struct elem),
	                                                     .ptr_offsets = eptr,
	                                                     .n_ptrs = 1},
	                                     &err);
	rh_type_id t_leaf = rh_type_register(h,
	                                     &(rh_type_desc){.name = "leaf",
	                                                     .layout = RH_LAYOUT_FIXED,
	                                                     .size = sizeof(struct leaf)},
	                                     &err);
	rh_type_id t_refs = rh_type_register(h,
	                                     &(rh_type_desc){.name = "refs",
	                                                     .layout = RH_LAYOUT_REF_ARRAY,
	                                                     .size = RH_ARRAY_HEADER_SIZE,
	                                                     .elem_size = 8},
	                                     &err);
	/* Precise roots only: a stale stack word would pin an element. */
	rh_set_conservative(h, false);
	static void *arr;
	rh_global_add(h, &arr);
	rh_mutator *m = rh_mutator_attach(h, &err);
	arr = rh_alloc_array(m, t_refs, N);
	CHECK(arr != NULL, "allocate the array");
	if (!arr)
		goto out;
	/* A full collection makes it old: from here its cards are roots. */
	rh_collect(m, 1);
	for (uint64_t i = 0; i < N; i++) {
		struct leaf *l = rh_alloc(m, t_leaf);
		if (!l) {
			CHECK(l != NULL, "allocate leaf %llu", (unsigned long long)i);
			goto out;
		}
		l->id = i;
		/* Written at once: a pause may come with the next allocation. */
		rh_write_ref(m, (void **)((char *)arr + RH_ARRAY_HEADER_SIZE) + i, l);
		struct elem *e = rh_alloc(m, t_elem);
		if (!e) {
			CHECK(e != NULL, "allocate element %llu", (unsigned long long)i);
			goto out;
		}
		e->id = i;
		void **slot = (void **)((char *)arr + RH_ARRAY_HEADER_SIZE) + i;
		rh_write_ref(m, &e->leaf, *slot);
		rh_write_ref(m, slot, e);
		rh_safepoint(m);
	}
	rh_collect(m, 0);

	void **el = (void **)((char *)arr + RH_ARRAY_HEADER_SIZE);
	size_t adjacent = 0, wrong = 0;
	for (size_t i = 0; i < N; i++) {
		struct elem *e = el[i];
		wrong += e->id != i || ((struct leaf *)e->leaf)->id != i;
		adjacent += i + 1 < N && (char *)el[i + 1] == (char *)e + sizeof *e;
	}
	printf("# %zu of %d neighbouring elements adjacent\n", adjacent, N - 1);
	CHECK(wrong == 0, "every element and leaf reads back (%zu wrong)", wrong);
	if (strict)
		CHECK(adjacent < N / 10,
		      "dfs-strict: each element lies next to its own leaf, not the next element "
		      "(%zu of %d adjacent)",
		      adjacent, N - 1);
	else
		CHECK(adjacent > N * 9 / 10,
		      "dfs: the elements lie side by side in index order after the pause (%zu of "
		      "%d adjacent)",
		      adjacent, N - 1);
	CHECK(rh_verify(m) == 0, "the verifier finds the heap consistent");
out:
	rh_mutator_detach(m);
	return cluster_test_end(&ct);
}
