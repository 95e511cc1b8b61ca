/* The snapshot barrier of the tracers' concurrent full marking
 * (docs/distributed-gc.md, "Concurrent full marking", fullconc.T4).
 *
 * A list of 1,500,000 nodes (about 92 MiB, on a 192 MiB heap at 25 % cache)
 * hangs from a global root, promoted and mostly evicted; its last 600
 * nodes (the first allocated) also refer each to a small side object,
 * reachable through that node only. A concurrent full marking begins;
 * right after its first pause, long before the tracers can have walked
 * the list to its end, the program moves each side object into a new
 * array (young: the tracers neither mark nor scan it) and clears the
 * node's field: the move-then-delete pattern that only the barrier's log
 * of the cleared value keeps visible. Once the marking has ended, every
 * side object must read back from the new array, intact, and the heap
 * must verify.
 *
 * With `proof` as the third argument the CPU server drops what the barrier
 * logged instead of relaying it (a field only tests set), and the test
 * checks the opposite: some side objects are lost (their nodes were not
 * reached before the fields were cleared, so nothing marked them). That
 * is what the checks above would meet without fullconc.T4.
 *
 * usage: test-satb TRACERD PROVIDER [proof]
 */
#include <string.h>

#include "gc/object.h"
#include "runtime/internal.h"
#include "runtime/remote.h"
#include "swap/swap.h"
#include "tests/common/check.h"
#include "tests/common/cluster.h"
#include "tests/dgc/forest.h"

#define N 1500000u
#define SIDES 600u
#define MAGIC 0x5a7b5a7b5a7b5a7bull
#define END_S 30.0

struct side {
	uint64_t hdr;
	uint64_t id, magic, pad;
};

struct snode {
	uint64_t hdr;
	struct snode *next;
	struct side *side;
	uint64_t id, pad[4];
};

static rh_heap *heap;
static bool proof;
static struct snode *head;    /* global root */
static struct dgc_refs *keep; /* global root: SIDES slots, allocated during the marking */
/* The nodes that hold side objects, as plain words: not roots, so that
 * reading them does not make the side objects reachable from anywhere
 * the snapshot holds. Old objects do not move while the marking runs
 * (fullconc.T6), and the test checks each still is what it was. */
static uintptr_t parents[SIDES];

/* Whether a is where an object starts when its region is parsed from the
 * start: a dead run becomes one filler, and the objects it covered keep
 * their bytes under it. */
static bool object_start(uintptr_t a)
{
	if (!rh_in_heap(heap, a))
		return false;
	const rh_region *r = rh_region_of(heap, a);
	uintptr_t p = r->start;
	while (p < a && p < r->top)
		p += rh_hdr_bytes(rh_hdr((void *)p));
	return p == a;
}

static bool side_ok(const struct side *s, uint64_t id, rh_type_id t)
{
	return s && object_start((uintptr_t)s) && rh_hdr_type(rh_hdr((void *)s)) == t &&
	       s->id == id && s->magic == (MAGIC ^ id);
}

static bool build(rh_mutator *m, rh_type_id t_node, rh_type_id t_side)
{
	for (uint32_t i = 0; i < N; i++) {
		struct snode *x = rh_alloc(m, t_node);
		if (!x)
			return CHECK(0, "allocating node %u: %s", i, rh_last_error()->msg);
		x->id = i;
		rh_write_ref(m, (void **)&x->next, head);
		head = x;
		if (i < SIDES) {
			struct side *s = rh_alloc(m, t_side);
			if (!s)
				return CHECK(0, "allocating side %u: %s", i, rh_last_error()->msg);
			s->id = i;
			s->magic = MAGIC ^ s->id;
			rh_write_ref(m, (void **)&head->side, s);
		}
	}
	return true;
}

static void run(void)
{
	rh_error err;
	rh_set_conservative(heap, false); /* no stack word keeps a side object */
	static const uint32_t node_ptrs[] = {8, 16};
	rh_type_desc nd = {.name = "satb-node",
	                   .layout = RH_LAYOUT_FIXED,
	                   .size = sizeof(struct snode),
	                   .ptr_offsets = node_ptrs,
	                   .n_ptrs = 2};
	rh_type_desc sd = {
	        .name = "satb-side", .layout = RH_LAYOUT_FIXED, .size = sizeof(struct side)};
	rh_type_id t_node = rh_type_register(heap, &nd, &err);
	rh_type_id t_side = rh_type_register(heap, &sd, &err);
	rh_type_id t_refs = rh_type_register(heap, &dgc_refs_desc, &err);
	rh_global_add(heap, (void **)&head);
	rh_global_add(heap, (void **)&keep);
	rh_mutator *m = rh_mutator_attach(heap, &err);
	if (!CHECK(t_node && t_side && t_refs && m, "register the types and attach: %s", err.msg))
		return;
	CHECK(heap->fm.conc, "a disaggregated heap with offload on marks concurrently");
	if (!build(m, t_node, t_side))
		goto out;
	/* Old, and mostly evicted: a stopped full marking moves nothing. */
	for (int i = 0; i < 3; i++)
		rh_collect(m, 0);
	rh_collect(m, 1);
	uint32_t k = SIDES;
	for (struct snode *x = head; x; x = x->next)
		if (x->id < SIDES)
			parents[--k] = (uintptr_t)x;
	if (!CHECK(k == 0, "every side's node found (%u missing)", k))
		goto out;

	rh_stats s0, s;
	rh_stats_get(heap, &s0);
	CHECK(rh_collect_concurrent(m, 0) == RH_OK, "a concurrent full marking begins");
	heap->fm.drop_logged = proof;
	CHECK(rh_fullmark_active(heap), "the marking runs after its first pause");
	keep = rh_alloc_array(m, t_refs, SIDES);
	if (!CHECK(keep != NULL && rh_fullmark_active(heap), "a young array during the marking"))
		goto out;
	double tm0 = dgc_now_s();
	uint32_t moved = 0, stale = 0;
	for (uint32_t i = 0; i < SIDES; i++) {
		struct snode *p = (struct snode *)parents[i];
		if (rh_hdr_type(rh_hdr(p)) != t_node || p->id != i) {
			stale++;
			continue;
		}
		struct side *x = p->side;
		rh_write_ref(m, &keep->e[i], x);
		rh_write_ref(m, (void **)&p->side, NULL);
		moved++;
	}
	/* The cleared fields reach the tracers' images now, as the cleaner
	 * or the evictor would write them back: a tracer that scans the
	 * nodes later reads NULL there, not the snapshot's value. */
	for (uint32_t i = 0; i < SIDES; i++) {
		uint32_t r = rh_region_index(heap, parents[i]);
		if ((i == 0 || r != rh_region_index(heap, parents[i - 1])) &&
		    rh_swap_clean_region(heap->swap, r, &err) != RH_OK)
			CHECK(0, "writing back region %u: %s", r, err.msg);
	}
	printf("# moved in %.2f ms, the tracers %s then\n", (dgc_now_s() - tm0) * 1e3,
	       rh_remote_full_quiet(heap->remote) ? "done" : "still marking");
	if (!CHECK(stale == 0, "no side's node moved (%u did)", stale))
		goto out;
	/* The first pause that finds the tracers done ends the marking. */
	double t0 = dgc_now_s();
	do {
		struct timespec ts = {0, 20 * 1000 * 1000};
		nanosleep(&ts, NULL);
		rh_collect(m, 0);
		rh_stats_get(heap, &s);
	} while (s.concurrent_cycles == s0.concurrent_cycles && dgc_now_s() - t0 < END_S);
	heap->fm.drop_logged = false;
	if (!CHECK(s.concurrent_cycles > s0.concurrent_cycles, "the marking ended within %.0f s",
	           END_S))
		goto out;
	uint32_t lost = 0;
	for (uint32_t i = 0; i < SIDES; i++)
		if (!side_ok(keep->e[i], i, t_side))
			lost++;
	printf("# %u side objects moved during the marking, %u lost\n", moved, lost);

	if (proof) {
		CHECK(lost > 0, "proof: without the barrier's log, side objects are lost");
		/* The verifier sees the same: references into a filler. */
		CHECK(rh_verify(m) > 0, "proof: the heap verifier reports the lost objects");
	} else {
		CHECK(lost == 0, "every side object reads back intact (%u lost)", lost);
		CHECK(rh_verify(m) == 0, "the heap verifier finds the heap consistent");
	}
out:
	rh_mutator_detach(m);
}

int main(int argc, char **argv)
{
	proof = argc > 3 && strcmp(argv[3], "proof") == 0;
	cluster_test ct = {.heap_mib = 192, .cache = 0.25, .timeout_ms = 5000};
	return cluster_test_main(&ct, argc, argv, &heap, run);
}
