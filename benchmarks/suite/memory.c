#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memory.h"

/* Fields of /proc/self/status in kB; 0 where the kernel lacks them. */
static void read_status(rs_mem *m)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return;
	char line[256];
	unsigned long long v;
	while (fgets(line, sizeof line, f)) {
		if (sscanf(line, "RssAnon: %llu", &v) == 1)
			m->rss_anon_kib = v;
		else if (sscanf(line, "RssFile: %llu", &v) == 1)
			m->rss_file_kib = v;
		else if (sscanf(line, "RssShmem: %llu", &v) == 1)
			m->rss_shmem_kib = v;
	}
	fclose(f);
}

/* mincore walks page tables only: a few milliseconds for a GiB of heap,
 * cheap enough for the sampler's period. The heap is one private
 * anonymous reservation, so a resident page there is an anonymous one. */
static uint64_t heap_resident_kib(uint64_t base, uint64_t size)
{
	static const uint64_t chunk = 64ull << 20;
	long pg = sysconf(_SC_PAGESIZE);
	unsigned char *vec = malloc(chunk / (uint64_t)pg);
	if (!vec)
		return 0;
	uint64_t pages = 0;
	for (uint64_t off = 0; off < size; off += chunk) {
		uint64_t len = size - off < chunk ? size - off : chunk;
		if (mincore((void *)(uintptr_t)(base + off), len, vec) != 0)
			continue;
		for (uint64_t i = 0; i < len / (uint64_t)pg; i++)
			pages += vec[i] & 1;
	}
	free(vec);
	return pages * (uint64_t)pg / 1024;
}

void rs_mem_read(rs_mem *m, uint64_t heap_base, uint64_t heap_size)
{
	*m = (rs_mem){0};
	read_status(m);
	if (heap_size)
		m->heap_rss_kib = heap_resident_kib(heap_base, heap_size);
	m->nonheap_anon_kib =
	        m->rss_anon_kib > m->heap_rss_kib ? m->rss_anon_kib - m->heap_rss_kib : 0;
}

#define RAISE(f)                                                                                   \
	if (m->f > peak->f)                                                                        \
	peak->f = m->f
void rs_mem_max(rs_mem *peak, const rs_mem *m)
{
	RAISE(rss_anon_kib);
	RAISE(rss_file_kib);
	RAISE(rss_shmem_kib);
	RAISE(heap_rss_kib);
	RAISE(nonheap_anon_kib);
}
