/* A key-value cache with LRU eviction, as an in-memory store runs it: a
 * chained hash table plus a doubly-linked recency list through the same
 * entries. Requests follow a Zipf(0.99) distribution over four times as
 * many keys as the cache holds; 95 % are gets (a miss loads the value and
 * may evict the least recently used entry), 5 % are sets (a new value
 * replaces the old). --size is the capacity in entries; values are 64 to
 * 512 bytes; 10 x size requests. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"

typedef struct entry {
	uint64_t rh_header;
	struct entry *prev, *next; /* recency list; the sentinel closes it */
	struct entry *chain;       /* next in the hash bucket */
	void *value;               /* byte array */
	uint64_t key;
	uint64_t version; /* of the value */
} entry;

static rh_mutator *mut;
static rh_type_id entry_t, bytes_t, refs_t;
/* roots: table, sentinel, entry being built */
static void *roots[3];

static entry **bucket(uint64_t key)
{
	size_t n = rh_array_length(roots[0]);
	uint64_t h = key * 0x9e3779b97f4a7c15ull;
	return (entry **)((char *)roots[0] + RH_ARRAY_HEADER_SIZE) + (h >> 20) % n;
}

static void unlink_entry(entry *e)
{
	rh_write_ref(mut, (void **)&e->prev->next, e->next);
	rh_write_ref(mut, (void **)&e->next->prev, e->prev);
}

static void push_front(entry *e)
{
	entry *s = roots[1];
	rh_write_ref(mut, (void **)&e->next, s->next);
	rh_write_ref(mut, (void **)&e->prev, s);
	rh_write_ref(mut, (void **)&s->next->prev, e);
	rh_write_ref(mut, (void **)&s->next, e);
}

static size_t value_size(uint64_t key)
{
	return 64 + (size_t)((key * 2654435761u) % 449);
}

/* A value's bytes are a function of its key and version. */
static void *make_value(uint64_t key, uint64_t version)
{
	size_t n = value_size(key);
	uint8_t *b = rs_bytes_of(rs_must(rh_alloc_array(mut, bytes_t, n)));
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(key + version + i);
	return b - RH_ARRAY_HEADER_SIZE;
}

static entry *lookup(uint64_t key)
{
	for (entry *e = *bucket(key); e; e = e->chain)
		if (e->key == key)
			return e;
	return NULL;
}

static void evict_lru(void)
{
	entry *s = roots[1], *victim = s->prev;
	unlink_entry(victim);
	entry **p = bucket(victim->key);
	while (*p != victim)
		p = &(*p)->chain;
	rh_write_ref(mut, (void **)p, victim->chain);
}

/* Zipf over ranks 1..n by inverting the CDF; rank r maps to a scattered
 * key so that popular keys are not neighbours in the table. */
static double *zipf_cdf(uint64_t n, double s)
{
	double *c = malloc(n * sizeof *c);
	if (!c)
		rs_oom();
	double sum = 0;
	for (uint64_t i = 0; i < n; i++)
		c[i] = (sum += 1.0 / pow((double)(i + 1), s));
	for (uint64_t i = 0; i < n; i++)
		c[i] /= sum;
	return c;
}

static uint64_t zipf_rank(const double *c, uint64_t n, double u)
{
	uint64_t lo = 0, hi = n - 1;
	while (lo < hi) {
		uint64_t mid = (lo + hi) / 2;
		if (c[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int main(int argc, char **argv)
{
	rs_env env;
	rs_init(&env, "lru", 500000, argc, argv);
	rs_open(&env);
	static const uint32_t eptrs[] = {offsetof(entry, prev), offsetof(entry, next),
	                                 offsetof(entry, chain), offsetof(entry, value)};
	entry_t = rs_type(&env, &(rh_type_desc){.name = "lru_entry",
	                                        .layout = RH_LAYOUT_FIXED,
	                                        .size = sizeof(entry),
	                                        .ptr_offsets = eptrs,
	                                        .n_ptrs = 4});
	bytes_t = rs_type(&env, &(rh_type_desc){.name = "lru_bytes",
	                                        .layout = RH_LAYOUT_BYTE_ARRAY,
	                                        .size = RH_ARRAY_HEADER_SIZE,
	                                        .elem_size = 1});
	refs_t = rs_type(&env, &(rh_type_desc){.name = "lru_table",
	                                       .layout = RH_LAYOUT_REF_ARRAY,
	                                       .size = RH_ARRAY_HEADER_SIZE,
	                                       .elem_size = 8});
	rs_start(&env);
	mut = env.m;
	rh_frame frame;
	rh_push_frame(mut, &frame, roots, 3);

	uint64_t cap = env.size ? env.size : 1, keys = 4 * cap, requests = 10 * cap;
	double *cdf = zipf_cdf(keys, 0.99);
	roots[0] = rs_must(rh_alloc_array(mut, refs_t, cap));
	entry *s = rs_must(rh_alloc(mut, entry_t));
	rh_write_ref(mut, (void **)&s->prev, s);
	rh_write_ref(mut, (void **)&s->next, s);
	roots[1] = s;

	uint64_t rng = env.seed, count = 0, hits = 0, check = 0, bad = 0;
	for (uint64_t r = 0; r < requests; r++) {
		double u = (double)(rs_rand(&rng) >> 11) / 9007199254740992.0;
		uint64_t key = (zipf_rank(cdf, keys, u) * 0x2545F4914F6CDD1Dull) % (1ull << 40);
		bool set = rs_rand(&rng) % 100 < 5;
		entry *e = lookup(key);
		if (e) {
			hits++;
			uint8_t first = rs_bytes_of(e->value)[0];
			if (first != (uint8_t)(key + e->version))
				bad++;
			check += first;
			unlink_entry(e);
			push_front(e);
			if (set) {
				roots[2] = e;
				void *v = make_value(key, r);
				e = roots[2];
				e->version = r;
				rh_write_ref(mut, &e->value, v);
				roots[2] = NULL;
			}
		} else {
			roots[2] = make_value(key, 0);
			e = rs_must(rh_alloc(mut, entry_t));
			e->key = key;
			rh_write_ref(mut, &e->value, roots[2]);
			roots[2] = e;
			entry **b = bucket(key);
			rh_write_ref(mut, (void **)&e->chain, *b);
			rh_write_ref(mut, (void **)b, e);
			push_front(e);
			roots[2] = NULL;
			if (++count > cap) {
				evict_lru();
				count--;
			}
		}
		rh_safepoint(mut);
		if ((r + 1) % (requests / 5 ? requests / 5 : 1) == 0)
			rs_progress(&env, "%llu/%llu requests, hit ratio %.3f",
			            (unsigned long long)(r + 1), (unsigned long long)requests,
			            (double)hits / (double)(r + 1));
	}
	/* The recency list and the table hold the same count entries. */
	uint64_t listed = 0;
	for (entry *e = ((entry *)roots[1])->next; e != roots[1]; e = e->next) {
		listed++;
		if (lookup(e->key) != e || rh_array_length(e->value) != value_size(e->key))
			bad++;
	}
	bool ok = listed == count && bad == 0;
	if (!ok)
		fprintf(stderr, "lru: %llu entries listed, %llu counted, %llu bad\n",
		        (unsigned long long)listed, (unsigned long long)count,
		        (unsigned long long)bad);
	free(cdf);
	rh_pop_frame(mut, &frame);
	return rs_finish(&env, check ^ hits, ok);
}
