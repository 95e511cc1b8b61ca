/* list-scan: a persisted data set scanned again and again, as a Spark job
 * caches an RDD and runs several actions over it. The data set is P
 * partitions, each a linked list of element objects with a small payload.
 * Elements arrive in random partition order (a shuffle), so allocation
 * order interleaves the partitions while every scan walks one partition
 * after another: without reordering, each page a scan touches holds few
 * elements of the partition being walked. Every other scan is a
 * transformation that replaces each element's payload (old garbage for
 * partial collections and CSSCs); every scan allocates a short-lived tuple
 * per element. --size is the number of elements (about 110 bytes each). */
#include <stdio.h>
#include <string.h>

#include "harness.h"

typedef struct elem {
	uint64_t rh_header;
	struct elem *next;
	void *payload; /* byte array of PAYLOAD bytes */
	uint64_t key;
	uint64_t version;
} elem;

typedef struct tuple {
	uint64_t rh_header;
	uint64_t key, sum;
} tuple;

#define PARTITIONS 64
#define PAYLOAD 48
#define SCANS 10

static rh_mutator *mut;
static rh_type_id elem_t, bytes_t, refs_t, tuple_t;

static void *alloc(rh_type_id t)
{
	void *p = rh_alloc(mut, t);
	if (!p)
		rs_oom();
	return p;
}

static void *alloc_array(rh_type_id t, size_t n)
{
	void *p = rh_alloc_array(mut, t, n);
	if (!p)
		rs_oom();
	return p;
}

static void fill(void *payload, uint64_t key, uint64_t version)
{
	uint8_t *b = rs_bytes_of(payload);
	for (int i = 0; i < PAYLOAD; i++)
		b[i] = (uint8_t)(key >> (i % 8 * 8)) ^ (uint8_t)(version + (uint64_t)i);
}

static uint64_t payload_sum(void *payload)
{
	const uint8_t *b = rs_bytes_of(payload);
	uint64_t s = 0;
	for (int i = 0; i < PAYLOAD; i++)
		s += b[i];
	return s;
}

int main(int argc, char **argv)
{
	rs_env env;
	rs_init(&env, "listscan", 2000000, argc, argv);
	rs_open(&env);
	static const uint32_t elem_ptrs[] = {offsetof(elem, next), offsetof(elem, payload)};
	elem_t = rs_type(&env, &(rh_type_desc){.name = "ls_elem",
	                                       .layout = RH_LAYOUT_FIXED,
	                                       .size = sizeof(elem),
	                                       .ptr_offsets = elem_ptrs,
	                                       .n_ptrs = 2});
	bytes_t = rs_type(&env, &(rh_type_desc){.name = "ls_bytes",
	                                        .layout = RH_LAYOUT_BYTE_ARRAY,
	                                        .size = RH_ARRAY_HEADER_SIZE,
	                                        .elem_size = 1});
	refs_t = rs_type(&env, &(rh_type_desc){.name = "ls_refs",
	                                       .layout = RH_LAYOUT_REF_ARRAY,
	                                       .size = RH_ARRAY_HEADER_SIZE,
	                                       .elem_size = 8});
	tuple_t = rs_type(
	        &env, &(rh_type_desc){.name = "ls_tuple", .layout = RH_LAYOUT_FIXED, .size = 24});
	rs_start(&env);
	mut = env.m;

	/* heads, tails, the element being built, the tuple being built */
	void *roots[4] = {0};
	rh_frame frame;
	rh_push_frame(mut, &frame, roots, 4);
	roots[0] = alloc_array(refs_t, PARTITIONS);
	roots[1] = alloc_array(refs_t, PARTITIONS);

	uint64_t rng = env.seed, key_sum = 0;
	for (uint64_t i = 0; i < env.size; i++) {
		uint64_t key = rs_rand(&rng);
		key_sum += key;
		elem *e = alloc(elem_t);
		e->key = key;
		roots[2] = e;
		void *p = alloc_array(bytes_t, PAYLOAD);
		fill(p, key, 0);
		e = roots[2];
		rh_write_ref(mut, &e->payload, p);
		size_t b = key % PARTITIONS;
		void **heads = rs_slots_of(roots[0]), **tails = rs_slots_of(roots[1]);
		if (tails[b])
			rh_write_ref(mut, (void **)&((elem *)tails[b])->next, e);
		else
			rh_write_ref(mut, &heads[b], e);
		rh_write_ref(mut, &tails[b], e);
		roots[2] = NULL;
		rh_safepoint(mut);
	}
	roots[1] = NULL; /* the tails were only for building */
	rs_progress(&env, "built %llu elements in %d partitions", (unsigned long long)env.size,
	            PARTITIONS);

	bool ok = true;
	uint64_t check = 0;
	for (int s = 0; s < SCANS; s++) {
		bool transform = s % 2 == 1;
		uint64_t n = 0, keys = 0, sum = 0;
		for (size_t b = 0; b < PARTITIONS; b++) {
			roots[2] = rs_slots_of(roots[0])[b];
			while (roots[2]) {
				elem *e = roots[2];
				uint64_t ps = payload_sum(e->payload);
				keys += e->key;
				sum += ps;
				n++;
				tuple *t = alloc(tuple_t); /* the action's output: dies at once */
				e = roots[2];
				t->key = e->key;
				t->sum = ps;
				if (transform) {
					void *p = alloc_array(bytes_t, PAYLOAD);
					e = roots[2];
					fill(p, e->key, e->version + 1);
					e->version++;
					rh_write_ref(mut, &e->payload, p);
				}
				roots[2] = e->next;
				rh_safepoint(mut);
			}
		}
		if (n != env.size || keys != key_sum) {
			fprintf(stderr, "listscan: scan %d saw %llu elements (expected %llu)%s\n",
			        s, (unsigned long long)n, (unsigned long long)env.size,
			        keys != key_sum ? ", key sum differs" : "");
			ok = false;
		}
		check += sum;
		rs_progress(&env, "scan %d/%d%s", s + 1, SCANS, transform ? " (transform)" : "");
	}
	rh_pop_frame(mut, &frame);
	return rs_finish(&env, check ^ key_sum, ok);
}
