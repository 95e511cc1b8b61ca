/* Parallel copying (docs/collector.md, "Parallel copying"): several copying
 * threads reaching the same objects at once must still copy each one once.
 * A graph where every object is reachable along many paths (a few hundred
 * hubs referenced from thousands of spokes, which form a tree and a chain) is collected over and over, with the verifier on, by 2, 4 and 8
 * copying threads (more threads than CPUs: a thread preempted in the middle
 * of a copy is the race at its widest). After each collection every spoke
 * must still see its hub's identity and contents, and all spokes of a hub
 * the same address: a hub copied twice would split them.
 *
 * Old cells, every sixteenth of which refers to one of the round's new
 * spokes, leave 1500 separate runs of remembered cards: enough for
 * the copying threads to scan them together (rset.S3). Each such cell
 * must see its spoke's new address after every collection: a card that no
 * thread scanned leaves it on the old copy. */
#include "tests/heap/th.h"

#define HUBS 300
#define SPOKES 20000

struct hub {
	uint64_t hdr;
	struct hub *next; /* a ring through all hubs: another path to each */
	uint64_t id, chk;
};

/* Spokes also form a binary tree (spoke i's children are 2i+1 and 2i+2),
 * so the copying threads share the traversal, and a chain through them
 * (next): one more path to each, one that crosses the subtrees. */
struct spoke {
	uint64_t hdr;
	struct hub *hub;
	struct spoke *kid[2];
	struct spoke *next;
	uint64_t id;
};

struct refs {
	uint64_t hdr;
	uint64_t len;
	void *e[];
};

/* 64 bytes: sixteen cells to two cards. */
struct cell {
	uint64_t hdr;
	struct spoke *to;
	uint64_t pad[6];
};

#define CELLS 24000
#define CELL_STRIDE 16

static rh_type_id t_hub, t_spoke, t_refs, t_cell;

static void register_types(rh_heap *h)
{
	rh_type_desc hd = {.name = "hub",
	                   .layout = RH_LAYOUT_FIXED,
	                   .size = sizeof(struct hub),
	                   .n_ptrs = 1,
	                   .ptr_offsets = (uint32_t[]){offsetof(struct hub, next)}};
	t_hub = th_type(h, &hd);
	rh_type_desc sd = {.name = "spoke",
	                   .layout = RH_LAYOUT_FIXED,
	                   .size = sizeof(struct spoke),
	                   .n_ptrs = 4,
	                   .ptr_offsets = (uint32_t[]){
	                           offsetof(struct spoke, hub), offsetof(struct spoke, kid),
	                           offsetof(struct spoke, kid) + 8, offsetof(struct spoke, next)}};
	t_spoke = th_type(h, &sd);
	rh_type_desc rd = {.name = "refs", .layout = RH_LAYOUT_REF_ARRAY, .size = 16};
	t_refs = th_type(h, &rd);
	rh_type_desc cd = {.name = "cell",
	                   .layout = RH_LAYOUT_FIXED,
	                   .size = sizeof(struct cell),
	                   .n_ptrs = 1,
	                   .ptr_offsets = (uint32_t[]){offsetof(struct cell, to)}};
	t_cell = th_type(h, &cd);
}

static uint64_t hub_chk(uint64_t id)
{
	return id * 0x9e3779b97f4a7c15ull ^ 0xabcdef;
}

/* Every spoke's hub is the one the hubs array holds for its id, intact;
 * the ring is intact. Returns the number of problems. */
static long check(struct refs *hubs, struct refs *spokes, uint64_t round)
{
	long bad = 0;
	for (uint64_t i = 0; i < HUBS; i++) {
		struct hub *hb = hubs->e[i];
		if (!hb || hb->id != i || hb->chk != hub_chk(i) ||
		    hb->next != hubs->e[(i + 1) % HUBS])
			bad++;
	}
	for (uint64_t i = 0; i < SPOKES; i++) {
		struct spoke *s = spokes->e[i];
		if (!s || s->id != i + round * SPOKES) {
			bad++;
			continue;
		}
		if (s->hub != hubs->e[(i * 7) % HUBS])
			bad++;
		for (uint64_t k = 0; k < 2; k++)
			if (s->kid[k] != (2 * i + 1 + k < SPOKES ? spokes->e[2 * i + 1 + k] : NULL))
				bad++;
		if (s->next != spokes->e[(i * 13 + 5) % SPOKES])
			bad++;
	}
	return bad;
}

/* Every sixteenth cell refers to the spoke the spokes array holds. */
static long check_cells(struct refs *cells, struct refs *spokes)
{
	long bad = 0;
	for (uint64_t i = 0; i < CELLS; i += CELL_STRIDE) {
		struct cell *c = cells->e[i];
		if (c->to != spokes->e[(i / CELL_STRIDE) % SPOKES])
			bad++;
	}
	return bad;
}

static void run(int threads)
{
	rh_config cfg;
	th_config(&cfg, 256, 256);
	cfg.copy_threads = threads;
	cfg.verify = 1;
	rh_heap *h = th_open(&cfg);
	rh_set_conservative(h, false);
	register_types(h);
	rh_mutator *m = th_attach(h);
	void *slots[3] = {0};
	rh_frame fr;
	rh_push_frame(m, &fr, slots, 3);

	slots[2] = rh_alloc_array(m, t_refs, CELLS);
	REQUIRE(slots[2] != NULL);
	for (uint64_t i = 0; i < CELLS; i++) {
		struct cell *c = rh_alloc(m, t_cell);
		REQUIRE(c != NULL);
		struct refs *cells = slots[2];
		rh_write_ref(m, &cells->e[i], c);
	}

	slots[0] = rh_alloc_array(m, t_refs, HUBS);
	REQUIRE(slots[0] != NULL);
	for (uint64_t i = 0; i < HUBS; i++) {
		struct hub *hb = rh_alloc(m, t_hub);
		REQUIRE(hb != NULL);
		hb->id = i;
		hb->chk = hub_chk(i);
		struct refs *hubs = slots[0];
		rh_write_ref(m, &hubs->e[i], hb);
	}
	struct refs *hubs = slots[0];
	for (uint64_t i = 0; i < HUBS; i++) {
		struct hub *hb = hubs->e[i];
		rh_write_ref(m, (void **)&hb->next, hubs->e[(i + 1) % HUBS]);
	}

	long bad = 0;
	uint64_t collections = 0;
	for (uint64_t round = 0; round < 12; round++) {
		/* Fresh spokes each round (eden), all pointing at the hubs
		 * (survivors, then old): the hubs are reached from everywhere. */
		slots[1] = rh_alloc_array(m, t_refs, SPOKES);
		REQUIRE(slots[1] != NULL);
		for (uint64_t i = 0; i < SPOKES; i++) {
			struct spoke *s = rh_alloc(m, t_spoke);
			REQUIRE(s != NULL);
			s->id = i + round * SPOKES;
			hubs = slots[0];
			rh_write_ref(m, (void **)&s->hub, hubs->e[(i * 7) % HUBS]);
			struct refs *spokes = slots[1];
			rh_write_ref(m, &spokes->e[i], s);
		}
		struct refs *spokes = slots[1];
		for (uint64_t i = 0; i < SPOKES; i++) {
			struct spoke *s = spokes->e[i];
			for (uint64_t k = 0; k < 2; k++)
				if (2 * i + 1 + k < SPOKES)
					rh_write_ref(m, (void **)&s->kid[k],
					             spokes->e[2 * i + 1 + k]);
			rh_write_ref(m, (void **)&s->next, spokes->e[(i * 13 + 5) % SPOKES]);
		}
		struct refs *cells = slots[2];
		for (uint64_t i = 0; i < CELLS; i += CELL_STRIDE) {
			spokes = slots[1];
			rh_write_ref(m, (void **)&((struct cell *)cells->e[i])->to,
			             spokes->e[(i / CELL_STRIDE) % SPOKES]);
		}
		/* Every fourth round replaces the hubs too: copies of copies. */
		if (round % 4 == 3) {
			for (uint64_t i = 0; i < HUBS; i++) {
				struct hub *hb = rh_alloc(m, t_hub);
				REQUIRE(hb != NULL);
				hb->id = i;
				hb->chk = hub_chk(i);
				hubs = slots[0];
				rh_write_ref(m, &hubs->e[i], hb);
			}
			hubs = slots[0];
			for (uint64_t i = 0; i < HUBS; i++) {
				struct hub *hb = hubs->e[i];
				rh_write_ref(m, (void **)&hb->next, hubs->e[(i + 1) % HUBS]);
			}
			spokes = slots[1];
			for (uint64_t i = 0; i < SPOKES; i++) {
				struct spoke *s = spokes->e[i];
				rh_write_ref(m, (void **)&s->hub, hubs->e[(i * 7) % HUBS]);
			}
		}
		for (int k = 0; k < 3; k++) {
			CHECK(rh_collect(m, round % 6 == 5 && k == 2) == 0);
			collections++;
			long b = check(slots[0], slots[1], round) + check_cells(slots[2], slots[1]);
			if (b)
				fprintf(stderr,
				        "%d threads, round %llu, collection %d: %ld problems\n",
				        threads, (unsigned long long)round, k, b);
			bad += b;
		}
	}
	CHECK(bad == 0, "%d copying threads: %ld broken references", threads, bad);
	rh_stats s = th_stats(h);
	CHECK(s.collections + s.full_collections >= collections,
	      "%llu + %llu collections, %llu run", (unsigned long long)s.collections,
	      (unsigned long long)s.full_collections, (unsigned long long)collections);
	CHECK(s.objects_copied > (uint64_t)SPOKES * 12, "%d threads copied only %llu objects",
	      threads, (unsigned long long)s.objects_copied);
	/* The helpers must have taken part, or nothing here raced. */
	CHECK(s.bytes_copied_helpers > 0, "%d copying threads: the helpers copied nothing",
	      threads);
	printf("%d copying threads: %llu collections, %llu objects copied, %.0f %% by helpers, "
	       "%llu copies undone\n",
	       threads, (unsigned long long)collections, (unsigned long long)s.objects_copied,
	       100.0 * (double)s.bytes_copied_helpers / (double)s.bytes_copied,
	       (unsigned long long)s.copies_undone);
	rh_pop_frame(m, &fr);
	rh_mutator_detach(m);
	rh_heap_close(h);
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		run(atoi(argv[1]));
	} else {
		run(2);
		run(4);
		run(8);
	}
	return check_done();
}
