/* A disaggregated heap far larger than its cache, under random reads and
 * writes from several mutator threads, verified by checksums; then the tag
 * words and eviction logs on the tracers checked against the CPU side.
 *
 * usage: test-swap TRACERD PROVIDER [heap MiB] [ops per thread]
 */
#include <pthread.h>
#include <stdint.h>

#include "runtime/internal.h"
#include "tests/common/check.h"
#include "tests/common/cluster.h"

#define THREADS 4
#define ARRAY_BYTES (60 * 1024)

static rh_heap *heap;
static rh_type_id t_bytes, t_refs;
static void *table; /* global root: ref array of every byte array */
static size_t n_arrays;
static int ops_per_thread = 1500;
static uint64_t *expect; /* checksum seed per array */
static atomic_int bad;

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static void fill(uint8_t *p, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i += 8) {
		uint64_t v = mix(seed + i);
		memcpy(p + i, &v, 8);
	}
}

static int check(const uint8_t *p, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i += 8) {
		uint64_t v = mix(seed + i);
		if (memcmp(p + i, &v, 8) != 0)
			return 0;
	}
	return 1;
}

static uint8_t *array_at(size_t i)
{
	void **slots = (void **)((char *)table + 16);
	return (uint8_t *)slots[i] + 16;
}

static void *worker(void *arg)
{
	long id = (long)arg;
	rh_error err;
	rh_mutator *m = rh_mutator_attach(heap, &err);
	if (!m) {
		atomic_fetch_add(&bad, 1);
		return NULL;
	}
	unsigned seed = (unsigned)id * 7919u + 1;
	for (int op = 0; op < ops_per_thread; op++) {
		/* Each thread owns the arrays i with i % THREADS == id. */
		size_t i = (size_t)(rand_r(&seed) % (n_arrays / THREADS)) * THREADS + (size_t)id;
		uint8_t *p = array_at(i);
		if (!check(p, ARRAY_BYTES, expect[i])) {
			if (atomic_fetch_add(&bad, 1) < 5)
				printf("array %zu: contents lost (seed %llu)\n", i,
				       (unsigned long long)expect[i]);
		}
		if (rand_r(&seed) % 2) {
			expect[i] = mix(expect[i] + 1);
			fill(p, ARRAY_BYTES, expect[i]);
		}
		rh_safepoint(m);
	}
	rh_mutator_detach(m);
	return NULL;
}

/* Compares the tags and logs on the memory servers with the CPU side's.
 * The evictor may run on after the workers stop (the final sweep faulted
 * pages back in): a batch that ends between the reads would be counted on
 * one side only. Returns 1, checking nothing, when one did and `last` is
 * false. */
static int check_tags(bool last)
{
	rh_swap_stats before;
	rh_swap_stats_get(heap->swap, &before);
	size_t n_hosts;
	const rh_swap_host *hosts = rh_remote_hosts(heap->remote, &n_hosts);
	rh_region_meta *meta = NULL;
	int tags_ok = 1, logs_ok = 1;
	uint64_t batches = 0;
	for (size_t k = 0; k < n_hosts; k++) {
		const rh_partition *p = &hosts[k].part;
		size_t len = (size_t)p->n_regions * sizeof *meta;
		meta = realloc(meta, (len + 4095) & ~(size_t)4095);
		rh_error e;
		CHECK(rh_tp_reg(hosts[k].conn, meta, len, -1, 0, RH_TP_LOCAL, &e) == RH_OK,
		      "register a local buffer: %s", e.msg);
		rh_tp_sge sg = {meta, p->meta_base, (uint32_t)len};
		int rc = rh_tp_read(hosts[k].conn, &sg, 1, 999999999ull + k, &e);
		if (rc == RH_OK)
			rc = rh_tp_wait(hosts[k].conn, 999999999ull + k, 2000, &e);
		CHECK(rc == RH_OK, "read host %zu's metadata: %s", k, e.msg);
		for (uint32_t r = 0; r < p->n_regions; r++) {
			uint64_t tag, head;
			rh_swap_region_tag(heap->swap, p->first_region + r, &tag, &head);
			/* Clean (dirty bit clear), and equal to what this side wrote. */
			tags_ok &= meta[r].tag == tag && !(tag & RH_TAG_DIRTY);
			logs_ok &= meta[r].log_head == head;
			batches += rh_tag_version(tag) / 2;
			uint64_t live = head < RH_LOG_ENTRIES ? head : RH_LOG_ENTRIES;
			for (uint64_t j = 0; j < live; j++)
				logs_ok &= meta[r].log[j] < heap->region_size / RH_PAGE_SIZE;
		}
		rh_tp_dereg(hosts[k].conn, meta, len, &e);
	}
	free(meta);
	/* A batch in flight during the reads has ended after this. */
	rh_swap_quiesce(heap->swap);
	rh_swap_stats ss;
	rh_swap_stats_get(heap->swap, &ss);
	if (ss.batches != before.batches && !last)
		return 1;
	CHECK(tags_ok, "every region's tag on its tracer equals the CPU side's, dirty bit clear");
	CHECK(logs_ok, "every eviction log head matches and its entries are page indices");
	CHECK(batches == ss.batches, "tag versions count the write-back batches (%llu vs %llu)",
	      (unsigned long long)batches, (unsigned long long)ss.batches);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long long heap_mib = argc > 3 ? strtoull(argv[3], NULL, 10) : 256;
	if (argc > 4)
		ops_per_thread = atoi(argv[4]);
	cluster_test ct = {.heap_mib = heap_mib};
	int rc = cluster_test_begin(&ct, argc, argv, "[heap MiB] [ops per thread]");
	if (rc)
		return rc;
	heap = ct.heap;
	rh_error err;
	rh_type_desc bytes = {
	        .name = "bytes", .layout = RH_LAYOUT_BYTE_ARRAY, .size = 16, .elem_size = 1};
	rh_type_desc refs = {
	        .name = "refs", .layout = RH_LAYOUT_REF_ARRAY, .size = 16, .elem_size = 8};
	t_bytes = rh_type_register(heap, &bytes, &err);
	t_refs = rh_type_register(heap, &refs, &err);
	rh_global_add(heap, &table);
	rh_mutator *m = rh_mutator_attach(heap, &err);

	/* Live data: 2.5x the cache. */
	n_arrays = (size_t)((double)(heap_mib << 20) * 0.25 * 2.5 / ARRAY_BYTES);
	n_arrays -= n_arrays % THREADS;
	expect = calloc(n_arrays, sizeof *expect);
	table = rh_alloc_array(m, t_refs, n_arrays);
	CHECK(table != NULL, "allocate the table");
	for (size_t i = 0; i < n_arrays; i++) {
		void *a = rh_alloc_array(m, t_bytes, ARRAY_BYTES);
		if (!a) {
			CHECK(0, "allocate array %zu: %s", i, rh_last_error()->msg);
			break;
		}
		void **slots = (void **)((char *)table + 16);
		rh_write_ref(m, &slots[i], a);
		expect[i] = mix(i);
		fill(array_at(i), ARRAY_BYTES, expect[i]);
	}
	rh_stats s0;
	rh_stats_get(heap, &s0);
	CHECK(s0.bytes_evicted > 0, "filling 2.5x the cache evicted (%llu bytes written back)",
	      (unsigned long long)s0.bytes_evicted);

	/* Move everything once: evacuation reads evicted pages back. */
	rh_collect(m, 1);
	int lost = 0;
	for (size_t i = 0; i < n_arrays; i++)
		lost += !check(array_at(i), ARRAY_BYTES, expect[i]);
	CHECK(lost == 0, "after a full collection every array is intact (%d lost)", lost);

	rh_mutator_park(m);
	pthread_t t[THREADS];
	for (long i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	rh_mutator_unpark(m);
	CHECK(atomic_load(&bad) == 0, "%d threads x %d random reads/writes: %d checksum failures",
	      THREADS, ops_per_thread, atomic_load(&bad));
	lost = 0;
	for (size_t i = 0; i < n_arrays; i++)
		lost += !check(array_at(i), ARRAY_BYTES, expect[i]);
	CHECK(lost == 0, "final sweep: every array intact (%d lost)", lost);

	rh_stats s;
	rh_stats_get(heap, &s);
	rh_swap_stats ss;
	rh_swap_stats_get(heap->swap, &ss);
	CHECK(s.faults > 0 && s.bytes_fetched > 0, "pages were fetched back (%llu faults)",
	      (unsigned long long)s.faults);
	CHECK(ss.resident_pages <= ss.budget_pages, "resident %llu pages within the budget %llu",
	      (unsigned long long)ss.resident_pages, (unsigned long long)ss.budget_pages);
	printf("# %zu arrays of %d KiB, cache %llu MiB: %llu faults, %llu readahead pages, "
	       "%llu MiB fetched, %llu MiB written back, %llu batches\n",
	       n_arrays, ARRAY_BYTES / 1024, (unsigned long long)(heap_mib / 4),
	       (unsigned long long)s.faults, (unsigned long long)s.readahead_pages,
	       (unsigned long long)(s.bytes_fetched >> 20),
	       (unsigned long long)(s.bytes_evicted >> 20), (unsigned long long)ss.batches);

	for (int try = 0; check_tags(try == 49); try++)
		usleep(20000);

	rh_mutator_detach(m);
	free(expect);
	return cluster_test_end(&ct);
}
