/* Swap-system benchmark: fault service time and page-in/eviction throughput,
 * with references measured in the same run.
 *
 * usage: rh-bench-swap TRACERD PROVIDER [--cache-mib N] [--json FILE]
 *                      [--threads N] [--signal 0|1] [--fault-threads N]
 *                      [--faults-only 1] [--checksum 0|1]
 *
 * A range 4x the cache is hosted by one tracer. Phases:
 *   zero-fault   read-touch INIT pages (UFFDIO_COPY of a zero page)
 *   fill         write every page of the range: zero faults + write-back
 *   raw-read     one-sided 4 KiB READs of written pages (the provider alone)
 *   fault        read-touch random evicted pages, readahead off
 *   random-in    random evicted pages, readahead off, as throughput
 *   seq-scan     read the range in order, readahead 8 and 32
 *   mt-random    random evicted pages from 1 and from N threads (--threads,
 *                default 2), readahead off, the same total work: the
 *                throughput ratio is how far fault service scales
 * Target: fault <= 1.3 x (raw-read + zero-fault); seq-scan >= 1 GB/s on shm.
 * The fault phase also reports this process's CPU time and context
 * switches per fault (all its threads: faulting, fault, receive), which a
 * loaded machine disturbs less than latency; --faults-only 1 stops there.
 */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "runtime/remote.h"
#include "swap/swap.h"
#include "tests/common/cluster.h"

static double median(double *v, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
			double t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v[n / 2];
}

static volatile uint64_t sink;

/* This process's CPU time (us) and context switches so far. */
static void usage_now(double *cpu_us, double *csw)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	*cpu_us = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	          (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
	*csw = (double)(ru.ru_nvcsw + ru.ru_nivcsw);
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

typedef struct mt_arg {
	const volatile uint8_t *heap;
	size_t pages;
	int n;
	uint64_t seed, sum;
} mt_arg;

static void *mt_main(void *p)
{
	mt_arg *a = p;
	for (int i = 0; i < a->n; i++)
		a->sum += a->heap[(xorshift(&a->seed) % a->pages) * RH_PAGE_SIZE + 64];
	return NULL;
}

/* Random reads over the range (4x the cache: three in four fault) from
 * `threads` threads, `total` in all; MB/s of pages read. */
static double mt_random(const uint8_t *heap, size_t pages, int threads, int total)
{
	pthread_t t[64];
	mt_arg a[64];
	uint64_t t0 = rh_now_ns();
	for (int i = 0; i < threads; i++) {
		a[i] = (mt_arg){heap, pages, total / threads, 0x9e3779b97f4a7c15ull * (i + 1), 0};
		pthread_create(&t[i], NULL, mt_main, &a[i]);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		sink += a[i].sum;
	}
	return total * 4096.0 / 1e6 / ((double)(rh_now_ns() - t0) / 1e9);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr,
		        "usage: %s TRACERD PROVIDER [--cache-mib N] [--json FILE] [--threads N] "
		        "[--signal 0|1] [--fault-threads N] [--faults-only 1] [--checksum 0|1]\n",
		        argv[0]);
		return 2;
	}
	const char *tracerd = argv[1], *provider = argv[2], *json_path = NULL;
	unsigned long long cache_mib = 64;
	int threads = 2, signal_faults = 0, fault_threads = 1, faults_only = 0;
	bool checksum = false; /* page checksums (cache.checksum), off as before */
	for (int i = 3; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--cache-mib"))
			cache_mib = strtoull(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--threads"))
			threads = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--signal"))
			signal_faults = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--fault-threads"))
			fault_threads = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--faults-only"))
			faults_only = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--json"))
			json_path = argv[i + 1];
		else if (!strcmp(argv[i], "--checksum"))
			checksum = strcmp(argv[i + 1], "0") != 0;
	}
	unsigned long long heap_mib = cache_mib * 4;
	cluster c;
	if (cluster_start(&c, tracerd, provider, 1, heap_mib, 0.25, 5000, NULL) < 0) {
		perror("cluster");
		return 1;
	}
	rh_config cfg;
	rh_error err;
	if (rh_config_load(c.config, &cfg, &err) != RH_OK) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	void *base = mmap((void *)cfg.heap_base, cfg.heap_size, PROT_READ | PROT_WRITE,
	                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	if (base != (void *)cfg.heap_base) {
		perror("mmap");
		return 1;
	}
	rh_remote *r = NULL;
	for (int t = 0; t < 100 && rh_remote_open(&cfg, NULL, NULL, &r, &err) != RH_OK; t++)
		usleep(50000);
	if (!r) {
		fprintf(stderr, "connect: %s\n", err.msg);
		return 1;
	}
	size_t n_hosts;
	const rh_swap_host *hosts = rh_remote_hosts(r, &n_hosts);
	rh_swap_opts so = {.base = cfg.heap_base,
	                   .size = cfg.heap_size,
	                   .region_size = cfg.region_size,
	                   .budget = cfg.heap_size / 4,
	                   .readahead = 32,
	                   .signal_faults = signal_faults != 0,
	                   .fault_threads = (uint32_t)fault_threads,
	                   .timeout_ms = 5000,
	                   .checksum = checksum,
	                   .hosts = hosts,
	                   .n_hosts = n_hosts};
	rh_swap *s;
	if (rh_swap_open(&so, &s, &err) != RH_OK) {
		fprintf(stderr, "swap: %s\n", err.msg);
		return 1;
	}
	uint8_t *heap = base;
	size_t pages = cfg.heap_size / RH_PAGE_SIZE;
	uint64_t seed = 88172645463325252ull;

	/* zero-fault: the first touch of pages nobody wrote. */
	int zn = 2000;
	uint64_t t0 = rh_now_ns();
	for (int i = 0; i < zn; i++)
		sink += heap[(size_t)i * 7 % pages * RH_PAGE_SIZE];
	double zero_us = (double)(rh_now_ns() - t0) / 1e3 / zn;

	/* fill: every page written once; three quarters must be written back. */
	t0 = rh_now_ns();
	for (size_t p = 0; p < pages; p++)
		memset(heap + p * RH_PAGE_SIZE, (int)(p & 0xff), RH_PAGE_SIZE);
	double fill_s = (double)(rh_now_ns() - t0) / 1e9;
	rh_swap_stats st;
	rh_swap_stats_get(s, &st);
	double evict_mbs = (double)st.bytes_evicted / 1048576.0 / fill_s;

	/* raw-read: the provider's own 4 KiB READ of pages the tracer holds
	 * (after the fill: reading holes would add the host's page faults). */
	uint8_t *buf = mmap(NULL, RH_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
	                    -1, 0);
	rh_tp_reg(hosts[0].conn, buf, RH_PAGE_SIZE, -1, 0, RH_TP_LOCAL, &err);
	double raw[7];
	for (int k = 0; k < 7; k++) {
		int n = 1000;
		t0 = rh_now_ns();
		for (int i = 0; i < n; i++) {
			rh_tp_sge sg = {buf,
			                cfg.heap_base + (xorshift(&seed) % pages) * RH_PAGE_SIZE,
			                RH_PAGE_SIZE};
			rh_tp_read(hosts[0].conn, &sg, 1, 1u << 30, &err);
			rh_tp_wait(hosts[0].conn, 1u << 30, 5000, &err);
		}
		raw[k] = (double)(rh_now_ns() - t0) / 1e3 / n;
	}
	double raw_us = median(raw, 7);

	/* fault: random evicted pages, one page per fault. */
	rh_swap_set_readahead(s, 0);
	double flt[7], cpu0, csw0, cpu1, csw1;
	uint64_t faults_before = st.faults;
	usage_now(&cpu0, &csw0);
	for (int k = 0; k < 7; k++) {
		int n = 500, done = 0;
		uint64_t spent = 0;
		for (int i = 0; i < n; i++) {
			size_t p = xorshift(&seed) % pages;
			if (rh_swap_page_state(s, cfg.heap_base + p * RH_PAGE_SIZE) !=
			    RH_PAGE_EVICTED)
				continue;
			uint64_t a = rh_now_ns();
			sink += heap[p * RH_PAGE_SIZE];
			spent += rh_now_ns() - a;
			done++;
		}
		flt[k] = done ? (double)spent / 1e3 / done : 0;
	}
	double fault_us = median(flt, 7);
	usage_now(&cpu1, &csw1);
	rh_swap_stats_get(s, &st);
	double per = st.faults > faults_before ? (double)(st.faults - faults_before) : 1;
	if (faults_only) {
		printf("%s, %d fault thread(s): raw READ %.2f us, fault %.2f us, per fault: "
		       "%.1f us CPU, %.2f context switches\n",
		       provider, fault_threads, raw_us, fault_us, (cpu1 - cpu0) / per,
		       (csw1 - csw0) / per);
		size_t held = 0;
		for (size_t p = 0; p < pages; p++) {
			uint8_t ps = rh_swap_page_state(s, cfg.heap_base + p * RH_PAGE_SIZE);
			held += ps == RH_PAGE_CLEAN || ps == RH_PAGE_DIRTY;
		}
		usleep(200000);
		usage_now(&cpu0, &csw0);
		usleep(1000000);
		usage_now(&cpu1, &csw1);
		printf("resident counted %llu, pages held %zu, budget %llu; idle second: %.0f us "
		       "CPU, %.0f context switches\n",
		       (unsigned long long)st.resident_pages, held,
		       (unsigned long long)st.budget_pages, cpu1 - cpu0, csw1 - csw0);
		goto done;
	}

	/* random-in: throughput of the same access pattern. */
	int rn = 20000;
	t0 = rh_now_ns();
	for (int i = 0; i < rn; i++)
		sink += heap[(xorshift(&seed) % pages) * RH_PAGE_SIZE + 64];
	double rand_s = (double)(rh_now_ns() - t0) / 1e9;
	rh_swap_stats_get(s, &st);
	uint64_t rand_faults = st.faults - faults_before;

	/* seq-scan: the whole range (4x the cache) in address order. */
	double seq_gbs[2];
	uint32_t ras[2] = {8, 32};
	for (int k = 0; k < 2; k++) {
		rh_swap_set_readahead(s, ras[k]);
		t0 = rh_now_ns();
		for (size_t p = 0; p < pages; p++)
			for (size_t o = 0; o < RH_PAGE_SIZE; o += 512)
				sink += heap[p * RH_PAGE_SIZE + o];
		seq_gbs[k] = (double)cfg.heap_size / 1e9 / ((double)(rh_now_ns() - t0) / 1e9);
	}
	/* mt-random: the same total work from one thread, then from N. */
	rh_swap_set_readahead(s, 0);
	if (threads < 1 || threads > 64)
		threads = 2;
	double mt1 = mt_random(heap, pages, 1, 20000);
	double mtn = mt_random(heap, pages, threads, 20000);
	rh_swap_stats_get(s, &st);

	double ratio = fault_us / (raw_us + zero_us);
	printf("swap benchmark: %s, range %llu MiB, cache %llu MiB (1 tracer), faults served by "
	       "%s, checksums %s\n",
	       provider, heap_mib, cache_mib,
	       signal_faults       ? "the faulting threads"
	       : fault_threads > 1 ? "fault threads"
	                           : "a fault thread",
	       checksum ? "on" : "off");
	printf("  %-34s %10.2f us\n", "zero-page fault (INIT)", zero_us);
	printf("  %-34s %10.2f us\n", "raw 4 KiB READ (provider)", raw_us);
	printf("  %-34s %10.2f us   %.2fx (raw + zero); target <= 1.3x\n",
	       "evicted-page fault, no readahead", fault_us, ratio);
	printf("  %-34s %10.1f MB/s (%llu faults)\n", "random page-in", rn * 4096.0 / 1e6 / rand_s,
	       (unsigned long long)rand_faults);
	printf("  %-34s %10.2f GB/s\n", "sequential scan, readahead 8", seq_gbs[0]);
	printf("  %-34s %10.2f GB/s   target >= 1 GB/s on shm\n", "sequential scan, readahead 32",
	       seq_gbs[1]);
	printf("  %-34s %10.1f MB/s written back\n", "eviction during fill", evict_mbs);
	printf("  %-34s %10.1f MB/s\n", "random page-in, 1 thread", mt1);
	printf("  %-34s %10.1f MB/s   %.2fx 1 thread\n", "random page-in, N threads", mtn,
	       mtn / mt1);

	if (json_path) {
		json_t *j = json_pack(
		        "{s:s, s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:I, s:I, s:I, "
		        "s:f, s:f}",
		        "provider", provider, "range_mib", (json_int_t)heap_mib, "cache_mib",
		        (json_int_t)cache_mib, "zero_fault_us", zero_us, "raw_read_us", raw_us,
		        "fault_us", fault_us, "fault_ratio", ratio, "random_in_mbs",
		        rn * 4096.0 / 1e6 / rand_s, "seq_scan_ra8_gbs", seq_gbs[0],
		        "seq_scan_ra32_gbs", seq_gbs[1], "evict_mbs", evict_mbs, "bytes_fetched",
		        (json_int_t)st.bytes_fetched, "bytes_evicted", (json_int_t)st.bytes_evicted,
		        "threads", (json_int_t)threads, "mt1_mbs", mt1, "mtn_mbs", mtn);
		json_object_set_new(j, "checksum", json_boolean(checksum));
		json_dump_file(j, json_path, JSON_INDENT(2));
		json_decref(j);
	}
done:
	rh_tp_dereg(hosts[0].conn, buf, RH_PAGE_SIZE, &err);
	rh_swap_close(s);
	rh_remote_close(r);
	munmap(base, cfg.heap_size);
	cluster_stop(&c);
	return 0;
}
