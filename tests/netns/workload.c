/* The CPU-server side of the netns fault tests: a VM that keeps more live
 * data than its cache holds, so that every few operations it faults pages
 * back from the tracers, and that checks every byte it reads.
 *
 * usage: rh-netns-workload CONFIG SECONDS
 *
 * Runs for SECONDS (0: until SIGUSR1), printing a "progress" line about
 * every 100 ms, then re-reads every array and prints "result ok ..."
 * (exit 0) or "result BAD ..." (exit 1). The signal lets the driver end a
 * run once a fault elsewhere has been dealt with, however slow the build. A lost memory
 * server ends the process through rheap's default fatal handler (exit 75),
 * which is what the fault scenarios wait for.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rheap/rheap.h"
#include "tests/common/rng.h"

/* 384 arrays of 64 KiB: 24 MiB live in the tests' 64 MiB heap, whose
 * cache is 16 MiB, so reads keep missing. */
#define N_ARRAYS 384
#define ARRAY_BYTES (64 * 1024)

static volatile sig_atomic_t rh_finish;

static void rh_on_usr1(int sig)
{
	(void)sig;
	rh_finish = 1;
}

static void rh_fill(uint8_t *p, uint64_t seed)
{
	for (size_t i = 0; i < ARRAY_BYTES; i += 8) {
		uint64_t v = rng_mix(seed + i);
		memcpy(p + i, &v, 8);
	}
}

static int rh_matches(const uint8_t *p, uint64_t seed)
{
	for (size_t i = 0; i < ARRAY_BYTES; i += 8) {
		uint64_t v = rng_mix(seed + i);
		if (memcmp(p + i, &v, 8) != 0)
			return 0;
	}
	return 1;
}

static double rh_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The data of array k of the table (a ref array of byte arrays). */
static uint8_t *rh_array(void *table, size_t k)
{
	void **slots = (void **)((char *)table + RH_ARRAY_HEADER_SIZE);
	return (uint8_t *)slots[k] + RH_ARRAY_HEADER_SIZE;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s CONFIG SECONDS\n", argv[0]);
		return 2;
	}
	double seconds = atof(argv[2]);
	/* The driver reads progress from a file while this runs. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Only this thread takes SIGUSR1: rheap's threads, created with it
	 * blocked, never see their system calls interrupted by it. */
	struct sigaction sa = {.sa_handler = rh_on_usr1, .sa_flags = SA_RESTART};
	sigaction(SIGUSR1, &sa, NULL);
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	rh_error err;
	rh_heap *h = rh_heap_open_file(argv[1], &err);
	if (!h) {
		fprintf(stderr, "open %s: %s\n", argv[1], err.msg);
		return 3;
	}
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
	rh_type_desc bytes = {.name = "bytes",
	                      .layout = RH_LAYOUT_BYTE_ARRAY,
	                      .size = RH_ARRAY_HEADER_SIZE,
	                      .elem_size = 1};
	rh_type_desc refs = {.name = "refs",
	                     .layout = RH_LAYOUT_REF_ARRAY,
	                     .size = RH_ARRAY_HEADER_SIZE,
	                     .elem_size = 8};
	rh_type_id t_bytes = rh_type_register(h, &bytes, &err);
	rh_type_id t_refs = t_bytes ? rh_type_register(h, &refs, &err) : 0;
	rh_mutator *m = t_refs ? rh_mutator_attach(h, &err) : NULL;
	if (!m) {
		fprintf(stderr, "set up the heap: %s\n", err.msg);
		return 3;
	}
	/* The table lives in a frame slot: collections move it and update
	 * the slot, so it is re-read after every allocation. */
	void *root[1] = {NULL};
	rh_frame frame;
	rh_push_frame(m, &frame, root, 1);
	root[0] = rh_alloc_array(m, t_refs, N_ARRAYS);
	static uint64_t seed[N_ARRAYS];
	for (size_t k = 0; root[0] && k < N_ARRAYS; k++) {
		uint8_t *a = rh_alloc_array(m, t_bytes, ARRAY_BYTES);
		if (!a)
			break;
		seed[k] = rng_mix(k + 1);
		rh_fill(a + RH_ARRAY_HEADER_SIZE, seed[k]);
		void **slots = (void **)((char *)root[0] + RH_ARRAY_HEADER_SIZE);
		rh_write_ref(m, &slots[k], a);
	}
	const rh_error *le = rh_last_error();
	if (!root[0] || !((void **)((char *)root[0] + RH_ARRAY_HEADER_SIZE))[N_ARRAYS - 1]) {
		fprintf(stderr, "fill the heap: %s\n", le ? le->msg : "?");
		return 3;
	}

	uint64_t rng = 0x9e3779b97f4a7c15ull, iters = 0, bad = 0;
	double start = rh_now(), next_report = start;
	while (!rh_finish && (seconds <= 0 || rh_now() - start < seconds)) {
		rng = rng_mix(rng + 1);
		size_t k = (size_t)(rng % N_ARRAYS);
		uint8_t *p = rh_array(root[0], k);
		if (!rh_matches(p, seed[k]) && bad++ < 5)
			printf("array %zu: contents differ from seed %llu\n", k,
			       (unsigned long long)seed[k]);
		seed[k] = rng_mix(seed[k] ^ iters);
		if (rng & (1ull << 40)) {
			/* A fresh copy: the old one becomes garbage, so the
			 * collector runs and regions move between tiers. */
			uint8_t *a = rh_alloc_array(m, t_bytes, ARRAY_BYTES);
			if (!a) {
				le = rh_last_error();
				printf("result BAD allocation failed: %s\n", le ? le->msg : "?");
				return 1;
			}
			rh_fill(a + RH_ARRAY_HEADER_SIZE, seed[k]);
			void **slots = (void **)((char *)root[0] + RH_ARRAY_HEADER_SIZE);
			rh_write_ref(m, &slots[k], a);
		} else {
			rh_fill(p, seed[k]);
		}
		iters++;
		rh_safepoint(m);
		if (rh_now() >= next_report) {
			rh_stats st;
			rh_stats_get(h, &st);
			printf("progress iter=%llu faults=%llu fetched=%llu evicted=%llu "
			       "gcs=%llu lost=%llu from_copy=%llu\n",
			       (unsigned long long)iters, (unsigned long long)st.faults,
			       (unsigned long long)st.bytes_fetched,
			       (unsigned long long)st.bytes_evicted,
			       (unsigned long long)(st.collections + st.full_collections),
			       (unsigned long long)st.servers_lost,
			       (unsigned long long)st.pages_from_copy);
			next_report = rh_now() + 0.1;
		}
	}
	/* Every array once more, most of them from the tracers. */
	for (size_t k = 0; k < N_ARRAYS; k++)
		if (!rh_matches(rh_array(root[0], k), seed[k]) && bad++ < 5)
			printf("array %zu: final contents differ\n", k);
	rh_stats st;
	rh_stats_get(h, &st);
	rh_pop_frame(m, &frame);
	rh_mutator_detach(m);
	rh_heap_close(h);
	if (bad) {
		printf("result BAD mismatches=%llu iterations=%llu\n", (unsigned long long)bad,
		       (unsigned long long)iters);
		return 1;
	}
	printf("result ok iterations=%llu faults=%llu fetched=%llu\n", (unsigned long long)iters,
	       (unsigned long long)st.faults, (unsigned long long)st.bytes_fetched);
	return 0;
}
