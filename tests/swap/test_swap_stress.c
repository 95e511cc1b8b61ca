/* Concurrent fault service under stress (docs/swap.md, "Concurrent
 * faults", swap.C1-C7).
 *
 * Several threads fault at once on a range eight times the cache, with the
 * evictor running and a cleaner thread writing regions back and flushing
 * them under their feet:
 *   - the first half of the range is written once before the threads
 *     start and then only read, by every thread: faults on the same pages
 *     at once, and on pages another fault is reading ahead (swap.C2);
 *   - each page of the second half belongs to one thread, which checks it
 *     holds the last version it wrote and writes the next one: a lost
 *     write-back, a stale fetch installed over a newer page, or a page
 *     installed twice shows as a wrong version.
 * Every word of a page encodes its page number and version, so a page
 * read from the wrong place or torn shows too. At the end every page is
 * evicted, fetched back and checked, and the resident count must equal
 * the pages held (swap.C6).
 *
 * usage: test-swap-stress TRACERD PROVIDER THREADS ITERATIONS
 * RHEAP_TEST_FAULTS=signal: each thread serves its own faults; otherwise
 * THREADS fault threads serve them.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "runtime/remote.h"
#include "swap/internal.h"
#include "tests/common/check.h"
#include "tests/common/cluster.h"
#include "tests/swap/pages.h"

#define MAX_THREADS 16
#define WORDS (RH_PAGE_SIZE / sizeof(uint64_t))

typedef struct ctx {
	rh_swap *s;
	uint64_t *heap;
	size_t pages, shared; /* pages [0, shared) are read-only */
	int threads, iters;
	atomic_bool stop;
	atomic_size_t bad; /* pages read back wrong */
	pthread_barrier_t step;
} ctx;

typedef struct worker {
	ctx *c;
	int id;
	uint32_t *ver; /* per page; only this thread's pages are used */
	uint64_t seed;
	pthread_t t;
} worker;

static uint64_t word(size_t page, uint32_t ver, size_t i)
{
	return (uint64_t)page << 40 ^ (uint64_t)ver << 16 ^ i ^ 0x5bd1e995u;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Whether the page holds version ver (0: never written, zeros). */
static bool page_ok(ctx *c, size_t p, uint32_t ver)
{
	const volatile uint64_t *w = c->heap + p * WORDS;
	for (size_t i = 0; i < WORDS; i++) {
		uint64_t want = ver ? word(p, ver, i) : 0;
		if (w[i] != want) {
			if (atomic_fetch_add(&c->bad, 1) < 5)
				printf("# page %zu word %zu: %#llx, want %#llx (version %u)\n", p,
				       i, (unsigned long long)w[i], (unsigned long long)want, ver);
			return false;
		}
	}
	return true;
}

static void page_write(ctx *c, size_t p, uint32_t ver)
{
	volatile uint64_t *w = c->heap + p * WORDS;
	for (size_t i = 0; i < WORDS; i++)
		w[i] = word(p, ver, i);
}

static void *work(void *arg)
{
	worker *w = arg;
	ctx *c = w->c;
	size_t own = (c->pages - c->shared) / (size_t)c->threads;
	uint64_t common = 0x853c49e6748fea9bull;
	for (int k = 0; k < c->iters; k++) {
		if (k % 16 == 0) {
			/* Every thread reads the same shared page at once:
			 * one fetches it, the others must wait for that fetch
			 * (swap.C2). */
			pthread_barrier_wait(&c->step);
			page_ok(c, rnd(&common) % c->shared, 1);
		}
		uint64_t r = rnd(&w->seed);
		if ((r & 3) == 0) {
			/* The threads walk the shared pages in step: faults on
			 * the same pages and read-ahead windows at once. */
			page_ok(c, (size_t)k % c->shared, 1);
		} else if ((r & 3) == 1) {
			page_ok(c, r / 4 % c->shared, 1);
		} else {
			/* Pages p with p % threads == id are this thread's. */
			size_t p = c->shared + (r / 2 % own) * (size_t)c->threads + (size_t)w->id;
			page_ok(c, p, w->ver[p]);
			page_write(c, p, ++w->ver[p]);
		}
	}
	return NULL;
}

/* Write regions back and evict them while the workers run: faults then
 * meet cleaning, flushes and the exclusive side of fault_lock (swap.C4). */
static void *cleaner(void *arg)
{
	ctx *c = arg;
	uint64_t seed = 0x2545f4914f6cdd1dull;
	rh_error err;
	while (!atomic_load(&c->stop)) {
		uint32_t reg = (uint32_t)(rnd(&seed) % c->s->n_regions);
		if (rnd(&seed) & 1)
			rh_swap_clean_region(c->s, reg, &err);
		else
			rh_swap_flush_region(c->s, reg, &err);
		usleep(2000);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: %s TRACERD PROVIDER THREADS ITERATIONS\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	swap_deadline(100);
	int threads = atoi(argv[3]), iters = atoi(argv[4]);
	if (threads < 1 || threads > MAX_THREADS)
		threads = 4;
	const char *fm = getenv("RHEAP_TEST_FAULTS");
	bool sig = fm && !strcmp(fm, "signal");
	cluster cl;
	if (cluster_start(&cl, argv[1], argv[2], 1, 16, 0.25, 5000, NULL) < 0) {
		perror("cluster");
		return 2;
	}
	rh_config cfg;
	rh_error err;
	rh_remote *r = NULL;
	if (rh_config_load(cl.config, &cfg, &err) != RH_OK) {
		printf("not ok: config: %s\n", err.msg);
		cluster_stop(&cl);
		return 1;
	}
	void *base = mmap((void *)cfg.heap_base, cfg.heap_size, PROT_READ | PROT_WRITE,
	                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	for (int t = 0; t < 100 && rh_remote_open(&cfg, NULL, NULL, &r, &err) != RH_OK; t++)
		usleep(50000);
	if (base != (void *)cfg.heap_base || !r) {
		printf("not ok: map the range and connect: %s\n", r ? "mmap" : err.msg);
		cluster_stop(&cl);
		return 1;
	}
	size_t n_hosts;
	const rh_swap_host *hosts = rh_remote_hosts(r, &n_hosts);
	rh_swap_opts so = {.base = cfg.heap_base,
	                   .size = cfg.heap_size,
	                   .region_size = cfg.region_size,
	                   .budget = cfg.heap_size / 8,
	                   .readahead = 8,
	                   .readahead_adaptive = true,
	                   .signal_faults = sig,
	                   .fault_threads = (uint32_t)threads,
	                   .timeout_ms = 5000,
	                   .hosts = hosts,
	                   .n_hosts = n_hosts};
	rh_swap *s;
	if (rh_swap_open(&so, &s, &err) != RH_OK) {
		printf("not ok: swap: %s\n", err.msg);
		cluster_stop(&cl);
		return 1;
	}
	ctx c = {.s = s,
	         .heap = base,
	         .pages = cfg.heap_size / RH_PAGE_SIZE,
	         .threads = threads,
	         .iters = iters};
	c.shared = c.pages / 2;
	pthread_barrier_init(&c.step, NULL, (unsigned)threads);
	for (size_t p = 0; p < c.shared; p++)
		page_write(&c, p, 1);

	worker w[MAX_THREADS];
	uint32_t *ver = calloc(c.pages, sizeof *ver);
	pthread_t ct;
	pthread_create(&ct, NULL, cleaner, &c);
	for (int i = 0; i < threads; i++) {
		w[i] = (worker){&c, i, ver, 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1), 0};
		pthread_create(&w[i].t, NULL, work, &w[i]);
	}
	for (int i = 0; i < threads; i++)
		pthread_join(w[i].t, NULL);
	atomic_store(&c.stop, true);
	pthread_join(ct, NULL);
	CHECK(atomic_load(&c.bad) == 0,
	      "%d threads, %d accesses each: every page read back "
	      "as last written (%zu pages wrong)",
	      threads, iters, atomic_load(&c.bad));

	/* Everything evicted and fetched back once more. */
	for (uint32_t reg = 0; reg < s->n_regions; reg++)
		CHECK(rh_swap_flush_region(s, reg, &err) == RH_OK, "flush region %u", reg);
	size_t bad0 = atomic_load(&c.bad);
	for (size_t p = 0; p < c.pages; p++)
		page_ok(&c, p, p < c.shared ? 1 : ver[p]);
	CHECK(atomic_load(&c.bad) == bad0, "after a flush of every region every page reads back");
	settle(s);
	/* Count and pages held are read with evict_lock held: the evictor
	 * may still be bringing the cache down to its low mark, and between
	 * two reads outside the lock its next batch changed both (448 counted
	 * against 320 held, two batches of 64 apart, in a loaded run). */
	pthread_mutex_lock(&s->evict_lock);
	rh_swap_stats st;
	rh_swap_stats_get(s, &st);
	size_t held = count_resident(s);
	pthread_mutex_unlock(&s->evict_lock);
	CHECK(st.resident_pages == held, "the resident count is the pages held (%llu, %zu)",
	      (unsigned long long)st.resident_pages, held);
	/* Nothing here maps a page behind the swap system's back, so a page
	 * found mapped at its install was installed twice (swap.C1). */
	uint64_t twice = atomic_load(&s->st.install_conflicts);
	CHECK(twice == 0, "no page installed twice (%llu found mapped)", (unsigned long long)twice);
	CHECK(st.faults > (uint64_t)iters / 4 && st.bytes_evicted > 0,
	      "the run faulted and evicted (%llu fetches, %llu readahead pages, %llu MiB "
	      "written back)",
	      (unsigned long long)st.faults, (unsigned long long)st.readahead_pages,
	      (unsigned long long)(st.bytes_evicted >> 20));
	printf("# %s, %s faults: %llu fetches, %llu zero faults, %llu budget waits\n", argv[2],
	       sig ? "signal" : "thread", (unsigned long long)st.faults,
	       (unsigned long long)st.zero_faults, (unsigned long long)st.budget_waits);
	rh_swap_close(s);
	rh_remote_close(r);
	munmap(base, cfg.heap_size);
	cluster_stop(&cl);
	free(ver);
	pthread_barrier_destroy(&c.step);
	return check_done();
}
