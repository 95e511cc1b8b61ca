/* window: a streaming join over a sliding window of batches, as a Spark
 * Streaming or Flink job keeps the last WINDOW micro-batches of a stream.
 * Each step a batch of records arrives: keyed records with a payload byte
 * array, partitioned by key into PARTS small chained hash tables, so a
 * batch is a graph, not one array. Every new record is joined against
 * one of the SPAN batches before it (an interval join); a record that
 * matches is taken out of its batch (it joins once, as an order leaves
 * the state when its payment arrives). The oldest batch, WINDOW steps
 * old, is aggregated as its window closes and dropped.
 * A batch outlives many young collections, so it is promoted; what the
 * join takes out dies scattered through old regions while the batch
 * lives (old regions partly dead: evacuated by partial collections after
 * a marking), and the rest dies with the batch. Nothing else is
 * allocated: almost all the program allocates dies in the old
 * generation, the regime of Semeru's Spark and graph applications.
 * --size is the records per batch (about 110 bytes each, with their
 * bucket); the run takes STEPS steps. docs/benchmarks.md, "Workloads". */
#include <stdio.h>

#include "harness.h"

typedef struct rec {
	uint64_t rh_header;
	struct rec *chain; /* next in the hash bucket */
	void *payload;     /* byte array of PAYLOAD bytes */
	uint64_t key;
	uint64_t val;
} rec;

/* A batch is PARTS partitions, each a small hash table (a ref array of
 * buckets), as a micro-batch is partitioned by key. */
typedef struct batch {
	uint64_t rh_header;
	void *parts; /* ref array of PARTS tables */
	uint64_t id;
	uint64_t n;            /* records built */
	uint64_t key_sum;      /* of the records built */
	uint64_t matched;      /* records the join took out */
	uint64_t matched_keys; /* and their key sum */
} batch;

#define WINDOW 16
#define STEPS 40
#define SPAN 4   /* the join looks back this many batches */
#define PROBES 1 /* of them, each new record is joined against */
#define PARTS 64
#define PAYLOAD 48

static rh_mutator *mut;
static rh_type_id rec_t, batch_t, bytes_t, refs_t;
/* roots: the window (ref array of WINDOW batches), the batch being
 * built or closed, the record at hand */
static void *roots[3];

/* A payload's bytes are a function of its key and its batch. */
static uint8_t payload_byte(uint64_t key, uint64_t id, int i)
{
	return (uint8_t)(key >> (i % 8 * 8)) ^ (uint8_t)(id + (uint64_t)i);
}

static void *part_of(const batch *b, uint64_t key)
{
	return rs_slots_of(b->parts)[key % PARTS];
}

static rec **bucket(const batch *b, uint64_t key)
{
	void *t = part_of(b, key);
	uint64_t h = key * 0x9e3779b97f4a7c15ull;
	return (rec **)rs_slots_of(t) + (h >> 20) % rh_array_length(t);
}

static batch *window_at(uint64_t id)
{
	return rs_slots_of(roots[0])[id % WINDOW];
}

/* Adds one record to the batch being built (roots[1]). */
static void add_record(uint64_t key, uint64_t val)
{
	rec *r = rs_must(rh_alloc(mut, rec_t));
	r->key = key;
	r->val = val;
	roots[2] = r;
	void *p = rs_must(rh_alloc_array(mut, bytes_t, PAYLOAD));
	batch *b = roots[1];
	uint8_t *pb = rs_bytes_of(p);
	for (int i = 0; i < PAYLOAD; i++)
		pb[i] = payload_byte(key, b->id, i);
	r = roots[2];
	rh_write_ref(mut, &r->payload, p);
	rec **head = bucket(b, key);
	rh_write_ref(mut, (void **)&r->chain, *head);
	rh_write_ref(mut, (void **)head, r);
	b->n++;
	b->key_sum += key;
	roots[2] = NULL;
}

/* The join: the newest record of batch b with this key, if any, is
 * matched, added to *sum and taken out of b (each record joins once, as
 * an order leaves the state when its payment arrives). A payload that is
 * not its key's and batch's counts in *bad. No allocation, no safepoint. */
static bool join(batch *b, uint64_t key, uint64_t *sum, uint64_t *bad)
{
	rec **link = bucket(b, key);
	while (*link && (*link)->key != key)
		link = &(*link)->chain;
	rec *r = *link;
	if (!r)
		return false;
	const uint8_t *pb = rs_bytes_of(r->payload);
	int i = (int)(r->val % PAYLOAD);
	if (pb[i] != payload_byte(key, b->id, i))
		(*bad)++;
	*sum += r->val + pb[i];
	rh_write_ref(mut, (void **)link, r->chain);
	b->matched++;
	b->matched_keys += key;
	return true;
}

/* The window closes over the batch in roots[1]: aggregate what the join
 * left of it, bucket by bucket (the record at hand in roots[2], since
 * objects may move at a safepoint), and check it against its build. */
static uint64_t close_batch(uint64_t *bad)
{
	uint64_t n = 0, keys = 0, agg = 0;
	for (size_t p = 0; p < PARTS; p++) {
		size_t nb = rh_array_length(rs_slots_of(((batch *)roots[1])->parts)[p]);
		for (size_t k = 0; k < nb; k++) {
			void *t = rs_slots_of(((batch *)roots[1])->parts)[p];
			roots[2] = rs_slots_of(t)[k];
			while (roots[2]) {
				const batch *b = roots[1];
				const rec *r = roots[2];
				const uint8_t *pb = rs_bytes_of(r->payload);
				int i = (int)(r->key % PAYLOAD);
				if (pb[i] != payload_byte(r->key, b->id, i) || r->key % PARTS != p)
					(*bad)++;
				agg += r->val ^ pb[i];
				keys += r->key;
				n++;
				roots[2] = r->chain;
			}
			rh_safepoint(mut);
		}
	}
	const batch *b = roots[1];
	if (n + b->matched != b->n || keys + b->matched_keys != b->key_sum) {
		fprintf(stderr,
		        "window: batch %llu closed with %llu records and %llu matched (built "
		        "%llu)%s\n",
		        (unsigned long long)b->id, (unsigned long long)n,
		        (unsigned long long)b->matched, (unsigned long long)b->n,
		        keys + b->matched_keys != b->key_sum ? ", key sum differs" : "");
		(*bad)++;
	}
	roots[1] = NULL;
	return agg;
}

static void register_types(rs_env *env)
{
	static const uint32_t rec_ptrs[] = {offsetof(rec, chain), offsetof(rec, payload)};
	rec_t = rs_type(env, &(rh_type_desc){.name = "win_rec",
	                                     .layout = RH_LAYOUT_FIXED,
	                                     .size = sizeof(rec),
	                                     .ptr_offsets = rec_ptrs,
	                                     .n_ptrs = 2});
	static const uint32_t batch_ptrs[] = {offsetof(batch, parts)};
	batch_t = rs_type(env, &(rh_type_desc){.name = "win_batch",
	                                       .layout = RH_LAYOUT_FIXED,
	                                       .size = sizeof(batch),
	                                       .ptr_offsets = batch_ptrs,
	                                       .n_ptrs = 1});
	bytes_t = rs_type(env, &(rh_type_desc){.name = "win_bytes",
	                                       .layout = RH_LAYOUT_BYTE_ARRAY,
	                                       .size = RH_ARRAY_HEADER_SIZE,
	                                       .elem_size = 1});
	refs_t = rs_type(env, &(rh_type_desc){.name = "win_refs",
	                                      .layout = RH_LAYOUT_REF_ARRAY,
	                                      .size = RH_ARRAY_HEADER_SIZE,
	                                      .elem_size = 8});
}

/* A new, empty batch in roots[1]: its partitions' tables hold about one
 * record a bucket. */
static void new_batch(uint64_t id, uint64_t records)
{
	batch *b = rs_must(rh_alloc(mut, batch_t));
	b->id = id;
	roots[1] = b;
	void *parts = rs_must(rh_alloc_array(mut, refs_t, PARTS));
	b = roots[1];
	rh_write_ref(mut, &b->parts, parts);
	size_t nb = records / PARTS ? records / PARTS : 1;
	for (size_t p = 0; p < PARTS; p++) {
		void *t = rs_must(rh_alloc_array(mut, refs_t, nb));
		b = roots[1];
		rh_write_ref(mut, &rs_slots_of(b->parts)[p], t);
	}
}

int main(int argc, char **argv)
{
	rs_env env;
	rs_init(&env, "window", 110000, argc, argv);
	rs_open(&env);
	register_types(&env);
	rs_start(&env);
	mut = env.m;
	rh_frame frame;
	rh_push_frame(mut, &frame, roots, 3);

	roots[0] = rs_must(rh_alloc_array(mut, refs_t, WINDOW));

	uint64_t rng = env.seed, keys = env.size ? env.size : 1;
	uint64_t joined = 0, hits = 0, closed = 0, bad = 0;
	for (int s = 0; s < STEPS; s++) {
		/* The oldest batch leaves the window before the new one comes. */
		if (s >= WINDOW) {
			roots[1] = window_at(s);
			rh_write_ref(mut, &rs_slots_of(roots[0])[s % WINDOW], NULL);
			closed += close_batch(&bad);
		}
		new_batch((uint64_t)s, env.size);
		uint64_t older = (uint64_t)(s < SPAN ? s : SPAN);
		for (uint64_t i = 0; i < env.size; i++) {
			uint64_t key = rs_rand(&rng) % keys;
			uint64_t val = rs_rand(&rng);
			add_record(key, val);
			for (int q = 0; q < PROBES; q++) {
				uint64_t pick = rs_rand(&rng);
				if (older &&
				    join(window_at(s - 1 - pick % older), key, &joined, &bad))
					hits++;
			}
			rh_safepoint(mut);
		}
		rh_write_ref(mut, &rs_slots_of(roots[0])[s % WINDOW], roots[1]);
		roots[1] = NULL;
		if ((s + 1) % (STEPS / 8) == 0)
			rs_progress(&env, "step %d/%d, %llu join hits, %llu bad", s + 1, STEPS,
			            (unsigned long long)hits, (unsigned long long)bad);
	}
	/* The end of the stream closes the window over the batches left. */
	for (int s = STEPS > WINDOW ? STEPS - WINDOW : 0; s < STEPS; s++) {
		roots[1] = window_at(s);
		closed += close_batch(&bad);
	}
	bool ok = bad == 0;
	if (!ok)
		fprintf(stderr, "window: %llu records failed their checks\n",
		        (unsigned long long)bad);
	rh_pop_frame(mut, &frame);
	return rs_finish(&env, joined ^ closed ^ hits, ok);
}
