/* Swap-system benchmark: fault service time and page-in/eviction throughput,
 * with references measured in the same run.
 *
 * usage: rh-bench-swap TRACERD PROVIDER [--cache-mib N] [--json FILE] [--checksum 0|1]
 *
 * A range 4x the cache is hosted by one tracer. Phases:
 *   zero-fault   read-touch INIT pages (UFFDIO_COPY of a zero page)
 *   fill         write every page of the range: zero faults + write-back
 *   raw-read     one-sided 4 KiB READs of written pages (the provider alone)
 *   fault        read-touch random evicted pages, readahead off
 *   random-in    random evicted pages, readahead off, as throughput
 *   seq-scan     read the range in order, readahead 8 and 32
 * Target: fault <= 1.3 x (raw-read + zero-fault); seq-scan >= 1 GB/s on shm.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr,
		        "usage: %s TRACERD PROVIDER [--cache-mib N] [--json FILE] [--checksum "
		        "0|1]\n",
		        argv[0]);
		return 2;
	}
	const char *tracerd = argv[1], *provider = argv[2], *json_path = NULL;
	unsigned long long cache_mib = 64;
	bool checksum = false; /* page checksums (cache.checksum), off as before */
	for (int i = 3; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--cache-mib"))
			cache_mib = strtoull(argv[i + 1], NULL, 10);
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
	double flt[7];
	uint64_t faults_before = st.faults;
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
	rh_swap_stats_get(s, &st);

	double ratio = fault_us / (raw_us + zero_us);
	printf("swap benchmark: %s, range %llu MiB, cache %llu MiB (1 tracer), checksums %s\n",
	       provider, heap_mib, cache_mib, checksum ? "on" : "off");
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

	if (json_path) {
		json_t *j = json_pack(
		        "{s:s, s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:I, s:I}",
		        "provider", provider, "range_mib", (json_int_t)heap_mib, "cache_mib",
		        (json_int_t)cache_mib, "zero_fault_us", zero_us, "raw_read_us", raw_us,
		        "fault_us", fault_us, "fault_ratio", ratio, "random_in_mbs",
		        rn * 4096.0 / 1e6 / rand_s, "seq_scan_ra8_gbs", seq_gbs[0],
		        "seq_scan_ra32_gbs", seq_gbs[1], "evict_mbs", evict_mbs, "bytes_fetched",
		        (json_int_t)st.bytes_fetched, "bytes_evicted",
		        (json_int_t)st.bytes_evicted);
		json_object_set_new(j, "checksum", json_boolean(checksum));
		json_dump_file(j, json_path, JSON_INDENT(2));
		json_decref(j);
	}
	rh_tp_dereg(hosts[0].conn, buf, RH_PAGE_SIZE, &err);
	rh_swap_close(s);
	rh_remote_close(r);
	munmap(base, cfg.heap_size);
	cluster_stop(&c);
	return 0;
}
